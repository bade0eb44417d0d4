//! The physical layer: maps a part's plan steps to resolved pipelines
//! ([`PipelineShape`]: the slot layout, and one [`PhysicalStep`] per step,
//! the step's operator spec with its tables and positions resolved) and
//! instantiates them per worker; `run` schedules what it builds. It runs
//! nothing itself.
//!
//! - `dag.rs` says which pipelines a pipeline depends on: the build sides
//!   of its cross products and hash joins ([`PipelinePlan`]). The run
//!   layer runs them first, bottom-up, and resolves the probing pipeline
//!   with their rows and join indexes ([`BuildResults`]); EXPLAIN resolves
//!   it without them (`describe.rs`).
//! - `build.rs` resolves a plan step into its spec (one match arm per kind
//!   of step), then applies the rewrites.
//! - `rewrite.rs` holds the rewrites, each a named unit in one ordered list
//!   ([`REWRITES`]); they ask the specs through [`PhysicalStep`]'s
//!   questions, and the shape records the names of those that fired
//!   (PROFILE and EXPLAIN list them).
//! - `step.rs` is the seam with the operators: each operator file defines
//!   its spec and how a worker instantiates it.
//! - `instantiate.rs` makes one worker's chain.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use std::collections::HashSet;

use kith_common::{Error, LogicalType, Result, TableId, ValueVector};
use kith_planner::expr::SlotId;
use kith_planner::plan::{PropertyRead, Source, Step};
use kith_sched::MorselDispenser;
use kith_storage::{NodeTableData, RelTableData, TableData};

use crate::operator::hub_split::HubSplit;
use crate::operator::join_rows::PartRows;
use crate::operator::{Pos, QueryContext};
use crate::profile::OpStats;
use crate::result_set::{ChunkState, DataChunk, ResultSet, SlotLayout};

mod build;
mod dag;
mod describe;
mod instantiate;
mod rewrite;
pub(crate) mod step;
pub(crate) use dag::*;
pub(crate) use describe::*;
pub(crate) use rewrite::*;
pub(crate) use step::{PhysicalStep, WorkerChain};

/// The shape of the factorized result set: vector types per chunk.
#[derive(Default)]
pub(crate) struct LayoutBuilder {
    pub(crate) layout: SlotLayout,
    pub(crate) chunks: Vec<Vec<LogicalType>>,
}

impl LayoutBuilder {
    pub(crate) fn add_chunk(&mut self) -> usize {
        self.chunks.push(Vec::new());
        self.chunks.len() - 1
    }
    pub(crate) fn add(&mut self, chunk: usize, slot: SlotId, ty: LogicalType) -> usize {
        self.chunks[chunk].push(ty);
        let v = self.chunks[chunk].len() - 1;
        self.layout.positions.insert(slot, (chunk, v));
        v
    }
    /// A vector that no slot names (an id nobody reads).
    pub(crate) fn add_anonymous(&mut self, chunk: usize, ty: LogicalType) -> usize {
        self.chunks[chunk].push(ty);
        self.chunks[chunk].len() - 1
    }
    pub(crate) fn result_set(&self) -> ResultSet {
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
            weights: None,
        }
    }
}

pub(crate) fn node_data(ctx: &QueryContext, t: TableId) -> Result<Arc<NodeTableData>> {
    match ctx.version.table(t)?.as_ref() {
        TableData::Node(n) => Ok(Arc::new(n.clone())),
        TableData::Rel(_) => Err(Error::internal("expected node table storage")),
    }
}

pub(crate) fn rel_data(ctx: &QueryContext, t: TableId) -> Result<Arc<RelTableData>> {
    match ctx.version.table(t)?.as_ref() {
        TableData::Rel(r) => Ok(Arc::new(r.clone())),
        TableData::Node(_) => Err(Error::internal("expected rel table storage")),
    }
}

pub(crate) fn table_name(ctx: &QueryContext, t: TableId) -> String {
    ctx.version
        .catalog
        .table(t)
        .map_or_else(|| format!("table {}", t.0), |e| e.name.clone())
}

/// PROFILE's name for a pipeline source.
pub(crate) fn source_label(source: &Source, ctx: &QueryContext) -> String {
    match source {
        Source::Single => "SingleTuple".to_string(),
        Source::ScanNodes { table, .. } => format!("ScanNodes {}", table_name(ctx, *table)),
        Source::Rows { .. } => "ScanRows".to_string(),
    }
}

/// PROFILE's name for a step.
pub(crate) fn step_label(step: &Step, ctx: &QueryContext) -> String {
    step.describe(&ctx.version.catalog)
}

/// Property reads resolved against a table: (storage column, output
/// vector) of each property it has, and the positions of those it lacks.
pub(crate) type PlacedReads = (Vec<(usize, usize)>, Vec<Pos>);

/// Places the property reads in chunk `chunk` of the layout: the storage
/// column and output vector of each property the table has, and the
/// vectors of those it lacks (filled with NULLs).
pub(crate) fn place_reads(
    b: &mut LayoutBuilder,
    chunk: usize,
    reads: &[PropertyRead],
    column_of: impl Fn(kith_catalog::PropertyId) -> Option<usize>,
) -> Result<PlacedReads> {
    let mut columns = Vec::new();
    let mut nulls = Vec::new();
    for r in reads {
        let vector = b.add(chunk, r.slot, r.ty.clone());
        match r.property {
            Some(p) => {
                let c = column_of(p)
                    .ok_or_else(|| Error::internal("property has no storage column"))?;
                columns.push((c, vector));
            }
            None => nulls.push((chunk, vector)),
        }
    }
    Ok((columns, nulls))
}

pub(crate) enum BuiltSource {
    Single(Arc<AtomicBool>),
    /// One tuple that every worker produces (`split_single_source`).
    Broadcast,
    /// One tuple standing for this many (see `count_whole_rel_table`).
    Counted(Arc<AtomicBool>, u64),
    Scan {
        table: TableId,
        data: Arc<NodeTableData>,
        morsels: Arc<MorselDispenser>,
        id: (usize, usize),
        /// Whether anything reads the node ids (see [`reads_scanned_ids`]).
        write_ids: bool,
        columns: Vec<(usize, (usize, usize))>,
        /// The hubs the first extend defers ([`share_hubs`]): the second
        /// run scans them on every worker.
        hubs: Option<Arc<HubSplit>>,
    },
    Rows {
        rows: PartRows,
        morsels: Arc<MorselDispenser>,
        chunk: usize,
        columns: Vec<(usize, usize)>,
        /// The rows end with a count column (after a recursive join).
        counted: bool,
    },
}

impl BuiltSource {
    /// The number of morsels the source hands out.
    pub(crate) fn morsels(&self) -> usize {
        match self {
            BuiltSource::Single(_) | BuiltSource::Counted(..) => 1,
            // As many as there are workers.
            BuiltSource::Broadcast => 1 << 16,
            BuiltSource::Scan { morsels, .. } | BuiltSource::Rows { morsels, .. } => {
                morsels.count() as usize
            }
        }
    }
}

/// Everything workers need to instantiate their chains.
pub(crate) struct PipelineShape {
    pub(crate) ctx: Arc<QueryContext>,
    pub(crate) layout: Arc<SlotLayout>,
    pub(crate) builder: LayoutBuilder,
    pub(crate) source: BuiltSource,
    pub(crate) steps: Vec<Box<dyn PhysicalStep>>,
    /// Under PROFILE: the counters of the source and of each step (with the
    /// last chunk of its output); FillNulls steps are not counted.
    pub(crate) stats: Vec<Option<(Arc<OpStats>, usize)>>,
    /// The names of the source and of the counted steps, as PROFILE lists
    /// them.
    pub(crate) labels: Vec<String>,
    /// The rewrites that fired, in the order they applied.
    pub(crate) rewrites: Vec<&'static str>,
}

/// How the run layer resolves the pipelines of a part (or of a build side):
/// what the rewrites and the source depend on besides the plan.
#[derive(Default)]
pub(crate) struct BuildOptions {
    /// The part's input rows (a `Rows` source reads them).
    pub(crate) rows: Option<PartRows>,
    pub(crate) threads: usize,
    /// The rows end with a count column (after a recursive join).
    pub(crate) counted: bool,
    /// The slots an aggregating sink reads (None: a collecting sink, which
    /// reads everything): the counting and packing rewrites need them.
    pub(crate) sink_reads: Option<HashSet<SlotId>>,
    /// The sink lets the workers share hub nodes ([`share_hubs`]).
    pub(crate) share_hubs: bool,
}

impl BuildOptions {
    /// The options of a build side's pipeline: collected whole, read by
    /// nothing but its columns.
    pub(crate) fn build_side(threads: usize) -> BuildOptions {
        BuildOptions {
            threads,
            ..BuildOptions::default()
        }
    }
}

/// A pipeline resolved but not yet rewritten: what the rewrites change.
pub(crate) struct Draft {
    pub(crate) source: BuiltSource,
    pub(crate) steps: Vec<Box<dyn PhysicalStep>>,
    /// The name of the source (first) and of each step, with the last
    /// chunk of its output; None for a step PROFILE does not count
    /// (FillNulls, the end of an OPTIONAL MATCH chain).
    pub(crate) ops: Vec<Option<(String, usize)>>,
    pub(crate) b: LayoutBuilder,
    /// Rows per morsel of a node scan ([`scan_morsel_size`]).
    pub(crate) morsel_size: u64,
}
