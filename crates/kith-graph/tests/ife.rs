//! IFE against sequential references, for every policy and thread count.

mod common;

use std::sync::Arc;

use common::{Rng, *};
use kith_graph::*;
use kith_sched::{CancelToken, Scheduler};
use proptest::prelude::*;

fn configs() -> Vec<IfeOptions> {
    let mut v = Vec::new();
    for policy in Policy::ALL {
        for threads in [1, 2, 4] {
            let ks: &[Option<usize>] = match policy {
                Policy::OneThreadOneSource | Policy::ManyThreadsOneSource => &[None],
                _ => &[None, Some(1), Some(3)],
            };
            for &k in ks {
                v.push(IfeOptions {
                    policy,
                    threads,
                    k,
                    budget: None,
                });
            }
        }
    }
    v
}

/// Every node as a source, plus repeats so nTkMS fills more than one 64-lane morsel.
fn sources(n: u64) -> Vec<u64> {
    if n == 0 {
        return vec![];
    }
    (0..n).chain((0..70).map(|i| (i * 7) % n)).collect()
}

fn dyadic_weights(rng: &mut Rng, m: usize) -> Arc<[f64]> {
    (0..m).map(|_| rng.below(40) as f64 / 4.0).collect()
}

fn dedup_sorted<T: Ord + Clone>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// The path [`PathMode::One`] chooses per (source, destination): the one
/// whose reversed (node, rel) sequence is smallest; a source listed twice
/// is output twice.
fn ref_one_paths(adj: &[Vec<(u64, u64)>], srcs: &[u64], lo: u32, hi: u32) -> Vec<PathRow> {
    let mut uniq = srcs.to_vec();
    uniq.sort_unstable();
    uniq.dedup();
    let mut best: std::collections::BTreeMap<(u64, u64), PathRow> = Default::default();
    let key = |p: &PathRow| -> Vec<(u64, u64)> {
        p.nodes
            .iter()
            .rev()
            .skip(1)
            .copied()
            .zip(p.rels.iter().rev().copied())
            .collect()
    };
    for p in ref_all_paths(adj, &uniq, lo, hi) {
        let e = best.entry((p.src, p.dst)).or_insert_with(|| p.clone());
        if key(&p) < key(e) {
            *e = p;
        }
    }
    let mut expect_one = Vec::new();
    for &src in srcs {
        expect_one.extend(
            best.range((src, 0)..=(src, u64::MAX))
                .map(|(_, p)| p.clone()),
        );
    }
    expect_one.sort();
    expect_one
}

fn check_shape(sched: &Scheduler, s: &Shape, lo: u32, hi: u32, opts: &IfeOptions, rng: &mut Rng) {
    let cancel = CancelToken::new();
    let g = Arc::new(InMemoryCsr::from_edges(s.n, &s.edges));
    let adj = adjacency(s.n, &s.edges);
    let srcs = sources(s.n);
    let ctx = format!("{} lo={lo} hi={hi} {:?}", s.name, opts);

    let got = shortest_lengths(sched, &g, &srcs, lo, hi, opts, &cancel).unwrap();
    assert_eq!(
        got,
        dedup_sorted(ref_lengths(&adj, &srcs, lo, hi)),
        "lengths {ctx}"
    );
    // Dense levels bottom-up, over the graph turned around: the same.
    let turned: Vec<(u64, u64)> = s.edges.iter().map(|&(a, b)| (b, a)).collect();
    let back = Arc::new(InMemoryCsr::from_edges(s.n, &turned));
    let pulled = shortest_lengths_pulling(sched, &g, &back, &srcs, lo, hi, opts, &cancel).unwrap();
    assert_eq!(pulled, got, "pulled lengths {ctx}");

    // Reference walk enumeration is exponential: keep it to small graphs.
    let small = s.edges.len() <= 60;
    let whi = if small { hi.min(4) } else { hi.min(2) };
    let wlo = lo.min(whi);
    let got = walk_counts(sched, &g, &srcs, wlo, whi, opts, &cancel).unwrap();
    assert_eq!(got, ref_walk_counts(&adj, &srcs, wlo, whi), "walks {ctx}");

    let got = all_shortest_counts(sched, &g, &srcs, wlo, whi, opts, &cancel).unwrap();
    assert_eq!(
        got,
        ref_shortest_counts(&adj, &srcs, wlo, whi),
        "counts {ctx}"
    );

    let all = shortest_paths(sched, &g, &srcs, wlo, whi, PathMode::All, opts, &cancel).unwrap();
    assert_eq!(all, ref_all_paths(&adj, &srcs, wlo, whi), "all paths {ctx}");
    let one = shortest_paths(sched, &g, &srcs, wlo, whi, PathMode::One, opts, &cancel).unwrap();
    let expect_one = ref_one_paths(&adj, &srcs, wlo, whi);
    let one_sorted = one;
    assert_eq!(one_sorted, expect_one, "one path {ctx}");

    // Enumerated paths: every walk / trail / acyclic path, each a row.
    let psrcs = &srcs[..srcs.len().min(s.n as usize + 5)];
    let phi = if small { hi.min(4) } else { hi.min(2) };
    let plo = lo.min(phi);
    for sem in [
        PathSemantics::Walk,
        PathSemantics::Trail,
        PathSemantics::Acyclic,
    ] {
        let got = walk_paths(sched, &g, psrcs, plo, phi, sem, opts, &cancel).unwrap();
        let expect = ref_paths(&adj, psrcs, plo, phi, sem);
        assert_eq!(got, expect, "paths {sem:?} {ctx}");
        if sem == PathSemantics::Walk {
            // Consistent with the counting computation.
            let counts = walk_counts(sched, &g, psrcs, plo, phi, opts, &cancel).unwrap();
            let total: u64 = counts.iter().map(|r| r.count).sum();
            assert_eq!(total as usize, got.len(), "path count {ctx}");
        }
    }

    let w = dyadic_weights(rng, s.edges.len());
    let got = weighted_shortest(sched, &g, &srcs, w.clone(), opts, &cancel).unwrap();
    assert_eq!(got, ref_dijkstra(&adj, &w, &srcs), "weighted {ctx}");
}

/// [`PathMode::One`] keeps parent edges in one packed word only when the
/// ids fit 32 bits; rels with larger ids (a union graph's, say) go to the
/// parent lists. With every other rel id beyond 32 bits, both kinds
/// compete for the same nodes and the smallest edge must still win.
#[test]
fn one_shortest_path_with_rel_ids_beyond_32_bits() {
    let sched = Scheduler::new(4);
    let cancel = CancelToken::new();
    let big = |r: u64| if r % 2 == 1 { r + (1 << 40) } else { r };
    for s in shapes(31) {
        let mut g = InMemoryCsr::from_edges(s.n, &s.edges);
        g.rel_ids.iter_mut().for_each(|r| *r = big(*r));
        let g = Arc::new(g);
        let adj: Vec<Vec<(u64, u64)>> = adjacency(s.n, &s.edges)
            .into_iter()
            .map(|l| l.into_iter().map(|(n, r)| (n, big(r))).collect())
            .collect();
        let srcs = sources(s.n);
        let hi = if s.edges.len() <= 60 { 4 } else { 2 };
        let expect = ref_one_paths(&adj, &srcs, 0, hi);
        for opts in configs() {
            let got =
                shortest_paths(&sched, &g, &srcs, 0, hi, PathMode::One, &opts, &cancel).unwrap();
            assert_eq!(got, expect, "{} {opts:?}", s.name);
        }
    }
}

/// [`ShortestTrees`] rows read back through their source's parent tree
/// are the paths [`ShortestPaths`] outputs with [`PathMode::One`], for
/// every shape, bound and policy (nTkMS runs the lane version), with and
/// without node and destination masks.
#[test]
fn parent_trees_read_back_the_one_paths() {
    let sched = Scheduler::new(4);
    let cancel = CancelToken::new();
    // Rel ids numbered backwards too: a node's rels then come in falling
    // id order, so the first edge to reach a node is not its smallest.
    let graphs = shapes(17).into_iter().flat_map(|s| {
        let mut back = InMemoryCsr::from_edges(s.n, &s.edges);
        let m = s.edges.len() as u64;
        back.rel_ids.iter_mut().for_each(|r| *r = m - 1 - *r);
        [
            (Arc::new(InMemoryCsr::from_edges(s.n, &s.edges)), s.clone()),
            (Arc::new(back), s),
        ]
    });
    for (g, s) in graphs {
        let srcs = sources(s.n);
        let mask = |keep: &dyn Fn(u64) -> bool| -> Arc<[u64]> {
            let mut m = vec![0u64; (s.n as usize).div_ceil(64)];
            for v in (0..s.n).filter(|&v| keep(v)) {
                m[(v / 64) as usize] |= 1 << (v % 64);
            }
            m.into()
        };
        let masks = [
            (None, None),
            (Some(mask(&|v| v % 5 != 2)), None),
            (None, Some(mask(&|v| v % 3 != 1))),
            (Some(mask(&|v| v % 4 != 1)), Some(mask(&|v| v % 2 == 0))),
        ];
        for (lo, hi) in [(0, 3), (1, 6), (2, 2)] {
            for (node_mask, dst_mask) in &masks {
                for opts in configs() {
                    let mut one = ShortestPaths::new(lo, hi, PathMode::One);
                    one.node_mask = node_mask.clone();
                    one.dst_mask = dst_mask.clone();
                    let sink = Arc::new(CollectSink::<PathRow>::default());
                    run_ife(
                        &sched,
                        Arc::clone(&g),
                        Arc::new(one),
                        &srcs,
                        &opts,
                        &cancel,
                        sink.clone(),
                    )
                    .unwrap();
                    let mut want = sink.take();
                    want.sort_unstable();
                    let mut trees = ShortestTrees::new(lo, hi);
                    trees.search.node_mask = node_mask.clone();
                    trees.search.dst_mask = dst_mask.clone();
                    let compute = Arc::new(trees);
                    let sink = Arc::new(CollectSink::<TreeRow>::default());
                    run_ife(
                        &sched,
                        Arc::clone(&g),
                        Arc::clone(&compute),
                        &srcs,
                        &opts,
                        &cancel,
                        sink.clone(),
                    )
                    .unwrap();
                    let trees: std::collections::HashMap<u64, ParentTree> =
                        compute.take_trees().into_iter().collect();
                    let (mut nodes, mut rels) = (Vec::new(), Vec::new());
                    let mut got: Vec<PathRow> = sink
                        .take()
                        .into_iter()
                        .map(|row| {
                            tree_path(&trees[&row.src], &row, &mut nodes, &mut rels).unwrap();
                            PathRow {
                                src: row.src,
                                dst: row.dst,
                                nodes: nodes.clone(),
                                rels: rels.clone(),
                                cost_bits: 0,
                            }
                        })
                        .collect();
                    got.sort_unstable();
                    let masked = (node_mask.is_some(), dst_mask.is_some());
                    assert_eq!(got, want, "{} {lo}..{hi} masks {masked:?} {opts:?}", s.name);
                }
            }
        }
    }
}

#[test]
fn all_shapes_all_policies() {
    let sched = Scheduler::new(4);
    let mut rng = Rng(99);
    for s in shapes(7) {
        for opts in configs() {
            for (lo, hi) in [(0, 30), (1, 3), (2, 2)] {
                check_shape(&sched, &s, lo, hi, &opts, &mut rng);
            }
        }
    }
}

#[test]
fn larger_graph_identical_across_policies() {
    // Bigger than the sparse threshold and the dense morsel size, so dense
    // frontiers, several frontier morsels and the output phase all split.
    let sched = Scheduler::new(4);
    let cancel = CancelToken::new();
    let mut rng = Rng(5);
    let n = 20_000;
    let edges = random_edges(&mut rng, n, 80_000);
    let g = Arc::new(InMemoryCsr::from_edges(n, &edges));
    let adj = adjacency(n, &edges);
    let srcs: Vec<u64> = (0..80).map(|_| rng.below(n)).collect();
    let expect = ref_lengths(&adj, &srcs, 0, 30);
    let w = dyadic_weights(&mut rng, edges.len());
    let expect_w = ref_dijkstra(&adj, &w, &srcs[..4]);
    let mut counts = None;
    let mut walks = None;
    for opts in configs().into_iter().filter(|o| o.k != Some(3)) {
        let got = shortest_lengths(&sched, &g, &srcs, 0, 30, &opts, &cancel).unwrap();
        assert_eq!(got, expect, "{opts:?}");
        let c = all_shortest_counts(&sched, &g, &srcs[..8], 0, 30, &opts, &cancel).unwrap();
        assert_eq!(
            c.len(),
            expect.iter().filter(|r| srcs[..8].contains(&r.src)).count()
        );
        assert_eq!(*counts.get_or_insert_with(|| c.clone()), c, "{opts:?}");
        let wk = walk_counts(&sched, &g, &srcs[..4], 1, 6, &opts, &cancel).unwrap();
        assert_eq!(*walks.get_or_insert_with(|| wk.clone()), wk, "{opts:?}");
        let got = weighted_shortest(&sched, &g, &srcs[..4], w.clone(), &opts, &cancel).unwrap();
        assert_eq!(got, expect_w, "{opts:?}");
    }
}

#[test]
fn policy_parse_and_errors() {
    for p in Policy::ALL {
        assert_eq!(Policy::parse(p.name()).unwrap(), p);
        assert_eq!(Policy::parse(&p.name().to_uppercase()).unwrap(), p);
    }
    assert!(Policy::parse("2T2S").is_err());
    assert_eq!(Policy::default(), Policy::ManyThreadsKSources);

    let sched = Scheduler::new(2);
    let cancel = CancelToken::new();
    let g = Arc::new(InMemoryCsr::from_edges(3, &[(0, 1), (1, 2)]));
    let o = IfeOptions::default();
    assert!(shortest_lengths(&sched, &g, &[3], 0, 3, &o, &cancel).is_err());
    assert!(shortest_lengths(&sched, &g, &[0], 4, 3, &o, &cancel).is_err());
    assert!(walk_counts(&sched, &g, &[0], 0, MAX_UPPER + 1, &o, &cancel).is_err());
    let neg: Arc<[f64]> = vec![1.0, -1.0].into();
    assert!(weighted_shortest(&sched, &g, &[0], neg, &o, &cancel).is_err());
    let nan: Arc<[f64]> = vec![1.0, f64::NAN].into();
    assert!(weighted_shortest(&sched, &g, &[0], nan, &o, &cancel).is_err());
    let short: Arc<[f64]> = vec![1.0].into();
    let e = weighted_shortest(&sched, &g, &[0], short, &o, &cancel).unwrap_err();
    assert!(e.message.contains("no weight"), "{}", e.message);
    // No sources: no rows.
    assert!(shortest_lengths(&sched, &g, &[], 0, 3, &o, &cancel)
        .unwrap()
        .is_empty());
}

#[test]
fn cancel_stops_every_policy() {
    let sched = Scheduler::new(2);
    let cancel = CancelToken::new();
    cancel.cancel();
    let mut rng = Rng(3);
    let g = Arc::new(InMemoryCsr::from_edges(
        1000,
        &random_edges(&mut rng, 1000, 5000),
    ));
    for policy in Policy::ALL {
        let o = IfeOptions {
            policy,
            threads: 2,
            k: None,
            budget: None,
        };
        let e = shortest_lengths(&sched, &g, &[0, 1, 2], 0, 30, &o, &cancel).unwrap_err();
        assert_eq!(e.kind, kith_common::ErrorKind::Interrupted);
    }
}

#[test]
fn walk_counts_saturate() {
    // Two parallel self loops: 2^len walks of each length; saturates at 64.
    let sched = Scheduler::new(2);
    let g = Arc::new(InMemoryCsr::from_edges(1, &[(0, 0), (0, 0)]));
    let rows = walk_counts(
        &sched,
        &g,
        &[0],
        60,
        70,
        &IfeOptions::default(),
        &CancelToken::new(),
    )
    .unwrap();
    let counts: Vec<u64> = rows.iter().map(|r| r.count).collect();
    assert_eq!(&counts[..4], &[1 << 60, 1 << 61, 1 << 62, 1 << 63]);
    assert!(counts[4..].iter().all(|&c| c == u64::MAX));
}

#[test]
fn stats_report_fallback() {
    let sched = Scheduler::new(2);
    let g = Arc::new(InMemoryCsr::from_edges(3, &[(0, 1), (1, 2)]));
    let opts = IfeOptions {
        policy: Policy::ManyThreadsKMultiSources,
        threads: 2,
        k: None,
        budget: None,
    };
    let sink = Arc::new(CollectSink::default());
    let st = run_ife(
        &sched,
        g.clone(),
        Arc::new(WalkCounts::new(0, 2)),
        &[0, 1],
        &opts,
        &CancelToken::new(),
        sink,
    )
    .unwrap();
    assert_eq!(st.policy, Policy::ManyThreadsKSources);
    assert_eq!(st.source_morsels, 2);
    let sink = Arc::new(CollectSink::default());
    let st = run_ife(
        &sched,
        g,
        Arc::new(ShortestLengths {
            lower: 0,
            upper: 2,
            dst_mask: None,
        }),
        &[0, 1, 2],
        &opts,
        &CancelToken::new(),
        sink,
    )
    .unwrap();
    assert_eq!(st.policy, Policy::ManyThreadsKMultiSources);
    assert_eq!(st.source_morsels, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_small_graphs(
        n in 1u64..12,
        raw in proptest::collection::vec((0u64..64, 0u64..64), 0..30),
        lo in 0u32..3,
        extra in 0u32..3,
        policy in 0usize..4,
        threads in 1usize..4,
        seed in any::<u64>(),
    ) {
        let edges: Vec<(u64, u64)> = raw.iter().map(|&(a, b)| (a % n, b % n)).collect();
        let s = Shape { name: "prop", n, edges };
        let sched = Scheduler::new(3);
        let opts = IfeOptions {
            policy: Policy::ALL[policy],
            threads,
            k: None,
            budget: None,
        };
        check_shape(&sched, &s, lo, lo + extra, &opts, &mut Rng(seed | 1));
    }
}

#[test]
fn paths_trail_and_acyclic_on_cycles() {
    // A triangle with a self loop and a parallel edge: walks repeat rels,
    // trails repeat nodes only, acyclic paths neither.
    let sched = Scheduler::new(2);
    let cancel = CancelToken::new();
    let edges = [(0, 1), (1, 2), (2, 0), (0, 0), (0, 1)];
    let g = Arc::new(InMemoryCsr::from_edges(3, &edges));
    let adj = adjacency(3, &edges);
    for opts in configs() {
        for sem in [
            PathSemantics::Walk,
            PathSemantics::Trail,
            PathSemantics::Acyclic,
        ] {
            let got = walk_paths(&sched, &g, &[0, 1], 0, 6, sem, &opts, &cancel).unwrap();
            assert_eq!(got, ref_paths(&adj, &[0, 1], 0, 6, sem), "{sem:?} {opts:?}");
        }
    }
    let o = IfeOptions::default();
    let trails = walk_paths(&sched, &g, &[0], 1, 30, PathSemantics::Trail, &o, &cancel).unwrap();
    // No trail is longer than the number of rels.
    assert!(trails.iter().all(|p| p.rels.len() <= edges.len()));
    let acyclic = walk_paths(&sched, &g, &[0], 1, 30, PathSemantics::Acyclic, &o, &cancel).unwrap();
    assert!(acyclic.iter().all(|p| p.nodes.len() <= 3));
    // The self loop: a walk and a trail, never an acyclic path.
    assert!(trails.iter().any(|p| p.rels == [3]));
    assert!(!acyclic.iter().any(|p| p.rels == [3]));
    // Bounds are checked; a cancelled token stops the enumeration.
    assert!(walk_paths(&sched, &g, &[0], 3, 2, PathSemantics::Walk, &o, &cancel).is_err());
    let stop = CancelToken::new();
    stop.cancel();
    let big = Arc::new(InMemoryCsr::from_edges(1, &[(0, 0), (0, 0)]));
    let e = walk_paths(&sched, &big, &[0], 0, 40, PathSemantics::Walk, &o, &stop).unwrap_err();
    assert_eq!(e.kind, kith_common::ErrorKind::Interrupted);
}

/// Shortest paths whose intermediate nodes all pass a node mask (a node
/// predicate on the path), against walk enumeration filtered by the mask.
#[test]
fn masked_shortest_paths_match_filtered_enumeration() {
    let sched = Scheduler::new(4);
    let cancel = CancelToken::new();
    let mut rng = Rng(17);
    for s in shapes(3) {
        if s.edges.len() > 60 {
            continue;
        }
        let g = Arc::new(InMemoryCsr::from_edges(s.n, &s.edges));
        let adj = adjacency(s.n, &s.edges);
        let srcs = sources(s.n);
        let pass: Vec<bool> = (0..s.n).map(|_| rng.below(3) != 0).collect();
        let mut mask = vec![0u64; (s.n as usize).div_ceil(64)];
        for (v, ok) in pass.iter().enumerate() {
            if *ok {
                mask[v / 64] |= 1 << (v % 64);
            }
        }
        let mask: Arc<[u64]> = mask.into();
        let (lo, hi) = (1, 4);
        // Reference: the walks whose intermediate nodes pass, at the
        // smallest such length per (source, destination).
        let mut expect = Vec::new();
        for &src in &srcs {
            let mut walks = Vec::new();
            enumerate_walks(&adj, src, hi, &mut |nodes, rels| {
                let inner = &nodes[1..nodes.len().saturating_sub(1).max(1)];
                if inner.iter().all(|v| pass[*v as usize]) {
                    walks.push(PathRow {
                        src,
                        dst: *nodes.last().unwrap(),
                        nodes: nodes.to_vec(),
                        rels: rels.to_vec(),
                        cost_bits: 0,
                    });
                }
            });
            let mut dist = std::collections::HashMap::new();
            dist.insert(src, 0usize);
            for w in &walks {
                let d = dist.entry(w.dst).or_insert(w.rels.len());
                *d = (*d).min(w.rels.len());
            }
            expect.extend(
                walks
                    .into_iter()
                    .filter(|w| dist[&w.dst] == w.rels.len() && w.rels.len() as u32 >= lo),
            );
        }
        expect.sort_unstable();
        for opts in configs() {
            let mut compute = ShortestPaths::new(lo, hi, PathMode::All);
            compute.node_mask = Some(Arc::clone(&mask));
            let sink = Arc::new(CollectSink::<PathRow>::default());
            run_ife(
                &sched,
                Arc::clone(&g),
                Arc::new(compute),
                &srcs,
                &opts,
                &cancel,
                sink.clone(),
            )
            .unwrap();
            let mut got = sink.take();
            got.sort_unstable();
            assert_eq!(got, expect, "{} {opts:?}", s.name);
        }
    }
}
