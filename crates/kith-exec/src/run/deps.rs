//! Running a pipeline's dependencies: the build sides of its cross products
//! and hash joins ([`PipelinePlan::deps`]), bottom-up (a build side may
//! have build sides of its own), each collected whole on the query's
//! workers and, for a hash join, indexed by key; then the pipeline itself
//! is resolved with their results. Resolving is layout work; only this
//! module and the part runner run pipelines.

use std::sync::Arc;

use kith_common::{Error, Result};
use kith_sched::Scheduler;

use crate::operator::QueryContext;

use crate::physical::*;
use crate::run::*;

/// Runs `plan`'s build sides (on up to `threads` workers, as the part's
/// pipelines run), then resolves `plan` with their rows and indexes.
pub(crate) fn resolve_pipeline(
    plan: &PipelinePlan<'_>,
    opts: &BuildOptions,
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
) -> Result<PipelineShape> {
    // PROFILE numbers a pipeline before its build sides, as it always has.
    let number = ctx.profile.as_ref().map(|p| p.next_pipeline());
    let builds = plan
        .deps
        .iter()
        .map(|side| run_build_side(side, ctx, sched, threads))
        .collect::<Result<Vec<_>>>()?;
    PipelineShape::build(
        plan,
        opts,
        ctx,
        number,
        BuildResults::Ready(builds.into_iter()),
    )
}

/// Runs one build side to completion (its own build sides first): its rows,
/// and for a hash join the index of its key column, which is then dropped.
fn run_build_side(
    side: &BuildSide<'_>,
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
) -> Result<BuiltSide> {
    let opts = BuildOptions::build_side(threads);
    let shape = resolve_pipeline(&side.pipeline, &opts, ctx, sched, threads)?;
    let (outputs, types) = side.outputs();
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
    let index = match side.key {
        Some(_) => {
            let keys = rows
                .columns
                .pop()
                .ok_or_else(|| Error::internal("hash join without its key"))?;
            Some(Arc::new(build_join_index(keys, ctx, sched, threads)?))
        }
        None => None,
    };
    Ok(BuiltSide {
        rows: Arc::new(rows),
        index,
    })
}
