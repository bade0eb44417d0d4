//! EXPLAIN's physical section: every pipeline of a plan (its subqueries'
//! first) resolved with the options the run would give it (threads per
//! part, counting and hub-sharing sinks, counted input rows), with nothing
//! run. A part that reads the rows of the part before is resolved over no
//! rows: its layout and rewrites do not depend on them. What does depend on
//! rows (whether a hash join's build keys are unique) is marked as decided
//! at run time.

use std::fmt::Write;
use std::sync::Arc;

use kith_common::Result;
use kith_planner::plan::QueryPlan;

use crate::operator::join_rows::PartRows;
use crate::operator::scan_rows::RowPieces;
use crate::operator::QueryContext;

use crate::physical::*;
use crate::run::*;

/// The physical section of EXPLAIN of `plan` on `threads` workers: per
/// part, each pipeline's operators (as PROFILE names them), the rewrites
/// that fired, and its build sides, which run before it.
pub fn explain_physical(
    plan: &QueryPlan,
    ctx: Arc<QueryContext>,
    threads: usize,
) -> Result<String> {
    let mut out = String::from(
        "Physical pipelines (resolved, nothing run; a build side runs before the pipeline that probes it)\n",
    );
    let mut number = 0;
    describe_query(plan, &ctx, threads, "", &mut number, &mut out)?;
    Ok(out)
}

/// Appends the lines of `plan`'s subqueries, then of its parts, each headed
/// by `prefix`; pipelines are numbered on from `*number`.
fn describe_query(
    plan: &QueryPlan,
    ctx: &Arc<QueryContext>,
    threads: usize,
    prefix: &str,
    number: &mut usize,
    out: &mut String,
) -> Result<()> {
    for (i, s) in plan.subqueries.iter().enumerate() {
        let prefix = format!("{prefix}subquery {} ", i + 1);
        if s.degree.is_some() {
            let _ = writeln!(out, "{prefix}(runs first): CSR degrees, no pipeline");
            continue;
        }
        describe_query(&s.plan, ctx, threads, &prefix, number, out)?;
    }
    // The same choices as `execute_parts`, from the plan alone.
    let order_reaches_result = orders_reaching_result(plan);
    let mut input_order = InputOrder {
        sorted: false,
        listed: true,
    };
    let mut counted_input = false;
    for (i, part) in plan.parts.iter().enumerate() {
        let part_ctx = part_context(ctx);
        let part_threads = input_order.part_threads(part, order_reaches_result[i], threads);
        let pipelined = part.from_rows && pipelines_join(part);
        let rows = part
            .from_rows
            .then(|| PartRows::Chunks(Arc::new(RowPieces::new(Vec::new()))));
        let opts = part_build_options(part, rows, part_threads, counted_input, pipelined);
        let fed = if pipelined {
            ", fed by its recursive join as it searches"
        } else {
            ""
        };
        let _ = writeln!(out, "{prefix}part {} ({part_threads} threads{fed}):", i + 1);
        if part.pipelines.is_empty() {
            let _ = writeln!(out, "  no pipeline (no match possible)");
        }
        for p in &part.pipelines {
            *number += 1;
            let _ = writeln!(out, "  pipeline {number}:");
            describe_pipeline(&PipelinePlan::of(p), &opts, &part_ctx)?.write(number, 1, out);
        }
        counted_input = plan
            .parts
            .get(i + 1)
            .is_some_and(|next| hands_on_counts(part, next));
    }
    Ok(())
}
