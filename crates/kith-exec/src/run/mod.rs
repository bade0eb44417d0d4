//! The run layer: runs a [`QueryPlan`]'s parts in order (each part's rows
//! the source of the next), each part's pipelines on the scheduler as the
//! physical layer built them, then finishes the result (aggregate output,
//! DISTINCT, ORDER BY, SKIP, LIMIT). Subqueries run before the part that
//! reads them; large intermediate results are freed on the workers.

use std::sync::Arc;

use kith_common::{Chunk, Error, LogicalType, Result, Value, ValueVector};
use kith_planner::plan::{PartPlan, QueryPlan, RecursiveJoin, Sink, Source, Step};
use kith_sched::Scheduler;

use crate::operator::join_rows::{JoinRows, JoinRowsConsumer, PartRows};
use crate::operator::offset_counts::OffsetTable;
use crate::operator::recursive_join::{forwards, recursive_join, RecursiveSettings};
use crate::operator::scan_rows::RowPieces;
use crate::operator::QueryContext;

mod deps;
mod explain;
mod finish;
mod free;
mod part;
mod subqueries;
mod task;
pub(crate) use deps::*;
pub use explain::explain_physical;
pub(crate) use finish::*;
pub(crate) use free::*;
pub(crate) use part::*;
pub(crate) use subqueries::*;
pub(crate) use task::*;

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
    let mut input_order = InputOrder {
        sorted: false,
        listed: true,
    };
    let order_reaches_result = orders_reaching_result(plan);
    // The rows an OPTIONAL MATCH numbered, until the part that pads them.
    let mut numbered: Option<Arc<Chunk>> = None;
    // Whether `input` ends with a count column (see `hands_on_counts`).
    let mut counted_input = false;
    for (i, part) in plan.parts.iter().enumerate() {
        let part_ctx = part_context(&ctx);
        // The first part starts from one empty row.
        let part_input = part.from_rows.then(|| {
            input
                .take()
                .unwrap_or_else(|| (vec![Chunk::new(&[], 1)], Vec::new()))
        });
        let prepared = part_rows(part, part_input, &ctx, sched, threads, recursive)?;
        let (rows, pipelined) = (prepared.rows, prepared.pipelined);
        if prepared.numbered.is_some() {
            numbered = prepared.numbered;
        }
        let part_threads = input_order.part_threads(part, order_reaches_result[i], threads);
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

/// For each part, whether its row order reaches the result: every later
/// part only filters and projects its rows in order. (An aggregate or a
/// sort after it makes the order unobservable, so such rows stay on every
/// worker.)
fn orders_reaching_result(plan: &QueryPlan) -> Vec<bool> {
    let mut order_reaches_result = vec![false; plan.parts.len()];
    let mut later_keep_order = true;
    for (i, part) in plan.parts.iter().enumerate().rev() {
        order_reaches_result[i] = later_keep_order;
        later_keep_order &= keeps_row_order(part) && only_reads_rows(part);
    }
    order_reaches_result
}

/// A part's context under the statement's `ctx`. Each part has its own
/// token under the statement's: a satisfied LIMIT finishes only its part;
/// interrupts and timeouts reach all.
fn part_context(ctx: &QueryContext) -> Arc<QueryContext> {
    Arc::new(QueryContext {
        version: Arc::clone(&ctx.version),
        pager: Arc::clone(&ctx.pager),
        params: ctx.params.clone(),
        cancel: ctx.cancel.child(),
        profile: ctx.profile.clone(),
        subqueries: Arc::clone(&ctx.subqueries),
        memory: Arc::clone(&ctx.memory),
        semi_masks: Arc::default(),
        csr_pins: Arc::default(),
    })
}

/// The order the rows handed to the next part are in.
struct InputOrder {
    /// Whether they are in an ORDER BY's order.
    sorted: bool,
    /// Whether they are in the order of the lists they were unwound from
    /// (the first part's one row, or rows written in order, are in order).
    listed: bool,
}

impl InputOrder {
    /// The threads `part` runs on: one where it keeps its input's order
    /// (`reaches_result`: see [`orders_reaching_result`]). Then the order
    /// of the part's own rows.
    fn part_threads(&mut self, part: &PartPlan, reaches_result: bool, threads: usize) -> usize {
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
            self.listed && keeps_order && only_reads_rows(part) && reaches_result;
        let part_threads = if (self.sorted && keeps_order) || keeps_list_order {
            1
        } else {
            threads
        };
        self.sorted = !part.descending.is_empty() || (self.sorted && keeps_order);
        self.listed = keeps_list_order;
        part_threads
    }
}

/// A part's input rows as its pipelines read them.
struct PreparedRows<'p> {
    rows: Option<PartRows>,
    /// The recursive join whose rows run through the part's pipeline as
    /// the search finds them (see `PushedPipeline`), with its input rows.
    pipelined: Option<(&'p RecursiveJoin, Arc<Chunk>)>,
    /// The rows, when the part numbered them (for the OPTIONAL MATCH part
    /// that pads them).
    numbered: Option<Arc<Chunk>>,
}

/// Prepares `part_input` (the earlier part's rows, None for a part that
/// reads none) for `part`'s pipelines: as they are, or joined recursively
/// (now, or pipelined), numbered and unwound.
fn part_rows<'p>(
    part: &'p PartPlan,
    part_input: Option<(Vec<Chunk>, Vec<LogicalType>)>,
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
    recursive: &RecursiveSettings,
) -> Result<PreparedRows<'p>> {
    // The recursive join's rows run through the part's pipeline as
    // the search finds them (see `PushedPipeline`).
    let mut pipelined: Option<(&RecursiveJoin, Arc<Chunk>)> = None;
    let mut numbered = None;
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
                    let out =
                        recursive_join(join, &base_rows, ctx, sched, threads, recursive, None)?;
                    record_recursive(ctx, &out, started, None);
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
                    let rows = Arc::new(apply_unwinds(base, part, ctx)?);
                    if part.numbers_rows {
                        numbered = Some(Arc::clone(&rows));
                    }
                    PartRows::Chunks(Arc::new(RowPieces::new(vec![rows])))
                }
            })
        }
        None => None,
    };
    Ok(PreparedRows {
        rows,
        pipelined,
        numbered,
    })
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
        && part
            .pipelines
            .iter()
            .all(|p| p.steps.iter().all(Step::restartable))
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
