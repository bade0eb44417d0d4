//! Cross product and hash-join probe: for each tuple of the input group
//! (flattened one tuple at a time, as extends do), the rows of a
//! materialized build side, written as a new unflat group in batches of at
//! most `VECTOR_CAPACITY`: every row (a cross product), or with a [`Probe`]
//! only the rows whose join key equals the tuple's (a hash join, whose index
//! is built in `hash_join.rs`; the equality stays a filter after it).

use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{Chunk, Error, LogicalType, Result, ValueVector};

use super::hash_join::{Hit, JoinIndex};
use super::{Operator, QueryContext};
use crate::expression::{EvalContext, Evaluated, Evaluator};
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

impl Operator for CrossProduct {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.rows.num_rows == 0 {
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
        }
    }
}
