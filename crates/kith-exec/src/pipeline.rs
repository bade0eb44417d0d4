//! Turns a [`QueryPlan`] into per-worker operator chains over a shared slot
//! layout, runs them on the scheduler, and finishes the result (aggregate
//! output, DISTINCT, SKIP, LIMIT).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::Mutex;

use kith_common::constants::{MORSEL_SIZE, VECTOR_CAPACITY};
use kith_common::{Chunk, Error, LogicalType, Result, TableId, ValueVector};
use kith_planner::expr::SlotId;
use kith_planner::plan::{ExtendDirection, PropertyRead, QueryPlan, Sink, Source, Step};
use kith_sched::{MorselDispenser, Scheduler, Task, WorkerContext};
use kith_storage::{NodeTableData, RelTableData, TableData};

use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::operator::collect::Collect;
use crate::operator::extend::Extend;
use crate::operator::filter::Filter;
use crate::operator::hash_aggregate::{AggregateDef, GroupKey, HashAggregate};
use crate::operator::scan_node::ScanNodes;
use crate::operator::scan_properties::ScanProperties;
use crate::operator::single::SingleTuple;
use crate::operator::{LocalSink, Operator, QueryContext};
use crate::result_set::{ChunkState, DataChunk, ResultSet, SlotLayout};

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

fn columns_of(
    reads: &[PropertyRead],
    column_of: impl Fn(kith_catalog::PropertyId) -> Option<usize>,
) -> Result<Vec<usize>> {
    reads
        .iter()
        .map(|r| {
            column_of(r.property).ok_or_else(|| Error::internal("property has no storage column"))
        })
        .collect()
}

/// One step of the chain, resolved against storage and the layout.
enum Built {
    Filter(kith_planner::expr::BoundExpr),
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
    },
    ScanProperties {
        data: Arc<NodeTableData>,
        node: (usize, usize),
        columns: Vec<(usize, usize)>,
    },
}

enum BuiltSource {
    Single(Arc<AtomicBool>),
    Scan {
        table: TableId,
        data: Arc<NodeTableData>,
        morsels: Arc<MorselDispenser>,
        id: (usize, usize),
        columns: Vec<(usize, (usize, usize))>,
    },
}

/// Everything workers need to instantiate their chains.
struct PipelineShape {
    ctx: Arc<QueryContext>,
    layout: Arc<SlotLayout>,
    builder: LayoutBuilder,
    source: BuiltSource,
    steps: Vec<Built>,
}

impl PipelineShape {
    fn build(plan: &QueryPlan, ctx: &Arc<QueryContext>) -> Result<PipelineShape> {
        let mut b = LayoutBuilder::default();
        let first = b.add_chunk();
        let source = match &plan.source {
            Source::Single => BuiltSource::Single(Arc::new(AtomicBool::new(false))),
            Source::ScanNodes {
                table,
                id_slot,
                properties,
            } => {
                let data = node_data(ctx, *table)?;
                let id = (first, b.add(first, *id_slot, LogicalType::InternalId));
                let cols = columns_of(properties, |p| data.column_of(p))?;
                let columns = cols
                    .into_iter()
                    .zip(properties)
                    .map(|(c, r)| (c, (first, b.add(first, r.slot, r.ty.clone()))))
                    .collect();
                let morsels = Arc::new(MorselDispenser::new(data.num_rows, MORSEL_SIZE));
                BuiltSource::Scan {
                    table: *table,
                    data,
                    morsels,
                    id,
                    columns,
                }
            }
        };
        let mut steps = Vec::new();
        for step in &plan.steps {
            steps.push(match step {
                Step::Filter(e) => Built::Filter(e.clone()),
                Step::Extend {
                    rel_table,
                    direction,
                    from,
                    to,
                    to_table,
                    rel_id,
                    properties,
                } => {
                    let data = rel_data(ctx, *rel_table)?;
                    let from = b
                        .layout
                        .get(*from)
                        .ok_or_else(|| Error::internal("extend from an unplaced slot"))?;
                    let input_chunk = b.chunks.len() - 1;
                    let out = b.add_chunk();
                    let to = to.map(|s| (b.add(out, s, LogicalType::InternalId), *to_table));
                    let rel_id = rel_id.map(|s| b.add(out, s, LogicalType::InternalId));
                    let cols = columns_of(properties, |p| data.column_of(p))?;
                    let properties = cols
                        .into_iter()
                        .zip(properties)
                        .map(|(c, r)| (c, b.add(out, r.slot, r.ty.clone())))
                        .collect();
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
                    }
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
                    let cols = columns_of(properties, |p| data.column_of(p))?;
                    let columns = cols
                        .into_iter()
                        .zip(properties)
                        .map(|(c, r)| (c, b.add(node.0, r.slot, r.ty.clone())))
                        .collect();
                    Built::ScanProperties {
                        data,
                        node,
                        columns,
                    }
                }
            });
        }
        Ok(PipelineShape {
            ctx: Arc::clone(ctx),
            layout: Arc::new(b.layout.clone()),
            builder: b,
            source,
            steps,
        })
    }

    /// A fresh operator chain and result set for one worker.
    fn instantiate(&self) -> Result<(Box<dyn Operator>, ResultSet)> {
        let ctx = &self.ctx;
        let mut op: Box<dyn Operator> = match &self.source {
            BuiltSource::Single(taken) => Box::new(SingleTuple {
                taken: Arc::clone(taken),
            }),
            BuiltSource::Scan {
                table,
                data,
                morsels,
                id,
                columns,
            } => Box::new(ScanNodes::new(
                Arc::clone(ctx),
                *table,
                Arc::clone(data),
                Arc::clone(morsels),
                *id,
                columns.clone(),
            )),
        };
        for step in &self.steps {
            op = match step {
                Built::Filter(e) => Box::new(Filter {
                    child: op,
                    predicate: Evaluator::new(e)?,
                    layout: Arc::clone(&self.layout),
                    ctx: Arc::clone(ctx),
                }),
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
                } => Box::new(Extend::new(
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
                )),
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
            };
        }
        Ok((op, self.builder.result_set()))
    }
}

/// Runs one pipeline: every worker pulls batches through its own chain into
/// its own sink; finished sinks are handed to `merge`.
struct PipelineTask<S, F, M> {
    shape: PipelineShape,
    make_sink: F,
    merge: M,
    _sink: std::marker::PhantomData<fn() -> S>,
}

impl<S, F, M> Task for PipelineTask<S, F, M>
where
    S: LocalSink + 'static,
    F: Fn() -> Result<S> + Send + Sync,
    M: Fn(S) -> Result<()> + Send + Sync,
{
    fn run_worker(&self, ctx: &WorkerContext) -> Result<()> {
        let (mut op, mut rs) = self.shape.instantiate()?;
        let mut sink = (self.make_sink)()?;
        while op.next(&mut rs)? {
            ctx.cancel.check()?;
            sink.consume(&rs, &self.shape.layout)?;
        }
        (self.merge)(sink)
    }
}

fn run_pipeline<S, F, M>(
    sched: &Scheduler,
    threads: usize,
    shape: PipelineShape,
    make_sink: F,
    merge: M,
) -> Result<()>
where
    S: LocalSink + 'static,
    F: Fn() -> Result<S> + Send + Sync + 'static,
    M: Fn(S) -> Result<()> + Send + Sync + 'static,
{
    let cancel = shape.ctx.cancel.clone();
    let task = Arc::new(PipelineTask {
        shape,
        make_sink,
        merge,
        _sink: std::marker::PhantomData,
    });
    sched.run(task, threads, &cancel)
}

/// Executes a query plan and returns its rows.
pub fn execute_query(
    plan: &QueryPlan,
    ctx: Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
) -> Result<Vec<Chunk>> {
    let shape = PipelineShape::build(plan, &ctx)?;
    let rows: Vec<Chunk> = match &plan.sink {
        Sink::Collect { outputs } => {
            // Without DISTINCT, enough rows anywhere satisfies SKIP + LIMIT.
            let wanted = match (plan.limit, plan.distinct) {
                (Some(l), false) => Some((
                    plan.skip.unwrap_or(0).saturating_add(l),
                    Arc::new(AtomicU64::new(0)),
                )),
                _ => None,
            };
            let collected: Arc<Mutex<Vec<Chunk>>> = Arc::new(Mutex::new(Vec::new()));
            let outputs = Arc::new(outputs.clone());
            let types = plan.types.clone();
            let sink_ctx = Arc::clone(&ctx);
            let out = Arc::clone(&collected);
            run_pipeline(
                sched,
                threads,
                shape,
                move || {
                    let evs = outputs
                        .iter()
                        .map(Evaluator::new)
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Collect::new(
                        Arc::clone(&sink_ctx),
                        evs,
                        &types,
                        wanted.clone(),
                    ))
                },
                move |sink: Collect| {
                    out.lock().push(sink.rows);
                    Ok(())
                },
            )?;
            let chunks = std::mem::take(&mut *collected.lock());
            chunks
        }
        Sink::Aggregate { keys, aggregates } => {
            let defs = Arc::new(
                aggregates
                    .iter()
                    .map(AggregateDef::new)
                    .collect::<Result<Vec<_>>>()?,
            );
            let key_exprs = Arc::new(keys.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>());
            let merged: Arc<Mutex<Option<HashAggregate>>> = Arc::new(Mutex::new(None));
            let sink_ctx = Arc::clone(&ctx);
            let sink_defs = Arc::clone(&defs);
            let out = Arc::clone(&merged);
            run_pipeline(
                sched,
                threads,
                shape,
                move || {
                    let evs = key_exprs
                        .iter()
                        .map(Evaluator::new)
                        .collect::<Result<Vec<_>>>()?;
                    HashAggregate::new(Arc::clone(&sink_ctx), evs, Arc::clone(&sink_defs))
                },
                move |sink: HashAggregate| {
                    let mut slot = out.lock();
                    match slot.as_mut() {
                        Some(m) => m.merge(sink)?,
                        None => *slot = Some(sink),
                    }
                    Ok(())
                },
            )?;
            let agg = merged
                .lock()
                .take()
                .ok_or_else(|| Error::internal("aggregate produced no state"))?;
            let key_types: Vec<LogicalType> = keys.iter().map(|(e, _)| e.ty.clone()).collect();
            let agg_types: Vec<LogicalType> = aggregates.iter().map(|a| a.ty.clone()).collect();
            let groups = agg.finish(&key_types, &agg_types);
            // Evaluate the outputs over (keys, aggregates).
            let mut layout = SlotLayout::default();
            for (i, (_, slot)) in keys.iter().enumerate() {
                layout.positions.insert(*slot, (0, i));
            }
            for (i, a) in aggregates.iter().enumerate() {
                layout.positions.insert(a.slot, (0, keys.len() + i));
            }
            vec![project_rows(
                groups,
                &layout,
                &plan.final_outputs,
                &plan.types,
                &ctx,
            )?]
        }
    };
    Ok(finish_rows(rows, plan))
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
            },
        }],
        multiplicity: 1,
    };
    let ectx = EvalContext {
        rs: &rs,
        layout,
        params: &ctx.params,
    };
    let mut out = Chunk::new(types, 0);
    for (col, e) in out.columns.iter_mut().zip(outputs) {
        let mut ev = Evaluator::new(e)?;
        let mut v = ValueVector::new(e.ty.clone(), 0);
        match ev.evaluate(&ectx, &mut v)? {
            Evaluated::Flat => (0..n).for_each(|_| col.push_value(&v.get_value(0))),
            Evaluated::Unflat(_) => (0..n).for_each(|p| col.push_value(&v.get_value(p))),
        }
    }
    out.num_rows = n;
    Ok(out)
}

/// DISTINCT, then SKIP and LIMIT, over the collected rows.
fn finish_rows(chunks: Vec<Chunk>, plan: &QueryPlan) -> Vec<Chunk> {
    let skip = plan.skip.unwrap_or(0);
    let limit = plan.limit.unwrap_or(u64::MAX);
    if !plan.distinct && skip == 0 && limit == u64::MAX {
        return chunks.into_iter().filter(|c| c.num_rows > 0).collect();
    }
    let mut seen: HashSet<GroupKey> = HashSet::new();
    let mut out = Chunk::new(&plan.types, 0);
    let mut index = 0u64;
    'outer: for c in &chunks {
        for pos in 0..c.num_rows {
            if plan.distinct && !seen.insert(GroupKey(c.row(pos))) {
                continue;
            }
            if index >= skip.saturating_add(limit) {
                break 'outer;
            }
            if index >= skip {
                for (dst, src) in out.columns.iter_mut().zip(&c.columns) {
                    dst.push_value(&src.get_value(pos));
                }
                out.num_rows += 1;
            }
            index += 1;
        }
    }
    vec![out]
}
