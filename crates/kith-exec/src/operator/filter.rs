//! Keeps the tuples whose predicate is TRUE.

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
