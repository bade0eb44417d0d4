//! Fixed-length patterns checked on random multigraphs (self loops, parallel
//! rels, two rel tables) against a brute-force enumeration of every way to
//! map the pattern's rels to distinct rels of the graph, with 1 and 2
//! threads: cyclic ones (triangles, 4-cycles, cliques), which the planner
//! binds with intersections of neighbour lists, also against the plan
//! without intersections (a rel whose property is read is never
//! intersected); chains, whose counts the last extend sums without
//! reading neighbours, also grouped by their first node.

use std::collections::HashMap;
use std::fmt::Write as _;

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

#[derive(Clone, Copy, PartialEq)]
enum Dir {
    Right,
    Left,
    Both,
}

/// A rel of a pattern: (left variable, right variable, table, direction).
type PatternRel = (usize, usize, usize, Dir);

/// A graph rel: (table, source, destination).
type GraphRel = (usize, usize, usize);

const TABLES: [&str; 2] = ["E", "F"];

/// Every match of `pattern` (distinct graph rels for distinct pattern rels),
/// as the tuple of its variables' nodes, with its multiplicity.
fn reference(pattern: &[PatternRel], vars: usize, rels: &[GraphRel]) -> HashMap<Vec<usize>, u64> {
    fn go(
        pattern: &[PatternRel],
        rels: &[GraphRel],
        k: usize,
        nodes: &mut Vec<Option<usize>>,
        used: &mut Vec<bool>,
        out: &mut HashMap<Vec<usize>, u64>,
    ) {
        let Some(&(l, r, table, dir)) = pattern.get(k) else {
            let tuple = nodes.iter().map(|n| n.unwrap_or(usize::MAX)).collect();
            *out.entry(tuple).or_insert(0) += 1;
            return;
        };
        for (i, &(t, src, dst)) in rels.iter().enumerate() {
            if t != table || used[i] {
                continue;
            }
            let mut ways = Vec::new();
            if dir != Dir::Left {
                ways.push((src, dst));
            }
            if dir != Dir::Right && !(dir == Dir::Both && src == dst) {
                ways.push((dst, src));
            }
            for (x, y) in ways {
                let (ol, or) = (nodes[l], nodes[r]);
                if ol.is_some_and(|n| n != x) || or.is_some_and(|n| n != y) {
                    continue;
                }
                if l == r && x != y {
                    continue;
                }
                nodes[l] = Some(x);
                nodes[r] = Some(y);
                used[i] = true;
                go(pattern, rels, k + 1, nodes, used, out);
                used[i] = false;
                nodes[l] = ol;
                nodes[r] = or;
            }
        }
    }
    let mut out = HashMap::new();
    go(
        pattern,
        rels,
        0,
        &mut vec![None; vars],
        &mut vec![false; rels.len()],
        &mut out,
    );
    out
}

/// The pattern in Cypher: comma-separated rels `(v0)-[r0:E]->(v1), ...`
/// (the first mention of a variable carries its label).
fn cypher(pattern: &[PatternRel], with_props: bool) -> String {
    let mut seen = Vec::new();
    let mut node = |v: usize| {
        if seen.contains(&v) {
            format!("(v{v})")
        } else {
            seen.push(v);
            format!("(v{v}:N)")
        }
    };
    let parts: Vec<String> = pattern
        .iter()
        .enumerate()
        .map(|(i, &(l, r, t, d))| {
            let (a, b) = (node(l), node(r));
            let rel = format!("[r{i}:{}]", TABLES[t]);
            match d {
                Dir::Right => format!("{a}-{rel}->{b}"),
                Dir::Left => format!("{a}<-{rel}-{b}"),
                Dir::Both => format!("{a}-{rel}-{b}"),
            }
        })
        .collect();
    let mut q = format!("MATCH {}", parts.join(", "));
    if with_props {
        let conds: Vec<String> = (0..pattern.len()).map(|i| format!("r{i}.k >= 0")).collect();
        write!(q, " WHERE {}", conds.join(" AND ")).unwrap();
    }
    q
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// The rows of `q` (integers) by multiplicity.
fn counted_rows(conn: &Connection, q: &str) -> HashMap<Vec<i64>, u64> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut out = HashMap::new();
    for row in r.rows() {
        *out.entry(row.iter().map(int).collect()).or_insert(0) += 1;
    }
    out
}

fn sorted_text(conn: &Connection, q: &str) -> Vec<String> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut rows: Vec<String> = r.rows().map(|row| format!("{row:?}")).collect();
    rows.sort();
    rows
}

fn patterns() -> Vec<(&'static str, usize, Vec<PatternRel>)> {
    use Dir::*;
    vec![
        (
            "triangle",
            3,
            vec![(0, 1, 0, Right), (1, 2, 0, Right), (2, 0, 0, Right)],
        ),
        (
            "triangle, two tables",
            3,
            vec![(0, 1, 0, Right), (1, 2, 1, Right), (2, 0, 0, Right)],
        ),
        (
            "triangle, mixed directions",
            3,
            vec![(0, 1, 0, Right), (1, 2, 0, Left), (0, 2, 0, Right)],
        ),
        (
            "undirected triangle",
            3,
            vec![(0, 1, 0, Both), (1, 2, 0, Both), (2, 0, 0, Both)],
        ),
        (
            "4-cycle",
            4,
            vec![
                (0, 1, 0, Right),
                (1, 2, 0, Right),
                (2, 3, 0, Right),
                (3, 0, 0, Right),
            ],
        ),
        (
            "4-clique",
            4,
            vec![
                (0, 1, 0, Right),
                (1, 2, 0, Right),
                (2, 3, 0, Right),
                (0, 2, 0, Right),
                (0, 3, 0, Right),
                (1, 3, 0, Right),
            ],
        ),
        (
            "two parallel pattern rels",
            3,
            vec![
                (0, 1, 0, Right),
                (0, 2, 0, Right),
                (1, 2, 0, Right),
                (1, 2, 0, Right),
            ],
        ),
        ("2-chain", 3, vec![(0, 1, 0, Right), (1, 2, 0, Right)]),
        // Stars around v1 (the start: most rels), whose counts multiply its
        // two degrees (less the pairs of one rel: self loops, every rel).
        ("out-star", 3, vec![(0, 1, 0, Left), (1, 2, 0, Right)]),
        ("in-star", 3, vec![(0, 1, 0, Right), (1, 2, 0, Left)]),
        (
            "2-chain, two tables",
            3,
            vec![(0, 1, 0, Right), (1, 2, 1, Right)],
        ),
        (
            "undirected 2-chain",
            3,
            vec![(0, 1, 0, Both), (1, 2, 0, Both)],
        ),
        (
            "3-chain",
            4,
            vec![(0, 1, 0, Right), (1, 2, 0, Right), (2, 3, 0, Right)],
        ),
        (
            "4-chain, both directions and tables",
            5,
            vec![
                (0, 1, 0, Right),
                (1, 2, 1, Left),
                (2, 3, 0, Both),
                (3, 4, 0, Right),
            ],
        ),
        (
            "diamond with a chord",
            4,
            vec![
                (0, 1, 0, Right),
                (0, 2, 1, Right),
                (1, 3, 0, Right),
                (2, 3, 1, Left),
                (1, 2, 0, Both),
            ],
        ),
    ]
}

#[test]
fn patterns_match_brute_force() {
    for threads in [1usize, 2] {
        let config = Config {
            max_threads: Some(threads),
            ..Config::default()
        };
        for seed in 1..=12u64 {
            let mut rng = Lcg(seed * 104_729 + threads as u64);
            let n = 2 + rng.below(6) as usize;
            let m = rng.below(22) as usize;
            let rels: Vec<GraphRel> = (0..m)
                .map(|_| {
                    (
                        rng.below(2) as usize,
                        rng.below(n as u64) as usize,
                        rng.below(n as u64) as usize,
                    )
                })
                .collect();
            let db = Database::open(":memory:", config.clone()).unwrap();
            let conn = Connection::new(&db);
            conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
                .unwrap();
            for t in TABLES {
                conn.query(&format!("CREATE REL TABLE {t}(FROM N TO N, k INT64)"))
                    .unwrap();
            }
            conn.query(&format!(
                "UNWIND range(0, {}) AS i CREATE (:N {{id: i}})",
                n - 1
            ))
            .unwrap();
            // Doomed rels (k = -1) among the real ones, deleted one per
            // statement at the end; a CHECKPOINT halfway writes the regions
            // whole, so tombstones land in main ranges and among appended
            // rels.
            let create = |t: usize, a: usize, b: usize, k: i64| {
                conn.query(&format!(
                    "MATCH (a:N {{id: {a}}}), (b:N {{id: {b}}}) CREATE (a)-[:{} {{k: {k}}}]->(b)",
                    TABLES[t]
                ))
                .unwrap();
            };
            let mut doomed = Vec::new();
            for (i, &(t, a, b)) in rels.iter().enumerate() {
                create(t, a, b, i as i64);
                if i % 3 == 0 {
                    let d = (t, (a + i) % n, (b + 1) % n);
                    create(d.0, d.1, d.2, -1);
                    doomed.push(d);
                }
                if i == m / 2 {
                    conn.query("CHECKPOINT").unwrap();
                }
            }
            for (t, a, b) in doomed {
                conn.query(&format!(
                    "MATCH (a:N {{id: {a}}})-[r:{}]->(b:N {{id: {b}}}) WHERE r.k = -1 WITH r LIMIT 1 DELETE r",
                    TABLES[t]
                ))
                .unwrap();
            }
            let left = "MATCH ()-[r]->() RETURN count(*), sum(r.k)";
            let want = (m as i64, (0..m as i64).sum::<i64>());
            assert_eq!(
                counted_rows(&conn, left),
                HashMap::from([(vec![want.0, want.1], 1)]),
                "seed {seed}: rels after the DELETEs"
            );
            for (name, vars, pattern) in patterns() {
                let ids: Vec<String> = (0..vars).map(|v| format!("v{v}.id")).collect();
                let q = format!("{} RETURN {}", cypher(&pattern, false), ids.join(", "));
                let got = counted_rows(&conn, &q);
                let want: HashMap<Vec<i64>, u64> = reference(&pattern, vars, &rels)
                    .into_iter()
                    .map(|(t, c)| (t.into_iter().map(|x| x as i64).collect(), c))
                    .collect();
                assert_eq!(
                    got, want,
                    "{name}, seed {seed}, {threads} threads, graph {rels:?}: {q}"
                );
                // The count and the rel ids agree with the plan that reads a
                // property of every rel (extends and filters only).
                let total: u64 = want.values().sum();
                let q = format!("{} RETURN count(*)", cypher(&pattern, false));
                assert_eq!(
                    counted_rows(&conn, &q),
                    HashMap::from([(vec![total as i64], 1)]),
                    "{name}, seed {seed}: {q}"
                );
                // The same count from the second node (a predicate of its
                // own makes it the scan's start).
                let q = format!(
                    "{} WHERE v1.id >= 0 RETURN count(*)",
                    cypher(&pattern, false)
                );
                assert_eq!(
                    counted_rows(&conn, &q),
                    HashMap::from([(vec![total as i64], 1)]),
                    "{name}, seed {seed}: {q}"
                );
                // Counts per first node (the group key is read from the
                // first extend's input, so the last one still only counts).
                let q = format!("{} RETURN v0.id, count(*)", cypher(&pattern, false));
                let mut per_v0: HashMap<Vec<i64>, u64> = HashMap::new();
                for (t, c) in &want {
                    *per_v0.entry(vec![t[0]]).or_insert(0) += c;
                }
                let grouped: HashMap<Vec<i64>, u64> = per_v0
                    .into_iter()
                    .map(|(k, c)| (vec![k[0], c as i64], 1))
                    .collect();
                assert_eq!(
                    counted_rows(&conn, &q),
                    grouped,
                    "{name}, seed {seed}, {threads} threads, graph {rels:?}: {q}"
                );
                let rel_ids: Vec<String> =
                    (0..pattern.len()).map(|i| format!("id(r{i})")).collect();
                let with = format!("{} RETURN {}", cypher(&pattern, true), rel_ids.join(", "));
                let without = format!("{} RETURN {}", cypher(&pattern, false), rel_ids.join(", "));
                assert_eq!(
                    sorted_text(&conn, &without),
                    sorted_text(&conn, &with),
                    "{name}, seed {seed}, {threads} threads, graph {rels:?}"
                );
            }
            // Walks of 1..2 rels, then one more rel: the extend after the
            // recursive join sums degrees times the walk counts.
            let mut adj = vec![vec![0u64; n]; n];
            let mut out_e = vec![0u64; n];
            for &(t, a, b) in &rels {
                if t == 0 {
                    adj[a][b] += 1;
                    out_e[a] += 1;
                }
            }
            let mut want_walks = 0u64;
            for a in 0..n {
                let mut level = vec![0u64; n];
                level[a] = 1;
                for _ in 0..2 {
                    let mut next = vec![0u64; n];
                    for (x, &c) in level.iter().enumerate() {
                        for y in 0..n {
                            next[y] += c * adj[x][y];
                        }
                    }
                    want_walks += next.iter().zip(&out_e).map(|(c, d)| c * d).sum::<u64>();
                    level = next;
                }
            }
            let q = "MATCH (a:N)-[:E*1..2]->(b:N)-[:E]->(c:N) RETURN count(*)";
            assert_eq!(
                counted_rows(&conn, q),
                HashMap::from([(vec![want_walks as i64], 1)]),
                "seed {seed}: {q}"
            );
            // A triangle under OPTIONAL MATCH: the first part's nodes are the
            // input rows of the intersections.
            let q = "MATCH (a:N) OPTIONAL MATCH (a)-[:E]->(b:N)-[:E]->(c:N)-[:E]->(a) \
                     RETURN a.id, count(c)";
            let triangle = &patterns()[0].2;
            let mut want: HashMap<Vec<i64>, u64> = (0..n as i64).map(|a| (vec![a, 0], 1)).collect();
            let mut per_a = vec![0i64; n];
            for (t, c) in reference(triangle, 3, &rels) {
                per_a[t[0]] += c as i64;
            }
            want = want
                .into_keys()
                .map(|k| (vec![k[0], per_a[k[0] as usize]], 1))
                .collect();
            assert_eq!(
                counted_rows(&conn, q),
                want,
                "seed {seed}, graph {rels:?}: {q}\n{}",
                sorted_text(
                    &conn,
                    "MATCH (a:N) OPTIONAL MATCH (a)-[x:E]->(b:N)-[y:E]->(c:N)-[z:E]->(a) \
                     WHERE x.k >= 0 AND y.k >= 0 AND z.k >= 0 RETURN a.id, b.id, c.id, x.k, y.k, z.k"
                )
                .join("\n")
            );
        }
    }
}

#[test]
fn explain_shows_the_intersection() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    // The logical plan only: EXPLAIN's physical section lists the same
    // steps again.
    let plan = |q: &str| -> String {
        let r = conn.query(&format!("EXPLAIN {q}")).unwrap();
        let text: String = r.rows().map(|row| format!("{row:?}\n")).collect();
        let logical = text.split("Physical pipelines").next().unwrap_or_default();
        logical.to_string()
    };
    let p = plan("MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N)-[:E]->(a) RETURN count(*)");
    assert!(p.contains("Intersect [E Fwd, E Bwd] -> N"), "{p}");
    assert!(!p.contains("Filter"), "{p}");
    // The 4-clique: two intersections (of two lists, then of three).
    let p = plan(
        "MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N)-[:E]->(d:N), (a)-[:E]->(c), (a)-[:E]->(d), \
         (b)-[:E]->(d) RETURN count(*)",
    );
    assert_eq!(p.matches("Intersect").count(), 2, "{p}");
    assert!(p.contains("Intersect [E Fwd, E Fwd, E Fwd] -> N"), "{p}");
    // An acyclic pattern has none.
    let p = plan("MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) RETURN count(*)");
    assert!(!p.contains("Intersect"), "{p}");
}

/// A count of every rel between unfiltered ends is read from the rel
/// table's size (PROFILE shows `CountRels`); a filter keeps the extend.
#[test]
fn profile_counts_all_rels_from_the_table_size() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    conn.query("UNWIND range(0, 99) AS i CREATE (:N {id: i})")
        .unwrap();
    conn.query("MATCH (a:N), (b:N) WHERE b.id = (a.id * 7 + 1) % 100 OR b.id = a.id + 1 CREATE (a)-[:E]->(b)")
        .unwrap();
    let profile = |q: &str| -> String {
        let r = conn.query(&format!("PROFILE {q}")).unwrap();
        r.rows().map(|row| format!("{row:?}\n")).collect()
    };
    let count = |q: &str| -> Value {
        let r = conn.query(q).unwrap();
        let rows: Vec<Vec<Value>> = r.rows().collect();
        rows[0][0].clone()
    };
    // 100 rels of the first kind, 99 of the second, less the pairs both
    // make (a.id * 7 + 1 = a.id + 1 modulo 100 for a.id = 0 and 50).
    let all = "MATCH (a:N)-[:E]->(b:N) RETURN count(*)";
    assert!(
        profile(all).contains("CountRels (197 rels"),
        "{}",
        profile(all)
    );
    assert_eq!(count(all), Value::Int64(197));
    assert_eq!(
        count("MATCH (a:N)<-[e:E]-(b:N) RETURN count(e)"),
        Value::Int64(197)
    );
    let filtered = "MATCH (a:N)-[:E]->(b:N) WHERE a.id < 50 RETURN count(*)";
    assert!(
        !profile(filtered).contains("CountRels"),
        "{}",
        profile(filtered)
    );
    assert_eq!(count(filtered), Value::Int64(99));
}
