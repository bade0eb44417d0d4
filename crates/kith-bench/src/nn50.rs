//! The "next neighbours" graph of seed 004 (the small-query data set of the
//! parallel-Cypher thesis): node `n` has an edge to `(n + k) mod N` for
//! every `k` in `1..=K` (K = 50 in the seed), so every node has out-degree
//! and in-degree K and a 4-hop expansion from one node touches only nodes
//! near it in id order.
//!
//! Files (CSV with a header line):
//! - `nodes.csv`: `id,idMod7` for ids `0..N` (table `LBL_ALL`);
//! - `nodes10.csv`: the same for the first `N/10` ids (table `LBL_10M`, the
//!   seed's label on the first tenth of the nodes, which SQ4 sorts);
//! - `edges.csv`: `from,to`, N·K lines in (from, k) order (table `REL_ONE`);
//! - `meta.json`: parameters, counts and the query parameters `START` (the
//!   SQ3 start node, 777 as in the seed when N > 777), `SQ4_SKIP`, `SQ5_SKIP`
//!   (see the `sq` suite).
//!
//! There is no randomness: the output is a function of N and K only.
//! N must exceed 2K, so that no edge has a reverse twin and an undirected
//! pattern sees each neighbour once.

use std::io;
use std::path::Path;
use std::time::Instant;

use crate::fastfmt::push_u64;
use crate::gen::{write_chunked, GenSummary};
use crate::json::Json;

/// Nodes per chunk of `nodes.csv` and of `edges.csv` (the latter has K
/// lines per node).
const NODE_CHUNK: u64 = 1 << 16;
const EDGE_NODE_CHUNK: u64 = 1 << 12;

/// The SQ3 start node of the seed.
pub const SEED_START: u64 = 777;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nn50Params {
    pub nodes: u64,
    pub k: u64,
}

impl Nn50Params {
    pub fn new(nodes: u64, k: u64) -> Result<Nn50Params, String> {
        if k == 0 {
            return Err("--k must be at least 1".into());
        }
        if nodes <= 2 * k {
            return Err(format!(
                "--nodes must exceed 2·k = {} (otherwise edges get reverse twins)",
                2 * k
            ));
        }
        if nodes.checked_mul(k).is_none_or(|e| e > i64::MAX as u64) {
            return Err("--nodes × --k is too large".into());
        }
        Ok(Nn50Params { nodes, k })
    }

    pub fn edges(&self) -> u64 {
        self.nodes * self.k
    }

    /// Nodes of `LBL_10M`: the first tenth (at least one).
    pub fn first_tenth(&self) -> u64 {
        (self.nodes / 10).max(1)
    }

    /// Out-neighbours of `n`, in file order.
    pub fn neighbours(&self, n: u64) -> impl Iterator<Item = u64> + '_ {
        (1..=self.k).map(move |d| (n + d) % self.nodes)
    }

    /// The SQ3 start node: the seed's 777 where it exists, else the middle.
    pub fn start(&self) -> u64 {
        if self.nodes > SEED_START {
            SEED_START
        } else {
            self.nodes / 2
        }
    }

    /// Nodes with `id % 1113 = 7` (the SQ5 filter).
    pub fn sq5_sources(&self) -> u64 {
        if self.nodes > 7 {
            (self.nodes - 8) / 1113 + 1
        } else {
            0
        }
    }

    /// Rows of SQ5 before SKIP/LIMIT: each source has K out- and K
    /// in-neighbours, all distinct because N > 2K.
    pub fn sq5_rows(&self) -> u64 {
        self.sq5_sources() * 2 * self.k
    }

    /// Query parameters written to `meta.json` under `params`.
    pub fn query_params(&self) -> Vec<(String, Json)> {
        let int = |v: u64| Json::Int(v as i64);
        vec![
            ("START".into(), int(self.start())),
            // The last 10 rows of the full sort (the whole order is needed).
            (
                "SQ4_SKIP".into(),
                int(self.first_tenth().saturating_sub(10)),
            ),
            // 10 rows from the middle of the full sort.
            ("SQ5_SKIP".into(), int(self.sq5_rows() / 2)),
        ]
    }

    /// The parameters that identify a data set (compared by `all` before
    /// reusing a directory).
    pub fn meta(&self) -> Vec<(String, Json)> {
        vec![
            ("generator".into(), Json::str("nn50")),
            ("nodes".into(), Json::Int(self.nodes as i64)),
            ("k".into(), Json::Int(self.k as i64)),
        ]
    }
}

/// Appends the `id,idMod7` lines of node chunk `chunk` of `0..count`.
pub fn node_chunk(count: u64, chunk: u64, out: &mut Vec<u8>) {
    let lo = chunk * NODE_CHUNK;
    for id in lo..(lo + NODE_CHUNK).min(count) {
        push_u64(out, id);
        out.push(b',');
        push_u64(out, id % 7);
        out.push(b'\n');
    }
}

/// Appends the `from,to` lines of edge chunk `chunk`.
pub fn edge_chunk(p: &Nn50Params, chunk: u64, out: &mut Vec<u8>) {
    let lo = chunk * EDGE_NODE_CHUNK;
    for n in lo..(lo + EDGE_NODE_CHUNK).min(p.nodes) {
        for m in p.neighbours(n) {
            push_u64(out, n);
            out.push(b',');
            push_u64(out, m);
            out.push(b'\n');
        }
    }
}

/// Writes `nodes.csv`, `nodes10.csv`, `edges.csv` and `meta.json` into `dir`.
pub fn generate(dir: &Path, p: &Nn50Params, threads: usize) -> io::Result<GenSummary> {
    std::fs::create_dir_all(dir)?;
    let t0 = Instant::now();
    let header = "id,idMod7\n";
    let mut bytes = write_chunked(
        &dir.join("nodes.csv"),
        header,
        p.nodes.div_ceil(NODE_CHUNK),
        threads,
        |i, out| node_chunk(p.nodes, i, out),
    )?;
    let tenth = p.first_tenth();
    bytes += write_chunked(
        &dir.join("nodes10.csv"),
        header,
        tenth.div_ceil(NODE_CHUNK),
        threads,
        |i, out| node_chunk(tenth, i, out),
    )?;
    bytes += write_chunked(
        &dir.join("edges.csv"),
        "from,to\n",
        p.nodes.div_ceil(EDGE_NODE_CHUNK),
        threads,
        |i, out| edge_chunk(p, i, out),
    )?;
    let seconds = t0.elapsed().as_secs_f64();
    let mut m = p.meta();
    m.push(("edges".into(), Json::Int(p.edges() as i64)));
    m.push(("nodes_10".into(), Json::Int(tenth as i64)));
    m.push(("self_loops".into(), Json::str("none")));
    m.push(("duplicate_edges".into(), Json::str("none")));
    m.push(("bytes".into(), Json::Int(bytes as i64)));
    m.push(("gen_threads".into(), Json::Int(threads as i64)));
    m.push(("gen_seconds".into(), Json::Float(seconds)));
    m.push(("params".into(), Json::Obj(p.query_params())));
    std::fs::write(dir.join("meta.json"), format!("{}\n", Json::Obj(m)))?;
    Ok(GenSummary {
        nodes: p.nodes,
        edges: p.edges(),
        bytes,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("kith-bench-nn50-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn pairs(text: &str) -> Vec<(u64, u64)> {
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("from,to"));
        lines
            .map(|l| {
                let (a, b) = l.split_once(',').unwrap();
                (a.parse().unwrap(), b.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn parameters_are_checked() {
        assert!(Nn50Params::new(100, 0).is_err());
        assert!(Nn50Params::new(100, 50).is_err());
        assert!(Nn50Params::new(101, 50).is_ok());
        assert!(Nn50Params::new(u64::MAX / 2, 50).is_err());
    }

    #[test]
    fn edges_are_the_next_k_neighbours_with_wrap_around() {
        // 5000 nodes: several edge chunks, and the wrap at the end.
        let p = Nn50Params::new(5000, 50).unwrap();
        let (a, b) = (tmp("a"), tmp("b"));
        let s = generate(&a, &p, 1).unwrap();
        generate(&b, &p, 3).unwrap();
        for f in ["nodes.csv", "nodes10.csv", "edges.csv", "meta.json"] {
            let x = std::fs::read(a.join(f)).unwrap();
            let y = std::fs::read(b.join(f)).unwrap();
            // meta.json records the thread count and time; compare the rest.
            if f != "meta.json" {
                assert!(x == y, "{f} differs between 1 and 3 threads");
            }
        }
        assert_eq!(s.edges, 250_000);
        let e = pairs(&std::fs::read_to_string(a.join("edges.csv")).unwrap());
        assert_eq!(e.len(), 250_000);
        for (i, &(from, to)) in e.iter().enumerate() {
            let (n, k) = (i as u64 / 50, i as u64 % 50 + 1);
            assert_eq!((from, to), (n, (n + k) % 5000), "line {}", i + 2);
        }
        // In-degree is K too, and there are no loops or duplicates.
        let mut indeg = vec![0u32; 5000];
        for &(_, t) in &e {
            indeg[t as usize] += 1;
        }
        assert!(indeg.iter().all(|&d| d == 50));
        let mut sorted = e.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), e.len());
        assert!(e.iter().all(|(a, b)| a != b));
        assert_eq!(&e[e.len() - 2..], &[(4999, 48), (4999, 49)]);

        let nodes = std::fs::read_to_string(a.join("nodes.csv")).unwrap();
        let lines: Vec<&str> = nodes.lines().collect();
        assert_eq!(lines[0], "id,idMod7");
        assert_eq!(lines.len(), 5001);
        assert_eq!(lines[4001], "4000,3");
        let ten = std::fs::read_to_string(a.join("nodes10.csv")).unwrap();
        assert_eq!(ten.lines().count(), 501);
        assert!(nodes.starts_with(&ten));

        let meta =
            crate::json::parse(&std::fs::read_to_string(a.join("meta.json")).unwrap()).unwrap();
        let params = meta.get("params").unwrap();
        assert_eq!(params.get("START").and_then(Json::as_i64), Some(777));
        assert_eq!(params.get("SQ4_SKIP").and_then(Json::as_i64), Some(490));
        // ids 7, 1120, 2233, 3346, 4459 → 5 sources × 100 neighbours / 2.
        assert_eq!(p.sq5_sources(), 5);
        assert_eq!(params.get("SQ5_SKIP").and_then(Json::as_i64), Some(250));
        for d in [a, b] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn sq5_source_count_matches_brute_force() {
        for n in [101u64, 1113, 1114, 1115, 1120, 1121, 10_000, 1_000_000] {
            let p = Nn50Params::new(n, 50).unwrap();
            assert_eq!(
                p.sq5_sources(),
                (0..n).filter(|i| i % 1113 == 7).count() as u64
            );
        }
    }
}
