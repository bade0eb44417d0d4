//! Recursive patterns through Cypher on random graphs loaded with COPY,
//! checked against a plain sequential reference (level-by-level walk counts
//! and BFS) for every dispatch policy with 1 and 2 threads.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use kith::{Config, Connection, Database, Value};

mod common;
use common::{profile as profile_text, Lcg};

const POLICIES: [&str; 4] = ["1T1S", "nT1S", "nTkS", "nTkMS"];

/// A named graph: node count and edges over offsets.
type Shape = (&'static str, usize, Vec<(usize, usize)>);

fn shapes() -> Vec<Shape> {
    let mut out = Vec::new();
    out.push(("no edges", 7, Vec::new()));
    out.push((
        "self loops and parallel edges",
        5,
        vec![
            (0, 0),
            (0, 1),
            (0, 1),
            (1, 2),
            (2, 2),
            (2, 0),
            (3, 4),
            (3, 4),
            (4, 3),
        ],
    ));
    let n = 40;
    out.push(("cycle", n, (0..n).map(|i| (i, (i + 1) % n)).collect()));
    out.push((
        "stars",
        n,
        (1..20)
            .map(|i| (0, i))
            .chain((21..n).map(|i| (i, 20)))
            .chain([(20, 0), (5, 20)])
            .collect(),
    ));
    for seed in 1..=3u64 {
        let mut r = Lcg(seed * 7777);
        let n = 20 + r.below(40) as usize;
        let m = r.below(4 * n as u64) as usize;
        // Two halves with few edges between them (disconnected parts).
        let edges = (0..m)
            .map(|_| {
                let a = r.below(n as u64) as usize;
                let b = if r.below(8) == 0 {
                    r.below(n as u64) as usize
                } else {
                    let half = if a < n / 2 { 0 } else { n / 2 };
                    half + r.below((n / 2) as u64) as usize
                };
                (a, b)
            })
            .collect();
        out.push(("random", n, edges));
    }
    out
}

fn id_of(i: usize) -> i64 {
    ((i as i64 * 7919) % 100_003) + 1
}

fn adjacency(n: usize, edges: &[(usize, usize)], backward: bool) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for &(a, b) in edges {
        if backward {
            adj[b].push(a);
        } else {
            adj[a].push(b);
        }
    }
    adj
}

/// (src id, dst id) -> number of walks with length in lower..=upper.
fn ref_walks(adj: &[Vec<usize>], srcs: &[usize], lower: u32, upper: u32) -> Vec<(i64, i64, i64)> {
    let mut out = BTreeMap::new();
    for &s in srcs {
        let mut cnt = vec![0u64; adj.len()];
        cnt[s] = 1;
        for len in 0..=upper {
            if len >= lower {
                for (v, &c) in cnt.iter().enumerate() {
                    if c > 0 {
                        *out.entry((id_of(s), id_of(v))).or_insert(0i64) += c as i64;
                    }
                }
            }
            let mut next = vec![0u64; adj.len()];
            for (v, &c) in cnt.iter().enumerate() {
                for &w in &adj[v] {
                    next[w] += c;
                }
            }
            cnt = next;
        }
    }
    out.into_iter().map(|((a, b), c)| (a, b, c)).collect()
}

/// (src id, dst id, shortest length, number of shortest paths) within bounds.
fn ref_bfs(
    adj: &[Vec<usize>],
    srcs: &[usize],
    lower: u32,
    upper: u32,
) -> Vec<(i64, i64, i64, i64)> {
    let mut out = Vec::new();
    for &s in srcs {
        let mut dist = vec![u32::MAX; adj.len()];
        let mut paths = vec![0i64; adj.len()];
        dist[s] = 0;
        paths[s] = 1;
        let mut q = VecDeque::from([s]);
        while let Some(u) = q.pop_front() {
            for &w in &adj[u] {
                if dist[w] == u32::MAX {
                    dist[w] = dist[u] + 1;
                    paths[w] = paths[u];
                    q.push_back(w);
                } else if dist[w] == dist[u] + 1 {
                    paths[w] += paths[u];
                }
            }
        }
        for v in 0..adj.len() {
            if dist[v] != u32::MAX && dist[v] >= lower && dist[v] <= upper {
                out.push((id_of(s), id_of(v), dist[v] as i64, paths[v]));
            }
        }
    }
    out.sort();
    out
}

/// Weights are multiples of 0.25 (sums are exact).
fn weight_of(i: usize) -> f64 {
    ((i * 37) % 13) as f64 * 0.25
}

/// A positive weight (`ALL WSHORTEST` refuses 0), a multiple of 0.25.
fn positive_weight_of(i: usize) -> f64 {
    weight_of(i) + 0.25
}

/// Which rels a reference search may walk and which nodes it may pass
/// through (the source and the destination are not tested).
struct Walkable {
    rel: fn(usize) -> bool,
    node: fn(usize) -> bool,
}

const EVERYTHING: Walkable = Walkable {
    rel: |_| true,
    node: |_| true,
};

/// A plain O(n^2) Dijkstra from each source over the rels `ok` allows, rel
/// `i` weighing `weight(i)`: for every destination but the source, (src,
/// dst, smallest total weight, number of paths of that weight). The counts
/// sum, for each node in order of cost, those of its cheapest
/// predecessors, so they are right for positive weights only.
fn ref_cheapest(
    n: usize,
    edges: &[(usize, usize)],
    srcs: &[usize],
    ok: &Walkable,
    weight: &dyn Fn(usize) -> f64,
) -> Vec<(usize, usize, f64, i64)> {
    let mut out = Vec::new();
    for &s in srcs {
        let mut dist = vec![f64::INFINITY; n];
        let mut count = vec![0i64; n];
        let mut done = vec![false; n];
        dist[s] = 0.0;
        count[s] = 1;
        while let Some(u) = (0..n)
            .filter(|&v| !done[v] && dist[v].is_finite())
            .min_by(|&a, &b| dist[a].total_cmp(&dist[b]))
        {
            done[u] = true;
            if u != s && !(ok.node)(u) {
                continue;
            }
            for (i, &(a, b)) in edges.iter().enumerate() {
                if a != u || !(ok.rel)(i) {
                    continue;
                }
                let c = dist[u] + weight(i);
                if c < dist[b] {
                    dist[b] = c;
                    count[b] = count[u];
                } else if c == dist[b] {
                    count[b] += count[u];
                }
            }
        }
        for v in 0..n {
            if v != s && dist[v].is_finite() {
                out.push((s, v, dist[v], count[v]));
            }
        }
    }
    out
}

/// (src id, dst id, number of paths of the smallest total positive weight)
/// for every destination but the source.
fn ref_all_dijkstra(
    n: usize,
    edges: &[(usize, usize)],
    srcs: &[usize],
    ok: &Walkable,
) -> Vec<(i64, i64, i64)> {
    let mut out: Vec<(i64, i64, i64)> = ref_cheapest(n, edges, srcs, ok, &positive_weight_of)
        .into_iter()
        .map(|(s, v, _, count)| (id_of(s), id_of(v), count))
        .collect();
    out.sort();
    out
}

/// (src id, dst id, 4 * smallest total weight) for every destination but the
/// source.
fn ref_dijkstra(
    n: usize,
    edges: &[(usize, usize)],
    srcs: &[usize],
    ok: &Walkable,
) -> Vec<(i64, i64, i64)> {
    ref_dijkstra_weighted(n, edges, srcs, ok, &weight_of)
}

/// [`ref_dijkstra`] with rel `i` weighing `weight(i)`.
fn ref_dijkstra_weighted(
    n: usize,
    edges: &[(usize, usize)],
    srcs: &[usize],
    ok: &Walkable,
    weight: &dyn Fn(usize) -> f64,
) -> Vec<(i64, i64, i64)> {
    let mut out: Vec<(i64, i64, i64)> = ref_cheapest(n, edges, srcs, ok, weight)
        .into_iter()
        .map(|(s, v, d, _)| (id_of(s), id_of(v), (d * 4.0) as i64))
        .collect();
    out.sort();
    out
}

/// The rows whose destination id is even.
fn even_dst(rows: &[(i64, i64, i64)]) -> Vec<(i64, i64, i64)> {
    rows.iter().copied().filter(|r| r.1 % 2 == 0).collect()
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        Value::UInt64(x) => *x as i64,
        Value::Int32(x) => *x as i64,
        Value::Double(x) if x.fract() == 0.0 => *x as i64,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn triples(conn: &Connection, q: &str) -> Vec<(i64, i64, i64)> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut rows: Vec<(i64, i64, i64)> = r
        .rows()
        .map(|row| (int(&row[0]), int(&row[1]), int(&row[2])))
        .collect();
    rows.sort();
    rows
}

/// Every row of `q` as text, sorted.
fn rows_text(conn: &Connection, q: &str) -> Vec<String> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut rows: Vec<String> = r.rows().map(|row| format!("{row:?}")).collect();
    rows.sort();
    rows
}

/// An in-memory database whose queries may use two threads.
fn two_thread_database() -> Database {
    Database::open(
        ":memory:",
        Config {
            max_threads: Some(2),
            ..Config::default()
        },
    )
    .unwrap()
}

/// Thread counts and dispatch policies under which two forms of a query
/// must agree (each setting stays for the ones after it).
const SETTINGS: [&str; 6] = [
    "CALL threads=1",
    "CALL threads=2",
    "CALL recursive_policy='1T1S'",
    "CALL recursive_policy='nT1S'",
    "CALL recursive_policy='nTkMS'",
    "CALL recursive_policy='nTkS'",
];

/// The tuples of the first operator line of a PROFILE report that
/// contains every one of `words`.
fn profiled_tuples(text: &str, words: &[&str]) -> u64 {
    let line = text
        .lines()
        .find(|l| l.contains(" | ") && words.iter().all(|w| l.contains(w)))
        .unwrap_or_else(|| panic!("no {words:?} in {text}"));
    let n = line.split('|').nth(2).unwrap_or_default().trim();
    n.parse().unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn recursive_patterns_match_reference() {
    let dir = std::env::temp_dir().join(format!("kith-recursive-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        max_threads: Some(2),
        ..Config::default()
    };
    for (gi, (shape, n, edges)) in shapes().into_iter().enumerate() {
        let nodes_csv = dir.join(format!("nodes{gi}.csv"));
        let edges_csv = dir.join(format!("edges{gi}.csv"));
        let mut text = String::from("id\n");
        for i in 0..n {
            writeln!(text, "{}", id_of(i)).unwrap();
        }
        std::fs::write(&nodes_csv, text).unwrap();
        // The first two thirds of the rels are loaded with COPY, the rest
        // created one per transaction: those sit appended to their CSR
        // regions, which every computation must read like loaded ones. Every
        // fourth rel is written with a wrong weight (77) that a SET per
        // transaction then corrects (a patch of the property chunk), and
        // doomed rels (weight 0.01, so every search would take them) are
        // loaded and created among them and then deleted one per
        // transaction (tombstones in the regions' main parts and among the
        // appended rels).
        let copied = edges.len() * 2 / 3;
        let wrong = |i: usize| i % 4 == 1;
        let doomed: Vec<(usize, usize)> = (0..edges.len() / 3)
            .map(|k| ((k * 7) % n, (k * 3 + 1) % n))
            .collect();
        let doomed_copied = doomed.len() / 2;
        let mut text = String::from("from,to,w,pw\n");
        for (i, &(a, b)) in edges.iter().enumerate().take(copied) {
            let (w, pw) = match wrong(i) {
                true => (77.0, 77.0),
                false => (weight_of(i), positive_weight_of(i)),
            };
            writeln!(text, "{},{},{w},{pw}", id_of(a), id_of(b)).unwrap();
        }
        for &(a, b) in &doomed[..doomed_copied] {
            writeln!(text, "{},{},0.01,0.01", id_of(a), id_of(b)).unwrap();
        }
        std::fs::write(&edges_csv, text).unwrap();
        let db_path = dir.join(format!("db{gi}.kith"));
        let db = Database::open(&db_path.to_string_lossy(), config.clone()).unwrap();
        let conn = Connection::new(&db);
        conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
            .unwrap();
        conn.query("CREATE REL TABLE E(FROM N TO N, w DOUBLE, pw DOUBLE)")
            .unwrap();
        conn.query(&format!(
            "COPY N FROM '{}' (HEADER=true)",
            nodes_csv.display()
        ))
        .unwrap();
        conn.query(&format!(
            "COPY E FROM '{}' (HEADER=true)",
            edges_csv.display()
        ))
        .unwrap();
        let create = |a: usize, b: usize, w: f64, pw: f64| {
            conn.query(&format!(
                "MATCH (a:N {{id: {}}}), (b:N {{id: {}}}) CREATE (a)-[:E {{w: {w}, pw: {pw}}}]->(b)",
                id_of(a),
                id_of(b)
            ))
            .unwrap();
        };
        for (i, &(a, b)) in edges.iter().enumerate().skip(copied) {
            match wrong(i) {
                true => create(a, b, 77.0, 77.0),
                false => create(a, b, weight_of(i), positive_weight_of(i)),
            }
            if let Some(&(a, b)) = doomed.get(doomed_copied + i - copied) {
                create(a, b, 0.01, 0.01);
            }
        }
        for (i, &(a, b)) in edges.iter().enumerate().filter(|(i, _)| wrong(*i)) {
            conn.query(&format!(
                "MATCH (a:N {{id: {}}})-[e:E]->(b:N {{id: {}}}) WHERE e.w = 77 WITH e LIMIT 1 SET e.w = {}, e.pw = {}",
                id_of(a),
                id_of(b),
                weight_of(i),
                positive_weight_of(i)
            ))
            .unwrap();
        }
        for &(a, b) in &doomed {
            conn.query(&format!(
                "MATCH (a:N {{id: {}}})-[e:E]->(b:N {{id: {}}}) WHERE e.w = 0.01 WITH e LIMIT 1 DELETE e",
                id_of(a),
                id_of(b)
            ))
            .unwrap();
        }
        assert_eq!(
            rows_text(
                &conn,
                "MATCH ()-[e:E]->() RETURN count(*), count(e.w), sum(e.w)"
            ),
            rows_text(
                &conn,
                &format!(
                    "RETURN {} AS n, {} AS c, {:.2} AS s",
                    edges.len(),
                    edges.len(),
                    (0..edges.len()).map(weight_of).fold(0.0, |a, b| a + b)
                )
            ),
            "{shape}: rels after the SETs and DELETEs"
        );

        let fwd = adjacency(n, &edges, false);
        let bwd = adjacency(n, &edges, true);
        let all: Vec<usize> = (0..n).collect();
        // Sources filtered by id (a source set from the rest of the query).
        let some: Vec<usize> = (0..n).filter(|&i| id_of(i) % 3 == 0).collect();
        let walks_fwd = ref_walks(&fwd, &all, 1, 3);
        let walks_bwd0 = ref_walks(&bwd, &some, 0, 2);
        let walks_fwd4 = ref_walks(&fwd, &all, 1, 4);
        let sp = ref_bfs(&fwd, &all, 1, 30);
        let sp_bwd = ref_bfs(&bwd, &some, 2, 6);
        let lens: Vec<(i64, i64, i64)> = sp.iter().map(|r| (r.0, r.1, r.2)).collect();
        let mut both = fwd.clone();
        for (u, l) in bwd.iter().enumerate() {
            both[u].extend(l.iter().copied());
        }
        let lens_both: Vec<(i64, i64, i64)> = ref_bfs(&both, &all, 1, 30)
            .iter()
            .map(|r| (r.0, r.1, r.2))
            .collect();
        let kept: Vec<(usize, usize)> = (edges.iter().enumerate())
            .filter(|(i, _)| weight_of(*i) != 0.5)
            .map(|(_, &e)| e)
            .collect();
        let lens_kept: Vec<(i64, i64, i64)> = ref_bfs(&adjacency(n, &kept, false), &all, 1, 30)
            .iter()
            .map(|r| (r.0, r.1, r.2))
            .collect();
        let counts: Vec<(i64, i64, i64)> = sp.iter().map(|r| (r.0, r.1, r.3)).collect();
        let counts_bwd: Vec<(i64, i64, i64)> = sp_bwd.iter().map(|r| (r.0, r.1, r.3)).collect();
        let total_walks: i64 = walks_fwd.iter().map(|r| r.2).sum();
        let evens: Vec<usize> = (0..n).filter(|&i| id_of(i) % 2 == 0).collect();
        let costs = ref_dijkstra(n, &edges, &evens, &EVERYTHING);
        let all_cheapest = ref_all_dijkstra(n, &edges, &evens, &EVERYTHING);
        // `(r, n | WHERE r.w <> 0.5 AND n.id % 3 <> 0)`.
        let picky = Walkable {
            rel: |i| weight_of(i) != 0.5,
            node: |v| id_of(v) % 3 != 0,
        };
        let costs_where = ref_dijkstra(n, &edges, &evens, &picky);
        // Undirected: every rel both ways, with its weight.
        let both: Vec<(usize, usize)> = edges
            .iter()
            .copied()
            .chain(edges.iter().map(|&(a, b)| (b, a)))
            .collect();
        let m = edges.len();
        let costs_undirected =
            ref_dijkstra_weighted(n, &both, &evens, &EVERYTHING, &|i| weight_of(i % m));
        let all_cheapest_where = ref_all_dijkstra(n, &edges, &evens, &picky);

        let mut weighted_paths: Option<Vec<String>> = None;
        for policy in POLICIES {
            for threads in [1, 2] {
                let pre = format!("CALL recursive_policy='{policy}'; CALL threads={threads}; ");
                let at = format!("{shape} (graph {gi}), {policy}, {threads} thread(s)");
                assert_eq!(
                    triples(
                        &conn,
                        &format!("{pre}MATCH (a:N)-[:E*1..3]->(b:N) RETURN a.id, b.id, count(*)")
                    ),
                    walks_fwd,
                    "walks 1..3: {at}"
                );
                let r = conn
                    .query(&format!(
                        "{pre}MATCH (a:N)-[:E*1..3]->(b:N) RETURN count(*)"
                    ))
                    .unwrap();
                let got: Vec<Vec<Value>> = r.rows().collect();
                assert_eq!(int(&got[0][0]), total_walks, "walk total: {at}");
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)<-[:E*0..2]-(b:N) WHERE a.id % 3 = 0 RETURN a.id, b.id, count(*)"
                        )
                    ),
                    walks_bwd0,
                    "backward walks 0..2: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH p = (a:N)-[:E* SHORTEST]->(b:N) RETURN a.id, b.id, length(p)"
                        )
                    ),
                    lens,
                    "shortest lengths: {at}"
                );
                // Undirected, and through a rel condition: one-source
                // searches take their dense levels bottom-up over the
                // turned-around graph (with the same condition).
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)-[e:E* SHORTEST 1..30]-(b:N) RETURN a.id, b.id, length(e)"
                        )
                    ),
                    lens_both,
                    "undirected shortest lengths: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)-[e:E* SHORTEST 1..30 (r, _ | WHERE r.w <> 0.5)]->(b:N) RETURN a.id, b.id, length(e)"
                        )
                    ),
                    lens_kept,
                    "shortest lengths through a rel condition: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH allShortestPaths((a:N)-[:E*]->(b:N)) RETURN a.id, b.id, count(*)"
                        )
                    ),
                    counts,
                    "all shortest counts: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH p = (a:N)-[:E* WSHORTEST(w)]->(b:N) WHERE a.id % 2 = 0 RETURN a.id, b.id, cost(p) * 4"
                        )
                    ),
                    costs,
                    "weighted shortest costs: {at}"
                );
                // Weighted shortest paths as values: each path runs from
                // its source to its destination and its rels' weights add
                // up to the smallest cost; the path chosen among equal
                // costs is the same for every policy and thread count.
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH p = (a:N)-[:E* WSHORTEST(w)]->(b:N) WHERE a.id % 2 = 0 AND nodes(p)[0].id = a.id AND nodes(p)[-1].id = b.id AND length(p) = size(rels(p)) RETURN a.id, b.id, reduce(c = 0.0, r IN rels(p) | c + r.w) * 4"
                        )
                    ),
                    costs,
                    "weighted shortest paths: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)-[e:E* WSHORTEST(w)]->(b:N) WHERE a.id % 2 = 0 AND cost(e) * 4 = reduce(c = 0.0, r IN rels(e) | c + r.w) * 4 RETURN a.id, b.id, cost(e) * 4"
                        )
                    ),
                    costs,
                    "weighted shortest rel variable: {at}"
                );
                // Every path of the smallest cost, counted and enumerated.
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)-[:E* ALL WSHORTEST(pw)]->(b:N) WHERE a.id % 2 = 0 RETURN a.id, b.id, count(*)"
                        )
                    ),
                    all_cheapest,
                    "all weighted shortest counts: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH p = (a:N)-[:E* ALL WSHORTEST(pw)]->(b:N) WHERE a.id % 2 = 0 AND cost(p) = reduce(c = 0.0, r IN rels(p) | c + r.pw) AND nodes(p)[-1].id = b.id RETURN a.id, b.id, count(DISTINCT [r IN rels(p) | id(r)])"
                        )
                    ),
                    all_cheapest,
                    "all weighted shortest paths: {at}"
                );
                // Undirected: the rel variable's cost and the path's weights.
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)-[e:E* WSHORTEST(w)]-(b:N) WHERE a.id % 2 = 0 RETURN a.id, b.id, cost(e) * 4"
                        )
                    ),
                    costs_undirected,
                    "undirected weighted shortest costs: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH p = (a:N)-[:E* WSHORTEST(w)]-(b:N) WHERE a.id % 2 = 0 AND nodes(p)[-1].id = b.id RETURN a.id, b.id, reduce(c = 0.0, r IN rels(p) | c + r.w) * 4"
                        )
                    ),
                    costs_undirected,
                    "undirected weighted shortest paths: {at}"
                );
                // Predicates on the rels and intermediate nodes.
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH p = (a:N)-[:E* WSHORTEST(w) (r, x | WHERE r.w <> 0.5 AND x.id % 3 <> 0)]->(b:N) WHERE a.id % 2 = 0 RETURN a.id, b.id, cost(p) * 4"
                        )
                    ),
                    costs_where,
                    "weighted shortest paths with predicates: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)-[:E* ALL WSHORTEST(pw) (r, x | WHERE r.w <> 0.5 AND x.id % 3 <> 0)]->(b:N) WHERE a.id % 2 = 0 RETURN a.id, b.id, count(*)"
                        )
                    ),
                    all_cheapest_where,
                    "all weighted shortest counts with predicates: {at}"
                );
                if edges.iter().enumerate().any(|(i, _)| weight_of(i) == 0.0) {
                    let e = conn
                        .query(&format!(
                            "{pre}MATCH (a:N)-[:E* ALL WSHORTEST(w)]->(b:N) RETURN count(*)"
                        ))
                        .unwrap_err();
                    assert!(e.message.contains("positive weights"), "{at}: {e}");
                }
                let chosen = rows_text(
                    &conn,
                    &format!(
                        "{pre}MATCH p = (a:N)-[:E* WSHORTEST(w)]->(b:N) RETURN a.id, b.id, [n IN nodes(p) | n.id], [r IN rels(p) | id(r)]"
                    ),
                );
                match &weighted_paths {
                    None => weighted_paths = Some(chosen),
                    Some(first) => assert_eq!(&chosen, first, "weighted path choice: {at}"),
                }
                assert_eq!(
                    triples(
                        &conn,
                        &format!(
                            "{pre}MATCH (a:N)<-[:E* ALL SHORTEST 2..6]-(b:N) WHERE a.id % 3 = 0 RETURN a.id, b.id, count(*)"
                        )
                    ),
                    counts_bwd,
                    "backward all shortest 2..6: {at}"
                );
                // A WHERE on the destination's properties (a destination
                // mask inside the join) keeps exactly the rows it passes.
                assert_eq!(
                    triples(
                        &conn,
                        &format!("{pre}MATCH (a:N)-[:E*1..3]->(b:N) WHERE b.id % 2 = 0 RETURN a.id, b.id, count(*)")
                    ),
                    even_dst(&walks_fwd),
                    "walks to even destinations: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!("{pre}MATCH p = (a:N)-[:E*1..3]->(b:N) WHERE b.id % 2 = 0 AND size(nodes(p)) > 0 RETURN a.id, b.id, count(*)")
                    ),
                    even_dst(&walks_fwd),
                    "walk paths to even destinations: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!("{pre}MATCH p = (a:N)-[:E* SHORTEST 1..30]->(b:N) WHERE b.id % 2 = 0 RETURN a.id, b.id, length(p)")
                    ),
                    even_dst(&lens),
                    "shortest paths to even destinations: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!("{pre}MATCH (a:N)-[:E* ALL SHORTEST 1..30]->(b:N) WHERE b.id % 2 = 0 RETURN a.id, b.id, count(*)")
                    ),
                    even_dst(&counts),
                    "all shortest counts to even destinations: {at}"
                );
                // Few destinations (every 7th node): walks are bounded by
                // the hops left to one (a backward search from them), and
                // must still find every walk that ends at one.
                let sevenths: Vec<(i64, i64, i64)> = walks_fwd4
                    .iter()
                    .copied()
                    .filter(|r| r.1 % 7 == 0)
                    .collect();
                assert_eq!(
                    triples(
                        &conn,
                        &format!("{pre}MATCH (a:N)-[:E*1..4]->(b:N) WHERE b.id % 7 = 0 RETURN a.id, b.id, count(*)")
                    ),
                    sevenths,
                    "walks 1..4 to every 7th node: {at}"
                );
                assert_eq!(
                    triples(
                        &conn,
                        &format!("{pre}MATCH p = (a:N)-[:E*1..4]->(b:N) WHERE b.id % 7 = 0 RETURN a.id, b.id, count(*)")
                    ),
                    sevenths,
                    "walk paths 1..4 to every 7th node: {at}"
                );
                for (what, rel) in [("walks", "E*1..4"), ("trails", "E* TRAIL 1..4")] {
                    let masked = format!("{pre}MATCH p = (a:N)-[:{rel}]-(b:N) WHERE b.id % 7 = 0 RETURN a.id, b.id, count(*)");
                    let after = format!("{pre}MATCH p = (a:N)-[:{rel}]-(b:N) WITH a, b, p WHERE b.id % 7 = 0 RETURN a.id, b.id, count(*)");
                    assert_eq!(
                        triples(&conn, &masked),
                        triples(&conn, &after),
                        "undirected {what} to every 7th node: {at}"
                    );
                    let masked = format!("{pre}MATCH (a:N)-[:{rel}]-(b:N) WHERE b.id % 7 = 0 RETURN a.id, b.id, count(*)");
                    let after = format!("{pre}MATCH (a:N)-[:{rel}]-(b:N) WITH a, b WHERE b.id % 7 = 0 RETURN a.id, b.id, count(*)");
                    assert_eq!(
                        triples(&conn, &masked),
                        triples(&conn, &after),
                        "undirected {what} counted to every 7th node: {at}"
                    );
                }
                // Undirected (a union of both directions): the masked join
                // must give what the filter after a WITH (no mask) gives.
                for mode in ["SHORTEST", "ALL SHORTEST"] {
                    let masked = format!("{pre}MATCH (a:N)-[e:E* {mode} 1..30]-(b:N) WHERE a.id % 3 = 0 AND b.id % 2 = 0 RETURN a.id, b.id, length(e)");
                    let after = format!("{pre}MATCH (a:N)-[e:E* {mode} 1..30]-(b:N) WHERE a.id % 3 = 0 WITH a, b, e WHERE b.id % 2 = 0 RETURN a.id, b.id, length(e)");
                    assert_eq!(
                        triples(&conn, &masked),
                        triples(&conn, &after),
                        "undirected {mode} to even destinations: {at}"
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn settings_are_silent_and_explain_shows_the_recursive_join() {
    let dir = std::env::temp_dir().join(format!("kith-recursive-x-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = Database::open(
        &dir.join("db.kith").to_string_lossy(),
        Config {
            max_threads: Some(2),
            ..Config::default()
        },
    )
    .unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); CREATE REL TABLE E(FROM N TO N)")
        .unwrap();
    for s in [
        "CALL recursive_policy='ntkms'",
        "CALL recursive_k=5",
        "CALL var_length_max_depth=7",
        "CALL threads=1",
    ] {
        assert!(conn.query(s).unwrap().is_silent(), "{s}");
    }
    let r = conn
        .query("EXPLAIN MATCH (a:N)-[:E* SHORTEST 2..5]->(b:N) RETURN count(*)")
        .unwrap();
    let text: String = r.rows().map(|row| format!("{}\n", row[0])).collect();
    assert!(
        text.contains("RecursiveJoin (IFE shortest) E Fwd -> N *2..5 policy=nTkMS k=5 threads=1"),
        "{text}"
    );
    // Lengths of a named path or rel list are counted; the paths are
    // enumerated only when read.
    let explain = |q: &str| -> String {
        let r = conn.query(&format!("EXPLAIN {q}")).unwrap();
        r.rows().map(|row| format!("{}\n", row[0])).collect()
    };
    let text = explain("MATCH p = (a:N)-[r:E*1..3]->(b:N) RETURN sum(length(p)), sum(size(r))");
    assert!(text.contains("RecursiveJoin (IFE walks)"), "{text}");
    let text = explain("MATCH p = (a:N)-[:E*1..3]->(b:N) RETURN nodes(p)");
    assert!(text.contains("RecursiveJoin (IFE walk paths)"), "{text}");
    let text = explain("MATCH (a:N)-[:E* TRAIL 1..3]->(b:N) RETURN count(*)");
    assert!(text.contains("RecursiveJoin (IFE trail paths)"), "{text}");
    let err = conn
        .query("MATCH (a:N)-[:E*1..8]->(b:N) RETURN count(*)")
        .unwrap_err()
        .to_string();
    assert!(err.contains("exceeds var_length_max_depth (7)"), "{err}");
    // An empty graph has no walks (and `*` uses the max depth).
    let r = conn
        .query("MATCH (a:N)-[:E*]->(b:N) RETURN count(*)")
        .unwrap();
    let rows: Vec<Vec<Value>> = r.rows().collect();
    assert_eq!(rows[0][0], Value::Int64(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A counting, lengths or costs search hands its rows to the next pipeline
/// as it finds them (PROFILE says "pipelined"), under every policy and
/// thread count; a part that needs them whole (an UNWIND, the padding of
/// an OPTIONAL MATCH with a WHERE, here over sources that all find rows)
/// keeps them. Both give the same answers.
#[test]
fn join_rows_run_through_the_next_pipeline() {
    let db = two_thread_database();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); CREATE REL TABLE E(FROM N TO N, w DOUBLE)",
    )
    .unwrap();
    conn.query("UNWIND range(0, 299) AS i CREATE (:N {id: i})")
        .unwrap();
    conn.query(
        "MATCH (a:N), (b:N) WHERE b.id = (a.id + 1) % 300 OR b.id = (a.id * 7 + 3) % 300 \
         CREATE (a)-[:E {w: (a.id % 3) + 0.5}]->(b)",
    )
    .unwrap();
    let run = |q: &str| -> (Vec<Vec<Value>>, bool) {
        let rows: Vec<Vec<Value>> = conn.query(q).unwrap().rows().collect();
        (rows, profile_text(&conn, q).contains(" pipelined"))
    };
    for settings in SETTINGS {
        conn.query(settings).unwrap();
        for (pipelined, kept) in [
            (
                "MATCH (a:N)-[e:E* SHORTEST 1..30]->(b:N) WHERE a.id < 80 RETURN a.id % 7 AS k, count(*), sum(length(e)) ORDER BY k",
                "MATCH (a:N) WHERE a.id < 80 OPTIONAL MATCH (a)-[e:E* SHORTEST 1..30]->(b:N) WHERE true RETURN a.id % 7 AS k, count(*), sum(length(e)) ORDER BY k",
            ),
            (
                "MATCH (a:N)-[:E*1..4]->(b:N) WHERE a.id % 50 = 1 RETURN a.id, b.id, count(*) ORDER BY a.id, b.id",
                "MATCH (a:N) WHERE a.id % 50 = 1 OPTIONAL MATCH (a)-[:E*1..4]->(b:N) WHERE true RETURN a.id, b.id, count(*) ORDER BY a.id, b.id",
            ),
            // Undirected: the table walked both ways as a union.
            (
                "MATCH (a:N)-[e:E* SHORTEST 1..30]-(b:N) WHERE a.id < 30 RETURN a.id % 4 AS k, count(*), sum(length(e)) ORDER BY k",
                "MATCH (a:N) WHERE a.id < 30 OPTIONAL MATCH (a)-[e:E* SHORTEST 1..30]-(b:N) WHERE true RETURN a.id % 4 AS k, count(*), sum(length(e)) ORDER BY k",
            ),
            (
                "MATCH (a:N)-[e:E* WSHORTEST(w)]->(b:N) WHERE a.id < 40 RETURN b.id % 5 AS k, count(*), min(cost(e)), max(cost(e)) ORDER BY k",
                "MATCH (a:N) WHERE a.id < 40 OPTIONAL MATCH (a)-[e:E* WSHORTEST(w)]->(b:N) WHERE true RETURN b.id % 5 AS k, count(*), min(cost(e)), max(cost(e)) ORDER BY k",
            ),
            (
                "MATCH (a:N)-[:E* ALL WSHORTEST(w)]->(b:N) WHERE a.id % 30 = 2 RETURN a.id, b.id, count(*) ORDER BY a.id, b.id",
                "MATCH (a:N) WHERE a.id % 30 = 2 OPTIONAL MATCH (a)-[:E* ALL WSHORTEST(w)]->(b:N) WHERE true RETURN a.id, b.id, count(*) ORDER BY a.id, b.id",
            ),
            (
                "MATCH (a:N)-[e:E* SHORTEST 2..3]->(b:N)-[:E]->(c:N) WHERE a.id = 5 AND c.id % 2 = 0 RETURN b.id, c.id, length(e) ORDER BY b.id, c.id",
                "MATCH (a:N) WHERE a.id = 5 OPTIONAL MATCH (a)-[e:E* SHORTEST 2..3]->(b:N)-[:E]->(c:N) WHERE c.id % 2 = 0 RETURN b.id, c.id, length(e) ORDER BY b.id, c.id",
            ),
        ] {
            let (want, kept_pipelined) = run(kept);
            let (got, was_pipelined) = run(pipelined);
            assert!(was_pipelined, "{settings}: {pipelined}");
            assert!(!kept_pipelined, "{settings}: {kept}");
            assert!(!got.is_empty());
            assert_eq!(got, want, "{settings}: {pipelined}");
        }
    }
    // A LIMIT the rows satisfy ends the search: far fewer rows than the
    // search finds in all reach the pipeline.
    let forwarded = |q: &str| -> u64 {
        let text = profile_text(&conn, q);
        profiled_tuples(&text, &["RecursiveJoin (IFE) policy", "pipelined"])
    };
    conn.query("CALL recursive_policy='auto'").unwrap();
    let all = forwarded("MATCH (a:N)-[:E*1..8]->(b:N) RETURN b.id % 3 AS k, count(*)");
    let limited = "MATCH (a:N)-[:E*1..8]->(b:N) RETURN b.id LIMIT 5";
    let rows: Vec<Vec<Value>> = conn.query(limited).unwrap().rows().collect();
    assert_eq!(rows.len(), 5);
    let some = forwarded(limited);
    assert!(
        some < all / 4,
        "{some} of {all} rows forwarded under a LIMIT"
    );
    // An OPTIONAL MATCH's join rows reach the next part once each with
    // their walk counts, not repeated: the same answers as a next part
    // that unwinds them (and so reads them repeated).
    for (counted, repeated) in [
        (
            "MATCH (a:N) WHERE a.id < 40 OPTIONAL MATCH (a)-[:E*1..4]->(b:N) RETURN a.id % 7 AS k, count(*), count(b), sum(b.id) ORDER BY k",
            "MATCH (a:N) WHERE a.id < 40 OPTIONAL MATCH (a)-[:E*1..4]->(b:N) UNWIND [1] AS x RETURN a.id % 7 AS k, count(*), count(b), sum(b.id) ORDER BY k",
        ),
        (
            "MATCH (a:N) WHERE a.id % 60 = 7 OPTIONAL MATCH (a)-[:E*1..3]->(b:N) RETURN a.id, b.id ORDER BY a.id, b.id",
            "MATCH (a:N) WHERE a.id % 60 = 7 OPTIONAL MATCH (a)-[:E*1..3]->(b:N) UNWIND [1] AS x RETURN a.id, b.id ORDER BY a.id, b.id",
        ),
        (
            "MATCH (a:N) WHERE a.id < 9 OPTIONAL MATCH (a)-[:E*2..3]->(b:N) WITH a, b WHERE b.id % 2 = 0 RETURN a.id, count(DISTINCT b), count(*) ORDER BY a.id",
            "MATCH (a:N) WHERE a.id < 9 OPTIONAL MATCH (a)-[:E*2..3]->(b:N) UNWIND [1] AS x WITH a, b WHERE b.id % 2 = 0 RETURN a.id, count(DISTINCT b), count(*) ORDER BY a.id",
        ),
    ] {
        for threads in ["CALL threads=1", "CALL threads=2"] {
            conn.query(threads).unwrap();
            let got: Vec<Vec<Value>> = conn.query(counted).unwrap().rows().collect();
            let want: Vec<Vec<Value>> = conn.query(repeated).unwrap().rows().collect();
            assert!(!want.is_empty(), "{repeated}");
            assert_eq!(got, want, "{threads}: {counted}");
        }
    }
}

/// An OPTIONAL MATCH of one variable-length rel from a bound node, followed
/// by its WITH or RETURN, joins left outer in the part of those clauses
/// (one part, the source's properties read before the join); the same
/// clauses after an UNWIND take the general OPTIONAL MATCH part. Both
/// give the same answers, under every policy and thread count.
#[test]
fn optional_variable_length_joins_into_the_next_clauses() {
    let db = two_thread_database();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); CREATE NODE TABLE M(id INT64, PRIMARY KEY(id)); \
         CREATE REL TABLE E(FROM N TO N, w DOUBLE); CREATE REL TABLE F(FROM N TO M)",
    )
    .unwrap();
    conn.query("UNWIND range(0, 199) AS i CREATE (:N {id: i})")
        .unwrap();
    conn.query("UNWIND range(0, 9) AS i CREATE (:M {id: i})")
        .unwrap();
    // Sparse enough that many sources reach nothing at length 3 and
    // above, and nodes 150.. have no rels out at all.
    conn.query(
        "MATCH (a:N), (b:N) WHERE a.id < 150 AND (b.id = (a.id * 3 + 1) % 200 OR (a.id % 4 = 0 AND b.id = (a.id + 7) % 200)) \
         CREATE (a)-[:E {w: (a.id % 5) + 0.25}]->(b)",
    )
    .unwrap();
    conn.query("MATCH (a:N), (m:M) WHERE a.id % 13 = m.id CREATE (a)-[:F]->(m)")
        .unwrap();
    let queries = [
        "MATCH (a:N) WHERE a.id % 9 = 2 OPTIONAL MATCH (a)-[:E*1..3]->(b:N) {U} RETURN a.id % 4 AS k, count(*), count(b), sum(b.id) ORDER BY k",
        "MATCH (a:N) WHERE a.id > 140 OPTIONAL MATCH (a)-[:E*2..3]->(b) {U} RETURN a.id, b.id, count(*) ORDER BY a.id, b.id",
        "MATCH (a:N) WHERE a.id % 17 = 3 OPTIONAL MATCH p = (a)-[r:E*1..2]->(b:N) {U} RETURN a.id, length(p), size(r), [n IN nodes(p) | n.id] AS ns ORDER BY a.id, length(p), ns",
        "MATCH (a:N) WHERE a.id % 11 = 5 OPTIONAL MATCH (a)-[e:E* SHORTEST 1..30]-(b:N) {U} RETURN a.id, count(b), sum(length(e)), max(b.id) ORDER BY a.id",
        "MATCH (a:N) WHERE a.id % 23 = 1 OPTIONAL MATCH (a)-[e:E* WSHORTEST(w)]->(b:N) {U} RETURN a.id, count(b), min(cost(e)), max(cost(e)) ORDER BY a.id",
        "MATCH (a:N) WHERE a.id % 7 = 6 OPTIONAL MATCH (a)-[:E* TRAIL 1..4]->(b) {U} WITH a, b WHERE b.id % 2 = 0 RETURN a.id, count(DISTINCT b) ORDER BY a.id",
        "MATCH (a:N) WHERE a.id < 40 OPTIONAL MATCH (a)-[:E|F*1..2]->(b) {U} RETURN DISTINCT label(b) AS l, count(*) ORDER BY l",
        "MATCH (a:N) WHERE a.id >= 145 AND a.id < 155 OPTIONAL MATCH (a)-[:E*1..2]->(b:N) {U} RETURN a.id, b.id ORDER BY b.id DESC, a.id LIMIT 6",
        // A source NULL from an earlier OPTIONAL MATCH.
        "MATCH (a:N) WHERE a.id % 31 = 4 OPTIONAL MATCH (a)-[:F]->(m:M) WITH a, m OPTIONAL MATCH (a)-[:E*1..2]->(b:N) {U} RETURN a.id, m.id, count(b) ORDER BY a.id",
    ];
    // One part fewer: the source's properties are read before the join,
    // not per row after a pass-through part (whose rows a ScanRows reads).
    // The logical plan only: EXPLAIN's physical section lists the
    // pipelines' sources again.
    let plan = |q: &str| -> String {
        let r = conn.query(&format!("EXPLAIN {q}")).unwrap();
        let text: String = r.rows().map(|r| format!("{r:?}\n")).collect();
        let logical = text.split("Physical pipelines").next().unwrap_or_default();
        logical.to_string()
    };
    for q in queries {
        let joined = plan(&q.replace("{U} ", ""));
        let separate = plan(&q.replace("{U}", "UNWIND [1] AS unwound"));
        assert!(
            joined.matches("ScanRows").count() < separate.matches("ScanRows").count(),
            "{joined}"
        );
    }
    for settings in SETTINGS {
        conn.query(settings).unwrap();
        for q in queries {
            let joined = q.replace("{U} ", "");
            let separate = q.replace("{U}", "UNWIND [1] AS unwound");
            // A WHERE takes the general path: the rows numbered, the join
            // inner, and those without a match padded after it.
            let numbered = q.replace("{U}", "WHERE true");
            let got: Vec<Vec<Value>> = conn.query(&joined).unwrap().rows().collect();
            let want: Vec<Vec<Value>> = conn.query(&numbered).unwrap().rows().collect();
            let also: Vec<Vec<Value>> = conn.query(&separate).unwrap().rows().collect();
            assert!(!want.is_empty(), "{numbered}");
            assert_eq!(got, want, "{settings}: {joined}");
            assert_eq!(also, want, "{settings}: {separate}");
        }
    }
    // The left outer search hands its rows, the padded ones last, to the
    // part's pipeline.
    let profile = conn
        .query(&format!("PROFILE {}", queries[0].replace("{U} ", "")))
        .unwrap();
    let text: String = profile.rows().map(|r| format!("{r:?}\n")).collect();
    assert!(text.contains(" pipelined"), "{text}");
    // Some sources reach nothing: padded rows are in the answers above.
    let rows: Vec<Vec<Value>> = conn
        .query("MATCH (a:N) WHERE a.id > 140 OPTIONAL MATCH (a)-[:E*2..3]->(b) RETURN count(*) - count(b)")
        .unwrap()
        .rows()
        .collect();
    assert!(matches!(rows[0][0], Value::Int64(n) if n > 0), "{rows:?}");
    let joined = plan(
        "MATCH (a:N) WHERE a.id < 5 OPTIONAL MATCH (a)-[:E*1..2]->(b:N) RETURN a.id, count(b)",
    );
    assert_eq!(joined.matches("ScanRows").count(), 1, "{joined}");
}

/// When nothing after the join reads the destination, the join's rows of
/// one source and length are merged with their counts summed (PROFILE
/// counts fewer join rows than the part after it reads tuples); the
/// answers equal those of the same query reading the destination, under
/// every policy and 1 and 2 threads, kept and pipelined.
#[test]
fn rows_merge_when_the_destination_is_unread() {
    let db = two_thread_database();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); CREATE REL TABLE E(FROM N TO N, w DOUBLE); \
         UNWIND range(0, 299) AS i CREATE (:N {id: i}); \
         MATCH (a:N), (b:N) WHERE a.id < 280 AND (b.id = (a.id + 1) % 300 OR b.id = (a.id * 7 + 3) % 300) \
         CREATE (a)-[:E {w: (a.id % 3) + 0.5}]->(b)",
    )
    .unwrap();
    // {C} is count(*) (the destination unread) or a count that reads it;
    // {B} carries the destination or not.
    let queries = [
        "MATCH (a:N)-[:E*1..4]->(b:N) WHERE a.id % 9 = 1 RETURN a.id % 7 AS k, {C} ORDER BY k",
        "MATCH (a:N)-[e:E* SHORTEST 1..30]->(b:N) WHERE a.id < 70 RETURN a.id % 5 AS k, {C}, sum(length(e)), max(length(e)) ORDER BY k",
        "MATCH (a:N)-[e:E* ALL SHORTEST 1..30]-(b:N) WHERE a.id < 9 RETURN a.id, {C}, min(length(e)) ORDER BY a.id",
        "MATCH (a:N)-[e:E* WSHORTEST(w)]->(b:N) WHERE a.id % 13 = 2 RETURN a.id, {C}, sum(cost(e)) ORDER BY a.id",
        "MATCH (a:N)-[:E* ALL WSHORTEST(w)]->(b:N) WHERE a.id % 31 = 2 RETURN {C}",
        "MATCH (a:N) WHERE a.id > 270 OPTIONAL MATCH (a)-[:E*1..3]->(b:N) RETURN a.id, {C} ORDER BY a.id",
        "MATCH (a:N)-[:E*2..3]->(b:N) WHERE a.id % 11 = 0 WITH a, {C} AS c UNWIND [1, 2] AS x RETURN a.id, c, x ORDER BY a.id, x",
        "MATCH (a:N)-[:E*1..2]->(b:N) WHERE a.id % 17 = 3 WITH a{B} UNWIND [1] AS x RETURN a.id, count(*) ORDER BY a.id",
    ];
    for settings in SETTINGS {
        conn.query(settings).unwrap();
        for q in queries {
            let merged = q.replace("{C}", "count(*)").replace("{B}", "");
            let read = q
                .replace("{C}", "sum(CASE WHEN b IS NULL THEN 1 ELSE 1 END)")
                .replace("{B}", ", b");
            let got: Vec<Vec<Value>> = conn.query(&merged).unwrap().rows().collect();
            let want: Vec<Vec<Value>> = conn.query(&read).unwrap().rows().collect();
            assert!(!want.is_empty(), "{read}");
            assert_eq!(got, want, "{settings}: {merged}");
        }
    }
    // The first query's join hands on fewer rows than the walks they
    // stand for; reading the destination, one per (source, destination,
    // length).
    let join_rows = |q: &str| -> (u64, u64) {
        let text = profile_text(&conn, q);
        let tuples = |op: &str| profiled_tuples(&text, &[op]);
        (tuples("RecursiveJoin (IFE)"), tuples("ScanRows"))
    };
    let (merged, walks) = join_rows(&queries[0].replace("{C}", "count(*)"));
    let (read, same_walks) = join_rows(&queries[0].replace("{C}", "count(b)"));
    assert_eq!(walks, same_walks);
    assert!(merged < read && read < walks, "{merged} {read} {walks}");
}

/// A search that enumerates paths hands them, with their values, to the
/// next pipeline batch by batch (a left outer one pads last), and a LIMIT
/// ends it early; the answers equal those of the kept rows (an OPTIONAL
/// MATCH with a WHERE, padded after the join), as multisets, under every
/// policy and 1 and 2 threads.
#[test]
fn path_searches_run_through_the_next_pipeline() {
    let db = two_thread_database();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); CREATE NODE TABLE M(id INT64, PRIMARY KEY(id)); \
         CREATE REL TABLE E(FROM N TO N, w DOUBLE); CREATE REL TABLE F(FROM N TO M); \
         UNWIND range(0, 119) AS i CREATE (:N {id: i}); UNWIND range(0, 4) AS i CREATE (:M {id: i}); \
         MATCH (a:N), (b:N) WHERE a.id < 110 AND (b.id = (a.id + 1) % 120 OR b.id = (a.id * 7 + 3) % 120) \
         CREATE (a)-[:E {w: (a.id % 3) + 0.5}]->(b); \
         MATCH (a:N), (m:M) WHERE a.id % 11 = m.id CREATE (a)-[:F]->(m)",
    )
    .unwrap();
    // {W}: nothing (the left outer join, pipelined) or a WHERE (kept).
    let queries = [
        "MATCH (a:N) WHERE a.id % 13 = 1 OR a.id > 112 OPTIONAL MATCH p = (a)-[:E*1..3]->(b:N) {W} RETURN a.id, p",
        "MATCH (a:N) WHERE a.id % 17 = 2 OPTIONAL MATCH p = (a)-[r:E* TRAIL 1..4]-(b:N) {W} RETURN a.id, [n IN nodes(p) | n.id], [x IN r | x.w]",
        "MATCH (a:N) WHERE a.id % 19 = 3 OPTIONAL MATCH (a)-[:E* ACYCLIC 2..3]->(b:N) {W} RETURN a.id, b.id, count(*)",
        "MATCH (a:N) WHERE a.id % 7 = 0 OPTIONAL MATCH p = (a)-[:E* SHORTEST 1..30]->(b:N) {W} RETURN a.id, b.id, p",
        "MATCH (a:N) WHERE a.id % 23 = 4 OPTIONAL MATCH p = (a)-[:E* ALL SHORTEST 1..30]-(b:N) {W} RETURN a.id, b.id, p",
        "MATCH (a:N) WHERE a.id % 29 = 5 OPTIONAL MATCH p = (a)-[e:E* WSHORTEST(w)]->(b:N) {W} RETURN a.id, b.id, cost(e), p",
        "MATCH (a:N) WHERE a.id % 31 = 6 OPTIONAL MATCH p = (a)-[:E* ALL WSHORTEST(w)]->(b:N) {W} RETURN a.id, b.id, p",
        "MATCH (a:N) WHERE a.id % 37 = 7 OPTIONAL MATCH p = (a)-[:E|F*1..3]->(b:M) {W} RETURN a.id, b.id, p",
        "MATCH (a:N) WHERE a.id % 41 = 8 OPTIONAL MATCH p = (a)-[:E*1..4 (r, n | WHERE n.id % 4 <> 0)]->(b:N) {W} RETURN a.id, size(nodes(p)), b.id",
    ];
    let run = |q: &str| -> Vec<String> {
        let mut rows: Vec<String> = conn
            .query(q)
            .unwrap()
            .rows()
            .map(|r| r.iter().map(|v| format!("{v}|")).collect())
            .collect();
        rows.sort();
        rows
    };
    for settings in SETTINGS {
        conn.query(settings).unwrap();
        for q in queries {
            let pipelined = q.replace("{W} ", "");
            let kept = q.replace("{W}", "WHERE true");
            let (got, want) = (run(&pipelined), run(&kept));
            assert!(want.len() > 1, "{kept}");
            assert_eq!(got, want, "{settings}: {pipelined}");
        }
    }
    let profile = |q: &str| profile_text(&conn, q);
    // Shortest and weighted shortest paths read as values keep their rows
    // (parent trees, and the rels the paths of a source share are read
    // once); the others are pipelined.
    for q in queries {
        let text = profile(&q.replace("{W} ", ""));
        let kept = q.contains("* SHORTEST") || q.contains("WSHORTEST");
        assert_eq!(text.contains(" pipelined"), !kept, "{text}");
        let text = profile(&q.replace("{W}", "WHERE true"));
        assert!(!text.contains(" pipelined"), "{text}");
    }
    // A LIMIT ends the enumeration: 1..12 walks from one node number in
    // the millions; a few batches reach the pipeline.
    let q = "MATCH p = (a:N)-[:E*1..12]->(b:N) WHERE a.id = 0 RETURN p LIMIT 5";
    assert_eq!(run(q).len(), 5);
    let n = profiled_tuples(&profile(q), &["RecursiveJoin (IFE) policy", "pipelined"]);
    assert!(n < 100_000, "{n} paths forwarded under LIMIT 5");
}

/// `[:R* {k: $p}]`: a parameter in the property map of a variable-length
/// rel is read at execution (a rel-id mask), like a constant.
#[test]
fn rel_property_map_takes_parameters() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); CREATE REL TABLE E(FROM N TO N, w INT64); \
         UNWIND range(0, 4) AS i CREATE (:N {id: i}); \
         UNWIND range(0, 3) AS i MATCH (a:N), (b:N) WHERE a.id = i AND b.id = i + 1 CREATE (a)-[:E {w: i % 2}]->(b)",
    )
    .unwrap();
    let count = |w: Value| -> Value {
        let r = conn
            .query_with_params(
                "MATCH (a:N)-[:E*1..4 {w: $w}]->(b:N) RETURN count(*)",
                &[("w", w)],
            )
            .unwrap();
        let rows: Vec<Vec<Value>> = r.rows().collect();
        rows[0][0].clone()
    };
    // Rels 0->1 and 2->3 have w = 0, 1->2 and 3->4 have w = 1: one hop each.
    assert_eq!(count(Value::Int64(0)), Value::Int64(2));
    assert_eq!(count(Value::Int64(1)), Value::Int64(2));
    assert_eq!(count(Value::Int64(7)), Value::Int64(0));
    // The same through a predicate on the rels, and one on the nodes
    // (intermediate only: 0 -> 1 -> 2 passes node 1, 1 -> 2 -> 3 fails at 2).
    let count_pred = |q: &str, x: i64| -> Value {
        let r = conn
            .query_with_params(q, &[("x", Value::Int64(x))])
            .unwrap();
        let rows: Vec<Vec<Value>> = r.rows().collect();
        rows[0][0].clone()
    };
    let rel_q = "MATCH (a:N)-[:E*1..4 (r, n | WHERE r.w = $x)]->(b:N) RETURN count(*)";
    assert_eq!(count_pred(rel_q, 0), Value::Int64(2));
    let node_q = "MATCH (a:N)-[:E*2 (r, n | WHERE n.id % 2 = $x)]->(b:N) RETURN count(*)";
    assert_eq!(count_pred(node_q, 1), Value::Int64(2));
    assert_eq!(count_pred(node_q, 0), Value::Int64(1));
    let r = conn
        .query("MATCH (a:N)-[:E*1..4]->(b:N) RETURN count(*)")
        .unwrap();
    let rows: Vec<Vec<Value>> = r.rows().collect();
    assert_eq!(rows[0][0], Value::Int64(10));
}

/// Without a policy setting, shortest-path lengths from 8 or more sources
/// run as nTkMS (bit lanes) and everything else as nTkS; PROFILE says which
/// ran, `CALL recursive_policy='auto'` restores the choice, and the result
/// is the same under every policy.
#[test]
fn automatic_policy_packs_many_sources_into_lanes() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); CREATE REL TABLE E(FROM N TO N); \
         UNWIND range(0, 199) AS i CREATE (:N {id: i}); \
         MATCH (a:N), (b:N) WHERE b.id = (a.id * 7 + 3) % 200 OR b.id = (a.id + 1) % 200 \
         CREATE (a)-[:E]->(b)",
    )
    .unwrap();
    let policy_of = |q: &str| -> (String, Vec<Vec<Value>>) {
        let text = profile_text(&conn, q);
        let line = text
            .lines()
            .find(|l| l.contains("RecursiveJoin (IFE) policy="))
            .unwrap_or_else(|| panic!("no IFE line in\n{text}"))
            .to_string();
        (line, conn.query(q).unwrap().rows().collect())
    };
    let many =
        "MATCH (a:N)-[e:E* SHORTEST 1..30]->(b:N) WHERE a.id < 20 RETURN count(*), sum(length(e))";
    let one =
        "MATCH (a:N)-[e:E* SHORTEST 1..30]->(b:N) WHERE a.id = 3 RETURN count(*), sum(length(e))";
    let walks = "MATCH (a:N)-[:E*1..3]->(b:N) WHERE a.id < 20 RETURN count(*)";
    let (line, auto_rows) = policy_of(many);
    assert!(line.contains("policy=nTkMS"), "{line}");
    // Lane morsels and one-source searches both take their dense levels
    // (here from 64 of the 200 nodes on) bottom-up, and say so.
    assert!(line.contains("bottom-up levels="), "{line}");
    let (line, one_rows) = policy_of(one);
    assert!(
        line.contains("policy=nTkS") && line.contains("bottom-up levels="),
        "{line}"
    );
    assert!(policy_of(walks).0.contains("policy=nTkS"));
    conn.query("CALL recursive_policy='nT1S'").unwrap();
    let (line, rows) = policy_of(many);
    assert!(
        line.contains("policy=nT1S") && line.contains("bottom-up levels="),
        "{line}"
    );
    assert_eq!(rows, auto_rows);
    conn.query("CALL recursive_policy='nTkMS'").unwrap();
    assert_eq!(policy_of(one).1, one_rows);
    conn.query("CALL recursive_policy='auto'").unwrap();
    assert!(policy_of(many).0.contains("policy=nTkMS"));
}

/// The rels of returned paths carry their own properties and endpoints
/// whatever order the rels were numbered in: some loaded by COPY (ids in
/// CSR order), the rest created one at a time in shuffled order (appended
/// runs), some deleted, read before and after a CHECKPOINT rewrites the
/// regions, walked forward, backward and undirected. Each rel's `w` names
/// its endpoints, so every hop of every path can be checked.
#[test]
fn path_rels_carry_their_own_properties() {
    let dir = std::env::temp_dir().join(format!("kith-path-rels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = Database::open(&dir.join("db").to_string_lossy(), Config::default()).unwrap();
    let conn = Connection::new(&db);
    let n = 40usize;
    let mut r = Lcg(4242);
    let mut edges: Vec<(usize, usize, usize)> = Vec::new();
    for k in 0..160 {
        let (a, b) = (r.below(n as u64) as usize, r.below(n as u64) as usize);
        edges.push((a, b, k));
    }
    let csv = dir.join("e.csv");
    let copied = edges.len() / 2;
    let mut text = String::new();
    for &(a, b, k) in &edges[..copied] {
        writeln!(text, "{a},{b},{}", (a * 1000 + b) * 1000 + k).unwrap();
    }
    std::fs::write(&csv, text).unwrap();
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); \
         CREATE REL TABLE E(FROM N TO N, w INT64);",
    )
    .unwrap();
    conn.query(&format!(
        "UNWIND range(0, {}) AS i CREATE (:N {{id: i}})",
        n - 1
    ))
    .unwrap();
    conn.query(&format!("COPY E FROM '{}'", csv.display()))
        .unwrap();
    conn.query("CREATE (:N {id: 1000})").unwrap();
    let mut rest: Vec<(usize, usize, usize)> = edges[copied..].to_vec();
    for i in (1..rest.len()).rev() {
        rest.swap(i, r.below(i as u64 + 1) as usize);
    }
    for &(a, b, k) in &rest {
        conn.query(&format!(
            "MATCH (a:N {{id: {a}}}), (b:N {{id: {b}}}) CREATE (a)-[:E {{w: {}}}]->(b)",
            (a * 1000 + b) * 1000 + k
        ))
        .unwrap();
    }
    // Delete a few of each kind.
    conn.query("MATCH ()-[e:E]->() WHERE e.w % 1000 IN [3, 11, 97, 120, 151] DELETE e")
        .unwrap();
    let check = |stage: &str| {
        for (arrow, dir) in [
            ("-[e:E* SHORTEST 1..12]->", 1),
            ("<-[e:E* SHORTEST 1..12]-", -1),
            ("-[e:E* ALL SHORTEST 1..12]-", 0),
        ] {
            for src in [0, 7, 19] {
                // The same paths read by a plain scan, materialized for
                // OPTIONAL MATCH (node 1000 has none: one padded row) and
                // emitted twice for a source given twice.
                let ret = "RETURN [x IN nodes(p) | x.id], [x IN rels(p) | x.w]";
                let queries = [
                    format!("MATCH p = (a:N){arrow}(b:N) WHERE a.id = {src} {ret}"),
                    format!(
                        "MATCH (a:N) WHERE a.id IN [{src}, 1000] \
                         OPTIONAL MATCH p = (a){arrow}(b:N) {ret}"
                    ),
                    format!(
                        "UNWIND [{src}, {src}] AS s \
                         MATCH p = (a:N){arrow}(b:N) WHERE a.id = s {ret}"
                    ),
                ];
                let mut counts = Vec::new();
                for q in &queries {
                    let res = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
                    let (mut paths, mut padded) = (0, 0);
                    for row in res.rows() {
                        if row[0] == Value::Null && row[1] == Value::Null {
                            padded += 1;
                            continue;
                        }
                        let (Value::List(ns), Value::List(ws)) = (&row[0], &row[1]) else {
                            panic!("{stage} {q}: unexpected row {row:?}");
                        };
                        assert_eq!(ns.len(), ws.len() + 1, "{stage} {q}");
                        for (i, w) in ws.iter().enumerate() {
                            let (x, y, w) = (int(&ns[i]), int(&ns[i + 1]), int(w));
                            let (from, to) = ((w / 1000) / 1000, (w / 1000) % 1000);
                            let ok = match dir {
                                1 => (from, to) == (x, y),
                                -1 => (from, to) == (y, x),
                                _ => (from, to) == (x, y) || (from, to) == (y, x),
                            };
                            assert!(ok, "{stage} {q}: hop {x}-{y} got rel w={w}");
                            assert!(
                                ![3, 11, 97, 120, 151].contains(&(w % 1000)),
                                "{stage}: deleted rel {w}"
                            );
                        }
                        paths += 1;
                    }
                    counts.push((paths, padded));
                }
                let plain = counts[0].0;
                assert!(plain > 0 || src != 0, "{stage} {arrow}: no paths from 0");
                let q = &queries[1];
                assert_eq!(counts[1], (plain, 1), "{stage} {q}");
                let q = &queries[2];
                assert_eq!(counts[2], (2 * plain, 0), "{stage} {q}");
            }
        }
    };
    check("before checkpoint");
    conn.query("CHECKPOINT").unwrap();
    check("after checkpoint");
    drop(conn);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A query that only measures its paths (`size(nodes(p))`, `size(e)`,
/// ...) reads no element properties (EXPLAIN says "element ids only") and
/// counts the same as one that reads them; any other use of the path or of
/// an element keeps the properties.
#[test]
fn measured_paths_read_no_properties() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE N(id INT64, name STRING, PRIMARY KEY(id)); \
         CREATE REL TABLE E(FROM N TO N, w INT64); CREATE REL TABLE F(FROM N TO N, w INT64);",
    )
    .unwrap();
    conn.query("UNWIND range(0, 29) AS i CREATE (:N {id: i, name: 'n' + toString(i)})")
        .unwrap();
    let mut r = Lcg(99);
    for k in 0..70 {
        let (a, b) = (r.below(30), r.below(30));
        let t = if k % 3 == 0 { "F" } else { "E" };
        conn.query(&format!(
            "MATCH (a:N {{id: {a}}}), (b:N {{id: {b}}}) CREATE (a)-[:{t} {{w: {k}}}]->(b)"
        ))
        .unwrap();
    }
    let ids_only = |q: &str| {
        let plan = rows_text(&conn, &format!("EXPLAIN {q}")).join("\n");
        assert!(plan.contains("RecursiveJoin"), "{plan}");
        plan.contains("element ids only")
    };
    // (pattern, measures, the same counted from properties, the first rel).
    let forms = [
        (
            "p = (a:N)-[e:E* SHORTEST 1..6]->(b:N)",
            "size(nodes(p)), size(rels(p)), size(e), size(nodes(p)[1..]), size(nodes(p)[-2..]), size(rels(p)[1..-1]), size(nodes(p)[..-9])",
            "size([x IN nodes(p) | x.name]), size([x IN rels(p) | x.w]), size([x IN e | x.w]), size([x IN nodes(p)[1..] | x.name]), size([x IN nodes(p)[-2..] | x.name]), size([x IN rels(p)[1..-1] | x.w]), size([x IN nodes(p)[..-9] | x.name])",
            "e[0]",
        ),
        (
            "p = (a:N)-[e:E* SHORTEST 1..6]-(b:N)",
            "size(nodes(p)), size(rels(p))",
            "size([x IN nodes(p) | x.name]), size([x IN rels(p) | x.w])",
            "rels(p)[0]",
        ),
        (
            "(a:N)-[e:E|F* SHORTEST 1..6]->(b:N)",
            "size(nodes(e)), size(rels(e))",
            "size([x IN nodes(e) | x.name]), size([x IN rels(e) | x.w])",
            "rels(e)[0]",
        ),
        (
            "p = (a:N)-[e:E*1..3]-(b:N)",
            "size(nodes(p)), size(e)",
            "size([x IN nodes(p) | x.name]), size([x IN e | x.w])",
            "e[0]",
        ),
    ];
    for (pattern, measures, reads, first_rel) in forms {
        let head = format!("MATCH {pattern} WHERE a.id IN [0, 4, 17] RETURN b.id, ");
        let measured = format!("{head}{measures}");
        let read = format!("{head}{reads}");
        assert!(ids_only(&measured), "{measured}");
        assert!(!ids_only(&read), "{read}");
        let (mut x, mut y) = (rows_text(&conn, &measured), rows_text(&conn, &read));
        x.sort();
        y.sort();
        assert!(!x.is_empty(), "{measured}");
        assert_eq!(x, y, "{pattern}");
        // Returning or indexing the elements needs their properties.
        for q in [
            format!("{head}e"),
            format!("{head}{measures}, {first_rel}.w"),
            format!("MATCH {pattern} WHERE a.id = 0 WITH e RETURN count(e)"),
        ] {
            assert!(!ids_only(&q), "{q}");
        }
    }
    // A path that is NULL (OPTIONAL MATCH without a match) counts NULL.
    conn.query("CREATE (:N {id: 1000, name: 'alone'})").unwrap();
    let padded = rows_text(
        &conn,
        "MATCH (a:N) WHERE a.id = 1000 OPTIONAL MATCH p = (a)-[:E* SHORTEST 1..6]->(b:N) \
         RETURN size(nodes(p)), size(rels(p)[1..])",
    );
    assert_eq!(padded, vec!["[Null, Null]".to_string()]);
    let named = rows_text(
        &conn,
        "MATCH p = (a:N)-[e:E* SHORTEST 1..6]->(b:N) WHERE a.id = 0 RETURN nodes(p)[1].name",
    );
    assert!(
        !named.is_empty() && named.iter().all(|n| n.contains("String(\"n")),
        "{named:?}"
    );
}

/// Paths of tens of thousands of rels read their rels' values in runs on
/// several workers: every hop's rel must join the two nodes around it
/// (both orientations, as an undirected search walks them), and one
/// thread and two must return the same paths.
#[test]
fn many_path_rels_are_read_in_parallel_runs() {
    let dir = std::env::temp_dir().join(format!("kith-many-rels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = Database::open(&dir.join("db").to_string_lossy(), Config::default()).unwrap();
    let conn = Connection::new(&db);
    // A random tree over 40,000 nodes, each edge stored one way or the
    // other, its weight naming its stored (source, destination).
    let n = 40_000u64;
    let mut r = Lcg(77);
    let mut text = String::new();
    for v in 1..n {
        let p = r.below(v);
        let (a, b) = if r.below(2) == 0 { (p, v) } else { (v, p) };
        writeln!(text, "{a},{b},{}", a * n + b).unwrap();
    }
    let nodes: String = (0..n).map(|i| format!("{i}\n")).collect();
    std::fs::write(dir.join("n.csv"), nodes).unwrap();
    std::fs::write(dir.join("e.csv"), text).unwrap();
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); \
         CREATE REL TABLE E(FROM N TO N, w INT64);",
    )
    .unwrap();
    conn.query(&format!("COPY N FROM '{}'", dir.join("n.csv").display()))
        .unwrap();
    conn.query(&format!("COPY E FROM '{}'", dir.join("e.csv").display()))
        .unwrap();
    let q = "MATCH p = (a:N)-[e:E* SHORTEST 1..60]-(b:N) WHERE a.id = 0 \
             RETURN b.id, [x IN nodes(p) | x.id], [x IN rels(p) | x.w] ORDER BY b.id";
    let mut results = Vec::new();
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        conn.query("CALL var_length_max_depth=60").unwrap();
        let res = conn.query(q).unwrap();
        let rows: Vec<Vec<Value>> = res.rows().collect();
        assert_eq!(
            rows.len() as u64,
            n - 1,
            "{threads} threads: every node reached"
        );
        for row in &rows {
            let (Value::List(ns), Value::List(ws)) = (&row[1], &row[2]) else {
                panic!("unexpected row {row:?}");
            };
            assert_eq!(ns.len(), ws.len() + 1);
            assert_eq!(int(&ns[ns.len() - 1]), int(&row[0]));
            for (i, w) in ws.iter().enumerate() {
                let (x, y, w) = (int(&ns[i]) as u64, int(&ns[i + 1]) as u64, int(w) as u64);
                let (from, to) = (w / n, w % n);
                assert!(
                    (from, to) == (x, y) || (from, to) == (y, x),
                    "{threads} threads: hop {x}-{y} got rel {from}->{to}"
                );
            }
        }
        results.push(rows);
    }
    assert!(results[0] == results[1], "one thread and two differ");
    drop(conn);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
