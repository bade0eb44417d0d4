//! The physical layer: maps a part's plan steps to resolved pipelines
//! ([`PipelineShape`]: the slot layout, one [`Built`] per step with its
//! tables and positions resolved) and instantiates them per worker; `run`
//! schedules what it builds. One exception: a cross product's or hash
//! join's build side is run to completion (through `run`) while its
//! probing pipeline is built, so it is not yet a dependency the run layer
//! schedules. Its plan rewrites (`rewrite.rs`) apply while a shape is
//! built.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{Chunk, Error, LogicalType, Result, TableId, ValueVector};
use kith_planner::expr::{BoundExpr, SlotId};
use kith_planner::plan::{PropertyRead, Source, Step};
use kith_sched::MorselDispenser;
use kith_storage::{NodeTableData, RelTableData, TableData};

use crate::operator::extend::{SharedRels, SplitClaims};
use crate::operator::hash_join::JoinIndex;
use crate::operator::hub_split::HubSplit;
use crate::operator::intersect::IntersectSpec;
use crate::operator::join_rows::PartRows;
use crate::operator::semi_mask::SemiMask;
use crate::operator::{Pos, QueryContext};
use crate::profile::OpStats;
use crate::result_set::{ChunkState, DataChunk, ResultSet, SlotLayout};

use crate::run::*;

mod build;
mod instantiate;
mod rewrite;
pub(crate) use rewrite::*;

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

/// One step of the chain, resolved against storage and the layout.
pub(crate) enum Built {
    Filter(kith_planner::expr::BoundExpr),
    /// A filter inside an OPTIONAL MATCH chain (the padding tuple passes).
    ChainFilter(kith_planner::expr::BoundExpr),
    /// The end of an OPTIONAL MATCH chain.
    ChainEnd,
    CrossProduct {
        rows: Arc<Chunk>,
        input_chunk: usize,
        output_chunk: usize,
        columns: Vec<usize>,
        /// A hash join: the probe key and the build rows by key.
        index: Option<(BoundExpr, Arc<JoinIndex>)>,
        /// Left outer: pads a tuple without build rows (`PadSignal`).
        optional: bool,
        /// Unique build keys probed a batch at a time (`UniqueProbe`).
        unique: bool,
    },
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
        exclude: Vec<(Pos, Pos)>,
        collapse: bool,
        /// Degrees only, per input tuple ([`Extend::degrees`]).
        degrees: bool,
        /// Fused into this counting extend: the other extend from the same
        /// node (`fuse_counted_pair`).
        pair: Option<FusedExtend>,
        /// Output batches filled from several input tuples
        /// (`pack_last_extend`).
        pack: bool,
        /// With `pack`: input vectors copied along the output
        /// ([`Extend::replicas`]).
        replicas: Vec<(usize, usize)>,
        /// OPTIONAL MATCH's padding ([`Extend::pad`]).
        pad: bool,
        /// A step of an OPTIONAL MATCH chain: whether it is the chain's
        /// first extend. (Each worker's chain shares a `ChainSignal` of its
        /// own, made when the operators are.)
        chain: Option<bool>,
        /// The workers share this extend's rels (`split_single_source`).
        split: Option<Arc<SplitClaims>>,
        /// Its hub nodes deferred, then shared ([`share_hubs`]).
        hubs: Option<Arc<HubSplit>>,
    },
    /// OPTIONAL MATCH's predicates over the group `chunk` of the optional
    /// extend before it ([`PadFilter`]).
    PadFilter {
        predicate: BoundExpr,
        chunk: usize,
    },
    Intersect(IntersectSpec),
    ScanProperties {
        data: Arc<NodeTableData>,
        node: (usize, usize),
        columns: Vec<(usize, usize)>,
    },
    LookupNode {
        table: TableId,
        data: Arc<NodeTableData>,
        key: BoundExpr,
        each_item: bool,
        pk_type: LogicalType,
        pos: (usize, usize),
    },
    /// Properties the previous operator's table lacks.
    FillNulls(Vec<Pos>),
    SemiMask {
        node: Pos,
        mask: Arc<SemiMask>,
    },
}

/// The first of two counting extends from one node, fused into the second
/// (see [`PairCount`]).
#[derive(Clone)]
pub(crate) struct FusedExtend {
    pub(crate) data: Arc<RelTableData>,
    pub(crate) fwd: bool,
    pub(crate) shared: SharedRels,
    pub(crate) output_chunk: usize,
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
    pub(crate) steps: Vec<Built>,
    /// Under PROFILE: the counters of the source and of each step (with the
    /// last chunk of its output); FillNulls steps are not counted.
    pub(crate) stats: Vec<Option<(Arc<OpStats>, usize)>>,
}

/// Whether a pipeline's steps may be pulled again after their input ran
/// dry (the batches of a pipelined join arrive one by one): the steps that
/// keep nothing but their place in the current input. An OPTIONAL MATCH's
/// padding and the primary-key lookups are left out.
pub(crate) fn restartable(steps: &[Step]) -> bool {
    steps.iter().all(|s| match s {
        Step::CrossProduct { optional, .. } => !optional,
        Step::OptionalChain(_) => false,
        Step::Filter(_)
        | Step::Intersect { .. }
        | Step::SemiMask { .. }
        | Step::Alias { .. }
        | Step::ScanProperties { .. } => true,
        Step::Extend { optional, .. } => !optional,
        Step::PadFilter { .. } | Step::LookupNode { .. } => false,
    })
}
