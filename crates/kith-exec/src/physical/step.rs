//! The seam between a resolved pipeline and its operators: a
//! [`PhysicalStep`] is one step of a pipeline's chain resolved against the
//! layout and storage (its `…Spec`, defined beside its operator). It knows
//! how each worker instantiates it and answers the few questions the
//! pipeline rewrites (`rewrite.rs`) ask; a step that answers none of them
//! is left alone by every rewrite, so a new operator needs only
//! [`PhysicalStep::instantiate`].

use std::any::Any;
use std::sync::Arc;

use kith_common::Result;
use kith_planner::expr::BoundExpr;

use crate::operator::filter::{ChainSignal, PadSignal};
use crate::operator::{Operator, QueryContext};
use crate::result_set::SlotLayout;

/// One resolved step of a pipeline's chain.
pub(crate) trait PhysicalStep: Any + Send + Sync {
    /// This worker's operator for the step, pulling from `child`.
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>>;

    /// Whether it writes more tuples than it reads (neighbours, matches,
    /// build rows): such pipelines scan smaller morsels
    /// (`scan_morsel_size`).
    fn expands(&self) -> bool {
        false
    }

    /// Whether every worker may run it on the same tuples and get the same
    /// tuples in the same order, with nothing shared between the workers'
    /// copies consumed (`split_single_source`).
    fn repeatable(&self) -> bool {
        false
    }

    /// Whether it may follow an extend that packs tuples of several input
    /// tuples into one batch (`pack_last_extend`): it reads nothing of that
    /// extend's input group `input` (`reads_input` says whether an
    /// expression does), and fits the extend's padding when `padded`.
    fn keeps_packing(
        &self,
        _input: usize,
        _padded: bool,
        _reads_input: &dyn Fn(&BoundExpr) -> bool,
    ) -> bool {
        false
    }

    /// The predicate of a filter (read before a packed extend, see
    /// `pack_last_extend`).
    fn predicate(&self) -> Option<&BoundExpr> {
        None
    }
}

impl dyn PhysicalStep {
    /// The step as its concrete spec, for the rewrites that change one kind.
    pub(crate) fn get<T: PhysicalStep>(&self) -> Option<&T> {
        (self as &dyn Any).downcast_ref()
    }

    pub(crate) fn get_mut<T: PhysicalStep>(&mut self) -> Option<&mut T> {
        (self as &mut dyn Any).downcast_mut()
    }

    pub(crate) fn is<T: PhysicalStep>(&self) -> bool {
        self.get::<T>().is_some()
    }
}

/// What one worker's chain shares while its operators are made: the
/// statement, the layout, and the signals that tie an OPTIONAL MATCH's
/// operators together (each worker has its own).
pub(crate) struct WorkerChain<'a> {
    pub(crate) ctx: &'a Arc<QueryContext>,
    pub(crate) layout: &'a Arc<SlotLayout>,
    /// The last optional extend's (or left outer join's) signal, whether
    /// that extend packs its batches, and the vectors that copy its source
    /// (a padded position keeps them): read by the padding filter after it.
    pub(crate) pad_signal: Option<(Arc<PadSignal>, bool, Vec<usize>)>,
    /// The OPTIONAL MATCH chain's signal, made by its first extend.
    pub(crate) chain_signal: Option<Arc<ChainSignal>>,
}
