//! Scans the rows of a recursive join, each standing for a count of paths
//! (built as they are read, or materialized with the count as the last
//! column): each batch is a run of consecutive rows with the same count,
//! which becomes the result set's multiplicity, so `count(*)` and the other
//! aggregates count walks without expanding them. In a pipelined join the
//! rows come batch by batch through a [`Feed`] instead of morsels.

use std::ops::Range;
use std::sync::Arc;

use kith_common::{Result, Value, VectorData};
use kith_sched::MorselDispenser;

use kith_common::constants::VECTOR_CAPACITY;
use parking_lot::Mutex;

use super::join_rows::{JoinRows, PartRows};
use super::path_values::PathCache;
use super::scan_rows::copy_rows;
use super::{Operator, Pos, QueryContext};
use crate::result_set::ResultSet;

pub struct ScanCountedRows {
    pub ctx: Arc<QueryContext>,
    pub rows: PartRows,
    /// This worker's copies of the path elements.
    pub path_cache: PathCache,
    pub morsels: Arc<MorselDispenser>,
    /// The worker running this chain: where it takes morsels first.
    pub worker: usize,
    pub chunk: usize,
    /// Where each column of the rows but the count goes.
    pub columns: Vec<Pos>,
    /// What is left of the current morsel, in the chunk numbered `piece`
    /// of materialized rows.
    pub pending: Range<usize>,
    pub piece: usize,
    /// A pipelined join's next batch, read once the morsels are out.
    pub feed: Option<Arc<Feed>>,
}

/// The batch of a pipelined join's rows that a worker's pipeline is to read
/// next (see `JoinRowsConsumer`).
pub type Feed = Mutex<Option<Arc<JoinRows>>>;

impl ScanCountedRows {
    #[inline]
    fn count(&self, row: usize) -> u64 {
        let col = match &self.rows {
            PartRows::Join(j) => return j.count(row),
            PartRows::Chunks(c) => c.chunk(self.piece).columns.last(),
        };
        let Some(col) = col else {
            return 1;
        };
        if let VectorData::U64(v) = &col.data {
            return v[row];
        }
        match Some(col.get_value(row)) {
            Some(Value::UInt64(c)) => c,
            Some(v) => v.as_i64().map_or(1, |c| c.max(0) as u64),
            None => 1,
        }
    }
}

impl Operator for ScanCountedRows {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            if self.ctx.cancel.should_stop()? {
                return Ok(false);
            }
            if self.pending.is_empty() {
                if let Some(range) = self.morsels.next(self.worker) {
                    match &self.rows {
                        PartRows::Join(_) => {
                            self.pending = range.start as usize..range.end as usize;
                        }
                        PartRows::Chunks(c) => {
                            // Every morsel holds a row (see `RowPieces`).
                            let Some((piece, rows)) = c.locate(&range) else {
                                return Ok(false);
                            };
                            (self.piece, self.pending) = (piece, rows);
                        }
                    }
                    continue;
                }
                let Some(batch) = self.feed.as_ref().and_then(|f| f.lock().take()) else {
                    return Ok(false);
                };
                self.pending = 0..batch.num_rows();
                self.rows = PartRows::Join(batch);
                continue;
            }
            let start = self.pending.start;
            let count = self.count(start);
            // A fed batch is longer than a morsel.
            let stop = self.pending.end.min(start + VECTOR_CAPACITY);
            let mut end = start + 1;
            while end < stop && self.count(end) == count {
                end += 1;
            }
            self.pending.start = end;
            if count == 0 {
                continue;
            }
            let len = end - start;
            match &self.rows {
                PartRows::Join(j) => j.fill(start, len, &self.columns, rs, &mut self.path_cache)?,
                PartRows::Chunks(c) => {
                    copy_rows(c.chunk(self.piece), &self.columns, start, len, rs)
                }
            }
            rs.chunks[self.chunk].state.reset(len);
            rs.multiplicity = count;
            return Ok(true);
        }
    }
}
