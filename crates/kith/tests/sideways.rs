//! Semijoin masks passed sideways and group keys read per group, checked on
//! random graphs against a brute-force enumeration in the test, with 1 and
//! 2 threads, on graphs large enough for the mask to be built (many tuples
//! reach the masked node) and on queries where it never is (one start node
//! in a large table), inside a transaction with uncommitted SETs, creates
//! and deletes, and with a predicate that fails on a node no tuple reaches.

use std::collections::HashMap;

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

/// A node: (id, x, name); x is NULL for every seventh node.
struct Graph {
    nodes: Vec<(i64, Option<i64>, String)>,
    rels: Vec<(usize, usize)>,
}

fn random_graph(rng: &mut Lcg, n: usize, m: usize) -> Graph {
    let nodes = (0..n)
        .map(|i| {
            let x = (i % 7 != 3).then(|| rng.below(12) as i64);
            (i as i64, x, format!("n{}", rng.below(5)))
        })
        .collect();
    let rels = (0..m)
        .map(|_| (rng.below(n as u64) as usize, rng.below(n as u64) as usize))
        .collect();
    Graph { nodes, rels }
}

fn load(conn: &Connection, g: &Graph) {
    conn.query("CREATE NODE TABLE N(id INT64, x INT64, name STRING, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    for (id, x, name) in &g.nodes {
        let x = x.map_or("NULL".to_string(), |x| x.to_string());
        conn.query(&format!("CREATE (:N {{id: {id}, x: {x}, name: '{name}'}})"))
            .unwrap();
    }
    for (s, d) in &g.rels {
        conn.query(&format!(
            "MATCH (a:N), (b:N) WHERE a.id = {s} AND b.id = {d} CREATE (a)-[:E]->(b)"
        ))
        .unwrap();
    }
}

/// The 2-hop walks a→b→c over distinct rels whose `c` passes `keep`, from
/// start nodes passing `start`: (a, c) with multiplicity.
fn two_hops(
    g: &Graph,
    start: impl Fn(usize) -> bool,
    keep: impl Fn(usize) -> bool,
) -> HashMap<(i64, i64), u64> {
    let mut out = HashMap::new();
    for (i, &(a, b)) in g.rels.iter().enumerate() {
        if !start(a) {
            continue;
        }
        for (j, &(b2, c)) in g.rels.iter().enumerate() {
            if i != j && b2 == b && keep(c) {
                *out.entry((a as i64, c as i64)).or_insert(0) += 1;
            }
        }
    }
    out
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn pairs(conn: &Connection, q: &str) -> HashMap<(i64, i64), u64> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut out = HashMap::new();
    for row in r.rows() {
        *out.entry((int(&row[0]), int(&row[1]))).or_insert(0) += 1;
    }
    out
}

/// `RETURN c.id, c.name, c.x, count(*)` grouped per c (x may be NULL).
fn groups(conn: &Connection, q: &str) -> HashMap<i64, (String, Option<i64>, i64)> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut out = HashMap::new();
    for row in r.rows() {
        let name = match &row[1] {
            Value::String(s) => s.clone(),
            other => panic!("expected a string, got {other:?}"),
        };
        let x = match &row[2] {
            Value::Null => None,
            v => Some(int(v)),
        };
        assert!(
            out.insert(int(&row[0]), (name, x, int(&row[3]))).is_none(),
            "{q}: two groups for one node"
        );
    }
    out
}

fn expected_groups(
    g: &Graph,
    walks: &HashMap<(i64, i64), u64>,
) -> HashMap<i64, (String, Option<i64>, i64)> {
    let mut out: HashMap<i64, (String, Option<i64>, i64)> = HashMap::new();
    for (&(_, c), &k) in walks {
        let (_, x, name) = &g.nodes[c as usize];
        out.entry(c).or_insert((name.clone(), *x, 0)).2 += k as i64;
    }
    out
}

fn explain(conn: &Connection, q: &str) -> String {
    let r = conn.query(&format!("EXPLAIN {q}")).unwrap();
    r.rows()
        .map(|row| row[0].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn masks_and_dependent_keys_match_brute_force() {
    for (seed, n, m) in [
        (1u64, 60usize, 600usize),
        (2, 200, 1500),
        (3, 25, 80),
        (4, 400, 300),
    ] {
        let mut rng = Lcg(seed);
        let g = random_graph(&mut rng, n, m);
        let db = Database::open(":memory:", Config::default()).unwrap();
        let conn = Connection::new(&db);
        load(&conn, &g);
        let x = |c: usize| g.nodes[c].1;
        for threads in [1, 2] {
            conn.query(&format!("CALL threads={threads}")).unwrap();
            let ctx = format!("seed {seed}, {threads} threads");
            // Selective, NULL-dropping, and unselective predicates on c.
            let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.x % 4 = 1 RETURN a.id, c.id";
            let want = two_hops(&g, |_| true, |c| x(c).is_some_and(|v| v % 4 == 1));
            assert_eq!(pairs(&conn, q), want, "{ctx}: {q}");
            let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.x IS NULL OR c.name = 'n1' RETURN a.id, c.id";
            let want = two_hops(&g, |_| true, |c| x(c).is_none() || g.nodes[c].2 == "n1");
            assert_eq!(pairs(&conn, q), want, "{ctx}: {q}");
            let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.id >= 0 RETURN a.id, c.id";
            assert_eq!(
                pairs(&conn, q),
                two_hops(&g, |_| true, |_| true),
                "{ctx}: {q}"
            );
            // One start node: too few tuples to build the mask.
            let q =
                "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE a.id = 5 AND c.x < 6 RETURN a.id, c.id";
            let want = two_hops(&g, |a| a == 5, |c| x(c).is_some_and(|v| v < 6));
            assert_eq!(pairs(&conn, q), want, "{ctx}: {q}");
            // Keys read per group (c's properties after grouping by its key).
            let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.x > 2 RETURN c.id, c.name, c.x, count(*)";
            let walks = two_hops(&g, |_| true, |c| x(c).is_some_and(|v| v > 2));
            assert_eq!(groups(&conn, q), expected_groups(&g, &walks), "{ctx}: {q}");
            let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) RETURN c.id, c.name, c.x, count(*)";
            let walks = two_hops(&g, |_| true, |_| true);
            assert_eq!(groups(&conn, q), expected_groups(&g, &walks), "{ctx}: {q}");
            // Two nodes' keys read per group, in an order unlike the keys'.
            let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.x < 5 RETURN c.x, a.name, a.id, c.id, count(*), a.x";
            let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
            let mut got = HashMap::new();
            for row in r.rows() {
                let (a, c) = (int(&row[2]) as usize, int(&row[3]) as usize);
                assert_eq!(row[0], Value::Int64(x(c).unwrap()), "{ctx}: {q}");
                assert_eq!(row[1], Value::String(g.nodes[a].2.clone()), "{ctx}: {q}");
                let ax = x(a).map_or(Value::Null, Value::Int64);
                assert_eq!(row[5], ax, "{ctx}: {q}");
                got.insert((a as i64, c as i64), int(&row[4]) as u64);
            }
            let want = two_hops(&g, |_| true, |c| x(c).is_some_and(|v| v < 5));
            assert_eq!(got, want, "{ctx}: {q}");
        }
    }
}

#[test]
fn explain_shows_the_mask_and_the_dependent_keys() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    load(&conn, &random_graph(&mut Lcg(9), 10, 20));
    let p = explain(
        &conn,
        "MATCH (a:N)-[:E]->(c:N) WHERE a.id = 1 AND c.x = 2 RETURN c.id, c.name, count(*)",
    );
    assert!(p.contains("SemiMask N"), "{p}");
    assert!(
        p.contains("keys=1 aggregates=[count] (2 dependent keys"),
        "{p}"
    );
    // Grouping on a property that is not the key: nothing is dependent.
    let p = explain(
        &conn,
        "MATCH (a:N)-[:E]->(c:N) RETURN c.name, c.x, count(*)",
    );
    assert!(p.contains("keys=2") && !p.contains("dependent"), "{p}");
    // A start node's predicate filters its scan: no mask.
    let p = explain(&conn, "MATCH (a:N) WHERE a.x = 2 RETURN count(*)");
    assert!(!p.contains("SemiMask"), "{p}");
}

/// The mask reads the transaction's own writes: SET values, created nodes
/// and rels, deleted nodes.
#[test]
fn masks_see_the_transaction_s_writes() {
    let mut rng = Lcg(5);
    let mut g = random_graph(&mut rng, 80, 900);
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    load(&conn, &g);
    conn.query("BEGIN TRANSACTION").unwrap();
    conn.query("MATCH (c:N) WHERE c.id % 5 = 0 SET c.x = 101")
        .unwrap();
    for c in 0..g.nodes.len() {
        if c % 5 == 0 {
            g.nodes[c].1 = Some(101);
        }
    }
    for i in 80..90 {
        conn.query(&format!("CREATE (:N {{id: {i}, x: 101, name: 'new'}})"))
            .unwrap();
        g.nodes.push((i, Some(101), "new".to_string()));
        for s in [1usize, 2, 3] {
            conn.query(&format!(
                "MATCH (a:N), (b:N) WHERE a.id = {s} AND b.id = {i} CREATE (a)-[:E]->(b)"
            ))
            .unwrap();
            g.rels.push((s, i as usize));
        }
    }
    let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.x = 101 RETURN a.id, c.id";
    let want = two_hops(&g, |_| true, |c| g.nodes[c].1 == Some(101));
    assert_eq!(pairs(&conn, q), want);
    let q =
        "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.x = 101 RETURN c.id, c.name, c.x, count(*)";
    let walks = two_hops(&g, |_| true, |c| g.nodes[c].1 == Some(101));
    assert_eq!(groups(&conn, q), expected_groups(&g, &walks));
    conn.query("ROLLBACK").unwrap();
    let r = conn
        .query("MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE c.x = 101 RETURN count(*)")
        .unwrap();
    assert_eq!(r.rows().next().unwrap()[0], Value::Int64(0));
}

/// A predicate that fails on a node no tuple reaches (a division by zero on
/// an isolated node) fails the mask, not the query.
#[test]
fn a_predicate_failing_off_the_pattern_does_not_fail_the_query() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, x INT64, name STRING, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    conn.query("UNWIND range(1, 40) AS i CREATE (:N {id: i, x: i % 3 + 1, name: 'a'})")
        .unwrap();
    conn.query("CREATE (:N {id: 0, x: 0, name: 'isolated'})")
        .unwrap();
    conn.query(
        "MATCH (a:N), (b:N) WHERE a.id > 0 AND b.id > 0 AND a.id <> b.id CREATE (a)-[:E]->(b)",
    )
    .unwrap();
    let r = conn
        .query("MATCH (a:N)-[:E]->(c:N) WHERE a.id = 1 AND 6 / c.x = 3 RETURN count(*)")
        .unwrap();
    // c.x = 2 for the nodes with i % 3 = 1: 13 of them besides node 1.
    assert_eq!(r.rows().next().unwrap()[0], Value::Int64(13));
}
