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

/// A part whose pipelines start one from a primary-key lookup (one tuple,
/// shared by the workers) and one from a scan with a hub: the hubs' run
/// counts the hub's matches once more than the first run left out, and
/// the lookup's matches still once.
#[test]
fn a_hub_run_leaves_the_other_pipelines_alone() {
    let conn = Connection::new(&common::memory_db(2));
    run(&conn, "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))");
    run(
        &conn,
        "CREATE NODE TABLE M(name STRING, id INT64, PRIMARY KEY(name))",
    );
    run(&conn, "CREATE REL TABLE E(FROM N TO N, w INT64)");
    run(&conn, "CREATE REL TABLE F(FROM M TO N)");
    let n = 400usize;
    run(
        &conn,
        &format!("UNWIND range(0, {}) AS i CREATE (:N {{id: i}})", n - 1),
    );
    run(
        &conn,
        "CREATE (:M {name: 'hub', id: 5}), (:M {name: 'other', id: 6})",
    );
    let mut rng = Lcg(8);
    let mut e: Vec<(usize, usize)> = Vec::new();
    for _ in 0..3000 {
        let a = rng.below(n as u64) as usize;
        let b = (a + 1 + rng.below(n as u64 - 1) as usize) % n;
        e.push((a, b));
    }
    common::copy_rels(
        &conn,
        "E",
        &e.iter().map(|&(a, b)| (a, b, 0)).collect::<Vec<_>>(),
    );
    // The M node with id 5 is a hub of 1,200 rels into N.
    let f: Vec<usize> = (0..1200).map(|_| rng.below(n as u64) as usize).collect();
    let list = f
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    run(
        &conn,
        &format!(
            "MATCH (m:M {{name: 'hub'}}) UNWIND [{list}] AS t \
             MATCH (b:N {{id: t}}) CREATE (m)-[:F]->(b)"
        ),
    );
    let out = |x: usize| e.iter().filter(|&&(a, _)| a == x).count() as i64;
    // From N's node 5 (a lookup) and from M's hub (a scan filtered on id).
    let from_n: i64 = e
        .iter()
        .filter(|&&(a, _)| a == 5)
        .map(|&(_, b)| out(b))
        .sum();
    let from_m: i64 = f.iter().map(|&b| out(b)).sum();
    let q = "MATCH (a)-[]->(b:N)-[:E]->(c:N) WHERE a.id = 5 RETURN count(*)";
    for threads in [1, 2] {
        run(&conn, &format!("CALL threads={threads}"));
        assert_eq!(
            run(&conn, q),
            vec![vec![Value::Int64(from_n + from_m)]],
            "{threads} threads: {q}\n{}",
            common::profile(&conn, q)
        );
    }
    assert!(common::profile(&conn, q).contains("Hubs shared by the workers: 1"));
}
