//! EXISTS and COUNT subqueries that run (not answered by degrees) hand
//! their table the aggregate's arrays by offset: a bit per key node for
//! EXISTS, a count per key node for COUNT. Checked against counts over the
//! edge lists at 1 and 2 threads, for keys of one table, keys of two
//! tables (which turn the arrays into groups), two rel tables (two
//! pipelines whose tables merge), a subquery that matches nothing, and
//! under NOT.

use std::collections::BTreeMap;

use kith::{Connection, Value};

mod common;
use common::Lcg;

fn run(conn: &Connection, q: &str) {
    conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
}

/// The rows of `q` as (id, value): the value an integer, or 1 / 0 for a
/// boolean.
fn pairs(conn: &Connection, q: &str) -> BTreeMap<i64, i64> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let value = |v: &Value| match v {
        Value::Int64(x) => *x,
        Value::Bool(b) => i64::from(*b),
        other => panic!("{q}: not an integer or boolean: {other:?}"),
    };
    r.rows()
        .map(|row| (value(&row[0]), value(&row[1])))
        .collect()
}

#[test]
fn running_subqueries_match_counts_over_the_edges() {
    let db = common::memory_db(2);
    let conn = Connection::new(&db);
    run(
        &conn,
        "CREATE NODE TABLE P(id INT64, v INT64, PRIMARY KEY(id)); \
         CREATE NODE TABLE Q(id INT64, v INT64, PRIMARY KEY(id)); \
         CREATE REL TABLE A(FROM P TO P); \
         CREATE REL TABLE B(FROM P TO P); \
         CREATE REL TABLE C(FROM Q TO P);",
    );
    // Enough P nodes for many morsels per worker; Q ids apart from P's.
    let (np, nq) = (6000i64, 300i64);
    let mut rng = Lcg(7);
    let mut v: BTreeMap<i64, i64> = BTreeMap::new();
    let mut stmts = String::new();
    for id in 0..np {
        let x = rng.below(100) as i64;
        v.insert(id, x);
        stmts.push_str(&format!("CREATE (:P {{id: {id}, v: {x}}});"));
    }
    for id in np..np + nq {
        let x = rng.below(100) as i64;
        v.insert(id, x);
        stmts.push_str(&format!("CREATE (:Q {{id: {id}, v: {x}}});"));
    }
    run(&conn, &stmts);
    // (table, from, to): sparse, so many keys have no match.
    let mut edges: Vec<(&str, i64, i64)> = Vec::new();
    for _ in 0..4000 {
        edges.push((
            "A",
            rng.below(np as u64) as i64,
            rng.below(np as u64) as i64,
        ));
    }
    for _ in 0..1500 {
        edges.push((
            "B",
            rng.below(np as u64) as i64,
            rng.below(np as u64) as i64,
        ));
    }
    for _ in 0..400 {
        let q = np + rng.below(nq as u64) as i64;
        edges.push(("C", q, rng.below(np as u64) as i64));
    }
    let mut stmts = String::new();
    for (t, a, b) in &edges {
        let (la, lb) = if *t == "C" { ("Q", "P") } else { ("P", "P") };
        stmts.push_str(&format!(
            "MATCH (a:{la} {{id: {a}}}), (b:{lb} {{id: {b}}}) CREATE (a)-[:{t}]->(b);"
        ));
    }
    run(&conn, &stmts);

    // Per key id, its rels in `tables` to a node with v above `min`.
    let reference = |tables: &[&str], keys: &[(i64, i64)], min: i64| {
        let mut counts: BTreeMap<i64, i64> = (keys[0].0..keys[0].1).map(|id| (id, 0)).collect();
        for &(lo, hi) in &keys[1..] {
            counts.extend((lo..hi).map(|id| (id, 0)));
        }
        for (t, a, b) in &edges {
            if tables.contains(t) && v[b] > min {
                if let Some(c) = counts.get_mut(a) {
                    *c += 1;
                }
            }
        }
        counts
    };
    let exists = |m: &BTreeMap<i64, i64>| -> BTreeMap<i64, i64> {
        m.iter().map(|(&k, &c)| (k, i64::from(c > 0))).collect()
    };
    let not = |m: &BTreeMap<i64, i64>| -> BTreeMap<i64, i64> {
        m.iter().map(|(&k, &c)| (k, i64::from(c == 0))).collect()
    };
    let p = [(0, np)];
    let pq = [(0, np), (np, np + nq)];
    let a50 = reference(&["A"], &p, 50);
    let ab50 = reference(&["A", "B"], &p, 50);
    let ac70 = reference(&["A", "C"], &pq, 70);
    let none = reference(&["A"], &p, 1000);
    let cases: Vec<(String, BTreeMap<i64, i64>)> = vec![
        (
            "MATCH (a:P) RETURN a.id, EXISTS { MATCH (a)-[:A]->(b:P) WHERE b.v > 50 }".into(),
            exists(&a50),
        ),
        (
            "MATCH (a:P) RETURN a.id, NOT EXISTS { MATCH (a)-[:A]->(b:P) WHERE b.v > 50 }".into(),
            not(&a50),
        ),
        (
            "MATCH (a:P) RETURN a.id, COUNT { MATCH (a)-[:A]->(b:P) WHERE b.v > 50 }".into(),
            a50.clone(),
        ),
        (
            "MATCH (a:P) RETURN a.id, EXISTS { MATCH (a)-[:A|B]->(b:P) WHERE b.v > 50 }".into(),
            exists(&ab50),
        ),
        (
            "MATCH (a:P) RETURN a.id, COUNT { MATCH (a)-[:A|B]->(b:P) WHERE b.v > 50 }".into(),
            ab50.clone(),
        ),
        (
            "MATCH (x) RETURN x.id, EXISTS { MATCH (x)-[:A|C]->(b:P) WHERE b.v > 70 }".into(),
            exists(&ac70),
        ),
        (
            "MATCH (x) RETURN x.id, COUNT { MATCH (x)-[:A|C]->(b:P) WHERE b.v > 70 }".into(),
            ac70.clone(),
        ),
        (
            "MATCH (a:P) RETURN a.id, EXISTS { MATCH (a)-[:A]->(b:P) WHERE b.v > 1000 }".into(),
            exists(&none),
        ),
    ];
    assert!(a50.values().any(|&c| c > 1) && a50.values().any(|&c| c == 0));
    for threads in [1, 2] {
        run(&conn, &format!("CALL threads={threads}"));
        for (q, want) in &cases {
            let got = pairs(&conn, q);
            assert_eq!(&got, want, "{q} at {threads} threads");
        }
        // As a filter, the scan's count.
        let q = "MATCH (a:P) WHERE EXISTS { MATCH (a)-[:A]->(b:P) WHERE b.v > 50 } RETURN count(*)";
        let want = a50.values().filter(|&&c| c > 0).count() as i64;
        let got = conn.query(q).unwrap().rows().next().map(|r| r[0].clone());
        assert_eq!(got, Some(Value::Int64(want)), "{q} at {threads} threads");
    }
}
