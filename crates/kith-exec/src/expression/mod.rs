//! Vectorized expression evaluation over factorized result sets.
//!
//! An [`Evaluator`] compiles a bound expression once into a tree of nodes that
//! own reusable scratch vectors. Each call evaluates the tree over the current
//! tuples of a [`ResultSet`]: a node whose inputs all live in flat chunks yields
//! one value; a node that reads the (single) unflat chunk yields one value per
//! selected position of that chunk. Arithmetic and comparisons over
//! fixed-width numeric vectors and string predicates run typed loops
//! (`typed.rs`); everything else goes through the value-at-a-time semantics in
//! [`kernels`], which define the meaning of every operator.

use std::collections::HashMap;

use kith_common::{LogicalType, Result, Value, ValueVector};
use kith_planner::expr::BoundExpr;

use crate::result_set::{ResultSet, SlotLayout};
use crate::subquery::SubqueryTable;

pub use kith_function::cast;
mod evaluator;
pub mod kernels;
mod typed;

/// What an evaluation reads: the current tuples of `rs`, slot positions from
/// `layout`, and the statement's parameters.
pub struct EvalContext<'a> {
    pub rs: &'a ResultSet,
    pub layout: &'a SlotLayout,
    pub params: &'a HashMap<String, Value>,
    /// The tables `BoundExprKind::Subquery` nodes probe.
    pub subqueries: &'a [SubqueryTable],
}

/// The value of an expression that reads no variable (a SKIP / LIMIT
/// expression, the arguments of a standalone procedure call).
pub fn evaluate_constant(
    e: &BoundExpr,
    params: &HashMap<String, Value>,
    subqueries: &[SubqueryTable],
) -> Result<Value> {
    let mut out = ValueVector::new(e.ty.clone(), 1);
    let rs = ResultSet {
        chunks: Vec::new(),
        multiplicity: 1,
        weights: None,
    };
    let layout = SlotLayout::default();
    let ctx = EvalContext {
        rs: &rs,
        layout: &layout,
        params,
        subqueries,
    };
    Evaluator::new(e)?.evaluate(&ctx, &mut out)?;
    Ok(out.get_value(0))
}

/// Shape of an evaluation result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evaluated {
    /// One value, at position 0 of the output.
    Flat,
    /// One value per selected position of unflat chunk `.0`, stored at those
    /// physical positions.
    Unflat(usize),
}

/// An evaluated expression's values without a copy (see
/// [`Evaluator::evaluate_view`]).
pub struct View<'a> {
    pub vector: &'a ValueVector,
    pub evaluated: Evaluated,
    /// Where a flat value sits in `vector`.
    pub flat_pos: usize,
}

/// A compiled expression with scratch space reused across calls.
pub struct Evaluator {
    root: evaluator::Node,
    /// Scratch used by `select` to hold the predicate's values.
    pred_out: ValueVector,
    sel_buf: Vec<u32>,
}

impl Evaluator {
    pub fn new(expr: &BoundExpr) -> Result<Evaluator> {
        let root = evaluator::Node::compile(expr)?;
        Ok(Evaluator {
            pred_out: ValueVector::new(root.ty.clone(), 0),
            root,
            sel_buf: Vec::new(),
        })
    }

    pub fn result_type(&self) -> &LogicalType {
        &self.root.ty
    }

    /// Evaluates over the current tuples of `ctx.rs`. If every slot the
    /// expression reads lives in a flat chunk (or it reads none), returns
    /// `Evaluated::Flat` and `out` holds one value at position 0. Otherwise the
    /// expression depends on the unflat chunk `u` and returns
    /// `Evaluated::Unflat(u)`: `out` has length `state.len` of that chunk and
    /// holds values at the chunk's selected physical positions (others are
    /// unspecified). `out` is re-typed to [`Evaluator::result_type`] if needed.
    pub fn evaluate(&mut self, ctx: &EvalContext, out: &mut ValueVector) -> Result<Evaluated> {
        self.root.evaluate_root(ctx, out)
    }

    /// Like [`Evaluator::evaluate`], but an expression that only reads a
    /// variable of its own type is not copied into `out`: the view points at
    /// the variable's vector in `ctx.rs` (a flat value at `flat_pos`, an
    /// unflat one at the chunk's selected positions).
    pub fn evaluate_view<'s>(
        &'s mut self,
        ctx: &'s EvalContext,
        out: &'s mut ValueVector,
    ) -> Result<View<'s>> {
        self.root.evaluate_view(ctx, out)
    }

    /// Filter: keeps tuples where the predicate is TRUE (NULL and FALSE drop).
    /// If the predicate reads the unflat chunk, narrows that chunk's
    /// `state.sel` in place and returns true when at least one position
    /// remains; if it reads only flat chunks, returns whether the flat tuple
    /// passes (state untouched).
    pub fn select(
        &mut self,
        rs: &mut ResultSet,
        layout: &SlotLayout,
        params: &HashMap<String, Value>,
        subqueries: &[SubqueryTable],
    ) -> Result<bool> {
        let mut out = std::mem::replace(&mut self.pred_out, ValueVector::new(LogicalType::Bool, 0));
        let res = {
            let ctx = EvalContext {
                rs,
                layout,
                params,
                subqueries,
            };
            self.root.evaluate_root(&ctx, &mut out)
        };
        let res = match res {
            Ok(r) => r,
            Err(e) => {
                self.pred_out = out;
                return Err(e);
            }
        };
        let pass = |p: usize| -> Result<bool> {
            if out.is_null(p) {
                return Ok(false);
            }
            match &out.data {
                kith_common::VectorData::Bool(b) => Ok(b[p]),
                _ => Ok(kernels::truth(&out.get_value(p))?.unwrap_or(false)),
            }
        };
        let result = match res {
            Evaluated::Flat => pass(0),
            Evaluated::Unflat(u) => {
                let state = &mut rs.chunks[u].state;
                let mut buf = std::mem::take(&mut self.sel_buf);
                buf.clear();
                let mut err = None;
                match (&out.data, out.nulls.may_have_nulls()) {
                    (kith_common::VectorData::Bool(b), false) => match &state.sel {
                        Some(s) => select_true(b, s.iter().copied(), s.len(), &mut buf),
                        None => select_true_dense(b, state.len, &mut buf),
                    },
                    // NULL is not true: the same loop, testing both.
                    (kith_common::VectorData::Bool(b), true) => {
                        let nulls = &out.nulls;
                        let keep = |p: usize| b[p] & !nulls.is_null(p);
                        match &state.sel {
                            Some(s) => select_where(keep, s.iter().copied(), s.len(), &mut buf),
                            None => select_where(keep, 0..state.len as u32, state.len, &mut buf),
                        }
                    }
                    _ => state.for_each_position(|p| match pass(p) {
                        Ok(true) => buf.push(p as u32),
                        Ok(false) => {}
                        Err(e) => err = Some(e),
                    }),
                }
                if let Some(e) = err {
                    self.sel_buf = buf;
                    self.pred_out = out;
                    return Err(e);
                }
                let any = !buf.is_empty();
                let old = state.sel.replace(buf);
                self.sel_buf = old.unwrap_or_default();
                Ok(any)
            }
        };
        self.pred_out = out;
        result
    }
}

/// The positions (of `n`, ascending) where `b` is true, into `buf`
/// without a branch per position: at mixed selectivities a branch
/// mispredicts about every other tuple.
#[inline]
fn select_true(b: &[bool], positions: impl Iterator<Item = u32>, n: usize, buf: &mut Vec<u32>) {
    select_where(|p| b[p], positions, n, buf)
}

/// The positions `0..n` where `b` is true, into `buf`, eight at a time:
/// eight false (a selective filter: 98 % of `a.age = 18`'s tuples) or
/// eight true cost one test, other words are kept without a branch per
/// position.
fn select_true_dense(b: &[bool], n: usize, buf: &mut Vec<u32>) {
    const ALL: u64 = 0x0101_0101_0101_0101;
    let b = &b[..n];
    // SAFETY: `bool` has the size and alignment of `u8` and is always 0
    // or 1, so its bytes are valid `u8`s; the slice keeps `b`'s length
    // and lifetime. Exercised by `dense_selection_matches_reference`.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<u8>(), n) };
    let out = unfilled(buf, n);
    let mut kept = 0;
    let mut words = bytes.chunks_exact(8);
    let mut p = 0u32;
    for word in &mut words {
        let w = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        if w == ALL {
            for (i, slot) in out[kept..kept + 8].iter_mut().enumerate() {
                slot.write(p + i as u32);
            }
            kept += 8;
        } else if w != 0 {
            for (i, &x) in word.iter().enumerate() {
                out[kept].write(p + i as u32);
                kept += usize::from(x);
            }
        }
        p += 8;
    }
    for (i, &x) in words.remainder().iter().enumerate() {
        out[kept].write(p + i as u32);
        kept += usize::from(x);
    }
    // SAFETY: every loop above writes slot `kept` before `kept` passes
    // it, so slots `0..kept` are initialized (`kept <= n <= capacity`).
    unsafe { buf.set_len(kept) };
}

/// `buf` emptied with room for `n` positions, as uninitialized slots: the
/// selection loops write every position at the slot `kept` and advance
/// `kept` only past kept ones, so zeroing the slots first (8 KiB a batch)
/// cost more than a selective filter's whole selection.
fn unfilled(buf: &mut Vec<u32>, n: usize) -> &mut [std::mem::MaybeUninit<u32>] {
    buf.clear();
    buf.reserve(n);
    &mut buf.spare_capacity_mut()[..n]
}

/// [`select_true`] for any test of a position.
#[inline]
fn select_where(
    keep: impl Fn(usize) -> bool,
    positions: impl Iterator<Item = u32>,
    n: usize,
    buf: &mut Vec<u32>,
) {
    let out = unfilled(buf, n);
    let mut kept = 0;
    for p in positions {
        out[kept].write(p);
        kept += usize::from(keep(p as usize));
    }
    // SAFETY: as in `select_true_dense`: slot `kept` is written before
    // `kept` passes it, so slots `0..kept` are initialized.
    unsafe { buf.set_len(kept) };
}

#[cfg(test)]
mod tests;
