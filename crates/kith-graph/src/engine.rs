//! The IFE driver: source morsels (one source, or up to 64 in bit lanes),
//! frontier morsels over dense or sparse frontiers, an output phase over
//! destination ranges, and the four morsel-dispatch policies, run on the
//! shared [`kith_sched::Scheduler`].

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use kith_common::{Error, Result};
use kith_sched::{CancelToken, Scheduler, Task, WorkerContext};

use crate::bits::DenseBits;
use crate::graph::Graph;

/// How source and frontier morsels are handed to threads (VLDB 2025, §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// `1T1S`: each source runs start to end on one thread.
    OneThreadOneSource,
    /// `nT1S`: one source at a time; all threads share its frontier morsels.
    ManyThreadsOneSource,
    /// `nTkS`: up to k sources at a time, threads sticky to a source and
    /// helping other sources' frontiers when theirs has no morsel left.
    ManyThreadsKSources,
    /// `nTkMS`: like nTkS but each source morsel packs up to 64 sources in
    /// bit lanes (computations without a lane version fall back to nTkS).
    ManyThreadsKMultiSources,
}

impl Policy {
    pub const ALL: [Policy; 4] = [
        Policy::OneThreadOneSource,
        Policy::ManyThreadsOneSource,
        Policy::ManyThreadsKSources,
        Policy::ManyThreadsKMultiSources,
    ];

    /// Parses `1T1S`, `nT1S`, `nTkS` or `nTkMS` (case-insensitive).
    pub fn parse(s: &str) -> Result<Policy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "1t1s" => Ok(Policy::OneThreadOneSource),
            "nt1s" => Ok(Policy::ManyThreadsOneSource),
            "ntks" => Ok(Policy::ManyThreadsKSources),
            "ntkms" => Ok(Policy::ManyThreadsKMultiSources),
            _ => Err(Error::semantic(format!(
                "unknown recursive policy '{s}' (expected 1T1S, nT1S, nTkS or nTkMS)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::OneThreadOneSource => "1T1S",
            Policy::ManyThreadsOneSource => "nT1S",
            Policy::ManyThreadsKSources => "nTkS",
            Policy::ManyThreadsKMultiSources => "nTkMS",
        }
    }
}

impl Default for Policy {
    /// nTkS: the robust default of the paper.
    fn default() -> Policy {
        Policy::ManyThreadsKSources
    }
}

/// Execution options of one IFE run.
#[derive(Debug, Clone, Default)]
pub struct IfeOptions {
    pub policy: Policy,
    /// Worker threads (the caller included); 0 means the scheduler's count.
    pub threads: usize,
    /// Concurrent source morsels for nTkS / nTkMS; `None` picks a default
    /// from the thread count and the average degree.
    pub k: Option<usize>,
    /// Where each source morsel's state is charged (none: not counted).
    pub budget: Option<Budget>,
}

/// A memory budget for the per-source state of a run (the query's memory
/// limit): a source morsel charges its frontiers and [`Compute::state_bytes`]
/// before allocating them and releases them when it is done, so the k
/// morsels in flight count, and an error (the limit reached) ends the run.
pub trait StateBudget: Send + Sync {
    fn charge(&self, bytes: u64) -> Result<()>;
    fn release(&self, bytes: u64);
}

/// A shared [`StateBudget`].
#[derive(Clone)]
pub struct Budget(pub Arc<dyn StateBudget>);

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Budget")
    }
}

/// What a source morsel charged, released when it is dropped: its state
/// up front, then what the state grew by ([`Compute::grown_bytes`]).
struct Charged {
    budget: Budget,
    bytes: u64,
    grown: Mutex<u64>,
}

impl Charged {
    /// Charges the state's growth to `grown` bytes (when it grew).
    fn grow_to(&self, grown: u64) -> Result<()> {
        let mut charged = self.grown.lock();
        if grown > *charged {
            self.budget.0.charge(grown - *charged)?;
            *charged = grown;
        }
        Ok(())
    }
}

/// What a piece of work may charge as it allocates (a search that runs a
/// whole source in one visit: a Dijkstra's heap, its parent lists), on top
/// of its morsel's state; given back with the morsel. Runs without a
/// budget charge nothing.
#[derive(Clone, Copy)]
pub struct Growth<'a>(Option<&'a Charged>);

impl Growth<'_> {
    /// The work now holds `bytes` beyond its morsel's state: charges the
    /// increase, or fails the run with the budget's error.
    pub fn charge_to(&self, bytes: u64) -> Result<()> {
        match self.0 {
            Some(charged) => charged.grow_to(bytes),
            None => Ok(()),
        }
    }
}

impl Drop for Charged {
    fn drop(&mut self) {
        self.budget.0.release(self.bytes + *self.grown.get_mut());
    }
}

/// What a run actually did (for PROFILE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStats {
    /// The policy used (nTkMS falls back to nTkS for computations without lanes).
    pub policy: Policy,
    pub k: usize,
    pub threads: usize,
    pub source_morsels: usize,
    /// Levels run bottom-up ([`Compute::pull`]), over all source morsels.
    pub pulled_levels: usize,
}

/// Receives output rows in batches, from any worker, in no particular order.
pub trait Sink<R>: Send + Sync {
    /// Takes the rows out of `rows` (leaving it empty for reuse). An error
    /// (the query's memory limit reached, say) ends the run with it.
    fn consume(&self, rows: &mut Vec<R>) -> Result<()>;
}

/// Collects every row.
pub struct CollectSink<R>(pub Mutex<Vec<R>>);

impl<R> Default for CollectSink<R> {
    fn default() -> Self {
        CollectSink(Mutex::new(Vec::new()))
    }
}

impl<R: Send> Sink<R> for CollectSink<R> {
    fn consume(&self, rows: &mut Vec<R>) -> Result<()> {
        self.0.lock().append(rows);
        Ok(())
    }
}

impl<R> CollectSink<R> {
    pub fn take(&self) -> Vec<R> {
        std::mem::take(&mut *self.0.lock())
    }
}

/// The nodes of one frontier morsel.
pub enum Nodes<'a> {
    Sparse(&'a [u64]),
    /// Set bits of `bits` in words `words`.
    Dense {
        bits: &'a DenseBits,
        words: Range<usize>,
    },
}

impl Nodes<'_> {
    #[inline]
    pub fn for_each<F: FnMut(u64) -> Result<()>>(&self, mut f: F) -> Result<()> {
        match self {
            Nodes::Sparse(list) => {
                for &u in *list {
                    f(u)?;
                }
            }
            Nodes::Dense { bits, words } => {
                for w in words.clone() {
                    let mut word = bits.word(w);
                    while word != 0 {
                        f(w as u64 * 64 + word.trailing_zeros() as u64)?;
                        word &= word - 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// What a computation sees while processing one frontier morsel.
pub struct Visit<'a, G: Graph, R> {
    pub graph: &'a G,
    pub scratch: &'a mut G::Scratch,
    pub out: &'a mut Vec<R>,
    pub worker: usize,
    /// The sources of this source morsel (lane `i` is `srcs[i]`).
    pub srcs: &'a [u64],
    /// The level of the frontier being processed (sources are level 0).
    pub iter: u32,
    /// False on the last level (`iter == upper`): emit, do not extend.
    pub extend: bool,
    /// The next frontier: set the nodes that join it.
    pub next: &'a DenseBits,
    /// Where `out` goes: a computation that emits many rows in one visit
    /// (a source's whole path enumeration) hands them on as they pile up
    /// ([`flush_if_full`]).
    pub sink: &'a dyn Sink<R>,
    /// Where such a computation charges what it allocates as it goes.
    pub growth: Growth<'a>,
}

/// Hands `out` to `sink` once it holds [`FLUSH_ROWS`] rows, as the engine
/// does after each piece of work.
#[inline]
pub fn flush_if_full<R>(out: &mut Vec<R>, sink: &dyn Sink<R>) -> Result<()> {
    if out.len() >= FLUSH_ROWS {
        sink.consume(out)?;
    }
    Ok(())
}

/// One recursive computation: its auxiliary state per source morsel, the
/// per-edge work of a frontier morsel, and an optional output phase.
pub trait Compute: Send + Sync + 'static {
    type Aux: Send + Sync;
    type Row: Send + 'static;

    /// Sources per source morsel this computation supports (1, or 64 for a
    /// bit-lane implementation used by nTkMS).
    fn max_lanes(&self) -> usize {
        1
    }

    /// The last level processed (`u32::MAX`: until the frontier is empty).
    fn upper(&self) -> u32;

    /// Checked after each level: true when nothing further can change the
    /// results (every wanted destination reached, say). The next level's
    /// frontier is then processed once more without extending (so its rows
    /// are emitted) and the computation ends.
    fn complete(&self, _aux: &Self::Aux) -> bool {
        false
    }

    /// Fresh state for `srcs` (already validated `< num_nodes`).
    fn new_aux(&self, num_nodes: u64, srcs: &[u64], num_workers: usize) -> Self::Aux;

    /// The bytes [`Compute::new_aux`] allocates for `lanes` sources over
    /// `num_nodes` nodes (what grows later, like parent arenas, is not
    /// counted): charged to the run's [`StateBudget`] before allocating.
    fn state_bytes(&self, num_nodes: u64, lanes: usize) -> u64;

    /// What `aux` has grown by since it was made (parent arenas), charged
    /// after each piece of extension work.
    fn grown_bytes(&self, _aux: &Self::Aux) -> u64 {
        0
    }

    /// Processes the frontier nodes of one morsel: emits rows for them and,
    /// when `v.extend`, runs the edge updates and sets `v.next`.
    fn process<G: Graph>(
        &self,
        aux: &Self::Aux,
        v: &mut Visit<'_, G, Self::Row>,
        nodes: Nodes<'_>,
    ) -> Result<()>;

    /// Whether [`Compute::pull`] serves this source morsel's dense levels
    /// (when the run has the reverse graph).
    fn pulls(&self, _aux: &Self::Aux) -> bool {
        false
    }

    /// The extension of a dense level bottom-up over the nodes of `range`
    /// (the engine has emitted the range's frontier nodes through
    /// [`Compute::process`]): puts into `v.next` every node of the range
    /// not reached yet that has an in-neighbour (a neighbour in `reverse`)
    /// in `frontier`. Each node of the range is written only by the worker
    /// that holds the range.
    fn pull<G: Graph>(
        &self,
        _aux: &Self::Aux,
        _v: &mut Visit<'_, G, Self::Row>,
        _reverse: &G,
        _frontier: &DenseBits,
        _range: Range<u64>,
    ) -> Result<()> {
        Err(Error::internal("this computation has no bottom-up step"))
    }

    /// Called once a level `iter` that ran bottom-up is done, before the
    /// next one starts (a computation whose emit step left per-node state
    /// of that level in place for the pulling workers clears it here).
    fn pulled_level_done(&self, _aux: &Self::Aux, _iter: u32) {}

    fn has_output_phase(&self) -> bool {
        false
    }

    /// The OUTPUT phase over a destination range, after the last extension.
    fn output(
        &self,
        _aux: &Self::Aux,
        _srcs: &[u64],
        _dsts: Range<u64>,
        _out: &mut Vec<Self::Row>,
    ) -> Result<()> {
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Extend,
    Output,
    Done,
}

struct IterState {
    iter: u32,
    /// Set when [`Compute::complete`] said so: the level processed last.
    last: Option<u32>,
    phase: Phase,
    next: u64,
    total: u64,
    morsel: u64,
    in_flight: usize,
    /// The current frontier as a list, when it is below 1/8 of the nodes.
    sparse: Option<Arc<Vec<u64>>>,
    /// The current level runs bottom-up ([`Compute::pull`]).
    pull: bool,
    /// Nodes in every frontier so far (the sources included).
    reached: u64,
}

enum Work {
    Extend {
        iter: u32,
        /// False on the last level: its frontier only emits.
        extend: bool,
        range: Range<u64>,
        sparse: Option<Arc<Vec<u64>>>,
        pull: bool,
    },
    Output(Range<u64>),
}

struct SourceMorsel<C: Compute> {
    srcs: Vec<u64>,
    aux: C::Aux,
    frontiers: [DenseBits; 2],
    st: Mutex<IterState>,
    /// Released once the morsel's state is dropped.
    charged: Option<Charged>,
}

const DENSE_MORSEL_NODES: u64 = 4096;
const OUTPUT_MORSEL_NODES: u64 = 8192;
const FLUSH_ROWS: usize = 4096;

impl<C: Compute> SourceMorsel<C> {
    fn new(
        compute: &C,
        n: u64,
        srcs: Vec<u64>,
        workers: usize,
        budget: Option<&Budget>,
    ) -> Result<SourceMorsel<C>> {
        // Charged before allocating: two frontier bit sets and the state.
        let charged = match budget {
            Some(b) => {
                let bytes = compute
                    .state_bytes(n, srcs.len())
                    .saturating_add(2 * n.div_ceil(64) * 8);
                b.0.charge(bytes)?;
                Some(Charged {
                    budget: b.clone(),
                    bytes,
                    grown: Mutex::new(0),
                })
            }
            None => None,
        };
        let aux = compute.new_aux(n, &srcs, workers);
        let frontiers = [DenseBits::new(n), DenseBits::new(n)];
        let mut list = srcs.clone();
        list.sort_unstable();
        list.dedup();
        for &s in &list {
            frontiers[0].set(s);
        }
        let st = IterState {
            iter: 0,
            last: None,
            phase: Phase::Extend,
            next: 0,
            total: list.len() as u64,
            morsel: sparse_morsel(list.len() as u64, workers),
            in_flight: 0,
            reached: list.len() as u64,
            sparse: Some(Arc::new(list)),
            pull: false,
        };
        Ok(SourceMorsel {
            srcs,
            aux,
            frontiers,
            st: Mutex::new(st),
            charged,
        })
    }

    /// The next piece of work, if any. `None` too while another worker
    /// holds the state (finishing a level): a waiting worker must not park
    /// on the lock, as waking it again costs more than the level change
    /// itself (up to 90 µs of a 1.3 ms search on this VM).
    fn grab(&self) -> Option<Work> {
        let mut st = self.st.try_lock()?;
        if st.phase == Phase::Done || st.next >= st.total {
            return None;
        }
        let start = st.next;
        let end = (start + st.morsel).min(st.total);
        st.next = end;
        st.in_flight += 1;
        Some(match st.phase {
            Phase::Extend => Work::Extend {
                iter: st.iter,
                extend: st.last.is_none_or(|l| st.iter < l),
                range: start..end,
                sparse: st.sparse.clone(),
                pull: st.pull,
            },
            _ => Work::Output(start..end),
        })
    }

    fn is_done(&self) -> bool {
        self.st.lock().phase == Phase::Done
    }

    /// Marks a grabbed morsel finished; the last one of an iteration advances
    /// the state (choosing, when `can_pull`, whether the next level runs
    /// bottom-up: [`pulls_next`]; such levels are counted in `pulled`).
    /// True when the source morsel just became done.
    fn finish<G: Graph>(
        &self,
        compute: &C,
        graph: &G,
        scratch: &mut G::Scratch,
        workers: usize,
        can_pull: &PullCount,
    ) -> bool {
        let mut st = self.st.lock();
        st.in_flight -= 1;
        if st.in_flight > 0 || st.next < st.total {
            return false;
        }
        let n = self.frontiers[0].len();
        match st.phase {
            Phase::Extend => {
                let i = st.iter;
                let cur = &self.frontiers[(i & 1) as usize];
                let nxt = &self.frontiers[((i + 1) & 1) as usize];
                // Clear the processed frontier for reuse as the one after next.
                match &st.sparse {
                    Some(list) => {
                        for &u in list.iter() {
                            cur.clear_word((u / 64) as usize);
                        }
                    }
                    None => (0..cur.num_words()).for_each(|w| cur.clear_word(w)),
                }
                if st.pull {
                    compute.pulled_level_done(&self.aux, i);
                }
                let stop = i >= compute.upper() || st.last.is_some_and(|l| i >= l);
                let count = if stop { 0 } else { nxt.count() };
                if count > 0 && st.last.is_none() && compute.complete(&self.aux) {
                    st.last = Some(i + 1);
                }
                if count == 0 {
                    if compute.has_output_phase() {
                        st.phase = Phase::Output;
                        st.next = 0;
                        st.total = n;
                        st.morsel = OUTPUT_MORSEL_NODES;
                        st.sparse = None;
                        return false;
                    }
                    st.phase = Phase::Done;
                    st.sparse = None;
                    return true;
                }
                st.iter = i + 1;
                st.next = 0;
                st.reached += count;
                let may_pull = can_pull.0 && compute.pulls(&self.aux);
                let list = (count < n / 8).then(|| {
                    let mut list = Vec::with_capacity(count as usize);
                    nxt.collect_into(&mut list);
                    list
                });
                let unreached = n - st.reached.min(n);
                st.pull = may_pull
                    && match &list {
                        None => true,
                        Some(list) => pulls_next(graph, scratch, list, st.pull, n, unreached),
                    };
                if st.pull {
                    can_pull.1.fetch_add(1, Ordering::Relaxed);
                }
                match list {
                    Some(list) if !st.pull => {
                        st.total = count;
                        st.morsel = sparse_morsel(count, workers);
                        st.sparse = Some(Arc::new(list));
                    }
                    _ => {
                        st.total = n;
                        st.morsel = DENSE_MORSEL_NODES;
                        st.sparse = None;
                    }
                }
                false
            }
            Phase::Output => {
                st.phase = Phase::Done;
                true
            }
            Phase::Done => false,
        }
    }
}

/// Whether a run may pull (it has the reverse graph), and its count of
/// levels that did.
type PullCount<'a> = (bool, &'a AtomicUsize);

/// Whether the level of `frontier` (a sparse one: under 1/8 of the `n`
/// nodes; denser ones always pull), with `unreached` nodes not reached
/// yet, runs bottom-up (Beamer's direction switch). Top-down, it pulls once
/// the frontier's rels outnumber 1/14 of the rels left to explore (the
/// unreached nodes' share of all rels): a few thousand hubs of a skewed
/// graph can hold most of its rels, while a bottom-up step stops at each
/// node's first parent. Bottom-up, it goes on while the frontier holds
/// 1/24 of the nodes. The frontier's rels are estimated from up to 256
/// of its nodes, evenly spaced.
fn pulls_next<G: Graph>(
    graph: &G,
    scratch: &mut G::Scratch,
    frontier: &[u64],
    pulled: bool,
    n: u64,
    unreached: u64,
) -> bool {
    const ALPHA: u64 = 14;
    const BETA: u64 = 24;
    const SAMPLES: usize = 256;
    if pulled {
        return frontier.len() as u64 * BETA >= n;
    }
    if frontier.is_empty() || n == 0 {
        return false;
    }
    let step = frontier.len().div_ceil(SAMPLES);
    let (mut sampled, mut rels) = (0u64, 0u64);
    for &u in frontier.iter().step_by(step) {
        sampled += 1;
        rels += graph.degree(u, scratch);
    }
    let frontier_rels = rels as f64 * frontier.len() as f64 / sampled as f64;
    let left_rels = graph.num_edges() as f64 * unreached as f64 / n as f64;
    frontier_rels * ALPHA as f64 > left_rels
}

/// Small sparse frontiers are split finely so several threads can share them.
fn sparse_morsel(len: u64, workers: usize) -> u64 {
    (len / (8 * workers as u64)).clamp(1, 512)
}

struct IfeTask<G: Graph, C: Compute> {
    graph: Arc<G>,
    /// The graph with every rel turned around, for bottom-up levels.
    reverse: Option<Arc<G>>,
    compute: Arc<C>,
    sink: Arc<dyn Sink<C::Row>>,
    sources: Vec<u64>,
    lanes: usize,
    share: bool,
    k: usize,
    next_source: AtomicUsize,
    launched: AtomicUsize,
    /// Levels that ran bottom-up.
    pulled: AtomicUsize,
    active: Mutex<Vec<Arc<SourceMorsel<C>>>>,
    budget: Option<Budget>,
}

impl<G: Graph, C: Compute> IfeTask<G, C> {
    fn take_sources(&self) -> Option<Vec<u64>> {
        let start = self.next_source.fetch_add(self.lanes, Ordering::Relaxed);
        if start >= self.sources.len() {
            return None;
        }
        let end = (start + self.lanes).min(self.sources.len());
        self.launched.fetch_add(1, Ordering::Relaxed);
        Some(self.sources[start..end].to_vec())
    }

    fn try_launch(&self, workers: usize) -> Result<Option<Arc<SourceMorsel<C>>>> {
        let mut active = self.active.lock();
        if active.len() >= self.k {
            return Ok(None);
        }
        let Some(srcs) = self.take_sources() else {
            return Ok(None);
        };
        let sm = Arc::new(SourceMorsel::new(
            &*self.compute,
            self.graph.num_nodes(),
            srcs,
            workers,
            self.budget.as_ref(),
        )?);
        active.push(Arc::clone(&sm));
        Ok(Some(sm))
    }

    fn find_work(&self) -> Option<(Arc<SourceMorsel<C>>, Work)> {
        let active = self.active.lock();
        for sm in active.iter() {
            if let Some(w) = sm.grab() {
                return Some((Arc::clone(sm), w));
            }
        }
        None
    }

    fn retire(&self, sm: &Arc<SourceMorsel<C>>) {
        self.active.lock().retain(|x| !Arc::ptr_eq(x, sm));
    }

    fn run_work(
        &self,
        sm: &Arc<SourceMorsel<C>>,
        work: Work,
        worker: usize,
        workers: usize,
        scratch: &mut G::Scratch,
        out: &mut Vec<C::Row>,
    ) -> Result<()> {
        match work {
            Work::Extend {
                iter,
                extend,
                range,
                sparse,
                pull,
            } => {
                let nodes = match &sparse {
                    Some(list) => Nodes::Sparse(&list[range.start as usize..range.end as usize]),
                    None => Nodes::Dense {
                        bits: &sm.frontiers[(iter & 1) as usize],
                        words: (range.start / 64) as usize..range.end.div_ceil(64) as usize,
                    },
                };
                let mut v = Visit {
                    graph: &*self.graph,
                    scratch,
                    out: &mut *out,
                    worker,
                    srcs: &sm.srcs,
                    iter,
                    extend: extend && iter < self.compute.upper(),
                    next: &sm.frontiers[((iter + 1) & 1) as usize],
                    sink: &*self.sink,
                    growth: Growth(sm.charged.as_ref()),
                };
                match (&self.reverse, pull) {
                    (Some(reverse), true) => {
                        // Emit the range's frontier nodes as a top-down
                        // step does, then extend bottom-up.
                        let extend = std::mem::replace(&mut v.extend, false);
                        self.compute.process(&sm.aux, &mut v, nodes)?;
                        if extend {
                            v.extend = true;
                            let frontier = &sm.frontiers[(iter & 1) as usize];
                            self.compute
                                .pull(&sm.aux, &mut v, reverse, frontier, range)?;
                        }
                    }
                    _ => self.compute.process(&sm.aux, &mut v, nodes)?,
                }
            }
            Work::Output(range) => self.compute.output(&sm.aux, &sm.srcs, range, out)?,
        }
        if let Some(charged) = &sm.charged {
            let grown = self.compute.grown_bytes(&sm.aux);
            if grown > 0 {
                charged.grow_to(grown)?;
            }
        }
        flush_if_full(out, &*self.sink)?;
        let pulls = (self.reverse.is_some(), &self.pulled);
        if sm.finish(&*self.compute, &*self.graph, scratch, workers, &pulls) {
            self.retire(sm);
        }
        Ok(())
    }
}

impl<G: Graph, C: Compute> Task for IfeTask<G, C> {
    fn run_worker(&self, ctx: &WorkerContext) -> Result<()> {
        let mut scratch = G::Scratch::default();
        let mut out = Vec::new();
        let workers = ctx.num_workers;
        let mut mine: Option<Arc<SourceMorsel<C>>> = None;
        let mut idle_spins = 0u32;
        loop {
            // A satisfied LIMIT downstream (the run's token finished) ends
            // the search quietly; the rows still held are not wanted.
            if ctx.cancel.should_stop()? {
                return Ok(());
            }
            if let Some(sm) = mine.clone() {
                if let Some(w) = sm.grab() {
                    self.run_work(&sm, w, ctx.worker_idx, workers, &mut scratch, &mut out)?;
                    continue;
                }
                if !self.share && !sm.is_done() {
                    return Err(Error::internal("1T1S source morsel stalled"));
                }
                mine = None;
            }
            if !self.share {
                // 1T1S: a private source morsel, never shared.
                match self.take_sources() {
                    Some(srcs) => {
                        mine = Some(Arc::new(SourceMorsel::new(
                            &*self.compute,
                            self.graph.num_nodes(),
                            srcs,
                            workers,
                            self.budget.as_ref(),
                        )?))
                    }
                    None => break,
                }
                continue;
            }
            if let Some(sm) = self.try_launch(workers)? {
                mine = Some(sm);
                continue;
            }
            if let Some((sm, w)) = self.find_work() {
                self.run_work(&sm, w, ctx.worker_idx, workers, &mut scratch, &mut out)?;
                mine = Some(sm);
                idle_spins = 0;
                continue;
            }
            if self.next_source.load(Ordering::Relaxed) >= self.sources.len()
                && self.active.lock().is_empty()
            {
                break;
            }
            // Another worker is finishing the last morsel of an iteration.
            idle_spins += 1;
            if idle_spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if !out.is_empty() {
            self.sink.consume(&mut out)?;
        }
        Ok(())
    }
}

/// Runs `compute` from every source on `sched`, streaming rows to `sink`.
///
/// Sources must be node offsets `< graph.num_nodes()`; a source listed twice
/// is computed (and output) twice.
pub fn run_ife<G: Graph, C: Compute>(
    sched: &Scheduler,
    graph: Arc<G>,
    compute: Arc<C>,
    sources: &[u64],
    opts: &IfeOptions,
    cancel: &CancelToken,
    sink: Arc<dyn Sink<C::Row>>,
) -> Result<RunStats> {
    run_ife_with_reverse(sched, graph, None, compute, sources, opts, cancel, sink)
}

/// [`run_ife`] with `reverse`, the graph with every rel turned around,
/// when given: the dense levels of a computation that [`Compute::pulls`]
/// run bottom-up (each node not reached yet looks for an in-neighbour in
/// the frontier and stops at the first), the others top-down.
#[allow(clippy::too_many_arguments)]
pub fn run_ife_with_reverse<G: Graph, C: Compute>(
    sched: &Scheduler,
    graph: Arc<G>,
    reverse: Option<Arc<G>>,
    compute: Arc<C>,
    sources: &[u64],
    opts: &IfeOptions,
    cancel: &CancelToken,
    sink: Arc<dyn Sink<C::Row>>,
) -> Result<RunStats> {
    let n = graph.num_nodes();
    if let Some(&bad) = sources.iter().find(|&&s| s >= n) {
        return Err(Error::runtime(format!(
            "source node offset {bad} out of range (the graph has {n} nodes)"
        )));
    }
    let threads = if opts.threads == 0 {
        sched.num_threads()
    } else {
        opts.threads.min(sched.num_threads())
    }
    .max(1);
    let mut policy = opts.policy;
    if policy == Policy::ManyThreadsKMultiSources && compute.max_lanes() < 2 {
        policy = Policy::ManyThreadsKSources;
    }
    let avg_degree = graph.num_edges() as f64 / n.max(1) as f64;
    let default_k = if avg_degree > 32.0 {
        threads
    } else {
        2 * threads
    };
    let (lanes, share, k) = match policy {
        Policy::OneThreadOneSource => (1, false, threads),
        Policy::ManyThreadsOneSource => (1, true, 1),
        Policy::ManyThreadsKSources => (1, true, opts.k.unwrap_or(default_k).max(1)),
        Policy::ManyThreadsKMultiSources => (
            compute.max_lanes().min(64),
            true,
            opts.k.unwrap_or(threads).max(1),
        ),
    };
    let task = Arc::new(IfeTask {
        graph,
        reverse,
        compute,
        sink,
        sources: sources.to_vec(),
        lanes,
        share,
        k,
        next_source: AtomicUsize::new(0),
        launched: AtomicUsize::new(0),
        pulled: AtomicUsize::new(0),
        active: Mutex::new(Vec::new()),
        budget: opts.budget.clone(),
    });
    sched.run(Arc::clone(&task) as Arc<dyn Task>, threads, cancel)?;
    Ok(RunStats {
        policy,
        k,
        threads,
        source_morsels: task.launched.load(Ordering::Relaxed),
        pulled_levels: task.pulled.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::{shortest_lengths, LenRow, ShortestLengths};
    use crate::graph::InMemoryCsr;

    /// 1,000 nodes: node 999 points at ten hubs (0..10), each hub at 500
    /// others, and every other node at its successor.
    fn hubs() -> InMemoryCsr {
        let n = 1000u64;
        let mut edges: Vec<(u64, u64)> = (0..10).map(|h| (999, h)).collect();
        for h in 0..10 {
            edges.extend((0..500).map(|k| (h, 10 + (h * 97 + k * 7) % 980)));
        }
        edges.extend((10..998).map(|u| (u, u + 1)));
        InMemoryCsr::from_edges(n, &edges)
    }

    #[test]
    fn direction_switch_follows_rel_counts() {
        let g = hubs();
        let n = g.num_nodes();
        let hub_list: Vec<u64> = (0..10).collect();
        let thin: Vec<u64> = (100..110).collect();
        // Ten hubs hold most rels: pull, though they are 1 % of the nodes.
        assert!(pulls_next(&g, &mut (), &hub_list, false, n, 989));
        // Ten nodes of one rel each: stay top-down.
        assert!(!pulls_next(&g, &mut (), &thin, false, n, 989));
        assert!(!pulls_next(&g, &mut (), &[], false, n, 989));
        // Bottom-up goes on while the frontier holds 1/24 of the nodes.
        let wide: Vec<u64> = (100..142).collect();
        assert!(pulls_next(&g, &mut (), &wide, true, n, 500));
        assert!(!pulls_next(&g, &mut (), &wide[..41], true, n, 500));
        // A long frontier is sampled (every other node of 300): one rel
        // each stays top-down; with a hub among every other node it pulls.
        let long: Vec<u64> = (100..400).collect();
        assert!(!pulls_next(&g, &mut (), &long, false, n, 989));
        let mixed: Vec<u64> = (0..10).chain(100..390).collect();
        assert!(pulls_next(&g, &mut (), &mixed, false, n, 989));
    }

    #[test]
    fn a_sparse_frontier_of_hubs_runs_bottom_up() {
        let g = Arc::new(hubs());
        let edges: Vec<(u64, u64)> = (0..g.num_nodes())
            .flat_map(|u| {
                let mut out = Vec::new();
                g.neighbors(u, &mut (), |w, _| out.push((w, u)));
                out
            })
            .collect();
        let back = Arc::new(InMemoryCsr::from_edges(g.num_nodes(), &edges));
        let sched = Scheduler::new(2);
        let cancel = CancelToken::new();
        for threads in [1, 2] {
            let opts = IfeOptions {
                threads,
                ..IfeOptions::default()
            };
            let sink = Arc::new(CollectSink::<LenRow>::default());
            let compute = Arc::new(ShortestLengths {
                lower: 0,
                upper: 30,
                dst_mask: None,
            });
            let stats = run_ife_with_reverse(
                &sched,
                Arc::clone(&g),
                Some(Arc::clone(&back)),
                compute,
                &[999],
                &opts,
                &cancel,
                sink.clone(),
            )
            .unwrap();
            // Level 1 (the ten hubs) is under 1/8 of the nodes, yet pulls.
            assert!(stats.pulled_levels >= 1, "{stats:?}");
            let mut rows = sink.take();
            rows.sort_unstable();
            let want = shortest_lengths(&sched, &g, &[999], 0, 30, &opts, &cancel).unwrap();
            assert_eq!(rows, want);
        }
    }

    /// Counts what the morsels hold; refuses beyond `limit` bytes.
    struct TestBudget {
        limit: u64,
        held: std::sync::atomic::AtomicU64,
        peak: std::sync::atomic::AtomicU64,
    }

    impl TestBudget {
        fn new(limit: u64) -> Arc<TestBudget> {
            Arc::new(TestBudget {
                limit,
                held: Default::default(),
                peak: Default::default(),
            })
        }

        /// Options for one source morsel at a time on two threads, charged
        /// to this budget.
        fn one_morsel(self: &Arc<Self>) -> IfeOptions {
            IfeOptions {
                policy: Policy::ManyThreadsKSources,
                threads: 2,
                k: Some(1),
                budget: Some(Budget(self.clone())),
            }
        }
    }

    impl StateBudget for TestBudget {
        fn charge(&self, bytes: u64) -> Result<()> {
            let now = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
            if now > self.limit {
                self.held.fetch_sub(bytes, Ordering::Relaxed);
                return Err(Error::runtime("state over budget"));
            }
            self.peak.fetch_max(now, Ordering::Relaxed);
            Ok(())
        }

        fn release(&self, bytes: u64) {
            self.held.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// Every source morsel charges its state while it runs and gives it
    /// back; a budget that refuses ends the run with its error.
    #[test]
    fn source_morsels_charge_their_state() {
        let g = Arc::new(hubs());
        let sched = Scheduler::new(2);
        let cancel = CancelToken::new();
        let compute = Arc::new(ShortestLengths {
            lower: 0,
            upper: 30,
            dst_mask: None,
        });
        let srcs: Vec<u64> = (0..100).collect();
        // One source: a visited bit set and two frontiers (1,000 nodes, 16
        // words each); a lane morsel 24 bytes a node more.
        let one = 3 * 16 * 8;
        let lanes = 24 * 1000 + 2 * 16 * 8;
        for (policy, per_morsel) in [
            (Policy::OneThreadOneSource, one),
            (Policy::ManyThreadsKSources, one),
            (Policy::ManyThreadsKMultiSources, lanes),
        ] {
            let budget = TestBudget::new(u64::MAX);
            let opts = IfeOptions {
                policy,
                threads: 2,
                k: Some(2),
                budget: Some(Budget(budget.clone())),
            };
            let run = |opts: &IfeOptions| {
                let sink = Arc::new(CollectSink::<LenRow>::default());
                run_ife(
                    &sched,
                    Arc::clone(&g),
                    compute.clone(),
                    &srcs,
                    opts,
                    &cancel,
                    sink,
                )
            };
            run(&opts).unwrap();
            let peak = budget.peak.load(Ordering::Relaxed);
            assert!(
                peak >= per_morsel && peak <= 2 * per_morsel,
                "{policy:?}: {peak}"
            );
            assert_eq!(budget.held.load(Ordering::Relaxed), 0, "{policy:?}");
            // A budget below one morsel's state fails the run.
            let tight = TestBudget::new(per_morsel - 1);
            let opts = IfeOptions {
                budget: Some(Budget(tight.clone())),
                ..opts
            };
            let err = run(&opts).unwrap_err();
            assert!(err.to_string().contains("over budget"), "{err}");
            assert_eq!(tight.held.load(Ordering::Relaxed), 0);
        }
    }

    /// A per-source Dijkstra charges its heap as it grows, and an
    /// all-cheapest one its parent lists too (in steps of 1 MiB), on top
    /// of its per-node arrays; a budget they outgrow fails the run, and
    /// everything is given back with the morsel.
    #[test]
    fn weighted_searches_charge_their_heaps_and_parent_lists() {
        use crate::compute::{PathMode, PathRow};
        use crate::weighted_paths::WeightedPaths;
        // 0 -> 1..=k (one heap entry each, all in the heap at once), and
        // each of them -> k + 1 at the same cost (k parents of one node).
        let k = 100_000u64;
        let n = k + 2;
        let mut edges: Vec<(u64, u64)> = (1..=k).map(|v| (0, v)).collect();
        edges.extend((1..=k).map(|v| (v, k + 1)));
        let g = Arc::new(InMemoryCsr::from_edges(n, &edges));
        let weights: Arc<[f64]> = vec![1.0; edges.len()].into();
        let sched = Scheduler::new(2);
        let frontiers = 2 * n.div_ceil(64) * 8;
        for (mode, per_node, grows) in [
            // 100 k heap entries of 24 bytes.
            (PathMode::One, 33, 2_400_000),
            // 200 k parent edges of 16 bytes and 100 k heap entries of 16.
            (PathMode::All, 49, 4_800_000),
        ] {
            let state = per_node * n + frontiers;
            let run = |limit: u64| {
                let budget = TestBudget::new(limit);
                let opts = budget.one_morsel();
                let compute = WeightedPaths::new(Arc::clone(&weights), 1, mode).unwrap();
                let sink = Arc::new(CollectSink::<PathRow>::default());
                let out = run_ife(
                    &sched,
                    Arc::clone(&g),
                    Arc::new(compute),
                    &[0],
                    &opts,
                    &CancelToken::new(),
                    sink.clone(),
                );
                (out.map(|_| sink.take().len()), budget)
            };
            let (out, budget) = run(u64::MAX);
            // Every node but the source; node k + 1 once per parent for ALL.
            let paths = if mode == PathMode::One { k + 1 } else { 2 * k };
            assert_eq!(out.unwrap(), paths as usize, "{mode:?}");
            let peak = budget.peak.load(Ordering::Relaxed);
            // Charged in steps of 1 MiB: the last step may not be.
            let charged = peak - state;
            assert!(charged + (1 << 20) >= grows, "{mode:?}: {charged} charged");
            assert_eq!(budget.held.load(Ordering::Relaxed), 0, "{mode:?}");
            let (out, budget) = run(state + grows / 2);
            let err = out.unwrap_err();
            assert!(err.to_string().contains("over budget"), "{mode:?}: {err}");
            assert_eq!(budget.held.load(Ordering::Relaxed), 0, "{mode:?}");
        }
    }

    /// The parent arenas of all shortest paths are charged as they grow
    /// (24 bytes a parent edge, every reached node has one) and given back
    /// with the morsel; a budget they outgrow fails the run.
    #[test]
    fn parent_arenas_charge_their_growth() {
        use crate::compute::{PathMode, PathRow, ShortestPaths};
        let g = Arc::new(hubs());
        let sched = Scheduler::new(2);
        let cancel = CancelToken::new();
        let compute = Arc::new(ShortestPaths::new(0, 30, PathMode::All));
        // A level and a list head per node, two frontiers of 16 words.
        let state = 10 * 1000 + 2 * 16 * 8;
        let run = |limit: u64| {
            let budget = TestBudget::new(limit);
            let opts = budget.one_morsel();
            let sink = Arc::new(CollectSink::<PathRow>::default());
            let out = run_ife(
                &sched,
                Arc::clone(&g),
                compute.clone(),
                &[999],
                &opts,
                &cancel,
                sink,
            );
            (out, budget)
        };
        let (out, budget) = run(u64::MAX);
        out.unwrap();
        // All 1,000 nodes are reached from 999 (the source has no parent).
        let peak = budget.peak.load(Ordering::Relaxed);
        assert!(peak >= state + 24 * 999, "{peak}");
        assert_eq!(budget.held.load(Ordering::Relaxed), 0);
        let (out, budget) = run(state + 24 * 100);
        let err = out.unwrap_err();
        assert!(err.to_string().contains("over budget"), "{err}");
        assert_eq!(budget.held.load(Ordering::Relaxed), 0);
    }
}
