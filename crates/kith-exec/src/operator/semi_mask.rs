//! Semijoin masks passed sideways: a predicate over the properties of a node
//! that an extend just bound is turned into a mask of the table's nodes that
//! pass it, and tuples whose node is not in the mask are dropped before
//! their properties are gathered one by one (`Step::SemiMask`).
//!
//! The mask is built adaptively. Building it reads the predicate's columns
//! for every node of the table, so it pays off only once about as many
//! tuples have reached the step as the table has nodes: until then tuples
//! pass untouched (the predicate stays a filter downstream, so a tuple the
//! mask would have dropped is dropped there). The first worker to cross the
//! threshold builds the mask, the others wait for it, and the union pipelines
//! of one query part that mask the same node with the same predicate share
//! one mask. A mask that keeps nearly every node is not applied.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use kith_common::{ErrorKind, Result, TableId, VectorData};
use kith_planner::bound::PropertyPredicate;
use kith_planner::expr::BoundExpr;

use super::property_mask::node_mask;
use super::{Operator, Pos, QueryContext};
use crate::physical::step::{PhysicalStep, WorkerChain};
use crate::result_set::ResultSet;

/// The fraction of the table's nodes (as a divisor) that must have reached
/// the step before the mask is built: reading a node's columns in a scan
/// costs a fraction of gathering them for one tuple, so a quarter of the
/// table in tuples roughly pays for the scan.
const BUILD_AFTER_TABLE_FRACTION: u64 = 4;

/// A mask that keeps more than this many sixteenths of the nodes is not
/// applied: testing it would cost more than it saves downstream.
const APPLY_BELOW_SIXTEENTHS: u64 = 15;

/// The mask of one (table, predicate) pair, shared by every worker.
pub struct SemiMask {
    table: TableId,
    predicate: PropertyPredicate,
    /// Rows of the table when the query's pipelines were resolved.
    num_nodes: u64,
    /// Tuples seen by all workers before the mask was built.
    seen: AtomicU64,
    threshold: u64,
    /// Built once: `None` when the mask is not applied (the predicate
    /// failed on a node no tuple may reach, or it keeps nearly all nodes).
    mask: OnceLock<Option<Arc<[u64]>>>,
}

impl SemiMask {
    fn new(table: TableId, predicate: PropertyPredicate, num_nodes: u64) -> SemiMask {
        SemiMask {
            table,
            predicate,
            num_nodes,
            seen: AtomicU64::new(0),
            threshold: (num_nodes / BUILD_AFTER_TABLE_FRACTION).max(1),
            mask: OnceLock::new(),
        }
    }

    /// The mask, once built; builds it when `arrived` more tuples take the
    /// count past the threshold.
    fn get(&self, arrived: u64, ctx: &QueryContext) -> Result<Option<&[u64]>> {
        if let Some(m) = self.mask.get() {
            return Ok(m.as_deref());
        }
        let seen = self.seen.fetch_add(arrived, Ordering::Relaxed) + arrived;
        if seen < self.threshold {
            return Ok(None);
        }
        let mut failed = None;
        let m = self.mask.get_or_init(|| {
            let tables = [(self.table, 0)];
            match node_mask(Some(&self.predicate), &tables, self.num_nodes, ctx) {
                Ok(Some(mask)) => {
                    let kept: u64 = mask.iter().map(|w| u64::from(w.count_ones())).sum();
                    (kept * 16 <= self.num_nodes * APPLY_BELOW_SIXTEENTHS).then_some(mask)
                }
                Ok(None) => None,
                // Cancelled while building: the query stops below.
                Err(e) if e.kind == ErrorKind::Interrupted => {
                    failed = Some(e);
                    None
                }
                // The predicate fails on some node (a division by zero,
                // say) that the query may never reach: no mask.
                Err(_) => None,
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(m.as_deref())
    }
}

/// The masks of one query part, so that its union pipelines share them.
#[derive(Default)]
pub struct SemiMasks {
    masks: Mutex<Vec<Arc<SemiMask>>>,
}

impl SemiMasks {
    /// The shared mask of `predicate` over `table`.
    pub fn get_or_add(
        &self,
        table: TableId,
        predicate: &PropertyPredicate,
        num_nodes: u64,
    ) -> Arc<SemiMask> {
        let mut masks = self.masks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = masks
            .iter()
            .find(|m| m.table == table && m.predicate.expr == predicate.expr)
        {
            return Arc::clone(m);
        }
        let m = Arc::new(SemiMask::new(table, predicate.clone(), num_nodes));
        masks.push(Arc::clone(&m));
        m
    }
}

/// Drops the tuples whose node (at `node`) is not in the mask.
pub struct SemiMaskFilter {
    pub child: Box<dyn Operator>,
    pub ctx: Arc<QueryContext>,
    pub node: Pos,
    pub mask: Arc<SemiMask>,
    sel: Vec<u32>,
}

impl SemiMaskFilter {
    pub fn new(
        child: Box<dyn Operator>,
        ctx: Arc<QueryContext>,
        node: Pos,
        mask: Arc<SemiMask>,
    ) -> SemiMaskFilter {
        SemiMaskFilter {
            child,
            ctx,
            node,
            mask,
            sel: Vec::new(),
        }
    }
}

/// Whether node offset `o` is in `mask` (a node beyond it, added after the
/// mask was built, is kept for the filter downstream to decide).
#[inline]
fn passes(mask: &[u64], o: u64) -> bool {
    mask.get((o / 64) as usize)
        .is_none_or(|w| w & (1 << (o % 64)) != 0)
}

impl Operator for SemiMaskFilter {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            if !self.child.next(rs)? {
                return Ok(false);
            }
            let chunk = &mut rs.chunks[self.node.0];
            let arrived = chunk.state.num_tuples() as u64;
            let Some(mask) = self.mask.get(arrived, &self.ctx)? else {
                return Ok(true);
            };
            let vector = &chunk.vectors[self.node.1];
            let VectorData::Id(ids) = &vector.data else {
                return Ok(true);
            };
            // A NULL node (OPTIONAL MATCH) is left to the filter.
            let keep = |p: usize| vector.is_null(p) || passes(mask, ids[p].offset());
            if let Some(p) = chunk.state.flat_position() {
                if keep(p) {
                    return Ok(true);
                }
                continue;
            }
            self.sel.clear();
            match &chunk.state.sel {
                Some(s) => self
                    .sel
                    .extend(s.iter().copied().filter(|&p| keep(p as usize))),
                None => self
                    .sel
                    .extend((0..chunk.state.len as u32).filter(|&p| keep(p as usize))),
            }
            if self.sel.is_empty() {
                continue;
            }
            let old = chunk.state.sel.replace(std::mem::take(&mut self.sel));
            self.sel = old.unwrap_or_default();
            return Ok(true);
        }
    }
}

/// A semijoin mask step resolved: the masked node's position and the
/// part's shared mask.
pub(crate) struct SemiMaskSpec {
    pub(crate) node: Pos,
    pub(crate) mask: Arc<SemiMask>,
}

impl PhysicalStep for SemiMaskSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        Ok(Box::new(SemiMaskFilter::new(
            child,
            Arc::clone(chain.ctx),
            self.node,
            Arc::clone(&self.mask),
        )))
    }

    fn repeatable(&self) -> bool {
        true
    }

    fn keeps_packing(
        &self,
        input: usize,
        padded: bool,
        _reads_input: &dyn Fn(&BoundExpr) -> bool,
    ) -> bool {
        self.node.0 != input && !padded
    }
}
