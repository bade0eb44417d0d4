//! Runs statements with writing clauses: the reading part on the write
//! transaction's base version, then every clause through the storage write
//! path, then commit. Any error drops the transaction (rollback), so a
//! statement is atomic.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kith_catalog::TableEntry;
use kith_common::{Error, Result, TableId, Value};
use kith_planner::bound::{BoundWrite, CreateNode, NodeRef, RelRef, SetTarget, WriteClause};
use kith_sched::CancelToken;
use kith_storage::WriteTxn;

use crate::database::{Connection, Settings};
use crate::result::QueryResult;

/// A node as (table, offset); created nodes per input row by variable.
type Node = (TableId, u64);
type Env = Vec<HashMap<String, Node>>;

pub(crate) fn run_write(
    conn: &Connection,
    w: BoundWrite,
    params: &HashMap<String, Value>,
    settings: &Settings,
    cancel: &CancelToken,
) -> Result<QueryResult> {
    let storage = &conn.db.storage;
    let mut txn = storage.begin_write()?;
    let base = Arc::clone(txn.base());
    let plan = kith_planner::planner::plan_query(w.query, &base.catalog, &|t| base.cardinality(t))?;
    let chunks = crate::statement::execute_plan(conn, &plan, &base, params, cancel, settings)?;
    let mut rows: Vec<Vec<Value>> = Vec::new();
    for c in &chunks {
        for r in 0..c.num_rows {
            rows.push(c.columns.iter().map(|col| col.get_value(r)).collect());
        }
    }
    let mut env: Env = vec![HashMap::new(); rows.len()];
    for clause in &w.clauses {
        apply(&mut txn, clause, &rows, &mut env)?;
    }
    txn.commit()?;
    Ok(QueryResult {
        silent: true,
        ..QueryResult::default()
    })
}

fn entry(txn: &WriteTxn<'_>, table: TableId) -> Result<TableEntry> {
    txn.catalog
        .table(table)
        .cloned()
        .ok_or_else(|| Error::internal(format!("no table with id {}", table.0)))
}

fn property_id(entry: &TableEntry, name: &str) -> Result<kith_catalog::PropertyId> {
    entry
        .property(name)
        .map(|p| p.id)
        .ok_or_else(|| Error::runtime(format!("table '{}' has no property '{name}'", entry.name)))
}

/// The node `r` refers to in row `row` (None: NULL).
fn resolve(r: &NodeRef, row: &[Value], env: &HashMap<String, Node>) -> Result<Option<Node>> {
    match r {
        NodeRef::Created(v) => env
            .get(v)
            .copied()
            .map(Some)
            .ok_or_else(|| Error::internal(format!("created node '{v}' missing"))),
        NodeRef::Column(c) => match &row[*c] {
            Value::Null => Ok(None),
            Value::InternalId(id) => Ok(Some((id.table(), id.offset()))),
            other => Err(Error::runtime(format!("{other} is not a node"))),
        },
    }
}

/// (table, src, dst, rel id) of a matched rel (None: NULL).
fn resolve_rel(r: &RelRef, row: &[Value]) -> Result<Option<(TableId, u64, u64, u64)>> {
    let (Value::InternalId(id), Value::InternalId(s), Value::InternalId(d)) =
        (&row[r.rel], &row[r.src], &row[r.dst])
    else {
        return Ok(None);
    };
    Ok(Some((id.table(), s.offset(), d.offset(), id.offset())))
}

/// One row of values for every catalog property of `entry` (NULL where not given).
fn property_row(
    entry: &TableEntry,
    props: &[(String, usize)],
    row: &[Value],
) -> Result<Vec<Value>> {
    let mut out = vec![Value::Null; entry.properties.len()];
    for (name, col) in props {
        let i = entry.property_index(name).ok_or_else(|| {
            Error::runtime(format!("table '{}' has no property '{name}'", entry.name))
        })?;
        out[i] = row[*col].clone();
    }
    Ok(out)
}

fn set_node(
    txn: &mut WriteTxn<'_>,
    (table, offset): Node,
    name: &str,
    value: &Value,
) -> Result<()> {
    let e = entry(txn, table)?;
    let p = property_id(&e, name)?;
    txn.update_node_property(table, offset, p, value)
}

fn apply(
    txn: &mut WriteTxn<'_>,
    clause: &WriteClause,
    rows: &[Vec<Value>],
    env: &mut Env,
) -> Result<()> {
    match clause {
        WriteClause::Create { nodes, rels } => {
            for n in nodes {
                create_nodes(txn, n, rows, env)?;
            }
            for r in rels {
                let e = entry(txn, r.table)?;
                let info = e
                    .rel_info()
                    .ok_or_else(|| Error::internal("rel table without rel info"))?
                    .clone();
                let mut src = Vec::with_capacity(rows.len());
                let mut dst = Vec::with_capacity(rows.len());
                let mut props = Vec::with_capacity(rows.len());
                for (row, env) in rows.iter().zip(env.iter()) {
                    for (side, nref, want, out) in [
                        ("source", &r.src, info.src, &mut src),
                        ("destination", &r.dst, info.dst, &mut dst),
                    ] {
                        let Some((t, o)) = resolve(nref, row, env)? else {
                            return Err(Error::runtime(format!(
                                "cannot create a rel in '{}': its {side} node is NULL",
                                e.name
                            )));
                        };
                        if t != want {
                            let want_name = entry(txn, want)?.name;
                            let got = entry(txn, t)?.name;
                            return Err(Error::runtime(format!(
                                "cannot create a rel in '{}': its {side} must be a '{want_name}' node, not '{got}'",
                                e.name
                            )));
                        }
                        out.push(o);
                    }
                    props.push(property_row(&e, &r.properties, row)?);
                }
                txn.insert_rels(r.table, &src, &dst, &props)?;
            }
        }
        WriteClause::MergeNode {
            node,
            on_create,
            on_match,
        } => {
            let e = entry(txn, node.table)?;
            for (row, env) in rows.iter().zip(env.iter_mut()) {
                let key = &row[node.properties[0].1];
                if key.is_null() {
                    return Err(Error::runtime(format!(
                        "cannot MERGE a '{}' node with a NULL primary key",
                        e.name
                    )));
                }
                let offset = match txn.lookup_pk(node.table, key)? {
                    Some(o) => {
                        for (name, col) in on_match {
                            set_node(txn, (node.table, o), name, &row[*col])?;
                        }
                        o
                    }
                    None => {
                        let mut props = node.properties.clone();
                        props.extend(on_create.iter().cloned());
                        let values = property_row(&e, &props, row)?;
                        txn.insert_nodes(node.table, &[values])?[0]
                    }
                };
                env.insert(node.var.clone(), (node.table, offset));
            }
        }
        WriteClause::Set(items) => {
            for (row, env) in rows.iter().zip(env.iter()) {
                for s in items {
                    let value = &row[s.value];
                    match &s.target {
                        SetTarget::Node(n) => {
                            if let Some(node) = resolve(n, row, env)? {
                                set_node(txn, node, &s.property, value)?;
                            }
                        }
                        SetTarget::Rel(r) => {
                            if let Some((t, src, dst, id)) = resolve_rel(r, row)? {
                                let e = entry(txn, t)?;
                                let p = property_id(&e, &s.property)?;
                                txn.update_rel_property(t, src, dst, id, p, value)?;
                            }
                        }
                    }
                }
            }
        }
        WriteClause::Delete {
            detach,
            nodes,
            rels,
        } => {
            let mut rel_del: BTreeMap<TableId, BTreeMap<u64, (u64, u64)>> = BTreeMap::new();
            let mut node_del: BTreeMap<TableId, Vec<u64>> = BTreeMap::new();
            for (row, env) in rows.iter().zip(env.iter()) {
                for r in rels {
                    if let Some((t, s, d, id)) = resolve_rel(r, row)? {
                        rel_del.entry(t).or_default().insert(id, (s, d));
                    }
                }
                for n in nodes {
                    if let Some((t, o)) = resolve(n, row, env)? {
                        node_del.entry(t).or_default().push(o);
                    }
                }
            }
            for (t, ids) in rel_del {
                let list: Vec<(u64, u64, u64)> =
                    ids.into_iter().map(|(id, (s, d))| (s, d, id)).collect();
                txn.delete_rels(t, &list)?;
            }
            for (t, offsets) in node_del {
                txn.delete_nodes(t, &offsets, *detach)?;
            }
        }
    }
    Ok(())
}

/// Inserts one node per input row (one batch) and records it under its variable.
fn create_nodes(
    txn: &mut WriteTxn<'_>,
    n: &CreateNode,
    rows: &[Vec<Value>],
    env: &mut Env,
) -> Result<()> {
    let e = entry(txn, n.table)?;
    let values: Vec<Vec<Value>> = rows
        .iter()
        .map(|row| property_row(&e, &n.properties, row))
        .collect::<Result<_>>()?;
    let offsets = txn.insert_nodes(n.table, &values)?;
    for (env, o) in env.iter_mut().zip(offsets) {
        env.insert(n.var.clone(), (n.table, o));
    }
    Ok(())
}
