//! Cross product and hash join: for each tuple of the input group (flattened
//! one tuple at a time, as extends do), the rows of a materialized build
//! side, written as a new unflat group in batches of at most
//! `VECTOR_CAPACITY`: every row (a cross product), or with a [`Probe`] only
//! the rows whose join key equals the tuple's (a hash join; the equality
//! stays a filter after it, so the hash only has to find every candidate).

use std::collections::HashMap;
use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{Chunk, Error, LogicalType, Result, ValueVector};

use super::{Operator, QueryContext};
use crate::expression::kernels::EqKey;
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::result_set::{ResultSet, SlotLayout};

/// The build rows by join key (row numbers in the build chunk).
pub type JoinIndex = HashMap<EqKey, Vec<u32>>;

/// Indexes `keys` (one per build row); rows with no key are left out.
pub fn build_index(keys: &ValueVector) -> JoinIndex {
    let mut index = JoinIndex::new();
    for r in 0..keys.len() {
        if let Some(k) = EqKey::of(&keys.get_value(r)) {
            index.entry(k).or_default().push(r as u32);
        }
    }
    index
}

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
    matched: Vec<u32>,
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
            matched: Vec::new(),
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
        let hashed = self.probe.is_some();
        for (src, &vector) in self.rows.columns.iter().zip(&self.columns) {
            let v = &mut out.vectors[vector];
            v.reset(n);
            for p in 0..n {
                let row = if hashed {
                    self.matched[self.pos + p] as usize
                } else {
                    self.pos + p
                };
                v.copy_from(p, src, row);
            }
        }
        out.state.reset(n);
        self.pos += n;
    }

    /// The build rows matching the current (flat) tuple's key.
    fn probe(&mut self, rs: &ResultSet) -> Result<()> {
        let Some(probe) = &mut self.probe else {
            return Ok(());
        };
        let ectx = EvalContext {
            rs,
            layout: &probe.layout,
            params: &self.ctx.params,
            subqueries: &self.ctx.subqueries,
        };
        if probe.key.evaluate(&ectx, &mut self.probe_out)? != Evaluated::Flat {
            return Err(Error::internal("hash join probe key over an unflat group"));
        }
        self.matched.clear();
        if let Some(rows) =
            EqKey::of(&self.probe_out.get_value(0)).and_then(|k| probe.index.get(&k))
        {
            self.matched.extend_from_slice(rows);
        }
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
