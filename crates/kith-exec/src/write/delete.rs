//! DELETE: the nodes and rels one clause removes, collected over all rows
//! and then removed (rels first).

use std::collections::BTreeMap;

use kith_common::{Error, InternalId, Result, TableId, Value};
use kith_planner::bound::{NodeRef, RelRef};
use kith_storage::WriteTxn;

use super::implicit_schema::entry;
use super::resolve::{orient_rel, oriented_rel, resolve, resolve_rel, RelKey};
use super::ClauseCtx;

/// `[DETACH] DELETE`: every row's matched or created `nodes`, matched `rels`
/// and the entities in the input columns `values`.
pub(super) fn apply_delete(
    ctx: ClauseCtx<'_, '_>,
    detach: bool,
    nodes: &[NodeRef],
    rels: &[RelRef],
    values: &[usize],
) -> Result<()> {
    let ClauseCtx { txn, rows, env, .. } = ctx;
    let mut doomed = Doomed::default();
    for (row, env) in rows.iter().zip(env.iter()) {
        for r in rels {
            if let Some(rel) = rel_to_delete(txn, r, row)? {
                doomed.rel(rel);
            }
        }
        for n in nodes {
            if let Some((t, o)) = resolve(n, row, env)? {
                doomed.node(InternalId::new(t, o));
            }
        }
        for c in values {
            doomed.value(txn, &row[*c])?;
        }
    }
    doomed.apply(txn, detach)
}

/// The rel `r` refers to in `row` for DELETE: a directed match is oriented
/// already, and deleting a rel that is gone already removes nothing, so only
/// a rel matched without a direction pays the CSR scan of [`rel_swapped`]
/// (per rel, it made deleting a hub's rels quadratic in its degree).
fn rel_to_delete(
    txn: &mut WriteTxn<'_>,
    r: &RelRef,
    row: &[Value],
) -> Result<Option<(RelKey, bool)>> {
    if !r.oriented {
        return resolve_rel(txn, r, row);
    }
    Ok(oriented_rel(txn, r, row))
}

/// The nodes and rels one DELETE clause removes (rels first).
#[derive(Default)]
struct Doomed {
    /// table -> rel id -> (src, dst)
    rels: BTreeMap<TableId, BTreeMap<u64, (u64, u64)>>,
    nodes: BTreeMap<TableId, Vec<u64>>,
}

impl Doomed {
    fn rel(&mut self, ((t, s, d, id), exists): (RelKey, bool)) {
        // A rel deleted already (by an earlier clause) is skipped.
        if exists {
            self.rels.entry(t).or_default().insert(id, (s, d));
        }
    }

    fn node(&mut self, id: InternalId) {
        self.nodes.entry(id.table()).or_default().push(id.offset());
    }

    /// The entities of a DELETE expression's value: a node, a rel, every
    /// node and rel of a path; NULL deletes nothing.
    fn value(&mut self, txn: &mut WriteTxn<'_>, v: &Value) -> Result<()> {
        match v {
            Value::Null => {}
            Value::Node(n) => self.node(n.id),
            Value::Rel(r) => self.rel(orient_rel(txn, r.id, r.src, r.dst)?),
            Value::Path(p) => {
                for r in p.rels() {
                    self.rel(orient_rel(txn, r.id, r.src, r.dst)?);
                }
                for n in p.nodes() {
                    self.node(n.id);
                }
            }
            Value::InternalId(id) if entry(txn, id.table())?.is_node() => self.node(*id),
            Value::InternalId(_) => {
                return Err(Error::not_supported(
                    "DELETE of a rel computed in the deleting clause itself (not a rel variable or a value carried by WITH) is not supported yet",
                ))
            }
            other => {
                return Err(Error::type_error(format!(
                    "DELETE expects a node, rel or path, got {} value {other} (InvalidArgumentType)",
                    other.logical_type()
                )))
            }
        }
        Ok(())
    }

    fn apply(self, txn: &mut WriteTxn<'_>, detach: bool) -> Result<()> {
        for (t, ids) in self.rels {
            let list: Vec<(u64, u64, u64)> =
                ids.into_iter().map(|(id, (s, d))| (s, d, id)).collect();
            txn.delete_rels(t, &list)?;
        }
        for (t, offsets) in self.nodes {
            txn.delete_nodes(t, &offsets, detach)?;
        }
        Ok(())
    }
}
