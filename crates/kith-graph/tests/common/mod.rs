//! Graph shapes and plain sequential references for the IFE tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use kith_graph::{CostRow, LenRow, PathRow};

/// A small deterministic PRNG (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Clone)]
pub struct Shape {
    pub name: &'static str,
    pub n: u64,
    pub edges: Vec<(u64, u64)>,
}

pub fn random_edges(rng: &mut Rng, n: u64, m: usize) -> Vec<(u64, u64)> {
    (0..m).map(|_| (rng.below(n), rng.below(n))).collect()
}

pub fn shapes(seed: u64) -> Vec<Shape> {
    let mut rng = Rng(seed | 1);
    let mut v = vec![
        Shape {
            name: "empty",
            n: 0,
            edges: vec![],
        },
        Shape {
            name: "single",
            n: 1,
            edges: vec![],
        },
        Shape {
            name: "self-loop",
            n: 1,
            edges: vec![(0, 0), (0, 0)],
        },
        Shape {
            name: "parallel",
            n: 4,
            edges: vec![
                (0, 1),
                (0, 1),
                (1, 2),
                (1, 2),
                (1, 2),
                (0, 2),
                (2, 3),
                (2, 3),
            ],
        },
        Shape {
            name: "disconnected",
            n: 8,
            edges: vec![(0, 1), (1, 0), (2, 3), (3, 4), (4, 2), (6, 6)],
        },
        Shape {
            name: "cycle",
            n: 9,
            edges: (0..9).map(|i| (i, (i + 1) % 9)).collect(),
        },
        Shape {
            name: "star-out",
            n: 12,
            edges: (1..12).map(|i| (0, i)).chain([(5, 0)]).collect(),
        },
        Shape {
            name: "star-in",
            n: 12,
            edges: (1..12).map(|i| (i, 0)).collect(),
        },
    ];
    let (w, h) = (5u64, 4u64);
    let mut grid = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if x + 1 < w {
                grid.push((i, i + 1));
                grid.push((i + 1, i));
            }
            if y + 1 < h {
                grid.push((i, i + w));
                grid.push((i + w, i));
            }
        }
    }
    v.push(Shape {
        name: "grid",
        n: w * h,
        edges: grid,
    });
    v.push(Shape {
        name: "sparse",
        n: 40,
        edges: random_edges(&mut rng, 40, 50),
    });
    v.push(Shape {
        name: "dense",
        n: 10,
        edges: random_edges(&mut rng, 10, 60),
    });
    v.push(Shape {
        name: "medium",
        n: 300,
        edges: random_edges(&mut rng, 300, 900),
    });
    v
}

pub fn adjacency(n: u64, edges: &[(u64, u64)]) -> Vec<Vec<(u64, u64)>> {
    let mut adj = vec![Vec::new(); n as usize];
    for (r, &(s, d)) in edges.iter().enumerate() {
        adj[s as usize].push((d, r as u64));
    }
    adj
}

pub fn ref_bfs(adj: &[Vec<(u64, u64)>], src: u64) -> Vec<Option<u32>> {
    let mut dist = vec![None; adj.len()];
    dist[src as usize] = Some(0);
    let mut q = VecDeque::from([src]);
    while let Some(u) = q.pop_front() {
        let du = dist[u as usize].unwrap();
        for &(w, _) in &adj[u as usize] {
            if dist[w as usize].is_none() {
                dist[w as usize] = Some(du + 1);
                q.push_back(w);
            }
        }
    }
    dist
}

pub fn ref_lengths(adj: &[Vec<(u64, u64)>], srcs: &[u64], lo: u32, hi: u32) -> Vec<LenRow> {
    let mut rows = Vec::new();
    for &s in srcs {
        for (d, l) in ref_bfs(adj, s).into_iter().enumerate() {
            if let Some(l) = l.filter(|l| (lo..=hi).contains(l)) {
                rows.push(LenRow {
                    src: s,
                    dst: d as u64,
                    len: l,
                    count: 1,
                });
            }
        }
    }
    rows.sort_unstable();
    rows
}

/// Enumerates every walk of length <= hi from `src` (explicitly, one by one).
pub fn enumerate_walks(
    adj: &[Vec<(u64, u64)>],
    src: u64,
    hi: u32,
    f: &mut impl FnMut(&[u64], &[u64]),
) {
    fn go(
        adj: &[Vec<(u64, u64)>],
        nodes: &mut Vec<u64>,
        rels: &mut Vec<u64>,
        hi: u32,
        f: &mut impl FnMut(&[u64], &[u64]),
    ) {
        f(nodes, rels);
        if rels.len() as u32 == hi {
            return;
        }
        let u = *nodes.last().unwrap();
        for &(w, r) in &adj[u as usize] {
            nodes.push(w);
            rels.push(r);
            go(adj, nodes, rels, hi, f);
            nodes.pop();
            rels.pop();
        }
    }
    go(adj, &mut vec![src], &mut Vec::new(), hi, f);
}

pub fn ref_walk_counts(adj: &[Vec<(u64, u64)>], srcs: &[u64], lo: u32, hi: u32) -> Vec<LenRow> {
    let mut rows = Vec::new();
    for &s in srcs {
        let mut m: BTreeMap<(u64, u32), u64> = BTreeMap::new();
        enumerate_walks(adj, s, hi, &mut |nodes, rels| {
            if rels.len() as u32 >= lo {
                *m.entry((*nodes.last().unwrap(), rels.len() as u32))
                    .or_default() += 1;
            }
        });
        rows.extend(m.into_iter().map(|((d, l), c)| LenRow {
            src: s,
            dst: d,
            len: l,
            count: c,
        }));
    }
    rows.sort_unstable();
    rows
}

/// Shortest-path counts: the number of walks of length dist(dst) (each is a path).
pub fn ref_shortest_counts(adj: &[Vec<(u64, u64)>], srcs: &[u64], lo: u32, hi: u32) -> Vec<LenRow> {
    let mut rows = Vec::new();
    for &s in srcs {
        let dist = ref_bfs(adj, s);
        let mut m: BTreeMap<u64, u64> = BTreeMap::new();
        enumerate_walks(adj, s, hi, &mut |nodes, rels| {
            let d = *nodes.last().unwrap();
            if dist[d as usize] == Some(rels.len() as u32) && rels.len() as u32 >= lo {
                *m.entry(d).or_default() += 1;
            }
        });
        rows.extend(m.into_iter().map(|(d, c)| LenRow {
            src: s,
            dst: d,
            len: dist[d as usize].unwrap(),
            count: c,
        }));
    }
    rows.sort_unstable();
    rows
}

pub fn ref_all_paths(adj: &[Vec<(u64, u64)>], srcs: &[u64], lo: u32, hi: u32) -> Vec<PathRow> {
    let mut rows = Vec::new();
    for &s in srcs {
        let dist = ref_bfs(adj, s);
        enumerate_walks(adj, s, hi, &mut |nodes, rels| {
            let d = *nodes.last().unwrap();
            if dist[d as usize] == Some(rels.len() as u32) && rels.len() as u32 >= lo {
                rows.push(PathRow {
                    src: s,
                    dst: d,
                    nodes: nodes.to_vec(),
                    rels: rels.to_vec(),
                    cost_bits: 0,
                });
            }
        });
    }
    rows.sort_unstable();
    rows
}

pub fn ref_dijkstra(adj: &[Vec<(u64, u64)>], w: &[f64], srcs: &[u64]) -> Vec<CostRow> {
    #[derive(PartialEq)]
    struct E(f64, u64);
    impl Eq for E {}
    impl PartialOrd for E {
        fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for E {
        fn cmp(&self, o: &Self) -> std::cmp::Ordering {
            o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
        }
    }
    let mut rows = Vec::new();
    for &s in srcs {
        let mut dist = vec![f64::INFINITY; adj.len()];
        dist[s as usize] = 0.0;
        let mut h = BinaryHeap::from([E(0.0, s)]);
        while let Some(E(d, u)) = h.pop() {
            if d > dist[u as usize] {
                continue;
            }
            for &(v, r) in &adj[u as usize] {
                let nd = d + w[r as usize];
                if nd < dist[v as usize] {
                    dist[v as usize] = nd;
                    h.push(E(nd, v));
                }
            }
        }
        for (d, c) in dist.into_iter().enumerate() {
            if c.is_finite() {
                rows.push(CostRow {
                    src: s,
                    dst: d as u64,
                    cost: c,
                });
            }
        }
    }
    rows.sort_by_key(|r| (r.src, r.dst));
    rows
}

/// Every path of length `lo..=hi` from each source (a source listed twice
/// twice) under `semantics`, by a plain recursive DFS.
pub fn ref_paths(
    adj: &[Vec<(u64, u64)>],
    srcs: &[u64],
    lo: u32,
    hi: u32,
    semantics: kith_graph::PathSemantics,
) -> Vec<PathRow> {
    use kith_graph::PathSemantics as S;
    let mut rows = Vec::new();
    for &s in srcs {
        enumerate_walks(adj, s, hi, &mut |nodes, rels| {
            let ok = match semantics {
                S::Walk => true,
                S::Trail => {
                    let mut r = rels.to_vec();
                    r.sort_unstable();
                    r.windows(2).all(|w| w[0] != w[1])
                }
                S::Acyclic => {
                    let mut n = nodes.to_vec();
                    n.sort_unstable();
                    n.windows(2).all(|w| w[0] != w[1])
                }
            };
            if ok && rels.len() as u32 >= lo {
                rows.push(PathRow {
                    src: s,
                    dst: *nodes.last().unwrap(),
                    nodes: nodes.to_vec(),
                    rels: rels.to_vec(),
                    cost_bits: 0,
                });
            }
        });
    }
    rows.sort_unstable();
    rows
}
