//! The dependencies between a part's pipelines: a pipeline whose steps
//! include cross products or hash joins depends on their build sides,
//! each a pipeline of its own (with dependencies of its own). The physical
//! layer only describes this tree ([`PipelinePlan`]); the run layer walks
//! it bottom-up (`run/deps.rs`), running every build side to its rows and
//! join index before it resolves the pipeline that probes them
//! ([`BuildResults::Ready`]). EXPLAIN resolves the same tree without
//! running anything ([`BuildResults::NotRun`]).

use std::sync::Arc;

use kith_common::{Chunk, LogicalType};
use kith_planner::expr::{BoundExpr, SlotId};
use kith_planner::plan::{HashJoinKey, Source, Step, SubPlan};

use crate::operator::hash_join::JoinIndex;

use super::build::flatten_chains;

/// A pipeline of a plan (a part's, or a build side's) with the build sides
/// it depends on.
pub(crate) struct PipelinePlan<'p> {
    pub(crate) source: &'p Source,
    pub(crate) steps: &'p [Step],
    /// The build side of each cross product or hash join among `steps`
    /// (OPTIONAL MATCH chains in line), in the order the steps resolve.
    pub(crate) deps: Vec<BuildSide<'p>>,
}

/// The build side of a cross product or hash join: a pipeline whose rows
/// (`columns`, then the key when there is one) the probing pipeline reads.
pub(crate) struct BuildSide<'p> {
    pub(crate) pipeline: PipelinePlan<'p>,
    pub(crate) columns: &'p [(SlotId, LogicalType)],
    pub(crate) key: Option<&'p HashJoinKey>,
}

impl<'p> PipelinePlan<'p> {
    /// The tree of `source` and `steps` and of every build side below them.
    pub(crate) fn new(source: &'p Source, steps: &'p [Step]) -> PipelinePlan<'p> {
        let deps = flatten_chains(steps)
            .into_iter()
            .filter_map(|(step, _)| match step {
                Step::CrossProduct {
                    build,
                    columns,
                    key,
                    ..
                } => Some(BuildSide {
                    pipeline: PipelinePlan::of(build),
                    columns,
                    key: key.as_ref(),
                }),
                _ => None,
            })
            .collect();
        PipelinePlan {
            source,
            steps,
            deps,
        }
    }

    /// [`PipelinePlan::new`] of a sub-plan.
    pub(crate) fn of(sub: &'p SubPlan) -> PipelinePlan<'p> {
        PipelinePlan::new(&sub.source, &sub.steps)
    }
}

impl BuildSide<'_> {
    /// The build side's output expressions and their types: its columns,
    /// then (a hash join) its key, which is indexed and then dropped.
    pub(crate) fn outputs(&self) -> (Vec<BoundExpr>, Vec<LogicalType>) {
        let span = kith_common::Span::new(0, 0);
        let mut outputs: Vec<BoundExpr> = self
            .columns
            .iter()
            .map(|(slot, ty)| BoundExpr::slot(*slot, ty.clone(), span))
            .collect();
        let mut types: Vec<LogicalType> = self.columns.iter().map(|c| c.1.clone()).collect();
        if let Some(k) = self.key {
            outputs.push(k.build.clone());
            types.push(k.build.ty.clone());
        }
        (outputs, types)
    }
}

/// A build side run to completion: its rows (without the key column) and,
/// for a hash join, the index of its keys.
pub(crate) struct BuiltSide {
    pub(crate) rows: Arc<Chunk>,
    pub(crate) index: Option<Arc<JoinIndex>>,
}

/// What a pipeline is resolved with: the results of its build sides (one
/// per [`PipelinePlan::deps`], in order), or nothing, when the pipeline is
/// only described (EXPLAIN) and what depends on the rows (whether a hash
/// join's keys are unique) is left to run time.
pub(crate) enum BuildResults {
    Ready(std::vec::IntoIter<BuiltSide>),
    NotRun,
}
