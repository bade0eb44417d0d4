//! Which stored node or rel a clause's reference names in one input row,
//! and which way a rel matched without a direction points.

use std::collections::HashMap;

use kith_common::{Error, InternalId, Result, TableId, Value};
use kith_planner::bound::{NodeRef, RelRef};
use kith_storage::WriteTxn;

use super::implicit_schema::entry;
use super::Node;

/// The node `r` refers to in row `row` (None: NULL).
pub(super) fn resolve(
    r: &NodeRef,
    row: &[Value],
    env: &HashMap<String, Node>,
) -> Result<Option<Node>> {
    match r {
        NodeRef::Created(v) => env
            .get(v)
            .copied()
            .map(Some)
            .ok_or_else(|| Error::internal(format!("created node '{v}' missing"))),
        NodeRef::Column(c) => match &row[*c] {
            Value::Null => Ok(None),
            Value::InternalId(id) => Ok(Some((id.table(), id.offset()))),
            // A node carried as a value (`UNWIND collect(n) AS m SET m.x = 1`).
            Value::Node(n) => Ok(Some((n.id.table(), n.id.offset()))),
            other => Err(Error::runtime(format!("{other} is not a node"))),
        },
    }
}

/// A rel as (table, src offset, dst offset, rel id).
pub(super) type RelKey = (TableId, u64, u64, u64);

/// The rel `r` refers to in `row`, oriented (a rel matched without a
/// direction comes with its end nodes in either order), and whether it
/// still exists (None: NULL).
pub(super) fn resolve_rel(
    txn: &mut WriteTxn<'_>,
    r: &RelRef,
    row: &[Value],
) -> Result<Option<(RelKey, bool)>> {
    let (Value::InternalId(id), Value::InternalId(a), Value::InternalId(b)) =
        (&row[r.rel], &row[r.src], &row[r.dst])
    else {
        return Ok(None);
    };
    orient_rel(txn, *id, *a, *b).map(Some)
}

/// The rel a directed match bound in `row`, and whether it still exists: it
/// did when the statement read it, so only this transaction can have deleted
/// it since (rel ids are not reused).
pub(super) fn oriented_rel(
    txn: &WriteTxn<'_>,
    r: &RelRef,
    row: &[Value],
) -> Option<(RelKey, bool)> {
    match (&row[r.rel], &row[r.src], &row[r.dst]) {
        (Value::InternalId(id), Value::InternalId(s), Value::InternalId(d)) => {
            let (t, id) = (id.table(), id.offset());
            Some(((t, s.offset(), d.offset(), id), !txn.rel_deleted(t, id)))
        }
        _ => None,
    }
}

/// Rel `id` between nodes `a` and `b` as (src, dst) (see [`rel_swapped`]);
/// `(a, b)` and false when it leaves neither (deleted).
pub(super) fn orient_rel(
    txn: &mut WriteTxn<'_>,
    id: InternalId,
    a: InternalId,
    b: InternalId,
) -> Result<(RelKey, bool)> {
    let t = id.table();
    Ok(match rel_swapped(txn, id, a, b)? {
        Some(false) => ((t, a.offset(), b.offset(), id.offset()), true),
        Some(true) => ((t, b.offset(), a.offset(), id.offset()), true),
        None => ((t, a.offset(), b.offset(), id.offset()), false),
    })
}

/// Whether rel `id` between nodes `a` and `b` goes from `b` to `a`: the
/// order whose tables fit the rel table and whose source the rel leaves
/// (None: it leaves neither, it was deleted).
pub fn rel_swapped(
    txn: &mut WriteTxn<'_>,
    id: InternalId,
    a: InternalId,
    b: InternalId,
) -> Result<Option<bool>> {
    let table = id.table();
    let e = entry(txn, table)?;
    let info = e
        .rel_info()
        .ok_or_else(|| Error::internal(format!("'{}' is not a rel table", e.name)))?
        .clone();
    for (s, d, swapped) in [(a, b, false), (b, a, true)] {
        if s.table() == info.src
            && d.table() == info.dst
            && txn.rel_leaves(table, s.offset(), id.offset())?
        {
            return Ok(Some(swapped));
        }
    }
    Ok(None)
}
