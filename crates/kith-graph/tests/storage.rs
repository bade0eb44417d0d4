//! IFE over a CSR stored through kith-storage equals the in-memory CSR.

mod common;

use std::sync::Arc;

use common::{random_edges, Rng};
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{LogicalType, ValueVector, VectorData};
use kith_graph::*;
use kith_pager::{Pager, PagerConfig};
use kith_sched::{CancelToken, Scheduler};
use kith_storage::{ColumnChunk, CsrGroup, CsrIndex};

fn u64_chunk(pager: &Pager, vals: &[u64]) -> ColumnChunk {
    let mut v = ValueVector::new(LogicalType::UInt64, vals.len());
    if let VectorData::U64(d) = &mut v.data {
        d.copy_from_slice(vals);
    }
    ColumnChunk::write(pager, &v, 0, vals.len()).unwrap()
}

fn f64_chunk(pager: &Pager, vals: &[f64]) -> ColumnChunk {
    let mut v = ValueVector::new(LogicalType::Double, vals.len());
    if let VectorData::F64(d) = &mut v.data {
        d.copy_from_slice(vals);
    }
    ColumnChunk::write(pager, &v, 0, vals.len()).unwrap()
}

/// Writes `mem` as stored CSR groups (group-local offsets), with
/// `weights` (by rel id) as the first rel property in CSR order.
fn store(pager: &Pager, mem: &InMemoryCsr, weights: &[f64]) -> CsrIndex {
    let n = mem.num_nodes();
    let mut groups = Vec::new();
    let mut first = 0;
    while first < n {
        let cnt = NODE_GROUP_SIZE.min(n - first) as usize;
        let f = first as usize;
        let base = mem.offsets[f];
        let end = mem.offsets[f + cnt];
        let offs: Vec<u64> = mem.offsets[f..=f + cnt].iter().map(|o| o - base).collect();
        let (b, e) = (base as usize, end as usize);
        groups.push(CsrGroup {
            num_nodes: cnt as u64,
            num_rels: end - base,
            offsets: u64_chunk(pager, &offs),
            neighbors: u64_chunk(pager, &mem.nbrs[b..e]),
            rel_ids: u64_chunk(pager, &mem.rel_ids[b..e]),
            properties: vec![f64_chunk(
                pager,
                &mem.rel_ids[b..e]
                    .iter()
                    .map(|&r| weights[r as usize])
                    .collect::<Vec<_>>(),
            )],
            appended: None,
            deleted: None,
        });
        first += cnt as u64;
    }
    CsrIndex { groups }
}

#[test]
fn storage_csr_matches_in_memory() {
    let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
    let mut rng = Rng(11);
    // More than one node group, so the group/local split is exercised.
    let n = NODE_GROUP_SIZE + 3000;
    let edges = random_edges(&mut rng, n, 3 * n as usize);
    let mem = Arc::new(InMemoryCsr::from_edges(n, &edges));
    let weights: Vec<f64> = (0..edges.len()).map(|r| (r % 7) as f64 * 0.25).collect();
    let csr = store(&pager, &mem, &weights);
    assert!(csr.groups.len() >= 2);
    let st = Arc::new(StorageCsr::new(&pager, &csr).unwrap());
    assert_eq!(st.num_nodes(), n);
    assert_eq!(st.num_edges(), edges.len() as u64);
    // Neighbour scans are identical node by node.
    let mut scratch = StorageScratch::default();
    for u in (0..n)
        .step_by(97)
        .chain([n - 1, NODE_GROUP_SIZE - 1, NODE_GROUP_SIZE])
    {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        mem.neighbors(u, &mut (), |w, r| a.push((w, r)));
        st.neighbors(u, &mut scratch, |w, r| b.push((w, r)));
        assert_eq!(a, b, "node {u}");
        // Without rel ids (no rel ids decoded), and through a rel mask
        // (which needs them): the same neighbours.
        let mut c = Vec::new();
        st.neighbor_nodes(u, &mut scratch, |w| c.push(w));
        assert!(c.iter().eq(a.iter().map(|x| &x.0)), "node {u}");
        let odd: Arc<[u64]> = vec![0xAAAA_AAAA_AAAA_AAAAu64; edges.len().div_ceil(64)].into();
        let masked = StorageCsr::new(&pager, &csr).unwrap().with_rel_mask(odd);
        let mut d = Vec::new();
        masked.neighbor_nodes(u, &mut scratch, |w| d.push(w));
        let want = a.iter().filter(|x| x.1 % 2 == 1).map(|x| &x.0);
        assert!(d.iter().eq(want), "node {u} masked");
    }
    // Degrees, and bottom-up steps over blocks of 64 nodes (offsets decoded
    // once per block), agree with the in-memory graph node by node, with
    // and without a rel mask (which takes the per-node path).
    let odd: Arc<[u64]> = vec![0xAAAA_AAAA_AAAA_AAAAu64; edges.len().div_ceil(64)].into();
    let masked = StorageCsr::new(&pager, &csr).unwrap().with_rel_mask(odd);
    let in_frontier = |w: u64| w.is_multiple_of(3);
    for block in (0..n.div_ceil(64)).step_by(5).chain([NODE_GROUP_SIZE / 64]) {
        let nodes: Vec<u64> = (block * 64..(block * 64 + 64).min(n))
            .filter(|x| x % 4 != 1)
            .collect();
        for &u in &nodes {
            assert_eq!(
                st.degree(u, &mut scratch),
                mem.degree(u, &mut ()),
                "degree {u}"
            );
        }
        let mut want = Vec::new();
        mem.find_neighbors(&nodes, &mut (), in_frontier, |x| want.push(x));
        let mut got = Vec::new();
        st.find_neighbors(&nodes, &mut scratch, in_frontier, |x| got.push(x));
        assert_eq!(got, want, "block {block}");
        let by_node: Vec<u64> = nodes
            .iter()
            .copied()
            .filter(|&x| {
                let mut hit = false;
                mem.neighbors(x, &mut (), |w, r| hit |= r % 2 == 1 && in_frontier(w));
                hit
            })
            .collect();
        let mut got = Vec::new();
        masked.find_neighbors(&nodes, &mut scratch, in_frontier, |x| got.push(x));
        assert_eq!(got, by_node, "block {block} masked");
    }
    // Weights read beside the neighbours equal those looked up by rel id.
    let dense = RelWeights::from(Arc::<[f64]>::from(weights.clone()));
    let weighted =
        Arc::new(StorageCsr::with_weights(&pager, &csr, 0, LogicalType::Double).unwrap());
    for u in (0..n).step_by(89).chain([n - 1, NODE_GROUP_SIZE]) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        mem.weighted_neighbors(u, &mut (), &dense, |w, r, x| a.push((w, r, x)))
            .unwrap();
        weighted
            .weighted_neighbors(u, &mut scratch, &RelWeights::Pinned, |w, r, x| {
                b.push((w, r, x))
            })
            .unwrap();
        assert_eq!(a, b, "node {u}");
    }
    // A graph that pinned no weights has none to give.
    let no_weights = st.weighted_neighbors(0, &mut scratch, &RelWeights::Pinned, |_, _, _| {});
    assert!(edges.iter().all(|e| e.0 != 0) || no_weights.is_err());
    let sched = Scheduler::new(2);
    let cancel = CancelToken::new();
    let srcs = [0, 5, NODE_GROUP_SIZE + 1, n - 1];
    let turned: Vec<(u64, u64)> = edges.iter().map(|&(a, b)| (b, a)).collect();
    let mem_back = InMemoryCsr::from_edges(n, &turned);
    let back = Arc::new(
        StorageCsr::new(&pager, &store(&pager, &mem_back, &weights))
            .unwrap()
            .with_num_nodes(n),
    );
    for policy in Policy::ALL {
        let o = IfeOptions {
            policy,
            threads: 2,
            k: None,
            budget: None,
        };
        let lengths = shortest_lengths(&sched, &mem, &srcs, 0, 30, &o, &cancel).unwrap();
        assert_eq!(
            shortest_lengths(&sched, &st, &srcs, 0, 30, &o, &cancel).unwrap(),
            lengths
        );
        // Dense levels bottom-up over the stored reverse CSR.
        assert_eq!(
            shortest_lengths_pulling(&sched, &st, &back, &srcs, 0, 30, &o, &cancel).unwrap(),
            lengths
        );
        assert_eq!(
            walk_counts(&sched, &st, &srcs[..2], 1, 3, &o, &cancel).unwrap(),
            walk_counts(&sched, &mem, &srcs[..2], 1, 3, &o, &cancel).unwrap()
        );
        assert_eq!(
            weighted_shortest(&sched, &weighted, &srcs, RelWeights::Pinned, &o, &cancel).unwrap(),
            weighted_shortest(&sched, &mem, &srcs, dense.clone(), &o, &cancel).unwrap()
        );
    }
    // A wider node table: the extra nodes have no rels.
    let wide = Arc::new(
        StorageCsr::new(&pager, &csr)
            .unwrap()
            .with_num_nodes(n + 10),
    );
    let rows = shortest_lengths(
        &sched,
        &wide,
        &[n + 5],
        0,
        3,
        &IfeOptions::default(),
        &cancel,
    )
    .unwrap();
    assert_eq!(
        rows,
        vec![LenRow {
            src: n + 5,
            dst: n + 5,
            len: 0,
            count: 1
        }]
    );
}
