//! Grouped aggregates keyed by one node, one integer property (NULLs
//! included) or one integer expression, checked against a reference in the
//! test at 1 and 2 threads: the aggregate finds a group by the key's bits
//! when the key is one integer or id, by the key's values otherwise, and
//! the workers' tables merge.

use std::collections::BTreeMap;

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

fn explain(conn: &Connection, q: &str) -> String {
    conn.query(&format!("EXPLAIN {q}"))
        .unwrap()
        .rows()
        .map(|r| format!("{:?}\n", r[0]))
        .collect()
}

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
    let conn = common::nodes_with_weighted_rels();
    let n = 2000usize;
    // g: NULL for every ninth node, else one of 40 values (negatives too).
    let g: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 9 != 4).then(|| rng.below(40) as i64 - 20))
        .collect();
    common::create_nodes(&conn, &g);
    let rels: Vec<(usize, usize, i64)> = (0..9000)
        .map(|_| {
            let a = rng.below(n as u64) as usize;
            let b = (rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize;
            (a, b, rng.below(100) as i64)
        })
        .collect();
    common::create_rels(&conn, "N", "E", &rels);
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
        // count(*) alone by the node: counted in the dense-offset loop.
        let got: BTreeMap<i64, i64> = conn
            .query("MATCH (a:N)-[e:E]->(b:N) WITH b, count(*) AS c RETURN b.id, c")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]).unwrap(), int(&r[1]).unwrap()))
            .collect();
        let want: BTreeMap<i64, i64> = by_dst.iter().map(|(&b, &(c, _))| (b, c)).collect();
        assert_eq!(got, want, "{threads} threads, count by node");
        // The node's value as the key: grouped on its id, its properties
        // read per group after aggregating.
        let q =
            "MATCH (a:N)-[e:E]->(b:N) RETURN b, count(*) AS c, sum(e.w) AS s ORDER BY c DESC, b";
        let plan = explain(&conn, q);
        assert!(plan.contains("dependent keys"), "{plan}");
        let rows: Vec<Vec<Value>> = conn.query(q).unwrap().rows().collect();
        assert_eq!(rows.len(), by_dst.len());
        for w in rows.windows(2) {
            assert!(int(&w[0][1]) >= int(&w[1][1]), "{threads} threads, order");
        }
        let got: BTreeMap<i64, (i64, i64)> = rows
            .iter()
            .map(|r| {
                let Value::Node(b) = &r[0] else {
                    panic!("expected a node, got {:?}", r[0]);
                };
                let prop = |name: &str| {
                    b.properties
                        .iter()
                        .find(|p| p.0 == name)
                        .map(|p| p.1.clone())
                        .unwrap()
                };
                let id = int(&prop("id")).unwrap();
                assert_eq!(int(&prop("g")), g[id as usize], "g of node {id}");
                (id, (int(&r[1]).unwrap(), int(&r[2]).unwrap()))
            })
            .collect();
        assert_eq!(got, by_dst, "{threads} threads, by node value");
        // A node that may be NULL (from an OPTIONAL MATCH), with another
        // key beside it: the nodes without a rel group under NULL.
        let mut by_dst_g: BTreeMap<(Option<i64>, Option<i64>), i64> = BTreeMap::new();
        let mut has_out = vec![false; n];
        for &(a, b, _) in &rels {
            has_out[a] = true;
            *by_dst_g.entry((Some(b as i64), g[a])).or_default() += 1;
        }
        for (a, out) in has_out.iter().enumerate() {
            if !out {
                *by_dst_g.entry((None, g[a])).or_default() += 1;
            }
        }
        let q = "MATCH (a:N) OPTIONAL MATCH (a)-[:E]->(b:N) WITH a, b RETURN b, a.g AS g, count(*)";
        let plan = explain(&conn, q);
        assert!(plan.contains("dependent keys"), "{plan}");
        let got: BTreeMap<(Option<i64>, Option<i64>), i64> = conn
            .query(q)
            .unwrap()
            .rows()
            .map(|r| {
                let b = match &r[0] {
                    Value::Node(b) => b
                        .properties
                        .iter()
                        .find(|p| p.0 == "id")
                        .and_then(|p| int(&p.1)),
                    Value::Null => None,
                    other => panic!("expected a node or NULL, got {other:?}"),
                };
                ((b, int(&r[1])), int(&r[2]).unwrap())
            })
            .collect();
        assert_eq!(
            got, by_dst_g,
            "{threads} threads, by a node that may be NULL"
        );
        // The node alone as the key, NULL for the sources without a rel:
        // a group of its own beside the nodes' (kept as key bits).
        let mut want: BTreeMap<Option<i64>, i64> =
            by_dst.iter().map(|(&b, &(c, _))| (Some(b), c)).collect();
        let without = has_out.iter().filter(|out| !**out).count() as i64;
        assert!(without > 0);
        want.insert(None, without);
        let got: BTreeMap<Option<i64>, i64> = conn
            .query(
                "MATCH (a:N) OPTIONAL MATCH (a)-[:E]->(b:N) WITH b, count(*) AS c RETURN b.id, c",
            )
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), int(&r[1]).unwrap()))
            .collect();
        assert_eq!(
            got, want,
            "{threads} threads, by a node alone that may be NULL"
        );
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

/// Keys of two node tables (the first seen is mapped densely, the other
/// hashed), counts of a property with NULLs, and count(DISTINCT) of nodes
/// and integers, against a reference at 1 and 2 threads.
#[test]
fn node_keys_of_two_tables_and_distinct_counts_match_a_reference() {
    let mut rng = Lcg(29);
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    for ddl in [
        "CREATE NODE TABLE A(id INT64, g INT64, PRIMARY KEY(id))",
        "CREATE NODE TABLE B(id INT64, g INT64, PRIMARY KEY(id))",
        "CREATE REL TABLE EAA(FROM A TO A, w INT64)",
        "CREATE REL TABLE EAB(FROM A TO B, w INT64)",
        "CREATE REL TABLE EBA(FROM B TO A, w INT64)",
    ] {
        conn.query(ddl).unwrap();
    }
    // Node k of table t (0 = A, 1 = B) has id 10000 t + k and g = k % 7,
    // NULL when k % 5 = 0.
    let n = 1500u64;
    let g_of = |k: u64| (!k.is_multiple_of(5)).then_some((k % 7) as i64);
    for (t, label) in ["A", "B"].iter().enumerate() {
        let rows: Vec<String> = (0..n)
            .map(|k| {
                let g = g_of(k).map_or("NULL".to_string(), |x| x.to_string());
                format!("{{id: {}, g: {g}}}", 10000 * t as u64 + k)
            })
            .collect();
        conn.query(&format!(
            "UNWIND [{}] AS r CREATE (:{label} {{id: r.id, g: r.g}})",
            rows.join(", ")
        ))
        .unwrap();
    }
    // (src table, src, dst table, dst, w or NULL); no B -> B table.
    let mut rels = Vec::new();
    for _ in 0..6000 {
        let (ta, tb) = match rng.below(3) {
            0 => (0, 0),
            1 => (0, 1),
            _ => (1, 0),
        };
        let a = rng.below(n);
        let b = rng.below(n) * rng.below(n) / n;
        let w = (rng.below(4) != 0).then(|| rng.below(50) as i64);
        rels.push((ta, a, tb, b, w));
    }
    let label = |t: u64| if t == 0 { "A" } else { "B" };
    for (ta, tb) in [(0, 0), (0, 1), (1, 0)] {
        let items: Vec<String> = rels
            .iter()
            .filter(|r| (r.0, r.2) == (ta, tb))
            .map(|r| {
                let w = r.4.map_or("NULL".to_string(), |x| x.to_string());
                format!("[{}, {}, {w}]", 10000 * ta + r.1, 10000 * tb + r.3)
            })
            .collect();
        conn.query(&format!(
            "UNWIND [{}] AS t MATCH (a:{} {{id: t[0]}}), (b:{} {{id: t[1]}}) CREATE (a)-[:E{}{} {{w: t[2]}}]->(b)",
            items.join(", "),
            label(ta),
            label(tb),
            label(ta),
            label(tb)
        ))
        .unwrap();
    }
    // Per destination: count(*), count(e.w), count(DISTINCT a), count(DISTINCT a.g).
    type Row = (i64, i64, i64, i64);
    let mut sets: BTreeMap<i64, (i64, i64, Vec<i64>, Vec<i64>)> = BTreeMap::new();
    for &(ta, a, tb, b, w) in &rels {
        let e = sets.entry((10000 * tb + b) as i64).or_default();
        e.0 += 1;
        e.1 += i64::from(w.is_some());
        e.2.push((10000 * ta + a) as i64);
        if let Some(g) = g_of(a) {
            e.3.push(g);
        }
    }
    let want: BTreeMap<i64, Row> = sets
        .into_iter()
        .map(|(k, (c, cw, mut a, mut g))| {
            a.sort_unstable();
            a.dedup();
            g.sort_unstable();
            g.dedup();
            (k, (c, cw, a.len() as i64, g.len() as i64))
        })
        .collect();
    let mut all_src: Vec<i64> = rels.iter().map(|r| (10000 * r.0 + r.1) as i64).collect();
    all_src.sort_unstable();
    all_src.dedup();
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let got: BTreeMap<i64, Row> = conn
            .query(
                "MATCH (a)-[e]->(b) WITH b, count(*) AS c, count(e.w) AS cw, \
                 count(DISTINCT a) AS da, count(DISTINCT a.g) AS dg RETURN b.id, c, cw, da, dg",
            )
            .unwrap()
            .rows()
            .map(|r| {
                let v = |i: usize| int(&r[i]).unwrap();
                (v(0), (v(1), v(2), v(3), v(4)))
            })
            .collect();
        assert_eq!(got, want, "{threads} threads");
        let got = conn
            .query("MATCH (a)-[e]->(b) RETURN count(DISTINCT a), count(DISTINCT e), count(e)")
            .unwrap();
        let row: Vec<Value> = got.rows().next().unwrap().to_vec();
        let want_row = [all_src.len() as i64, rels.len() as i64, rels.len() as i64];
        assert_eq!(
            row.iter().map(|v| int(v).unwrap()).collect::<Vec<_>>(),
            want_row,
            "{threads} threads, global"
        );
    }
    // count(DISTINCT) over mixed values: 1 and 1.0 are one value, NULL none.
    let r = conn
        .query(
            "UNWIND [1, 1.0, 2, 2.5, 'a', 'a', NULL, 3, 3.0, -0.0, 0] AS x \
             RETURN count(DISTINCT x), collect(DISTINCT x) = collect(DISTINCT x)",
        )
        .unwrap();
    let row: Vec<Value> = r.rows().next().unwrap().to_vec();
    assert_eq!(row[0], Value::Int64(6));
}

/// Counts and other aggregates grouped by one end of the last rel, whose
/// other end nothing reads: the extend hands on each batch of the grouped
/// end with each node's degree as its weight (`CountMode::Degrees`), so every
/// aggregate must count a node once per rel. Checked against a reference at
/// 1 and 2 threads, with the isomorphism test of two rels of one table, a
/// node of an earlier group extended from, self loops and parallel rels.
#[test]
fn degree_weighted_groups_match_a_reference() {
    let mut rng = Lcg(23);
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, g INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    conn.query("CREATE REL TABLE F(FROM N TO N)").unwrap();
    let n = 3000usize;
    let g: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 7 != 3).then(|| rng.below(12) as i64 - 4))
        .collect();
    common::create_nodes(&conn, &g);
    // Skewed sources (some nodes with many rels, most with none), self
    // loops and parallel rels.
    let mut random_rels = |count: usize| -> Vec<(usize, usize)> {
        (0..count)
            .map(|_| {
                let a = (rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize;
                let b = if rng.below(20) == 0 {
                    a
                } else {
                    rng.below(n as u64) as usize
                };
                (a, b)
            })
            .collect()
    };
    let e = random_rels(12000);
    let f = random_rels(4000);
    for (table, rels) in [("E", &e), ("F", &f)] {
        let pairs: Vec<String> = rels.iter().map(|(a, b)| format!("[{a}, {b}]")).collect();
        conn.query(&format!(
            "UNWIND [{}] AS t MATCH (a:N {{id: t[0]}}), (b:N {{id: t[1]}}) CREATE (a)-[:{table}]->(b)",
            pairs.join(", ")
        ))
        .unwrap();
    }
    // By the source's g: count, sum and max of the source's id, distinct
    // sources, and the sources collected once per rel.
    let mut by_g: BTreeMap<Option<i64>, (i64, i64, i64, Vec<i64>)> = BTreeMap::new();
    for &(a, _) in &e {
        let s = by_g.entry(g[a]).or_insert((0, 0, i64::MIN, Vec::new()));
        s.0 += 1;
        s.1 += a as i64;
        s.2 = s.2.max(a as i64);
        s.3.push(a as i64);
    }
    let ungrouped = (
        e.len() as i64,
        e.iter().filter_map(|&(a, _)| g[a]).sum::<i64>(),
    );
    // Two hops over E (never the same rel twice) and E then F, by both
    // ends' g.
    let mut out_e: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, &(a, _)) in e.iter().enumerate() {
        out_e[a].push(i);
    }
    let mut out_f = vec![0i64; n];
    for &(a, _) in &f {
        out_f[a] += 1;
    }
    let mut ee: BTreeMap<(Option<i64>, Option<i64>), i64> = BTreeMap::new();
    let mut ef: BTreeMap<(Option<i64>, Option<i64>), i64> = BTreeMap::new();
    for (i, &(a, b)) in e.iter().enumerate() {
        let walks = out_e[b].iter().filter(|&&j| j != i).count() as i64;
        if walks > 0 {
            *ee.entry((g[a], g[b])).or_default() += walks;
        }
        if out_f[b] > 0 {
            *ef.entry((g[a], g[b])).or_default() += out_f[b];
        }
    }
    // F rels from a node with g > 0, each standing for the E rels of
    // that node: by the F rel's target's g and by its source's g, the
    // count and the sum of the other end's g.
    let mut by_c: BTreeMap<Option<i64>, (i64, i64)> = BTreeMap::new();
    let mut by_b: BTreeMap<Option<i64>, (i64, i64)> = BTreeMap::new();
    for &(b, c) in &f {
        let d = out_e[b].len() as i64;
        let Some(gb) = g[b].filter(|&x| x > 0) else {
            continue;
        };
        if d == 0 {
            continue;
        }
        let s = by_c.entry(g[c]).or_default();
        s.0 += d;
        s.1 += gb * d;
        let s = by_b.entry(Some(gb)).or_default();
        s.0 += d;
        s.1 += g[c].unwrap_or(0) * d;
    }
    let triples = |conn: &Connection, q: &str| -> BTreeMap<Option<i64>, (i64, i64)> {
        conn.query(q)
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), (int(&r[1]).unwrap(), int(&r[2]).unwrap())))
            .collect()
    };
    let pairs = |conn: &Connection, q: &str| -> BTreeMap<(Option<i64>, Option<i64>), i64> {
        conn.query(q)
            .unwrap()
            .rows()
            .map(|r| ((int(&r[0]), int(&r[1])), int(&r[2]).unwrap()))
            .collect()
    };
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let got: BTreeMap<Option<i64>, (i64, i64, i64, Vec<i64>)> = conn
            .query(
                "MATCH (a:N)-[:E]->(b:N) RETURN a.g, count(*), sum(a.id), max(a.id), collect(a.id)",
            )
            .unwrap()
            .rows()
            .map(|r| {
                let Value::List(l) = &r[4] else {
                    panic!("collect gave {:?}", r[4]);
                };
                let mut l: Vec<i64> = l.iter().map(|v| int(v).unwrap()).collect();
                l.sort_unstable();
                let s = (
                    int(&r[1]).unwrap(),
                    int(&r[2]).unwrap(),
                    int(&r[3]).unwrap(),
                    l,
                );
                (int(&r[0]), s)
            })
            .collect();
        let want: BTreeMap<Option<i64>, (i64, i64, i64, Vec<i64>)> = by_g
            .iter()
            .map(|(k, (c, s, m, l))| {
                let mut l = l.clone();
                l.sort_unstable();
                (*k, (*c, *s, *m, l))
            })
            .collect();
        assert_eq!(got, want, "{threads} threads, by the source's g");
        let got: BTreeMap<Option<i64>, i64> = conn
            .query("MATCH (a:N)-[:E]->(b:N) RETURN a.g, count(DISTINCT a)")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), int(&r[1]).unwrap()))
            .collect();
        let want: BTreeMap<Option<i64>, i64> = by_g
            .iter()
            .map(|(k, (_, _, _, l))| {
                let mut l = l.clone();
                l.sort_unstable();
                l.dedup();
                (*k, l.len() as i64)
            })
            .collect();
        assert_eq!(got, want, "{threads} threads, distinct sources");
        let r: Vec<Value> = conn
            .query("MATCH (a:N)-[:E]->(b:N) RETURN count(*), sum(a.g)")
            .unwrap()
            .rows()
            .next()
            .unwrap();
        assert_eq!(
            (int(&r[0]).unwrap(), int(&r[1]).unwrap()),
            ungrouped,
            "{threads} threads"
        );
        let q = "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) RETURN a.g, b.g, count(*)";
        assert_eq!(pairs(&conn, q), ee, "{threads} threads, {q}");
        let q = "MATCH (a:N)-[:E]->(b:N)-[:F]->(c:N) RETURN a.g, b.g, count(*)";
        assert_eq!(pairs(&conn, q), ef, "{threads} threads, {q}");
        // Started at `b` (its own predicate): the last extend runs from
        // `b`, flat in an earlier group, over the batch of `c`s the sink
        // reads; the key is `c`'s (unflat) or `b`'s (flat).
        let q = "MATCH (c:N)<-[:F]-(b:N)-[:E]->(x:N) WHERE b.g > 0 RETURN c.g, count(*), sum(b.g)";
        assert_eq!(triples(&conn, q), by_c, "{threads} threads, {q}");
        let q = "MATCH (c:N)<-[:F]-(b:N)-[:E]->(x:N) WHERE b.g > 0 RETURN b.g, count(*), sum(c.g)";
        assert_eq!(triples(&conn, q), by_b, "{threads} threads, {q}");
    }
}

/// An extend that hands the same neighbours on for every tuple of an
/// earlier group (`MATCH (a)-[]->(b)-[]->(c)` started at `b`, extended to
/// each `c` and then back to the same `a`s) gives the aggregate one batch
/// many times: min, max and DISTINCT take it once, counts, sums and
/// averages add its first reading each time. Checked against a reference
/// and against the same aggregates over `a.g + 0` (an expression, read
/// again every time), at 1 and 2 threads.
#[test]
fn repeated_neighbour_batches_aggregate_like_a_reference() {
    let mut rng = Lcg(29);
    let conn = common::nodes_with_weighted_rels();
    let n = 400usize;
    let g: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 7 != 2).then(|| rng.below(50) as i64 - 10))
        .collect();
    common::create_nodes(&conn, &g);
    // Hubs (ids below 20) have hundreds of in- and out-rels, so their
    // neighbour batches repeat for many tuples; no self loops, so no rel
    // is excluded from a batch.
    let mut rels = Vec::new();
    for _ in 0..6000 {
        let (mut a, mut b) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
        if rng.below(2) == 0 {
            a %= 20;
        } else {
            b %= 20;
        }
        if a != b {
            rels.push((a, b, rng.below(100) as i64));
        }
    }
    // Copied, so each node's rels are one CSR range, which an extend can
    // hand on again whole (created rels are appended runs).
    common::copy_rels(&conn, "E", &rels);
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b, _) in &rels {
        into[b].push(a);
        out[a].push(b);
    }
    // Reference: every (a, b, c) with b.id % 3 = 0 (two distinct rels,
    // never one: there are no self loops), aggregating `a.g` or `c.g`
    // (whichever end the plan extends last repeats its batches).
    let reference = |of_a: bool| {
        let (mut count, mut count_g, mut sum, mut sum_other) = (0i64, 0i64, 0i64, 0i64);
        let (mut min, mut max) = (None::<i64>, None::<i64>);
        let mut distinct = std::collections::BTreeSet::new();
        for b in (0..n).filter(|b| b % 3 == 0) {
            for &c in &out[b] {
                for &a in &into[b] {
                    let (x, other) = if of_a { (a, c) } else { (c, a) };
                    count += 1;
                    sum_other += g[other].unwrap_or(0);
                    if let Some(v) = g[x] {
                        count_g += 1;
                        sum += v;
                        min = Some(min.map_or(v, |m: i64| m.min(v)));
                        max = Some(max.map_or(v, |m: i64| m.max(v)));
                        distinct.insert(v);
                    }
                }
            }
        }
        vec![
            Value::Int64(count),
            Value::Int64(count_g),
            Value::Int64(sum),
            Value::Double(sum as f64 / count_g as f64),
            min.map_or(Value::Null, Value::Int64),
            max.map_or(Value::Null, Value::Int64),
            Value::Int64(distinct.len() as i64),
            Value::Int64(sum_other),
        ]
    };
    let query = |x: &str, other: &str| {
        format!(
            "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE b.id % 3 = 0 \
             RETURN count(*), count({x}), sum({x}), avg({x}), min({x}), max({x}), \
             count(DISTINCT {x}), sum({other}.g)"
        )
    };
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for (end, other) in [("a", "c"), ("c", "a")] {
            let want = reference(end == "a");
            for x in [format!("{end}.g"), format!("{end}.g + 0")] {
                let q = query(&x, other);
                let got: Vec<Value> = conn.query(&q).unwrap().rows().next().unwrap();
                assert_eq!(got, want, "{threads} threads: {q}\n{}", explain(&conn, &q));
            }
        }
    }
}

/// Counts by one end of a rel (each tuple weighted by its node's degree,
/// read two offsets at a time where a CSR group has no changes) over rels
/// copied into their CSR ranges, then created (appended runs) and deleted
/// in some groups, against a reference at 1 and 2 threads.
#[test]
fn degrees_of_copied_created_and_deleted_rels_count_like_a_reference() {
    let mut rng = Lcg(31);
    let conn = common::nodes_with_weighted_rels();
    let n = 1000usize;
    let g: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 11 != 5).then(|| rng.below(30) as i64))
        .collect();
    common::create_nodes(&conn, &g);
    let mut rels: Vec<(usize, usize, i64)> = (0..5000)
        .map(|_| {
            let a = (rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize;
            (a, rng.below(n as u64) as usize, rng.below(50) as i64)
        })
        .collect();
    common::copy_rels(&conn, "E", &rels);
    // Straight after the copy (no group has changes: a scan's batches read
    // their degrees as runs of offsets), and with nodes added after the
    // rels were built (they have none).
    let by_dst_of = |rels: &[(usize, usize, i64)]| {
        let mut by_dst: BTreeMap<i64, i64> = BTreeMap::new();
        for &(_, b, _) in rels {
            *by_dst.entry(b as i64).or_default() += 1;
        }
        by_dst
    };
    let counts = |q: &str| -> BTreeMap<i64, i64> {
        conn.query(q)
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]).unwrap(), int(&r[1]).unwrap()))
            .collect()
    };
    let in_degrees = "MATCH (a:N)-[:E]->(b:N) WITH b, count(*) AS c RETURN b.id, c";
    let distinct = "MATCH (a:N)-[:E]->(b:N) RETURN 0, count(DISTINCT b)";
    for added in [0, 1] {
        if added == 1 {
            conn.query(&format!(
                "UNWIND range({n}, {}) AS i CREATE (:N {{id: i, g: 1}})",
                n + 40
            ))
            .unwrap();
        }
        for threads in [1, 2] {
            conn.query(&format!("CALL threads={threads}")).unwrap();
            let want = by_dst_of(&rels);
            assert_eq!(counts(in_degrees), want, "{threads} threads, copied");
            let distinct_want = BTreeMap::from([(0, want.len() as i64)]);
            assert_eq!(counts(distinct), distinct_want, "{threads} threads, copied");
        }
    }
    // Created rels touch nodes below 300 only, so the other groups keep
    // no changes; deleting w = 7 touches every group.
    let created: Vec<(usize, usize, i64)> = (0..400)
        .map(|_| {
            let a = rng.below(300) as usize;
            (a, rng.below(300) as usize, 50 + rng.below(50) as i64)
        })
        .collect();
    common::create_rels(&conn, "N", "E", &created);
    rels.extend(created);
    conn.query("MATCH (:N)-[e:E]->(:N) WHERE e.w = 7 DELETE e")
        .unwrap();
    rels.retain(|r| r.2 != 7);
    let mut by_dst: BTreeMap<i64, i64> = BTreeMap::new();
    let mut by_g: BTreeMap<Option<i64>, i64> = BTreeMap::new();
    for &(a, b, _) in &rels {
        *by_dst.entry(b as i64).or_default() += 1;
        *by_g.entry(g[a]).or_default() += 1;
    }
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let got: BTreeMap<i64, i64> = conn
            .query("MATCH (a:N)-[:E]->(b:N) WITH b, count(*) AS c RETURN b.id, c")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]).unwrap(), int(&r[1]).unwrap()))
            .collect();
        assert_eq!(got, by_dst, "{threads} threads, by target");
        let distinct_want = BTreeMap::from([(0, by_dst.len() as i64)]);
        assert_eq!(counts(distinct), distinct_want, "{threads} threads");
        // The added nodes (in a node group of their own under kith_tiny)
        // have no rels, whatever another group's appended rels hold.
        for q in [
            "MATCH (a:N)-[e:E]->(b:N) WHERE a.id >= 1000 RETURN count(e)",
            "MATCH (a:N)<-[e:E]-(b:N) WHERE a.id >= 1000 RETURN count(e)",
        ] {
            let got = conn.query(q).unwrap().rows().next().map(|r| int(&r[0]));
            assert_eq!(got, Some(Some(0)), "{threads} threads: {q}");
        }
        let got: BTreeMap<Option<i64>, i64> = conn
            .query("MATCH (a:N)-[:E]->(b:N) RETURN a.g, count(*)")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), int(&r[1]).unwrap()))
            .collect();
        assert_eq!(got, by_g, "{threads} threads, by the source's g");
    }
}

/// A grouped count(*) by one node key is counted by offset while it can
/// be: keys far apart (a few groups over 70,000 offsets), NULL keys (from
/// an OPTIONAL MATCH) and keys of a second table turn it into numbered
/// groups midway, and the workers' counts merge by adding. COUNT and
/// EXISTS subqueries (`id(a), count(*)` per key) count the same way.
/// Against a reference at 1 and 2 threads.
#[test]
fn counts_by_offset_turn_into_groups_like_a_reference() {
    let mut rng = Lcg(41);
    let conn = common::nodes_with_weighted_rels();
    let n = 70_000usize;
    conn.query(&format!(
        "UNWIND range(0, {}) AS i CREATE (:N {{id: i, g: i % 7}})",
        n - 1
    ))
    .unwrap();
    conn.query("CREATE NODE TABLE M(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE F(FROM N TO M)").unwrap();
    conn.query("UNWIND range(0, 9) AS i CREATE (:M {id: i})")
        .unwrap();
    // Sources among the first 3,000 nodes; destinations mostly there too,
    // some near the table's end.
    let rels: Vec<(usize, usize, i64)> = (0..12_000)
        .map(|i| {
            let a = rng.below(3000) as usize;
            let b = match i % 50 {
                0 => n - 1 - rng.below(10) as usize,
                _ => rng.below(3000) as usize,
            };
            (a, b, 1)
        })
        .collect();
    common::copy_rels(&conn, "E", &rels);
    conn.query("MATCH (a:N), (m:M) WHERE a.id % 100 = m.id CREATE (a)-[:F]->(m)")
        .unwrap();
    let g = |i: usize| (i % 7) as i64;
    let mut by_dst: BTreeMap<i64, i64> = BTreeMap::new();
    let mut out_g2: BTreeMap<i64, i64> = BTreeMap::new();
    let mut out_g0: std::collections::BTreeSet<i64> = Default::default();
    for &(a, b, _) in &rels {
        *by_dst.entry(b as i64).or_default() += 1;
        if g(b) > 2 {
            *out_g2.entry(a as i64).or_default() += 1;
        }
        if g(b) == 0 {
            out_g0.insert(a as i64);
        }
    }
    let pairs = |q: &str| -> BTreeMap<Option<i64>, i64> {
        conn.query(q)
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), int(&r[1]).unwrap()))
            .collect()
    };
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let want: BTreeMap<Option<i64>, i64> = by_dst.iter().map(|(&b, &c)| (Some(b), c)).collect();
        let got = pairs("MATCH (a:N)-[:E]->(b:N) WITH b, count(*) AS c RETURN b.id, c");
        assert_eq!(got, want, "{threads} threads, by destination");
        // Two keys 70,000 offsets apart: too sparse to count by offset.
        let far: BTreeMap<Option<i64>, i64> = want
            .iter()
            .filter(|(b, _)| matches!(b, Some(5) | Some(69_999)))
            .map(|(&b, &c)| (b, c))
            .collect();
        assert_eq!(far.len(), 2, "the test's rels reach both ends");
        let got = pairs(
            "MATCH (a:N)-[:E]->(b:N) WHERE b.id IN [5, 69999] WITH b, count(*) AS c RETURN b.id, c",
        );
        assert_eq!(got, far, "{threads} threads, far-apart keys");
        // Sources without a rel group under NULL, in whichever batch.
        let mut by_src: BTreeMap<Option<i64>, i64> = BTreeMap::new();
        for &(a, _, _) in &rels {
            *by_src.entry(Some(a as i64)).or_default() += 1;
        }
        let without = (0..3000)
            .filter(|a| !by_src.contains_key(&Some(*a)))
            .count();
        if without > 0 {
            by_src.insert(None, without as i64);
        }
        let got = pairs(
            "MATCH (b:N) WHERE b.id < 3000 OPTIONAL MATCH (a:N)-[:E]->(b) \
             WITH a, count(*) AS c RETURN a.id, c",
        );
        let mut want_src: BTreeMap<Option<i64>, i64> = BTreeMap::new();
        let mut has_in = vec![false; 3000];
        for &(a, b, _) in &rels {
            if b < 3000 {
                has_in[b] = true;
                *want_src.entry(Some(a as i64)).or_default() += 1;
            }
        }
        let no_in = has_in.iter().filter(|h| !**h).count() as i64;
        if no_in > 0 {
            want_src.insert(None, no_in);
        }
        assert_eq!(got, want_src, "{threads} threads, NULL keys midway");
        // Destinations of two tables: N's first, then M's.
        let mut want_two: BTreeMap<Option<i64>, i64> = BTreeMap::new();
        for &(_, b, _) in &rels {
            *want_two.entry(Some(b as i64)).or_default() += 1;
        }
        for m in 0..10 {
            *want_two.entry(Some(1_000_000 + m)).or_default() += (n as i64 + 99 - m) / 100;
        }
        let got = pairs(
            "MATCH (a:N)-[]->(b) WITH b, count(*) AS c \
             RETURN CASE WHEN label(b) = 'M' THEN b.id + 1000000 ELSE b.id END, c",
        );
        assert_eq!(got, want_two, "{threads} threads, keys of two tables");
        // COUNT and EXISTS subqueries keyed by the outer node.
        let got = pairs(
            "MATCH (a:N) WHERE a.id < 3000 \
             RETURN a.id, COUNT { MATCH (a)-[:E]->(b:N) WHERE b.g > 2 } AS c",
        );
        let want: BTreeMap<Option<i64>, i64> = (0..3000)
            .map(|a| (Some(a), out_g2.get(&a).copied().unwrap_or(0)))
            .collect();
        assert_eq!(got, want, "{threads} threads, COUNT subquery");
        let got = conn
            .query(
                "MATCH (a:N) WHERE EXISTS { MATCH (a)-[:E]->(b:N) WHERE b.g = 0 } RETURN count(*)",
            )
            .unwrap()
            .rows()
            .map(|r| int(&r[0]).unwrap())
            .next();
        assert_eq!(got, Some(out_g0.len() as i64), "{threads} threads, EXISTS");
    }
}

/// Counting extends over a filtered scan of a copied CSR (no appended
/// rels): a batch's degrees are read at once, a run of selected nodes
/// decoding the offsets it spans (`CsrPins::run_of_group`), in one
/// direction (a 1-hop count) and in both (a 2-hop count fused into degree
/// products less the self loops). Selections from sparse to whole, at 1
/// and 2 threads, against a reference; skewed degrees, self loops and
/// nodes past the rels' last.
#[test]
fn filtered_counts_over_a_copied_csr_match_a_reference() {
    let mut rng = Lcg(91);
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, g INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N, w INT64)")
        .unwrap();
    let n = 9000usize;
    let g: Vec<Option<i64>> = (0..n).map(|_| Some(rng.below(100) as i64)).collect();
    common::create_nodes(&conn, &g);
    // Sources skewed to low ids, none past 8000; one rel in 30 a self loop.
    let rels: Vec<(usize, usize, i64)> = (0..40000)
        .map(|_| {
            let a = (rng.below(8000) * rng.below(8000) / 8000) as usize;
            let b = match rng.below(30) {
                0 => a,
                _ => rng.below(n as u64) as usize,
            };
            (a, b, 0)
        })
        .collect();
    common::copy_rels(&conn, "E", &rels);
    let (mut out, mut inc) = (vec![0i64; n], vec![0i64; n]);
    let mut loops = vec![0i64; n];
    for &(a, b, _) in &rels {
        out[a] += 1;
        inc[b] += 1;
        if a == b {
            loops[a] += 1;
        }
    }
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for below in [1, 3, 10, 50, 100] {
            let keep = |i: usize| g[i].is_some_and(|x| x < below);
            let one: i64 = (0..n).filter(|&i| keep(i)).map(|i| out[i]).sum();
            let two: i64 = (0..n)
                .filter(|&i| keep(i))
                .map(|i| inc[i] * out[i] - loops[i])
                .sum();
            for (q, want) in [
                (
                    format!("MATCH (a:N)-[:E]->(b:N) WHERE a.g < {below} RETURN count(*)"),
                    one,
                ),
                (
                    format!(
                        "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE b.g < {below} RETURN count(*)"
                    ),
                    two,
                ),
            ] {
                let got = conn.query(&q).unwrap().rows().next().unwrap()[0].clone();
                assert_eq!(got, Value::Int64(want), "{threads} threads: {q}");
            }
        }
    }
}

/// A counting extend over a batch handed on again (`MATCH
/// (a)-[]->(b)-[]->(c)-[]->(d) RETURN count(*)` started at `b`: `c`'s
/// batch repeats for every `a`) keeps the degrees it read for the batch
/// the first time; the nodes equal to a gate (`c = a` or `c = b`, where the
/// third rel may be the first or the second) are tested one by one every
/// time. Hubs, two-cycles, self loops and parallel rels, created rels
/// (appended runs) too, at 1 and 2 threads, against a reference that
/// counts walks of three distinct rels.
#[test]
fn repeated_batches_count_their_degrees_once_like_a_reference() {
    let mut rng = Lcg(57);
    let conn = common::nodes_with_weighted_rels();
    let n = 300usize;
    let g: Vec<Option<i64>> = (0..n).map(|_| Some(rng.below(10) as i64)).collect();
    common::create_nodes(&conn, &g);
    let mut rels: Vec<(usize, usize, i64)> = Vec::new();
    for _ in 0..2500 {
        let a = rng.below(n as u64) as usize;
        let b = match rng.below(10) {
            0 => a,      // self loop
            1 => a % 15, // into a hub
            _ => rng.below(n as u64) as usize,
        };
        rels.push((a, b, 0));
        if rng.below(6) == 0 {
            rels.push((b, a, 0)); // a two-cycle
        }
        if rng.below(9) == 0 {
            rels.push((a, b, 0)); // a parallel rel
        }
    }
    common::copy_rels(&conn, "E", &rels);
    // A few created afterwards: appended runs in their CSR ranges.
    for _ in 0..40 {
        let (a, b) = (rng.below(20) as usize, rng.below(n as u64) as usize);
        conn.query(&format!(
            "MATCH (x:N {{id: {a}}}), (y:N {{id: {b}}}) CREATE (x)-[:E {{w: 0}}]->(y)"
        ))
        .unwrap();
        rels.push((a, b, 0));
    }
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (r, &(a, b, _)) in rels.iter().enumerate() {
        out[a].push(r);
        into[b].push(r);
    }
    // Walks r1 r2 r3 of distinct rels with b = r1's end in the filter.
    let reference = |below: i64| -> i64 {
        let mut count = 0;
        for b in (0..n).filter(|&b| g[b].is_some_and(|x| x < below)) {
            for &r1 in &into[b] {
                for &r2 in out[b].iter().filter(|&&r2| r2 != r1) {
                    let c = rels[r2].1;
                    count += out[c].iter().filter(|&&r3| r3 != r1 && r3 != r2).count() as i64;
                }
            }
        }
        count
    };
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for below in [2, 5, 10] {
            let q = format!(
                "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N)-[:E]->(d:N) WHERE b.g < {below} RETURN count(*)"
            );
            let got = conn.query(&q).unwrap().rows().next().unwrap()[0].clone();
            assert_eq!(
                got,
                Value::Int64(reference(below)),
                "{threads} threads: {q}\n{}",
                explain(&conn, &q)
            );
        }
    }
}
