//! Reading subquery results and procedures from an expression: the table
//! a subquery filled, probes by key, path counts, procedure calls.

use super::*;

/// The table of subquery `index` (run before the plan's first part).
pub(super) fn subquery_table<'a>(
    ctx: &EvalContext<'a>,
    index: usize,
) -> Result<&'a crate::subquery::SubqueryTable> {
    ctx.subqueries.get(index).ok_or_else(|| {
        Error::not_supported(
            "a subquery (EXISTS, COUNT or a pattern) in this clause is not supported yet",
        )
    })
}

/// `size()` of a path's nodes or rels as [`PathCount`] says, for one path
/// value (NULL for NULL): what the lists `nodes()` / `rels()` and the
/// slice would give.
pub(super) fn count_path(count: PathCount, v: &Value) -> Result<Value> {
    let n = match v {
        Value::Null => return Ok(Value::Null),
        Value::Path(p) if count.rels => p.rel_count() as i64,
        Value::Path(p) => p.node_count() as i64,
        other => {
            return Err(Error::type_error(format!(
                "{}() expects a PATH, got {}",
                if count.rels { "relationships" } else { "nodes" },
                other.logical_type()
            )))
        }
    };
    Ok(Value::Int64(match count.slice {
        None => n,
        Some((from, to)) => {
            let bound = |b: Option<i64>, default: i64| {
                let i = b.unwrap_or(default);
                let i = if i < 0 { i.saturating_add(n) } else { i };
                i.clamp(0, n)
            };
            (bound(to, n) - bound(from, 0)).max(0)
        }
    }))
}

/// A one-key subquery probe of `keys` (ids at mode `m`) into a table
/// held by offset: booleans (count above 0) or integers into `out`,
/// whichever type it has; NULL for a NULL key. The counts come a batch at
/// a time, so the writes are one typed loop.
pub(super) fn probe_counts(
    out: &mut ValueVector,
    ctx: &EvalContext,
    m: Mode,
    keys: &ValueVector,
    table: &SubqueryTable,
    probe: &mut SubqueryProbe,
) -> Result<Mode> {
    let VectorData::Id(ids) = &keys.data else {
        return Err(Error::internal("subquery key is not an id vector"));
    };
    let nulls = keys.nulls.may_have_nulls();
    let positions = &mut probe.positions;
    positions.clear();
    let len = match m {
        Mode::Unflat(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            match (&state.sel, nulls) {
                (None, false) => positions.extend(0..state.len),
                (Some(sel), false) => positions.extend(sel.iter().map(|&p| p as usize)),
                (_, true) => each_pos!(state, p => {
                    if !keys.is_null(p) {
                        positions.push(p);
                    }
                }),
            }
            state.len
        }
        Mode::Flat(src) => {
            if !keys.is_null(src) {
                positions.push(src);
            }
            src + 1
        }
    };
    let counts = probe.counts.counts(table, ids, positions, len)?;
    let other = || Error::internal("subquery count of another type");
    match m {
        Mode::Unflat(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            out.reset(state.len);
            let n = state.len;
            match (&mut out.data, &state.sel) {
                (VectorData::Bool(b), None) => {
                    b[..n].iter_mut().zip(counts).for_each(|(b, &c)| *b = c > 0);
                }
                (VectorData::I64(x), None) => {
                    x[..n]
                        .iter_mut()
                        .zip(counts)
                        .for_each(|(x, &c)| *x = c as i64);
                }
                (VectorData::Bool(b), Some(_)) => each_pos!(state, p => { b[p] = counts[p] > 0; }),
                (VectorData::I64(x), Some(_)) => {
                    each_pos!(state, p => { x[p] = counts[p] as i64; })
                }
                _ => return Err(other()),
            }
            if nulls {
                each_pos!(state, p => {
                    if keys.is_null(p) {
                        out.set_null(p, true);
                    }
                });
            }
            Ok(Mode::Unflat(u))
        }
        Mode::Flat(src) => {
            out.reset(1);
            match &mut out.data {
                VectorData::Bool(b) => b[0] = counts[src] > 0,
                VectorData::I64(x) => x[0] = counts[src] as i64,
                _ => return Err(other()),
            }
            if keys.is_null(src) {
                out.set_null(0, true);
            }
            Ok(Mode::Flat(0))
        }
    }
}

/// The rows of one procedure call as a list of structs (one field per
/// output; one empty struct when the procedure has no outputs, so that an
/// in-query call keeps its row).
pub(super) fn call_procedure(procedure: &ProcedureRef, args: &[Value]) -> Result<Value> {
    let p = &procedure.0;
    let rows = p.call(args)?;
    if p.outputs.is_empty() {
        return Ok(Value::list(vec![Value::Struct(Vec::new())]));
    }
    Ok(Value::list(
        rows.into_iter()
            .map(|row| Value::Struct(p.outputs.iter().map(|c| c.name.clone()).zip(row).collect()))
            .collect(),
    ))
}
