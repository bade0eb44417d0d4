//! Running pipelines on the scheduler: the task each worker runs, pushed
//! pipelines fed by a join's rows, and gathering the workers' sinks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use kith_common::{Chunk, Error, LogicalType, Result};
use kith_planner::expr::BoundExpr;
use kith_sched::{Scheduler, Task, WorkerContext};

use crate::expression::Evaluator;
use crate::operator::collect::Collect;
use crate::operator::join_rows::{JoinRows, JoinRowsConsumer};
use crate::operator::scan_counted_rows::Feed;
use crate::operator::{GlobalSink, LocalSink, Operator, QueryContext};
use crate::result_set::ResultSet;

use crate::physical::*;

/// Runs pipelines that feed one sink: every worker pulls batches through
/// its own chain into its own local sink per pipeline; finished local
/// sinks are combined into the global sink with their pipeline's index. The pipelines of a union (one
/// per table choice of a pattern) run together: a worker starts at the
/// pipeline its index points to and goes round the others, sharing each
/// one's morsels with whoever else is there, so pipelines with one-tuple
/// sources (a key lookup per choice of an undirected pattern) run side by
/// side instead of one after another on the calling thread.
pub(crate) struct PipelineTask<G> {
    pub(crate) shapes: Vec<PipelineShape>,
    pub(crate) sink: Arc<G>,
    /// The run over shared hubs ([`share_hubs`]): only the pipelines that
    /// deferred some run again (the others would be instantiated only to
    /// find their morsels, tuples and claims all taken).
    pub(crate) hubs_run: AtomicBool,
}

impl<G: GlobalSink> Task for PipelineTask<G> {
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
            let mut sink = self.sink.local()?;
            while op.next(&mut rs)? {
                sink.consume(&rs, &shape.layout)?;
            }
            self.sink.combine(i, sink)?;
        }
        Ok(())
    }
}

/// Runs a pipelined recursive join: hands the consumer of its rows to the
/// search, which runs to completion (see [`PushedPipeline`]).
pub(crate) type Driver<'a> = &'a dyn Fn(Arc<dyn JoinRowsConsumer>) -> Result<()>;

/// The one pipeline of a part after a pipelined recursive join: each batch
/// of join rows runs through it on the search worker that found it, with a
/// chain and sink of its own (taken from `idle`, made when none is), so the
/// join's rows are never kept whole. The chains are pulled again for every
/// batch, which the steps `Step::restartable` allows are made for.
pub(crate) struct PushedPipeline<G: GlobalSink> {
    pub(crate) shape: PipelineShape,
    pub(crate) sink: Arc<G>,
    pub(crate) idle: Mutex<Vec<PushedChain<G::Local>>>,
}

pub(crate) struct PushedChain<S> {
    pub(crate) op: Box<dyn Operator>,
    pub(crate) rs: ResultSet,
    pub(crate) feed: Arc<Feed>,
    pub(crate) sink: S,
}

impl<G: GlobalSink> JoinRowsConsumer for PushedPipeline<G> {
    fn consume(&self, rows: JoinRows) -> Result<()> {
        let idle = self.idle.lock().pop();
        let mut chain = match idle {
            Some(c) => c,
            None => {
                let feed: Arc<Feed> = Arc::default();
                let (op, rs) = self.shape.instantiate_fed(Some(Arc::clone(&feed)), 0)?;
                let sink = self.sink.local()?;
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

/// Runs `shapes` as one task (see [`PipelineTask`]) on at most `threads`
/// workers, and no more than their sources have morsels. With a `driver`,
/// the one shape runs on the batches of a pipelined recursive join instead.
pub(crate) fn run_pipelines<G: GlobalSink>(
    sched: &Scheduler,
    threads: usize,
    shapes: Vec<PipelineShape>,
    sink: &Arc<G>,
    driver: Option<Driver<'_>>,
) -> Result<()> {
    if let Some(drive) = driver {
        let Ok([shape]) = <[PipelineShape; 1]>::try_from(shapes) else {
            return Err(Error::internal(
                "a pipelined recursive join feeds one pipeline",
            ));
        };
        let pushed = Arc::new(PushedPipeline {
            shape,
            sink: Arc::clone(sink),
            idle: Mutex::new(Vec::new()),
        });
        drive(Arc::clone(&pushed) as Arc<dyn JoinRowsConsumer>)?;
        let chains = std::mem::take(&mut *pushed.idle.lock());
        for chain in chains {
            sink.combine(0, chain.sink)?;
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
        sink: Arc::clone(sink),
        hubs_run: AtomicBool::new(false),
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

/// A global sink that turns each finished local sink into chunks (`finish`)
/// and keeps them by pipeline, so they come out in pipeline order whichever
/// worker finishes first.
pub(crate) struct GatherChunks<F, G> {
    make: F,
    finish: G,
    chunks: Mutex<Vec<Vec<Chunk>>>,
}

impl<S, F, G> GlobalSink for GatherChunks<F, G>
where
    S: LocalSink + 'static,
    F: Fn() -> Result<S> + Send + Sync + 'static,
    G: Fn(S) -> Vec<Chunk> + Send + Sync + 'static,
{
    type Local = S;

    fn local(&self) -> Result<S> {
        (self.make)()
    }

    fn combine(&self, pipeline: usize, local: S) -> Result<()> {
        let chunks = (self.finish)(local);
        self.chunks.lock()[pipeline].extend(chunks);
        Ok(())
    }
}

/// Runs `shapes` (see [`run_pipelines`]) and returns the chunks `finish`
/// makes of each finished sink, in pipeline order.
pub(crate) fn gather_pipelines<S, F, G>(
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
    let sink = Arc::new(GatherChunks {
        make: make_sink,
        finish,
        chunks: Mutex::new(vec![Vec::new(); shapes.len()]),
    });
    run_pipelines(sched, threads, shapes, &sink, driver)?;
    let chunks = std::mem::take(&mut *sink.chunks.lock());
    Ok(chunks.into_iter().flatten().collect())
}

/// Runs `shape` into result collectors evaluating `outputs`; with `wanted`,
/// stops once that many rows exist.
#[allow(clippy::too_many_arguments)]
pub(crate) fn collect_all(
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
