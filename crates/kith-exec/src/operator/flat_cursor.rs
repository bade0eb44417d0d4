//! Flattening an input group one tuple at a time, the way the operators that
//! add a group per input tuple (extend, intersect) read their input.

use kith_common::Result;
use kith_sched::CancelToken;

use super::Operator;
use crate::result_set::ResultSet;

/// The position in the input group and whether a batch is held.
pub struct FlatCursor {
    chunk: usize,
    has_input: bool,
    next: usize,
}

impl FlatCursor {
    pub fn new(chunk: usize) -> FlatCursor {
        FlatCursor {
            chunk,
            has_input: false,
            next: 0,
        }
    }

    /// Makes the next tuple of the held batch flat; false when it is used up
    /// (the child is not pulled).
    pub fn advance_within(&mut self, rs: &mut ResultSet) -> bool {
        if self.has_input && self.next < rs.chunks[self.chunk].state.selected_len() {
            rs.chunks[self.chunk].state.flat = Some(self.next);
            self.next += 1;
            return true;
        }
        false
    }

    /// Makes the next tuple of the input group flat, pulling the child's
    /// next batch when this one is used up; false once the child is done.
    pub fn advance(
        &mut self,
        child: &mut dyn Operator,
        rs: &mut ResultSet,
        cancel: &CancelToken,
    ) -> Result<bool> {
        loop {
            if self.advance_within(rs) {
                return Ok(true);
            }
            rs.chunks[self.chunk].state.flat = None;
            cancel.check()?;
            if !child.next(rs)? {
                self.has_input = false;
                return Ok(false);
            }
            self.has_input = true;
            self.next = 0;
        }
    }
}
