//! Cross product: for each tuple of the input group (flattened one tuple at a
//! time, as extends do), every row of a materialized build side, written as a
//! new unflat group in batches of at most `VECTOR_CAPACITY`.

use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{Chunk, Result};

use super::{Operator, QueryContext};
use crate::result_set::ResultSet;

pub struct CrossProduct {
    child: Box<dyn Operator>,
    ctx: Arc<QueryContext>,
    rows: Arc<Chunk>,
    /// The group flattened by this operator (the newest group below it).
    input_chunk: usize,
    output_chunk: usize,
    /// Vector in the output chunk per column of `rows`.
    columns: Vec<usize>,
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
    ) -> CrossProduct {
        CrossProduct {
            child,
            ctx,
            rows,
            input_chunk,
            output_chunk,
            columns,
            has_input: false,
            next_input: 0,
            pos: 0,
            end: 0,
        }
    }

    fn emit(&mut self, rs: &mut ResultSet) {
        let n = (self.end - self.pos).min(VECTOR_CAPACITY);
        let out = &mut rs.chunks[self.output_chunk];
        for (src, &vector) in self.rows.columns.iter().zip(&self.columns) {
            let v = &mut out.vectors[vector];
            v.reset(n);
            for p in 0..n {
                v.copy_from(p, src, self.pos + p);
            }
        }
        out.state.reset(n);
        self.pos += n;
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
            self.end = self.rows.num_rows;
        }
    }
}
