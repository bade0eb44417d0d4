//! A hub's whole neighbour range in one batch: an extend from a node of an
//! earlier, flat group (`MATCH (a)->(b)->(c)` started at `b`) hands the
//! same batch on for every tuple it flattens, and a range longer than one
//! vector is written as one batch of up to eight vectors so that it can be.
//! Such batches go through filters over both ends, property reads, row
//! collection, ORDER BY with LIMIT, grouped aggregates and an optional
//! extend's padding; each query is checked against a reference computed
//! here, at 1 and 2 threads.

use std::collections::BTreeMap;

use kith::{Connection, Value};

mod common;
use common::Lcg;

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        other => panic!("expected an integer, got {other:?}"),
    }
}

struct Graph {
    conn: Connection,
    g: Vec<i64>,
    /// (source, target, w)
    rels: Vec<(usize, usize, i64)>,
}

/// Nodes `N(id, g)` and rels `E(w)` copied from a CSV file (each node's
/// rels one CSR range): node 0 has 2,500 out-rels (more than one vector
/// holds) and 40 in-rels, node 1 300 and 30, the rest are sparse. The
/// planner starts `(a)->(b)->(c)` at `b` and extends to the `a`s first,
/// so the `c`s are the range handed on again.
fn hub_graph() -> Graph {
    let mut rng = Lcg(37);
    let conn = common::nodes_with_weighted_rels();
    let n = 300usize;
    let g: Vec<i64> = (0..n).map(|_| rng.below(8) as i64).collect();
    common::create_nodes(&conn, &g.iter().map(|&g| Some(g)).collect::<Vec<_>>());
    let mut rels = Vec::new();
    let other = |rng: &mut Lcg| 2 + rng.below(n as u64 - 2) as usize;
    for (hub, outs, ins) in [(0usize, 2500, 40), (1, 300, 30)] {
        for _ in 0..ins {
            let a = other(&mut rng);
            rels.push((a, hub, rng.below(100) as i64));
        }
        for _ in 0..outs {
            let c = other(&mut rng);
            rels.push((hub, c, rng.below(100) as i64));
        }
    }
    for _ in 0..1500 {
        let (a, b) = (other(&mut rng), other(&mut rng));
        rels.push((a, b, rng.below(100) as i64));
    }
    common::copy_rels(&conn, "E", &rels);
    Graph { conn, g, rels }
}

#[test]
fn hub_ranges_in_one_batch_match_a_reference() {
    let Graph { conn, g, rels } = hub_graph();
    // Every 2-hop walk through a hub: (a, r.w, b, c, s.w).
    let mut walks = Vec::new();
    for &(b, c, sw) in rels.iter().filter(|r| r.0 < 2) {
        for &(a, _, rw) in rels.iter().filter(|r| r.1 == b) {
            walks.push((a, rw, b, c, sw));
        }
    }
    assert!(walks.len() > 100_000);
    let mut rows_want: Vec<[i64; 5]> = walks
        .iter()
        .filter(|w| g[w.0] + g[w.3] == 7)
        .map(|&(a, rw, b, c, sw)| [a as i64, b as i64, c as i64, rw, sw])
        .collect();
    rows_want.sort_unstable();
    let mut top_want: Vec<[i64; 3]> = walks
        .iter()
        .map(|&(a, _, _, c, _)| [g[a], a as i64, c as i64])
        .collect();
    top_want.sort_unstable_by(|x, y| y[0].cmp(&x[0]).then(x[1..].cmp(&y[1..])));
    let top_want: Vec<[i64; 2]> = top_want[..25].iter().map(|t| [t[1], t[2]]).collect();
    // By c.id % 3: count, sum of r.w, min and max of a.g, distinct a.g.
    let mut groups_want: BTreeMap<i64, (i64, i64, i64, i64, Vec<i64>)> = BTreeMap::new();
    for &(a, rw, _, c, _) in &walks {
        let e = groups_want
            .entry(c as i64 % 3)
            .or_insert((0, 0, i64::MAX, i64::MIN, Vec::new()));
        e.0 += 1;
        e.1 += rw;
        e.2 = e.2.min(g[a]);
        e.3 = e.3.max(g[a]);
        e.4.push(g[a]);
    }
    for e in groups_want.values_mut() {
        e.4.sort_unstable();
        e.4.dedup();
    }
    // OPTIONAL: per a, the c with g = 3 out of each hub b with a -> b (a
    // rel without one still counts as a row, with count(c) adding 0).
    let mut optional_want: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for &(a, b, _) in rels.iter().filter(|r| r.1 < 2) {
        let matches = rels.iter().filter(|r| r.0 == b && g[r.1] == 3).count() as i64;
        let e = optional_want.entry(a as i64).or_default();
        e.0 += matches.max(1);
        e.1 += matches;
    }
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let mut rows: Vec<[i64; 5]> = conn
            .query(
                "MATCH (a:N)-[r:E]->(b:N)-[s:E]->(c:N) WHERE b.id < 2 AND a.g + c.g = 7 \
                 RETURN a.id, b.id, c.id, r.w, s.w",
            )
            .unwrap()
            .rows()
            .map(|r| [int(&r[0]), int(&r[1]), int(&r[2]), int(&r[3]), int(&r[4])])
            .collect();
        rows.sort_unstable();
        assert_eq!(rows, rows_want, "{threads} threads, rows");
        let top: Vec<[i64; 2]> = conn
            .query(
                "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE b.id < 2 \
                 RETURN a.id, c.id ORDER BY a.g DESC, a.id, c.id LIMIT 25",
            )
            .unwrap()
            .rows()
            .map(|r| [int(&r[0]), int(&r[1])])
            .collect();
        assert_eq!(top, top_want, "{threads} threads, top 25");
        let groups: BTreeMap<i64, (i64, i64, i64, i64, Vec<i64>)> = conn
            .query(
                "MATCH (a:N)-[r:E]->(b:N)-[:E]->(c:N) WHERE b.id < 2 \
                 RETURN c.id % 3, count(*), sum(r.w), min(a.g), max(a.g), collect(DISTINCT a.g)",
            )
            .unwrap()
            .rows()
            .map(|r| {
                let Value::List(l) = &r[5] else {
                    panic!("expected a list, got {:?}", r[5]);
                };
                let mut d: Vec<i64> = l.iter().map(int).collect();
                d.sort_unstable();
                (
                    int(&r[0]),
                    (int(&r[1]), int(&r[2]), int(&r[3]), int(&r[4]), d),
                )
            })
            .collect();
        assert_eq!(groups, groups_want, "{threads} threads, groups");
        let optional: BTreeMap<i64, (i64, i64)> = conn
            .query(
                "MATCH (a:N)-[:E]->(b:N) WHERE b.id < 2 \
                 OPTIONAL MATCH (b)-[:E]->(c:N) WHERE c.g = 3 RETURN a.id, count(*), count(c)",
            )
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), (int(&r[1]), int(&r[2]))))
            .collect();
        assert_eq!(optional, optional_want, "{threads} threads, optional");
    }
}
