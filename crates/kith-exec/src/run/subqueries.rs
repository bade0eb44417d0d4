//! Subqueries a part reads (run first, into tables its rows probe), join
//! indexes of hash-join build sides, and recursive joins' profile records.

use std::sync::Arc;

use kith_common::{Result, ValueVector};
use kith_planner::plan::QueryPlan;
use kith_sched::Scheduler;

use crate::operator::hash_join::{BuildContext, JoinIndex};
use crate::operator::recursive_join::{RecursiveOutput, RecursiveSettings};
use crate::operator::QueryContext;
use crate::subquery::SubqueryTable;

use crate::run::*;

/// Records a recursive join's run under PROFILE: which policy ran (the
/// automatic choice included) and its rows.
pub(crate) fn record_recursive(
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
pub(crate) fn run_subqueries(
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
pub(crate) fn build_join_index(
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
