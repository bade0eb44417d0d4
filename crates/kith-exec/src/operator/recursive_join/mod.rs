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

mod counts;
mod masks;
mod paths;
mod rows;
mod union;
use counts::*;
use masks::*;
use paths::*;
use rows::*;
use union::*;

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
        return empty_interval_output(join, rows, ctx, settings, threads, forward);
    }
    if join.rel_tables.len() > 1 || join.node_tables.len() > 1 {
        let bounds = (lower, upper);
        return union_join(join, rows, ctx, sched, threads, bounds, settings, forward);
    }
    let (table, graph) = TableGraph::open(join, ctx)?;
    let num_nodes = table.num_nodes;
    // The reverse CSR without the rel mask: a looser bound, still a lower
    // bound on the hops left.
    let reverse_bound = |mask: &[u64], upper: u32| -> Result<Option<HopBound>> {
        Ok(hops_to_targets(&table.reverse(ctx)?, mask, upper))
    };
    let (sources, row_src, index_of) = collect_sources(join, rows, |id| Some(id.offset()))?;
    let opts = ife_options(join, settings, sources.len(), num_nodes, threads, ctx);
    let weights = table.weighted.then_some(RelWeights::Pinned);
    let srcs = Sources {
        list: &sources,
        row_src: &row_src,
        index_of: &index_of,
    };
    if enumerates(join) {
        let (node_table, rel_table) = (join.node_table, join.rel_table);
        let ids = PathIds {
            node: &|d| InternalId::new(node_table, d),
            dst_ok: &|_| true,
            space: vec![(node_table, 0)],
            rels: vec![(rel_table, 0)],
            rel_id_bound: rel_id_bound(&table.rel),
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
    let dst_ids = dst_ok.then_some(DstIds::Table(join.node_table));
    let sink = || {
        search_sink(
            join, rows, &srcs, num_nodes, &dst_mask, &dst_ids, &forward, ctx,
        )
    };
    let search = CountSearch {
        sched,
        ctx,
        sources: &sources,
        opts: &opts,
        bounds: (lower, upper),
        dst_mask: &dst_mask,
        bound: &reverse_bound,
    };
    let (out, stats) = search.run_table(join.mode, graph, &table, weights, sink)?;
    search_output(join, rows, &out, stats)
}

/// [`recursive_join`]'s output for an empty interval (`*2..1`): no paths,
/// a left outer join's rows all padded ones (handed to `forward` when
/// given).
fn empty_interval_output(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    settings: &RecursiveSettings,
    threads: usize,
    forward: Option<Arc<dyn JoinRowsConsumer>>,
) -> Result<RecursiveOutput> {
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
    Ok(RecursiveOutput {
        rows,
        stats,
        forwarded,
    })
}

/// The one rel table of a recursive join and its node table: what walking
/// it either way needs.
struct TableGraph {
    rel: RelTableData,
    num_nodes: u64,
    /// The direction opposite the join's.
    back: RelDirection,
    /// The rel mask of the join's rel conditions, if any.
    mask: Option<Arc<[u64]>>,
    /// Whether the CSR reads the weight property beside the neighbours.
    weighted: bool,
}

impl TableGraph {
    /// The join's table, and its CSR in the join's direction (with the
    /// weights and the rel mask).
    fn open(join: &RecursiveJoin, ctx: &QueryContext) -> Result<(TableGraph, Arc<StorageCsr>)> {
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
        let back = match dir {
            RelDirection::Fwd => RelDirection::Bwd,
            RelDirection::Bwd => RelDirection::Fwd,
        };
        let table = TableGraph {
            rel,
            num_nodes,
            back,
            mask,
            weighted: weight_column.is_some(),
        };
        Ok((table, Arc::new(csr)))
    }

    /// The CSR the other way, without the rel mask.
    fn reverse(&self, ctx: &QueryContext) -> Result<StorageCsr> {
        Ok(StorageCsr::new(&ctx.pager, self.rel.csr(self.back))?.with_num_nodes(self.num_nodes))
    }
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

#[cfg(test)]
mod tests;
