//! The recursive join between two query parts: runs an IFE computation
//! (`kith-graph`) from the distinct source nodes of the materialized input
//! rows and joins its `(src, dst, len, count)` rows back to them by source.
//! Walks and shortest paths are counted, not enumerated: the count column
//! becomes the row's multiplicity in the next part (see
//! [`super::scan_counted_rows`]). Paths are enumerated ([`WalkPaths`]) only
//! for trails, acyclic paths, node predicates, and when the query reads the
//! path or rel list (then one row per path, with its values). Property maps
//! and rel predicates are rel-id masks; an OPTIONAL MATCH makes the join
//! left outer.

use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

use kith_common::{Chunk, Error, InternalId, LogicalType, Result, Value, ValueVector};
use kith_graph::{
    bound_pays, hops_to_targets, run_ife, run_ife_with_reverse, AllShortestCounts,
    AllWeightedCounts, Budget, Compute, Graph, HopBound, IfeOptions, PathMode, PathRow,
    PathSemantics, RelWeights, ShortestLengths, ShortestPaths, ShortestTrees, Sink, StateBudget,
    StorageCsr, TreeRow, UnionCsr, UnionMember, WalkCounts, WalkPaths, WeightedPaths,
    WeightedShortest, MAX_UPPER,
};
pub use kith_graph::{Policy, RunStats};
use kith_planner::bound::RecursiveMode;
use kith_planner::plan::{ExtendDirection, RecursiveJoin};
use kith_sched::Scheduler;
use kith_storage::{RelDirection, RelTableData, TableData};

use super::join_rows::{
    room_for, DstIds, JoinRows, JoinRowsConsumer, JoinRowsSink, PathRowsSink, PathRowsSpec,
    SourceRows,
};
use super::path_values::{FoundPaths, IdSpace, LazyPaths, PathPart};
use super::property_mask::{node_mask, PredicateReader};
use super::QueryContext;
use crate::expression::kernels::equals;
use crate::memory::{MemoryCharge, QueryMemory};
use kith_common::TableId;
use kith_planner::expr::BoundExprKind;
use parking_lot::Mutex;

/// The largest accepted `var_length_max_depth`.
pub const MAX_DEPTH_LIMIT: u32 = MAX_UPPER;

/// Default of `var_length_max_depth`.
pub const DEFAULT_MAX_DEPTH: u32 = 30;

/// Per-connection settings of recursive computations.
#[derive(Debug, Clone)]
pub struct RecursiveSettings {
    /// `None` (the default, `CALL recursive_policy='auto'`): chosen per
    /// run by [`auto_policy`].
    pub policy: Option<Policy>,
    /// `None`: chosen from the thread count and the average degree.
    pub k: Option<usize>,
    pub max_depth: u32,
}

impl Default for RecursiveSettings {
    fn default() -> Self {
        RecursiveSettings {
            policy: None,
            k: None,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// Sources from which the automatic policy packs them into bit lanes
/// (nTkMS) when the computation has a lane version. Measured on R-MAT
/// scale 16 (65k nodes, 0.9M edges; BENCHMARKS.md): shortest-path lengths
/// from 8 sources take 120 ms with nTkMS against 160 ms with nTkS at 1
/// thread (90 against 100 ms at 2), from 64 sources 210 against 420 ms
/// (190 against 230 ms); from one source both are the same.
pub const AUTO_MULTI_SOURCE_MIN: usize = 8;

/// Bytes of lane state per node per multi-source morsel (two frontiers and
/// the visited lanes, one u64 each).
const LANE_BYTES_PER_NODE: u64 = 24;

/// [`LANE_BYTES_PER_NODE`] for shortest paths kept as parent trees: one
/// parent word per lane more (the paper's 536 bytes).
const TREE_LANE_BYTES_PER_NODE: u64 = LANE_BYTES_PER_NODE + 64 * 8;

/// The policy of one run: the connection's setting if it named one, else
/// nTkMS when the computation has a lane version (shortest-path lengths),
/// there are at least [`AUTO_MULTI_SOURCE_MIN`] sources and the lane state
/// of one morsel per thread fits a quarter of the memory limit; nTkS (the
/// paper's robust default) otherwise. PROFILE reports the choice.
pub fn auto_policy(
    settings: &RecursiveSettings,
    lane_bytes_per_node: Option<u64>,
    sources: usize,
    nodes: u64,
    threads: usize,
    memory_limit: u64,
) -> Policy {
    if let Some(p) = settings.policy {
        return p;
    }
    let Some(per_node) = lane_bytes_per_node else {
        return Policy::ManyThreadsKSources;
    };
    let lane_bytes = per_node
        .saturating_mul(nodes)
        .saturating_mul(threads.max(1) as u64);
    if sources >= AUTO_MULTI_SOURCE_MIN && lane_bytes <= memory_limit / 4 {
        Policy::ManyThreadsKMultiSources
    } else {
        Policy::ManyThreadsKSources
    }
}

/// The options of one run of `join` from `sources` sources over `nodes`
/// nodes: the policy from [`auto_policy`] (only shortest-path lengths have a
/// lane version), the connection's k.
fn ife_options(
    join: &RecursiveJoin,
    settings: &RecursiveSettings,
    sources: usize,
    nodes: u64,
    threads: usize,
    ctx: &QueryContext,
) -> IfeOptions {
    // Shortest lengths have a lane version, and so do shortest paths read
    // as values when kept as parent trees (`ShortestTrees`; a search whose
    // ids do not pack falls back to nTkS, which PROFILE reports).
    let lane_bytes = match join.mode {
        RecursiveMode::Shortest if !enumerates(join) => Some(LANE_BYTES_PER_NODE),
        RecursiveMode::Shortest if join.with_path || join.with_rels => {
            Some(TREE_LANE_BYTES_PER_NODE)
        }
        _ => None,
    };
    IfeOptions {
        policy: auto_policy(
            settings,
            lane_bytes,
            sources,
            nodes,
            threads,
            ctx.pager.memory_limit_bytes(),
        ),
        threads,
        k: settings.k,
        budget: Some(Budget(Arc::clone(&ctx.memory) as Arc<dyn StateBudget>)),
    }
}

/// The type of the trailing count column.
pub const COUNT_TYPE: LogicalType = LogicalType::UInt64;

/// Resolves the bounds of `join` against the settings.
pub fn bounds(join: &RecursiveJoin, settings: &RecursiveSettings) -> Result<(u32, u32)> {
    if join.mode.weighted() {
        return Ok((join.lower.min(1) as u32, u32::MAX));
    }
    let max = settings.max_depth.min(MAX_UPPER);
    let upper = match join.upper {
        None => max as u64,
        Some(u) if u > max as u64 => {
            return Err(Error::runtime(format!(
                "the upper bound {u} of a variable-length relationship exceeds var_length_max_depth ({max}); raise it with CALL var_length_max_depth={u}"
            )))
        }
        Some(u) => u,
    };
    // An empty interval (`*2..1`): the caller matches nothing.
    Ok((join.lower.min(u32::MAX as u64) as u32, upper as u32))
}

/// Whether [`recursive_join`] can hand `join`'s rows on batch by batch as
/// the search finds them: every search but the shortest and weighted
/// shortest paths read as values. One shortest path per destination keeps
/// each source's parent tree and reads a path back from it only when its
/// value is built (a `PathRow` per destination took twice as long for 64
/// sources on R-MAT 16); a weighted search's paths from one source share
/// most rels, which batches of them would read again and again (1.5× the
/// time for 8 sources).
pub fn forwards(join: &RecursiveJoin) -> bool {
    let paths = join.with_path || join.with_rels;
    !(paths
        && matches!(
            join.mode,
            RecursiveMode::Shortest
                | RecursiveMode::WeightedShortest
                | RecursiveMode::AllWeightedShortest
        ))
}

/// Joins `rows` with the recursive computation from the sources in them:
/// the result has the input columns, the destination id, the length (when
/// asked for), the path columns and the count. With `forward`, the rows go
/// to it batch by batch as the search finds them (where [`forwards`] holds:
/// the counting ones through a [`JoinRowsSink`], the enumerating ones
/// through a [`PathRowsSink`]; a left outer join's padded rows go last) and
/// the output's rows are empty.
pub fn recursive_join(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    sched: &Scheduler,
    threads: usize,
    settings: &RecursiveSettings,
    forward: Option<Arc<dyn JoinRowsConsumer>>,
) -> Result<RecursiveOutput> {
    if forward.is_some() && !forwards(join) {
        return Err(Error::internal(
            "recursive join rows forwarded where they cannot be",
        ));
    }
    let (lower, upper) = bounds(join, settings)?;
    if lower > upper {
        let stats = RunStats {
            policy: settings.policy.unwrap_or_default(),
            k: settings.k.unwrap_or(0),
            threads,
            source_morsels: 0,
            pulled_levels: 0,
        };
        let rows = empty_interval(join, rows, ctx)?;
        // A left outer join's rows are all padded ones.
        let (rows, forwarded) = match forward {
            Some(to) => {
                let n = rows.num_rows() as u64;
                let input = Arc::clone(&rows.input);
                if n > 0 {
                    to.consume(rows)?;
                }
                (JoinRows::empty(input, join.with_len), Some(n))
            }
            None => (rows, None),
        };
        return Ok(RecursiveOutput {
            rows,
            stats,
            forwarded,
        });
    }
    if join.rel_tables.len() > 1 || join.node_tables.len() > 1 {
        let bounds = (lower, upper);
        return union_join(join, rows, ctx, sched, threads, bounds, settings, forward);
    }
    let rel = match ctx.version.table(join.rel_table)?.as_ref() {
        TableData::Rel(r) => r.clone(),
        TableData::Node(_) => return Err(Error::internal("expected rel table storage")),
    };
    let num_nodes = match ctx.version.table(join.node_table)?.as_ref() {
        TableData::Node(n) => n.num_rows,
        TableData::Rel(_) => return Err(Error::internal("expected node table storage")),
    };
    let dir = match join.direction {
        ExtendDirection::Fwd => RelDirection::Fwd,
        ExtendDirection::Bwd => RelDirection::Bwd,
    };
    // Weighted searches read the weight property beside the neighbours
    // (rel properties are stored in CSR order in both directions), so a
    // search reads only the weights of the rels it walks.
    let weight_column = match (&join.mode, &join.weight) {
        (m, Some((prop, ty))) if m.weighted() => {
            let column = rel
                .column_of(*prop)
                .ok_or_else(|| Error::internal("weight property has no storage column"))?;
            Some((column, ty.clone()))
        }
        (m, None) if m.weighted() => {
            return Err(Error::internal("weighted shortest path without a weight"))
        }
        _ => None,
    };
    let mut csr = match &weight_column {
        Some((column, ty)) => {
            StorageCsr::with_weights(&ctx.pager, rel.csr(dir), *column, ty.clone())?
        }
        None => StorageCsr::new(&ctx.pager, rel.csr(dir))?,
    }
    .with_num_nodes(num_nodes);
    let mask = rel_mask(join, join.rel_table, &rel, ctx)?;
    if let Some(mask) = &mask {
        csr = csr.with_rel_mask(Arc::clone(mask));
    }
    let graph = Arc::new(csr);
    let back = match dir {
        RelDirection::Fwd => RelDirection::Bwd,
        RelDirection::Bwd => RelDirection::Fwd,
    };
    // The reverse CSR without the rel mask: a looser bound, still a lower
    // bound on the hops left.
    let reverse_bound = |mask: &[u64], upper: u32| -> Result<Option<HopBound>> {
        let reverse = StorageCsr::new(&ctx.pager, rel.csr(back))?.with_num_nodes(num_nodes);
        Ok(hops_to_targets(&reverse, mask, upper))
    };
    let (sources, row_src, index_of) = collect_sources(join, rows, |id| Some(id.offset()))?;
    let opts = ife_options(join, settings, sources.len(), num_nodes, threads, ctx);
    let weights = weight_column.map(|_| RelWeights::Pinned);
    if enumerates(join) {
        let (node_table, rel_table) = (join.node_table, join.rel_table);
        let ids = PathIds {
            node: &|d| InternalId::new(node_table, d),
            dst_ok: &|_| true,
            space: vec![(node_table, 0)],
            rels: vec![(rel_table, 0)],
            rel_id_bound: rel_id_bound(&rel),
        };
        let srcs = Sources {
            list: &sources,
            row_src: &row_src,
            index_of: &index_of,
        };
        return paths_join(
            join,
            rows,
            ctx,
            sched,
            &opts,
            graph,
            &srcs,
            (lower, upper),
            &ids,
            &reverse_bound,
            weights,
            forward,
        );
    }
    // Destinations the WHERE rules out need no rows, and a shortest-path
    // search from one source ends once it has reached all the others.
    let space = [(join.node_table, 0)];
    let dst_mask = dst_mask(join, &space, num_nodes, ctx)?;
    // A destination label no table has (`(b:Missing)`) leaves no table.
    let dst_ok = join.dst_tables.contains(&join.node_table);
    // Counting, lengths and costs searches hand their rows to the join's
    // rows (or the next pipeline) as they go.
    let srcs = Sources {
        list: &sources,
        row_src: &row_src,
        index_of: &index_of,
    };
    let dst_ids = dst_ok.then_some(DstIds::Table(join.node_table));
    let sink = || {
        search_sink(
            join, rows, &srcs, num_nodes, &dst_mask, &dst_ids, &forward, ctx,
        )
    };
    let cancel = &ctx.cancel;
    let done = |out: Arc<JoinRowsSink>, stats| search_output(join, rows, &out, stats);
    // Every search hands its rows to the join-row sink as it goes.
    let (out, stats) = match join.mode {
        RecursiveMode::Walk => {
            let walks = walk_counts(
                &*graph,
                sources.len(),
                dst_mask.as_ref(),
                (lower, upper),
                &reverse_bound,
            )?;
            let out = Arc::new(sink());
            let (walks, to) = (Arc::new(walks), out.clone());
            let stats = run_ife(sched, graph, walks, &sources, &opts, cancel, to)?;
            (out, stats)
        }
        RecursiveMode::Shortest => {
            let compute = ShortestLengths {
                lower,
                upper,
                dst_mask: dst_mask.clone(),
            };
            // A one-source search runs its dense levels bottom-up over the
            // reverse CSR (the same rels: the same mask).
            let mut reverse = StorageCsr::new(&ctx.pager, rel.csr(back))?.with_num_nodes(num_nodes);
            if let Some(mask) = &mask {
                reverse = reverse.with_rel_mask(Arc::clone(mask));
            }
            let (out, reverse) = (Arc::new(sink()), Some(Arc::new(reverse)));
            let (compute, to) = (Arc::new(compute), out.clone());
            let stats =
                run_ife_with_reverse(sched, graph, reverse, compute, &sources, &opts, cancel, to)?;
            (out, stats)
        }
        RecursiveMode::AllShortest => {
            let compute = AllShortestCounts {
                lower,
                upper,
                dst_mask: dst_mask.clone(),
            };
            let (out, compute) = (Arc::new(sink()), Arc::new(compute));
            let stats = run_ife(sched, graph, compute, &sources, &opts, cancel, out.clone())?;
            (out, stats)
        }
        RecursiveMode::WeightedShortest => {
            let weights =
                weights.ok_or_else(|| Error::internal("weighted shortest path without weights"))?;
            let compute = Arc::new(WeightedShortest::new(weights)?);
            // Dijkstra reaches its source at cost 0: a row only from 0 rels.
            let out = Arc::new(sink().weighted(lower == 0));
            let stats = run_ife(sched, graph, compute, &sources, &opts, cancel, out.clone())?;
            (out, stats)
        }
        RecursiveMode::AllWeightedShortest => {
            let weights =
                weights.ok_or_else(|| Error::internal("weighted shortest path without weights"))?;
            let mut compute = AllWeightedCounts::new(weights, lower)?;
            compute.cancel = Some(ctx.cancel.clone());
            compute.dst_mask = dst_mask.clone();
            let out = Arc::new(sink().weighted(true));
            let stats = run_ife(
                sched,
                graph,
                Arc::new(compute),
                &sources,
                &opts,
                cancel,
                out.clone(),
            )?;
            (out, stats)
        }
        RecursiveMode::Trail | RecursiveMode::Acyclic => {
            return Err(Error::internal("TRAIL and ACYCLIC paths are enumerated"))
        }
    };
    done(out, stats)
}

/// The join's output for an empty interval (`*2..1`): no paths.
fn empty_interval(join: &RecursiveJoin, rows: &Arc<Chunk>, ctx: &QueryContext) -> Result<JoinRows> {
    let f = Found {
        row_src: &[],
        index_of: &HashMap::new(),
        num_sources: 0,
        rows: FoundList::Rows(&[]),
        weighted: false,
        path_numbers: join.with_path || join.with_rels,
    };
    let mut out = emit_rows(join, rows, ctx, &f, &|_| None)?;
    let columns = path_columns(join, rows);
    out.paths = match columns.is_empty() {
        true => None,
        false => Some(LazyPaths::new(
            ctx,
            FoundPaths::Rows(Vec::new()),
            IdSpace {
                nodes: Vec::new(),
                rels: Vec::new(),
            },
            columns,
            &[],
            join.element_properties,
            None,
        )?),
    };
    Ok(out)
}

/// What a recursive join returns: its rows and, when it outputs paths,
/// what builds their values from the path numbers in the rows.
pub struct RecursiveOutput {
    pub rows: JoinRows,
    pub stats: RunStats,
    /// Set when the rows went to the consumer instead: how many.
    pub forwarded: Option<u64>,
}

/// The path columns of a join's rows (after the input columns, the
/// destination and the length), with the value each holds.
fn path_columns(join: &RecursiveJoin, rows: &Chunk) -> Vec<(usize, PathPart)> {
    let first = rows.columns.len() + 1 + usize::from(join.with_len);
    let mut columns = Vec::new();
    if join.with_path {
        columns.push((first, PathPart::Path));
    }
    if join.with_rels {
        columns.push((first + usize::from(join.with_path), PathPart::Rels));
    }
    columns
}

/// Whether `join` enumerates its paths (one row per path) instead of
/// counting them: trails and acyclic paths always (their counts do not
/// follow from per-node counts), walks when the path or its rels are output.
fn enumerates(join: &RecursiveJoin) -> bool {
    matches!(join.mode, RecursiveMode::Trail | RecursiveMode::Acyclic)
        || join.with_path
        || join.with_rels
        || join.node_predicate.is_some()
}

/// The hop bound of a walk search's graph for a destination mask
/// ([`hops_to_targets`] over the graph with its rels turned around).
type WalkBound<'a> = dyn Fn(&[u64], u32) -> Result<Option<HopBound>> + 'a;

/// The hop bound of walks from `sources` sources to the destinations of
/// `mask` over `graph`, when it pays ([`bound_pays`]).
fn walk_bound<G: Graph>(
    graph: &G,
    sources: usize,
    mask: Option<&Arc<[u64]>>,
    upper: u32,
    bound: &WalkBound<'_>,
) -> Result<Option<HopBound>> {
    let Some(mask) = mask else {
        return Ok(None);
    };
    let targets = mask.iter().map(|w| w.count_ones() as u64).sum();
    if !bound_pays(
        sources as u64,
        targets,
        graph.num_nodes(),
        graph.num_edges(),
        upper,
    ) {
        return Ok(None);
    }
    bound(mask, upper)
}

/// The walk counts of a join: rows only for the destinations of `mask`,
/// with walks bounded by the hops left to one when that pays.
fn walk_counts<G: Graph>(
    graph: &G,
    sources: usize,
    mask: Option<&Arc<[u64]>>,
    (lower, upper): (u32, u32),
    bound: &WalkBound<'_>,
) -> Result<WalkCounts> {
    Ok(WalkCounts {
        lower,
        upper,
        dst_mask: mask.cloned(),
        bound: walk_bound(graph, sources, mask, upper, bound)?,
    })
}

/// Maps the dense node and rel ids of a graph to internal ids.
struct PathIds<'a> {
    node: &'a dyn Fn(u64) -> InternalId,
    /// Whether a destination lies in one of the pattern's tables.
    dst_ok: &'a dyn Fn(InternalId) -> bool,
    /// Each node table with the first dense id of its nodes.
    space: Vec<(TableId, u64)>,
    /// Each rel table with the first dense id of its rels.
    rels: Vec<(TableId, u64)>,
    /// One past the largest rel id the search reports.
    rel_id_bound: u64,
}

/// One past the largest rel offset of a rel table (ids of deleted rels
/// included): the size of its range of dense rel ids.
fn rel_id_bound(rel: &RelTableData) -> u64 {
    rel.next_rel_id.max(rel.num_rels)
}

/// The sources of a join, as [`collect_sources`] returns them.
struct Sources<'a> {
    list: &'a [u64],
    row_src: &'a [Option<u64>],
    index_of: &'a HashMap<u64, usize>,
}

/// The join-row sink of a counting, lengths or costs search of `join` from
/// `srcs` over `num_nodes` nodes: rows kept (with room reserved for one
/// per source and node) or handed to `forward` batch by batch.
#[allow(clippy::too_many_arguments)]
fn search_sink(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    srcs: &Sources<'_>,
    num_nodes: u64,
    dst_mask: &Option<Arc<[u64]>>,
    dst_ids: &Option<DstIds>,
    forward: &Option<Arc<dyn JoinRowsConsumer>>,
    ctx: &QueryContext,
) -> JoinRowsSink {
    let by_src = SourceRows::new(rows.num_rows, srcs.row_src, srcs.index_of, srcs.list.len());
    // One row per (source, reached node) for the shortest-path searches
    // (walks can have one per length); none kept when forwarded, and rows
    // merged by source and length are few: they grow as they come.
    let expected = match forward.is_some() || join.dst_unread {
        true => 0,
        false => {
            let expected = (srcs.list.len() as u64).saturating_mul(num_nodes);
            reserved_rows(expected, JOIN_ROW_BYTES, ctx)
        }
    };
    let sink = JoinRowsSink::new(
        by_src,
        srcs.index_of,
        dst_mask.clone(),
        dst_ids.clone(),
        join.with_len,
        expected,
        Arc::clone(&ctx.memory),
    )
    .merged(join.dst_unread);
    match forward {
        Some(to) => sink.forward_to(Arc::clone(rows), Arc::clone(to), join.left_outer),
        None => sink,
    }
}

/// Bytes of a join row as a [`JoinRowsSink`] holds it (input row,
/// destination, length).
const JOIN_ROW_BYTES: u64 = 20;

/// The rows a search's sink makes room for before the search: the rows
/// `expected`, up to what the memory limit can hold at `row_bytes` a row
/// (more would fail with the out-of-memory error anyway). The room is
/// address space, touched (and charged) only as rows arrive; it saves the
/// copies of growing by doubling, and the pages each copy faults in, which
/// were most of a 64-source search's time on R-MAT scale 20 (64 M rows).
fn reserved_rows(expected: u64, row_bytes: u64, ctx: &QueryContext) -> usize {
    let fits = ctx.pager.memory_limit_bytes() / row_bytes.max(1);
    usize::try_from(expected.min(fits)).unwrap_or(usize::MAX)
}

/// Runs a computation over `graph` from `sources` and collects its rows.
fn collect_rows<G: Graph, C: Compute>(
    sched: &Scheduler,
    graph: Arc<G>,
    compute: impl Into<Arc<C>>,
    sources: &[u64],
    opts: &IfeOptions,
    ctx: &QueryContext,
) -> Result<(Vec<C::Row>, RunStats)>
where
    C::Row: HeldBytes,
{
    let sink = Arc::new(ChargedCollect::<C::Row>::new(
        sources.len(),
        graph.num_nodes(),
        ctx,
    ));
    let (compute, cancel, out) = (compute.into(), &ctx.cancel, sink.clone());
    let stats = run_ife(sched, graph, compute, sources, opts, cancel, out)?;
    Ok((sink.take(), stats))
}

/// The bytes a kept search row holds, its heap parts included.
trait HeldBytes {
    fn held_bytes(&self) -> usize;
}

impl HeldBytes for TreeRow {
    fn held_bytes(&self) -> usize {
        size_of::<TreeRow>()
    }
}

impl HeldBytes for PathRow {
    /// A path's node and rel lists are most of it: 100 bytes for three
    /// rels, beside the row's 72.
    fn held_bytes(&self) -> usize {
        size_of::<PathRow>() + (self.nodes.capacity() + self.rels.capacity()) * size_of::<u64>()
    }
}

/// Collects every row of a search, charging what they hold against the
/// query's memory limit as they arrive (the reserved room is not touched,
/// so not charged, until rows fill it).
struct ChargedCollect<R> {
    /// The rows, the bytes they hold, the charge.
    rows: Mutex<(Vec<R>, u64, MemoryCharge)>,
    memory: Arc<QueryMemory>,
}

impl<R: Send + HeldBytes> ChargedCollect<R> {
    /// With room for one row per (source, reached node), the rows of the
    /// shortest-path searches (walks can have one per length).
    fn new(sources: usize, num_nodes: u64, ctx: &QueryContext) -> ChargedCollect<R> {
        let expected = (sources as u64).saturating_mul(num_nodes);
        let row_bytes = size_of::<R>() as u64;
        ChargedCollect {
            rows: Mutex::new((
                room_for(reserved_rows(expected, row_bytes, ctx)),
                0,
                MemoryCharge::default(),
            )),
            memory: Arc::clone(&ctx.memory),
        }
    }

    fn take(&self) -> Vec<R> {
        std::mem::take(&mut self.rows.lock().0)
    }
}

impl<R: Send + HeldBytes> Sink<R> for ChargedCollect<R> {
    fn consume(&self, rows: &mut Vec<R>) -> Result<()> {
        let added: usize = rows.iter().map(HeldBytes::held_bytes).sum();
        let mut held = self.rows.lock();
        let (all, bytes, charge) = &mut *held;
        all.append(rows);
        *bytes += added as u64;
        charge.grow_to(&self.memory, *bytes)
    }
}

/// The recursive join by path enumeration ([`WalkPaths`], or
/// [`ShortestPaths`] from the parents of a BFS): with the path
/// or rels columns one row per path, else one row per (source,
/// destination, length) with the number of paths as its count.
#[allow(clippy::too_many_arguments)]
fn paths_join<G: Graph>(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    sched: &Scheduler,
    opts: &IfeOptions,
    graph: Arc<G>,
    srcs: &Sources<'_>,
    (lower, upper): (u32, u32),
    ids: &PathIds<'_>,
    bound: &WalkBound<'_>,
    weights: Option<RelWeights>,
    forward: Option<Arc<dyn JoinRowsConsumer>>,
) -> Result<RecursiveOutput> {
    let dst_mask = dst_mask(join, &ids.space, graph.num_nodes(), ctx)?;
    let node_mask = node_mask(
        join.node_predicate.as_ref(),
        &ids.space,
        graph.num_nodes(),
        ctx,
    )?;
    // One row per found path (cost bits for a length when `weighted`).
    let emit = |found: FoundPaths, weighted: bool, stats: RunStats| {
        let workers = (sched, workers(sched, opts));
        emit_paths(join, rows, ctx, srcs, ids, found, weighted, stats, workers)
    };
    // One shortest path per destination, its value read: the searches'
    // parent trees are kept and the paths read back from them as they are
    // built, when every parent edge packs in a word (32-bit ids).
    // (Such joins are never forwarded: see `forwards`.)
    let trees = join.mode == RecursiveMode::Shortest
        && (join.with_path || join.with_rels)
        && graph.num_nodes() <= 1 << 32
        && ids.rel_id_bound <= 1 << 32;
    if trees {
        // Every source's tree is kept until the paths are read: charged
        // for the rest of the query, before the search allocates them.
        let tree_bytes = ShortestTrees::tree_bytes(graph.num_nodes(), srcs.list.len());
        MemoryCharge::default().grow_to(&ctx.memory, tree_bytes)?;
        let mut compute = ShortestTrees::new(lower, upper);
        compute.search.node_mask = node_mask;
        compute.search.dst_mask = dst_mask;
        let compute = Arc::new(compute);
        let (found, stats) = collect_rows::<_, ShortestTrees>(
            sched,
            graph,
            Arc::clone(&compute),
            srcs.list,
            opts,
            ctx,
        )?;
        let mut found = sort_tree_rows(found, sched, workers(sched, opts), &ctx.cancel)?;
        found.retain(|p| (ids.dst_ok)((ids.node)(p.dst)));
        let found_paths = FoundPaths::Trees {
            rows: found,
            trees: compute.take_trees().into_iter().collect(),
        };
        return emit(found_paths, false, stats);
    }
    let search = PathSearch {
        join,
        bounds: (lower, upper),
        node_mask,
        dst_mask,
        weights: weights.clone(),
    };
    if let Some(to) = forward {
        // The rows go on batch by batch, with their paths' values.
        let by_src = SourceRows::new(rows.num_rows, srcs.row_src, srcs.index_of, srcs.list.len());
        let spec = PathRowsSpec {
            ids: IdSpace {
                nodes: ids.space.clone(),
                rels: ids.rels.clone(),
            },
            dst_tables: (ids.space.len() > 1).then(|| join.dst_tables.clone()),
            columns: path_columns(join, rows),
            walked_back: walked_back(join),
            element_properties: join.element_properties,
            with_len: join.with_len,
            weighted: weights.is_some(),
            left_outer: join.left_outer,
        };
        let sink = Arc::new(PathRowsSink::new(
            ctx,
            by_src,
            srcs.index_of,
            spec,
            Arc::clone(rows),
            to,
        ));
        let stats = search.run(sched, graph, srcs.list, opts, ctx, bound, sink.clone())?;
        sink.finish()?;
        return Ok(RecursiveOutput {
            rows: JoinRows::empty(Arc::clone(rows), join.with_len),
            stats,
            forwarded: Some(sink.forwarded_rows()),
        });
    }
    let collect = Arc::new(ChargedCollect::<PathRow>::new(
        srcs.list.len(),
        graph.num_nodes(),
        ctx,
    ));
    let stats = search.run(sched, graph, srcs.list, opts, ctx, bound, collect.clone())?;
    let mut found_paths = collect.take();
    // Same order whatever the policy and thread count. The workers hand
    // over sorted runs (a source's destinations in order): a merging sort
    // finds them instead of partitioning 2.6 M rows afresh.
    found_paths.sort();
    ctx.cancel.check()?;
    if join.with_path || join.with_rels {
        // The kept paths, in order; their values are built as the parent
        // pipeline reads them (LazyPaths).
        found_paths.retain(|p| (ids.dst_ok)((ids.node)(p.dst)));
        return emit(FoundPaths::Rows(found_paths), weights.is_some(), stats);
    }
    let src_index = |s: u64| -> Result<usize> {
        srcs.index_of
            .get(&s)
            .copied()
            .ok_or_else(|| Error::internal("recursive result for an unknown source"))
    };
    // Count the paths of each (source, destination, length).
    let mut counts: HashMap<(u64, u64, u64), u64> = HashMap::new();
    for p in &found_paths {
        let len = match &weights {
            Some(_) => p.cost_bits,
            None => p.rels.len() as u64,
        };
        *counts.entry((p.src, p.dst, len)).or_default() += 1;
    }
    drop(found_paths);
    let mut keyed: Vec<_> = counts.into_iter().collect();
    keyed.sort_unstable();
    let found = keyed
        .into_iter()
        .map(|((s, d, len), count)| Ok((src_index(s)?, d, len, count)))
        .collect::<Result<Vec<FoundRow>>>()?;
    let f = Found {
        row_src: srcs.row_src,
        index_of: srcs.index_of,
        num_sources: srcs.list.len(),
        rows: FoundList::Rows(&found),
        weighted: weights.is_some(),
        path_numbers: false,
    };
    let dst_id = |d: u64| {
        let id = (ids.node)(d);
        (ids.dst_ok)(id).then_some(id)
    };
    let rows = emit_rows(join, rows, ctx, &f, &dst_id)?;
    Ok(RecursiveOutput {
        rows,
        stats,
        forwarded: None,
    })
}

/// A path-enumerating search of a join: walks (and trails, acyclic
/// paths), shortest paths from the Parents of a BFS, or weighted shortest
/// paths from a per-source Dijkstra, each row a [`PathRow`].
struct PathSearch<'a> {
    join: &'a RecursiveJoin,
    bounds: (u32, u32),
    node_mask: Option<Arc<[u64]>>,
    dst_mask: Option<Arc<[u64]>>,
    weights: Option<RelWeights>,
}

impl PathSearch<'_> {
    /// Runs the search from `sources` over `graph`, its rows to `sink`.
    #[allow(clippy::too_many_arguments)]
    fn run<G: Graph>(
        self,
        sched: &Scheduler,
        graph: Arc<G>,
        sources: &[u64],
        opts: &IfeOptions,
        ctx: &QueryContext,
        bound: &WalkBound<'_>,
        sink: Arc<dyn Sink<PathRow>>,
    ) -> Result<RunStats> {
        let (lower, upper) = self.bounds;
        let cancel = &ctx.cancel;
        match self.join.mode {
            RecursiveMode::Walk | RecursiveMode::Trail | RecursiveMode::Acyclic => {
                let semantics = match self.join.mode {
                    RecursiveMode::Walk => PathSemantics::Walk,
                    RecursiveMode::Trail => PathSemantics::Trail,
                    _ => PathSemantics::Acyclic,
                };
                let mut compute = WalkPaths::new(lower, upper, semantics)?;
                compute.cancel = Some(ctx.cancel.clone());
                compute.node_mask = self.node_mask;
                compute.bound =
                    walk_bound(&*graph, sources.len(), self.dst_mask.as_ref(), upper, bound)?;
                compute.dst_mask = self.dst_mask;
                run_ife(sched, graph, Arc::new(compute), sources, opts, cancel, sink)
            }
            RecursiveMode::Shortest | RecursiveMode::AllShortest => {
                let mode = match self.join.mode {
                    RecursiveMode::Shortest => PathMode::One,
                    _ => PathMode::All,
                };
                let mut compute = ShortestPaths::new(lower, upper, mode);
                compute.node_mask = self.node_mask;
                compute.dst_mask = self.dst_mask;
                run_ife(sched, graph, Arc::new(compute), sources, opts, cancel, sink)
            }
            RecursiveMode::WeightedShortest | RecursiveMode::AllWeightedShortest => {
                let w = self
                    .weights
                    .ok_or_else(|| Error::internal("weighted shortest paths without weights"))?;
                let mode = match self.join.mode {
                    RecursiveMode::WeightedShortest => PathMode::One,
                    _ => PathMode::All,
                };
                let mut compute = WeightedPaths::new(w, lower, mode)?;
                compute.node_mask = self.node_mask;
                compute.cancel = Some(ctx.cancel.clone());
                compute.dst_mask = self.dst_mask;
                run_ife(sched, graph, Arc::new(compute), sources, opts, cancel, sink)
            }
        }
    }
}

/// The rel tables of `join` walked only backward: such a rel was reached
/// from its destination, so its source is the path's next node.
fn walked_back(join: &RecursiveJoin) -> Vec<TableId> {
    join.rel_tables
        .iter()
        .map(|&(t, _)| t)
        .filter(|&t| {
            join.rel_tables
                .iter()
                .all(|&(t2, d)| t2 != t || d == ExtendDirection::Bwd)
        })
        .collect()
}

/// The rows of a join that outputs paths: one per kept path, in order,
/// with the path numbers [`LazyPaths`] builds the values of.
#[allow(clippy::too_many_arguments)]
fn emit_paths(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    srcs: &Sources<'_>,
    ids: &PathIds<'_>,
    found_paths: FoundPaths,
    weighted: bool,
    stats: RunStats,
    workers: (&Scheduler, usize),
) -> Result<RecursiveOutput> {
    // One row per path, read from the paths (no list of found rows).
    let f = Found {
        row_src: srcs.row_src,
        index_of: srcs.index_of,
        num_sources: srcs.list.len(),
        rows: FoundList::Paths(&found_paths),
        weighted,
        path_numbers: true,
    };
    let mut out = emit_rows(join, rows, ctx, &f, &|d| Some((ids.node)(d)))?;
    let walked_back = walked_back(join);
    let space = IdSpace {
        nodes: ids.space.clone(),
        rels: ids.rels.clone(),
    };
    let columns = path_columns(join, rows);
    out.paths = Some(LazyPaths::new(
        ctx,
        found_paths,
        space,
        columns,
        &walked_back,
        join.element_properties,
        Some(workers),
    )?);
    Ok(RecursiveOutput {
        rows: out,
        stats,
        forwarded: None,
    })
}

/// `rows` by source, then destination (a source reaches each destination
/// once): grouped by source in one pass (a worker's rows come in runs of
/// one source), each source's rows sorted by destination on the workers.
fn sort_tree_rows(
    rows: Vec<TreeRow>,
    sched: &Scheduler,
    threads: usize,
    cancel: &kith_sched::CancelToken,
) -> Result<Vec<TreeRow>> {
    let mut groups: Vec<(u64, Vec<TreeRow>)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut last = None;
    for r in rows {
        let g = match last {
            Some((src, g)) if src == r.src => g,
            _ => {
                let g = *index.entry(r.src).or_insert_with(|| {
                    groups.push((r.src, Vec::new()));
                    groups.len() - 1
                });
                last = Some((r.src, g));
                g
            }
        };
        groups[g].1.push(r);
    }
    groups.sort_unstable_by_key(|g| g.0);
    cancel.check()?;
    let sorted: Vec<Vec<TreeRow>> = if threads > 1 && groups.len() > 1 {
        let groups: Arc<Vec<parking_lot::Mutex<Vec<TreeRow>>>> = Arc::new(
            groups
                .into_iter()
                .map(|g| parking_lot::Mutex::new(g.1))
                .collect(),
        );
        let n = groups.len();
        sched.parallel_map(threads, cancel, n, move |i| {
            let mut g = std::mem::take(&mut *groups[i].lock());
            g.sort_unstable_by_key(|r| r.dst);
            Ok(g)
        })?
    } else {
        let mut out = Vec::with_capacity(groups.len());
        for (_, mut g) in groups {
            g.sort_unstable_by_key(|r| r.dst);
            out.push(g);
        }
        out
    };
    let mut out = Vec::with_capacity(sorted.iter().map(Vec::len).sum());
    for g in sorted {
        out.extend_from_slice(&g);
    }
    Ok(out)
}

/// The threads a run with `opts` uses.
fn workers(sched: &Scheduler, opts: &IfeOptions) -> usize {
    match opts.threads {
        0 => sched.num_threads(),
        n => n,
    }
}

/// The sources of a join (distinct, in first-seen order), each input row's
/// source (None: NULL or outside the graph) and each source's index;
/// `node` maps an id to its node in the graph.
#[allow(clippy::type_complexity)]
fn collect_sources(
    join: &RecursiveJoin,
    rows: &Chunk,
    node: impl Fn(InternalId) -> Option<u64>,
) -> Result<(Vec<u64>, Vec<Option<u64>>, HashMap<u64, usize>)> {
    let src_col = rows
        .columns
        .get(join.src_column)
        .ok_or_else(|| Error::internal("recursive join source column missing"))?;
    let mut sources = Vec::new();
    let mut seen = HashSet::new();
    let mut row_src = Vec::with_capacity(rows.num_rows);
    for r in 0..rows.num_rows {
        let s = match src_col.get_value(r) {
            Value::InternalId(id) => node(id),
            _ => None,
        };
        if let Some(g) = s {
            if seen.insert(g) {
                sources.push(g);
            }
        }
        row_src.push(s);
    }
    let index_of = sources.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    Ok((sources, row_src, index_of))
}

/// A found row: (source index, destination number, length or cost bits,
/// count).
type FoundRow = (usize, u64, u64, u64);

/// The rows a search found.
enum FoundList<'a> {
    /// (source index, destination, length or cost bits, count).
    Rows(&'a [FoundRow]),
    /// One row per path (counting 1), read from the paths themselves.
    Paths(&'a FoundPaths),
}

/// What a search found, for [`emit_rows`].
struct Found<'a> {
    /// Per input row, its source (None: NULL).
    row_src: &'a [Option<u64>],
    index_of: &'a HashMap<u64, usize>,
    num_sources: usize,
    rows: FoundList<'a>,
    weighted: bool,
    /// The path and rels columns (as the join asks) hold each found row's
    /// number, for [`LazyPaths`].
    path_numbers: bool,
}

/// The join's output: each input row repeated once per destination found
/// from its source, with the destination id, the length (cost) and the
/// count. `dst_id` maps a destination to its id (None: dropped).
fn emit_rows(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    f: &Found<'_>,
    dst_id: &dyn Fn(u64) -> Option<InternalId>,
) -> Result<JoinRows> {
    let index_of = f.index_of;
    let by_src = SourceRows::new(rows.num_rows, f.row_src, index_of, f.num_sources);
    let cap = match f.rows {
        FoundList::Rows(r) => r.len(),
        FoundList::Paths(p) => p.len(),
    };
    let mut out = JoinRows {
        input: Arc::clone(rows),
        input_row: Vec::with_capacity(cap),
        dst: Vec::with_capacity(cap),
        len: Vec::with_capacity(if join.with_len { cap } else { 0 }),
        weighted: f.weighted,
        with_len: join.with_len,
        count: Vec::new(),
        numbers: Vec::new(),
        padded_from: usize::MAX,
        paths: None,
    };
    let mut hit = vec![false; f.num_sources];
    for k in 0..cap {
        let f_row = match f.rows {
            FoundList::Rows(r) => r[k],
            FoundList::Paths(p) => {
                let (src, dst, len) = p.end(k, f.weighted);
                let si = index_of
                    .get(&src)
                    .copied()
                    .ok_or_else(|| Error::internal("recursive result for an unknown source"))?;
                (si, dst, len, 1)
            }
        };
        let rows_of = by_src.rows_of(f_row.0);
        if rows_of.is_empty() {
            continue;
        }
        let Some(dst) = dst_id(f_row.1) else {
            continue;
        };
        hit[f_row.0] = true;
        for &r in rows_of {
            out.input_row.push(r);
            out.dst.push(dst);
            if join.with_len {
                out.len.push(f_row.2);
            }
            out.push_count(f_row.3);
            if f.path_numbers {
                out.push_number(k as u64);
            }
        }
        if k % 65_536 == 0 {
            ctx.cancel.check()?;
        }
    }
    by_src.pad_unmatched(join.left_outer, &hit, &mut out);
    Ok(out)
}

/// Rel table `t` walked in direction `d` as a member of a [`UnionCsr`]:
/// the node table numbers walked from and to, the table's storage and its
/// CSR in that direction.
fn union_member(
    ctx: &QueryContext,
    t: TableId,
    d: ExtendDirection,
    index_of_table: &dyn Fn(TableId) -> Option<usize>,
) -> Result<(usize, usize, RelTableData, StorageCsr)> {
    let rel = match ctx.version.table(t)?.as_ref() {
        TableData::Rel(r) => r.clone(),
        TableData::Node(_) => return Err(Error::internal("expected rel table storage")),
    };
    let info = ctx
        .version
        .catalog
        .table(t)
        .and_then(|e| e.rel_info().cloned())
        .ok_or_else(|| Error::internal("rel table without endpoints"))?;
    let (from, to, dir) = match d {
        ExtendDirection::Fwd => (info.src, info.dst, RelDirection::Fwd),
        ExtendDirection::Bwd => (info.dst, info.src, RelDirection::Bwd),
    };
    let (Some(from), Some(to)) = (index_of_table(from), index_of_table(to)) else {
        return Err(Error::internal("rel table outside the node space"));
    };
    let csr = StorageCsr::new(&ctx.pager, rel.csr(dir))?;
    Ok((from, to, rel, csr))
}

/// [`recursive_join`] over several rel tables and node tables: one
/// [`UnionCsr`] whose dense node ids concatenate the node tables.
#[allow(clippy::too_many_arguments)]
fn union_join(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    sched: &Scheduler,
    threads: usize,
    (lower, upper): (u32, u32),
    settings: &RecursiveSettings,
    forward: Option<Arc<dyn JoinRowsConsumer>>,
) -> Result<RecursiveOutput> {
    let index_of_table = |t: kith_common::TableId| join.node_tables.iter().position(|x| *x == t);
    let mut sizes = Vec::with_capacity(join.node_tables.len());
    for t in &join.node_tables {
        sizes.push(match ctx.version.table(*t)?.as_ref() {
            TableData::Node(n) => n.num_rows,
            TableData::Rel(_) => return Err(Error::internal("expected node table storage")),
        });
    }
    let mut members = Vec::new();
    let mut masks: Vec<(TableId, Arc<[u64]>)> = Vec::new();
    // Each rel table's range of dense rel ids (both directions of a table
    // share one), in first-walked order.
    let mut rel_space: Vec<(TableId, u64)> = Vec::new();
    let mut rel_ids_end = 0u64;
    for (t, d) in &join.rel_tables {
        let (from, to, rel, mut csr) = union_member(ctx, *t, *d, &index_of_table)?;
        let rel_base = match rel_space.iter().find(|(x, _)| x == t) {
            Some(&(_, base)) => base,
            None => {
                let base = rel_ids_end;
                rel_space.push((*t, base));
                rel_ids_end = rel_ids_end.saturating_add(rel_id_bound(&rel));
                base
            }
        };
        if !join.rel_conditions.is_empty() || join.rel_predicate.is_some() {
            let mask = match masks.iter().find(|m: &&(TableId, Arc<[u64]>)| m.0 == *t) {
                Some(m) => Arc::clone(&m.1),
                None => {
                    let m = rel_mask(join, *t, &rel, ctx)?
                        .ok_or_else(|| Error::internal("rel conditions without a mask"))?;
                    masks.push((*t, Arc::clone(&m)));
                    m
                }
            };
            csr = csr.with_rel_mask(mask);
        }
        members.push(UnionMember {
            from,
            to,
            rel_base,
            csr,
            // Undirected: a self-loop is walked once, forward.
            skip_self_loops: join.undirected && *d == ExtendDirection::Bwd,
        });
    }
    let graph = Arc::new(UnionCsr::new(&sizes, members));
    // Every member turned around (reading no rel ids: rel base 0), with
    // the rel masks when `masked` (hop bounds take none: a looser bound).
    let turned = |masked: bool| -> Result<UnionCsr> {
        let mut back = Vec::with_capacity(join.rel_tables.len());
        for (t, d) in &join.rel_tables {
            let flipped = match d {
                ExtendDirection::Fwd => ExtendDirection::Bwd,
                ExtendDirection::Bwd => ExtendDirection::Fwd,
            };
            let (from, to, _, mut csr) = union_member(ctx, *t, flipped, &index_of_table)?;
            if let Some(m) = masks.iter().find(|m| masked && m.0 == *t) {
                csr = csr.with_rel_mask(Arc::clone(&m.1));
            }
            back.push(UnionMember {
                from,
                to,
                rel_base: 0,
                csr,
                skip_self_loops: false,
            });
        }
        Ok(UnionCsr::new(&sizes, back))
    };
    let reverse_bound = |mask: &[u64], upper: u32| -> Result<Option<HopBound>> {
        Ok(hops_to_targets(&turned(false)?, mask, upper))
    };
    let (sources, row_src, index_of) = collect_sources(join, rows, |id| {
        index_of_table(id.table()).map(|t| graph.global(t, id.offset()))
    })?;
    let opts = ife_options(
        join,
        settings,
        sources.len(),
        graph.num_nodes(),
        threads,
        ctx,
    );
    // Node table `i` owns the dense ids from `graph.global(i, 0)`.
    let space: Vec<(TableId, u64)> = join
        .node_tables
        .iter()
        .enumerate()
        .map(|(i, t)| (*t, graph.global(i, 0)))
        .collect();
    // Weighted searches here walk one rel table both ways (the planner
    // refuses a weight over several tables), so rel ids are its offsets.
    let weights = match &join.weight {
        Some((prop, ty)) if join.mode.weighted() => {
            if join.rel_tables.iter().any(|(t, _)| *t != join.rel_table) {
                return Err(Error::not_supported(
                    "weighted shortest paths over several rel tables",
                ));
            }
            let rel = match ctx.version.table(join.rel_table)?.as_ref() {
                TableData::Rel(r) => r.clone(),
                TableData::Node(_) => return Err(Error::internal("expected rel table storage")),
            };
            let w = weights_by_rel_id(&rel, *prop, ty.clone(), ctx)?;
            Some(RelWeights::Dense(w))
        }
        _ => None,
    };
    // Weighted searches keep their paths (per-source Dijkstra), counted
    // from them when the query reads no path.
    if enumerates(join) || weights.is_some() {
        let g = Arc::clone(&graph);
        let node = move |d: u64| {
            let (t, off) = g.local(d);
            InternalId::new(join.node_tables[t], off)
        };
        let ids = PathIds {
            node: &node,
            dst_ok: &|id: InternalId| join.dst_tables.contains(&id.table()),
            space: space.clone(),
            rels: rel_space.clone(),
            rel_id_bound: rel_ids_end,
        };
        let srcs = Sources {
            list: &sources,
            row_src: &row_src,
            index_of: &index_of,
        };
        return paths_join(
            join,
            rows,
            ctx,
            sched,
            &opts,
            graph,
            &srcs,
            (lower, upper),
            &ids,
            &reverse_bound,
            weights,
            forward,
        );
    }
    let dst_mask = dst_mask(join, &space, graph.num_nodes(), ctx)?;
    // The search's rows go to the join-row sink as for one table, their
    // destinations numbered as the union numbers them.
    let srcs = Sources {
        list: &sources,
        row_src: &row_src,
        index_of: &index_of,
    };
    let dst_ids = Some(DstIds::Union {
        starts: space.iter().map(|s| s.1).collect(),
        tables: join
            .node_tables
            .iter()
            .map(|t| join.dst_tables.contains(t).then_some(*t))
            .collect(),
    });
    let n = graph.num_nodes();
    let out = Arc::new(search_sink(
        join, rows, &srcs, n, &dst_mask, &dst_ids, &forward, ctx,
    ));
    let (cancel, to) = (&ctx.cancel, out.clone());
    let stats = match join.mode {
        RecursiveMode::Walk => {
            let walks = walk_counts(
                &*graph,
                sources.len(),
                dst_mask.as_ref(),
                (lower, upper),
                &reverse_bound,
            )?;
            run_ife(sched, graph, Arc::new(walks), &sources, &opts, cancel, to)?
        }
        RecursiveMode::Shortest => {
            let compute = ShortestLengths {
                lower,
                upper,
                dst_mask: dst_mask.clone(),
            };
            // Dense levels of a one-source search bottom-up.
            let reverse = Some(Arc::new(turned(true)?));
            let compute = Arc::new(compute);
            run_ife_with_reverse(sched, graph, reverse, compute, &sources, &opts, cancel, to)?
        }
        RecursiveMode::AllShortest => {
            let compute = AllShortestCounts {
                lower,
                upper,
                dst_mask: dst_mask.clone(),
            };
            run_ife(sched, graph, Arc::new(compute), &sources, &opts, cancel, to)?
        }
        RecursiveMode::WeightedShortest | RecursiveMode::AllWeightedShortest => {
            return Err(Error::internal("weighted shortest paths are enumerated"))
        }
        RecursiveMode::Trail | RecursiveMode::Acyclic => {
            return Err(Error::internal("TRAIL and ACYCLIC paths are enumerated"))
        }
    };
    search_output(join, rows, &out, stats)
}

/// The output of a search whose rows went to `out` (see [`search_sink`]).
fn search_output(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    out: &JoinRowsSink,
    stats: RunStats,
) -> Result<RecursiveOutput> {
    Ok(RecursiveOutput {
        rows: out.finish(rows, join.left_outer)?,
        stats,
        forwarded: out.forwarded_rows(),
    })
}

/// The rels of `table` that satisfy the join's property conditions
/// (`[:R* {k: v}]`) and its rel predicate (`(r, _ | WHERE ...)`) as a
/// rel-id bitmask; `None` without either. A rel whose property is NULL,
/// or a table without the property, fails a condition.
fn rel_mask(
    join: &RecursiveJoin,
    table: TableId,
    rel: &RelTableData,
    ctx: &QueryContext,
) -> Result<Option<Arc<[u64]>>> {
    if join.rel_conditions.is_empty() && join.rel_predicate.is_none() {
        return Ok(None);
    }
    let entry = ctx
        .version
        .catalog
        .table(table)
        .ok_or_else(|| Error::internal("rel table vanished from the catalog"))?;
    let mut wanted = Vec::with_capacity(join.rel_conditions.len());
    let mut columns = Vec::with_capacity(join.rel_conditions.len());
    let mut types = Vec::with_capacity(join.rel_conditions.len());
    let mut mask = vec![0u64; (rel.next_rel_id.max(rel.num_rels) as usize).div_ceil(64)];
    for (name, e) in &join.rel_conditions {
        let value =
            match &e.kind {
                BoundExprKind::Literal(v) => v.clone(),
                BoundExprKind::Parameter(p) => ctx.params.get(p).cloned().ok_or_else(|| {
                    Error::runtime(format!("parameter ${p} was not given a value"))
                })?,
                _ => return Err(Error::internal("rel condition is not a constant")),
            };
        let column = entry.property(name).and_then(|p| {
            types.push(p.ty.clone());
            rel.column_of(p.id)
        });
        match column {
            // NULL never equals anything; a missing property is NULL.
            Some(c) if !value.is_null() => {
                columns.push(c);
                wanted.push(value);
            }
            _ => return Ok(Some(mask.into())),
        }
    }
    let mut pred = match &join.rel_predicate {
        Some(p) => Some(PredicateReader::new(p, entry, |id| rel.column_of(id))?),
        None => None,
    };
    let num_conditions = columns.len();
    if let Some(p) = &pred {
        columns.extend(p.stored_columns());
    }
    let mut ids = Vec::new();
    let mut keep = Vec::new();
    for g in &rel.fwd.groups {
        if g.num_rels == 0 {
            continue;
        }
        let pinned = g.pin(&ctx.pager, &columns)?;
        let n = g.num_rels as usize;
        ids.resize(n, 0);
        pinned.rel_ids()?.read_u64s(0, n, &mut ids);
        keep.clear();
        keep.resize(n, true);
        for &p in pinned.deleted_positions() {
            keep[p as usize] = false;
        }
        let (conds, props) = pinned.properties.split_at(num_conditions);
        for ((col, want), ty) in conds.iter().zip(&wanted).zip(&types) {
            let mut values = ValueVector::new(ty.clone(), n);
            col.read(0, n, &mut values, 0)?;
            for (i, k) in keep.iter_mut().enumerate() {
                if *k && equals(&values.get_value(i), want) != Some(true) {
                    *k = false;
                }
            }
        }
        if let Some(p) = &mut pred {
            p.filter(props, n, &mut keep, ctx)?;
        }
        for (i, &id) in ids.iter().enumerate() {
            if keep[i] {
                let w = mask
                    .get_mut((id / 64) as usize)
                    .ok_or_else(|| Error::internal(format!("rel id {id} out of range")))?;
                *w |= 1 << (id % 64);
            }
        }
        ctx.cancel.check()?;
    }
    Ok(Some(mask.into()))
}

/// The destinations the join's destination predicate lets through (see
/// [`node_mask`]). The predicate is evaluated on every node, also on nodes
/// no path reaches, where the query never evaluates it: an error there
/// (a division by zero, say) means no mask, not a failed query.
fn dst_mask(
    join: &RecursiveJoin,
    tables: &[(TableId, u64)],
    num_nodes: u64,
    ctx: &QueryContext,
) -> Result<Option<Arc<[u64]>>> {
    match node_mask(join.dst_predicate.as_ref(), tables, num_nodes, ctx) {
        Ok(mask) => Ok(mask),
        Err(e) if e.kind == kith_common::ErrorKind::Interrupted => Err(e),
        Err(_) => Ok(None),
    }
}

/// The weight property of every rel, indexed by rel id (read from the
/// forward CSR, whose property chunks are in CSR order next to the rel ids);
/// NaN for an id with no live rel (a deleted one), which no search reaches
/// ([`RelWeights::get`] gives it no weight). A live rel's weight is a
/// number. Used for patterns over several rel tables; one table reads its
/// weights beside the neighbours instead.
fn weights_by_rel_id(
    rel: &RelTableData,
    prop: kith_catalog::PropertyId,
    ty: LogicalType,
    ctx: &QueryContext,
) -> Result<Arc<[f64]>> {
    let column = rel
        .column_of(prop)
        .ok_or_else(|| Error::internal("weight property has no storage column"))?;
    let mut weights = vec![f64::NAN; rel.next_rel_id.max(rel.num_rels) as usize];
    let mut ids = Vec::new();
    for g in &rel.fwd.groups {
        if g.num_rels == 0 {
            continue;
        }
        let pinned = g.pin(&ctx.pager, &[column])?;
        let n = g.num_rels as usize;
        ids.resize(n, 0);
        pinned.rel_ids()?.read_u64s(0, n, &mut ids);
        let col = pinned
            .properties
            .first()
            .ok_or_else(|| Error::internal("weight column not pinned"))?;
        let mut values = kith_common::ValueVector::new(ty.clone(), n);
        col.read(0, n, &mut values, 0)?;
        let deleted = pinned.deleted_positions();
        for (i, &id) in ids.iter().enumerate() {
            if deleted.binary_search(&(i as u64)).is_ok() {
                continue;
            }
            let v = values.get_value(i);
            let w = match v {
                Value::Null => {
                    return Err(Error::runtime(
                        "weighted shortest path over a rel whose weight is NULL",
                    ))
                }
                v => v
                    .as_f64()
                    .filter(|w| !w.is_nan())
                    .ok_or_else(|| Error::runtime(format!("weight {v} is not a number")))?,
            };
            let slot = weights
                .get_mut(id as usize)
                .ok_or_else(|| Error::internal(format!("rel id {id} out of range")))?;
            *slot = w;
        }
    }
    Ok(weights.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_policy_needs_lanes_sources_and_memory() {
        let auto = RecursiveSettings::default();
        let gib = 1u64 << 30;
        let ms = Policy::ManyThreadsKMultiSources;
        let ks = Policy::ManyThreadsKSources;
        let (lens, trees) = (Some(LANE_BYTES_PER_NODE), Some(TREE_LANE_BYTES_PER_NODE));
        assert_eq!(auto_policy(&auto, lens, 64, 1_000_000, 2, gib), ms);
        assert_eq!(
            auto_policy(&auto, lens, AUTO_MULTI_SOURCE_MIN, 1000, 2, gib),
            ms
        );
        assert_eq!(auto_policy(&auto, lens, 7, 1000, 2, gib), ks);
        assert_eq!(auto_policy(&auto, None, 64, 1000, 2, gib), ks);
        // 24 bytes x 100 M nodes x 2 threads is past a quarter of 1 GiB.
        assert_eq!(auto_policy(&auto, lens, 64, 100_000_000, 2, gib), ks);
        // Parent trees: 536 bytes x 1 M nodes x 2 threads is too, 65 k
        // nodes are not.
        assert_eq!(auto_policy(&auto, trees, 64, 1_000_000, 2, gib), ks);
        assert_eq!(auto_policy(&auto, trees, 64, 65_536, 2, gib), ms);
        let fixed = RecursiveSettings {
            policy: Some(Policy::OneThreadOneSource),
            ..RecursiveSettings::default()
        };
        assert_eq!(
            auto_policy(&fixed, lens, 64, 1000, 2, gib),
            Policy::OneThreadOneSource
        );
    }
}
