//! The result collector: evaluates the output expressions over each batch and
//! appends flat rows to a worker-local chunk. With a LIMIT (and no ORDER BY),
//! it finishes the statement once enough rows exist anywhere.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kith_common::{Chunk, Error, LogicalType, Result, ValueVector, VectorData};

use super::{LocalSink, QueryContext};
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::memory::MemoryCharge;
use crate::result_set::{ResultSet, SlotLayout};

pub struct Collect {
    ctx: Arc<QueryContext>,
    outputs: Vec<Evaluator>,
    scratch: Vec<ValueVector>,
    /// The chunk being filled.
    pub rows: Chunk,
    /// With `split`, chunks of [`CHUNK_ROWS`] rows already filled: a large
    /// result grows by new chunks instead of reallocating (and copying) one.
    full: Vec<Chunk>,
    full_bytes: u64,
    split: bool,
    unflat_positions: Vec<u32>,
    block: Vec<u32>,
    flat_block: Vec<u32>,
    memory: MemoryCharge,
    /// Rows needed in total (skip + limit), shared by all workers.
    wanted: Option<(u64, Arc<AtomicU64>)>,
    /// Each tuple once, with the rows it stands for (its multiplicity) in
    /// a trailing count column, instead of repeated (see
    /// [`Collect::with_counts`]).
    counts: bool,
}

impl Collect {
    pub fn new(
        ctx: Arc<QueryContext>,
        outputs: Vec<Evaluator>,
        types: &[LogicalType],
        wanted: Option<(u64, Arc<AtomicU64>)>,
        split: bool,
    ) -> Collect {
        let scratch = types
            .iter()
            .map(|t| ValueVector::new(t.clone(), 0))
            .collect();
        Collect {
            ctx,
            outputs,
            scratch,
            rows: Chunk::new(types, 0),
            full: Vec::new(),
            full_bytes: 0,
            split,
            unflat_positions: Vec::new(),
            block: Vec::new(),
            flat_block: Vec::new(),
            memory: MemoryCharge::default(),
            wanted,
            counts: false,
        }
    }

    /// Keeps each tuple once with a trailing count column (`COUNT_TYPE`)
    /// of the rows it stands for: rows handed to a part that scans them
    /// counted, so walk counts are not expanded between parts. Not with a
    /// LIMIT (which counts rows).
    pub fn with_counts(mut self) -> Collect {
        self.rows
            .columns
            .push(ValueVector::new(super::recursive_join::COUNT_TYPE, 0));
        self.counts = true;
        self.wanted = None;
        self
    }
}

/// Rows per result chunk when a collector splits its rows.
pub const CHUNK_ROWS: usize = 1 << 17;

impl Collect {
    /// Every row collected, in chunks.
    pub fn into_chunks(mut self) -> Vec<Chunk> {
        self.full.push(self.rows);
        self.full
    }
}

impl LocalSink for Collect {
    fn consume(&mut self, rs: &ResultSet, layout: &SlotLayout) -> Result<()> {
        let total = rs.num_tuples();
        if total == 0 {
            return Ok(());
        }
        let Collect {
            outputs,
            scratch,
            rows,
            full,
            full_bytes,
            split,
            unflat_positions,
            block,
            flat_block,
            memory,
            ctx,
            wanted,
            counts,
        } = self;
        let ectx = EvalContext {
            rs,
            layout,
            params: &ctx.params,
            subqueries: &ctx.subqueries,
        };
        let mut views = Vec::with_capacity(outputs.len());
        for (ev, out) in outputs.iter_mut().zip(scratch.iter_mut()) {
            views.push(ev.evaluate_view(&ectx, out)?);
        }
        let unflat = rs.unflat_chunk();
        let per_position = match unflat {
            Some(u) => total / rs.chunks[u].state.num_tuples().max(1) as u64,
            None => total,
        };
        unflat_positions.clear();
        match unflat {
            Some(u) => rs.chunks[u].state.extend_positions(unflat_positions),
            None => unflat_positions.push(0),
        }
        // Rows are appended column by column in blocks of at most BLOCK rows:
        // a tuple standing for many rows (a multiplicity) is expanded and
        // charged against the memory limit as it grows.
        const BLOCK: usize = 65_536;
        let mut next = 0usize;
        let mut repeat = 0u64;
        let mut added = 0u64;
        while next < unflat_positions.len() {
            block.clear();
            if *counts {
                // Each position once; its multiplicity goes to the count
                // column (the last, which the outputs below do not fill).
                let end = (next + BLOCK).min(unflat_positions.len());
                block.extend_from_slice(&unflat_positions[next..end]);
                next = end;
                let Some(c) = rows.columns.last_mut() else {
                    return Err(Error::internal("counted rows without a count column"));
                };
                let len = c.len() + block.len();
                match &mut c.data {
                    VectorData::U64(d) => d.resize(len, per_position),
                    _ => return Err(Error::internal("count column is not UINT64")),
                }
                c.nulls.resize(len);
            } else {
                while block.len() < BLOCK && next < unflat_positions.len() {
                    let p = unflat_positions[next];
                    let take = (per_position - repeat).min((BLOCK - block.len()) as u64);
                    block.extend(std::iter::repeat_n(p, take as usize));
                    repeat += take;
                    if repeat == per_position {
                        repeat = 0;
                        next += 1;
                    }
                }
            }
            let n = block.len();
            for (col, view) in rows.columns.iter_mut().zip(&views) {
                match view.evaluated {
                    Evaluated::Flat => {
                        flat_block.clear();
                        flat_block.resize(n, view.flat_pos as u32);
                        col.extend_gather(view.vector, flat_block);
                    }
                    Evaluated::Unflat(_) => col.extend_gather(view.vector, block),
                }
            }
            rows.num_rows += n;
            added += n as u64;
            if *split && rows.num_rows >= CHUNK_ROWS {
                let types: Vec<LogicalType> = rows.columns.iter().map(|c| c.ty.clone()).collect();
                let done = std::mem::replace(rows, Chunk::new(&types, 0));
                *full_bytes += done.memory_bytes() as u64;
                full.push(done);
            }
            memory.grow_to(&ctx.memory, *full_bytes + rows.memory_bytes() as u64)?;
        }
        if let Some((wanted, counter)) = wanted {
            if counter.fetch_add(added, Ordering::Relaxed) + added >= *wanted {
                ctx.cancel.finish();
            }
        }
        Ok(())
    }
}
