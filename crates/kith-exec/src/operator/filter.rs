//! Keeps the tuples whose predicate is TRUE; [`PadFilter`] does so for an
//! OPTIONAL MATCH, padding a tuple left without matches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kith_common::Result;

use super::{Operator, QueryContext};
use crate::expression::Evaluator;
use crate::result_set::{ResultSet, SlotLayout};

pub struct Filter {
    pub child: Box<dyn Operator>,
    pub predicate: Evaluator,
    pub layout: Arc<SlotLayout>,
    pub ctx: Arc<QueryContext>,
}

impl Operator for Filter {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            if !self.child.next(rs)? {
                return Ok(false);
            }
            if self
                .predicate
                .select(rs, &self.layout, &self.ctx.params, &self.ctx.subqueries)?
            {
                return Ok(true);
            }
        }
    }
}

/// An OPTIONAL MATCH's predicates after its optional extend (see
/// [`crate::operator::extend::Extend::pad`]): keeps the tuples of the
/// extend's group `chunk` for which the predicate is TRUE. A tuple extended
/// may span several batches; only when its last batch leaves none of its
/// matches does the group become one tuple of NULLs (so the tuple stays,
/// padded, once). Batches left empty before that are skipped.
pub struct PadFilter {
    pub child: Box<dyn Operator>,
    pub predicate: Evaluator,
    pub layout: Arc<SlotLayout>,
    pub ctx: Arc<QueryContext>,
    pub chunk: usize,
    /// Set by the extend: whether its latest batch is its tuple's last.
    pub tuple_done: Arc<AtomicBool>,
    /// Whether an earlier batch of the current tuple kept a match.
    matched: bool,
}

impl PadFilter {
    pub fn new(
        child: Box<dyn Operator>,
        predicate: Evaluator,
        layout: Arc<SlotLayout>,
        ctx: Arc<QueryContext>,
        chunk: usize,
        tuple_done: Arc<AtomicBool>,
    ) -> PadFilter {
        PadFilter {
            child,
            predicate,
            layout,
            ctx,
            chunk,
            tuple_done,
            matched: false,
        }
    }
}

impl Operator for PadFilter {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            if !self.child.next(rs)? {
                return Ok(false);
            }
            let pass = if rs.chunks[self.chunk].state.is_flat() {
                // Selecting on a flat group would test only its flat tuple.
                return Err(kith_common::Error::internal(
                    "optional filter over a flattened group",
                ));
            } else {
                self.predicate
                    .select(rs, &self.layout, &self.ctx.params, &self.ctx.subqueries)?
            };
            let last = self.tuple_done.load(Ordering::Relaxed);
            if pass {
                self.matched = !last;
                return Ok(true);
            }
            if last && !std::mem::take(&mut self.matched) {
                rs.chunks[self.chunk].pad_with_nulls();
                return Ok(true);
            }
        }
    }
}
