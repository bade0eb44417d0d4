//! Cross product and hash-join probe: for each tuple of the input group
//! (flattened one tuple at a time, as extends do), the rows of a
//! materialized build side, written as a new unflat group in batches of at
//! most `VECTOR_CAPACITY`: every row (a cross product), or with a [`Probe`]
//! only the rows whose join key equals the tuple's (a hash join, whose index
//! is built in `hash_join.rs` and exact, so the equality is not tested again).
//! Left outer (an OPTIONAL MATCH's pattern as the build side), a tuple
//! without rows gets one row of NULLs, and each batch tells the padding
//! filter after it whether it ends its tuple ([`PadSignal`]).
//!
//! A hash join whose build keys are unique (each probe finds at most one
//! row) and that no padding filter follows probes a whole input batch at
//! once instead (`unique`): the build columns are vectors of the input
//! group, filled at each position from its row, or NULL (left outer), or
//! the position is deselected (inner); no tuple is flattened.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{Chunk, Error, LogicalType, Result, ValueVector};
use kith_planner::expr::BoundExpr;

use super::filter::PadSignal;
use super::hash_join::{Hit, JoinIndex};
use super::{Operator, QueryContext};
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::physical::step::{PhysicalStep, WorkerChain};
use crate::result_set::{ResultSet, SlotLayout};

/// The probe side of a hash join.
pub struct Probe {
    pub key: Evaluator,
    pub layout: Arc<SlotLayout>,
    pub index: Arc<JoinIndex>,
}

pub struct CrossProduct {
    child: Box<dyn Operator>,
    ctx: Arc<QueryContext>,
    rows: Arc<Chunk>,
    /// The group flattened by this operator (the newest group below it).
    input_chunk: usize,
    output_chunk: usize,
    /// Vector in the output chunk per column of `rows`.
    columns: Vec<usize>,
    probe: Option<Probe>,
    /// Left outer: set after each batch, for the padding filter.
    pub pad: Option<Arc<PadSignal>>,
    /// A join on unique build keys probed a batch at a time, its columns
    /// in the input group (see the module doc).
    pub unique: Option<UniqueProbe>,
    /// The current tuple's matching build rows (hash join).
    matched: Hit,
    probe_out: ValueVector,
    has_input: bool,
    next_input: usize,
    pos: usize,
    end: usize,
}

impl CrossProduct {
    pub fn new(
        child: Box<dyn Operator>,
        ctx: Arc<QueryContext>,
        rows: Arc<Chunk>,
        input_chunk: usize,
        output_chunk: usize,
        columns: Vec<usize>,
        probe: Option<Probe>,
    ) -> CrossProduct {
        CrossProduct {
            child,
            ctx,
            rows,
            input_chunk,
            output_chunk,
            columns,
            probe,
            pad: None,
            unique: None,
            matched: Hit::default(),
            probe_out: ValueVector::new(LogicalType::Any, 0),
            has_input: false,
            next_input: 0,
            pos: 0,
            end: 0,
        }
    }

    fn emit(&mut self, rs: &mut ResultSet) {
        let n = (self.end - self.pos).min(VECTOR_CAPACITY);
        let out = &mut rs.chunks[self.output_chunk];
        match &self.probe {
            Some(probe) => {
                // One typed gather per column from the key's row range.
                let rows = &probe.index.rows(self.matched)[self.pos..self.pos + n];
                for (src, &vector) in self.rows.columns.iter().zip(&self.columns) {
                    let v = &mut out.vectors[vector];
                    v.reset(0);
                    v.extend_gather(src, rows);
                }
            }
            None => {
                for (src, &vector) in self.rows.columns.iter().zip(&self.columns) {
                    let v = &mut out.vectors[vector];
                    v.reset(n);
                    for p in 0..n {
                        v.copy_from(p, src, self.pos + p);
                    }
                }
            }
        }
        out.state.reset(n);
        self.pos += n;
        if let Some(signal) = &self.pad {
            signal.last.store(self.pos == self.end, Ordering::Relaxed);
        }
    }

    /// Left outer: the current tuple has no build row; one row of NULLs.
    fn emit_nulls(&self, rs: &mut ResultSet, signal: &PadSignal) {
        rs.chunks[self.output_chunk].pad_with_nulls();
        signal.last.store(true, Ordering::Relaxed);
    }

    /// The build rows matching the current (flat) tuple's key: the key is
    /// read in place from its vector (typed, for integer and id keys).
    fn probe(&mut self, rs: &ResultSet) -> Result<()> {
        let Some(Probe { key, layout, index }) = &mut self.probe else {
            return Ok(());
        };
        let ectx = EvalContext {
            rs,
            layout,
            params: &self.ctx.params,
            subqueries: &self.ctx.subqueries,
        };
        let view = key.evaluate_view(&ectx, &mut self.probe_out)?;
        if view.evaluated != Evaluated::Flat {
            return Err(Error::internal("hash join probe key over an unflat group"));
        }
        self.matched = index.lookup(view.vector, view.flat_pos);
        Ok(())
    }
}

/// How a join on unique build keys probes (see the module doc).
#[derive(Default)]
pub struct UniqueProbe {
    /// Left outer: a position without a row gets NULLs instead of being
    /// deselected.
    pub optional: bool,
    /// Scratch: the positions probed and the build row each found
    /// (`u32::MAX` for none).
    positions: Vec<u32>,
    found: Vec<u32>,
}

impl UniqueProbe {
    pub fn new(optional: bool) -> UniqueProbe {
        UniqueProbe {
            optional,
            ..UniqueProbe::default()
        }
    }
}

impl CrossProduct {
    /// The next input batch with each position's build row written in
    /// place (`unique`); false when the input is done.
    fn next_unique(&mut self, rs: &mut ResultSet) -> Result<bool> {
        let internal = || Error::internal("unique hash join without its probe");
        let (Some(probe), Some(u)) = (&mut self.probe, &mut self.unique) else {
            return Err(internal());
        };
        if self.rows.num_rows == 0 && !u.optional {
            return Ok(false);
        }
        let input = self.input_chunk;
        loop {
            if self.ctx.cancel.should_stop()? || !self.child.next(rs)? {
                return Ok(false);
            }
            let state = &rs.chunks[input].state;
            u.positions.clear();
            match (state.flat, &state.sel) {
                (Some(i), Some(sel)) => u.positions.push(sel[i]),
                (Some(i), None) => u.positions.push(i as u32),
                (None, Some(sel)) => u.positions.extend_from_slice(sel),
                (None, None) => u.positions.extend(0..state.len as u32),
            }
            let len = state.len;
            let ectx = EvalContext {
                rs,
                layout: &probe.layout,
                params: &self.ctx.params,
                subqueries: &self.ctx.subqueries,
            };
            let view = probe.key.evaluate_view(&ectx, &mut self.probe_out)?;
            let index = &probe.index;
            u.found.clear();
            match view.evaluated {
                Evaluated::Flat => {
                    let r = index.first_row(view.vector, view.flat_pos);
                    u.found.resize(u.positions.len(), r);
                }
                Evaluated::Unflat(c) if c == input => {
                    index.first_rows(view.vector, &u.positions, &mut u.found)
                }
                Evaluated::Unflat(_) => {
                    return Err(Error::internal(
                        "hash join probe key over another group than its input",
                    ))
                }
            }
            let chunk = &mut rs.chunks[input];
            let whole = u.positions.len() == len && u.found.iter().all(|&r| r != u32::MAX);
            for (src, &vector) in self.rows.columns.iter().zip(&self.columns) {
                let v = &mut chunk.vectors[vector];
                if whole {
                    // Every position, each with its row: one typed gather.
                    v.reset(0);
                    v.extend_gather(src, &u.found);
                    continue;
                }
                v.reset(len);
                v.put_rows(&u.positions, src, &u.found);
            }
            if u.optional || whole {
                return Ok(true);
            }
            // The positions with a row, kept in place in the scratch that
            // then swaps with the chunk's selection (no vector per batch).
            let mut kept = 0;
            for i in 0..u.positions.len() {
                if u.found[i] != u32::MAX {
                    u.positions[kept] = u.positions[i];
                    kept += 1;
                }
            }
            if kept == 0 {
                continue;
            }
            if chunk.state.flat.is_none() {
                u.positions.truncate(kept);
                let old = chunk.state.sel.replace(std::mem::take(&mut u.positions));
                u.positions = old.unwrap_or_default();
            }
            return Ok(true);
        }
    }
}

impl Operator for CrossProduct {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.unique.is_some() {
            return self.next_unique(rs);
        }
        if self.rows.num_rows == 0 && self.pad.is_none() {
            return Ok(false);
        }
        loop {
            if self.pos < self.end {
                self.emit(rs);
                return Ok(true);
            }
            if self.ctx.cancel.should_stop()? {
                return Ok(false);
            }
            if !self.has_input
                || self.next_input >= rs.chunks[self.input_chunk].state.selected_len()
            {
                rs.chunks[self.input_chunk].state.flat = None;
                if !self.child.next(rs)? {
                    self.has_input = false;
                    return Ok(false);
                }
                self.has_input = true;
                self.next_input = 0;
                continue;
            }
            rs.chunks[self.input_chunk].state.flat = Some(self.next_input);
            self.next_input += 1;
            self.pos = 0;
            self.end = if self.probe.is_some() {
                self.probe(rs)?;
                self.matched.len()
            } else {
                self.rows.num_rows
            };
            if self.end == 0 {
                if let Some(signal) = &self.pad {
                    self.emit_nulls(rs, signal);
                    return Ok(true);
                }
            }
        }
    }
}

/// A cross product or hash join resolved: the build rows (already run),
/// the groups it reads and writes, and how it probes.
pub(crate) struct CrossProductSpec {
    pub(crate) rows: Arc<Chunk>,
    pub(crate) input_chunk: usize,
    pub(crate) output_chunk: usize,
    /// The output vector of each build column.
    pub(crate) columns: Vec<usize>,
    /// A hash join: the probe key and the build rows by key.
    pub(crate) index: Option<(BoundExpr, Arc<JoinIndex>)>,
    /// Left outer: pads a tuple without build rows (`PadSignal`).
    pub(crate) optional: bool,
    /// Unique build keys probed a batch at a time (`UniqueProbe`).
    pub(crate) unique: bool,
}

impl PhysicalStep for CrossProductSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        let probe = match &self.index {
            Some((key, index)) => Some(Probe {
                key: Evaluator::new(key)?,
                layout: Arc::clone(chain.layout),
                index: Arc::clone(index),
            }),
            None => None,
        };
        let mut c = CrossProduct::new(
            child,
            Arc::clone(chain.ctx),
            Arc::clone(&self.rows),
            self.input_chunk,
            self.output_chunk,
            self.columns.clone(),
            probe,
        );
        if self.unique {
            c.unique = Some(UniqueProbe::new(self.optional));
        } else if self.optional {
            let signal = Arc::new(PadSignal::default());
            chain.pad_signal = Some((Arc::clone(&signal), false, Vec::new()));
            c.pad = Some(signal);
        }
        Ok(Box::new(c))
    }

    fn expands(&self) -> bool {
        true
    }
}
