//! NULL vectors for properties a table does not have. A variable that may
//! match several tables reads each property from the tables that define it;
//! in the pipeline of a table without it, the slot is all NULL.

use kith_common::Result;

use super::{Operator, Pos};
use crate::result_set::ResultSet;

pub struct FillNulls {
    pub child: Box<dyn Operator>,
    /// Vectors to fill, each sized to its chunk's current length.
    pub vectors: Vec<Pos>,
}

impl Operator for FillNulls {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if !self.child.next(rs)? {
            return Ok(false);
        }
        for &(c, v) in &self.vectors {
            let chunk = &mut rs.chunks[c];
            let len = chunk.state.len;
            let out = &mut chunk.vectors[v];
            out.reset(len);
            for p in 0..len {
                out.set_null(p, true);
            }
        }
        Ok(true)
    }
}
