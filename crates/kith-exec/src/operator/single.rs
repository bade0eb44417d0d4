//! One empty tuple, for queries without MATCH (`RETURN 1 + 2`), or one
//! tuple standing for a known number of tuples (a count of every rel of a
//! table, from its size).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kith_common::Result;

use super::Operator;
use crate::result_set::ResultSet;

pub struct SingleTuple {
    /// Shared by all workers so exactly one of them produces the tuple.
    pub taken: Arc<AtomicBool>,
    /// How many tuples the one tuple stands for (its multiplicity; 0: no
    /// tuple at all).
    pub multiplicity: u64,
}

impl Operator for SingleTuple {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.multiplicity == 0 || self.taken.swap(true, Ordering::Relaxed) {
            return Ok(false);
        }
        for c in &mut rs.chunks {
            c.state.reset(1);
        }
        rs.multiplicity = self.multiplicity;
        Ok(true)
    }
}
