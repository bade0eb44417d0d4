//! Grouped aggregates keyed by one node, one integer property (NULLs
//! included) or one integer expression, checked against a reference in the
//! test at 1 and 2 threads: the aggregate finds a group by the key's bits
//! when the key is one integer or id, by the key's values otherwise, and
//! the workers' tables merge.

use std::collections::BTreeMap;

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int64(x) => Some(*x),
        Value::Null => None,
        other => panic!("expected an integer, got {other:?}"),
    }
}

#[test]
fn single_integer_and_node_keys_group_like_a_reference() {
    let mut rng = Lcg(11);
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, g INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N, w INT64)")
        .unwrap();
    let n = 2000usize;
    // g: NULL for every ninth node, else one of 40 values (negatives too).
    let g: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 9 != 4).then(|| rng.below(40) as i64 - 20))
        .collect();
    let rows: Vec<String> = (0..n)
        .map(|i| {
            let gv = g[i].map_or("NULL".to_string(), |x| x.to_string());
            format!("{{id: {i}, g: {gv}}}")
        })
        .collect();
    conn.query(&format!(
        "UNWIND [{}] AS r CREATE (:N {{id: r.id, g: r.g}})",
        rows.join(", ")
    ))
    .unwrap();
    let rels: Vec<(usize, usize, i64)> = (0..9000)
        .map(|_| {
            let a = rng.below(n as u64) as usize;
            let b = (rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize;
            (a, b, rng.below(100) as i64)
        })
        .collect();
    let triples: Vec<String> = rels
        .iter()
        .map(|(a, b, w)| format!("[{a}, {b}, {w}]"))
        .collect();
    conn.query(&format!(
        "UNWIND [{}] AS t MATCH (a:N {{id: t[0]}}), (b:N {{id: t[1]}}) CREATE (a)-[:E {{w: t[2]}}]->(b)",
        triples.join(", ")
    ))
    .unwrap();
    // By destination node: count and sum of w; by the source's g (NULL a
    // group of its own); by an expression.
    let mut by_dst: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    let mut by_g: BTreeMap<Option<i64>, (i64, i64)> = BTreeMap::new();
    let mut by_mod: BTreeMap<i64, i64> = BTreeMap::new();
    for &(a, b, w) in &rels {
        let e = by_dst.entry(b as i64).or_default();
        e.0 += 1;
        e.1 += w;
        let e = by_g.entry(g[a]).or_default();
        e.0 += 1;
        e.1 += w;
        *by_mod.entry((a as i64 * 7 + w) % 13).or_default() += 1;
    }
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let got: BTreeMap<i64, (i64, i64)> = conn
            .query(
                "MATCH (a:N)-[e:E]->(b:N) WITH b, count(*) AS c, sum(e.w) AS s RETURN b.id, c, s",
            )
            .unwrap()
            .rows()
            .map(|r| {
                (
                    int(&r[0]).unwrap(),
                    (int(&r[1]).unwrap(), int(&r[2]).unwrap()),
                )
            })
            .collect();
        assert_eq!(got, by_dst, "{threads} threads, by node");
        let got: BTreeMap<Option<i64>, (i64, i64)> = conn
            .query("MATCH (a:N)-[e:E]->(b:N) RETURN a.g, count(*), sum(e.w)")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), (int(&r[1]).unwrap(), int(&r[2]).unwrap())))
            .collect();
        assert_eq!(got, by_g, "{threads} threads, by property");
        let got: BTreeMap<i64, i64> = conn
            .query("MATCH (a:N)-[e:E]->(b:N) RETURN (a.id * 7 + e.w) % 13 AS k, count(*)")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]).unwrap(), int(&r[1]).unwrap()))
            .collect();
        assert_eq!(got, by_mod, "{threads} threads, by expression");
    }
}
