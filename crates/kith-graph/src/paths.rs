//! Path enumeration for variable-length patterns whose paths are needed
//! (a bound rel variable, a named path, `nodes(p)`): every walk, trail or
//! acyclic path of length `lower..=upper` from each source, one row each.
//!
//! Unlike the counting computations, the number of result rows is the
//! number of paths, so the work per source is a depth-first search with an
//! explicit node/rel stack: no level frontier to share, and memory bounded
//! by the depth times the degrees on the stack. Parallelism is across
//! source morsels (every policy runs one source per morsel; nT1S runs the
//! sources one after another). Rows are produced in DFS order per source,
//! so every policy and thread count yields the same multiset of rows.

use std::sync::atomic::{AtomicBool, Ordering};

use kith_common::{Error, Result};
use kith_sched::{CancelToken, Scheduler};

use crate::compute::{check_bounds, PathRow};
use crate::distance::HopBound;
use crate::engine::{
    flush_if_full, run_ife, CollectSink, Compute, Growth, IfeOptions, Nodes, Sink, Visit,
};
use crate::graph::Graph;
use std::sync::Arc;

/// Which paths a variable-length pattern enumerates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathSemantics {
    /// Nodes and rels may repeat (Kùzu's default).
    Walk,
    /// No rel repeats (openCypher relationship isomorphism, Kùzu `TRAIL`).
    Trail,
    /// No node repeats (Kùzu `ACYCLIC`).
    Acyclic,
}

impl PathSemantics {
    pub fn name(self) -> &'static str {
        match self {
            PathSemantics::Walk => "walk",
            PathSemantics::Trail => "trail",
            PathSemantics::Acyclic => "acyclic",
        }
    }
}

/// Every path of length `lower..=upper` under `semantics`, enumerated by a
/// per-source depth-first search.
pub struct WalkPaths {
    pub lower: u32,
    pub upper: u32,
    pub semantics: PathSemantics,
    /// Checked every [`CANCEL_EVERY`] expanded nodes (a single source can
    /// have exponentially many walks).
    pub cancel: Option<CancelToken>,
    /// Bit `v` set: node `v` may be an intermediate node of a path (a
    /// predicate on the path's nodes); the source and the destination are
    /// not tested. `None`: every node.
    pub node_mask: Option<Arc<[u64]>>,
    /// Bit `v` set: paths may end at `v` (a predicate on the destination);
    /// paths ending elsewhere are walked through but not output. `None`:
    /// every node.
    pub dst_mask: Option<Arc<[u64]>>,
    /// Hops left to a destination: a path is not extended to a node from
    /// which no destination is reachable within `upper`.
    pub bound: Option<HopBound>,
}

const CANCEL_EVERY: u32 = 4096;

/// The state of a computation that does all its work for a source at once,
/// on the source's level-0 frontier (path enumeration, per-source
/// Dijkstra): a flag that its one run happened (a frontier morsel is never
/// processed twice; the flag asserts that).
pub struct SourceOnce {
    done: AtomicBool,
}

impl SourceOnce {
    pub fn new() -> SourceOnce {
        SourceOnce {
            done: AtomicBool::new(false),
        }
    }

    /// Whether this level-0 visit should run the source's search: false
    /// when the frontier is empty. The level-0 frontier is the
    /// (deduplicated) source; the source list is authoritative (a source
    /// listed twice has two morsels).
    pub fn claim(&self, iter: u32, nodes: Nodes<'_>) -> Result<bool> {
        if iter != 0 {
            return Err(Error::internal("a per-source search past level 0"));
        }
        if self.done.swap(true, Ordering::Relaxed) {
            return Err(Error::internal(
                "a per-source search ran twice for a source",
            ));
        }
        let mut any = false;
        nodes.for_each(|_| {
            any = true;
            Ok(())
        })?;
        Ok(any)
    }
}

impl Default for SourceOnce {
    fn default() -> Self {
        SourceOnce::new()
    }
}

/// A computation that does all of a source's work at once, on the
/// source's level-0 frontier (path enumeration, per-source Dijkstra): its
/// [`Compute`] is the one below, which runs [`SourceSearch::search`] once
/// per source morsel.
pub trait SourceSearch: Send + Sync + 'static {
    type Row: Send + 'static;

    /// Every row of source `src`, into `out`; a search that emits many
    /// hands them to `sink` as they pile up ([`flush_if_full`]), and one
    /// whose state grows as it goes charges it to `growth`.
    fn search<G: Graph>(
        &self,
        g: &G,
        scratch: &mut G::Scratch,
        src: u64,
        out: &mut Vec<Self::Row>,
        sink: &dyn Sink<Self::Row>,
        growth: Growth<'_>,
    ) -> Result<()>;

    /// The per-node arrays one search over `num_nodes` nodes allocates
    /// (a Dijkstra's costs and parents; a DFS holds only its stack).
    fn scratch_bytes(&self, _num_nodes: u64) -> u64 {
        0
    }
}

impl<S: SourceSearch> Compute for S {
    type Aux = SourceOnce;
    type Row = S::Row;

    fn upper(&self) -> u32 {
        0
    }

    fn new_aux(&self, _n: u64, _srcs: &[u64], _workers: usize) -> SourceOnce {
        SourceOnce::new()
    }

    /// The search's per-node arrays, allocated as its one source runs.
    fn state_bytes(&self, n: u64, _lanes: usize) -> u64 {
        self.scratch_bytes(n)
    }

    fn process<G: Graph>(
        &self,
        aux: &SourceOnce,
        v: &mut Visit<'_, G, S::Row>,
        nodes: Nodes<'_>,
    ) -> Result<()> {
        if !aux.claim(v.iter, nodes)? {
            return Ok(());
        }
        self.search(v.graph, v.scratch, v.srcs[0], v.out, v.sink, v.growth)
    }
}

/// One DFS frame: the frame's neighbours are `edges[start..end]`, the next
/// to try is `edges[cursor]`.
#[derive(Clone, Copy)]
struct Frame {
    start: usize,
    cursor: usize,
    end: usize,
}

/// Reusable DFS buffers (one per call; reused across the sources of a morsel).
#[derive(Default)]
struct Dfs {
    /// Neighbour lists of the nodes on the stack, back to back.
    edges: Vec<(u64, u64)>,
    frames: Vec<Frame>,
    nodes: Vec<u64>,
    rels: Vec<u64>,
}

impl WalkPaths {
    pub fn new(lower: u32, upper: u32, semantics: PathSemantics) -> Result<WalkPaths> {
        check_bounds(lower, upper)?;
        Ok(WalkPaths {
            lower,
            upper,
            semantics,
            cancel: None,
            node_mask: None,
            dst_mask: None,
            bound: None,
        })
    }

    /// Whether extending the current path with `(w, r)` keeps the semantics.
    #[inline]
    fn admissible(&self, dfs: &Dfs, w: u64, r: u64) -> bool {
        match self.semantics {
            PathSemantics::Walk => true,
            PathSemantics::Trail => !dfs.rels.contains(&r),
            PathSemantics::Acyclic => !dfs.nodes.contains(&w),
        }
    }

    /// Pushes `node` with its neighbour list (unless at the upper bound).
    fn push<G: Graph>(&self, dfs: &mut Dfs, g: &G, scratch: &mut G::Scratch, node: u64) {
        let start = dfs.edges.len();
        // Extending from `node` makes it intermediate (unless the source).
        let may_pass = dfs.rels.is_empty()
            || self
                .node_mask
                .as_ref()
                .is_none_or(|m| crate::graph::mask_has(m, node));
        if (dfs.rels.len() as u32) < self.upper && may_pass {
            let edges = &mut dfs.edges;
            g.neighbors(node, scratch, |w, r| edges.push((w, r)));
        }
        dfs.frames.push(Frame {
            start,
            cursor: start,
            end: dfs.edges.len(),
        });
    }

    fn emit(&self, dfs: &Dfs, src: u64, out: &mut Vec<PathRow>) {
        let dst = *dfs.nodes.last().unwrap_or(&src);
        let dst_ok = self
            .dst_mask
            .as_ref()
            .is_none_or(|m| crate::graph::mask_has(m, dst));
        if (dfs.rels.len() as u32) >= self.lower && dst_ok {
            out.push(PathRow {
                src,
                dst,
                nodes: dfs.nodes.clone(),
                rels: dfs.rels.clone(),
                cost_bits: 0,
            });
        }
    }

    /// Every admissible path from `src`, in DFS order (neighbours in CSR
    /// order), handed to `sink` as they pile up; a finished run (a LIMIT
    /// satisfied downstream) ends the enumeration.
    fn run<G: Graph>(
        &self,
        g: &G,
        scratch: &mut G::Scratch,
        src: u64,
        out: &mut Vec<PathRow>,
        sink: &dyn Sink<PathRow>,
    ) -> Result<()> {
        let mut dfs = Dfs::default();
        dfs.nodes.push(src);
        self.emit(&dfs, src, out);
        self.push(&mut dfs, g, scratch, src);
        let mut steps = 0u32;
        while let Some(top) = dfs.frames.last_mut() {
            if top.cursor == top.end {
                let start = top.start;
                dfs.frames.pop();
                dfs.edges.truncate(start);
                dfs.nodes.pop();
                dfs.rels.pop();
                continue;
            }
            let (w, r) = dfs.edges[top.cursor];
            top.cursor += 1;
            if !self.admissible(&dfs, w, r)
                || self
                    .bound
                    .as_ref()
                    .is_some_and(|b| !b.may_reach(w, dfs.rels.len() as u32 + 1, self.upper))
            {
                continue;
            }
            dfs.nodes.push(w);
            dfs.rels.push(r);
            self.emit(&dfs, src, out);
            self.push(&mut dfs, g, scratch, w);
            steps += 1;
            if steps == CANCEL_EVERY {
                steps = 0;
                if let Some(c) = &self.cancel {
                    if c.should_stop()? {
                        return Ok(());
                    }
                }
                flush_if_full(out, sink)?;
            }
        }
        Ok(())
    }
}

impl SourceSearch for WalkPaths {
    type Row = PathRow;

    fn search<G: Graph>(
        &self,
        g: &G,
        scratch: &mut G::Scratch,
        src: u64,
        out: &mut Vec<PathRow>,
        sink: &dyn Sink<PathRow>,
        _growth: Growth<'_>,
    ) -> Result<()> {
        // The DFS holds its stack only: each frame's neighbours.
        self.run(g, scratch, src, out, sink)
    }
}

/// Every path of length `lower..=upper` under `semantics` from each source,
/// sorted.
#[allow(clippy::too_many_arguments)]
pub fn walk_paths<G: Graph>(
    sched: &Scheduler,
    graph: &Arc<G>,
    sources: &[u64],
    lower: u32,
    upper: u32,
    semantics: PathSemantics,
    opts: &IfeOptions,
    cancel: &CancelToken,
) -> Result<Vec<PathRow>> {
    let mut c = WalkPaths::new(lower, upper, semantics)?;
    c.cancel = Some(cancel.clone());
    let sink = Arc::new(CollectSink::<PathRow>::default());
    run_ife(
        sched,
        Arc::clone(graph),
        Arc::new(c),
        sources,
        opts,
        cancel,
        sink.clone(),
    )?;
    let mut rows = sink.take();
    rows.sort_unstable();
    Ok(rows)
}
