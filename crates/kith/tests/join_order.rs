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
