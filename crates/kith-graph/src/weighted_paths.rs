//! One weighted shortest path per destination (`-[* WSHORTEST(w)]->` when
//! the query reads the path): a per-source Dijkstra that keeps each node's
//! parent edge.
//!
//! The cost-only computation ([`crate::WeightedShortest`]) relaxes whole
//! frontiers in parallel and keeps no parents; here every source runs on
//! its own worker (the source morsels of every policy), and within a
//! source the search is sequential so that the path chosen among equal
//! costs is the same for every policy and thread count: the fewest rels
//! first, then the smallest (parent, rel id). Costs are summed from the
//! source in path order, exactly as the cost-only search sums them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use kith_common::Result;
use kith_sched::CancelToken;

use crate::compute::{parent_chain_path, parent_dag_paths, PathMode, PathRow};
use crate::engine::{flush_if_full, Growth, Sink};
use crate::graph::{mask_has, Graph};
use crate::paths::SourceSearch;
use crate::weights::{weight_error, weight_ok, RelWeights};

/// One weighted shortest path from each source to every node it reaches.
pub struct WeightedPaths {
    weights: RelWeights,
    /// One path per destination, or every path of the smallest cost
    /// (`ALL WSHORTEST`, positive weights only).
    pub mode: PathMode,
    /// 0: the source's empty path is a row; 1: it is not.
    pub lower: u32,
    /// Bit `v` set: a path to `v` is output; `None`: every reached node.
    pub dst_mask: Option<Arc<[u64]>>,
    /// Bit `v` set: `v` may be an intermediate node (a predicate on the
    /// path's nodes); a node outside it is reached but never extended
    /// from. `None`: every node.
    pub node_mask: Option<Arc<[u64]>>,
    /// Checked every [`CANCEL_EVERY`] settled nodes.
    pub cancel: Option<CancelToken>,
}

const CANCEL_EVERY: u32 = 4096;

impl WeightedPaths {
    /// Weights indexed by rel id: finite and non-negative, as
    /// [`WeightedShortest::new`] checks.
    pub fn new(
        weights: impl Into<RelWeights>,
        lower: u32,
        mode: PathMode,
    ) -> Result<WeightedPaths> {
        Ok(WeightedPaths {
            weights: weights.into(),
            mode,
            lower,
            dst_mask: None,
            node_mask: None,
            cancel: None,
        })
    }

    /// The paths from `src`, handed to `sink` as they pile up; the heap
    /// is charged to `growth` as it grows.
    fn run<G: Graph>(
        &self,
        g: &G,
        scratch: &mut G::Scratch,
        src: u64,
        out: &mut Vec<PathRow>,
        sink: &dyn Sink<PathRow>,
        growth: Growth<'_>,
    ) -> Result<()> {
        if self.mode == PathMode::All {
            let s = search_all(
                &self.weights,
                g,
                scratch,
                src,
                self.node_mask.as_deref(),
                self.cancel.as_ref(),
                growth,
            )?;
            for &v in &s.order {
                if (v == src && self.lower > 0)
                    || self.dst_mask.as_ref().is_some_and(|m| !mask_has(m, v))
                {
                    continue;
                }
                let (mut nodes, mut rels) = (vec![v], Vec::new());
                let mut parents_of = |x: u64, buf: &mut Vec<(u64, u64)>| {
                    buf.clear();
                    buf.extend_from_slice(&s.parents[x as usize]);
                };
                let first = out.len();
                parent_dag_paths(src, v, &mut parents_of, &mut nodes, &mut rels, out);
                let cost = s.cost[v as usize].to_bits();
                out[first..].iter_mut().for_each(|p| p.cost_bits = cost);
                flush_if_full(out, sink)?;
            }
            return Ok(());
        }
        let n = g.num_nodes() as usize;
        if src as usize >= n {
            return Ok(());
        }
        // Per node: the best (cost bits, rels) so far and its parent edge.
        // Non-negative costs (+0.0 and up, -0.0 normalised) order like
        // their bits.
        const UNSEEN: (u64, u32) = (u64::MAX, u32::MAX);
        let mut best = vec![UNSEEN; n];
        let mut parent = vec![(u64::MAX, u64::MAX); n];
        let mut settled = vec![false; n];
        let mut heap = BinaryHeap::new();
        best[src as usize] = (0f64.to_bits(), 0);
        heap.push(Reverse((0f64.to_bits(), 0u32, src)));
        let mut steps = 0u32;
        let mut bad_weight = None;
        let mut held = StepCharge::default();
        while let Some(Reverse((c, h, u))) = heap.pop() {
            if settled[u as usize] || best[u as usize] != (c, h) {
                continue;
            }
            settled[u as usize] = true;
            if u != src && self.node_mask.as_ref().is_some_and(|m| !mask_has(m, u)) {
                continue;
            }
            let cost = f64::from_bits(c);
            g.weighted_neighbors(u, scratch, &self.weights, |w, r, weight| {
                if !weight_ok(weight, false) {
                    bad_weight.get_or_insert((r, weight));
                    return;
                }
                let wi = w as usize;
                if wi >= n || settled[wi] {
                    return;
                }
                let cand = ((cost + weight + 0.0).to_bits(), h + 1);
                let (cur, cur_parent) = (best[wi], parent[wi]);
                if cand < cur || (cand == cur && (u, r) < cur_parent) {
                    best[wi] = cand;
                    parent[wi] = (u, r);
                    if cand != cur {
                        heap.push(Reverse((cand.0, cand.1, w)));
                    }
                }
            })?;
            if let Some((r, weight)) = bad_weight {
                return Err(weight_error(r, weight, false));
            }
            held.charge(
                growth,
                heap.capacity() * size_of::<Reverse<(u64, u32, u64)>>(),
            )?;
            steps += 1;
            if steps == CANCEL_EVERY {
                steps = 0;
                if let Some(c) = &self.cancel {
                    c.check()?;
                }
            }
        }
        for v in 0..n as u64 {
            if !settled[v as usize] || (v == src && self.lower > 0) {
                continue;
            }
            if self.dst_mask.as_ref().is_some_and(|m| !mask_has(m, v)) {
                continue;
            }
            let hops = best[v as usize].1 as usize;
            let mut path = parent_chain_path(src, v, hops, |x| Ok(parent[x as usize]))?;
            path.cost_bits = best[v as usize].0;
            out.push(path);
            flush_if_full(out, sink)?;
        }
        Ok(())
    }
}

/// Charges a search's growing heap and lists to its [`Growth`] each time
/// they have grown by [`StepCharge::STEP`] bytes since the last charge, so
/// a search that outgrows the memory limit fails before it takes much more.
#[derive(Default)]
struct StepCharge {
    charged: usize,
}

impl StepCharge {
    const STEP: usize = 1 << 20;

    #[inline]
    fn charge(&mut self, growth: Growth<'_>, bytes: usize) -> Result<()> {
        if bytes >= self.charged + Self::STEP {
            growth.charge_to(bytes as u64)?;
            self.charged = bytes;
        }
        Ok(())
    }
}

/// Bytes per node of an [`AllSearch`] before any parent edge: cost, count,
/// settling order, settled flag and an empty parent list.
const ALL_SEARCH_BYTES: u64 = 49;

/// A Dijkstra from one source keeping every parent edge of the smallest
/// cost, and the number of cheapest paths per node.
struct AllSearch {
    /// Settled nodes in settling order (ascending cost).
    order: Vec<u64>,
    cost: Vec<f64>,
    /// Sorted parent edges `(node, rel)` of each settled node.
    parents: Vec<Vec<(u64, u64)>>,
    count: Vec<u64>,
}

fn search_all<G: Graph>(
    weights: &RelWeights,
    g: &G,
    scratch: &mut G::Scratch,
    src: u64,
    node_mask: Option<&[u64]>,
    cancel: Option<&CancelToken>,
    growth: Growth<'_>,
) -> Result<AllSearch> {
    let n = g.num_nodes() as usize;
    let mut s = AllSearch {
        order: Vec::new(),
        cost: vec![f64::INFINITY; n],
        parents: vec![Vec::new(); n],
        count: vec![0; n],
    };
    if src as usize >= n {
        return Ok(s);
    }
    let mut settled = vec![false; n];
    let mut heap = BinaryHeap::new();
    s.cost[src as usize] = 0.0;
    heap.push(Reverse((0f64.to_bits(), src)));
    let mut bad_weight = None;
    // Parent edges beyond the lists' heads, and the heap.
    let (mut parent_edges, mut held) = (0usize, StepCharge::default());
    while let Some(Reverse((c, u))) = heap.pop() {
        let ui = u as usize;
        if settled[ui] || s.cost[ui].to_bits() != c {
            continue;
        }
        settled[ui] = true;
        s.order.push(u);
        // Positive weights: every parent was settled before `u`.
        s.parents[ui].sort_unstable();
        s.count[ui] = if u == src {
            1
        } else {
            s.parents[ui]
                .iter()
                .fold(0u64, |a, (p, _)| a.saturating_add(s.count[*p as usize]))
        };
        if u != src && node_mask.is_some_and(|m| !mask_has(m, u)) {
            continue;
        }
        let cost = s.cost[ui];
        let (costs, parents) = (&mut s.cost, &mut s.parents);
        g.weighted_neighbors(u, scratch, weights, |w, r, weight| {
            if !weight_ok(weight, true) {
                bad_weight.get_or_insert((r, weight));
                return;
            }
            let wi = w as usize;
            if wi >= n || settled[wi] {
                return;
            }
            let cand = cost + weight;
            if cand < costs[wi] {
                costs[wi] = cand;
                parents[wi].clear();
                parents[wi].push((u, r));
                heap.push(Reverse((cand.to_bits(), w)));
                parent_edges += 1;
            } else if cand == costs[wi] {
                parents[wi].push((u, r));
                parent_edges += 1;
            }
        })?;
        if let Some((r, weight)) = bad_weight {
            return Err(weight_error(r, weight, true));
        }
        // An edge a cheaper one replaced stays in its list's capacity.
        let bytes = parent_edges * size_of::<(u64, u64)>()
            + heap.capacity() * size_of::<Reverse<(u64, u64)>>();
        held.charge(growth, bytes)?;
        if s.order.len().is_multiple_of(CANCEL_EVERY as usize) {
            if let Some(c) = cancel {
                c.check()?;
            }
        }
    }
    Ok(s)
}

/// The number of cheapest paths from each source to each node it reaches
/// (`ALL WSHORTEST` counted, without the paths).
pub struct AllWeightedCounts {
    weights: RelWeights,
    pub lower: u32,
    pub dst_mask: Option<Arc<[u64]>>,
    pub cancel: Option<CancelToken>,
}

impl AllWeightedCounts {
    pub fn new(weights: impl Into<RelWeights>, lower: u32) -> Result<AllWeightedCounts> {
        Ok(AllWeightedCounts {
            weights: weights.into(),
            lower,
            dst_mask: None,
            cancel: None,
        })
    }
}

/// A destination's smallest cost and how many paths have it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostCountRow {
    pub src: u64,
    pub dst: u64,
    pub cost: f64,
    pub count: u64,
}

impl SourceSearch for AllWeightedCounts {
    type Row = CostCountRow;

    fn search<G: Graph>(
        &self,
        g: &G,
        scratch: &mut G::Scratch,
        src: u64,
        out: &mut Vec<CostCountRow>,
        _sink: &dyn Sink<CostCountRow>,
        growth: Growth<'_>,
    ) -> Result<()> {
        let cancel = self.cancel.as_ref();
        let s = search_all(&self.weights, g, scratch, src, None, cancel, growth)?;
        for &d in &s.order {
            if (d == src && self.lower > 0)
                || self.dst_mask.as_ref().is_some_and(|m| !mask_has(m, d))
            {
                continue;
            }
            out.push(CostCountRow {
                src,
                dst: d,
                cost: s.cost[d as usize],
                count: s.count[d as usize],
            });
        }
        Ok(())
    }

    fn scratch_bytes(&self, n: u64) -> u64 {
        ALL_SEARCH_BYTES * n
    }
}

impl SourceSearch for WeightedPaths {
    type Row = PathRow;

    fn search<G: Graph>(
        &self,
        g: &G,
        scratch: &mut G::Scratch,
        src: u64,
        out: &mut Vec<PathRow>,
        sink: &dyn Sink<PathRow>,
        growth: Growth<'_>,
    ) -> Result<()> {
        self.run(g, scratch, src, out, sink, growth)
    }

    fn scratch_bytes(&self, n: u64) -> u64 {
        match self.mode {
            // Best (cost, rels), parent edge and settled flag per node.
            PathMode::One => 33 * n,
            PathMode::All => ALL_SEARCH_BYTES * n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{run_ife, CollectSink, IfeOptions, Policy};
    use crate::graph::InMemoryCsr;
    use kith_sched::Scheduler;

    fn paths(edges: &[(u64, u64)], weights: &[f64], n: u64, src: u64) -> Vec<(u64, Vec<u64>, f64)> {
        try_paths(edges, weights, n, src, PathMode::One).unwrap()
    }

    fn try_paths(
        edges: &[(u64, u64)],
        weights: &[f64],
        n: u64,
        src: u64,
        mode: PathMode,
    ) -> Result<Vec<(u64, Vec<u64>, f64)>> {
        let g = Arc::new(InMemoryCsr::from_edges(n, edges));
        let sched = Scheduler::new(2);
        let mut rows = Vec::new();
        for policy in [Policy::OneThreadOneSource, Policy::ManyThreadsKSources] {
            let sink = Arc::new(CollectSink::<PathRow>::default());
            let opts = IfeOptions {
                policy,
                threads: 2,
                k: None,
                budget: None,
            };
            run_ife(
                &sched,
                Arc::clone(&g),
                Arc::new(WeightedPaths::new(Arc::<[f64]>::from(weights), 1, mode)?),
                &[src],
                &opts,
                &CancelToken::new(),
                sink.clone(),
            )?;
            let mut got: Vec<_> = sink
                .take()
                .into_iter()
                .map(|p| {
                    // The search's cost is the rels' weights summed in order.
                    let cost = f64::from_bits(p.cost_bits);
                    assert_eq!(cost, RelWeights::from(Arc::from(weights)).cost(&p.rels));
                    (p.dst, p.nodes.clone(), cost)
                })
                .collect();
            got.sort_by_key(|r| r.0);
            if !rows.is_empty() {
                assert_eq!(rows, got, "policies disagree");
            }
            rows = got;
        }
        Ok(rows)
    }

    #[test]
    fn cheapest_then_fewest_rels_then_smallest_parent() {
        // 0->1 (5), 0->2 (1), 2->1 (1), 0->3 (2), 3->1 (0): node 1 costs 2
        // via 0-2-1 (2 rels) or 0-3-1 (2 rels): the smaller parent (2) wins.
        let edges = [(0, 1), (0, 2), (2, 1), (0, 3), (3, 1), (1, 4)];
        let w = [5.0, 1.0, 1.0, 2.0, 0.0, 0.5];
        let got = paths(&edges, &w, 6, 0);
        assert_eq!(
            got,
            vec![
                (1, vec![0, 2, 1], 2.0),
                (2, vec![0, 2], 1.0),
                (3, vec![0, 3], 2.0),
                (4, vec![0, 2, 1, 4], 2.5),
            ]
        );
        // Zero weights: equal cost, fewer rels wins (0-1 direct at cost 0
        // against 0-2-1 at cost 0).
        let got = paths(&[(0, 2), (2, 1), (0, 1)], &[0.0, 0.0, 0.0], 3, 0);
        assert_eq!(got[0], (1, vec![0, 1], 0.0));
        // Weights are checked as they are read: a bad one reached fails
        // the search, one never reached does not.
        let e = try_paths(&[(0, 1), (1, 2)], &[1.0, -1.0], 3, 0, PathMode::One).unwrap_err();
        assert!(e.message.contains("non-negative"), "{e}");
        let e = try_paths(&[(0, 1), (1, 2)], &[1.0, 0.0], 3, 0, PathMode::All).unwrap_err();
        assert!(e.message.contains("positive weights"), "{e}");
        assert_eq!(
            try_paths(&[(0, 1), (2, 0)], &[1.0, -1.0], 3, 0, PathMode::One).unwrap(),
            vec![(1, vec![0, 1], 1.0)]
        );
    }
}
