//! SET and REMOVE: properties (one at a time or a whole map) and labels of
//! nodes and rels.

use std::collections::HashMap;

use kith_catalog::TableEntry;
use kith_common::{Error, InternalId, Result, TableId, Value};
use kith_planner::bound::{NodeRef, RelRef, SetProperty, SetTarget};
use kith_storage::WriteTxn;

use super::implicit_schema::{self, entry};
use super::resolve::{oriented_rel, resolve, resolve_rel, RelKey};
use super::{ClauseCtx, Node};

/// `SET x.p = v, ...`: each item on each row's entity (none where NULL).
pub(super) fn apply_set(ctx: ClauseCtx<'_, '_>, items: &[SetProperty]) -> Result<()> {
    let ClauseCtx {
        txn,
        rows,
        env,
        rel_env,
        ..
    } = ctx;
    for (i, (row, env)) in rows.iter().zip(env.iter()).enumerate() {
        for s in items {
            let value = &row[s.value];
            match set_entity(txn, &s.target, row, env, rel_env.get(i))? {
                Some(Entity::Node(node)) => set_node(txn, node, &s.property, value)?,
                Some(Entity::Rel(rel)) => set_rel(txn, rel, &s.property, value)?,
                None => {}
            }
        }
    }
    Ok(())
}

/// `SET n:A:B` (`remove`: `REMOVE n:A:B`) on each row's node.
pub(super) fn apply_set_labels(
    ctx: ClauseCtx<'_, '_>,
    node: &NodeRef,
    labels: &[String],
    remove: bool,
) -> Result<()> {
    let ClauseCtx { txn, rows, env, .. } = ctx;
    for (row, env) in rows.iter().zip(env.iter()) {
        if let Some(n) = resolve(node, row, env)? {
            set_labels(txn, n, labels, remove)?;
        }
    }
    Ok(())
}

/// `SET x = map` (`replace`: other properties become NULL) and
/// `SET x += map`, the map from input column `value` of each row.
pub(super) fn apply_set_map(
    ctx: ClauseCtx<'_, '_>,
    target: &SetTarget,
    value: usize,
    replace: bool,
) -> Result<()> {
    let ClauseCtx {
        txn,
        rows,
        env,
        rel_env,
        ..
    } = ctx;
    for (i, (row, env)) in rows.iter().zip(env.iter()).enumerate() {
        let entries: Vec<(String, Value)> = match &row[value] {
            Value::Map(m) => m
                .iter()
                .map(|(k, v)| (k.as_str().unwrap_or_default().to_string(), v.clone()))
                .collect(),
            Value::Struct(f) => f.clone(),
            Value::Node(n) => n.properties.to_vec(),
            Value::Rel(r) => r.properties.to_vec(),
            Value::Null => Vec::new(),
            other => {
                return Err(Error::type_error(format!(
                    "SET expects a map of properties, got {}",
                    other.logical_type()
                )))
            }
        };
        let Some(target) = set_entity(txn, target, row, env, rel_env.get(i))? else {
            continue;
        };
        if replace {
            let e = entry(txn, target.table())?;
            let pk = e.primary_key().map(|p| p.id);
            for p in &e.properties {
                let keep = kith_catalog::is_hidden(&p.name)
                    || Some(p.id) == pk
                    || entries.iter().any(|(k, _)| *k == p.name);
                if !keep {
                    target.set(txn, &p.name, &Value::Null)?;
                }
            }
        }
        for (k, v) in &entries {
            target.set(txn, k, v)?;
        }
    }
    Ok(())
}

/// The entity a SET target names in one row (None: NULL).
fn set_entity(
    txn: &mut WriteTxn<'_>,
    target: &SetTarget,
    row: &[Value],
    env: &HashMap<String, Node>,
    rel_env: Option<&HashMap<String, [InternalId; 3]>>,
) -> Result<Option<Entity>> {
    Ok(match target {
        SetTarget::Node(n) => resolve(n, row, env)?.map(Entity::Node),
        SetTarget::Rel(r) => rel_to_set(txn, r, row)?.map(Entity::Rel),
        SetTarget::CreatedRel(name) => {
            let [rel, src, dst] = *rel_env
                .and_then(|e| e.get(name))
                .ok_or_else(|| Error::internal(format!("created rel '{name}' not bound")))?;
            Some(Entity::Rel((
                rel.table(),
                src.offset(),
                dst.offset(),
                rel.offset(),
            )))
        }
    })
}

/// The rel a SET writes to; an error once it was deleted.
fn rel_to_set(txn: &mut WriteTxn<'_>, r: &RelRef, row: &[Value]) -> Result<Option<RelKey>> {
    let rel = match r.oriented {
        true => oriented_rel(txn, r, row),
        false => resolve_rel(txn, r, row)?,
    };
    match rel {
        None => Ok(None),
        Some((key, true)) => Ok(Some(key)),
        Some(((t, _, _, id), false)) => Err(Error::runtime(format!(
            "cannot set a property of rel {}: it was deleted (EntityNotFound)",
            InternalId::new(t, id)
        ))),
    }
}

fn property_id(entry: &TableEntry, name: &str) -> Result<kith_catalog::PropertyId> {
    entry
        .property(name)
        .map(|p| p.id)
        .ok_or_else(|| Error::runtime(format!("table '{}' has no property '{name}'", entry.name)))
}

pub(super) fn set_node(
    txn: &mut WriteTxn<'_>,
    node: Node,
    name: &str,
    value: &Value,
) -> Result<()> {
    Entity::Node(node).set(txn, name, value)
}

/// The node or rel a SET of a whole map writes to.
enum Entity {
    Node(Node),
    /// (table, src, dst, rel id)
    Rel((TableId, u64, u64, u64)),
}

impl Entity {
    fn table(&self) -> TableId {
        match self {
            Entity::Node(n) => n.0,
            Entity::Rel(r) => r.0,
        }
    }

    /// `SET x.name = value`; an implicit table gains the column (or widens
    /// it) first.
    fn set(&self, txn: &mut WriteTxn<'_>, name: &str, value: &Value) -> Result<()> {
        let table = self.table();
        if value.is_null() && entry(txn, table)?.property(name).is_none() {
            // Removing a property an implicit table never had: nothing to do.
            return Ok(());
        }
        implicit_schema::ensure_property(txn, table, name, std::iter::once(value))?;
        let p = property_id(&entry(txn, table)?, name)?;
        match *self {
            Entity::Node((t, offset)) => txn.update_node_property(t, offset, p, value),
            Entity::Rel((t, src, dst, id)) => txn.update_rel_property(t, src, dst, id, p, value),
        }
    }
}

/// `SET r.name = value` on rel (table, src, dst, id).
fn set_rel(
    txn: &mut WriteTxn<'_>,
    rel: (TableId, u64, u64, u64),
    name: &str,
    value: &Value,
) -> Result<()> {
    Entity::Rel(rel).set(txn, name, value)
}

/// The labels node `(table, offset)` carries: its table's label and any
/// extra ones (the hidden label column, where set).
pub(super) fn node_labels(txn: &mut WriteTxn<'_>, (table, offset): Node) -> Result<Vec<String>> {
    let e = entry(txn, table)?;
    let default = || {
        if e.label.is_empty() {
            Vec::new()
        } else {
            vec![e.label.clone()]
        }
    };
    Ok(match e.property(kith_catalog::LABELS_KEY) {
        Some(p) => match txn.read_node_property(table, offset, p.id)? {
            Value::List(l) => l
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => default(),
        },
        None => default(),
    })
}

/// `SET n:A:B` / `REMOVE n:A:B` on one node: its label list (the table's
/// label unless it has its own) gains or loses the labels; a list equal to
/// the table's is stored as NULL.
pub(super) fn set_labels(
    txn: &mut WriteTxn<'_>,
    (table, offset): Node,
    labels: &[String],
    remove: bool,
) -> Result<()> {
    let e = entry(txn, table)?;
    let default: Vec<String> = if e.label.is_empty() {
        Vec::new()
    } else {
        vec![e.label.clone()]
    };
    let current = node_labels(txn, (table, offset))?;
    let mut next = current.clone();
    for l in labels {
        if remove {
            next.retain(|x| x != l);
        } else if !next.contains(l) {
            next.push(l.clone());
        }
    }
    if next == current {
        return Ok(());
    }
    let value = if next == default {
        Value::Null
    } else {
        Value::list(next.iter().map(|l| Value::String(l.clone())).collect())
    };
    let p = implicit_schema::label_column(txn, table, &next)?;
    txn.update_node_property(table, offset, p, &value)
}
