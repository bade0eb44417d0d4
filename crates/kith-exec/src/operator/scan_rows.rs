//! Scans a materialized table of rows (the output of an earlier query part,
//! after UNWIND) morsel by morsel, one unflat group per batch.

use std::ops::Range;
use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{Chunk, Result};
use kith_sched::MorselDispenser;

use super::{Operator, Pos, QueryContext};
use crate::result_set::ResultSet;

/// A part's input rows as the chunks the earlier part's workers made, read
/// as one table without first copying them into one chunk (a serial copy
/// of every row between two parallel parts). Morsels of
/// [`VECTOR_CAPACITY`] rows are cut from a span where each chunk starts
/// at a multiple of that size, so that a morsel lies in one chunk.
pub struct RowPieces {
    chunks: Vec<Arc<Chunk>>,
    /// Where each chunk starts in the span.
    starts: Vec<u64>,
    span: u64,
}

impl RowPieces {
    pub fn new(chunks: Vec<Arc<Chunk>>) -> RowPieces {
        let chunks: Vec<Arc<Chunk>> = chunks.into_iter().filter(|c| c.num_rows > 0).collect();
        let (mut starts, mut span) = (Vec::with_capacity(chunks.len()), 0);
        for c in &chunks {
            starts.push(span);
            span += (c.num_rows as u64).next_multiple_of(VECTOR_CAPACITY as u64);
        }
        RowPieces {
            chunks,
            starts,
            span,
        }
    }

    /// The chunks, in order.
    pub fn into_chunks(self) -> Vec<Arc<Chunk>> {
        self.chunks
    }

    /// The length morsels are cut from: the rows and the gaps after each
    /// chunk's last morsel.
    pub fn span(&self) -> u64 {
        self.span
    }

    /// The chunk a morsel of the span lies in, by number, and the morsel's
    /// rows there (None past the rows).
    pub fn locate(&self, morsel: &Range<u64>) -> Option<(usize, Range<usize>)> {
        let i = self
            .starts
            .partition_point(|&s| s <= morsel.start)
            .checked_sub(1)?;
        let start = (morsel.start - self.starts[i]) as usize;
        let end = ((morsel.end - self.starts[i]) as usize).min(self.chunks[i].num_rows);
        (start < end).then_some((i, start..end))
    }

    pub fn chunk(&self, i: usize) -> &Chunk {
        &self.chunks[i]
    }
}

pub struct ScanRows {
    pub ctx: Arc<QueryContext>,
    pub rows: Arc<RowPieces>,
    /// Shared across workers; ranges of row numbers.
    pub morsels: Arc<MorselDispenser>,
    /// The worker running this chain: where it takes morsels first.
    pub worker: usize,
    pub chunk: usize,
    /// Where each column of `rows` goes.
    pub columns: Vec<Pos>,
}

impl Operator for ScanRows {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.ctx.cancel.should_stop()? {
            return Ok(false);
        }
        // Every morsel holds a row (the gaps are shorter than a morsel).
        let Some((i, rows)) = self
            .morsels
            .next(self.worker)
            .and_then(|m| self.rows.locate(&m))
        else {
            return Ok(false);
        };
        copy_rows(
            self.rows.chunk(i),
            &self.columns,
            rows.start,
            rows.len(),
            rs,
        );
        rs.chunks[self.chunk].state.reset(rows.len());
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

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::{LogicalType, Value};

    fn chunk(values: std::ops::Range<i64>) -> Arc<Chunk> {
        let mut c = Chunk::new(&[LogicalType::Int64], 0);
        for v in values.clone() {
            c.columns[0].push_value(&Value::Int64(v));
        }
        c.num_rows = (values.end - values.start) as usize;
        Arc::new(c)
    }

    /// Morsels cut from the pieces' span, taken by three workers from
    /// their regions, reach every row of every chunk once (empty chunks
    /// and chunks longer than a morsel included).
    #[test]
    fn morsels_of_row_pieces_reach_every_row_once() {
        let cap = VECTOR_CAPACITY as i64;
        let pieces = RowPieces::new(vec![
            chunk(0..0),
            chunk(0..5),
            chunk(5..5 + 2 * cap + 3),
            chunk(5 + 2 * cap + 3..7 + 2 * cap + 3),
        ]);
        let total = 7 + 2 * cap + 3;
        let span: u64 = [5u64, 2 * cap as u64 + 3, 2]
            .iter()
            .map(|n| n.next_multiple_of(cap as u64))
            .sum();
        assert_eq!(pieces.span(), span);
        let morsels = MorselDispenser::with_regions(pieces.span(), VECTOR_CAPACITY as u64, 3);
        let mut seen = Vec::new();
        for worker in [2, 0, 1, 1, 0, 2, 2, 0] {
            let Some(m) = morsels.next(worker) else {
                continue;
            };
            let (i, rows) = pieces.locate(&m).expect("every morsel holds a row");
            let column = &pieces.chunk(i).columns[0];
            seen.extend(rows.map(|r| column.get_value(r)));
        }
        assert!(morsels.next(0).is_none());
        seen.sort_by_key(|v| v.as_i64());
        let want: Vec<Value> = (0..total).map(Value::Int64).collect();
        assert_eq!(seen, want);
        assert!(pieces.locate(&(pieces.span()..pieces.span() + 1)).is_none());
        assert_eq!(RowPieces::new(Vec::new()).span(), 0);
    }
}
