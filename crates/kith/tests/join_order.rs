//! The cost-based join order (`kith-planner/src/planner/join_order.rs`):
//! EXPLAIN shows the order the estimates chose, and it follows selectivities
//! and degrees where the old rules (most predicates first, then the smaller
//! table) did not. Every order gives the same rows (checked here against a
//! count computed in Rust; `patterns.rs` checks many shapes by brute force).

use kith::{Config, Connection, Database, Value};

/// Users 0..1000 (age = id % 100, name `u<id>`), groups 0..10, each user a
/// member of group id % 10, and follows u -> (u * 7 + k) % 1000 for
/// k = 1..=20.
fn social() -> (Database, Vec<(i64, i64)>) {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    for ddl in [
        "CREATE NODE TABLE U(id INT64, name STRING, age INT64, PRIMARY KEY(id))",
        "CREATE NODE TABLE G(id INT64, name STRING, PRIMARY KEY(id))",
        "CREATE REL TABLE M(FROM U TO G)",
        "CREATE REL TABLE F(FROM U TO U)",
    ] {
        conn.query(ddl).unwrap();
    }
    conn.query(
        "UNWIND range(0, 999) AS i CREATE (:U {id: i, name: 'u' + toString(i), age: i % 100})",
    )
    .unwrap();
    conn.query("UNWIND range(0, 9) AS i CREATE (:G {id: i, name: 'g' + toString(i)})")
        .unwrap();
    conn.query("MATCH (u:U), (g:G) WHERE g.id = u.id % 10 CREATE (u)-[:M]->(g)")
        .unwrap();
    conn.query(
        "MATCH (u:U) UNWIND range(1, 20) AS k \
         MATCH (v:U {id: (u.id * 7 + k) % 1000}) CREATE (u)-[:F]->(v)",
    )
    .unwrap();
    let follows = (0..1000i64)
        .flat_map(|u| (1..=20).map(move |k| (u, (u * 7 + k) % 1000)))
        .collect();
    (db, follows)
}

fn explain(conn: &Connection, q: &str) -> String {
    let r = conn.query(&format!("EXPLAIN {q}")).unwrap();
    r.rows().map(|row| format!("{row:?}\n")).collect()
}

fn count(conn: &Connection, q: &str) -> i64 {
    let r = conn.query(q).unwrap();
    let rows: Vec<Vec<Value>> = r.rows().collect();
    rows[0][0].as_i64().unwrap()
}

#[test]
fn selective_predicates_start_the_order() {
    let (db, follows) = social();
    let conn = Connection::new(&db);
    // Two weak predicates on `a` (the old rule: most predicates first)
    // against one equality on the small group table: starting at the group
    // reads 100 members and their 2,000 followers, starting at `a` extends
    // 880 users to 17,600 follows.
    let q = "MATCH (a:U)-[:F]->(b:U)-[:M]->(g:G) WHERE a.age > 5 AND a.age < 94 AND g.name = 'g3' \
             RETURN count(*)";
    let p = explain(&conn, q);
    assert!(p.contains("join order (g, b, a)"), "{p}");
    let want = follows
        .iter()
        .filter(|(a, b)| (6..94).contains(&(a % 100)) && b % 10 == 3)
        .count() as i64;
    assert_eq!(count(&conn, q), want);

    // An equality (0.1) beats a range (1/3) at the other end.
    let q = "MATCH (a:U)-[:F]->(b:U) WHERE a.age > 30 AND b.name = 'u17' RETURN count(*)";
    let p = explain(&conn, q);
    assert!(p.contains("join order (b, a)"), "{p}");
    let want = follows
        .iter()
        .filter(|(a, b)| a % 100 > 30 && *b == 17)
        .count() as i64;
    assert_eq!(count(&conn, q), want);
}

#[test]
fn degrees_order_the_extends() {
    let (db, follows) = social();
    let conn = Connection::new(&db);
    // From a key lookup, the member rel (one group per user) goes before
    // the follows (twenty per user), whatever the pattern's order.
    let q = "MATCH (v:U)<-[:F]-(u:U {id: 5})-[:M]->(g:G) RETURN g.id, count(*)";
    let p = explain(&conn, q);
    assert!(p.contains("join order (u, g, v)"), "{p}");
    let r = conn.query(q).unwrap();
    let rows: Vec<Vec<Value>> = r.rows().collect();
    assert_eq!(rows, vec![vec![Value::Int64(5), Value::Int64(20)]]);

    // Unfiltered, the small group table starts: 10 groups, 1,000 members,
    // 20,000 follows; from the users it would be 1,000 + 20,000 + 20,000.
    let q = "MATCH (g:G)<-[:M]-(u:U)-[:F]->(v:U) RETURN count(*)";
    let p = explain(&conn, q);
    assert!(p.contains("join order (g, u, v)"), "{p}");
    assert_eq!(count(&conn, q), follows.len() as i64);
}

#[test]
fn explain_estimates_use_the_table_sizes() {
    let (db, _) = social();
    let conn = Connection::new(&db);
    // 1,000 users with 20 follows each: 20,000 rels out of the scan.
    let p = explain(&conn, "MATCH (a:U)-[:F]->(b:U) RETURN count(*)");
    assert!(p.contains("20000 out"), "{p}");
}

/// Patterns beyond the dynamic program's size (here 70 nodes) are ordered
/// greedily and still answer.
#[test]
fn very_long_patterns_are_planned() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    conn.query("UNWIND range(0, 9) AS i CREATE (:N {id: i})")
        .unwrap();
    conn.query("MATCH (a:N), (b:N) WHERE b.id = a.id + 1 CREATE (a)-[:E]->(b)")
        .unwrap();
    // A chain of 69 rels over a path of 10 nodes matches nothing; a chain of
    // 9 matches once, and 14 nodes is the most the program orders.
    let chain = |rels: usize| {
        let mut q = String::from("MATCH (n0:N)");
        for i in 1..=rels {
            q.push_str(&format!("-[:E]->(n{i}:N)"));
        }
        q + " RETURN count(*)"
    };
    assert_eq!(count(&conn, &chain(69)), 0);
    assert_eq!(count(&conn, &chain(9)), 1);
    assert_eq!(count(&conn, &chain(13)), 0);
    assert!(explain(&conn, &chain(13)).contains("join order"));
    assert!(!explain(&conn, &chain(69)).contains("join order"));
}

/// Nodes 0..200 (`k = id % 7`) and rels i -> i² % 200 and, for i a
/// multiple of 4, i -> (i + 3) % 200: in-degrees from 0 to 9.
fn squares() -> (Database, Vec<(i64, i64)>) {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, k INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    conn.query("UNWIND range(0, 199) AS i CREATE (:N {id: i, k: i % 7})")
        .unwrap();
    conn.query("MATCH (a:N), (b:N) WHERE b.id = a.id * a.id % 200 CREATE (a)-[:E]->(b)")
        .unwrap();
    conn.query(
        "MATCH (a:N), (b:N) WHERE a.id % 4 = 0 AND b.id = (a.id + 3) % 200 CREATE (a)-[:E]->(b)",
    )
    .unwrap();
    let rels = (0..200i64)
        .map(|i| (i, i * i % 200))
        .chain((0..200i64).step_by(4).map(|i| (i, (i + 3) % 200)))
        .collect();
    (db, rels)
}

/// A leaf that nothing reads, bound last, is only counted (its extend reads
/// degrees), so the order leaves it last: `count(DISTINCT b)` over
/// `(a)->(b)` scans `b` and reads in-degrees instead of writing every rel's
/// `b`. Aggregates then see each `b` once, weighted by its rels: counts and
/// sums multiply, DISTINCT and min ignore the weight.
#[test]
fn counted_leaves_end_the_order() {
    let (db, rels) = squares();
    let conn = Connection::new(&db);
    let dsts: std::collections::BTreeSet<i64> = rels.iter().map(|r| r.1).collect();
    let srcs: std::collections::BTreeSet<i64> = rels.iter().map(|r| r.0).collect();

    let q = "MATCH (a:N)-[:E]->(b:N) RETURN count(DISTINCT b)";
    let p = explain(&conn, q);
    assert!(p.contains("join order (b, a)") && p.contains("Bwd"), "{p}");
    assert_eq!(count(&conn, q), dsts.len() as i64);
    // The other way round.
    let q = "MATCH (a:N)<-[:E]-(b:N) RETURN count(DISTINCT b)";
    assert!(explain(&conn, q).contains("join order (b, a)"));
    assert_eq!(count(&conn, q), srcs.len() as i64);

    // Grouped by the kept node's property, with weighted and unweighted
    // aggregates.
    let q = "MATCH (a:N)-[:E]->(b:N) RETURN b.k AS k, count(*), count(DISTINCT b), \
             sum(b.id), min(b.id), max(b.id), collect(DISTINCT b.id % 3) ORDER BY k";
    assert!(explain(&conn, q).contains("join order (b, a)"));
    let r = conn.query(q).unwrap();
    let got: Vec<Vec<Value>> = r.rows().collect();
    let mut want = Vec::new();
    for k in 0..7i64 {
        let mine: Vec<i64> = rels.iter().map(|r| r.1).filter(|b| b % 7 == k).collect();
        if mine.is_empty() {
            continue;
        }
        let distinct: std::collections::BTreeSet<i64> = mine.iter().copied().collect();
        let mods: std::collections::BTreeSet<i64> = mine.iter().map(|b| b % 3).collect();
        want.push((
            k,
            mine.len() as i64,
            distinct.len() as i64,
            mine.iter().sum::<i64>(),
            *distinct.first().unwrap(),
            *distinct.last().unwrap(),
            mods,
        ));
    }
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (row, w) in got.iter().zip(&want) {
        assert_eq!(
            row[..6].to_vec(),
            vec![
                Value::Int64(w.0),
                Value::Int64(w.1),
                Value::Int64(w.2),
                Value::Int64(w.3),
                Value::Int64(w.4),
                Value::Int64(w.5),
            ]
        );
        let Value::List(items) = &row[6] else {
            panic!("collect gave {:?}", row[6]);
        };
        let items: std::collections::BTreeSet<i64> =
            items.iter().map(|v| v.as_i64().unwrap()).collect();
        assert_eq!(items, w.6);
    }

    // Read leaves are not counted: the rel (`count(r)`), both ends, a
    // RETURN without aggregates and an OPTIONAL MATCH all give the same
    // answers whatever the order.
    let q = "MATCH (a:N)-[r:E]->(b:N) RETURN count(DISTINCT b), count(r)";
    let r = conn.query(q).unwrap();
    let got: Vec<Vec<Value>> = r.rows().collect();
    assert_eq!(
        got,
        vec![vec![
            Value::Int64(dsts.len() as i64),
            Value::Int64(rels.len() as i64)
        ]]
    );
    let q = "MATCH (a:N)-[:E]->(b:N) RETURN count(DISTINCT b) + count(DISTINCT a)";
    assert_eq!(count(&conn, q), (dsts.len() + srcs.len()) as i64);
    let q = "MATCH (a:N)-[:E]->(b:N) RETURN DISTINCT b.id";
    assert_eq!(conn.query(q).unwrap().rows().count(), dsts.len());
    let q = "MATCH (c:N {id: 3}) OPTIONAL MATCH (a:N)-[:E]->(b:N) RETURN count(DISTINCT b)";
    assert_eq!(count(&conn, q), dsts.len() as i64);
    // Undirected: the nodes with any rel (self-loops i -> i once).
    let q = "MATCH (a:N)-[:E]-(b:N) RETURN count(DISTINCT b)";
    assert_eq!(count(&conn, q), dsts.union(&srcs).count() as i64);
    let q = "MATCH (a:N)-[:E]-(b:N) RETURN count(*)";
    let loops = rels.iter().filter(|r| r.0 == r.1).count();
    assert_eq!(count(&conn, q), (2 * rels.len() - loops) as i64);
}

/// A scan whose own filters keep few rows (estimated at most 1 in 10)
/// reads only the properties those filters need; the node's other
/// properties are read after the filters, for the rows kept. A weaker
/// filter keeps them in the scan. The rows are the same either way.
#[test]
fn selective_scans_read_other_properties_late() {
    let (db, follows) = social();
    let conn = Connection::new(&db);
    let q = "MATCH (a:U) WHERE a.id % 100 = 7 RETURN a.name, a.age ORDER BY a.name";
    let p = explain(&conn, q);
    let (scan, late) = (
        p.find("ScanNodes U [1 properties]"),
        p.find("ScanProperties U"),
    );
    assert!(
        scan.is_some() && late.is_some_and(|l| l < scan.unwrap_or(0)),
        "{p}"
    );
    let r = conn.query(q).unwrap();
    let got: Vec<Vec<Value>> = r.rows().collect();
    let mut want: Vec<(String, i64)> = (0..1000i64)
        .filter(|i| i % 100 == 7)
        .map(|i| (format!("u{i}"), i % 100))
        .collect();
    want.sort();
    let want: Vec<Vec<Value>> = want
        .into_iter()
        .map(|(n, a)| vec![Value::String(n), Value::Int64(a)])
        .collect();
    assert_eq!(got, want);

    // A range (1/3 of the rows, by the estimates) reads everything in the scan.
    let q = "MATCH (a:U) WHERE a.age > 90 RETURN count(a.name)";
    let p = explain(&conn, q);
    assert!(
        !p.contains("ScanProperties") && p.contains("[2 properties]"),
        "{p}"
    );
    assert_eq!(count(&conn, q), 90);

    // The late property also feeds a predicate over two nodes and the
    // extend after it.
    let q = "MATCH (a:U)-[:F]->(b:U) WHERE a.id % 100 = 7 AND a.age + b.age > 100 RETURN count(*)";
    assert!(explain(&conn, q).contains("ScanProperties U"));
    let want = follows
        .iter()
        .filter(|(a, b)| a % 100 == 7 && a % 100 + b % 100 > 100)
        .count() as i64;
    assert_eq!(count(&conn, q), want);
}

/// `CALL plan_seed=N` skews the table sizes the planner estimates from: the
/// plans differ between seeds (else the fuzzer's plan oracle tests
/// nothing) and the rows do not.
#[test]
fn plan_seeds_change_plans_not_rows() {
    let (db, follows) = social();
    let conn = Connection::new(&db);
    let q = "MATCH (g:G)<-[:M]-(a:U)-[:F]->(b:U)-[:M]->(h:G) \
             WHERE a.age < 50 AND h.id = 3 RETURN count(*)";
    let member = |u: i64| u % 10;
    // A self-follow of a member of group 3 would use one M rel twice.
    let want = follows
        .iter()
        .filter(|(a, b)| a % 100 < 50 && member(*b) == 3 && a != b)
        .count() as i64;
    let default_plan = explain(&conn, q);
    assert_eq!(count(&conn, q), want);
    let mut plans = std::collections::HashSet::new();
    for seed in 1..=12 {
        conn.query(&format!("CALL plan_seed={seed}")).unwrap();
        plans.insert(explain(&conn, q));
        assert_eq!(count(&conn, q), want, "plan_seed={seed}");
    }
    plans.insert(default_plan);
    assert!(plans.len() >= 3, "{} distinct plans", plans.len());
    conn.query("CALL plan_seed=0").unwrap();
    let e = conn.query("CALL plan_seed=-1").unwrap_err().to_string();
    assert!(e.contains("plan_seed expects"), "{e}");
}
