//! Scans a materialized table of rows (the output of an earlier query part,
//! after UNWIND) morsel by morsel, one unflat group per batch.

use std::sync::Arc;

use kith_common::{Chunk, Result};
use kith_sched::MorselDispenser;

use super::{Operator, Pos, QueryContext};
use crate::result_set::ResultSet;

pub struct ScanRows {
    pub ctx: Arc<QueryContext>,
    pub rows: Arc<Chunk>,
    /// Shared across workers; ranges of row numbers.
    pub morsels: Arc<MorselDispenser>,
    pub chunk: usize,
    /// Where each column of `rows` goes.
    pub columns: Vec<Pos>,
}

impl Operator for ScanRows {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.ctx.cancel.should_stop()? {
            return Ok(false);
        }
        let Some(range) = self.morsels.next() else {
            return Ok(false);
        };
        let start = range.start as usize;
        let len = (range.end - range.start) as usize;
        copy_rows(&self.rows, &self.columns, start, len, rs);
        rs.chunks[self.chunk].state.reset(len);
        Ok(true)
    }
}

/// Copies rows `start..start + len` of `rows` into the result set (column
/// `i` to `columns[i]`).
pub fn copy_rows(rows: &Chunk, columns: &[Pos], start: usize, len: usize, rs: &mut ResultSet) {
    for (src, &(chunk, vector)) in rows.columns.iter().zip(columns) {
        rs.chunks[chunk].vectors[vector].assign_range(src, start, len);
    }
}
