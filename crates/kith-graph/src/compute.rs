//! The recursive computations (EdgeCompute plus auxiliary state) and their
//! convenience entry points.

use std::ops::Range;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use kith_common::{Error, Result};
use kith_sched::{CancelToken, Scheduler};

use crate::bits::{saturating_add, zeroed_u16s, zeroed_u64s, DenseBits};
use crate::distance::HopBound;
use crate::engine::{
    run_ife_with_reverse, CollectSink, Compute, IfeOptions, Nodes, RunStats, Visit,
};
use crate::graph::Graph;
use crate::weights::{weight_error, weight_ok, RelWeights};

/// Largest upper bound for level-indexed computations (levels are kept as
/// `u16` per node, 0 meaning unvisited).
pub const MAX_UPPER: u32 = u16::MAX as u32 - 2;

/// One `(source, destination, length, count)` result. `count` is 1 for
/// shortest lengths, the number of shortest paths for all-shortest counts,
/// and the number of walks of exactly `len` rels for walk counts
/// (saturating at `u64::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LenRow {
    pub src: u64,
    pub dst: u64,
    pub len: u32,
    pub count: u64,
}

/// A weighted shortest-path distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostRow {
    pub src: u64,
    pub dst: u64,
    pub cost: f64,
}

/// A path: `nodes[0] == src`, `nodes.last() == dst`, `rels[i]` joins
/// `nodes[i]` and `nodes[i + 1]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathRow {
    pub src: u64,
    pub dst: u64,
    pub nodes: Vec<u64>,
    pub rels: Vec<u64>,
    /// A weighted search's cost of the path (`f64` bits, summed from the
    /// source as the search sums it); 0 for the other searches.
    pub cost_bits: u64,
}

pub(crate) fn check_bounds(lower: u32, upper: u32) -> Result<()> {
    if lower > upper {
        return Err(Error::semantic(format!(
            "lower bound {lower} is greater than upper bound {upper}"
        )));
    }
    if upper > MAX_UPPER {
        return Err(Error::semantic(format!(
            "upper bound {upper} exceeds the maximum of {MAX_UPPER}"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Stopping a single-source search once every wanted destination is reached.

/// The wanted destinations (a destination mask) a single-source search has
/// not reached yet; a search with a mask is complete when none is left,
/// since a shortest length (and every shortest path) is final once reached.
pub struct DstCountdown {
    left: AtomicU64,
}

impl DstCountdown {
    /// `u64::MAX` left without a mask (never complete). The source counts
    /// as reached: its level is set before the search.
    fn new(mask: Option<&[u64]>, src: u64) -> DstCountdown {
        let left = match mask {
            None => u64::MAX,
            Some(m) => {
                let all: u64 = m.iter().map(|w| w.count_ones() as u64).sum();
                all - crate::graph::mask_has(m, src) as u64
            }
        };
        DstCountdown {
            left: AtomicU64::new(left),
        }
    }

    /// Called once per node, when the search first reaches it.
    #[inline]
    fn reached(&self, mask: Option<&[u64]>, w: u64) {
        if let Some(m) = mask {
            if crate::graph::mask_has(m, w) {
                self.left.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    fn complete(&self) -> bool {
        self.left.load(Ordering::Relaxed) == 0
    }
}

// ---------------------------------------------------------------------------
// Shortest path lengths (BFS levels), single source or 64 bit lanes.

/// Shortest path lengths in `lower..=upper` from each source (BFS levels).
pub struct ShortestLengths {
    pub lower: u32,
    pub upper: u32,
    /// The destinations wanted: a single-source search stops once it has
    /// reached them all (rows for other nodes may still be emitted).
    pub dst_mask: Option<Arc<[u64]>>,
}

pub enum LengthsAux {
    One {
        visited: DenseBits,
        wanted: DstCountdown,
    },
    /// Per node: lanes in the current / next frontier (by level parity) and
    /// lanes that reached it. 24 bytes per node per source morsel.
    Lanes {
        cur: [Vec<AtomicU64>; 2],
        visited: Vec<AtomicU64>,
    },
}

/// The lane state of a multi-source morsel over `n` nodes: the lanes
/// reached at the current and next level per node (`srcs[lane]` at level
/// 0) and the lanes that reached each node.
fn lane_frontiers(n: u64, srcs: &[u64]) -> ([Vec<AtomicU64>; 2], Vec<AtomicU64>) {
    let cur = [zeroed_u64s(n as usize), zeroed_u64s(n as usize)];
    let visited = zeroed_u64s(n as usize);
    for (lane, &s) in srcs.iter().enumerate() {
        cur[0][s as usize].fetch_or(1 << lane, Ordering::Relaxed);
        visited[s as usize].fetch_or(1 << lane, Ordering::Relaxed);
    }
    (cur, visited)
}

impl Compute for ShortestLengths {
    type Aux = LengthsAux;
    type Row = LenRow;

    fn max_lanes(&self) -> usize {
        64
    }

    fn upper(&self) -> u32 {
        self.upper
    }

    fn complete(&self, aux: &LengthsAux) -> bool {
        matches!(aux, LengthsAux::One { wanted, .. } if wanted.complete())
    }

    fn new_aux(&self, n: u64, srcs: &[u64], _workers: usize) -> LengthsAux {
        if srcs.len() == 1 {
            let visited = DenseBits::new(n);
            visited.set(srcs[0]);
            let wanted = DstCountdown::new(self.dst_mask.as_deref(), srcs[0]);
            return LengthsAux::One { visited, wanted };
        }
        let (cur, visited) = lane_frontiers(n, srcs);
        LengthsAux::Lanes { cur, visited }
    }

    fn state_bytes(&self, n: u64, lanes: usize) -> u64 {
        match lanes {
            // The visited bit set.
            1 => n.div_ceil(64) * 8,
            // Two frontier lanes and the visited lanes per node.
            _ => 24 * n,
        }
    }

    fn process<G: Graph>(
        &self,
        aux: &LengthsAux,
        v: &mut Visit<'_, G, LenRow>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        let (iter, emit, extend) = (v.iter, v.iter >= self.lower, v.extend);
        let next = v.next;
        match aux {
            LengthsAux::One { visited, wanted } => {
                let src = v.srcs[0];
                let mask = self.dst_mask.as_deref();
                nodes.for_each(|u| {
                    if emit {
                        v.out.push(LenRow {
                            src,
                            dst: u,
                            len: iter,
                            count: 1,
                        });
                    }
                    if extend {
                        v.graph.neighbor_nodes(u, v.scratch, |w| {
                            if !visited.get(w) && visited.insert(w) {
                                wanted.reached(mask, w);
                                next.set(w);
                            }
                        });
                    }
                    Ok(())
                })
            }
            LengthsAux::Lanes { cur, visited } => {
                let (this, other) = (&cur[(iter & 1) as usize], &cur[((iter + 1) & 1) as usize]);
                nodes.for_each(|u| {
                    // An emit-only step (the last level, or the emit of a
                    // bottom-up level, whose pulls read these lanes) keeps
                    // them: see `pulled_level_done`.
                    let lanes = match extend {
                        true => this[u as usize].swap(0, Ordering::Relaxed),
                        false => this[u as usize].load(Ordering::Relaxed),
                    };
                    if emit {
                        let mut l = lanes;
                        while l != 0 {
                            v.out.push(LenRow {
                                src: v.srcs[l.trailing_zeros() as usize],
                                dst: u,
                                len: iter,
                                count: 1,
                            });
                            l &= l - 1;
                        }
                    }
                    if extend && lanes != 0 {
                        v.graph.neighbor_nodes(u, v.scratch, |w| {
                            let vis = &visited[w as usize];
                            let new = lanes & !vis.load(Ordering::Relaxed);
                            if new != 0 {
                                let new = new & !vis.fetch_or(new, Ordering::Relaxed);
                                if new != 0 {
                                    other[w as usize].fetch_or(new, Ordering::Relaxed);
                                    next.set(w);
                                }
                            }
                        });
                    }
                    Ok(())
                })
            }
        }
    }

    fn pulls(&self, _aux: &LengthsAux) -> bool {
        true
    }

    fn pulled_level_done(&self, aux: &LengthsAux, iter: u32) {
        if let LengthsAux::Lanes { cur, .. } = aux {
            for lanes in cur[(iter & 1) as usize].iter() {
                lanes.store(0, Ordering::Relaxed);
            }
        }
    }

    fn pull<G: Graph>(
        &self,
        aux: &LengthsAux,
        v: &mut Visit<'_, G, LenRow>,
        reverse: &G,
        frontier: &DenseBits,
        range: Range<u64>,
    ) -> Result<()> {
        let (visited, wanted) = match aux {
            LengthsAux::One { visited, wanted } => (visited, wanted),
            LengthsAux::Lanes { cur, visited } => {
                return pull_lanes(cur, visited, v, reverse, range);
            }
        };
        let mask = self.dst_mask.as_deref();
        let end = range.end.min(visited.len());
        let next = v.next;
        let mut block = [0u64; 64];
        for w in (range.start / 64)..end.div_ceil(64) {
            let mut todo = !visited.word(w as usize);
            let mut k = 0;
            while todo != 0 {
                let x = w * 64 + u64::from(todo.trailing_zeros());
                todo &= todo - 1;
                if x >= range.start && x < end {
                    block[k] = x;
                    k += 1;
                }
            }
            // The range is the worker's own: its words get one update each.
            let mut found = 0u64;
            reverse.find_neighbors(
                &block[..k],
                v.scratch,
                |p| frontier.get(p),
                |x| {
                    found |= 1 << (x % 64);
                    wanted.reached(mask, x);
                },
            );
            visited.or_word(w as usize, found);
            next.or_word(w as usize, found);
        }
        Ok(())
    }
}

/// A bottom-up level of a lane morsel over the nodes of `range`: each node
/// not yet reached in every lane ORs the current lanes of its in-neighbours
/// (stopping once every lane is reached) and joins the next level in the
/// lanes new to it. The range is the worker's own, so its nodes' lanes are
/// stored without read-modify-writes, and its frontier words get one
/// update each.
fn pull_lanes<G: Graph>(
    cur: &[Vec<AtomicU64>; 2],
    visited: &[AtomicU64],
    v: &mut Visit<'_, G, LenRow>,
    reverse: &G,
    range: Range<u64>,
) -> Result<()> {
    let iter = v.iter;
    let (this, other) = (&cur[(iter & 1) as usize], &cur[((iter + 1) & 1) as usize]);
    let full = match v.srcs.len() {
        n if n >= 64 => u64::MAX,
        n => (1u64 << n) - 1,
    };
    let end = range.end.min(visited.len() as u64);
    let mut x = range.start;
    while x < end {
        let word_end = ((x / 64 + 1) * 64).min(end);
        let mut found = 0u64;
        for y in x..word_end {
            let vis = visited[y as usize].load(Ordering::Relaxed);
            if vis & full == full {
                continue;
            }
            let mut acc = 0u64;
            reverse.find_neighbor(y, v.scratch, |p| {
                acc |= this
                    .get(p as usize)
                    .map_or(0, |l| l.load(Ordering::Relaxed));
                (acc | vis) & full == full
            });
            let new = acc & !vis & full;
            if new != 0 {
                visited[y as usize].store(vis | new, Ordering::Relaxed);
                other[y as usize].store(new, Ordering::Relaxed);
                found |= 1 << (y % 64);
            }
        }
        v.next.or_word((x / 64) as usize, found);
        x = word_end;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// All-shortest-path counts.

/// The number of shortest paths to each destination at length `lower..=upper`.
pub struct AllShortestCounts {
    pub lower: u32,
    pub upper: u32,
    /// The destinations wanted (see [`ShortestLengths::dst_mask`]).
    pub dst_mask: Option<Arc<[u64]>>,
}

pub struct CountsAux {
    /// Level + 1 per node; 0 = unvisited.
    level: Vec<AtomicU16>,
    count: Vec<AtomicU64>,
    wanted: DstCountdown,
}

/// Marks `w` as reached at level `lvl1 - 1` (stored + 1) unless reached at
/// an earlier level; true when `w` is at exactly that level. `first` is
/// called once per node, by the claim that set its level.
#[inline]
fn claim_level(level: &AtomicU16, lvl1: u16, first: impl FnOnce()) -> bool {
    let l = level.load(Ordering::Relaxed);
    if l == 0 {
        match level.compare_exchange(0, lvl1, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                first();
                true
            }
            Err(cur) => cur == lvl1,
        }
    } else {
        l == lvl1
    }
}

impl Compute for AllShortestCounts {
    type Aux = CountsAux;
    type Row = LenRow;

    fn upper(&self) -> u32 {
        self.upper
    }

    fn new_aux(&self, n: u64, srcs: &[u64], _workers: usize) -> CountsAux {
        let level = zeroed_u16s(n as usize);
        let count = zeroed_u64s(n as usize);
        level[srcs[0] as usize].store(1, Ordering::Relaxed);
        count[srcs[0] as usize].store(1, Ordering::Relaxed);
        let wanted = DstCountdown::new(self.dst_mask.as_deref(), srcs[0]);
        CountsAux {
            level,
            count,
            wanted,
        }
    }

    fn state_bytes(&self, n: u64, _lanes: usize) -> u64 {
        // A level (u16) and a path count (u64) per node.
        10 * n
    }

    fn complete(&self, aux: &CountsAux) -> bool {
        aux.wanted.complete()
    }

    fn process<G: Graph>(
        &self,
        aux: &CountsAux,
        v: &mut Visit<'_, G, LenRow>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        let (iter, emit, extend, next, src) =
            (v.iter, v.iter >= self.lower, v.extend, v.next, v.srcs[0]);
        let lvl1 = (iter + 2) as u16;
        let mask = self.dst_mask.as_deref();
        nodes.for_each(|u| {
            let c = aux.count[u as usize].load(Ordering::Relaxed);
            if emit {
                v.out.push(LenRow {
                    src,
                    dst: u,
                    len: iter,
                    count: c,
                });
            }
            if extend {
                v.graph.neighbor_nodes(u, v.scratch, |w| {
                    if claim_level(&aux.level[w as usize], lvl1, || aux.wanted.reached(mask, w)) {
                        saturating_add(&aux.count[w as usize], c);
                        next.set(w);
                    }
                });
            }
            Ok(())
        })
    }
}

// ---------------------------------------------------------------------------
// Variable-length walk counts.

/// The number of walks (rels may repeat) of each length `lower..=upper` from
/// the source to each destination, propagated level by level without
/// enumerating walks.
pub struct WalkCounts {
    pub lower: u32,
    pub upper: u32,
    /// The wanted destinations: rows are emitted only for them and, with
    /// `bound`, walks that cannot reach one in time are not extended.
    pub dst_mask: Option<Arc<[u64]>>,
    pub bound: Option<HopBound>,
}

impl WalkCounts {
    /// Every walk to every destination.
    pub fn new(lower: u32, upper: u32) -> WalkCounts {
        WalkCounts {
            lower,
            upper,
            dst_mask: None,
            bound: None,
        }
    }
}

pub struct WalkAux {
    /// Walk counts ending at each node, by level parity.
    cnt: [Vec<AtomicU64>; 2],
}

impl Compute for WalkCounts {
    type Aux = WalkAux;
    type Row = LenRow;

    fn upper(&self) -> u32 {
        self.upper
    }

    fn new_aux(&self, n: u64, srcs: &[u64], _workers: usize) -> WalkAux {
        let cnt = [zeroed_u64s(n as usize), zeroed_u64s(n as usize)];
        cnt[0][srcs[0] as usize].store(1, Ordering::Relaxed);
        WalkAux { cnt }
    }

    fn state_bytes(&self, n: u64, _lanes: usize) -> u64 {
        // Walk counts of two levels per node.
        16 * n
    }

    fn process<G: Graph>(
        &self,
        aux: &WalkAux,
        v: &mut Visit<'_, G, LenRow>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        let (iter, emit, extend, next, src) =
            (v.iter, v.iter >= self.lower, v.extend, v.next, v.srcs[0]);
        let this = &aux.cnt[(iter & 1) as usize];
        let other = &aux.cnt[((iter + 1) & 1) as usize];
        let dst = self.dst_mask.as_deref();
        let bound = self.bound.as_ref();
        let (depth, upper) = (iter + 1, self.upper);
        nodes.for_each(|u| {
            let c = this[u as usize].swap(0, Ordering::Relaxed);
            if emit && dst.is_none_or(|m| crate::graph::mask_has(m, u)) {
                v.out.push(LenRow {
                    src,
                    dst: u,
                    len: iter,
                    count: c,
                });
            }
            if extend {
                v.graph.neighbor_nodes(u, v.scratch, |w| {
                    if bound.is_none_or(|b| b.may_reach(w, depth, upper)) {
                        saturating_add(&other[w as usize], c);
                        next.set(w);
                    }
                });
            }
            Ok(())
        })
    }
}

// ---------------------------------------------------------------------------
// Weighted shortest paths.

/// Weighted shortest-path costs by frontier relaxation (Bellman-Ford over
/// the nodes whose distance improved). Weights are indexed by rel id, must
/// be finite and non-negative. Costs are the minimum over paths of the
/// left-to-right floating-point sum of the weights.
pub struct WeightedShortest {
    pub weights: RelWeights,
}

pub struct WeightedAux {
    /// `f64` bits; non-negative floats order like their bit patterns.
    dist: Vec<AtomicU64>,
}

const INF_BITS: u64 = u64::MAX;

impl WeightedShortest {
    pub fn new(weights: impl Into<RelWeights>) -> Result<WeightedShortest> {
        Ok(WeightedShortest {
            weights: weights.into(),
        })
    }
}

impl Compute for WeightedShortest {
    type Aux = WeightedAux;
    type Row = CostRow;

    fn upper(&self) -> u32 {
        u32::MAX
    }

    fn new_aux(&self, n: u64, srcs: &[u64], _workers: usize) -> WeightedAux {
        let dist: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(INF_BITS)).collect();
        dist[srcs[0] as usize].store(0f64.to_bits(), Ordering::Relaxed);
        WeightedAux { dist }
    }

    fn state_bytes(&self, n: u64, _lanes: usize) -> u64 {
        // A distance per node.
        8 * n
    }

    fn process<G: Graph>(
        &self,
        aux: &WeightedAux,
        v: &mut Visit<'_, G, CostRow>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        let next = v.next;
        let weights = &self.weights;
        nodes.for_each(|u| {
            let du = f64::from_bits(aux.dist[u as usize].load(Ordering::Relaxed));
            let mut bad = None;
            v.graph
                .weighted_neighbors(u, v.scratch, weights, |w, r, wt| {
                    if !weight_ok(wt, false) {
                        bad.get_or_insert((r, wt));
                        return;
                    }
                    let nd = (du + wt).to_bits();
                    let d = &aux.dist[w as usize];
                    if nd < d.load(Ordering::Relaxed) && nd < d.fetch_min(nd, Ordering::Relaxed) {
                        next.set(w);
                    }
                })?;
            match bad {
                Some((r, wt)) => Err(weight_error(r, wt, false)),
                None => Ok(()),
            }
        })
    }

    fn has_output_phase(&self) -> bool {
        true
    }

    fn output(
        &self,
        aux: &WeightedAux,
        srcs: &[u64],
        dsts: Range<u64>,
        out: &mut Vec<CostRow>,
    ) -> Result<()> {
        for dst in dsts {
            let d = aux.dist[dst as usize].load(Ordering::Relaxed);
            if d != INF_BITS {
                out.push(CostRow {
                    src: srcs[0],
                    dst,
                    cost: f64::from_bits(d),
                });
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Shortest paths with Parents.

/// One parent edge of a node: `node` reached it through rel `rel`; `next`
/// links the node's other parents (a [`Parents`] pointer, 0 = none).
#[derive(Debug, Clone, Copy)]
struct ParentEntry {
    node: u64,
    rel: u64,
    next: u64,
}

/// The Parents structure: a dense array of heads shared by all threads, and
/// per-worker arenas of parent edges linked into the heads with CAS.
/// Pointers are `(worker << 40 | index) + 1`; 0 is the empty list.
pub struct Parents {
    heads: Vec<AtomicU64>,
    arenas: Vec<RwLock<Vec<ParentEntry>>>,
    /// Entries in all arenas (added once per piece of work, not per entry).
    entries: AtomicU64,
}

const ARENA_INDEX_BITS: u32 = 40;

impl Parents {
    pub fn new(n: u64, workers: usize) -> Parents {
        Parents {
            heads: zeroed_u64s(n as usize),
            arenas: (0..workers.max(1))
                .map(|_| RwLock::new(Vec::new()))
                .collect(),
            entries: AtomicU64::new(0),
        }
    }

    /// The bytes the arenas' entries hold.
    fn arena_bytes(&self) -> u64 {
        self.entries.load(Ordering::Relaxed) * size_of::<ParentEntry>() as u64
    }

    /// Adds the parent edge `(node, rel)` to `child`, writing into `arena`
    /// (the calling worker's own, already locked).
    #[inline]
    fn add(&self, arena: &mut Vec<ParentEntry>, worker: usize, child: u64, node: u64, rel: u64) {
        let idx = arena.len() as u64;
        let ptr = ((worker as u64) << ARENA_INDEX_BITS | idx) + 1;
        let head = &self.heads[child as usize];
        let mut cur = head.load(Ordering::Relaxed);
        arena.push(ParentEntry {
            node,
            rel,
            next: cur,
        });
        while let Err(actual) =
            head.compare_exchange_weak(cur, ptr, Ordering::Relaxed, Ordering::Relaxed)
        {
            cur = actual;
            arena[idx as usize].next = cur;
        }
    }

    /// The parent edges `(node, rel)` of `child` (after extension ended),
    /// in list order.
    fn parent_edges<'a>(
        &'a self,
        arenas: &'a [&[ParentEntry]],
        child: u64,
    ) -> impl Iterator<Item = (u64, u64)> + 'a {
        let mut p = self.heads[child as usize].load(Ordering::Relaxed);
        std::iter::from_fn(move || {
            if p == 0 {
                return None;
            }
            let e = Self::entry(arenas, p);
            p = e.next;
            Some((e.node, e.rel))
        })
    }

    /// The entry a (non-zero) pointer points to.
    #[inline]
    fn entry(arenas: &[&[ParentEntry]], p: u64) -> ParentEntry {
        let p1 = p - 1;
        arenas[(p1 >> ARENA_INDEX_BITS) as usize][(p1 & ((1 << ARENA_INDEX_BITS) - 1)) as usize]
    }

    /// Every parent edge of `child`, sorted.
    fn parents_of(&self, arenas: &[&[ParentEntry]], child: u64, out: &mut Vec<(u64, u64)>) {
        out.clear();
        out.extend(self.parent_edges(arenas, child));
        out.sort_unstable();
    }
}

/// Which shortest paths to output per destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathMode {
    /// One path: from the destination back, always the smallest
    /// `(parent node, rel id)` parent edge (deterministic).
    One,
    /// Every shortest path.
    All,
}

/// Shortest paths (one or all per destination) of length `lower..=upper`.
pub struct ShortestPaths {
    pub lower: u32,
    pub upper: u32,
    pub mode: PathMode,
    /// Bit `v` set: node `v` may be an intermediate node of a path (a
    /// predicate on the path's nodes). A node outside the mask is still
    /// reached (as a destination) but never extended from, so the search
    /// finds the shortest paths whose intermediate nodes all pass. `None`:
    /// every node.
    pub node_mask: Option<Arc<[u64]>>,
    /// Bit `v` set: a path to `v` is output (a predicate on the
    /// destination); `None`: every reached node.
    pub dst_mask: Option<Arc<[u64]>>,
}

impl ShortestPaths {
    pub fn new(lower: u32, upper: u32, mode: PathMode) -> ShortestPaths {
        ShortestPaths {
            lower,
            upper,
            mode,
            node_mask: None,
            dst_mask: None,
        }
    }

    /// The length of the path to `dst` when the search keeps it (reached
    /// within the bounds, wanted by the destination mask).
    fn kept_hops(&self, aux: &PathsAux, dst: u64) -> Option<u32> {
        let l = aux.level[dst as usize].load(Ordering::Relaxed);
        let hops = u32::from(l).checked_sub(1)?;
        let wanted = self
            .dst_mask
            .as_deref()
            .is_none_or(|m| crate::graph::mask_has(m, dst));
        (hops >= self.lower && hops <= self.upper && wanted).then_some(hops)
    }

    /// One level of the BFS from `nodes`: each newly reached node records
    /// its parent edges (with [`PathMode::One`], the smallest in one word
    /// when it packs). Shared by [`ShortestTrees`], whose rows differ.
    fn extend<G: Graph, R>(
        &self,
        aux: &PathsAux,
        v: &mut Visit<'_, G, R>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        if !v.extend {
            return Ok(());
        }
        let (next, worker, lvl1) = (v.next, v.worker, (v.iter + 2) as u16);
        let mut arena = aux
            .parents
            .arenas
            .get(worker)
            .ok_or_else(|| Error::internal("worker index beyond the Parents arenas"))?
            .write();
        // The source (level 0) is never intermediate, so never masked.
        let mask = self.node_mask.as_deref().filter(|_| v.iter > 0);
        let dst = self.dst_mask.as_deref();
        let before = arena.len();
        let done = nodes.for_each(|u| {
            if mask.is_some_and(|m| !crate::graph::mask_has(m, u)) {
                return Ok(());
            }
            if self.mode == PathMode::One {
                v.graph.neighbors(u, v.scratch, |w, r| {
                    if claim_level(&aux.level[w as usize], lvl1, || aux.wanted.reached(dst, w)) {
                        match pack_parent(u, r) {
                            Some(word) => {
                                let slot = &aux.min_parent[w as usize];
                                if word > slot.load(Ordering::Relaxed) {
                                    slot.fetch_max(word, Ordering::Relaxed);
                                }
                            }
                            None => aux.parents.add(&mut arena, worker, w, u, r),
                        }
                        next.set(w);
                    }
                });
                return Ok(());
            }
            v.graph.neighbors(u, v.scratch, |w, r| {
                if claim_level(&aux.level[w as usize], lvl1, || aux.wanted.reached(dst, w)) {
                    aux.parents.add(&mut arena, worker, w, u, r);
                    next.set(w);
                }
            });
            Ok(())
        });
        let added = (arena.len() - before) as u64;
        aux.parents.entries.fetch_add(added, Ordering::Relaxed);
        done
    }
}

/// [`PathMode::One`] keeps only each node's smallest parent edge, in one
/// word when the parent node and rel ids fit 32 bits each: packed so that
/// the smallest edge is the largest word (0 stays "none"), `fetch_max`
/// keeps it. Edges with larger ids go to the [`Parents`] lists.
#[inline]
fn pack_parent(node: u64, rel: u64) -> Option<u64> {
    ((node | rel) >> 32 == 0).then_some(!(node << 32 | rel))
}

/// The parent edge `(node, rel)` of a packed word (None: none).
#[inline]
fn unpack_parent(word: u64) -> Option<(u64, u64)> {
    (word != 0).then_some((!word >> 32, !word & 0xffff_ffff))
}

pub struct PathsAux {
    level: Vec<AtomicU16>,
    parents: Parents,
    /// [`PathMode::One`]: each node's smallest parent edge that
    /// [`pack_parent`] packs (the others are in `parents`). Unused for
    /// [`PathMode::All`] (zeroed pages cost nothing until written).
    min_parent: Arc<Vec<AtomicU64>>,
    wanted: DstCountdown,
}

impl Compute for ShortestPaths {
    type Aux = PathsAux;
    type Row = PathRow;

    fn upper(&self) -> u32 {
        self.upper
    }

    fn new_aux(&self, n: u64, srcs: &[u64], workers: usize) -> PathsAux {
        let level = zeroed_u16s(n as usize);
        level[srcs[0] as usize].store(1, Ordering::Relaxed);
        PathsAux {
            level,
            parents: Parents::new(n, workers),
            min_parent: Arc::new(match self.mode {
                PathMode::One => zeroed_u64s(n as usize),
                PathMode::All => Vec::new(),
            }),
            wanted: DstCountdown::new(self.dst_mask.as_deref(), srcs[0]),
        }
    }

    fn state_bytes(&self, n: u64, _lanes: usize) -> u64 {
        // A level, a parent-list head and (one path each) the smallest
        // parent per node; the parent arenas grow as parents are found.
        match self.mode {
            PathMode::One => 18 * n,
            PathMode::All => 10 * n,
        }
    }

    fn grown_bytes(&self, aux: &PathsAux) -> u64 {
        aux.parents.arena_bytes()
    }

    fn complete(&self, aux: &PathsAux) -> bool {
        aux.wanted.complete()
    }

    fn process<G: Graph>(
        &self,
        aux: &PathsAux,
        v: &mut Visit<'_, G, PathRow>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        self.extend(aux, v, nodes)
    }

    fn has_output_phase(&self) -> bool {
        true
    }

    fn output(
        &self,
        aux: &PathsAux,
        srcs: &[u64],
        dsts: Range<u64>,
        out: &mut Vec<PathRow>,
    ) -> Result<()> {
        let guards: Vec<_> = aux.parents.arenas.iter().map(|a| a.read()).collect();
        let arenas: Vec<&[ParentEntry]> = guards.iter().map(|g| &g[..]).collect();
        let src = srcs[0];
        for dst in dsts {
            let Some(hops) = self.kept_hops(aux, dst) else {
                continue;
            };
            match self.mode {
                PathMode::One => out.push(parent_chain_path(src, dst, hops as usize, |v| {
                    let packed = unpack_parent(aux.min_parent[v as usize].load(Ordering::Relaxed));
                    let listed = aux.parents.parent_edges(&arenas, v).min();
                    packed
                        .into_iter()
                        .chain(listed)
                        .min()
                        .ok_or_else(|| Error::internal("visited node without a parent"))
                })?),
                PathMode::All => {
                    let mut nodes = vec![dst];
                    let mut rels = Vec::new();
                    let parents = &aux.parents;
                    let mut parents_of =
                        |v: u64, buf: &mut Vec<(u64, u64)>| parents.parents_of(&arenas, v, buf);
                    parent_dag_paths(src, dst, &mut parents_of, &mut nodes, &mut rels, out);
                }
            }
        }
        Ok(())
    }
}

/// One destination of a [`ShortestTrees`] search: its path has `hops`
/// rels and is read back from the source's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TreeRow {
    pub src: u64,
    pub dst: u64,
    pub hops: u32,
}

/// The smallest parent edge of every node a source reached, packed (see
/// [`pack_parent`]; 0: not reached, or the source).
pub type ParentTree = Arc<Vec<AtomicU64>>;

/// One shortest path per destination ([`ShortestPaths`] with
/// [`PathMode::One`]) without building the paths: each destination's row
/// holds its length, and the search's parent tree is kept per source
/// ([`ShortestTrees::take_trees`]), from which a path is read back when
/// it is needed ([`tree_path`]). A row is 24 bytes instead of a path's two
/// vectors. Needs node and rel ids below 2^32 (the caller checks), so
/// that every parent edge packs.
pub struct ShortestTrees {
    pub search: ShortestPaths,
    trees: Mutex<Vec<(u64, ParentTree)>>,
}

impl ShortestTrees {
    pub fn new(lower: u32, upper: u32) -> ShortestTrees {
        ShortestTrees {
            search: ShortestPaths::new(lower, upper, PathMode::One),
            trees: Mutex::new(Vec::new()),
        }
    }

    /// The bytes of the parent trees a run from `sources` sources over `n`
    /// nodes keeps (a word per node per source). They outlive the source
    /// morsels until the paths are read, so [`Compute::state_bytes`]
    /// leaves them out and the caller charges them for the whole run.
    pub fn tree_bytes(n: u64, sources: usize) -> u64 {
        8u64.saturating_mul(n).saturating_mul(sources as u64)
    }

    /// The parent tree of each source searched, by source.
    pub fn take_trees(&self) -> Vec<(u64, ParentTree)> {
        std::mem::take(&mut *self.trees.lock())
    }
}

/// The state of one [`ShortestTrees`] morsel: one source, or up to 64
/// sources in bit lanes (nTkMS), each lane with its own parent tree.
pub enum TreesAux {
    One(PathsAux),
    Lanes {
        /// The lanes reached at the current and the next level, per node.
        cur: [Vec<AtomicU64>; 2],
        /// The lanes that reached each node.
        visited: Vec<AtomicU64>,
        parents: Vec<ParentTree>,
    },
}

impl Compute for ShortestTrees {
    type Aux = TreesAux;
    type Row = TreeRow;

    fn max_lanes(&self) -> usize {
        64
    }

    fn upper(&self) -> u32 {
        self.search.upper
    }

    fn new_aux(&self, n: u64, srcs: &[u64], workers: usize) -> TreesAux {
        if srcs.len() == 1 {
            let aux = self.search.new_aux(n, srcs, workers);
            self.trees
                .lock()
                .push((srcs[0], Arc::clone(&aux.min_parent)));
            return TreesAux::One(aux);
        }
        let (cur, visited) = lane_frontiers(n, srcs);
        let mut parents = Vec::with_capacity(srcs.len());
        let mut trees = self.trees.lock();
        for &s in srcs {
            let tree: ParentTree = Arc::new(zeroed_u64s(n as usize));
            trees.push((s, Arc::clone(&tree)));
            parents.push(tree);
        }
        TreesAux::Lanes {
            cur,
            visited,
            parents,
        }
    }

    fn state_bytes(&self, n: u64, lanes: usize) -> u64 {
        // Without the trees (`tree_bytes`): the search's levels and list
        // heads, or the lane frontiers.
        match lanes {
            1 => self.search.state_bytes(n, 1) - Self::tree_bytes(n, 1),
            _ => 24 * n,
        }
    }

    fn grown_bytes(&self, aux: &TreesAux) -> u64 {
        match aux {
            TreesAux::One(a) => self.search.grown_bytes(a),
            TreesAux::Lanes { .. } => 0,
        }
    }

    fn complete(&self, aux: &TreesAux) -> bool {
        match aux {
            TreesAux::One(a) => self.search.complete(a),
            TreesAux::Lanes { .. } => false,
        }
    }

    fn process<G: Graph>(
        &self,
        aux: &TreesAux,
        v: &mut Visit<'_, G, TreeRow>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        // The source (level 0) is never intermediate, so never masked.
        let mask = self.search.node_mask.as_deref().filter(|_| v.iter > 0);
        let dst = self.search.dst_mask.as_deref();
        let mut wide = false;
        match aux {
            TreesAux::One(aux) => {
                self.search.extend(aux, v, nodes)?;
                // Edges whose ids do not pack went to this worker's list.
                wide = aux
                    .parents
                    .arenas
                    .get(v.worker)
                    .is_some_and(|a| !a.read().is_empty());
            }
            TreesAux::Lanes {
                cur,
                visited,
                parents,
            } => {
                let iter = v.iter;
                let (emit, extend, next) = (iter >= self.search.lower, v.extend, v.next);
                let (this, other) = (&cur[(iter & 1) as usize], &cur[((iter + 1) & 1) as usize]);
                nodes.for_each(|u| {
                    let lanes = this[u as usize].swap(0, Ordering::Relaxed);
                    if lanes == 0 {
                        return Ok(());
                    }
                    if emit && dst.is_none_or(|m| crate::graph::mask_has(m, u)) {
                        let mut l = lanes;
                        while l != 0 {
                            v.out.push(TreeRow {
                                src: v.srcs[l.trailing_zeros() as usize],
                                dst: u,
                                hops: iter,
                            });
                            l &= l - 1;
                        }
                    }
                    if !extend || mask.is_some_and(|m| !crate::graph::mask_has(m, u)) {
                        return Ok(());
                    }
                    v.graph.neighbors(u, v.scratch, |w, r| {
                        // Lanes that reached w before this level are done
                        // with it; those reaching it now (by this edge or
                        // another of the level) take this edge as a parent
                        // candidate. `other` is written before `visited`,
                        // so a lane seen in `visited` and not in `other`
                        // reached w at an earlier level.
                        let vis = visited[w as usize].load(Ordering::Acquire);
                        let cand = lanes & !(vis & !other[w as usize].load(Ordering::Relaxed));
                        if cand == 0 {
                            return;
                        }
                        let newly = cand & !vis;
                        if newly != 0 {
                            other[w as usize].fetch_or(newly, Ordering::Relaxed);
                            visited[w as usize].fetch_or(newly, Ordering::Release);
                            next.set(w);
                        }
                        let Some(word) = pack_parent(u, r) else {
                            wide = true;
                            return;
                        };
                        let mut l = cand;
                        while l != 0 {
                            let slot = &parents[l.trailing_zeros() as usize][w as usize];
                            if word > slot.load(Ordering::Relaxed) {
                                slot.fetch_max(word, Ordering::Relaxed);
                            }
                            l &= l - 1;
                        }
                    });
                    Ok(())
                })?;
            }
        }
        if wide {
            return Err(Error::internal(
                "a parent-tree search met an id beyond 32 bits",
            ));
        }
        Ok(())
    }

    fn has_output_phase(&self) -> bool {
        true
    }

    /// One source: its rows, from the levels. Lanes emit theirs as they
    /// reach each level.
    fn output(
        &self,
        aux: &TreesAux,
        srcs: &[u64],
        dsts: Range<u64>,
        out: &mut Vec<TreeRow>,
    ) -> Result<()> {
        let TreesAux::One(aux) = aux else {
            return Ok(());
        };
        out.extend(dsts.filter_map(|dst| {
            let hops = self.search.kept_hops(aux, dst)?;
            Some(TreeRow {
                src: srcs[0],
                dst,
                hops,
            })
        }));
        Ok(())
    }
}

/// Writes the path of `row` from its source's `tree` into `nodes` and
/// `rels` (cleared first): the same path [`ShortestPaths`] outputs.
pub fn tree_path(
    tree: &[AtomicU64],
    row: &TreeRow,
    nodes: &mut Vec<u64>,
    rels: &mut Vec<u64>,
) -> Result<()> {
    walk_parent_chain(row.src, row.dst, row.hops as usize, nodes, rels, |v| {
        tree_parent(tree, v)
    })
}

/// The parent edge `(node, rel)` of node `v` in a source's `tree`.
pub fn tree_parent(tree: &[AtomicU64], v: u64) -> Result<(u64, u64)> {
    let word = tree
        .get(v as usize)
        .map_or(0, |w| w.load(Ordering::Relaxed));
    unpack_parent(word).ok_or_else(|| Error::internal("visited node without a parent"))
}

/// Writes the path from `src` to `dst` of `hops` rels along single parent
/// edges (`parent(v)` is `v`'s `(node, rel)`) into `nodes` and `rels`: the
/// length is known, so they are filled from the back at their exact size.
fn walk_parent_chain(
    src: u64,
    dst: u64,
    hops: usize,
    nodes: &mut Vec<u64>,
    rels: &mut Vec<u64>,
    mut parent: impl FnMut(u64) -> Result<(u64, u64)>,
) -> Result<()> {
    nodes.clear();
    rels.clear();
    nodes.resize(hops + 1, 0);
    rels.resize(hops, 0);
    nodes[hops] = dst;
    let mut cur = dst;
    for i in (0..hops).rev() {
        let (p, r) = parent(cur)?;
        nodes[i] = p;
        rels[i] = r;
        cur = p;
    }
    if cur != src {
        return Err(Error::internal("a parent chain does not end at its source"));
    }
    Ok(())
}

/// The [`PathRow`] from `src` to `dst` of `hops` rels along single parent
/// edges ([`walk_parent_chain`]).
pub(crate) fn parent_chain_path(
    src: u64,
    dst: u64,
    hops: usize,
    parent: impl FnMut(u64) -> Result<(u64, u64)>,
) -> Result<PathRow> {
    let (mut nodes, mut rels) = (Vec::new(), Vec::new());
    walk_parent_chain(src, dst, hops, &mut nodes, &mut rels, parent)?;
    Ok(PathRow {
        src,
        dst,
        nodes,
        rels,
        cost_bits: 0,
    })
}

/// Fills the buffer with a node's parent edges `(node, rel)`.
pub(crate) type ParentsOf<'a> = dyn FnMut(u64, &mut Vec<(u64, u64)>) + 'a;

/// Depth-first enumeration of every path from `src` to `dst` through a
/// parent DAG (shortest paths' [`Parents`], the cheapest parents of a
/// weighted search): `parents_of(v, buf)` fills `buf` with `v`'s parent
/// edges `(node, rel)` in the order to follow; `nodes` / `rels` hold the
/// path's tail from `dst` back (start with `nodes = [dst]`).
pub(crate) fn parent_dag_paths(
    src: u64,
    dst: u64,
    parents_of: &mut ParentsOf<'_>,
    nodes: &mut Vec<u64>,
    rels: &mut Vec<u64>,
    out: &mut Vec<PathRow>,
) {
    let cur = *nodes.last().unwrap_or(&dst);
    if cur == src {
        out.push(PathRow {
            src,
            dst,
            nodes: nodes.iter().rev().copied().collect(),
            rels: rels.iter().rev().copied().collect(),
            cost_bits: 0,
        });
        return;
    }
    let mut ps = Vec::new();
    parents_of(cur, &mut ps);
    for (p, r) in ps {
        nodes.push(p);
        rels.push(r);
        parent_dag_paths(src, dst, parents_of, nodes, rels, out);
        nodes.pop();
        rels.pop();
    }
}

// ---------------------------------------------------------------------------
// Convenience entry points: collect and sort the rows.

/// Runs `compute` over `graph` (and its reverse, when given: see
/// [`run_ife_with_reverse`]) and collects the rows.
fn collect<G: Graph, C: Compute>(
    sched: &Scheduler,
    (graph, reverse): (&Arc<G>, Option<&Arc<G>>),
    compute: C,
    sources: &[u64],
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<(Vec<C::Row>, RunStats)> {
    let sink = Arc::new(CollectSink::<C::Row>::default());
    let (g, r, c) = (
        Arc::clone(graph),
        reverse.map(Arc::clone),
        Arc::new(compute),
    );
    let stats = run_ife_with_reverse(sched, g, r, c, sources, opts, cancel, sink.clone())?;
    Ok((sink.take(), stats))
}

/// Shortest path lengths in `lower..=upper` (count is 1), sorted.
pub fn shortest_lengths<G: Graph>(
    sched: &Scheduler,
    graph: &Arc<G>,
    sources: &[u64],
    lower: u32,
    upper: u32,
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<LenRow>> {
    lengths_over(sched, (graph, None), sources, (lower, upper), opts, cancel)
}

/// [`shortest_lengths`] with the dense levels of one-source morsels
/// bottom-up over `reverse` (the graph with every rel turned around).
#[allow(clippy::too_many_arguments)]
pub fn shortest_lengths_pulling<G: Graph>(
    sched: &Scheduler,
    graph: &Arc<G>,
    reverse: &Arc<G>,
    sources: &[u64],
    lower: u32,
    upper: u32,
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<LenRow>> {
    let graphs = (graph, Some(reverse));
    lengths_over(sched, graphs, sources, (lower, upper), opts, cancel)
}

#[allow(clippy::type_complexity)]
fn lengths_over<G: Graph>(
    sched: &Scheduler,
    (graph, reverse): (&Arc<G>, Option<&Arc<G>>),
    sources: &[u64],
    (lower, upper): (u32, u32),
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<LenRow>> {
    check_bounds(lower, upper)?;
    let compute = ShortestLengths {
        lower,
        upper,
        dst_mask: None,
    };
    let (mut rows, _) = collect(sched, (graph, reverse), compute, sources, opts, cancel)?;
    rows.sort_unstable();
    Ok(rows)
}

/// Number of shortest paths per destination (length `lower..=upper`), sorted.
pub fn all_shortest_counts<G: Graph>(
    sched: &Scheduler,
    graph: &Arc<G>,
    sources: &[u64],
    lower: u32,
    upper: u32,
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<LenRow>> {
    check_bounds(lower, upper)?;
    let (mut rows, _) = collect(
        sched,
        (graph, None),
        AllShortestCounts {
            lower,
            upper,
            dst_mask: None,
        },
        sources,
        opts,
        cancel,
    )?;
    rows.sort_unstable();
    Ok(rows)
}

/// Walk counts per (destination, length) for lengths `lower..=upper`, sorted.
pub fn walk_counts<G: Graph>(
    sched: &Scheduler,
    graph: &Arc<G>,
    sources: &[u64],
    lower: u32,
    upper: u32,
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<LenRow>> {
    check_bounds(lower, upper)?;
    let (mut rows, _) = collect(
        sched,
        (graph, None),
        WalkCounts::new(lower, upper),
        sources,
        opts,
        cancel,
    )?;
    rows.sort_unstable();
    Ok(rows)
}

/// Weighted shortest-path costs to every reachable destination, sorted by
/// `(src, dst)`.
pub fn weighted_shortest<G: Graph>(
    sched: &Scheduler,
    graph: &Arc<G>,
    sources: &[u64],
    weights: impl Into<RelWeights>,
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<CostRow>> {
    let c = WeightedShortest::new(weights)?;
    let (mut rows, _) = collect(sched, (graph, None), c, sources, opts, cancel)?;
    rows.sort_by_key(|r| (r.src, r.dst));
    Ok(rows)
}

/// Shortest paths (one or all per destination), sorted.
#[allow(clippy::too_many_arguments)]
pub fn shortest_paths<G: Graph>(
    sched: &Scheduler,
    graph: &Arc<G>,
    sources: &[u64],
    lower: u32,
    upper: u32,
    mode: PathMode,
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<PathRow>> {
    check_bounds(lower, upper)?;
    let (mut rows, _) = collect(
        sched,
        (graph, None),
        ShortestPaths::new(lower, upper, mode),
        sources,
        opts,
        cancel,
    )?;
    rows.sort_unstable();
    Ok(rows)
}
