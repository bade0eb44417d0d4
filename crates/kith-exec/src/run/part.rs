//! Running one query part: its pipelines, its sink (rows or groups), its
//! UNWINDs, and the grouped output.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use kith_common::{Chunk, Error, LogicalType, Result, Value, ValueVector};
use kith_planner::bound::BoundAggregate;
use kith_planner::expr::{BoundExpr, BoundExprKind, SlotId};
use kith_planner::plan::{DependentKey, KeyCounts, PartPlan, PropertyRead, Sink, Source, SubPlan};
use kith_sched::Scheduler;

use crate::expression::cast::cast_value;
use crate::expression::Evaluator;
use crate::operator::collect::Collect;
use crate::operator::hash_aggregate::{AggregateDef, HashAggregate, PARTITION_MIN_GROUPS};
use crate::operator::join_rows::PartRows;
use crate::operator::offset_counts::OffsetTable;
use crate::operator::order_by::{sort_chunk, OrderBy};
use crate::operator::scan_properties::read_by_id;
use crate::operator::{GlobalSink, QueryContext};
use crate::result_set::SlotLayout;
use crate::subquery::DENSE_OFFSETS;

use crate::physical::*;
use crate::run::*;

/// One chunk holding the rows of `chunks` in order.
pub(crate) fn concat(chunks: Vec<Chunk>, types: &[LogicalType]) -> Chunk {
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
pub(crate) fn apply_unwinds(mut rows: Chunk, part: &PartPlan, ctx: &QueryContext) -> Result<Chunk> {
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

/// The value of a SKIP / LIMIT expression that reads no variable.
pub(crate) fn constant_count(e: &BoundExpr, ctx: &QueryContext, what: &str) -> Result<u64> {
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
pub(crate) fn execute_part(
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
    let resolved = resolve_counts(plan, ctx)?;
    let plan = resolved.as_ref().unwrap_or(plan);
    let run = PartRun {
        plan,
        ctx,
        sched,
        threads,
        driver,
        opts: part_build_options(plan, rows, threads, counted.0, driver.is_some()),
    };
    let ordered = !plan.descending.is_empty();
    // The rows, and whether each chunk of them is sorted by the part's
    // ORDER BY.
    let (rows, sorted_runs) = match &plan.sink {
        // An OPTIONAL MATCH's one sort key is the input row number, which
        // `pad_unmatched` groups by without sorting.
        Sink::Collect { outputs } if ordered && plan.optional.is_none() => {
            (run.collect_sorted(outputs)?, true)
        }
        Sink::Collect { outputs } => (run.collect(outputs, counted.1)?, false),
        Sink::Aggregate {
            keys,
            aggregates,
            dependent,
        } => match run.aggregate(keys, aggregates, dependent, offsets)? {
            Some(rows) => rows,
            // The counts went to `offsets` as arrays: no rows.
            None => return Ok(Vec::new()),
        },
    };
    let (rows, order) = if sorted_runs {
        merge_sorted_runs(rows, plan, ctx, sched, threads)?
    } else {
        (rows, RowOrder::Unsorted)
    };
    Ok(finish_rows(rows, plan, padded, order))
}

/// `plan` with its SKIP / LIMIT expressions over no variable evaluated
/// into counts; None when it has none.
fn resolve_counts(plan: &PartPlan, ctx: &QueryContext) -> Result<Option<PartPlan>> {
    if plan.skip_expr.is_none() && plan.limit_expr.is_none() {
        return Ok(None);
    }
    let mut p = plan.clone();
    if let Some(e) = &plan.skip_expr {
        p.skip = Some(constant_count(e, ctx, "SKIP")?);
    }
    if let Some(e) = &plan.limit_expr {
        p.limit = Some(constant_count(e, ctx, "LIMIT")?);
    }
    Ok(Some(p))
}

/// How `plan`'s pipelines are resolved, running on `threads` workers:
/// `counted_input` (the input rows end with a count column), `pipelined`
/// (a recursive join feeds the part's one pipeline, see `pipelines_join`).
/// EXPLAIN resolves them with the same options (`run/explain.rs`).
pub(crate) fn part_build_options(
    plan: &PartPlan,
    rows: Option<PartRows>,
    threads: usize,
    counted_input: bool,
    pipelined: bool,
) -> BuildOptions {
    BuildOptions {
        rows,
        threads,
        counted: plan.recursive.is_some() || counted_input,
        sink_reads: sink_reads(plan),
        // Each scanned node's tuples may then be in every worker's table,
        // which a disjoint finish cannot allow.
        share_hubs: matches!(plan.sink, Sink::Aggregate { .. })
            && threads > 1
            && !pipelined
            && !disjoint_groups(plan, threads, pipelined),
    }
}

/// Whether each worker's aggregate table of `plan` holds groups no other
/// table holds (see [`keyed_by_scanned_node`]), so that the tables finish
/// as they are.
fn disjoint_groups(plan: &PartPlan, threads: usize, pipelined: bool) -> bool {
    match &plan.sink {
        Sink::Aggregate { keys, .. } => {
            threads > 1 && !pipelined && keyed_by_scanned_node(plan, keys)
        }
        Sink::Collect { .. } => false,
    }
}

/// The slots an aggregating sink reads (its keys and arguments): a last
/// extend whose tuples it does not read may only count. None for a
/// collecting sink.
fn sink_reads(plan: &PartPlan) -> Option<HashSet<SlotId>> {
    match &plan.sink {
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
    }
}

/// One run of a part's pipelines into its sink: what the sink kinds'
/// phases share.
struct PartRun<'a> {
    plan: &'a PartPlan,
    ctx: &'a Arc<QueryContext>,
    sched: &'a Scheduler,
    threads: usize,
    driver: Option<Driver<'a>>,
    /// How its pipelines are resolved (see [`part_build_options`]).
    opts: BuildOptions,
}

/// How the workers' aggregate tables split: into `1 << log2_parts`
/// partitions, or (`disjoint`) each worker's table one partition.
#[derive(Clone, Copy)]
struct Partitioning {
    log2_parts: u32,
    disjoint: bool,
}

impl PartRun<'_> {
    /// Pipeline `p`'s shape: its build sides run first (`run/deps.rs`),
    /// then it is resolved with their results, right before it runs.
    fn shape(&self, p: &SubPlan) -> Result<PipelineShape> {
        let plan = PipelinePlan::of(p);
        resolve_pipeline(&plan, &self.opts, self.ctx, self.sched, self.threads)
    }

    /// Every pipeline's shape, in order.
    fn shapes(&self) -> Result<Vec<PipelineShape>> {
        self.plan
            .pipelines
            .iter()
            .map(|p| self.shape(p))
            .collect::<Result<Vec<_>>>()
    }

    /// The rows of a part with an ORDER BY: each worker's rows sorted
    /// (top-k where it can), as runs for the caller to merge.
    fn collect_sorted(&self, outputs: &[BoundExpr]) -> Result<Vec<Chunk>> {
        let plan = self.plan;
        // Top-k per worker is only exact without DISTINCT.
        let keep = rows_to_keep(plan).filter(|_| !plan.distinct);
        let shapes = self.shapes()?;
        let outputs = Arc::new(outputs.to_vec());
        let types = plan.types.clone();
        let first_key = plan.num_visible;
        let descending = Arc::new(plan.descending.clone());
        let sink_ctx = Arc::clone(self.ctx);
        // Runs in pipeline order whichever worker finishes first (ties
        // keep that order in the merge).
        gather_pipelines(
            self.sched,
            self.threads,
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
            self.driver,
        )
    }

    /// The rows of a part without an ORDER BY (`counts_out`: with a count
    /// column, see [`hands_on_counts`]).
    fn collect(&self, outputs: &[BoundExpr], counts_out: bool) -> Result<Vec<Chunk>> {
        let plan = self.plan;
        // Without DISTINCT, enough rows anywhere satisfies SKIP + LIMIT.
        let wanted = match (plan.limit, plan.distinct) {
            (Some(l), false) => Some(plan.skip.unwrap_or(0).saturating_add(l)),
            _ => None,
        };
        if wanted.is_none() {
            // Every row of every pipeline: all of them at once.
            let shapes = self.shapes()?;
            return collect_all(
                shapes,
                outputs.to_vec(),
                &plan.types,
                self.ctx,
                self.sched,
                self.threads,
                None,
                self.driver,
                counts_out,
            );
        }
        // One pipeline after another, until SKIP + LIMIT rows are in.
        let mut chunks = Vec::new();
        let mut have = 0u64;
        for p in &plan.pipelines {
            let rest = wanted.map(|w| w.saturating_sub(have));
            if rest == Some(0) {
                break;
            }
            let got = collect_all(
                vec![self.shape(p)?],
                outputs.to_vec(),
                &plan.types,
                self.ctx,
                self.sched,
                self.threads,
                rest,
                self.driver,
                false,
            )?;
            have += got.iter().map(|c| c.num_rows as u64).sum::<u64>();
            chunks.extend(got);
        }
        Ok(chunks)
    }

    /// The rows of an aggregating part, and whether each chunk is a run
    /// sorted by its ORDER BY: the workers' tables merged in pipeline order
    /// or split by partition and finished per partition. None when the
    /// counts went to `offsets` as arrays instead.
    fn aggregate(
        &self,
        keys: &[(BoundExpr, SlotId)],
        aggregates: &[BoundAggregate],
        dependent: &[DependentKey],
        offsets: Option<&mut Option<OffsetTable>>,
    ) -> Result<Option<(Vec<Chunk>, bool)>> {
        let (plan, threads, driver) = (self.plan, self.threads, self.driver);
        let presence = plan.key_counts == Some(KeyCounts::Presence);
        let make_sink = aggregate_sinks(self.ctx, keys, aggregates, presence)?;
        // Hubs are shared where the groups are not disjoint (see
        // `part_build_options`).
        let shapes = self.shapes()?;
        // A few partitions per thread, so that uneven ones even out.
        let log2_parts = match threads {
            1 => 0,
            t => (4 * t).next_power_of_two().min(64).trailing_zeros(),
        };
        let disjoint = disjoint_groups(plan, threads, driver.is_some());
        let split = Partitioning {
            log2_parts,
            disjoint,
        };
        let (merged, pieces) = self.run_aggregates(shapes, Arc::clone(&make_sink), split)?;
        let output = Arc::new(GroupOutput {
            keys: keys.to_vec(),
            aggregates: aggregates.to_vec(),
            dependent: dependent.to_vec(),
            outputs: plan.final_outputs.clone(),
            types: plan.types.clone(),
        });
        if pieces.is_empty() {
            let rows = self.finish_merged(merged, &*make_sink, &output, offsets)?;
            return Ok(rows.map(|rows| (rows, false)));
        }
        let rows = self.finish_partitions(merged, pieces, make_sink, output, split)?;
        Ok(Some(rows))
    }

    /// Runs the pipelines into a table per worker: each merged into its
    /// pipeline's table, or split by partition (a disjoint one whole, or
    /// one with many groups, split by its worker).
    fn run_aggregates<F>(
        &self,
        shapes: Vec<PipelineShape>,
        make_sink: Arc<F>,
        split: Partitioning,
    ) -> Result<(Vec<Option<HashAggregate>>, Vec<SplitAggregate>)>
    where
        F: Fn() -> Result<HashAggregate> + Send + Sync + 'static,
    {
        let sink = Arc::new(AggregateSinks {
            make: make_sink,
            split,
            merged: Mutex::new((0..shapes.len()).map(|_| None).collect()),
            pieces: Mutex::default(),
        });
        run_pipelines(self.sched, self.threads, shapes, &sink, self.driver)?;
        let merged = std::mem::take(&mut *sink.merged.lock());
        let pieces = std::mem::take(&mut *sink.pieces.lock());
        Ok((merged, pieces))
    }

    /// The rows of the pipelines' tables merged into one (the empty state
    /// without a pipeline); None when its counts went to `offsets` instead.
    fn finish_merged(
        &self,
        merged: Vec<Option<HashAggregate>>,
        make_sink: &impl Fn() -> Result<HashAggregate>,
        output: &GroupOutput,
        offsets: Option<&mut Option<OffsetTable>>,
    ) -> Result<Option<Vec<Chunk>>> {
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
        if let Some(out) = offsets.filter(|_| hands_off_offsets(self.plan)) {
            if let Some(t) = agg.take_offset_table(DENSE_OFFSETS) {
                *out = Some(t);
                return Ok(None);
            }
        }
        Ok(Some(vec![output.finish(agg, self.ctx)?]))
    }

    /// The rows of tables split by partition: the small tables split too,
    /// then each partition merges its pieces in pipeline order and finishes
    /// on its own (sorted, top-k with a LIMIT, under an ORDER BY); with
    /// whether the rows are such sorted runs.
    fn finish_partitions<F>(
        &self,
        merged: Vec<Option<HashAggregate>>,
        mut pieces: Vec<SplitAggregate>,
        make_sink: Arc<F>,
        output: Arc<GroupOutput>,
        split: Partitioning,
    ) -> Result<(Vec<Chunk>, bool)>
    where
        F: Fn() -> Result<HashAggregate> + Send + Sync + 'static,
    {
        let (plan, ctx) = (self.plan, self.ctx);
        let Partitioning {
            log2_parts,
            disjoint,
        } = split;
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
        let ordered = !plan.descending.is_empty();
        let presort = (ordered && !plan.distinct && plan.optional.is_none()).then(|| {
            (
                plan.num_visible,
                plan.descending.clone(),
                rows_to_keep(plan),
            )
        });
        let sorted_runs = presort.is_some();
        let rows = self
            .sched
            .parallel_map(self.threads, &ctx.cancel, n, move |p| {
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
            })?;
        Ok((rows, sorted_runs))
    }
}

/// What makes an aggregating part's empty tables (on any worker): one
/// evaluator per key, the keys' slots, the aggregates; counting only the
/// keys' presence when `presence`.
fn aggregate_sinks(
    ctx: &Arc<QueryContext>,
    keys: &[(BoundExpr, SlotId)],
    aggregates: &[BoundAggregate],
    presence: bool,
) -> Result<Arc<impl Fn() -> Result<HashAggregate> + Send + Sync + 'static>> {
    let defs = Arc::new(
        aggregates
            .iter()
            .map(AggregateDef::new)
            .collect::<Result<Vec<_>>>()?,
    );
    let key_exprs = Arc::new(keys.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>());
    let sink_ctx = Arc::clone(ctx);
    Ok(Arc::new(move || {
        let evs = key_exprs
            .iter()
            .map(Evaluator::new)
            .collect::<Result<Vec<_>>>()?;
        let slots = key_exprs.iter().map(key_slot).collect();
        let mut agg = HashAggregate::new(Arc::clone(&sink_ctx), evs, slots, Arc::clone(&defs))?;
        if presence {
            agg.count_presence();
        }
        Ok(agg)
    }))
}

/// The slot a group key reads as it is: a slot, or `id()` of an id slot
/// (a subquery's key), whose values are that slot's ids.
pub(crate) fn key_slot(e: &BoundExpr) -> Option<SlotId> {
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
pub(crate) fn hands_off_offsets(plan: &PartPlan) -> bool {
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
pub(crate) fn keyed_by_scanned_node(plan: &PartPlan, keys: &[(BoundExpr, SlotId)]) -> bool {
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

/// The global sink of an aggregating part: each worker's finished table
/// merged into its pipeline's (in pipeline order, so `collect()` lists come
/// out in that order whichever worker finishes first), or, for a worker with
/// many groups, split by partition (a disjoint one whole).
struct AggregateSinks<F> {
    make: Arc<F>,
    split: Partitioning,
    merged: Mutex<Vec<Option<HashAggregate>>>,
    /// Tables split by partition, with their pipeline's number.
    pieces: Mutex<Vec<SplitAggregate>>,
}

impl<F> GlobalSink for AggregateSinks<F>
where
    F: Fn() -> Result<HashAggregate> + Send + Sync + 'static,
{
    type Local = HashAggregate;

    fn local(&self) -> Result<HashAggregate> {
        (self.make)()
    }

    fn combine(&self, i: usize, sink: HashAggregate) -> Result<()> {
        let Partitioning {
            log2_parts,
            disjoint,
        } = self.split;
        if disjoint {
            // Its groups are in no other table: one partition.
            self.pieces.lock().push((i, vec![sink]));
            return Ok(());
        }
        // Counts by offset merge by adding arrays instead.
        if log2_parts > 0 && sink.num_groups() >= PARTITION_MIN_GROUPS && !sink.counts_by_offset() {
            // Split by this worker, outside the lock.
            let split = sink.split(log2_parts, &*self.make)?;
            self.pieces.lock().push((i, split));
            return Ok(());
        }
        let mut slots = self.merged.lock();
        match slots[i].as_mut() {
            Some(m) => m.merge(sink)?,
            None => slots[i] = Some(sink),
        }
        Ok(())
    }
}

/// One worker's aggregate split by partition, with its pipeline's number.
pub(crate) type SplitAggregate = (usize, Vec<HashAggregate>);

/// What an aggregating part outputs from its groups.
pub(crate) struct GroupOutput {
    pub(crate) keys: Vec<(BoundExpr, SlotId)>,
    pub(crate) aggregates: Vec<BoundAggregate>,
    pub(crate) dependent: Vec<DependentKey>,
    pub(crate) outputs: Vec<BoundExpr>,
    pub(crate) types: Vec<LogicalType>,
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
