//! Turns a [`QueryPlan`] into per-worker operator chains over a shared slot
//! layout, runs them on the scheduler, and finishes the result (aggregate
//! output, DISTINCT, ORDER BY, SKIP, LIMIT). A query of several parts (WITH)
//! runs them in order, each part's rows the source of the next.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use kith_common::constants::{EXPAND_MORSEL_SIZE, MORSEL_SIZE, VECTOR_CAPACITY};
use kith_common::{Chunk, Error, LogicalType, Result, Span, TableId, Value, ValueVector};
use kith_planner::expr::{BoundExpr, BoundExprKind, SlotId};
use kith_planner::plan::{
    DependentKey, ExtendDirection, KeyCounts, PartPlan, PropertyRead, QueryPlan, RecursiveJoin,
    Sink, Source, Step, SubPlan,
};
use kith_sched::{MorselDispenser, Scheduler, Task, WorkerContext};
use kith_storage::{NodeTableData, RelTableData, TableData};

use crate::expression::cast::cast_value;
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::operator::collect::Collect;
use crate::operator::cross_product::{CrossProduct, Probe, UniqueProbe};
use crate::operator::csr_pins::CsrPins;
use crate::operator::extend::{Extend, PairCount, SharedRels, SplitClaims};
use crate::operator::fill_nulls::FillNulls;
use crate::operator::filter::{ChainEnd, ChainFilter, ChainSignal, Filter, PadFilter, PadSignal};
use crate::operator::hash_aggregate::{
    AggregateDef, GroupKey, HashAggregate, PARTITION_MIN_GROUPS,
};
use crate::operator::hash_join::{BuildContext, JoinIndex};
use crate::operator::hub_split::HubSplit;
use crate::operator::intersect::{Intersect, IntersectRel, IntersectSpec};
use crate::operator::join_rows::{JoinRows, JoinRowsConsumer, PartRows};
use crate::operator::lookup_node::LookupNode;
use crate::operator::offset_counts::OffsetTable;
use crate::operator::order_by::{cut_sorted_runs, sort_chunk, OrderBy};
use crate::operator::recursive_join::{
    forwards, recursive_join, RecursiveOutput, RecursiveSettings,
};
use crate::operator::scan_counted_rows::{Feed, ScanCountedRows};
use crate::operator::scan_node::{NodeMorsels, ScanNodes};
use crate::operator::scan_properties::read_by_id;
use crate::operator::scan_properties::ScanProperties;
use crate::operator::scan_rows::RowPieces;
use crate::operator::scan_rows::ScanRows;
use crate::operator::semi_mask::{SemiMask, SemiMaskFilter};
use crate::operator::single::SingleTuple;
use crate::operator::{LocalSink, Operator, Pos, QueryContext};
use crate::profile::{OpStats, Profiled};
use crate::result_set::{ChunkState, DataChunk, ResultSet, SlotLayout};
use crate::subquery::{SubqueryTable, DENSE_OFFSETS};

/// The shape of the factorized result set: vector types per chunk.
#[derive(Default)]
struct LayoutBuilder {
    layout: SlotLayout,
    chunks: Vec<Vec<LogicalType>>,
}

impl LayoutBuilder {
    fn add_chunk(&mut self) -> usize {
        self.chunks.push(Vec::new());
        self.chunks.len() - 1
    }
    fn add(&mut self, chunk: usize, slot: SlotId, ty: LogicalType) -> usize {
        self.chunks[chunk].push(ty);
        let v = self.chunks[chunk].len() - 1;
        self.layout.positions.insert(slot, (chunk, v));
        v
    }
    /// A vector that no slot names (an id nobody reads).
    fn add_anonymous(&mut self, chunk: usize, ty: LogicalType) -> usize {
        self.chunks[chunk].push(ty);
        self.chunks[chunk].len() - 1
    }
    fn result_set(&self) -> ResultSet {
        ResultSet {
            chunks: self
                .chunks
                .iter()
                .map(|types| DataChunk {
                    vectors: types
                        .iter()
                        .map(|t| ValueVector::new(t.clone(), VECTOR_CAPACITY))
                        .collect(),
                    state: ChunkState::default(),
                })
                .collect(),
            multiplicity: 1,
            weights: None,
        }
    }
}

fn node_data(ctx: &QueryContext, t: TableId) -> Result<Arc<NodeTableData>> {
    match ctx.version.table(t)?.as_ref() {
        TableData::Node(n) => Ok(Arc::new(n.clone())),
        TableData::Rel(_) => Err(Error::internal("expected node table storage")),
    }
}

fn rel_data(ctx: &QueryContext, t: TableId) -> Result<Arc<RelTableData>> {
    match ctx.version.table(t)?.as_ref() {
        TableData::Rel(r) => Ok(Arc::new(r.clone())),
        TableData::Node(_) => Err(Error::internal("expected rel table storage")),
    }
}

fn table_name(ctx: &QueryContext, t: TableId) -> String {
    ctx.version
        .catalog
        .table(t)
        .map_or_else(|| format!("table {}", t.0), |e| e.name.clone())
}

/// PROFILE's name for a pipeline source.
fn source_label(source: &Source, ctx: &QueryContext) -> String {
    match source {
        Source::Single => "SingleTuple".to_string(),
        Source::ScanNodes { table, .. } => format!("ScanNodes {}", table_name(ctx, *table)),
        Source::Rows { .. } => "ScanRows".to_string(),
    }
}

/// PROFILE's name for a step.
fn step_label(step: &Step, ctx: &QueryContext) -> String {
    step.describe(&ctx.version.catalog)
}

/// Property reads resolved against a table: (storage column, output
/// vector) of each property it has, and the positions of those it lacks.
type PlacedReads = (Vec<(usize, usize)>, Vec<Pos>);

/// Places the property reads in chunk `chunk` of the layout: the storage
/// column and output vector of each property the table has, and the
/// vectors of those it lacks (filled with NULLs).
fn place_reads(
    b: &mut LayoutBuilder,
    chunk: usize,
    reads: &[PropertyRead],
    column_of: impl Fn(kith_catalog::PropertyId) -> Option<usize>,
) -> Result<PlacedReads> {
    let mut columns = Vec::new();
    let mut nulls = Vec::new();
    for r in reads {
        let vector = b.add(chunk, r.slot, r.ty.clone());
        match r.property {
            Some(p) => {
                let c = column_of(p)
                    .ok_or_else(|| Error::internal("property has no storage column"))?;
                columns.push((c, vector));
            }
            None => nulls.push((chunk, vector)),
        }
    }
    Ok((columns, nulls))
}

/// One step of the chain, resolved against storage and the layout.
enum Built {
    Filter(kith_planner::expr::BoundExpr),
    /// A filter inside an OPTIONAL MATCH chain (the padding tuple passes).
    ChainFilter(kith_planner::expr::BoundExpr),
    /// The end of an OPTIONAL MATCH chain.
    ChainEnd,
    CrossProduct {
        rows: Arc<Chunk>,
        input_chunk: usize,
        output_chunk: usize,
        columns: Vec<usize>,
        /// A hash join: the probe key and the build rows by key.
        index: Option<(BoundExpr, Arc<JoinIndex>)>,
        /// Left outer: pads a tuple without build rows (`PadSignal`).
        optional: bool,
        /// Unique build keys probed a batch at a time (`UniqueProbe`).
        unique: bool,
    },
    Extend {
        rel_table: TableId,
        data: Arc<RelTableData>,
        fwd: bool,
        from: (usize, usize),
        input_chunk: usize,
        output_chunk: usize,
        to: Option<(usize, TableId)>,
        rel_id: Option<usize>,
        properties: Vec<(usize, usize)>,
        exclude: Vec<(Pos, Pos)>,
        collapse: bool,
        /// Degrees only, per input tuple ([`Extend::degrees`]).
        degrees: bool,
        /// Fused into this counting extend: the other extend from the same
        /// node (`fuse_counted_pair`).
        pair: Option<FusedExtend>,
        /// Output batches filled from several input tuples
        /// (`pack_last_extend`).
        pack: bool,
        /// With `pack`: input vectors copied along the output
        /// ([`Extend::replicas`]).
        replicas: Vec<(usize, usize)>,
        /// OPTIONAL MATCH's padding ([`Extend::pad`]).
        pad: bool,
        /// A step of an OPTIONAL MATCH chain: whether it is the chain's
        /// first extend. (Each worker's chain shares a `ChainSignal` of its
        /// own, made when the operators are.)
        chain: Option<bool>,
        /// The workers share this extend's rels (`split_single_source`).
        split: Option<Arc<SplitClaims>>,
        /// Its hub nodes deferred, then shared ([`share_hubs`]).
        hubs: Option<Arc<HubSplit>>,
    },
    /// OPTIONAL MATCH's predicates over the group `chunk` of the optional
    /// extend before it ([`PadFilter`]).
    PadFilter {
        predicate: BoundExpr,
        chunk: usize,
    },
    Intersect(IntersectSpec),
    ScanProperties {
        data: Arc<NodeTableData>,
        node: (usize, usize),
        columns: Vec<(usize, usize)>,
    },
    LookupNode {
        table: TableId,
        data: Arc<NodeTableData>,
        key: BoundExpr,
        each_item: bool,
        pk_type: LogicalType,
        pos: (usize, usize),
    },
    /// Properties the previous operator's table lacks.
    FillNulls(Vec<Pos>),
    SemiMask {
        node: Pos,
        mask: Arc<SemiMask>,
    },
}

/// Lets the last extend of an aggregating pipeline fill each output batch
/// from several tuples of its input batch ([`Extend::pack`]) when the steps
/// after it (property reads, filters, masks) do not read its input group:
/// the groups before that one are flat and fixed for the whole input batch,
/// so every packed tuple still stands for its own match. When the sink
/// reads one node id of the input group (`WITH a, collect(b)`), that id is
/// copied along the output ([`Extend::replicas`]) and the sink reads the
/// copy: a node id key finds its group by an array index, so one aggregate
/// call per batch replaces one per source node. Other keys (values hashed
/// per position) keep one call per source.
fn pack_last_extend(steps: &mut [Built], reads: &HashSet<SlotId>, b: &mut LayoutBuilder) {
    let Some(i) = steps
        .iter()
        .rposition(|s| matches!(s, Built::Extend { .. }))
    else {
        return;
    };
    // A replica moves its slot to the output group in the pipeline's one
    // layout, where the filters before the extend would then read it too
    // (from an empty group at their turn: `WHERE id(x) <> id(a)` dropped
    // every tuple of `RETURN collect(id(a)), collect(id(b))`, issue 51).
    let mut read_before = Vec::new();
    for step in &steps[..i] {
        match step {
            Built::Filter(e) | Built::ChainFilter(e) => e.slots(&mut read_before),
            Built::PadFilter { predicate, .. } => predicate.slots(&mut read_before),
            _ => {}
        }
    }
    let (head, tail) = steps.split_at_mut(i + 1);
    let Some(Built::Extend {
        input_chunk,
        output_chunk,
        collapse: false,
        degrees: false,
        pair: None,
        pack,
        replicas,
        pad,
        ..
    }) = head.last_mut()
    else {
        return;
    };
    let input = *input_chunk;
    let layout = &b.layout;
    let in_input = |s: &SlotId| layout.get(*s).is_some_and(|(c, _)| c == input);
    let reads_input = |e: &BoundExpr| {
        let mut v = Vec::new();
        e.slots(&mut v);
        v.iter().any(in_input)
    };
    // An optional extend's padding filter pads per input tuple over the
    // packed batch (`PadSignal`); no other filter may come between.
    let padded = *pad;
    let later_ok = tail.iter().all(|step| match step {
        Built::ScanProperties { node, .. } => node.0 != input,
        Built::SemiMask { node, .. } => node.0 != input && !padded,
        Built::FillNulls(positions) => positions.iter().all(|p| p.0 != input),
        Built::Filter(e) => !padded && !reads_input(e),
        Built::PadFilter { predicate, .. } => padded && !reads_input(predicate),
        _ => false,
    });
    if !later_ok {
        return;
    }
    let read: Vec<(SlotId, usize)> = reads
        .iter()
        .filter_map(|s| {
            layout
                .get(*s)
                .filter(|(c, _)| *c == input)
                .map(|p| (*s, p.1))
        })
        .collect();
    match read[..] {
        [] => *pack = true,
        [(slot, v)]
            if b.chunks[input][v] == LogicalType::InternalId && !read_before.contains(&slot) =>
        {
            let to = b.add(*output_chunk, slot, LogicalType::InternalId);
            replicas.push((v, to));
            *pack = true;
        }
        _ => {}
    }
}

/// Whether a node scan must write its ids: an aggregating sink reads the
/// node (its slot), or a step that is not known to leave them alone follows.
/// A filter over the scanned properties, or the property reads of another
/// node, do not read them; `MATCH (n) RETURN sum(n.x)` then never writes
/// the 2,048 ids of each batch (a tenth of the scan and sum).
fn reads_scanned_ids(
    id_slot: SlotId,
    steps: &[Step],
    sink_reads: Option<&HashSet<SlotId>>,
) -> bool {
    let reads = |e: &BoundExpr| {
        let mut v = Vec::new();
        e.slots(&mut v);
        v.contains(&id_slot)
    };
    sink_reads.is_none_or(|r| r.contains(&id_slot))
        || steps.iter().any(|step| match step {
            Step::Filter(e) => reads(e),
            Step::ScanProperties { node, .. } => *node == id_slot,
            _ => true,
        })
}

/// Rows per morsel of a node scan: [`EXPAND_MORSEL_SIZE`] when several
/// threads run a pipeline that expands its rows (an extend that reads
/// neighbours, an intersection, a cross product), so that a hub's morsel
/// is not most of the work; [`MORSEL_SIZE`] otherwise. A counting extend
/// (no neighbour read) costs the same for every row and keeps the larger
/// batches, a fused pair too (its self-loop test scans a node's
/// neighbours, but a vector at a time: 2hop-sel100 on R-MAT 16 runs as fast
/// at 2 threads with the larger morsels). Decided on the built steps, so
/// that an extend fused away or left counting is seen as such.
fn scan_morsel_size(steps: &[Built], threads: usize) -> u64 {
    let expands = steps.iter().any(|step| match step {
        Built::Extend { to, .. } => to.is_some(),
        Built::Intersect(_) | Built::CrossProduct { .. } => true,
        _ => false,
    });
    if threads > 1 && expands {
        EXPAND_MORSEL_SIZE
    } else {
        MORSEL_SIZE
    }
}

/// The first of two counting extends from one node, fused into the second
/// (see [`PairCount`]).
#[derive(Clone)]
struct FusedExtend {
    data: Arc<RelTableData>,
    fwd: bool,
    shared: SharedRels,
    output_chunk: usize,
}

enum BuiltSource {
    Single(Arc<AtomicBool>),
    /// One tuple that every worker produces (`split_single_source`).
    Broadcast,
    /// One tuple standing for this many (see `count_whole_rel_table`).
    Counted(Arc<AtomicBool>, u64),
    Scan {
        table: TableId,
        data: Arc<NodeTableData>,
        morsels: Arc<MorselDispenser>,
        id: (usize, usize),
        /// Whether anything reads the node ids (see [`reads_scanned_ids`]).
        write_ids: bool,
        columns: Vec<(usize, (usize, usize))>,
        /// The hubs the first extend defers ([`share_hubs`]): the second
        /// run scans them on every worker.
        hubs: Option<Arc<HubSplit>>,
    },
    Rows {
        rows: PartRows,
        morsels: Arc<MorselDispenser>,
        chunk: usize,
        columns: Vec<(usize, usize)>,
        /// The rows end with a count column (after a recursive join).
        counted: bool,
    },
}

impl BuiltSource {
    /// The number of morsels the source hands out.
    fn morsels(&self) -> usize {
        match self {
            BuiltSource::Single(_) | BuiltSource::Counted(..) => 1,
            // As many as there are workers.
            BuiltSource::Broadcast => 1 << 16,
            BuiltSource::Scan { morsels, .. } | BuiltSource::Rows { morsels, .. } => {
                morsels.count() as usize
            }
        }
    }
}

/// Everything workers need to instantiate their chains.
struct PipelineShape {
    ctx: Arc<QueryContext>,
    layout: Arc<SlotLayout>,
    builder: LayoutBuilder,
    source: BuiltSource,
    steps: Vec<Built>,
    /// Under PROFILE: the counters of the source and of each step (with the
    /// last chunk of its output); FillNulls steps are not counted.
    stats: Vec<Option<(Arc<OpStats>, usize)>>,
}

impl PipelineShape {
    /// Resolves a pipeline against storage; the build sides of cross
    /// products run (to completion) here.
    #[allow(clippy::too_many_arguments)]
    fn build(
        plan_source: &Source,
        plan_steps: &[Step],
        ctx: &Arc<QueryContext>,
        rows: Option<PartRows>,
        sched: &Scheduler,
        threads: usize,
        counted: bool,
        sink_reads: Option<&HashSet<SlotId>>,
    ) -> Result<PipelineShape> {
        let mut b = LayoutBuilder::default();
        let first = b.add_chunk();
        let mut source_nulls = Vec::new();
        let source = match plan_source {
            Source::Single => BuiltSource::Single(Arc::new(AtomicBool::new(false))),
            Source::ScanNodes {
                table,
                id_slot,
                properties,
            } => {
                let data = node_data(ctx, *table)?;
                let id = (first, b.add(first, *id_slot, LogicalType::InternalId));
                let (cols, nulls) = place_reads(&mut b, first, properties, |p| data.column_of(p))?;
                source_nulls = nulls;
                let columns = cols.into_iter().map(|(c, v)| (c, (first, v))).collect();
                // Cut once the steps are known (see `scan_morsel_size`).
                let morsels = Arc::new(MorselDispenser::with_regions(0, 1, 1));
                BuiltSource::Scan {
                    table: *table,
                    data,
                    morsels,
                    id,
                    write_ids: reads_scanned_ids(*id_slot, plan_steps, sink_reads),
                    columns,
                    hubs: None,
                }
            }
            Source::Rows { columns } => {
                let rows = rows.ok_or_else(|| Error::internal("row source without rows"))?;
                let positions: Vec<(usize, usize)> = columns
                    .iter()
                    .map(|(slot, ty)| (first, b.add(first, *slot, ty.clone())))
                    .collect();
                if positions.is_empty() {
                    b.add_anonymous(first, LogicalType::InternalId);
                }
                let morsels = Arc::new(MorselDispenser::with_regions(
                    rows.span(),
                    VECTOR_CAPACITY as u64,
                    threads,
                ));
                BuiltSource::Rows {
                    rows,
                    morsels,
                    chunk: first,
                    columns: positions,
                    counted,
                }
            }
        };
        let pipeline = ctx.profile.as_ref().map(|p| p.next_pipeline());
        let register = |label: String, chunk: usize| {
            ctx.profile
                .as_ref()
                .zip(pipeline)
                .map(|(p, n)| (p.register(n, label), chunk))
        };
        let mut stats = vec![register(source_label(plan_source, ctx), first)];
        let mut steps = Vec::new();
        if !source_nulls.is_empty() {
            steps.push(Built::FillNulls(source_nulls));
            stats.push(None);
        }
        // An OPTIONAL MATCH chain's steps run in line, each knowing its
        // place (see `Step::OptionalChain`): (step, (first, last)).
        let mut flat: Vec<(&Step, Option<(bool, bool)>)> = Vec::new();
        for step in plan_steps {
            match step {
                Step::OptionalChain(inner) => {
                    let last = inner
                        .iter()
                        .rposition(|s| !matches!(s, Step::Alias { .. }))
                        .unwrap_or(0);
                    for (i, s) in inner.iter().enumerate() {
                        flat.push((s, Some((i == 0, i == last))));
                    }
                }
                s => flat.push((s, None)),
            }
        }
        for (step, place) in flat {
            if let Step::Alias { slot, of } = step {
                let at = b
                    .layout
                    .get(*of)
                    .ok_or_else(|| Error::internal("alias of an unplaced slot"))?;
                b.layout.positions.insert(*slot, at);
                continue;
            }
            let mut nulls = Vec::new();
            steps.push(match step {
                Step::CrossProduct {
                    build,
                    columns,
                    key,
                    optional,
                } => {
                    let shape = PipelineShape::build(
                        &build.source,
                        &build.steps,
                        ctx,
                        None,
                        sched,
                        threads,
                        false,
                        None,
                    )?;
                    let mut outputs: Vec<BoundExpr> = columns
                        .iter()
                        .map(|(slot, ty)| BoundExpr::slot(*slot, ty.clone(), Span::new(0, 0)))
                        .collect();
                    let mut types: Vec<LogicalType> = columns.iter().map(|c| c.1.clone()).collect();
                    // A hash join's build key is one more output column,
                    // indexed, then dropped.
                    if let Some(k) = key {
                        outputs.push(k.build.clone());
                        types.push(k.build.ty.clone());
                    }
                    let chunks = collect_all(
                        vec![shape],
                        outputs,
                        &types,
                        ctx,
                        sched,
                        threads,
                        None,
                        None,
                        false,
                    )?;
                    let mut rows = concat(chunks, &types);
                    let index = match key {
                        Some(k) => {
                            let keys = rows
                                .columns
                                .pop()
                                .ok_or_else(|| Error::internal("hash join without its key"))?;
                            let index = build_join_index(keys, ctx, sched, threads)?;
                            Some((k.probe.clone(), Arc::new(index)))
                        }
                        None => None,
                    };
                    let rows = Arc::new(rows);
                    let input_chunk = b.chunks.len() - 1;
                    // Unique build keys, and no padding filter to apply per
                    // tuple: probed a batch at a time, the build columns
                    // written into the input group.
                    let padded = *optional
                        && plan_steps
                            .iter()
                            .any(|s| matches!(s, Step::PadFilter { .. }));
                    let unique = !padded && index.as_ref().is_some_and(|(_, i)| i.unique());
                    let out = if unique { input_chunk } else { b.add_chunk() };
                    let vectors: Vec<usize> = columns
                        .iter()
                        .map(|(slot, ty)| b.add(out, *slot, ty.clone()))
                        .collect();
                    if vectors.is_empty() && !unique {
                        b.add_anonymous(out, LogicalType::InternalId);
                    }
                    Built::CrossProduct {
                        rows,
                        input_chunk,
                        output_chunk: out,
                        columns: vectors,
                        index,
                        optional: *optional,
                        unique,
                    }
                }
                Step::Filter(e) => match place {
                    Some(_) => Built::ChainFilter(e.clone()),
                    None => Built::Filter(e.clone()),
                },
                Step::OptionalChain(_) => {
                    return Err(Error::internal("an optional chain inside another"))
                }
                Step::Alias { .. } => return Err(Error::internal("an alias left among the steps")),
                Step::SemiMask {
                    node,
                    table,
                    predicate,
                } => {
                    let num_nodes = node_data(ctx, *table)?.num_rows;
                    let node = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("semijoin mask of an unplaced node"))?;
                    Built::SemiMask {
                        node,
                        mask: ctx.semi_masks.get_or_add(*table, predicate, num_nodes),
                    }
                }
                Step::LookupNode {
                    table,
                    key,
                    each_item,
                    id_slot,
                } => {
                    let data = node_data(ctx, *table)?;
                    let pk_type = ctx
                        .version
                        .catalog
                        .table(*table)
                        .and_then(|e| e.primary_key())
                        .map(|p| p.ty.clone())
                        .ok_or_else(|| Error::internal("lookup in a table without a key"))?;
                    // Items become a group of their own; one key per tuple
                    // fills the newest.
                    let chunk = if *each_item {
                        b.add_chunk()
                    } else {
                        b.chunks.len() - 1
                    };
                    let vector = b.add(chunk, *id_slot, LogicalType::InternalId);
                    Built::LookupNode {
                        table: *table,
                        data,
                        key: key.clone(),
                        each_item: *each_item,
                        pk_type,
                        pos: (chunk, vector),
                    }
                }
                Step::Extend {
                    rel_table,
                    direction,
                    from,
                    to,
                    to_table,
                    rel_id,
                    properties,
                    exclude,
                    optional,
                } => {
                    let data = rel_data(ctx, *rel_table)?;
                    let pos = |s: &SlotId| {
                        b.layout
                            .get(*s)
                            .ok_or_else(|| Error::internal("extend exclusion of an unplaced slot"))
                    };
                    let exclude = exclude
                        .iter()
                        .map(|(rel, gate)| Ok((pos(rel)?, pos(gate)?)))
                        .collect::<Result<Vec<_>>>()?;
                    let from = b
                        .layout
                        .get(*from)
                        .ok_or_else(|| Error::internal("extend from an unplaced slot"))?;
                    let input_chunk = b.chunks.len() - 1;
                    let out = b.add_chunk();
                    let to = to.map(|s| (b.add(out, s, LogicalType::InternalId), *to_table));
                    let rel_id = rel_id.map(|s| b.add(out, s, LogicalType::InternalId));
                    let (properties, missing) =
                        place_reads(&mut b, out, properties, |p| data.column_of(p))?;
                    nulls = missing;
                    if to.is_none() && rel_id.is_none() && b.chunks[out].is_empty() {
                        // The chunk still needs a vector to carry its length.
                        b.add_anonymous(out, LogicalType::InternalId);
                    }
                    Built::Extend {
                        rel_table: *rel_table,
                        data,
                        fwd: *direction == ExtendDirection::Fwd,
                        from,
                        input_chunk,
                        output_chunk: out,
                        to,
                        rel_id,
                        properties,
                        exclude,
                        collapse: false,
                        degrees: false,
                        pair: None,
                        pack: false,
                        replicas: Vec::new(),
                        pad: *optional,
                        chain: place.map(|p| p.0),
                        split: None,
                        hubs: None,
                    }
                }
                Step::PadFilter { predicate, node } => {
                    let (chunk, _) = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("optional filter of an unplaced node"))?;
                    Built::PadFilter {
                        predicate: predicate.clone(),
                        chunk,
                    }
                }
                Step::Intersect {
                    to,
                    to_table,
                    rels,
                    distinct,
                    exclude,
                } => {
                    let pos = |s: &SlotId| {
                        b.layout
                            .get(*s)
                            .ok_or_else(|| Error::internal("intersect reads an unplaced slot"))
                    };
                    let exclude = exclude
                        .iter()
                        .map(|(i, s)| Ok((*i, pos(s)?)))
                        .collect::<Result<Vec<_>>>()?;
                    let froms = rels
                        .iter()
                        .map(|r| pos(&r.from))
                        .collect::<Result<Vec<_>>>()?;
                    let input_chunk = b.chunks.len() - 1;
                    let out = b.add_chunk();
                    let to_vector = b.add(out, *to, LogicalType::InternalId);
                    let mut built = Vec::with_capacity(rels.len());
                    for (r, from) in rels.iter().zip(froms) {
                        let rel_id = r.rel_id.map(|s| b.add(out, s, LogicalType::InternalId));
                        built.push(IntersectRel {
                            rel_table: r.rel_table,
                            data: rel_data(ctx, r.rel_table)?,
                            fwd: r.direction == ExtendDirection::Fwd,
                            from,
                            rel_id,
                        });
                    }
                    Built::Intersect(IntersectSpec {
                        rels: built,
                        to: to_vector,
                        to_table: *to_table,
                        to_nodes: node_data(ctx, *to_table)?.num_rows,
                        input_chunk,
                        output_chunk: out,
                        distinct: distinct.clone(),
                        exclude,
                    })
                }
                Step::ScanProperties {
                    node,
                    table: _,
                    properties,
                } if properties.iter().all(|p| p.property.is_none()) => {
                    // Nothing to read (the table has none of them, or the
                    // node matches no table): all NULL.
                    let node = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("property scan of an unplaced node"))?;
                    let (_, missing) = place_reads(&mut b, node.0, properties, |_| None)?;
                    Built::FillNulls(missing)
                }
                Step::ScanProperties {
                    node,
                    table,
                    properties,
                } => {
                    let data = node_data(ctx, *table)?;
                    let node = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("property scan of an unplaced node"))?;
                    let (columns, missing) =
                        place_reads(&mut b, node.0, properties, |p| data.column_of(p))?;
                    nulls = missing;
                    Built::ScanProperties {
                        data,
                        node,
                        columns,
                    }
                }
            });
            let last_chunk = b.chunks.len() - 1;
            let mut label = step_label(step, ctx);
            if let Some(Built::CrossProduct { unique: true, .. }) = steps.last() {
                label.push_str(" (unique keys, probed by batch)");
            }
            stats.push(register(label, last_chunk));
            if !nulls.is_empty() {
                steps.push(Built::FillNulls(nulls));
                stats.push(None);
            }
            if let Some((_, true)) = place {
                steps.push(Built::ChainEnd);
                stats.push(None);
            }
        }
        // A last extend whose neighbours, and whose input group, the sink
        // never reads only counts (see `Extend::collapse`); one whose input
        // group the sink reads counts per input tuple (`Extend::degrees`).
        if let (
            Some(reads),
            Some(Built::Extend {
                to: None,
                rel_id: None,
                properties,
                input_chunk,
                output_chunk,
                collapse,
                degrees,
                pad,
                ..
            }),
        ) = (sink_reads, steps.last_mut())
        {
            let reads_chunk = |chunk: usize| {
                reads
                    .iter()
                    .any(|s| b.layout.get(*s).is_some_and(|(c, _)| c == chunk))
            };
            if properties.is_empty() && !reads_chunk(*output_chunk) {
                *collapse = !reads_chunk(*input_chunk);
                *degrees = !*collapse && !*pad;
            }
        }
        if let Some(reads) = sink_reads {
            fuse_counted_pair(&mut steps, &mut stats, reads, &b.layout, ctx);
            pack_last_extend(&mut steps, reads, &mut b);
        }
        let mut source = source;
        count_whole_rel_table(&mut source, &mut steps, &mut stats, ctx);
        if let BuiltSource::Scan { data, morsels, .. } = &mut source {
            *morsels = Arc::new(MorselDispenser::with_regions(
                data.num_rows,
                scan_morsel_size(&steps, threads),
                threads,
            ));
        }
        if threads > 1 {
            split_single_source(&mut source, &mut steps);
        }
        Ok(PipelineShape {
            ctx: Arc::clone(ctx),
            layout: Arc::new(b.layout.clone()),
            builder: b,
            source,
            steps,
            stats,
        })
    }

    /// A fresh operator chain and result set for worker number `worker`
    /// (where its scan takes morsels first).
    fn instantiate(&self, worker: usize) -> Result<(Box<dyn Operator>, ResultSet)> {
        self.instantiate_fed(None, worker)
    }

    /// [`PipelineShape::instantiate`] whose scan of a recursive join's
    /// rows reads the batches put into `feed` (a pipelined join).
    fn instantiate_fed(
        &self,
        feed: Option<Arc<Feed>>,
        worker: usize,
    ) -> Result<(Box<dyn Operator>, ResultSet)> {
        let ctx = &self.ctx;
        let mut op: Box<dyn Operator> = match &self.source {
            BuiltSource::Single(taken) => Box::new(SingleTuple {
                taken: Arc::clone(taken),
                multiplicity: 1,
            }),
            BuiltSource::Broadcast => Box::new(SingleTuple {
                taken: Arc::new(AtomicBool::new(false)),
                multiplicity: 1,
            }),
            BuiltSource::Counted(taken, count) => Box::new(SingleTuple {
                taken: Arc::clone(taken),
                multiplicity: *count,
            }),
            BuiltSource::Scan {
                table,
                data,
                morsels,
                id,
                write_ids,
                columns,
                hubs,
            } => Box::new(ScanNodes::new(
                Arc::clone(ctx),
                *table,
                Arc::clone(data),
                match hubs.as_ref().and_then(|h| h.second_run()) {
                    Some(list) => NodeMorsels::Each(Arc::clone(list), 0),
                    None => NodeMorsels::Shared(Arc::clone(morsels), worker),
                },
                (*id, *write_ids),
                columns.clone(),
            )),
            BuiltSource::Rows {
                rows,
                morsels,
                chunk,
                columns,
                counted: true,
            } => Box::new(ScanCountedRows {
                ctx: Arc::clone(ctx),
                rows: rows.clone(),
                path_cache: Default::default(),
                morsels: Arc::clone(morsels),
                worker,
                chunk: *chunk,
                columns: columns.clone(),
                pending: 0..0,
                piece: 0,
                feed: feed.clone(),
            }),
            BuiltSource::Rows {
                rows,
                morsels,
                chunk,
                columns,
                counted: false,
            } => Box::new(ScanRows {
                ctx: Arc::clone(ctx),
                rows: match rows {
                    PartRows::Chunks(c) => Arc::clone(c),
                    PartRows::Join(_) => {
                        return Err(Error::internal("recursive join rows without their counts"))
                    }
                },
                morsels: Arc::clone(morsels),
                worker,
                chunk: *chunk,
                columns: columns.clone(),
            }),
        };
        let profiled = |op: Box<dyn Operator>, i: usize| -> Box<dyn Operator> {
            match self.stats.get(i) {
                Some(Some((stats, last_chunk))) => {
                    Box::new(Profiled::new(op, Arc::clone(stats), *last_chunk))
                }
                _ => op,
            }
        };
        op = profiled(op, 0);
        // The optional extend's signal, read by the padding filter after
        // it, and whether that extend packs its batches.
        // The last optional extend's signal, whether it packs, and the
        // vectors that copy its source (a padded position keeps them).
        let mut pad_signal: Option<(Arc<PadSignal>, bool, Vec<usize>)> = None;
        // The OPTIONAL MATCH chain's signal, this worker's own.
        let mut chain_signal: Option<Arc<ChainSignal>> = None;
        for (i, step) in self.steps.iter().enumerate() {
            op = match step {
                Built::CrossProduct {
                    rows,
                    input_chunk,
                    output_chunk,
                    columns,
                    index,
                    optional,
                    unique,
                } => {
                    let probe = match index {
                        Some((key, index)) => Some(Probe {
                            key: Evaluator::new(key)?,
                            layout: Arc::clone(&self.layout),
                            index: Arc::clone(index),
                        }),
                        None => None,
                    };
                    let mut c = CrossProduct::new(
                        op,
                        Arc::clone(ctx),
                        Arc::clone(rows),
                        *input_chunk,
                        *output_chunk,
                        columns.clone(),
                        probe,
                    );
                    if *unique {
                        c.unique = Some(UniqueProbe::new(*optional));
                    } else if *optional {
                        let signal = Arc::new(PadSignal::default());
                        pad_signal = Some((Arc::clone(&signal), false, Vec::new()));
                        c.pad = Some(signal);
                    }
                    Box::new(c)
                }
                Built::SemiMask { node, mask } => Box::new(SemiMaskFilter::new(
                    op,
                    Arc::clone(ctx),
                    *node,
                    Arc::clone(mask),
                )),
                Built::Filter(e) => Box::new(Filter {
                    child: op,
                    predicate: Evaluator::new(e)?,
                    layout: Arc::clone(&self.layout),
                    ctx: Arc::clone(ctx),
                }),
                Built::ChainFilter(e) => Box::new(ChainFilter {
                    filter: Filter {
                        child: op,
                        predicate: Evaluator::new(e)?,
                        layout: Arc::clone(&self.layout),
                        ctx: Arc::clone(ctx),
                    },
                    signal: chain_signal.clone().ok_or_else(|| {
                        Error::internal("optional chain filter without its start")
                    })?,
                }),
                Built::ChainEnd => Box::new(ChainEnd {
                    child: op,
                    signal: chain_signal
                        .clone()
                        .ok_or_else(|| Error::internal("optional chain end without its start"))?,
                }),
                Built::PadFilter { predicate, chunk } => Box::new(PadFilter::new(
                    op,
                    Evaluator::new(predicate)?,
                    Arc::clone(&self.layout),
                    Arc::clone(ctx),
                    *chunk,
                    pad_signal
                        .as_ref()
                        .map(|s| Arc::clone(&s.0))
                        .ok_or_else(|| Error::internal("optional filter without its extend"))?,
                    pad_signal.as_ref().filter(|s| s.1).map(|s| s.2.clone()),
                )),
                Built::Extend {
                    rel_table,
                    data,
                    fwd,
                    from,
                    input_chunk,
                    output_chunk,
                    to,
                    rel_id,
                    properties,
                    exclude,
                    collapse,
                    degrees,
                    pair,
                    pack,
                    replicas,
                    pad,
                    chain,
                    split,
                    hubs,
                } => {
                    let mut e = Extend::new(
                        op,
                        Arc::clone(ctx),
                        *rel_table,
                        Arc::clone(data),
                        *fwd,
                        *from,
                        *input_chunk,
                        *output_chunk,
                        *to,
                        *rel_id,
                        properties.clone(),
                    );
                    e.exclude = exclude.clone();
                    e.collapse = *collapse;
                    e.degrees = *degrees;
                    e.pack = *pack;
                    e.replicas = replicas.clone();
                    e.split = split.clone();
                    if let Some(h) = hubs {
                        match h.second_run() {
                            Some(_) => e.split = Some(Arc::clone(&h.claims)),
                            None => e.hubs = Some(Arc::clone(h)),
                        }
                    }
                    if let Some(first) = *chain {
                        if first {
                            chain_signal = Some(Arc::new(ChainSignal::default()));
                        }
                        let signal = chain_signal
                            .as_ref()
                            .ok_or_else(|| Error::internal("optional chain without its start"))?;
                        e.chain = Some((Arc::clone(signal), first));
                    }
                    if *pad {
                        let signal = Arc::new(PadSignal::default());
                        let copies = replicas.iter().map(|r| r.1).collect();
                        pad_signal = Some((Arc::clone(&signal), *pack, copies));
                        e.pad = Some(signal);
                    }
                    if let Some(f) = pair {
                        e.pair = Some(PairCount {
                            pins: CsrPins::new(
                                Arc::clone(&f.data),
                                f.fwd,
                                Vec::new(),
                                Arc::clone(&self.ctx.csr_pins),
                            ),
                            shared: f.shared,
                        });
                        e.pair_output = Some(f.output_chunk);
                    }
                    Box::new(e)
                }
                Built::Intersect(spec) => {
                    Box::new(Intersect::new(op, Arc::clone(ctx), spec.clone()))
                }
                Built::ScanProperties {
                    data,
                    node,
                    columns,
                } => Box::new(ScanProperties::new(
                    op,
                    Arc::clone(ctx),
                    Arc::clone(data),
                    *node,
                    columns.clone(),
                )),
                Built::LookupNode {
                    table,
                    data,
                    key,
                    each_item,
                    pk_type,
                    pos,
                } => Box::new(LookupNode::new(
                    op,
                    Arc::clone(ctx),
                    Arc::clone(&self.layout),
                    Evaluator::new(key)?,
                    *table,
                    pk_type.clone(),
                    data.pk_lookup(&ctx.pager)?,
                    *pos,
                    *each_item,
                )),
                Built::FillNulls(vectors) => Box::new(FillNulls {
                    child: op,
                    vectors: vectors.clone(),
                }),
            };
            op = profiled(op, i + 1);
        }
        Ok((op, self.builder.result_set()))
    }
}

/// A pipeline from one tuple runs on one worker, however much its extends
/// expand (a 4-hop expansion from one node: 6.25 M tuples on seed 004's
/// graph). When the tuple's first extend has another extend after it,
/// every worker produces the tuple, repeats the cheap steps before that
/// extend (lookups, property reads, filters: deterministic, so every worker
/// sees the same tuples), and the workers share the extend's rels
/// ([`Extend::split`]), so everything after it runs in parallel.
fn split_single_source(source: &mut BuiltSource, steps: &mut [Built]) {
    if !matches!(source, BuiltSource::Single(_)) {
        return;
    }
    if let Some(Built::Extend { split, .. }) = shareable_first_extend(steps) {
        *split = Some(Arc::new(SplitClaims::default()));
        *source = BuiltSource::Broadcast;
    }
}

/// The first extend of `steps` when the workers may share its rels
/// ([`split_single_source`], [`share_hubs`]): the steps before it are
/// deterministic, so every worker that repeats them sees the same tuples
/// in the same order; another extend or intersection follows, so sharing
/// pays; and it is a plain extend (no exclusion, counting, fusing,
/// packing, padding or chain).
fn shareable_first_extend(steps: &mut [Built]) -> Option<&mut Built> {
    let i = steps
        .iter()
        .position(|s| matches!(s, Built::Extend { .. }))?;
    let deterministic = |e: &BoundExpr| !e.calls("rand");
    let before_ok = steps[..i].iter().all(|s| match s {
        Built::ScanProperties { .. } | Built::FillNulls(_) | Built::SemiMask { .. } => true,
        Built::Filter(e) => deterministic(e),
        Built::LookupNode { key, .. } => deterministic(key),
        _ => false,
    });
    let more = steps[i + 1..]
        .iter()
        .any(|s| matches!(s, Built::Extend { .. } | Built::Intersect(_)));
    let plain = matches!(
        &steps[i],
        Built::Extend {
            exclude,
            collapse: false,
            degrees: false,
            pair: None,
            pack: false,
            pad: false,
            chain: None,
            split: None,
            hubs: None,
            ..
        } if exclude.is_empty()
    );
    (before_ok && more && plain).then(|| &mut steps[i])
}

/// Lets the workers share the hubs of an aggregating pipeline that scans a
/// node table and extends from the scanned node, then again (see
/// [`HubSplit`]): the first extend defers nodes with many rels, and a
/// second run of the pipeline ([`run_pipelines`]) scans them on every
/// worker and splits their rels. The sink must not count on each scanned
/// node being in one worker's table (`keyed_by_scanned_node`).
fn share_hubs(shape: &mut PipelineShape) {
    let BuiltSource::Scan { id, hubs, .. } = &mut shape.source else {
        return;
    };
    if let Some(Built::Extend {
        from,
        to: Some(_),
        hubs: extend_hubs,
        ..
    }) = shareable_first_extend(&mut shape.steps)
    {
        if *from == *id {
            let shared = Arc::new(HubSplit::default());
            *extend_hubs = Some(Arc::clone(&shared));
            *hubs = Some(shared);
        }
    }
}

/// `MATCH (a)-[:R]->(b)-[:R]->(c) RETURN count(*)` started at `b`: the first
/// extend writes every `a` only for the counting extend after it to add
/// `b`'s other degree once per `a`. When nothing reads the `a`s (or `b`'s
/// group) but the isomorphism test between the two rels, the counting
/// extend multiplies `b`'s two degrees instead (`Extend::pair`) and the first
/// extend goes; PROFILE shows the two as one operator.
fn fuse_counted_pair(
    steps: &mut Vec<Built>,
    stats: &mut Vec<Option<(Arc<OpStats>, usize)>>,
    reads: &HashSet<SlotId>,
    layout: &SlotLayout,
    ctx: &QueryContext,
) {
    let n = steps.len();
    if n < 2 {
        return;
    }
    let (head, tail) = steps.split_at_mut(n - 1);
    let (
        Built::Extend {
            rel_table: first_table,
            data,
            fwd: first_fwd,
            from: first_from,
            input_chunk: first_input,
            output_chunk: first_output,
            rel_id: first_rel,
            properties: first_properties,
            exclude: first_exclude,
            collapse: false,
            pair: None,
            pad: false,
            ..
        },
        Built::Extend {
            rel_table,
            fwd,
            from,
            input_chunk,
            exclude,
            collapse: true,
            pair,
            ..
        },
    ) = (&head[n - 2], &mut tail[0])
    else {
        return;
    };
    let from_input = first_from.0 == *first_input && from == first_from;
    let chained = *input_chunk == *first_output;
    let unread = !reads
        .iter()
        .any(|s| layout.get(*s).is_some_and(|(c, _)| c == *first_input));
    // The counting extend's only exclusions test the first extend's rel.
    let excludes_first = exclude
        .iter()
        .all(|(rel, _)| rel.0 == *first_output && Some(rel.1) == *first_rel);
    if !(from_input
        && chained
        && unread
        && excludes_first
        && first_properties.is_empty()
        && first_exclude.is_empty())
    {
        return;
    }
    let shared = match (
        exclude.is_empty(),
        first_table == rel_table,
        first_fwd == fwd,
    ) {
        (true, _, _) | (false, false, _) => SharedRels::None,
        (false, true, true) => SharedRels::All,
        // The table's count says whether there is a self loop to look for
        // in the neighbours (which that would pin and scan).
        (false, true, false) if data.self_loops == Some(0) => SharedRels::None,
        (false, true, false) => SharedRels::SelfLoops,
    };
    *pair = Some(FusedExtend {
        data: Arc::clone(data),
        fwd: *first_fwd,
        shared,
        output_chunk: *first_output,
    });
    *input_chunk = *first_input;
    exclude.clear();
    steps.remove(n - 2);
    // stats[i + 1] belongs to steps[i].
    let first = stats.remove(n - 1);
    if let (Some(profile), Some((a, _)), Some(Some((b, _)))) =
        (ctx.profile.as_ref(), first, stats.get_mut(n - 1))
    {
        *b = profile.fuse(&a, b);
    }
}

/// `MATCH (a:A)-[:R]->(b:B) RETURN count(*)`: a counting extend straight
/// over a scan of every node of one end sums the degree of every node, which
/// is the rel table's number of live rels (a rel table has one table at each
/// end; deleted nodes have no live rels). The pipeline becomes one tuple
/// standing for that many: no scan and no CSR read. PROFILE shows
/// `CountRels`.
fn count_whole_rel_table(
    source: &mut BuiltSource,
    steps: &mut Vec<Built>,
    stats: &mut Vec<Option<(Arc<OpStats>, usize)>>,
    ctx: &QueryContext,
) {
    let (
        BuiltSource::Scan { id, columns, .. },
        [Built::Extend {
            data,
            from,
            exclude,
            properties,
            collapse: true,
            pair: None,
            ..
        }],
    ) = (&*source, &steps[..])
    else {
        return;
    };
    if from != id || !columns.is_empty() || !exclude.is_empty() || !properties.is_empty() {
        return;
    }
    let count = data.num_rels;
    *source = BuiltSource::Counted(Arc::new(AtomicBool::new(false)), count);
    steps.clear();
    // stats[0] is the scan's, stats[1] the extend's.
    if let (Some(profile), Some(Some((scan, _))), Some(Some((extend, chunk)))) = (
        ctx.profile.as_ref(),
        stats.first().cloned(),
        stats.get(1).cloned(),
    ) {
        let label = format!(
            "CountRels ({count} rels, from the table's size) × {}",
            extend.label
        );
        let fused = profile.replace(&scan, &extend, label);
        *stats = vec![Some((fused, chunk))];
    } else {
        stats.truncate(1);
    }
}

/// Runs pipelines that feed one sink: every worker pulls batches through
/// its own chain into its own sink per pipeline; finished sinks are handed
/// to `merge` with their pipeline's index. The pipelines of a union (one
/// per table choice of a pattern) run together: a worker starts at the
/// pipeline its index points to and goes round the others, sharing each
/// one's morsels with whoever else is there, so pipelines with one-tuple
/// sources (a key lookup per choice of an undirected pattern) run side by
/// side instead of one after another on the calling thread.
struct PipelineTask<S, F, M> {
    shapes: Vec<PipelineShape>,
    make_sink: F,
    merge: M,
    /// The run over shared hubs ([`share_hubs`]): only the pipelines that
    /// deferred some run again (the others would be instantiated only to
    /// find their morsels, tuples and claims all taken).
    hubs_run: AtomicBool,
    _sink: std::marker::PhantomData<fn() -> S>,
}

impl<S, F, M> Task for PipelineTask<S, F, M>
where
    S: LocalSink + 'static,
    F: Fn() -> Result<S> + Send + Sync,
    M: Fn(usize, S) -> Result<()> + Send + Sync,
{
    fn run_worker(&self, ctx: &WorkerContext) -> Result<()> {
        let n = self.shapes.len();
        for k in 0..n {
            let i = (ctx.worker_idx + k) % n;
            let shape = &self.shapes[i];
            let shares_hubs = matches!(
                &shape.source,
                BuiltSource::Scan { hubs: Some(h), .. } if h.second_run().is_some()
            );
            if self.hubs_run.load(Ordering::Acquire) && !shares_hubs {
                continue;
            }
            let (mut op, mut rs) = shape.instantiate(ctx.worker_idx)?;
            let mut sink = (self.make_sink)()?;
            while op.next(&mut rs)? {
                sink.consume(&rs, &shape.layout)?;
            }
            (self.merge)(i, sink)?;
        }
        Ok(())
    }
}

/// Runs a pipelined recursive join: hands the consumer of its rows to the
/// search, which runs to completion (see [`PushedPipeline`]).
type Driver<'a> = &'a dyn Fn(Arc<dyn JoinRowsConsumer>) -> Result<()>;

/// The one pipeline of a part after a pipelined recursive join: each batch
/// of join rows runs through it on the search worker that found it, with a
/// chain and sink of its own (taken from `idle`, made when none is), so the
/// join's rows are never kept whole. The chains are pulled again for every
/// batch, which the steps [`restartable`] allows are made for.
struct PushedPipeline<S, F> {
    shape: PipelineShape,
    make_sink: F,
    idle: Mutex<Vec<PushedChain<S>>>,
}

struct PushedChain<S> {
    op: Box<dyn Operator>,
    rs: ResultSet,
    feed: Arc<Feed>,
    sink: S,
}

impl<S, F> JoinRowsConsumer for PushedPipeline<S, F>
where
    S: LocalSink + 'static,
    F: Fn() -> Result<S> + Send + Sync,
{
    fn consume(&self, rows: JoinRows) -> Result<()> {
        let idle = self.idle.lock().pop();
        let mut chain = match idle {
            Some(c) => c,
            None => {
                let feed: Arc<Feed> = Arc::default();
                let (op, rs) = self.shape.instantiate_fed(Some(Arc::clone(&feed)), 0)?;
                let sink = (self.make_sink)()?;
                PushedChain { op, rs, feed, sink }
            }
        };
        *chain.feed.lock() = Some(Arc::new(rows));
        let mut run = || -> Result<()> {
            while chain.op.next(&mut chain.rs)? {
                chain.sink.consume(&chain.rs, &self.shape.layout)?;
            }
            Ok(())
        };
        let result = run();
        self.idle.lock().push(chain);
        result
    }
}

/// Whether a pipeline's steps may be pulled again after their input ran
/// dry (the batches of a pipelined join arrive one by one): the steps that
/// keep nothing but their place in the current input. An OPTIONAL MATCH's
/// padding and the primary-key lookups are left out.
fn restartable(steps: &[Step]) -> bool {
    steps.iter().all(|s| match s {
        Step::CrossProduct { optional, .. } => !optional,
        Step::OptionalChain(_) => false,
        Step::Filter(_)
        | Step::Intersect { .. }
        | Step::SemiMask { .. }
        | Step::Alias { .. }
        | Step::ScanProperties { .. } => true,
        Step::Extend { optional, .. } => !optional,
        Step::PadFilter { .. } | Step::LookupNode { .. } => false,
    })
}

/// Runs `shapes` as one task (see [`PipelineTask`]) on at most `threads`
/// workers, and no more than their sources have morsels. With a `driver`,
/// the one shape runs on the batches of a pipelined recursive join instead.
fn run_pipelines<S, F, M>(
    sched: &Scheduler,
    threads: usize,
    shapes: Vec<PipelineShape>,
    make_sink: F,
    merge: M,
    driver: Option<Driver<'_>>,
) -> Result<()>
where
    S: LocalSink + 'static,
    F: Fn() -> Result<S> + Send + Sync + 'static,
    M: Fn(usize, S) -> Result<()> + Send + Sync + 'static,
{
    if let Some(drive) = driver {
        let Ok([shape]) = <[PipelineShape; 1]>::try_from(shapes) else {
            return Err(Error::internal(
                "a pipelined recursive join feeds one pipeline",
            ));
        };
        let pushed = Arc::new(PushedPipeline {
            shape,
            make_sink,
            idle: Mutex::new(Vec::new()),
        });
        drive(Arc::clone(&pushed) as Arc<dyn JoinRowsConsumer>)?;
        let chains = std::mem::take(&mut *pushed.idle.lock());
        for chain in chains {
            merge(0, chain.sink)?;
        }
        return Ok(());
    }
    let Some(first) = shapes.first() else {
        return Ok(());
    };
    let cancel = first.ctx.cancel.clone();
    // More workers than morsels only wake threads that find nothing to do
    // (and the caller then waits for them).
    let morsels: usize = shapes.iter().map(|s| s.source.morsels()).sum();
    let threads = threads.min(morsels.max(1));
    let ctx = Arc::clone(&first.ctx);
    let task = Arc::new(PipelineTask {
        shapes,
        make_sink,
        merge,
        hubs_run: AtomicBool::new(false),
        _sink: std::marker::PhantomData,
    });
    let mut done = sched.run(Arc::clone(&task) as Arc<dyn Task>, threads, &cancel);
    // Hubs deferred by the first run: a second one shares them.
    let hubs: usize = task
        .shapes
        .iter()
        .map(|s| match &s.source {
            BuiltSource::Scan { hubs: Some(h), .. } => h.start_second_run(),
            _ => 0,
        })
        .sum();
    if done.is_ok() && hubs > 0 {
        task.hubs_run.store(true, Ordering::Release);
        let started = std::time::Instant::now();
        done = sched.run(task, threads, &cancel);
        if let Some(p) = &ctx.profile {
            p.record(
                format!("Hubs shared by the workers: {hubs}"),
                hubs as u64,
                started,
            );
        }
    }
    // The groups the workers shared are let go with their operators, not
    // kept for the pipelines after these.
    ctx.csr_pins.clear();
    done
}

/// Executes a query plan and returns its rows.
pub fn execute_query(
    plan: &QueryPlan,
    ctx: Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
) -> Result<Vec<Chunk>> {
    execute_query_with(plan, ctx, sched, threads, &RecursiveSettings::default())
}

/// [`execute_query`] with the connection's recursive-query settings.
pub fn execute_query_with(
    plan: &QueryPlan,
    ctx: Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
    recursive: &RecursiveSettings,
) -> Result<Vec<Chunk>> {
    execute_query_from(plan, None, ctx, sched, threads, recursive)
}

/// [`execute_query_with`] whose first part starts from the rows of `initial`
/// (the continuation of a write statement) instead of one empty row.
pub fn execute_query_from(
    plan: &QueryPlan,
    initial: Option<Chunk>,
    ctx: Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
    recursive: &RecursiveSettings,
) -> Result<Vec<Chunk>> {
    execute_parts(plan, initial, ctx, sched, threads, recursive, None)
}

/// [`execute_query_from`]; with `offsets`, a last part that counts by
/// offset for a subquery's table ([`PartPlan::key_counts`]) puts its
/// arrays there and returns no rows.
fn execute_parts(
    plan: &QueryPlan,
    initial: Option<Chunk>,
    ctx: Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
    recursive: &RecursiveSettings,
    mut offsets: Option<&mut Option<OffsetTable>>,
) -> Result<Vec<Chunk>> {
    let ctx = run_subqueries(plan, ctx, sched, threads, recursive)?;
    // The rows handed to the next part: the chunks of the part before it,
    // with their column types.
    let mut input: Option<(Vec<Chunk>, Vec<LogicalType>)> = initial.map(|c| {
        let types = c.columns.iter().map(|v| v.ty.clone()).collect();
        (vec![c], types)
    });
    let last = plan.parts.len().saturating_sub(1);
    // Whether the rows handed to the next part are in an ORDER BY's order.
    let mut sorted_input = false;
    // Whether they are in the order of the lists they were unwound from
    // (the first part's one row, or rows written in order, are in order).
    let mut listed_input = true;
    // Whether a part's row order reaches the result: every later part
    // only filters and projects its rows in order. (An aggregate or a
    // sort after it makes the order unobservable, so such rows stay on
    // every worker.)
    let mut order_reaches_result = vec![false; plan.parts.len()];
    let mut later_keep_order = true;
    for (i, part) in plan.parts.iter().enumerate().rev() {
        order_reaches_result[i] = later_keep_order;
        later_keep_order &= keeps_row_order(part) && only_reads_rows(part);
    }
    // The rows an OPTIONAL MATCH numbered, until the part that pads them.
    let mut numbered: Option<Arc<Chunk>> = None;
    // Whether `input` ends with a count column (see `hands_on_counts`).
    let mut counted_input = false;
    for (i, part) in plan.parts.iter().enumerate() {
        // Each part has its own token under the statement's: a satisfied
        // LIMIT finishes only its part; interrupts and timeouts reach all.
        let part_ctx = Arc::new(QueryContext {
            version: Arc::clone(&ctx.version),
            pager: Arc::clone(&ctx.pager),
            params: ctx.params.clone(),
            cancel: ctx.cancel.child(),
            profile: ctx.profile.clone(),
            subqueries: Arc::clone(&ctx.subqueries),
            memory: Arc::clone(&ctx.memory),
            semi_masks: Arc::default(),
            csr_pins: Arc::default(),
        });
        // The recursive join's rows run through the part's pipeline as
        // the search finds them (see `PushedPipeline`).
        let mut pipelined: Option<(&RecursiveJoin, Arc<Chunk>)> = None;
        // The first part starts from one empty row.
        let part_input = part.from_rows.then(|| {
            input
                .take()
                .unwrap_or_else(|| (vec![Chunk::new(&[], 1)], Vec::new()))
        });
        let rows = match part_input {
            // Rows only scanned (no recursive join, UNWIND or numbering
            // reads them whole): the earlier part's chunks as they are.
            Some((chunks, _))
                if part.recursive.is_none() && part.unwinds.is_empty() && !part.numbers_rows =>
            {
                let chunks = chunks.into_iter().map(Arc::new).collect();
                Some(PartRows::Chunks(Arc::new(RowPieces::new(chunks))))
            }
            Some((chunks, types)) => {
                let mut base = concat(chunks, &types);
                let mut join_rows = None;
                if let Some(join) = &part.recursive {
                    if pipelines_join(part) {
                        let base = Arc::new(std::mem::replace(&mut base, Chunk::new(&[], 0)));
                        // The shape's scan reads no rows but the batches.
                        join_rows = Some(JoinRows::empty(Arc::clone(&base), join.with_len));
                        pipelined = Some((join, base));
                    } else {
                        let started = std::time::Instant::now();
                        let base_rows = Arc::new(std::mem::replace(&mut base, Chunk::new(&[], 0)));
                        let out = recursive_join(
                            join, &base_rows, &ctx, sched, threads, recursive, None,
                        )?;
                        record_recursive(&ctx, &out, started, None);
                        // The rows are built as the part's scan reads them,
                        // unless the part reads them whole first (it may not
                        // when they hold paths: the planner gives such a part
                        // no UNWIND, and numbers rows only before any join).
                        if part.unwinds.is_empty() && !part.numbers_rows {
                            join_rows = Some(out.rows);
                        } else {
                            base = out.rows.materialize()?;
                        }
                    }
                }
                if part.numbers_rows {
                    // The row number, to find input rows without a match.
                    let mut numbers = ValueVector::new(LogicalType::Int64, 0);
                    for r in 0..base.num_rows {
                        numbers.push_value(&Value::Int64(r as i64));
                    }
                    base.columns.push(numbers);
                }
                Some(match join_rows {
                    Some(j) => PartRows::Join(Arc::new(j)),
                    None => {
                        let rows = Arc::new(apply_unwinds(base, part, &ctx)?);
                        if part.numbers_rows {
                            numbered = Some(Arc::clone(&rows));
                        }
                        PartRows::Chunks(Arc::new(RowPieces::new(vec![rows])))
                    }
                })
            }
            None => None,
        };
        // Rows an ORDER BY left sorted keep that order through a part that
        // neither sorts nor aggregates (`WITH n ORDER BY n.x LIMIT 10
        // RETURN n.name`): one worker reads them in order.
        let keeps_order = keeps_row_order(part);
        // Rows unwound from rows in order (a standalone CALL's rows, `UNWIND
        // [3, 1, 2] AS x`) keep the lists' order through parts that only
        // filter and project them, when that order reaches the result: one
        // worker reads them in order. A part that matches a pattern from
        // them stays parallel.
        let keeps_list_order =
            listed_input && keeps_order && only_reads_rows(part) && order_reaches_result[i];
        let part_threads = if (sorted_input && keeps_order) || keeps_list_order {
            1
        } else {
            threads
        };
        sorted_input = !part.descending.is_empty() || (sorted_input && keeps_order);
        listed_input = keeps_list_order;
        let padded = match part.optional {
            Some(_) => numbered.take(),
            None => None,
        };
        // PROFILE lists the search before the pipeline it feeds.
        let search_line = match (&pipelined, &ctx.profile) {
            (Some(_), Some(p)) => Some(p.next_pipeline()),
            _ => None,
        };
        let drive = |to: Arc<dyn JoinRowsConsumer>| -> Result<()> {
            let Some((join, base)) = &pipelined else {
                return Err(Error::internal("no recursive join to pipeline"));
            };
            let started = std::time::Instant::now();
            // Under the part's token: a LIMIT the part satisfies ends the
            // search too.
            let out = recursive_join(join, base, &part_ctx, sched, threads, recursive, Some(to))?;
            record_recursive(&ctx, &out, started, search_line);
            Ok(())
        };
        let counts_out = plan
            .parts
            .get(i + 1)
            .is_some_and(|next| hands_on_counts(part, next));
        // Held to be freed on the workers once the part has read them.
        let read_rows = match &rows {
            Some(PartRows::Chunks(pieces)) => Some(Arc::clone(pieces)),
            _ => None,
        };
        let chunks = execute_part(
            part,
            rows,
            padded.as_deref(),
            &part_ctx,
            sched,
            part_threads,
            pipelined.is_some().then_some(&drive as Driver<'_>),
            (counted_input, counts_out),
            offsets.as_deref_mut().filter(|_| i == last),
        )?;
        if let Some(pieces) = read_rows {
            free_rows(pieces, sched, part_threads);
        }
        part_ctx.cancel.check()?;
        if i == last {
            return Ok(chunks);
        }
        let mut types = part.types[..part.num_visible].to_vec();
        if counts_out {
            types.push(crate::operator::recursive_join::COUNT_TYPE);
        }
        input = Some((chunks, types));
        counted_input = counts_out;
    }
    Ok(Vec::new())
}

/// Whether `part` hands on its rows in the order it reads them when one
/// worker runs it: it neither sorts, aggregates nor joins recursively.
fn keeps_row_order(part: &PartPlan) -> bool {
    part.descending.is_empty()
        && part.recursive.is_none()
        && matches!(part.sink, Sink::Collect { .. })
}

/// Whether `part` only filters and projects the rows it reads (their
/// nodes' properties included): no pattern is matched from them, no row
/// numbered, none expanded but by its UNWINDs.
fn only_reads_rows(part: &PartPlan) -> bool {
    part.from_rows
        && !part.numbers_rows
        && part.optional.is_none()
        && part.pipelines.iter().all(|p| {
            matches!(p.source, Source::Rows { .. })
                && p.steps.iter().all(|s| {
                    matches!(
                        s,
                        Step::Filter(_) | Step::Alias { .. } | Step::ScanProperties { .. }
                    )
                })
        })
}

/// A part's input rows holding at least this many values that own an
/// allocation each are freed on the workers.
#[cfg(not(kith_tiny))]
const FREE_ON_WORKERS_MIN_ROWS: usize = 8 * 1024;
#[cfg(kith_tiny)]
const FREE_ON_WORKERS_MIN_ROWS: usize = 2;

/// Frees rows a part has read, each chunk on a worker, when they hold
/// many values that own an allocation each (lists, maps, nodes: a
/// `Value` column): freeing the 65 Ki lists of `WITH a, collect(b.id)`
/// on the calling thread took longer than reading them (1.4 ms at
/// 1 thread, 2.6 ms at 2, where the workers had allocated them). Rows
/// someone still holds, or of one chunk, are left to their last owner.
fn free_rows(pieces: Arc<RowPieces>, sched: &Scheduler, threads: usize) {
    if threads < 2 {
        return;
    }
    let Ok(pieces) = Arc::try_unwrap(pieces) else {
        return;
    };
    let chunks = pieces.into_chunks();
    let values: usize = chunks
        .iter()
        .filter(|c| {
            c.columns
                .iter()
                .any(|v| matches!(v.data, kith_common::VectorData::Value(_)))
        })
        .map(|c| c.num_rows)
        .sum();
    if chunks.len() >= 2 && values >= FREE_ON_WORKERS_MIN_ROWS {
        drop_on_workers(chunks, sched, threads);
    }
}

/// Drops `items` on up to `threads` workers, one item per task.
fn drop_on_workers<T: Send + 'static>(items: Vec<T>, sched: &Scheduler, threads: usize) {
    let n = items.len();
    let slots: Arc<Vec<Mutex<Option<T>>>> =
        Arc::new(items.into_iter().map(|c| Mutex::new(Some(c))).collect());
    // Not the query's token: the rows are freed even after a LIMIT ended
    // the part. What a failed task leaves is dropped with `slots`.
    let _ = sched.parallel_map(threads, &kith_sched::CancelToken::new(), n, move |i| {
        drop(slots[i].lock().take());
        Ok(())
    });
}

/// Whether `part`'s recursive join hands its rows straight to the part's
/// pipeline (see `PushedPipeline`): a search that can ([`forwards`]), into
/// a part that does not read them whole (UNWIND, OPTIONAL MATCH numbering
/// or padding), with one pipeline of steps that may be pulled again. A
/// LIMIT the part satisfies ends the search.
fn pipelines_join(part: &PartPlan) -> bool {
    part.recursive.as_ref().is_some_and(forwards)
        && part.unwinds.is_empty()
        && !part.numbers_rows
        && part.optional.is_none()
        && part.pipelines.len() == 1
        && part.pipelines.iter().all(|p| restartable(&p.steps))
}

/// Whether `part` hands its rows to `next` once each with a count column
/// instead of repeating each by its multiplicity: a part after a recursive
/// join (whose rows stand for many walks or paths) that only projects
/// them (a `WITH`, like the `WITH *` closing an OPTIONAL MATCH: no
/// DISTINCT, ORDER BY, SKIP or LIMIT) into a part that scans its input as
/// is (no UNWIND, recursive join, row numbering or padding). Expanding
/// 2.3 M counted rows into 15.5 M between two parts was most of such a
/// query.
fn hands_on_counts(part: &PartPlan, next: &PartPlan) -> bool {
    part.recursive.is_some()
        && matches!(part.sink, Sink::Collect { .. })
        && !part.distinct
        && part.descending.is_empty()
        && part.skip.is_none()
        && part.limit.is_none()
        && part.skip_expr.is_none()
        && part.limit_expr.is_none()
        && part.optional.is_none()
        && part.num_visible == part.types.len()
        && next.from_rows
        && next.recursive.is_none()
        && next.unwinds.is_empty()
        && !next.numbers_rows
        && next.optional.is_none()
}

/// Records a recursive join's run under PROFILE: which policy ran (the
/// automatic choice included) and its rows.
fn record_recursive(
    ctx: &QueryContext,
    out: &RecursiveOutput,
    started: std::time::Instant,
    line: Option<usize>,
) {
    let Some(p) = &ctx.profile else {
        return;
    };
    let stats = &out.stats;
    let pulled = match stats.pulled_levels {
        0 => String::new(),
        n => format!(" bottom-up levels={n}"),
    };
    let pipelined = match out.forwarded {
        Some(_) => " pipelined",
        None => "",
    };
    let label = format!(
        "RecursiveJoin (IFE) policy={} k={} threads={} source morsels={}{pulled}{pipelined}",
        stats.policy.name(),
        stats.k,
        stats.threads,
        stats.source_morsels
    );
    let rows = out.forwarded.unwrap_or(out.rows.num_rows() as u64);
    match line {
        Some(n) => p.record_at(n, label, rows, started),
        None => p.record(label, rows, started),
    }
}

/// Runs the plan's subqueries (each a query of its own, with its own
/// subqueries) and returns the context whose expressions probe their tables.
fn run_subqueries(
    plan: &QueryPlan,
    ctx: Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
    recursive: &RecursiveSettings,
) -> Result<Arc<QueryContext>> {
    let mut tables = Vec::with_capacity(plan.subqueries.len());
    for s in &plan.subqueries {
        if let Some(degree) = &s.degree {
            let started = std::time::Instant::now();
            let table = SubqueryTable::from_degrees(s.kind, degree, &ctx)?;
            if let Some(p) = &ctx.profile {
                let rel = degree.rel_table;
                let name = ctx
                    .version
                    .catalog
                    .table(rel)
                    .map_or_else(|| rel.0.to_string(), |t| t.label.clone());
                let dir = degree.direction;
                p.record(format!("Subquery by degree: {name} {dir:?}"), 0, started);
            }
            tables.push(table);
            continue;
        }
        let mut offsets = None;
        let sub_ctx = Arc::clone(&ctx);
        let out = Some(&mut offsets);
        let rows = execute_parts(&s.plan, None, sub_ctx, sched, threads, recursive, out)?;
        ctx.cancel.check()?;
        tables.push(match offsets {
            Some(t) => SubqueryTable::from_offsets(s.kind, t)?,
            None => SubqueryTable::from_rows(s.kind, s.num_keys, rows)?,
        });
    }
    Ok(Arc::new(QueryContext {
        version: Arc::clone(&ctx.version),
        pager: Arc::clone(&ctx.pager),
        params: ctx.params.clone(),
        cancel: ctx.cancel.clone(),
        profile: ctx.profile.clone(),
        subqueries: Arc::new(tables),
        memory: Arc::clone(&ctx.memory),
        semi_masks: Arc::clone(&ctx.semi_masks),
        csr_pins: Arc::clone(&ctx.csr_pins),
    }))
}

/// The index of a hash join's build rows by their `keys`, built on the
/// query's workers; under PROFILE one line of its own reports the build.
fn build_join_index(
    keys: ValueVector,
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
) -> Result<JoinIndex> {
    let started = std::time::Instant::now();
    let cx = BuildContext {
        sched,
        threads,
        cancel: &ctx.cancel,
        memory: &ctx.memory,
    };
    let index = JoinIndex::build(keys, &cx)?;
    if let Some(p) = &ctx.profile {
        let label = format!(
            "HashJoin build keys={} key={} partitions={} threads={} memory={} KiB",
            index.num_keys(),
            if index.is_integer() {
                "integer"
            } else {
                "general"
            },
            index.num_partitions(),
            index.build_threads(),
            index.memory_bytes() >> 10,
        );
        p.record(label, index.num_rows() as u64, started);
    }
    Ok(index)
}

/// One chunk holding the rows of `chunks` in order.
fn concat(chunks: Vec<Chunk>, types: &[LogicalType]) -> Chunk {
    let mut chunks = chunks.into_iter().filter(|c| c.num_rows > 0);
    let Some(mut out) = chunks.next() else {
        return Chunk::new(types, 0);
    };
    for c in chunks {
        for (dst, src) in out.columns.iter_mut().zip(&c.columns) {
            dst.append(src);
        }
        out.num_rows += c.num_rows;
    }
    out
}

/// Expands `rows` (columns: the part's inputs) by each UNWIND in turn: one
/// row per list element; NULL gives no row, a non-list value one row.
fn apply_unwinds(mut rows: Chunk, part: &PartPlan, ctx: &QueryContext) -> Result<Chunk> {
    let mut slots: Vec<(SlotId, LogicalType)> = part.inputs.clone();
    for u in &part.unwinds {
        let mut layout = SlotLayout::default();
        for (i, (slot, _)) in slots.iter().enumerate() {
            layout.positions.insert(*slot, (0, i));
        }
        let n = rows.num_rows;
        let lists = project_rows(
            rows.clone(),
            &layout,
            std::slice::from_ref(&u.expr),
            std::slice::from_ref(&u.expr.ty),
            ctx,
        )?;
        // Each output row's input row, and its element: the input columns
        // are then gathered once each, typed (no value per row and column).
        let mut from: Vec<u32> = Vec::new();
        let mut elements = ValueVector::new(u.ty.clone(), 0);
        let mut memory = crate::memory::MemoryCharge::default();
        let row_bytes = 8 * rows.columns.len() as u64 + 4;
        let push = |v: &Value, elements: &mut ValueVector| -> Result<()> {
            // Elements of a widened list (INT32 and INT64, say) take the
            // element type.
            if v.is_null() || u.ty == LogicalType::Any || v.logical_type() == u.ty {
                elements.push_value(v);
            } else {
                elements.push_value(&cast_value(v, &u.ty)?);
            }
            Ok(())
        };
        for r in 0..n {
            let before = elements.len();
            match lists.columns[0].get_value(r) {
                Value::Null => {}
                Value::List(items) => match items.ints() {
                    // A list of integers stays integers until here.
                    Some(ints) if matches!(u.ty, LogicalType::Int64 | LogicalType::Any) => {
                        for &x in ints {
                            elements.push_value(&Value::Int64(x));
                        }
                    }
                    _ => {
                        for v in items.iter() {
                            push(v, &mut elements)?;
                        }
                    }
                },
                v => push(&v, &mut elements)?,
            }
            let added = elements.len() - before;
            from.extend(std::iter::repeat_n(r as u32, added));
            if added > 0 {
                let bytes = from.len() as u64 * row_bytes + elements.memory_bytes() as u64;
                memory.grow_to(&ctx.memory, bytes)?;
            }
        }
        let mut out = Chunk {
            columns: Vec::with_capacity(rows.columns.len() + 1),
            num_rows: from.len(),
        };
        for (src, (_, ty)) in rows.columns.iter().zip(&slots) {
            let mut c = ValueVector::new(ty.clone(), 0);
            c.extend_gather(src, &from);
            out.columns.push(c);
        }
        out.columns.push(elements);
        memory.grow_to(&ctx.memory, out.memory_bytes() as u64)?;
        rows = out;
        slots.push((u.slot, u.ty.clone()));
    }
    Ok(rows)
}

/// Runs `shape` into result collectors evaluating `outputs`; with `wanted`,
/// stops once that many rows exist.
#[allow(clippy::too_many_arguments)]
fn collect_all(
    shapes: Vec<PipelineShape>,
    outputs: Vec<BoundExpr>,
    types: &[LogicalType],
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
    wanted: Option<u64>,
    driver: Option<Driver<'_>>,
    counts: bool,
) -> Result<Vec<Chunk>> {
    let wanted = wanted.map(|w| (w, Arc::new(AtomicU64::new(0))));
    let outputs = Arc::new(outputs);
    let types = types.to_vec();
    let sink_ctx = Arc::clone(ctx);
    gather_pipelines(
        sched,
        threads,
        shapes,
        move || {
            let evs = outputs
                .iter()
                .map(Evaluator::new)
                .collect::<Result<Vec<_>>>()?;
            let c = Collect::new(Arc::clone(&sink_ctx), evs, &types, wanted.clone(), true);
            Ok(match counts {
                true => c.with_counts(),
                false => c,
            })
        },
        Collect::into_chunks,
        driver,
    )
}

/// Runs `shapes` (see [`run_pipelines`]) and returns the chunks `finish`
/// makes of each finished sink, in pipeline order.
fn gather_pipelines<S, F, G>(
    sched: &Scheduler,
    threads: usize,
    shapes: Vec<PipelineShape>,
    make_sink: F,
    finish: G,
    driver: Option<Driver<'_>>,
) -> Result<Vec<Chunk>>
where
    S: LocalSink + 'static,
    F: Fn() -> Result<S> + Send + Sync + 'static,
    G: Fn(S) -> Vec<Chunk> + Send + Sync + 'static,
{
    let collected: Arc<Mutex<Vec<Vec<Chunk>>>> =
        Arc::new(Mutex::new(vec![Vec::new(); shapes.len()]));
    let out = Arc::clone(&collected);
    run_pipelines(
        sched,
        threads,
        shapes,
        make_sink,
        move |i, sink| {
            let chunks = finish(sink);
            out.lock()[i].extend(chunks);
            Ok(())
        },
        driver,
    )?;
    let chunks = std::mem::take(&mut *collected.lock());
    Ok(chunks.into_iter().flatten().collect())
}

/// The value of a SKIP / LIMIT expression that reads no variable.
fn constant_count(e: &BoundExpr, ctx: &QueryContext, what: &str) -> Result<u64> {
    let v = crate::expression::evaluate_constant(e, &ctx.params, &ctx.subqueries)?;
    match v.as_i64() {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Error::at(
            kith_common::ErrorKind::Runtime,
            e.span,
            format!("{what} expects a non-negative integer, got {v}"),
        )),
    }
}

/// Runs one part's pipeline and finishing phase; `padded`: the numbered
/// rows an OPTIONAL MATCH part pads (`PartPlan::optional`).
/// `counted`: whether the part's input rows end with a count column (the
/// previous part handed its multiplicities on), and whether its own rows
/// do ([`hands_on_counts`]). `offsets`: see [`execute_parts`].
#[allow(clippy::too_many_arguments)]
fn execute_part(
    plan: &PartPlan,
    rows: Option<PartRows>,
    padded: Option<&Chunk>,
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
    driver: Option<Driver<'_>>,
    counted: (bool, bool),
    offsets: Option<&mut Option<OffsetTable>>,
) -> Result<Vec<Chunk>> {
    // SKIP / LIMIT expressions over no variable: evaluated once, now.
    let resolved;
    let plan = if plan.skip_expr.is_some() || plan.limit_expr.is_some() {
        let mut p = plan.clone();
        if let Some(e) = &plan.skip_expr {
            p.skip = Some(constant_count(e, ctx, "SKIP")?);
        }
        if let Some(e) = &plan.limit_expr {
            p.limit = Some(constant_count(e, ctx, "LIMIT")?);
        }
        resolved = p;
        &resolved
    } else {
        plan
    };
    // The slots an aggregating sink reads (its keys and arguments): a last
    // extend whose tuples it does not read may only count.
    let sink_reads: Option<HashSet<SlotId>> = match &plan.sink {
        Sink::Aggregate {
            keys, aggregates, ..
        } => {
            let mut v = Vec::new();
            for (k, _) in keys {
                k.slots(&mut v);
            }
            for a in aggregates {
                if let Some(arg) = &a.arg {
                    arg.slots(&mut v);
                }
            }
            Some(v.into_iter().collect())
        }
        Sink::Collect { .. } => None,
    };
    // Each pipeline is resolved right before it runs (a cross product's
    // build side runs while resolving).
    let shape = |p: &SubPlan| {
        PipelineShape::build(
            &p.source,
            &p.steps,
            ctx,
            rows.clone(),
            sched,
            threads,
            plan.recursive.is_some() || counted.0,
            sink_reads.as_ref(),
        )
    };
    let ordered = !plan.descending.is_empty();
    // Whether each chunk of `rows` is sorted by the part's ORDER BY.
    let mut sorted_runs = false;
    let rows: Vec<Chunk> = match &plan.sink {
        // An OPTIONAL MATCH's one sort key is the input row number, which
        // `pad_unmatched` groups by without sorting.
        Sink::Collect { outputs } if ordered && plan.optional.is_none() => {
            sorted_runs = true;
            // Top-k per worker is only exact without DISTINCT.
            let keep = rows_to_keep(plan).filter(|_| !plan.distinct);
            let shapes = plan
                .pipelines
                .iter()
                .map(shape)
                .collect::<Result<Vec<_>>>()?;
            let outputs = Arc::new(outputs.clone());
            let types = plan.types.clone();
            let first_key = plan.num_visible;
            let descending = Arc::new(plan.descending.clone());
            let sink_ctx = Arc::clone(ctx);
            // Runs in pipeline order whichever worker finishes first (ties
            // keep that order in the merge).
            gather_pipelines(
                sched,
                threads,
                shapes,
                move || {
                    let evs = outputs
                        .iter()
                        .map(Evaluator::new)
                        .collect::<Result<Vec<_>>>()?;
                    Ok(OrderBy {
                        inner: Collect::new(Arc::clone(&sink_ctx), evs, &types, None, false),
                        first_key,
                        descending: Arc::clone(&descending),
                        keep,
                    })
                },
                // Each worker sorts its own rows; the runs are merged below.
                |sink: OrderBy| vec![sink.finish()],
                driver,
            )?
        }
        Sink::Collect { outputs } => {
            // Without DISTINCT, enough rows anywhere satisfies SKIP + LIMIT.
            let wanted = match (plan.limit, plan.distinct) {
                (Some(l), false) => Some(plan.skip.unwrap_or(0).saturating_add(l)),
                _ => None,
            };
            if wanted.is_none() {
                // Every row of every pipeline: all of them at once.
                let shapes = plan
                    .pipelines
                    .iter()
                    .map(shape)
                    .collect::<Result<Vec<_>>>()?;
                collect_all(
                    shapes,
                    outputs.clone(),
                    &plan.types,
                    ctx,
                    sched,
                    threads,
                    None,
                    driver,
                    counted.1,
                )?
            } else {
                // One pipeline after another, until SKIP + LIMIT rows are in.
                let mut chunks = Vec::new();
                let mut have = 0u64;
                for p in &plan.pipelines {
                    let rest = wanted.map(|w| w.saturating_sub(have));
                    if rest == Some(0) {
                        break;
                    }
                    let got = collect_all(
                        vec![shape(p)?],
                        outputs.clone(),
                        &plan.types,
                        ctx,
                        sched,
                        threads,
                        rest,
                        driver,
                        false,
                    )?;
                    have += got.iter().map(|c| c.num_rows as u64).sum::<u64>();
                    chunks.extend(got);
                }
                chunks
            }
        }
        Sink::Aggregate {
            keys,
            aggregates,
            dependent,
        } => {
            let defs = Arc::new(
                aggregates
                    .iter()
                    .map(AggregateDef::new)
                    .collect::<Result<Vec<_>>>()?,
            );
            let key_exprs = Arc::new(keys.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>());
            let shapes = plan
                .pipelines
                .iter()
                .map(shape)
                .collect::<Result<Vec<_>>>()?;
            // Per pipeline, merged in pipeline order below (so `collect()`
            // lists come out in that order whichever worker finishes first).
            let merged: Arc<Mutex<Vec<Option<HashAggregate>>>> =
                Arc::new(Mutex::new((0..shapes.len()).map(|_| None).collect()));
            // Workers with many groups: their tables split by partition,
            // with their pipeline's number.
            let pieces: Arc<Mutex<Vec<SplitAggregate>>> = Arc::default();
            let presence = plan.key_counts == Some(KeyCounts::Presence);
            let make_sink = {
                let (sink_ctx, sink_defs, key_exprs) =
                    (Arc::clone(ctx), Arc::clone(&defs), Arc::clone(&key_exprs));
                Arc::new(move || {
                    let evs = key_exprs
                        .iter()
                        .map(Evaluator::new)
                        .collect::<Result<Vec<_>>>()?;
                    let slots = key_exprs.iter().map(key_slot).collect();
                    let mut agg = HashAggregate::new(
                        Arc::clone(&sink_ctx),
                        evs,
                        slots,
                        Arc::clone(&sink_defs),
                    )?;
                    if presence {
                        agg.count_presence();
                    }
                    Ok(agg)
                })
            };
            // A few partitions per thread, so that uneven ones even out.
            let log2_parts = match threads {
                1 => 0,
                t => (4 * t).next_power_of_two().min(64).trailing_zeros(),
            };
            let disjoint = threads > 1 && driver.is_none() && keyed_by_scanned_node(plan, keys);
            let mut shapes = shapes;
            if threads > 1 && !disjoint && driver.is_none() {
                // Each scanned node's tuples may then be in every worker's
                // table, which a disjoint finish cannot allow.
                shapes.iter_mut().for_each(share_hubs);
            }
            let (out, split_out) = (Arc::clone(&merged), Arc::clone(&pieces));
            let (make, make_piece) = (Arc::clone(&make_sink), Arc::clone(&make_sink));
            run_pipelines(
                sched,
                threads,
                shapes,
                move || make(),
                move |i, sink: HashAggregate| {
                    if disjoint {
                        // Its groups are in no other table: one partition.
                        split_out.lock().push((i, vec![sink]));
                        return Ok(());
                    }
                    // Counts by offset merge by adding arrays instead.
                    if log2_parts > 0
                        && sink.num_groups() >= PARTITION_MIN_GROUPS
                        && !sink.counts_by_offset()
                    {
                        // Split by this worker, outside the lock.
                        let split = sink.split(log2_parts, &*make_piece)?;
                        split_out.lock().push((i, split));
                        return Ok(());
                    }
                    let mut slots = out.lock();
                    match slots[i].as_mut() {
                        Some(m) => m.merge(sink)?,
                        None => slots[i] = Some(sink),
                    }
                    Ok(())
                },
                driver,
            )?;
            let output = Arc::new(GroupOutput {
                keys: keys.clone(),
                aggregates: aggregates.clone(),
                dependent: dependent.clone(),
                outputs: plan.final_outputs.clone(),
                types: plan.types.clone(),
            });
            let merged = std::mem::take(&mut *merged.lock());
            let mut pieces = std::mem::take(&mut *pieces.lock());
            if pieces.is_empty() {
                // No pipeline (a pattern that cannot match): the empty state.
                let mut agg: Option<HashAggregate> = None;
                for sink in merged.into_iter().flatten() {
                    match agg.as_mut() {
                        Some(m) => m.merge(sink)?,
                        None => agg = Some(sink),
                    }
                }
                let mut agg = match agg {
                    Some(agg) => agg,
                    None => make_sink()?,
                };
                if let Some(out) = offsets.filter(|_| hands_off_offsets(plan)) {
                    if let Some(t) = agg.take_offset_table(DENSE_OFFSETS) {
                        *out = Some(t);
                        return Ok(Vec::new());
                    }
                }
                vec![output.finish(agg, ctx)?]
            } else {
                // The small tables split too, then each partition merges its
                // pieces in pipeline order and finishes on its own.
                for (i, sink) in merged.into_iter().enumerate() {
                    if let Some(sink) = sink {
                        pieces.push((i, sink.split(log2_parts, &*make_sink)?));
                    }
                }
                pieces.sort_by_key(|(i, _)| *i);
                let by_part: Vec<Vec<HashAggregate>> = if disjoint {
                    pieces.into_iter().map(|(_, table)| table).collect()
                } else {
                    let mut by_part: Vec<Vec<HashAggregate>> =
                        (0..1usize << log2_parts).map(|_| Vec::new()).collect();
                    for (_, split) in pieces {
                        for (part, piece) in by_part.iter_mut().zip(split) {
                            part.push(piece);
                        }
                    }
                    by_part
                };
                let n = by_part.len();
                let by_part: Arc<Vec<Mutex<Vec<HashAggregate>>>> =
                    Arc::new(by_part.into_iter().map(Mutex::new).collect());
                let task_ctx = Arc::clone(ctx);
                // An ORDER BY (without DISTINCT, which would drop rows after
                // it) sorts each partition's rows, top-k with a LIMIT: the
                // part's sort then only merges the runs.
                let presort = (ordered && !plan.distinct && plan.optional.is_none()).then(|| {
                    (
                        plan.num_visible,
                        plan.descending.clone(),
                        rows_to_keep(plan),
                    )
                });
                sorted_runs = presort.is_some();
                sched.parallel_map(threads, &ctx.cancel, n, move |p| {
                    // The first piece (in pipeline order) indexed, the
                    // others merged into it.
                    let mut pieces = std::mem::take(&mut *by_part[p].lock()).into_iter();
                    let mut agg = match pieces.next() {
                        Some(first) => first,
                        None => make_sink()?,
                    };
                    if pieces.len() > 0 {
                        agg = agg.for_partition(log2_parts);
                        agg.index();
                        for piece in pieces {
                            agg.merge(piece)?;
                        }
                    }
                    let rows = output.finish(agg, &task_ctx)?;
                    Ok(match &presort {
                        Some((first_key, descending, keep)) => {
                            sort_chunk(&rows, *first_key, descending, *keep)
                        }
                        None => rows,
                    })
                })?
            }
        }
    };
    let (rows, order) = if sorted_runs {
        merge_sorted_runs(rows, plan, ctx, sched, threads)?
    } else {
        (rows, RowOrder::Unsorted)
    };
    Ok(finish_rows(rows, plan, padded, order))
}

/// The slot a group key reads as it is: a slot, or `id()` of an id slot
/// (a subquery's key), whose values are that slot's ids.
fn key_slot(e: &BoundExpr) -> Option<SlotId> {
    match &e.kind {
        BoundExprKind::Slot(s) => Some(*s),
        BoundExprKind::Function(name, args) if name == "id" && e.ty == LogicalType::InternalId => {
            match args.as_slice() {
                [BoundExpr {
                    kind: BoundExprKind::Slot(s),
                    ty: LogicalType::InternalId,
                    ..
                }] => Some(*s),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether a subquery's last part may hand its table the aggregate's
/// arrays by offset instead of rows: its rows would be exactly the groups'
/// keys and counts (`id(key), count(*)`), none dropped, padded or sorted.
fn hands_off_offsets(plan: &PartPlan) -> bool {
    plan.key_counts.is_some()
        && plan.optional.is_none()
        && !plan.distinct
        && plan.skip.is_none()
        && plan.limit.is_none()
        && plan.descending.is_empty()
        && plan.final_outputs.len() == 2
}

/// Whether the part's one group key is the node every pipeline scans, each
/// pipeline a table of its own (`MATCH (b)<-[]-(a) WITH b, count(*)`
/// started at `b`): morsels are disjoint node ranges, so each group is in
/// one worker's table only and the tables finish as they are, in
/// parallel, with no split or merge. Two pipelines scanning one table
/// (one per rel table of `(a)-[]->(b)`) meet the same nodes.
fn keyed_by_scanned_node(plan: &PartPlan, keys: &[(BoundExpr, SlotId)]) -> bool {
    let [(key, _)] = keys else {
        return false;
    };
    let BoundExprKind::Slot(slot) = key.kind else {
        return false;
    };
    let mut tables = HashSet::new();
    !plan.pipelines.is_empty()
        && plan.pipelines.iter().all(|p| match p.source {
            Source::ScanNodes { table, id_slot, .. } => id_slot == slot && tables.insert(table),
            _ => false,
        })
}

/// One worker's aggregate split by partition, with its pipeline's number.
type SplitAggregate = (usize, Vec<HashAggregate>);

/// What an aggregating part outputs from its groups.
struct GroupOutput {
    keys: Vec<(BoundExpr, SlotId)>,
    aggregates: Vec<kith_planner::bound::BoundAggregate>,
    dependent: Vec<DependentKey>,
    outputs: Vec<BoundExpr>,
    types: Vec<LogicalType>,
}

impl GroupOutput {
    /// `agg`'s groups as the part's rows: the outputs evaluated over the
    /// keys, the aggregates and the dependent keys.
    fn finish(&self, agg: HashAggregate, ctx: &Arc<QueryContext>) -> Result<Chunk> {
        let key_types: Vec<LogicalType> = self.keys.iter().map(|(e, _)| e.ty.clone()).collect();
        let agg_types: Vec<LogicalType> = self.aggregates.iter().map(|a| a.ty.clone()).collect();
        let mut groups = agg.finish(&key_types, &agg_types);
        let mut layout = SlotLayout::default();
        for (i, (_, slot)) in self.keys.iter().enumerate() {
            layout.positions.insert(*slot, (0, i));
        }
        for (i, a) in self.aggregates.iter().enumerate() {
            layout.positions.insert(a.slot, (0, self.keys.len() + i));
        }
        // Each node's dependent keys (adjacent in the plan) in one read
        // by id; NULLs for properties its table lacks.
        for keys in self.dependent.chunk_by(|a, b| a.node == b.node) {
            let (table, node) = (keys[0].table, keys[0].node);
            let data = node_data(ctx, table)?;
            let ids = layout
                .get(node)
                .and_then(|(_, v)| groups.columns.get(v).cloned())
                .ok_or_else(|| Error::internal("dependent key without its node"))?;
            let column_of = |p: &PropertyRead| p.property.and_then(|id| data.column_of(id));
            let stored: Vec<(usize, LogicalType)> = keys
                .iter()
                .filter_map(|k| Some((column_of(&k.property)?, k.property.ty.clone())))
                .collect();
            let mut read = read_by_id(ctx, &data, &stored, ids)?.into_iter();
            for k in keys {
                let column = match column_of(&k.property) {
                    Some(_) => read
                        .next()
                        .ok_or_else(|| Error::internal("dependent key not read"))?,
                    None => null_vector(&k.property.ty, groups.num_rows),
                };
                layout
                    .positions
                    .insert(k.property.slot, (0, groups.columns.len()));
                groups.columns.push(column);
            }
        }
        project_rows(groups, &layout, &self.outputs, &self.types, ctx)
    }
}

/// The rows SKIP + LIMIT can reach (None without a LIMIT): what a sort
/// keeps.
fn rows_to_keep(plan: &PartPlan) -> Option<usize> {
    let skip = plan.skip.unwrap_or(0);
    plan.limit
        .map(|l| skip.saturating_add(l).min(usize::MAX as u64) as usize)
}

/// Sorted runs of at least this many rows in all merge on the workers.
#[cfg(not(kith_tiny))]
const PARALLEL_MERGE_MIN_ROWS: usize = 16 * 1024;
#[cfg(kith_tiny)]
const PARALLEL_MERGE_MIN_ROWS: usize = 2;

/// How a part's rows stand against its ORDER BY before `finish_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowOrder {
    Unsorted,
    /// Each chunk is sorted.
    Runs,
    /// The chunks, in order, are sorted, and the first `skipped` rows of
    /// SKIP are already left out.
    Sorted {
        skipped: usize,
    },
}

/// Sorted runs merged, except under DISTINCT (which rebuilds the rows):
/// the runs are cut at exact ranks of their merged order
/// (`cut_sorted_runs`) and only the stretch SKIP + LIMIT reaches is
/// sorted, in pieces on the workers when it holds thousands of rows and
/// there are several threads (`ORDER BY ... SKIP 45000 LIMIT 10` sorts
/// ten rows).
fn merge_sorted_runs(
    runs: Vec<Chunk>,
    plan: &PartPlan,
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
) -> Result<(Vec<Chunk>, RowOrder)> {
    let runs: Vec<Chunk> = runs.into_iter().filter(|c| c.num_rows > 0).collect();
    if runs.len() <= 1 {
        return Ok((runs, RowOrder::Sorted { skipped: 0 }));
    }
    if plan.distinct {
        return Ok((runs, RowOrder::Runs));
    }
    let total: usize = runs.iter().map(|c| c.num_rows).sum();
    let end = rows_to_keep(plan).map_or(total, |k| k.min(total));
    let skip = (plan.skip.unwrap_or(0).min(end as u64)) as usize;
    let parts = if threads > 1 && end - skip >= PARALLEL_MERGE_MIN_ROWS {
        2 * threads
    } else {
        1
    };
    let ranks: Vec<usize> = (0..=parts)
        .map(|i| skip + (end - skip) * i / parts)
        .collect();
    let (first_key, descending) = (plan.num_visible, plan.descending.clone());
    let cuts = cut_sorted_runs(&runs, first_key, &descending, &ranks);
    let types = plan.types.clone();
    let runs = Arc::new(runs);
    let pieces = sched.parallel_map(threads, &ctx.cancel, parts, move |i| {
        let slices = runs
            .iter()
            .zip(cuts[i].iter().zip(&cuts[i + 1]))
            .map(|(run, (&from, &to))| run.rows_in(from..to.max(from)))
            .collect();
        Ok(sort_chunk(
            &concat(slices, &types),
            first_key,
            &descending,
            None,
        ))
    })?;
    Ok((pieces, RowOrder::Sorted { skipped: skip }))
}

/// `n` NULLs of type `ty`.
fn null_vector(ty: &LogicalType, n: usize) -> ValueVector {
    let mut v = ValueVector::new(ty.clone(), n);
    (0..n).for_each(|p| v.set_null(p, true));
    v
}

/// Evaluates `outputs` over the rows of `input` (one unflat chunk).
fn project_rows(
    input: Chunk,
    layout: &SlotLayout,
    outputs: &[kith_planner::expr::BoundExpr],
    types: &[LogicalType],
    ctx: &QueryContext,
) -> Result<Chunk> {
    let n = input.num_rows;
    let rs = ResultSet {
        chunks: vec![DataChunk {
            vectors: input.columns,
            state: ChunkState {
                len: n,
                sel: None,
                flat: None,
                generation: 0,
            },
        }],
        multiplicity: 1,
        weights: None,
    };
    let ectx = EvalContext {
        rs: &rs,
        layout,
        params: &ctx.params,
        subqueries: &ctx.subqueries,
    };
    let mut out = Chunk::new(types, 0);
    // A plain slot of the column's type is the input column itself: taken
    // by its last such output once every expression is evaluated, copied
    // for the others (a GROUP BY's million keys are not copied).
    let plain: Vec<Option<usize>> = outputs
        .iter()
        .zip(&out.columns)
        .map(|(e, col)| match &e.kind {
            BoundExprKind::Slot(slot) => layout.get(*slot).map(|(_, v)| v).filter(|&v| {
                rs.chunks[0]
                    .vectors
                    .get(v)
                    .is_some_and(|s| s.ty == col.ty && s.len() == n)
            }),
            _ => None,
        })
        .collect();
    for ((col, e), plain) in out.columns.iter_mut().zip(outputs).zip(&plain) {
        if plain.is_some() {
            continue;
        }
        let mut ev = Evaluator::new(e)?;
        let mut v = ValueVector::new(e.ty.clone(), 0);
        match ev.evaluate(&ectx, &mut v)? {
            Evaluated::Flat => (0..n).for_each(|_| col.push_value(&v.get_value(0))),
            // Every row, in order, of the column's type: the vector is the
            // column (no value per row).
            Evaluated::Unflat(_) if v.ty == col.ty && v.len() == n => *col = v,
            Evaluated::Unflat(_) => (0..n).for_each(|p| col.push_value(&v.get_value(p))),
        }
    }
    let mut inputs = rs
        .chunks
        .into_iter()
        .next()
        .map(|c| c.vectors)
        .unwrap_or_default();
    for (i, col) in out.columns.iter_mut().enumerate() {
        let Some(v) = plain[i] else {
            continue;
        };
        let used_later = plain[i + 1..].contains(&Some(v));
        *col = match used_later {
            true => inputs[v].clone(),
            false => std::mem::replace(&mut inputs[v], ValueVector::new(col.ty.clone(), 0)),
        };
    }
    out.num_rows = n;
    Ok(out)
}

/// DISTINCT (on the visible columns), ORDER BY (merging the sorted runs),
/// then SKIP and LIMIT over the collected rows; drops the sort-key columns.
fn finish_rows(
    chunks: Vec<Chunk>,
    plan: &PartPlan,
    input: Option<&Chunk>,
    order: RowOrder,
) -> Vec<Chunk> {
    let skipped = match order {
        RowOrder::Sorted { skipped } => skipped as u64,
        _ => 0,
    };
    let skip = plan.skip.unwrap_or(0).saturating_sub(skipped);
    let limit = plan.limit.unwrap_or(u64::MAX);
    let ordered = !plan.descending.is_empty();
    // Decided before DISTINCT, which puts the rows in one chunk.
    let needs_sort = ordered
        && match order {
            RowOrder::Unsorted => true,
            RowOrder::Runs => chunks.iter().filter(|c| c.num_rows > 0).count() > 1,
            RowOrder::Sorted { .. } => false,
        };
    if !plan.distinct && !ordered && skip == 0 && limit == u64::MAX {
        return chunks.into_iter().filter(|c| c.num_rows > 0).collect();
    }
    let mut chunks = chunks;
    if plan.distinct {
        let mut seen: HashSet<GroupKey> = HashSet::new();
        let mut out = Chunk::new(&plan.types, 0);
        for c in &chunks {
            for pos in 0..c.num_rows {
                let row = c.row(pos);
                if !seen.insert(GroupKey(row[..plan.num_visible].to_vec())) {
                    continue;
                }
                for (dst, v) in out.columns.iter_mut().zip(&row) {
                    dst.push_value(v);
                }
                out.num_rows += 1;
            }
        }
        chunks = vec![out];
    }
    if let (Some(map), Some(input)) = (&plan.optional, input) {
        // Its one sort key is the row number, which the padding groups by.
        return vec![pad_unmatched(chunks, input, map, plan)];
    }
    if needs_sort {
        // The runs are sorted; a stable sort of their concatenation merges
        // them.
        let all = concat(chunks, &plan.types);
        chunks = vec![sort_chunk(
            &all,
            plan.num_visible,
            &plan.descending,
            rows_to_keep(plan),
        )];
    }
    // The rows SKIP and LIMIT keep, a typed copy of each chunk's share.
    let (from, to) = (skip, skip.saturating_add(limit));
    let mut out = Vec::new();
    let mut index = 0u64;
    for mut c in chunks {
        let n = c.num_rows as u64;
        let (lo, hi) = (
            from.saturating_sub(index).min(n),
            to.saturating_sub(index).min(n),
        );
        index += n;
        if lo < hi {
            if hi - lo < n {
                c = c.rows_in(lo as usize..hi as usize);
            }
            c.columns.truncate(plan.num_visible);
            out.push(c);
        }
    }
    out
}

/// OPTIONAL MATCH: the matches grouped by input row number (the column
/// after the visible ones; each worker's rows of one input row keep their
/// order), with one NULL-padded row for each input row that has none. The
/// numbers are `0..input rows`, so a counting sort groups them, and each
/// column is one typed gather across the collected chunks plus the few
/// padded values.
fn pad_unmatched(
    chunks: Vec<Chunk>,
    input: &Chunk,
    map: &[Option<usize>],
    plan: &PartPlan,
) -> Chunk {
    let visible = &plan.types[..plan.num_visible];
    let chunks: Vec<Chunk> = chunks.into_iter().filter(|c| c.num_rows > 0).collect();
    let n_in = input.num_rows;
    // Each match's (chunk, position) and input row.
    let mut matches: Vec<((u32, u32), usize)> = Vec::new();
    for (c, chunk) in chunks.iter().enumerate() {
        let Some(col) = chunk.columns.get(plan.num_visible) else {
            continue;
        };
        let mut add = |p: usize, r: Option<i64>| {
            if let Some(r) = r
                .and_then(|r| usize::try_from(r).ok())
                .filter(|&r| r < n_in)
            {
                matches.push(((c as u32, p as u32), r));
            }
        };
        // The numbers are INT64 (typed); anything else value by value.
        match &col.data {
            kith_common::VectorData::I64(v) => {
                (0..chunk.num_rows).for_each(|p| add(p, Some(v[p])));
            }
            _ => (0..chunk.num_rows).for_each(|p| add(p, col.get_value(p).as_i64())),
        }
    }
    // start[r]..start[r + 1]: the matches of input row r in `order`.
    let mut start = vec![0usize; n_in + 1];
    for &(_, r) in &matches {
        start[r + 1] += 1;
    }
    for r in 0..n_in {
        start[r + 1] += start[r];
    }
    let mut cursor = start.clone();
    let mut order = vec![(0u32, 0u32); matches.len()];
    for &(at, r) in &matches {
        order[cursor[r]] = at;
        cursor[r] += 1;
    }
    drop(matches);
    let mut idx: Vec<(u32, u32)> = Vec::with_capacity(order.len() + n_in);
    let mut pads: Vec<(usize, usize)> = Vec::new();
    for r in 0..n_in {
        if start[r] == start[r + 1] {
            pads.push((idx.len(), r));
            // Any position: the padded value overwrites it.
            idx.push((0, 0));
        } else {
            idx.extend_from_slice(&order[start[r]..start[r + 1]]);
        }
    }
    let mut out = Chunk::new(visible, 0);
    for (i, col) in out.columns.iter_mut().enumerate() {
        let sources: Vec<&ValueVector> = chunks.iter().filter_map(|c| c.columns.get(i)).collect();
        *col = if sources.len() == chunks.len() && !sources.is_empty() {
            ValueVector::gather_across(&visible[i], &sources, &idx)
        } else {
            ValueVector::new(visible[i].clone(), idx.len())
        };
        for &(p, r) in &pads {
            match map.get(i).copied().flatten() {
                Some(j) => col.set_value(p, &input.columns[j].get_value(r)),
                None => col.set_null(p, true),
            }
        }
    }
    out.num_rows = idx.len();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items dropped on the workers: some by a pool worker, not all by the
    /// calling thread, and every one of them.
    #[test]
    fn drop_on_workers_drops_every_item_and_not_all_on_the_caller() {
        struct Noted(Arc<Mutex<Vec<std::thread::ThreadId>>>);
        impl Drop for Noted {
            fn drop(&mut self) {
                // Slow enough that the caller cannot take every item.
                std::thread::sleep(std::time::Duration::from_millis(2));
                self.0.lock().push(std::thread::current().id());
            }
        }
        let sched = Scheduler::new(2);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let items: Vec<Noted> = (0..32).map(|_| Noted(Arc::clone(&seen))).collect();
        drop_on_workers(items, &sched, 2);
        let seen = seen.lock();
        assert_eq!(seen.len(), 32);
        let me = std::thread::current().id();
        assert!(
            seen.iter().any(|t| *t != me),
            "every item dropped by the caller"
        );
    }
}
