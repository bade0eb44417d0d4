//! OPTIONAL MATCH of a pattern sharing no variable with the part, joined in
//! the part's pipeline by a left outer hash join (or a left outer cross
//! product when no equality links the two), against a reference written in
//! the test and against the same clause planned as a part of its own over
//! numbered rows (an UNWIND after it keeps the general plan), with 1 and 2
//! threads. Some keys have more build rows than a vector holds, so a
//! tuple's matches span several batches: a tuple is padded once, only when
//! none of its batches keeps a match.

use std::collections::BTreeMap;

use kith::{Config, Connection, Database, Value};

mod common;
use common::{check_groups, create_rels, explain as plan, profile, Lcg};

struct Graph {
    /// `N.k` by id.
    n: Vec<i64>,
    /// `M.k` by id.
    m: Vec<i64>,
    /// `F` rels between `M` nodes: (source, destination, w).
    f: Vec<(usize, usize, i64)>,
}

fn setup(conn: &Connection) -> Graph {
    let mut rng = Lcg(7);
    for ddl in [
        "CREATE NODE TABLE N(id INT64, k INT64, PRIMARY KEY(id))",
        "CREATE NODE TABLE M(id INT64, k INT64, PRIMARY KEY(id))",
        "CREATE REL TABLE F(FROM M TO M, w INT64)",
    ] {
        conn.query(ddl).unwrap();
    }
    // N's keys spread over 0..120; M's mostly over 0..100, with key 5 held
    // by 3,000 nodes (more than a vector of build rows).
    let n: Vec<i64> = (0..1500).map(|_| rng.below(120) as i64).collect();
    let m: Vec<i64> = (0..6000)
        .map(|i| if i % 2 == 0 { 5 } else { rng.below(100) as i64 })
        .collect();
    for (table, keys) in [("N", &n), ("M", &m)] {
        for (c, chunk) in keys.chunks(2000).enumerate() {
            let items: Vec<String> = chunk
                .iter()
                .enumerate()
                .map(|(i, k)| format!("[{}, {k}]", c * 2000 + i))
                .collect();
            conn.query(&format!(
                "UNWIND [{}] AS r CREATE (:{table} {{id: r[0], k: r[1]}})",
                items.join(", ")
            ))
            .unwrap();
        }
    }
    let f: Vec<(usize, usize, i64)> = (0..4000)
        .map(|_| {
            (
                rng.below(m.len() as u64) as usize,
                rng.below(m.len() as u64) as usize,
                rng.below(1000) as i64,
            )
        })
        .collect();
    create_rels(conn, "M", "F", &f);
    Graph { n, m, f }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int64(x) => Some(*x),
        Value::Null => None,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// Per `a.id`: (rows, count(b), sum(b.id) (0 over no value), min(x) or NULL).
type Row = (i64, i64, Option<i64>, Option<i64>);
type Groups = BTreeMap<i64, Row>;

fn groups(conn: &Connection, q: &str) -> Groups {
    conn.query(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows()
        .map(|r| {
            let v = |i: usize| int(&r[i]);
            (v(0).unwrap(), (v(1).unwrap(), v(2).unwrap(), v(3), v(4)))
        })
        .collect()
}

/// The reference: for each `a`, the (b, x) matches `matches(a)` yields; an
/// `a` without any gets one NULL row.
fn reference(g: &Graph, matches: impl Fn(usize) -> Vec<(usize, i64)>) -> Groups {
    (0..g.n.len())
        .map(|a| {
            let found = matches(a);
            let row = if found.is_empty() {
                (1, 0, Some(0), None)
            } else {
                let c = found.len() as i64;
                let sum = found.iter().map(|&(b, _)| b as i64).sum();
                (c, c, Some(sum), found.iter().map(|&(_, x)| x).min())
            };
            (a as i64, row)
        })
        .collect()
}

#[test]
fn optional_joins_match_a_reference_and_the_general_plan() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    let g = setup(&conn);
    type Matches<'a> = Box<dyn Fn(usize) -> Vec<(usize, i64)> + 'a>;
    let nodes = |keep: Box<dyn Fn(usize, usize) -> bool>| -> Matches {
        let g = &g;
        Box::new(move |a| {
            (0..g.m.len())
                .filter(|&b| keep(a, b))
                .map(|b| (b, g.m[b]))
                .collect()
        })
    };
    let (n, m) = (&g.n, &g.m);
    // (pattern, WHERE, whether it hashes, what x is, the reference)
    let cases: Vec<(&str, &str, bool, &str, Matches)> = vec![
        (
            "(b:M)",
            "WHERE b.k = a.k",
            true,
            "b.k",
            nodes(Box::new(|a, b| m[b] == n[a])),
        ),
        // Pushed into the build side, and on the part only.
        (
            "(b:M)",
            "WHERE b.k = a.k AND b.id % 3 = 0 AND a.id % 2 = 0",
            true,
            "b.k",
            nodes(Box::new(|a, b| m[b] == n[a] && b % 3 == 0 && a % 2 == 0)),
        ),
        (
            "(b:M {k: a.k})",
            "WHERE b.id < 4000",
            true,
            "b.k",
            nodes(Box::new(|a, b| m[b] == n[a] && b < 4000)),
        ),
        // No equality: a left outer cross product, the predicate pads.
        (
            "(b:M)",
            "WHERE b.k > a.k + 90 AND b.id % 7 = 1",
            false,
            "b.k",
            nodes(Box::new(|a, b| m[b] > n[a] + 90 && b % 7 == 1)),
        ),
        // Unique build keys (node ids): probed a batch at a time.
        (
            "(b:M)",
            "WHERE b.id = a.id * 3 AND b.k > 20",
            true,
            "b.k",
            nodes(Box::new(|a, b| b == a * 3 && m[b] > 20)),
        ),
        // Unique keys with a predicate over both sides left to pad.
        (
            "(b:M)",
            "WHERE b.id = a.id * 3 AND b.k > a.k",
            true,
            "b.k",
            nodes(Box::new(|a, b| b == a * 3 && m[b] > n[a])),
        ),
        // A key no build row has: every row padded.
        (
            "(b:M)",
            "WHERE b.k = a.k + 1000",
            true,
            "b.k",
            nodes(Box::new(|_, _| false)),
        ),
        // A pattern with a rel as the build side; x is the rel's weight.
        (
            "(b:M)-[r:F]->(c:M)",
            "WHERE c.k = a.k AND r.w > 300",
            true,
            "r.w",
            Box::new(|a| {
                g.f.iter()
                    .filter(|&&(_, c, w)| m[c] == n[a] && w > 300)
                    .map(|&(b, _, w)| (b, w))
                    .collect()
            }),
        ),
        // Matches that fail a predicate over both sides after the join.
        (
            "(b:M)",
            "WHERE b.k = a.k AND b.id % 100 < a.id % 10",
            true,
            "b.k",
            nodes(Box::new(|a, b| m[b] == n[a] && b % 100 < a % 10)),
        ),
    ];
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for (pattern, where_, hashes, x, matches) in &cases {
            let joined = format!(
                "MATCH (a:N) OPTIONAL MATCH {pattern} {where_} \
                 RETURN a.id, count(*), count(b), sum(b.id), min({x})"
            );
            let general = format!(
                "MATCH (a:N) OPTIONAL MATCH {pattern} {where_} UNWIND [1] AS one \
                 RETURN a.id, count(*), count(b), sum(b.id), min({x})"
            );
            let p = plan(&conn, &joined);
            let op = if *hashes {
                "HashJoin (left outer)"
            } else {
                "CrossProduct (left outer)"
            };
            assert!(p.contains(op) && !p.contains("LeftOuter"), "{p}");
            assert!(plan(&conn, &general).contains("LeftOuter"));
            let profile = profile(&conn, &joined);
            // Unique build keys (node ids) probe by batch unless a padding
            // filter has predicates left to apply per tuple.
            let by_batch = where_.contains("b.id = a.id * 3") && !where_.contains("a.k");
            assert_eq!(
                profile.contains("probed by batch"),
                by_batch,
                "{joined}: {profile}"
            );
            let want = reference(&g, matches);
            check_groups(
                &format!("{threads} threads: {joined}"),
                &want,
                &groups(&conn, &joined),
                &groups(&conn, &general),
            );
        }
        // Rows, not groups: each N node with its key's M nodes, or NULL.
        let rows = |q: &str| -> Vec<(i64, Option<i64>)> {
            conn.query(q)
                .unwrap()
                .rows()
                .map(|r| (int(&r[0]).unwrap(), int(&r[1])))
                .collect()
        };
        let q = "MATCH (a:N) WHERE a.id < 200 OPTIONAL MATCH (b:M) WHERE b.k = a.k AND b.k <> 5 \
                 RETURN a.id, b.id ORDER BY a.id, b.id";
        let mut want = Vec::new();
        for (a, ka) in n.iter().enumerate().take(200) {
            let before = want.len();
            for (b, kb) in m.iter().enumerate() {
                if kb == ka && *kb != 5 {
                    want.push((a as i64, Some(b as i64)));
                }
            }
            if want.len() == before {
                want.push((a as i64, None));
            }
        }
        assert_eq!(rows(q), want, "{threads} threads");
        // A later clause filters the padded rows after the join.
        let got = conn
            .query(
                "MATCH (a:N) OPTIONAL MATCH (b:M) WHERE b.k = a.k \
                 WITH a, b WHERE b IS NULL RETURN count(*)",
            )
            .unwrap();
        let unmatched = (0..n.len()).filter(|&a| !m.contains(&n[a])).count() as i64;
        assert_eq!(got.rows().next().unwrap()[0], Value::Int64(unmatched));
    }
}

#[test]
fn an_empty_build_side_pads_every_row() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE A(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE NODE TABLE B(id INT64, x INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("UNWIND range(1, 3) AS i CREATE (:A {id: i})")
        .unwrap();
    for q in [
        "MATCH (a:A) OPTIONAL MATCH (b:B) RETURN a.id, b.x ORDER BY a.id",
        "MATCH (a:A) OPTIONAL MATCH (b:B) WHERE b.x = a.id RETURN a.id, b.x ORDER BY a.id",
    ] {
        assert!(
            plan(&conn, q).contains("(left outer)"),
            "{}",
            plan(&conn, q)
        );
        let got: Vec<Vec<Value>> = conn.query(q).unwrap().rows().map(|r| r.to_vec()).collect();
        let want: Vec<Vec<Value>> = (1..=3)
            .map(|i| vec![Value::Int64(i), Value::Null])
            .collect();
        assert_eq!(got, want, "{q}");
    }
    // A B node matches every A row without a condition (a cross product).
    conn.query("CREATE (:B {id: 1, x: 2})").unwrap();
    let got: Vec<Vec<Value>> = conn
        .query("MATCH (a:A) OPTIONAL MATCH (b:B) WHERE b.x = a.id RETURN a.id, b.id ORDER BY a.id")
        .unwrap()
        .rows()
        .map(|r| r.to_vec())
        .collect();
    assert_eq!(
        got,
        vec![
            vec![Value::Int64(1), Value::Null],
            vec![Value::Int64(2), Value::Int64(1)],
            vec![Value::Int64(3), Value::Null],
        ]
    );
}

/// Inner hash joins on unique build keys (one row per key) probe a batch at
/// a time and deselect the positions without a row; checked against a
/// reference. (`b.id + 0`: a bare key equality would be a key lookup.)
#[test]
fn inner_joins_on_unique_keys_match_a_reference() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    let g = setup(&conn);
    let (n, m) = (&g.n, &g.m);
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for (q, pairs) in [
            (
                "MATCH (a:N), (b:M) WHERE b.id + 0 = a.id * 3 AND b.k > 20 \
                 RETURN count(*), sum(a.k), sum(b.k), min(b.id)",
                (0..n.len())
                    .filter(|&a| a * 3 < m.len() && m[a * 3] > 20)
                    .map(|a| (a, a * 3))
                    .collect::<Vec<_>>(),
            ),
            // Selective N side: M built, every N position probed.
            (
                "MATCH (a:N), (b:M) WHERE a.k < 3 AND a.id + 0 = b.id * 2 + 1 \
                 RETURN count(*), sum(a.k), sum(b.k), min(b.id)",
                (0..m.len())
                    .filter(|&b| b * 2 + 1 < n.len() && n[b * 2 + 1] < 3)
                    .map(|b| (b * 2 + 1, b))
                    .collect(),
            ),
        ] {
            assert!(plan(&conn, q).contains("HashJoin"), "{}", plan(&conn, q));
            let profile = profile(&conn, q);
            assert!(
                profile.contains("HashJoin (unique keys, probed by batch)"),
                "{profile}"
            );
            let got: Vec<Option<i64>> = conn
                .query(q)
                .unwrap()
                .rows()
                .next()
                .unwrap()
                .iter()
                .map(int)
                .collect();
            let want = vec![
                Some(pairs.len() as i64),
                Some(pairs.iter().map(|&(a, _)| n[a]).sum()),
                Some(pairs.iter().map(|&(_, b)| m[b]).sum()),
                pairs.iter().map(|&(_, b)| b as i64).min(),
            ];
            assert_eq!(got, want, "{threads} threads: {q}");
        }
    }
}
