//! Physical operators. Each worker owns its own operator chain; operators pull
//! from their child one factorized batch at a time (`next`), and the pipeline
//! pushes every batch into the worker's sink.

pub mod collect;
pub mod cross_product;
pub mod csr_pins;
pub mod extend;
pub mod fill_nulls;
pub mod filter;
pub mod flat_cursor;
pub mod hash_aggregate;
pub mod hash_join;
pub mod hub_split;
pub mod intersect;
pub mod join_rows;
pub mod lookup_node;
pub mod offset_counts;
pub mod order_by;
pub mod path_values;
pub mod property_mask;
pub mod recursive_join;
pub mod scan_counted_rows;
pub mod scan_node;
pub mod scan_properties;
pub mod scan_rows;
pub mod semi_mask;
pub mod single;

use std::collections::HashMap;
use std::sync::Arc;

use kith_common::{Result, Value};
use kith_pager::Pager;
use kith_sched::CancelToken;
use kith_storage::Version;

use crate::result_set::{ResultSet, SlotLayout};
use crate::subquery::SubqueryTable;

/// What every operator of one statement shares (read-only).
#[derive(Clone)]
pub struct QueryContext {
    pub version: Arc<Version>,
    pub pager: Arc<Pager>,
    pub params: HashMap<String, Value>,
    pub cancel: CancelToken,
    /// Set when the statement runs under PROFILE.
    pub profile: Option<Arc<crate::profile::Profile>>,
    /// The tables of the plan's subqueries (filled in before its first part).
    pub subqueries: Arc<Vec<SubqueryTable>>,
    /// The memory the statement's intermediate results hold.
    pub memory: Arc<crate::memory::QueryMemory>,
    /// The semijoin masks of the query part (shared by its pipelines).
    pub semi_masks: Arc<semi_mask::SemiMasks>,
    /// The CSR groups the running pipelines' workers read, each pinned
    /// once (emptied after each run of pipelines).
    pub csr_pins: Arc<csr_pins::SharedCsrPins>,
}

/// A pull operator: fills `rs` with its next batch of tuples.
pub trait Operator: Send {
    /// Ok(false) when exhausted (or the statement is finished).
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool>;
}

/// A per-worker sink: consumes batches, then hands its state over once.
pub trait LocalSink: Send {
    fn consume(&mut self, rs: &ResultSet, layout: &SlotLayout) -> Result<()>;
}

/// The sink of a run of pipelines as the run layer sees it: a fresh local
/// sink for each worker's chain, and each finished one combined into the
/// shared state with its pipeline's number. Finishing that state is the
/// caller's, once the pipelines have run (`run::task::run_pipelines`).
pub trait GlobalSink: Send + Sync + 'static {
    type Local: LocalSink + 'static;
    /// A local sink for one worker's chain.
    fn local(&self) -> Result<Self::Local>;
    /// Takes in a worker's finished local sink of pipeline `pipeline`.
    fn combine(&self, pipeline: usize, local: Self::Local) -> Result<()>;
}

/// Where a slot lives: (chunk, vector).
pub type Pos = (usize, usize);
