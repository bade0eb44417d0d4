//! An undirected pattern walks each rel both ways, but the rel's value
//! (returned, carried through WITH, inside a path, in a chain or a cycle)
//! names the ends it is stored with: its source and destination never swap
//! with the direction a row walked it in. Checked on a random multigraph
//! (self loops and parallel rels) at 1 and 2 threads.

use std::collections::HashMap;

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

/// `(stored source key, stored destination key)` of each rel by its `k`.
fn setup(conn: &Connection) -> HashMap<i64, (i64, i64)> {
    let mut rng = Lcg(5);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N, k INT64)")
        .unwrap();
    let n = 40;
    conn.query(&format!(
        "UNWIND range(0, {}) AS i CREATE (:N {{id: i}})",
        n - 1
    ))
    .unwrap();
    let mut rels = HashMap::new();
    for k in 0..150i64 {
        let (a, b) = (rng.below(n) as i64, rng.below(n) as i64);
        conn.query(&format!(
            "MATCH (a:N {{id: {a}}}), (b:N {{id: {b}}}) CREATE (a)-[:E {{k: {k}}}]->(b)"
        ))
        .unwrap();
        rels.insert(k, (a, b));
    }
    rels
}

fn key_of(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// Checks that rel value `r` is stored from the node of key `src` to the
/// node of key `dst`, where `ids` maps a node's internal id to its key.
fn check(r: &Value, ids: &HashMap<u64, i64>, rels: &HashMap<i64, (i64, i64)>, what: &str) {
    let Value::Rel(r) = r else {
        panic!("{what}: expected a rel, got {r:?}");
    };
    let k = r
        .properties
        .iter()
        .find(|p| p.0 == "k")
        .map(|p| key_of(&p.1))
        .unwrap();
    let got = (ids[&r.src.0], ids[&r.dst.0]);
    assert_eq!(got, rels[&k], "{what}: rel {k}");
}

#[test]
fn undirected_rel_values_name_their_stored_ends() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    let rels = setup(&conn);
    let ids: HashMap<u64, i64> = conn
        .query("MATCH (n:N) RETURN n, n.id")
        .unwrap()
        .rows()
        .map(|r| match &r[0] {
            Value::Node(n) => (n.id.0, key_of(&r[1])),
            other => panic!("expected a node, got {other:?}"),
        })
        .collect();
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let mut rows = 0;
        for row in conn
            .query("MATCH (x:N)-[r:E]-(y:N) RETURN r")
            .unwrap()
            .rows()
        {
            check(&row[0], &ids, &rels, "returned");
            rows += 1;
        }
        // Each rel twice (once per direction), a self loop once.
        let loops = rels.values().filter(|(a, b)| a == b).count();
        assert_eq!(rows, 2 * rels.len() - loops, "{threads} threads");
        for row in conn
            .query("MATCH (x:N)-[r:E]-(y:N) WITH r, x WHERE x.id % 2 = 0 RETURN r")
            .unwrap()
            .rows()
        {
            check(&row[0], &ids, &rels, "carried through WITH");
        }
        let chain = conn
            .query("MATCH p = (x:N)-[r:E]-(y:N)<-[s:E]-(z:N) WHERE x.id < 10 RETURN r, s, rels(p)")
            .unwrap();
        assert!(chain.rows().count() > 50);
        for row in chain.rows() {
            check(&row[0], &ids, &rels, "chain, first");
            check(&row[1], &ids, &rels, "chain, second");
            let Value::List(list) = &row[2] else {
                panic!("rels(p) is a list");
            };
            for r in list.iter() {
                check(r, &ids, &rels, "rels(p)");
            }
        }
        // A cycle: the planner binds its last node by intersecting lists.
        let cycles = conn
            .query("MATCH (x:N)-[r:E]-(y:N)-[s:E]-(z:N)-[t:E]-(x) RETURN r, s, t")
            .unwrap();
        assert!(cycles.rows().count() > 10, "{}", cycles.rows().count());
        for row in cycles.rows() {
            for (i, what) in ["cycle r", "cycle s", "cycle t"].iter().enumerate() {
                check(&row[i], &ids, &rels, what);
            }
        }
    }
}
