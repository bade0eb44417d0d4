//! Moving values between vectors for the evaluator: positions copied by
//! mode, list sizes, per-row maps, unary predicates, argument access.

use super::*;

/// `src` at mode `m` copied into `out` position by position, typed (the
/// two have the same physical type).
pub(super) fn copy_positions(
    out: &mut ValueVector,
    ctx: &EvalContext,
    m: Mode,
    src: &ValueVector,
) -> Mode {
    match m {
        Mode::Flat(p) => {
            out.reset(1);
            out.copy_from(0, src, p);
            Mode::Flat(0)
        }
        Mode::Unflat(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            out.reset(state.len);
            each_pos!(state, p => { out.copy_from(p, src, p); });
            Mode::Unflat(u)
        }
    }
}

/// `size()` over an unflat group of list values (or NULLs), written
/// straight into the INT64 output; None (nothing written) when any value is
/// something else (a string's size is its length in characters, see the
/// function library) or the vectors are not of these kinds.
pub(super) fn list_sizes(
    out: &mut ValueVector,
    ctx: &EvalContext,
    u: usize,
    src: &ValueVector,
) -> Option<Mode> {
    let VectorData::Value(values) = &src.data else {
        return None;
    };
    if !matches!(out.data, VectorData::I64(_)) {
        return None;
    }
    let state: &ChunkState = &ctx.rs.chunks[u].state;
    let mut lists_only = true;
    each_pos!(state, p => {
        lists_only &= src.is_null(p) || matches!(values[p], Value::List(_) | Value::Null);
    });
    if !lists_only {
        return None;
    }
    out.reset(state.len);
    each_pos!(state, p => {
        match &values[p] {
            // A NULL slot's value may be a stale one.
            Value::List(l) if !src.is_null(p) => {
                if let VectorData::I64(o) = &mut out.data {
                    o[p] = l.len() as i64;
                }
            }
            _ => out.set_null(p, true),
        }
    });
    Some(Mode::Unflat(u))
}

/// Computes `f(p)` for every tuple position: once (at 0) when all inputs are
/// flat, else at each selected position of the unflat chunk.
pub(super) fn map_rows(
    out: &mut ValueVector,
    ctx: &EvalContext,
    modes: &[Mode],
    mut f: impl FnMut(usize) -> Result<Value>,
) -> Result<Mode> {
    match unflat_of(modes)? {
        None => {
            out.reset(1);
            let v = f(0)?;
            out.put_value(0, v);
            Ok(Mode::Flat(0))
        }
        Some(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            out.reset(state.len);
            each_pos!(state, p => {
                let v = f(p)?;
                out.put_value(p, v);
            });
            Ok(Mode::Unflat(u))
        }
    }
}

/// `NOT` of a boolean vector and `IS [NOT] NULL` of any vector over an
/// unflat group, written straight into the boolean output (`NOT EXISTS {
/// ... }` over every node went through a `Value` per node). None for the
/// other cases, which go value by value.
pub(super) fn bool_unary(
    out: &mut ValueVector,
    ctx: &EvalContext,
    op: UnaryOp,
    m: Mode,
    src: &ValueVector,
) -> Option<Mode> {
    let Mode::Unflat(u) = m else {
        return None;
    };
    if out.ty != LogicalType::Bool
        || !matches!(op, UnaryOp::Not | UnaryOp::IsNull | UnaryOp::IsNotNull)
    {
        return None;
    }
    let input = match (&src.data, op) {
        (VectorData::Bool(b), UnaryOp::Not) => Some(b.as_slice()),
        (_, UnaryOp::Not) => return None,
        _ => None,
    };
    let state: &ChunkState = &ctx.rs.chunks[u].state;
    out.reset(state.len);
    let VectorData::Bool(o) = &mut out.data else {
        return None;
    };
    let nulls = src.nulls.may_have_nulls();
    match input {
        // Every position: one loop over slices cut to the length, which
        // vectorizes.
        Some(b) => match (&state.sel, b.get(..state.len), o.get_mut(..state.len)) {
            (None, Some(b), Some(o)) => o.iter_mut().zip(b).for_each(|(o, b)| *o = !b),
            _ => each_pos!(state, p => { o[p] = !b[p]; }),
        },
        None => {
            let is_null = op == UnaryOp::IsNull;
            each_pos!(state, p => { o[p] = (nulls && src.is_null(p)) == is_null; });
        }
    }
    if nulls && op == UnaryOp::Not {
        each_pos!(state, p => {
            if src.is_null(p) {
                out.set_null(p, true);
            }
        });
    }
    Some(Mode::Unflat(u))
}

/// A function argument's vector ([`Node::arg`]).
pub(super) enum Arg<'a> {
    Shared(&'a ValueVector),
    Owned(&'a mut ValueVector),
}

impl Arg<'_> {
    pub(super) fn get(&self, p: usize) -> Value {
        match self {
            Arg::Shared(v) => v.get_value(p),
            Arg::Owned(v) => v.get_value(p),
        }
    }

    /// The value at `p`, moved out of an argument's own vector (a list
    /// is not copied element by element to be read once).
    pub(super) fn take(&mut self, p: usize) -> Value {
        match self {
            Arg::Shared(v) => v.get_value(p),
            Arg::Owned(v) => v.take_value(p),
        }
    }
}

/// Copies one value, converting when the vector types differ.
pub(super) fn copy_value(
    dst: &mut ValueVector,
    dp: usize,
    src: &ValueVector,
    sp: usize,
) -> Result<()> {
    if dst.ty == src.ty {
        dst.copy_from(dp, src, sp);
    } else {
        let v = coerce(src.get_value(sp), &dst.ty)?;
        dst.set_value(dp, &v);
    }
    Ok(())
}

/// The mode of a value-at-a-time node reading `slots`: the unflat chunk
/// among them, or flat.
pub(super) fn slots_mode(ctx: &EvalContext, slots: &[SlotId]) -> Result<Mode> {
    let mut unflat = None;
    for s in slots {
        let (c, _) = ctx.layout.get(*s).ok_or_else(|| {
            Error::internal(format!("slot {} is not in the result set layout", s.0))
        })?;
        if !ctx.rs.chunks[c].state.is_flat() {
            unflat = Some(c);
        }
    }
    Ok(unflat.map_or(Mode::Flat(0), Mode::Unflat))
}
