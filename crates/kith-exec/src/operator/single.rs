//! One empty tuple, for queries without MATCH (`RETURN 1 + 2`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kith_common::Result;

use super::Operator;
use crate::result_set::ResultSet;

pub struct SingleTuple {
    /// Shared by all workers so exactly one of them produces the tuple.
    pub taken: Arc<AtomicBool>,
}

impl Operator for SingleTuple {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.taken.swap(true, Ordering::Relaxed) {
            return Ok(false);
        }
        for c in &mut rs.chunks {
            c.state.reset(1);
        }
        Ok(true)
    }
}
