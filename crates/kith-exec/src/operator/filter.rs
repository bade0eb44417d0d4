//! Keeps the tuples whose predicate is TRUE; [`PadFilter`] does so for an
//! OPTIONAL MATCH, padding a tuple left without matches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kith_common::Result;
use parking_lot::Mutex;

use kith_common::Error;
use kith_planner::expr::BoundExpr;

use super::{Operator, QueryContext};
use crate::expression::Evaluator;
use crate::physical::step::{PhysicalStep, WorkerChain};
use crate::result_set::{ResultSet, SlotLayout};

pub struct Filter {
    pub child: Box<dyn Operator>,
    pub predicate: Evaluator,
    pub layout: Arc<SlotLayout>,
    pub ctx: Arc<QueryContext>,
}

impl Operator for Filter {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            if !self.child.next(rs)? {
                return Ok(false);
            }
            if self
                .predicate
                .select(rs, &self.layout, &self.ctx.params, &self.ctx.subqueries)?
            {
                return Ok(true);
            }
        }
    }
}

/// What an optional extend ([`crate::operator::extend::Extend::pad`])
/// tells its padding filter about the batch it just emitted.
#[derive(Debug, Default)]
pub struct PadSignal {
    /// One input tuple per batch: whether the batch holds the tuple's last
    /// rel.
    pub last: AtomicBool,
    /// A packed batch ([`crate::operator::extend::Extend::pack`]): each
    /// input tuple's first position and whether the batch holds its last
    /// rel. A tuple at position 0 continues the previous batch's last
    /// tuple when `continues` says so.
    pub tuples: Mutex<Vec<(u32, bool)>>,
    pub continues: AtomicBool,
}

/// An OPTIONAL MATCH's predicates after its optional extend (see
/// [`crate::operator::extend::Extend::pad`]): keeps the tuples of the
/// extend's group `chunk` for which the predicate is TRUE. A tuple extended
/// may span several batches; only when its last batch leaves none of its
/// matches does it become one tuple of NULLs (so the tuple stays, padded,
/// once). Batches left empty before that are skipped. Over a packed batch
/// the tuples are runs of positions, and a run left without a match keeps
/// its first position, set to NULL.
pub struct PadFilter {
    pub child: Box<dyn Operator>,
    pub predicate: Evaluator,
    pub layout: Arc<SlotLayout>,
    pub ctx: Arc<QueryContext>,
    pub chunk: usize,
    /// Set by the extend after each batch.
    pub signal: Arc<PadSignal>,
    /// Whether the extend packs several input tuples per batch, and then
    /// the vectors of the group that copy the input tuple
    /// (`Extend::replicas`): a padded position keeps their values.
    pub packed: Option<Vec<usize>>,
    /// Whether an earlier batch of the current tuple kept a match.
    matched: bool,
    /// Scratch: a packed batch's selection with its padded positions.
    kept: Vec<u32>,
}

impl PadFilter {
    pub fn new(
        child: Box<dyn Operator>,
        predicate: Evaluator,
        layout: Arc<SlotLayout>,
        ctx: Arc<QueryContext>,
        chunk: usize,
        signal: Arc<PadSignal>,
        packed: Option<Vec<usize>>,
    ) -> PadFilter {
        PadFilter {
            child,
            predicate,
            layout,
            ctx,
            chunk,
            signal,
            packed,
            matched: false,
            kept: Vec::new(),
        }
    }

    /// A packed batch after the predicate selected its passing positions:
    /// adds each tuple's first position, set to NULL, when none of its
    /// positions passed and the batch holds its last rel. True when the
    /// batch keeps a tuple.
    fn pad_packed(&mut self, rs: &mut ResultSet) -> bool {
        let tuples = self.signal.tuples.lock();
        let chunk = &mut rs.chunks[self.chunk];
        let len = chunk.state.len as u32;
        let passed = chunk.state.sel.take().unwrap_or_default();
        let mut kept = std::mem::take(&mut self.kept);
        kept.clear();
        let mut next = 0;
        for (i, &(start, ends)) in tuples.iter().enumerate() {
            let end = tuples.get(i + 1).map_or(len, |t| t.0);
            let before = kept.len();
            while next < passed.len() && passed[next] < end {
                kept.push(passed[next]);
                next += 1;
            }
            let carried = i == 0 && start == 0 && self.signal.continues.load(Ordering::Relaxed);
            let matched = kept.len() > before || (carried && self.matched);
            if !ends {
                self.matched = matched;
            } else if !matched {
                kept.push(start);
                let copies = self.packed.as_deref().unwrap_or_default();
                for (i, v) in chunk.vectors.iter_mut().enumerate() {
                    if !copies.contains(&i) {
                        v.set_null(start as usize, true);
                    }
                }
            }
        }
        let any = !kept.is_empty();
        chunk.state.sel = Some(kept);
        self.kept = passed;
        any
    }
}

impl Operator for PadFilter {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            if !self.child.next(rs)? {
                return Ok(false);
            }
            let pass = if rs.chunks[self.chunk].state.is_flat() {
                // Selecting on a flat group would test only its flat tuple.
                return Err(kith_common::Error::internal(
                    "optional filter over a flattened group",
                ));
            } else {
                self.predicate
                    .select(rs, &self.layout, &self.ctx.params, &self.ctx.subqueries)?
            };
            if self.packed.is_some() {
                // The passing positions as a selection (a predicate over
                // no position of the group passes all of them or none).
                let state = &mut rs.chunks[self.chunk].state;
                if !pass {
                    state.sel = Some(Vec::new());
                } else if state.sel.is_none() {
                    state.sel = Some((0..state.len as u32).collect());
                }
                if self.pad_packed(rs) {
                    return Ok(true);
                }
                continue;
            }
            let last = self.signal.last.load(Ordering::Relaxed);
            if pass {
                self.matched = !last;
                return Ok(true);
            }
            if last && !std::mem::take(&mut self.matched) {
                rs.chunks[self.chunk].pad_with_nulls();
                return Ok(true);
            }
        }
    }
}

/// The state an OPTIONAL MATCH chain's operators share (see
/// `Step::OptionalChain`), for the one worker that runs the chain.
#[derive(Debug, Default)]
pub struct ChainSignal {
    /// The batch in flight is the padding tuple of an input tuple left
    /// without a match: every chain step lets it through.
    pub padding: AtomicBool,
    /// A tuple of the current input tuple reached the chain's end.
    pub matched: AtomicBool,
}

/// A filter inside an OPTIONAL MATCH chain: as [`Filter`], but the padding
/// tuple passes.
pub struct ChainFilter {
    pub filter: Filter,
    pub signal: Arc<ChainSignal>,
}

impl Operator for ChainFilter {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        let f = &mut self.filter;
        loop {
            if !f.child.next(rs)? {
                return Ok(false);
            }
            if self.signal.padding.load(Ordering::Relaxed)
                || f.predicate
                    .select(rs, &f.layout, &f.ctx.params, &f.ctx.subqueries)?
            {
                return Ok(true);
            }
        }
    }
}

/// The end of an OPTIONAL MATCH chain: notes that the current input tuple
/// found a match when a batch that is not the padding reaches it (every
/// batch that reaches it holds a tuple: the steps before it skip empty
/// ones).
pub struct ChainEnd {
    pub child: Box<dyn Operator>,
    pub signal: Arc<ChainSignal>,
}

impl Operator for ChainEnd {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if !self.child.next(rs)? {
            return Ok(false);
        }
        if !self.signal.padding.load(Ordering::Relaxed) {
            self.signal.matched.store(true, Ordering::Relaxed);
        }
        Ok(true)
    }
}

/// A filter resolved: its predicate, and whether it is a step of an
/// OPTIONAL MATCH chain ([`ChainFilter`]).
pub(crate) struct FilterSpec {
    pub(crate) predicate: BoundExpr,
    pub(crate) chain: bool,
}

impl PhysicalStep for FilterSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        let filter = Filter {
            child,
            predicate: Evaluator::new(&self.predicate)?,
            layout: Arc::clone(chain.layout),
            ctx: Arc::clone(chain.ctx),
        };
        if !self.chain {
            return Ok(Box::new(filter));
        }
        let signal = chain
            .chain_signal
            .clone()
            .ok_or_else(|| Error::internal("optional chain filter without its start"))?;
        Ok(Box::new(ChainFilter { filter, signal }))
    }

    fn repeatable(&self) -> bool {
        !self.chain && !self.predicate.calls("rand")
    }

    fn keeps_packing(
        &self,
        _input: usize,
        padded: bool,
        reads_input: &dyn Fn(&BoundExpr) -> bool,
    ) -> bool {
        !self.chain && !padded && !reads_input(&self.predicate)
    }

    fn predicate(&self) -> Option<&BoundExpr> {
        Some(&self.predicate)
    }
}

/// The end of an OPTIONAL MATCH chain ([`ChainEnd`]).
pub(crate) struct ChainEndSpec;

impl PhysicalStep for ChainEndSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        let signal = chain
            .chain_signal
            .clone()
            .ok_or_else(|| Error::internal("optional chain end without its start"))?;
        Ok(Box::new(ChainEnd { child, signal }))
    }
}

/// OPTIONAL MATCH's predicates over the group `chunk` of the optional
/// extend (or left outer join) before it ([`PadFilter`]).
pub(crate) struct PadFilterSpec {
    pub(crate) predicate: BoundExpr,
    pub(crate) chunk: usize,
}

impl PhysicalStep for PadFilterSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        let pad = chain
            .pad_signal
            .as_ref()
            .ok_or_else(|| Error::internal("optional filter without its extend"))?;
        Ok(Box::new(PadFilter::new(
            child,
            Evaluator::new(&self.predicate)?,
            Arc::clone(chain.layout),
            Arc::clone(chain.ctx),
            self.chunk,
            Arc::clone(&pad.0),
            pad.1.then(|| pad.2.clone()),
        )))
    }

    fn keeps_packing(
        &self,
        _input: usize,
        padded: bool,
        reads_input: &dyn Fn(&BoundExpr) -> bool,
    ) -> bool {
        padded && !reads_input(&self.predicate)
    }

    fn predicate(&self) -> Option<&BoundExpr> {
        Some(&self.predicate)
    }
}
