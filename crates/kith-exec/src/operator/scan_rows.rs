//! Scans a materialized table of rows (the output of an earlier query part,
//! after UNWIND) morsel by morsel, one unflat group per batch.

use std::sync::Arc;

use kith_common::{Chunk, Result};
use kith_sched::MorselDispenser;

use super::path_values::{LazyPaths, PathCache};
use super::{Operator, Pos, QueryContext};
use crate::result_set::ResultSet;

pub struct ScanRows {
    pub ctx: Arc<QueryContext>,
    pub rows: Arc<Chunk>,
    /// Builds the path columns of a recursive join's rows as they are read.
    pub paths: Option<Arc<LazyPaths>>,
    /// This worker's copies of the path elements.
    pub path_cache: PathCache,
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
        let paths = self.paths.as_deref().map(|p| (p, &mut self.path_cache));
        copy_rows(&self.rows, paths, &self.columns, start, len, rs)?;
        rs.chunks[self.chunk].state.reset(len);
        Ok(true)
    }
}

/// Copies rows `start..start + len` of `rows` into the result set (column
/// `i` to `columns[i]`), building the values of path columns.
pub fn copy_rows(
    rows: &Chunk,
    mut paths: Option<(&LazyPaths, &mut PathCache)>,
    columns: &[Pos],
    start: usize,
    len: usize,
    rs: &mut ResultSet,
) -> Result<()> {
    for (i, (src, &(chunk, vector))) in rows.columns.iter().zip(columns).enumerate() {
        let out = &mut rs.chunks[chunk].vectors[vector];
        if let Some((p, cache)) = &mut paths {
            if let Some(part) = p.part_of(i) {
                p.fill(part, src, start, len, out, cache)?;
                continue;
            }
        }
        out.assign_range(src, start, len);
    }
    Ok(())
}
