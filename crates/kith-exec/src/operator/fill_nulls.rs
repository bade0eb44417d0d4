//! NULL vectors for properties a table does not have. A variable that may
//! match several tables reads each property from the tables that define it;
//! in the pipeline of a table without it, the slot is all NULL.

use kith_common::Result;
use kith_planner::expr::BoundExpr;

use super::{Operator, Pos};
use crate::physical::step::{PhysicalStep, WorkerChain};
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

/// The vectors a [`FillNulls`] fills.
pub(crate) struct FillNullsSpec(pub(crate) Vec<Pos>);

impl PhysicalStep for FillNullsSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        _chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        Ok(Box::new(FillNulls {
            child,
            vectors: self.0.clone(),
        }))
    }

    fn repeatable(&self) -> bool {
        true
    }

    fn keeps_packing(
        &self,
        input: usize,
        _padded: bool,
        _reads_input: &dyn Fn(&BoundExpr) -> bool,
    ) -> bool {
        self.0.iter().all(|p| p.0 != input)
    }
}
