//! OPTIONAL MATCH of one rel from a bound node joined in the pipeline (an
//! optional extend with a padding filter) against a reference written in
//! the test and against the same clause planned as a part of its own
//! (the bound node written with its label, which keeps the general plan),
//! with 1 and 2 threads. A hub has more rels than a vector holds, so its
//! matches span several batches: a tuple is padded once, only when none of
//! its batches keeps a match.

use std::collections::BTreeMap;

use kith::{Config, Connection, Database, Value};

mod common;
use common::{check_groups, create_rels, explain as plan, Lcg};

struct Graph {
    k: Vec<i64>,
    /// (source, destination, w)
    rels: Vec<(usize, usize, i64)>,
}

fn setup(conn: &Connection) -> Graph {
    let mut rng = Lcg(41);
    conn.query("CREATE NODE TABLE N(id INT64, k INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N, w INT64)")
        .unwrap();
    let n = 2500usize;
    let k: Vec<i64> = (0..n).map(|_| rng.below(100) as i64).collect();
    let nodes: Vec<String> = (0..n)
        .map(|i| format!("{{id: {i}, k: {}}}", k[i]))
        .collect();
    conn.query(&format!(
        "UNWIND [{}] AS r CREATE (:N {{id: r.id, k: r.k}})",
        nodes.join(", ")
    ))
    .unwrap();
    // Skewed degrees (a third of the nodes have no out-rels), and node 0 a
    // hub of 5,000 rels (more than two vectors' worth).
    let mut rels: Vec<(usize, usize, i64)> = (0..7000)
        .map(|_| {
            let a = (rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize;
            (a, rng.below(n as u64) as usize, rng.below(1000) as i64)
        })
        .filter(|&(a, _, _)| a % 3 != 1 && a != 0)
        .collect();
    // The hub's rels have weights of their own: 10,000 + i.
    rels.extend((0..5000).map(|i| (0, rng.below(n as u64) as usize, 10_000 + i)));
    create_rels(conn, "N", "E", &rels);
    Graph { k, rels }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int64(x) => Some(*x),
        Value::Null => None,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// One source's (rows, count(b), sum(b.k) (0 over no value), count(r), min(r.w)).
type Row = (i64, i64, Option<i64>, i64, Option<i64>);
type Groups = BTreeMap<i64, Row>;

fn groups(conn: &Connection, q: &str) -> Groups {
    conn.query(q)
        .unwrap()
        .rows()
        .map(|r| {
            let v = |i: usize| int(&r[i]);
            (
                v(0).unwrap(),
                (v(1).unwrap(), v(2).unwrap(), v(3), v(4).unwrap(), v(5)),
            )
        })
        .collect()
}

/// The reference: every node's matches along `forward` (or backward) rels
/// that `keep(a, b, w)` accepts; a node without any gets one NULL row.
fn reference(g: &Graph, forward: bool, keep: impl Fn(usize, usize, i64) -> bool) -> Groups {
    let mut m: BTreeMap<i64, Vec<(usize, i64)>> =
        (0..g.k.len()).map(|a| (a as i64, Vec::new())).collect();
    for &(s, d, w) in &g.rels {
        let (a, b) = if forward { (s, d) } else { (d, s) };
        if keep(a, b, w) {
            m.get_mut(&(a as i64)).unwrap().push((b, w));
        }
    }
    m.into_iter()
        .map(|(a, matches)| {
            let row = if matches.is_empty() {
                (1, 0, Some(0), 0, None)
            } else {
                let n = matches.len() as i64;
                let sum = matches.iter().map(|&(b, _)| g.k[b]).sum();
                let min = matches.iter().map(|&(_, w)| w).min();
                (n, n, Some(sum), n, min)
            };
            (a, row)
        })
        .collect()
}

#[test]
fn optional_extends_match_a_reference_and_the_general_plan() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    let g = setup(&conn);
    let k = g.k.clone();
    type Keep = Box<dyn Fn(usize, usize, i64) -> bool>;
    // (arrow, WHERE, the reference's test)
    let cases: Vec<(&str, &str, Keep)> = vec![
        ("->", "", Box::new(|_, _, _| true)),
        ("->", "WHERE b.k > 60 AND r.w < 500", {
            let k = k.clone();
            Box::new(move |_, b, w| k[b] > 60 && w < 500)
        }),
        // Selective: the hub keeps a few matches scattered over its batches,
        // or none at all.
        ("->", "WHERE b.k = 7", {
            let k = k.clone();
            Box::new(move |_, b, _| k[b] == 7)
        }),
        (
            "->",
            "WHERE r.w = 999 OR b.k > 1000",
            Box::new(|_, _, w| w == 999),
        ),
        ("->", "WHERE r.w > 14000", Box::new(|_, _, w| w > 14_000)),
        ("<-", "WHERE b.k < a.k", {
            let k = k.clone();
            Box::new(move |a, b, _| k[b] < k[a])
        }),
        // On the bound node only: a failing tuple is padded, not dropped.
        ("->", "WHERE a.k % 2 = 0", {
            let k = k.clone();
            Box::new(move |a, _, _| k[a] % 2 == 0)
        }),
        ("->", "WHERE b IS NULL", Box::new(|_, _, _| false)),
        ("<-", "WHERE b.k > 30", {
            let k = k.clone();
            Box::new(move |_, b, _| k[b] > 30)
        }),
    ];
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for (arrow, where_, keep) in &cases {
            let (l, r) = match *arrow {
                "->" => ("-", "->"),
                _ => ("<-", "-"),
            };
            let query = |bound: &str| {
                format!(
                    "MATCH (a:N) OPTIONAL MATCH ({bound}){l}[r:E]{r}(b:N) {where_} \
                     RETURN a.id, count(*), count(b), sum(b.k), count(r), min(r.w)"
                )
            };
            let fused = query("a");
            let general = query("a:N");
            let plan = |q: &str| plan(&conn, q);
            assert!(plan(&fused).contains("OptionalExtend"), "{}", plan(&fused));
            assert!(plan(&general).contains("LeftOuter"), "{}", plan(&general));
            let want = reference(&g, *arrow == "->", keep);
            check_groups(
                &format!("{threads} threads: {fused}"),
                &want,
                &groups(&conn, &fused),
                &groups(&conn, &general),
            );
            // Totals: nothing after the extend reads `a` (unless the WHERE
            // does), so each batch packs the rels of many sources and pads
            // a source left without a match in place.
            let totals = format!(
                "MATCH (a:N) OPTIONAL MATCH (a){l}[r:E]{r}(b:N) {where_} \
                 RETURN count(*), count(b), sum(b.k), count(r), min(r.w)"
            );
            let row: Vec<Option<i64>> = conn
                .query(&totals)
                .unwrap()
                .rows()
                .next()
                .unwrap()
                .iter()
                .map(int)
                .collect();
            let sum = |f: fn(&Row) -> i64| want.values().map(f).sum::<i64>();
            let expected = vec![
                Some(sum(|w| w.0)),
                Some(sum(|w| w.1)),
                Some(sum(|w| w.2.unwrap_or(0))),
                Some(sum(|w| w.3)),
                want.values().filter_map(|w| w.4).min(),
            ];
            assert_eq!(row, expected, "{threads} threads: {totals}");
        }
        // One match of the hub, wherever its batch: never padded as well.
        for w in [10_000, 10_001, 11_000, 12_047, 12_048, 13_500, 14_999] {
            let got = conn
                .query(&format!(
                    "MATCH (a:N {{id: 0}}) OPTIONAL MATCH (a)-[r:E]->(b:N) WHERE r.w = {w} \
                     RETURN count(*), count(b)"
                ))
                .unwrap();
            let row = got.rows().next().unwrap().to_vec();
            assert_eq!(
                row,
                [Value::Int64(1), Value::Int64(1)],
                "{threads} threads, w = {w}"
            );
        }
        // A later MATCH drops the padded rows (a NULL node extends nothing).
        let outdeg = |x: usize| g.rels.iter().filter(|r| r.0 == x).count() as i64;
        let want: i64 = g.rels.iter().map(|r| outdeg(r.1)).sum();
        let got = conn
            .query(
                "MATCH (a:N) OPTIONAL MATCH (a)-[:E]->(b:N) WITH a, b \
                 MATCH (b)-[:E]->(c:N) RETURN count(*)",
            )
            .unwrap();
        assert_eq!(got.rows().next().unwrap()[0], Value::Int64(want));
        // A WITH's WHERE over the optional node filters the padded rows
        // after the extend (it failed with "could not be placed").
        let q = "MATCH (a:N) OPTIONAL MATCH (a)-[:E]->(b:N) WITH a, b WHERE b IS NULL \
                 RETURN count(*)";
        assert!(
            plan(&conn, q).contains("OptionalExtend"),
            "{}",
            plan(&conn, q)
        );
        let sources: std::collections::HashSet<usize> = g.rels.iter().map(|r| r.0).collect();
        let want = (g.k.len() - sources.len()) as i64;
        assert_eq!(
            conn.query(q).unwrap().rows().next().unwrap()[0],
            Value::Int64(want)
        );
        let q = "MATCH (a:N) OPTIONAL MATCH (a)-[:E]->(b:N) WITH a, b WHERE b.k > a.k \
                 RETURN count(*)";
        let want = g.rels.iter().filter(|r| g.k[r.1] > g.k[r.0]).count() as i64;
        assert_eq!(
            conn.query(q).unwrap().rows().next().unwrap()[0],
            Value::Int64(want)
        );
        // Returned rows: each source's neighbours, or one NULL.
        let mut want: BTreeMap<i64, Vec<Option<i64>>> =
            (0..g.k.len() as i64).map(|a| (a, Vec::new())).collect();
        for &(s, d, _) in &g.rels {
            want.get_mut(&(s as i64)).unwrap().push(Some(d as i64));
        }
        for v in want.values_mut() {
            if v.is_empty() {
                v.push(None);
            }
            v.sort();
        }
        let mut got: BTreeMap<i64, Vec<Option<i64>>> = BTreeMap::new();
        for row in conn
            .query("MATCH (a:N) OPTIONAL MATCH (a)-[:E]->(b:N) RETURN a.id, b.id")
            .unwrap()
            .rows()
        {
            got.entry(int(&row[0]).unwrap())
                .or_default()
                .push(int(&row[1]));
        }
        for v in got.values_mut() {
            v.sort();
        }
        assert!(got == want, "{threads} threads: returned rows");
    }
}

/// OPTIONAL MATCH of a two-rel chain from a bound node (`OptionalChain`:
/// extends and filters in the pipeline, an input tuple without a match
/// through all of them padded once) against a reference and the general
/// plan. The hub's 5,000 rels span several batches of the first extend.
#[test]
fn optional_chains_match_a_reference_and_the_general_plan() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    let g = setup(&conn);
    let k = &g.k;
    type Keep<'a> = Box<dyn Fn(usize, usize, usize, i64) -> bool + 'a>;
    // (WHERE, the reference's test of (a, b, c, s.w))
    let cases: Vec<(&str, Keep)> = vec![
        ("", Box::new(|_, _, _, _| true)),
        ("WHERE c.k > 90", Box::new(|_, _, c, _| k[c] > 90)),
        (
            "WHERE b.k < 20 AND s.w > 500",
            Box::new(|_, b, _, w| k[b] < 20 && w > 500),
        ),
        ("WHERE c.k = a.k", Box::new(|a, _, c, _| k[c] == k[a])),
        // On the bound node only: a failing tuple is padded, not dropped.
        ("WHERE a.k % 3 = 0", Box::new(|a, _, _, _| k[a] % 3 == 0)),
        ("WHERE s.w = 10001", Box::new(|_, _, _, w| w == 10_001)),
    ];
    let out: Vec<Vec<(usize, i64, i64)>> = {
        let mut out = vec![Vec::new(); k.len()];
        for (i, &(s, d, w)) in g.rels.iter().enumerate() {
            out[s].push((d, w, i as i64));
        }
        out
    };
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for (where_, keep) in &cases {
            let query = |bound: &str| {
                format!(
                    "MATCH (a:N) OPTIONAL MATCH ({bound})-[r:E]->(b:N)-[s:E]->(c:N) {where_} \
                     RETURN a.id, count(*), count(c), sum(c.k), count(s), min(s.w)"
                )
            };
            let (chain, general) = (query("a"), query("a:N"));
            assert!(
                plan(&conn, &chain).contains("OptionalChain"),
                "{}",
                plan(&conn, &chain)
            );
            assert!(plan(&conn, &general).contains("LeftOuter"));
            let want: Groups = (0..k.len())
                .map(|a| {
                    let mut m: Vec<(usize, i64)> = Vec::new();
                    for &(b, _, ri) in &out[a] {
                        for &(c, w, si) in &out[b] {
                            // Relationship isomorphism within the clause.
                            if si != ri && keep(a, b, c, w) {
                                m.push((c, w));
                            }
                        }
                    }
                    let row = if m.is_empty() {
                        (1, 0, Some(0), 0, None)
                    } else {
                        let n = m.len() as i64;
                        let sum = m.iter().map(|&(c, _)| k[c]).sum();
                        (n, n, Some(sum), n, m.iter().map(|&(_, w)| w).min())
                    };
                    (a as i64, row)
                })
                .collect();
            check_groups(
                &format!("{threads} threads: {chain}"),
                &want,
                &groups(&conn, &chain),
                &groups(&conn, &general),
            );
        }
        // A later clause's filter over the chain's variables, and rows.
        let q = "MATCH (a:N) WHERE a.id < 300 OPTIONAL MATCH (a)-[:E]->(b:N)-[:E]->(c:N) \
                 WITH a, c WHERE c IS NULL RETURN count(*)";
        let want = (0..300)
            .filter(|&a| {
                out[a]
                    .iter()
                    .all(|&(b, _, ri)| out[b].iter().all(|&(_, _, si)| si == ri))
            })
            .count() as i64;
        assert_eq!(
            conn.query(q).unwrap().rows().next().unwrap()[0],
            Value::Int64(want),
            "{q}"
        );
    }
}
