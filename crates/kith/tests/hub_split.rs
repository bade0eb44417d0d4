//! Hubs shared by the workers (`HubSplit`): an aggregating pipeline that
//! scans a node table and extends twice defers the scanned nodes with
//! 1,024 rels or more, then runs again over them on every worker with
//! their rels split by claims. Checked against a reference over the edge
//! list at 1 thread (no split) and 2 (split, which PROFILE reports), for a
//! count, sums, min / max, count(DISTINCT) and grouped counts, with hubs
//! on both ends of the first hop.

use std::collections::BTreeMap;

use kith::{Connection, Value};

mod common;
use common::Lcg;

fn run(conn: &Connection, q: &str) -> Vec<Vec<Value>> {
    conn.query(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows()
        .collect()
}

#[test]
fn shared_hubs_give_the_reference_answers() {
    let db = common::memory_db(2);
    let conn = Connection::new(&db);
    run(
        &conn,
        "CREATE NODE TABLE N(id INT64, g INT64, PRIMARY KEY(id))",
    );
    run(&conn, "CREATE REL TABLE E(FROM N TO N, w INT64)");
    let n = 3000usize;
    let mut rng = Lcg(23);
    let g: Vec<i64> = (0..n).map(|_| rng.below(100) as i64).collect();
    common::create_nodes(&conn, &g.iter().map(|&x| Some(x)).collect::<Vec<_>>());
    // Nodes 10, 11 and 2500 are hubs (about 1,500 rels in and out), the
    // rest sparse; no self loops.
    let hubs = [10usize, 11, 2500];
    let mut rels: Vec<(usize, usize, i64)> = Vec::new();
    let add = |a: usize, b: usize, rels: &mut Vec<(usize, usize, i64)>| {
        if a != b {
            rels.push((a, b, 0));
        }
    };
    for &h in &hubs {
        for _ in 0..1500 {
            add(rng.below(n as u64) as usize, h, &mut rels);
            add(h, rng.below(n as u64) as usize, &mut rels);
        }
    }
    for _ in 0..9000 {
        add(
            rng.below(n as u64) as usize,
            rng.below(n as u64) as usize,
            &mut rels,
        );
    }
    common::copy_rels(&conn, "E", &rels);
    // Hubs pass every filter below (g < 101 keeps all; make sure the small
    // ones keep them too).
    for &h in &hubs {
        run(&conn, &format!("MATCH (b:N {{id: {h}}}) SET b.g = 0"));
    }
    let mut g = g;
    for &h in &hubs {
        g[h] = 0;
    }

    // Reference: every (a -> b, b -> c) with b.g < below (distinct rels:
    // there are no self loops, so two hops are always two rels).
    let (mut ins, mut outs) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    for &(a, b, _) in &rels {
        outs[a].push(b);
        ins[b].push(a);
    }
    for below in [20i64, 101] {
        let mut count = 0i64;
        let (mut sum_c, mut min_a, mut max_c) = (0i64, i64::MAX, i64::MIN);
        let mut distinct_c = std::collections::BTreeSet::new();
        let mut by_k: BTreeMap<i64, i64> = BTreeMap::new();
        for b in (0..n).filter(|&b| g[b] < below) {
            for &a in &ins[b] {
                for &c in &outs[b] {
                    count += 1;
                    sum_c += g[c];
                    min_a = min_a.min(a as i64);
                    max_c = max_c.max(c as i64);
                    distinct_c.insert(c);
                    *by_k.entry(g[c] % 5).or_default() += 1;
                }
            }
        }
        let flat = format!(
            "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE b.g < {below} \
             RETURN count(*), sum(c.g), min(a.id), max(c.id), count(DISTINCT c)"
        );
        let grouped = format!(
            "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE b.g < {below} \
             RETURN c.g % 5 AS k, count(*) ORDER BY k"
        );
        let want_flat = vec![vec![
            Value::Int64(count),
            Value::Int64(sum_c),
            Value::Int64(min_a),
            Value::Int64(max_c),
            Value::Int64(distinct_c.len() as i64),
        ]];
        let want_grouped: Vec<Vec<Value>> = by_k
            .iter()
            .map(|(&k, &c)| vec![Value::Int64(k), Value::Int64(c)])
            .collect();
        for threads in [1, 2] {
            run(&conn, &format!("CALL threads={threads}"));
            assert_eq!(run(&conn, &flat), want_flat, "{threads} threads: {flat}");
            assert_eq!(
                run(&conn, &grouped),
                want_grouped,
                "{threads} threads: {grouped}"
            );
            let shared = common::profile(&conn, &flat).contains("Hubs shared by the workers: 3");
            assert_eq!(shared, threads == 2, "{threads} threads: {flat}");
        }
    }
}
