//! ORDER BY and top-k over more rows than one vector and one morsel, with
//! several threads, checked against a sort done here.

use kith::{Connection, Database, Value};

mod common;

const N: i64 = 20_000;

fn value_of(i: i64) -> Option<i64> {
    // A scrambled permutation-like sequence with repeats and NULLs.
    let v = (i * 7919 + 13) % 5003;
    (i % 17 != 0).then_some(v)
}

fn setup() -> (Database, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("kith-order-large-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("n.csv");
    let mut text = String::from("id,v\n");
    for i in 0..N {
        match value_of(i) {
            Some(v) => text.push_str(&format!("{i},{v}\n")),
            None => text.push_str(&format!("{i},\n")),
        }
    }
    std::fs::write(&csv, text).unwrap();
    let db = common::memory_db(2);
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, v INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query(&format!("COPY N FROM '{}' (HEADER=true)", csv.display()))
        .unwrap();
    (db, dir)
}

fn ints(conn: &Connection, q: &str) -> Vec<Option<i64>> {
    conn.query(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows()
        .map(|r| match &r[0] {
            Value::Null => None,
            v => Some(v.as_i64().unwrap()),
        })
        .collect()
}

#[test]
fn order_by_and_top_k_match_a_reference_sort() {
    let (db, dir) = setup();
    let conn = Connection::new(&db);
    let mut asc: Vec<Option<i64>> = (0..N).map(value_of).collect();
    // Cypher: NULLs last ascending.
    asc.sort_by(|a, b| match (a, b) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y),
    });
    let mut desc = asc.clone();
    desc.reverse();
    assert_eq!(ints(&conn, "MATCH (a:N) RETURN a.v ORDER BY a.v"), asc);
    assert_eq!(
        ints(&conn, "MATCH (a:N) RETURN a.v ORDER BY a.v DESC"),
        desc
    );
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) RETURN a.v ORDER BY a.v SKIP 100 LIMIT 50"
        ),
        asc[100..150].to_vec()
    );
    assert_eq!(
        ints(&conn, "MATCH (a:N) RETURN a.v ORDER BY a.v DESC LIMIT 1500"),
        desc[..1500].to_vec()
    );
    // Ties broken by a second key: ids ascending within equal values.
    let mut pairs: Vec<(i64, i64)> = (0..N).filter_map(|i| value_of(i).map(|v| (v, i))).collect();
    pairs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let want: Vec<Option<i64>> = pairs.iter().take(30).map(|p| Some(p.1)).collect();
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) WHERE a.v IS NOT NULL RETURN a.id ORDER BY a.v DESC, a.id LIMIT 30"
        ),
        want
    );
    // WITH ... ORDER BY ... LIMIT feeding a later part.
    let want: i64 = asc[..10].iter().map(|v| v.unwrap()).sum();
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) WITH a ORDER BY a.v LIMIT 10 RETURN sum(a.v)"
        ),
        vec![Some(want)]
    );
    // The order a WITH sorted survives the parts after it that neither
    // sort nor aggregate (read by one worker, in order).
    let want: Vec<Option<i64>> = pairs.iter().take(4000).map(|p| Some(p.1)).collect();
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) WHERE a.v IS NOT NULL WITH a ORDER BY a.v DESC, a.id LIMIT 4000 RETURN a.id"
        ),
        want
    );
    let want: Vec<Option<i64>> = pairs.iter().map(|p| Some(p.1 * 2)).collect();
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) WHERE a.v IS NOT NULL WITH a, a.v AS v ORDER BY v DESC, a.id WITH a WHERE a.id >= 0 RETURN a.id * 2"
        ),
        want
    );
    // Deep pages over the workers' merged runs (cut into pieces that sort
    // on their own workers): NULLs first descending, ties by id, strings
    // and doubles.
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) RETURN a.v ORDER BY a.v SKIP 12000 LIMIT 3000"
        ),
        asc[12000..15000].to_vec()
    );
    let mut all: Vec<(Option<i64>, i64)> = (0..N).map(|i| (value_of(i), i)).collect();
    all.sort_by(|a, b| match (a.0, b.0) {
        (None, None) => a.1.cmp(&b.1),
        (None, _) => std::cmp::Ordering::Less,
        (_, None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(&x).then(a.1.cmp(&b.1)),
    });
    let want: Vec<Option<i64>> = all[9000..11000].iter().map(|p| Some(p.1)).collect();
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) RETURN a.id ORDER BY a.v DESC, a.id SKIP 9000 LIMIT 2000"
        ),
        want
    );
    let mut by_text: Vec<(Option<String>, i64)> = (0..N)
        .map(|i| (value_of(i).map(|v| v.to_string()), i))
        .collect();
    by_text.sort_by(|a, b| match (&a.0, &b.0) {
        (None, None) => a.1.cmp(&b.1),
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y).then(a.1.cmp(&b.1)),
    });
    let want: Vec<Option<i64>> = by_text.iter().map(|p| Some(p.1)).collect();
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) RETURN a.id ORDER BY toString(a.v), a.id"
        ),
        want
    );
    let mut by_ratio: Vec<(Option<i64>, i64)> = (0..N).map(|i| (value_of(i), i)).collect();
    by_ratio.sort_by(|a, b| match (a.0, b.0) {
        (None, None) => a.1.cmp(&b.1),
        (None, _) => std::cmp::Ordering::Less,
        (_, None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => (y as f64 / 7.0)
            .total_cmp(&(x as f64 / 7.0))
            .then(a.1.cmp(&b.1)),
    });
    let want: Vec<Option<i64>> = by_ratio[..17000].iter().map(|p| Some(p.1)).collect();
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N) RETURN a.id ORDER BY a.v / 7.0 DESC, a.id LIMIT 17000"
        ),
        want
    );
    // A cross product larger than a vector on both sides.
    assert_eq!(
        ints(
            &conn,
            "MATCH (a:N), (b:N) WHERE a.id < 3000 AND b.id < 2100 RETURN count(*)"
        ),
        vec![Some(3000 * 2100)]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
