//! An extend step resolved against the layout and storage
//! ([`ExtendSpec`]): the modes the pipeline rewrites chose for it, and how
//! each worker's [`Extend`] is made from it.

use std::sync::Arc;

use kith_common::{Error, Result, TableId};
use kith_storage::RelTableData;

use super::range::RelRange;
use super::{CountExtend, CountMode, Extend, PairCount, SharedRels, SplitClaims};
use crate::operator::csr_pins::CsrPins;
use crate::operator::filter::{ChainSignal, PadSignal};
use crate::operator::flat_cursor::FlatCursor;
use crate::operator::hub_split::HubSplit;
use crate::operator::{Operator, Pos, QueryContext};
use crate::physical::step::{PhysicalStep, WorkerChain};
use crate::result_set::ChunkState;

/// One extend resolved: what it reads and writes, and its modes.
pub(crate) struct ExtendSpec {
    pub(crate) rel_table: TableId,
    pub(crate) data: Arc<RelTableData>,
    pub(crate) fwd: bool,
    pub(crate) from: Pos,
    pub(crate) input_chunk: usize,
    pub(crate) output_chunk: usize,
    pub(crate) to: Option<(usize, TableId)>,
    pub(crate) rel_id: Option<usize>,
    pub(crate) properties: Vec<(usize, usize)>,
    pub(crate) exclude: Vec<(Pos, Pos)>,
    pub(crate) collapse: bool,
    /// Degrees only, per input tuple ([`super::CountMode::Degrees`]).
    pub(crate) degrees: bool,
    /// Fused into this counting extend: the other extend from the same
    /// node (`fuse_counted_pair`).
    pub(crate) pair: Option<FusedExtend>,
    /// Output batches filled from several input tuples
    /// (`pack_last_extend`).
    pub(crate) pack: bool,
    /// With `pack`: input vectors copied along the output
    /// ([`Extend::replicas`]).
    pub(crate) replicas: Vec<(usize, usize)>,
    /// OPTIONAL MATCH's padding ([`Extend::pad`]).
    pub(crate) pad: bool,
    /// A step of an OPTIONAL MATCH chain: whether it is the chain's first
    /// extend. (Each worker's chain shares a `ChainSignal` of its own,
    /// made when the operators are.)
    pub(crate) chain: Option<bool>,
    /// The workers share this extend's rels (`split_single_source`).
    pub(crate) split: Option<Arc<SplitClaims>>,
    /// Its hub nodes deferred, then shared (`share_hubs`).
    pub(crate) hubs: Option<Arc<HubSplit>>,
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

impl ExtendSpec {
    /// The extend's operator in the modes chosen at build time.
    fn operator(&self, child: Box<dyn Operator>, ctx: Arc<QueryContext>) -> Extend {
        let columns = self.properties.iter().map(|p| p.0).collect();
        let shared = Arc::clone(&ctx.csr_pins);
        Extend {
            child,
            ctx,
            rel_table: self.rel_table,
            pins: CsrPins::new(Arc::clone(&self.data), self.fwd, columns, shared),
            from: self.from,
            input_chunk: self.input_chunk,
            output_chunk: self.output_chunk,
            to: self.to,
            rel_id: self.rel_id,
            properties: self.properties.clone(),
            exclude: self.exclude.clone(),
            pack: self.pack,
            replicas: self.replicas.clone(),
            pad: None,
            chain: None,
            in_tuple: false,
            split: self.split.clone(),
            hubs: None,
            split_seq: 0,
            split_range: (0, 0),
            split_chunk: 1,
            cursor: FlatCursor::new(self.input_chunk),
            range: RelRange::default(),
            generation: 0,
            whole_range_of: None,
            fresh_whole: None,
        }
    }

    /// The counting operator of an extend that counts ([`CountMode`]).
    fn counting(
        &self,
        mode: CountMode,
        child: Box<dyn Operator>,
        ctx: &Arc<QueryContext>,
    ) -> CountExtend {
        let shared = Arc::clone(&ctx.csr_pins);
        CountExtend {
            child,
            ctx: Arc::clone(ctx),
            mode,
            rel_table: self.rel_table,
            pins: CsrPins::new(Arc::clone(&self.data), self.fwd, Vec::new(), shared),
            from: self.from,
            input_chunk: self.input_chunk,
            output_chunk: self.output_chunk,
            exclude: self.exclude.clone(),
            pair: self.pair.as_ref().map(|f| PairCount {
                pins: CsrPins::new(
                    Arc::clone(&f.data),
                    f.fwd,
                    Vec::new(),
                    Arc::clone(&ctx.csr_pins),
                ),
                shared: f.shared,
            }),
            pair_output: self.pair.as_ref().map(|f| f.output_chunk),
            base_multiplicity: 1,
            weights: Vec::new(),
            batch_degrees: [Vec::new(), Vec::new()],
            degree_memo: (ChunkState::default(), 0),
            fixed_gates: Vec::new(),
            gated: Vec::new(),
            range: RelRange::default(),
        }
    }
}

impl PhysicalStep for ExtendSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        // The chain's and the padding's signals are made whatever the
        // mode: the steps after an extend that counts still look for them.
        let chain_signal = match self.chain {
            Some(first) => {
                if first {
                    chain.chain_signal = Some(Arc::new(ChainSignal::default()));
                }
                let signal = chain
                    .chain_signal
                    .as_ref()
                    .ok_or_else(|| Error::internal("optional chain without its start"))?;
                Some((Arc::clone(signal), first))
            }
            None => None,
        };
        let pad = self.pad.then(|| {
            let signal = Arc::new(PadSignal::default());
            let copies = self.replicas.iter().map(|r| r.1).collect();
            chain.pad_signal = Some((Arc::clone(&signal), self.pack, copies));
            signal
        });
        if self.collapse {
            return Ok(Box::new(self.counting(
                CountMode::Collapse,
                child,
                chain.ctx,
            )));
        }
        if self.degrees {
            return Ok(Box::new(self.counting(
                CountMode::Degrees,
                child,
                chain.ctx,
            )));
        }
        let mut e = self.operator(child, Arc::clone(chain.ctx));
        if let Some(h) = &self.hubs {
            match h.second_run() {
                Some(_) => e.split = Some(Arc::clone(&h.claims)),
                None => e.hubs = Some(Arc::clone(h)),
            }
        }
        e.chain = chain_signal;
        e.pad = pad;
        Ok(Box::new(e))
    }

    fn expands(&self) -> bool {
        self.to.is_some()
    }
}
