//! The result collector: evaluates the output expressions over each batch and
//! appends flat rows to a worker-local chunk. With a LIMIT (and no ORDER BY),
//! it finishes the statement once enough rows exist anywhere.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kith_common::{Chunk, LogicalType, Result, ValueVector};

use super::{LocalSink, QueryContext};
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::memory::MemoryCharge;
use crate::result_set::{ResultSet, SlotLayout};

pub struct Collect {
    ctx: Arc<QueryContext>,
    outputs: Vec<Evaluator>,
    scratch: Vec<ValueVector>,
    pub rows: Chunk,
    memory: MemoryCharge,
    /// Rows needed in total (skip + limit), shared by all workers.
    wanted: Option<(u64, Arc<AtomicU64>)>,
}

impl Collect {
    pub fn new(
        ctx: Arc<QueryContext>,
        outputs: Vec<Evaluator>,
        types: &[LogicalType],
        wanted: Option<(u64, Arc<AtomicU64>)>,
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
            memory: MemoryCharge::default(),
            wanted,
        }
    }
}

impl LocalSink for Collect {
    fn consume(&mut self, rs: &ResultSet, layout: &SlotLayout) -> Result<()> {
        let ectx = EvalContext {
            rs,
            layout,
            params: &self.ctx.params,
            subqueries: &self.ctx.subqueries,
        };
        let mut kinds = Vec::with_capacity(self.outputs.len());
        for (ev, out) in self.outputs.iter_mut().zip(self.scratch.iter_mut()) {
            kinds.push(ev.evaluate(&ectx, out)?);
        }
        let total = rs.num_tuples();
        if total == 0 {
            return Ok(());
        }
        let unflat = rs.unflat_chunk();
        let per_position = match unflat {
            Some(u) => total / rs.chunks[u].state.num_tuples().max(1) as u64,
            None => total,
        };
        let mut positions = Vec::new();
        match unflat {
            Some(u) => rs.chunks[u].state.for_each_position(|p| positions.push(p)),
            None => positions.push(0),
        }
        let mut added = 0u64;
        for &p in &positions {
            for _ in 0..per_position {
                for ((col, kind), src) in
                    self.rows.columns.iter_mut().zip(&kinds).zip(&self.scratch)
                {
                    let pos = match kind {
                        Evaluated::Flat => 0,
                        Evaluated::Unflat(_) => p,
                    };
                    col.push_value(&src.get_value(pos));
                }
                added += 1;
                // A tuple standing for many rows is checked as it expands.
                if added.is_multiple_of(65_536) {
                    self.memory
                        .grow_to(&self.ctx.memory, self.rows.memory_bytes() as u64)?;
                }
            }
        }
        self.rows.num_rows += added as usize;
        self.memory
            .grow_to(&self.ctx.memory, self.rows.memory_bytes() as u64)?;
        if let Some((wanted, counter)) = &self.wanted {
            if counter.fetch_add(added, Ordering::Relaxed) + added >= *wanted {
                self.ctx.cancel.finish();
            }
        }
        Ok(())
    }
}
