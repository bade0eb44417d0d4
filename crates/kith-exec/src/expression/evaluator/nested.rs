//! List comprehensions, quantifiers and reduce: a nested expression
//! evaluated per list element with its local variable bound.

use super::*;

impl Nested {
    pub(super) fn compile(
        op: NestedOp,
        (var, acc): (u32, u32),
        list: &BoundExpr,
        init: Option<&BoundExpr>,
        predicate: Option<&BoundExpr>,
        projection: Option<&BoundExpr>,
    ) -> Result<Nested> {
        let mut slots = Vec::new();
        for e in init.iter().chain(&predicate).chain(&projection) {
            e.slots(&mut slots);
        }
        slots.sort();
        slots.dedup();
        let compile = |e: Option<&BoundExpr>| e.map(Node::compile).transpose();
        Ok(Nested {
            op,
            var,
            acc,
            list: Node::compile(list)?,
            init: compile(init)?,
            predicate: compile(predicate)?,
            projection: compile(projection)?,
            slots,
            frame: Vec::new(),
        })
    }

    /// Evaluates the body over the elements of `list` for tuple position `p`.
    pub(super) fn apply(
        &self,
        ctx: &EvalContext,
        p: usize,
        list: Value,
        locals: &mut Vec<Value>,
    ) -> Result<Value> {
        let items = match list {
            Value::Null => return Ok(Value::Null),
            // Moves the elements out when this is the list's only holder.
            Value::List(items) => std::sync::Arc::unwrap_or_clone(items).into_values(),
            other => {
                let what = match self.op {
                    NestedOp::Comprehension => "a list comprehension",
                    NestedOp::Quantifier(_) => "a quantifier",
                    NestedOp::Reduce => "reduce()",
                };
                return Err(Error::type_error(format!(
                    "{what} expects a LIST after IN, got {}",
                    other.logical_type()
                )));
            }
        };
        let var = self.var as usize;
        let need = var.max(self.acc as usize) + 1;
        if locals.len() < need {
            locals.resize(need, Value::Null);
        }
        let holds = |node: &Node, locals: &mut Vec<Value>| -> Result<Option<bool>> {
            kernels::truth(&node.eval_row(ctx, p, locals)?)
        };
        match self.op {
            NestedOp::Comprehension => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    locals[var] = item;
                    if let Some(pred) = &self.predicate {
                        if holds(pred, locals)? != Some(true) {
                            continue;
                        }
                    }
                    out.push(match &self.projection {
                        Some(e) => e.eval_row(ctx, p, locals)?,
                        None => std::mem::replace(&mut locals[var], Value::Null),
                    });
                }
                Ok(Value::list(out))
            }
            NestedOp::Quantifier(kind) => {
                let pred = self
                    .predicate
                    .as_ref()
                    .ok_or_else(|| Error::internal("quantifier without a predicate"))?;
                let (mut hits, mut unknown) = (0usize, false);
                for item in items {
                    locals[var] = item;
                    match holds(pred, locals)? {
                        Some(true) => {
                            hits += 1;
                            match kind {
                                Quantifier::Any => return Ok(Value::Bool(true)),
                                Quantifier::None => return Ok(Value::Bool(false)),
                                Quantifier::Single if hits > 1 => return Ok(Value::Bool(false)),
                                _ => {}
                            }
                        }
                        Some(false) if kind == Quantifier::All => return Ok(Value::Bool(false)),
                        Some(false) => {}
                        None => unknown = true,
                    }
                }
                // No element decided the outcome alone: NULL when some
                // predicate was NULL (it might have been either).
                Ok(match kind {
                    _ if unknown => Value::Null,
                    Quantifier::All | Quantifier::None => Value::Bool(true),
                    Quantifier::Any => Value::Bool(false),
                    Quantifier::Single => Value::Bool(hits == 1),
                })
            }
            NestedOp::Reduce => {
                let (init, step) = match (&self.init, &self.projection) {
                    (Some(i), Some(s)) => (i, s),
                    _ => return Err(Error::internal("reduce() without init or step")),
                };
                let acc = self.acc as usize;
                locals[acc] = init.eval_row(ctx, p, locals)?;
                for item in items {
                    locals[var] = item;
                    locals[acc] = step.eval_row(ctx, p, locals)?;
                }
                Ok(std::mem::replace(&mut locals[acc], Value::Null))
            }
        }
    }
}
