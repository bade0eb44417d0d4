//! Runs statements with writing clauses: the reading part on the write
//! transaction's base version, then every clause through the storage write
//! path, then commit. Any error drops the transaction (rollback), so a
//! statement is atomic.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kith_catalog::TableEntry;
use kith_common::{Error, Result, TableId, Value};
use kith_planner::bound::{
    BoundWrite, CreateNode, CreateRel, NodeRef, RelRef, SetTarget, WriteClause, WriteTable,
};
use kith_sched::CancelToken;
use kith_storage::WriteTxn;

use crate::database::{Connection, Settings};
use crate::implicit_schema::{self, entry};
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
    // Auto-commit, or the connection's explicit transaction; the reading part
    // sees the transaction's own earlier writes.
    let mut txn = conn.write_txn()?;
    let base: Arc<kith_storage::Version> = txn.read_version()?;
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
    if value.is_null() && entry(txn, table)?.property(name).is_none() {
        // Removing a property an implicit table never had: nothing to do.
        return Ok(());
    }
    implicit_schema::ensure_property(txn, table, name, std::iter::once(value))?;
    let e = entry(txn, table)?;
    let p = property_id(&e, name)?;
    txn.update_node_property(table, offset, p, value)
}

/// Adds the columns implicit table `table` lacks for `props` (values from
/// the rows with `which` set).
fn ensure_properties(
    txn: &mut WriteTxn<'_>,
    table: TableId,
    props: &[(String, usize)],
    rows: &[Vec<Value>],
    which: &[bool],
) -> Result<()> {
    for (name, col) in props {
        let values = rows
            .iter()
            .zip(which)
            .filter(|(_, w)| **w)
            .map(|(r, _)| &r[*col]);
        implicit_schema::ensure_property(txn, table, name, values)?;
    }
    Ok(())
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
                create_rels(txn, r, rows, env)?;
            }
        }
        WriteClause::MergeNode {
            node,
            on_create,
            on_match,
        } => {
            let table = implicit_schema::node_table(txn, &node.table)?;
            let implicit = matches!(node.table, WriteTable::Implicit(_));
            for (row, env) in rows.iter().zip(env.iter_mut()) {
                let found = if implicit {
                    let mut probe = Vec::with_capacity(node.properties.len());
                    let e = entry(txn, table)?;
                    let mut absent = false;
                    for (name, col) in &node.properties {
                        match e.property(name) {
                            Some(p) => probe.push((p.id, row[*col].clone())),
                            None => absent = true,
                        }
                    }
                    if absent {
                        Vec::new()
                    } else {
                        txn.find_nodes(table, &probe)?
                    }
                } else {
                    let key = &row[node.properties[0].1];
                    if key.is_null() {
                        return Err(Error::runtime(format!(
                            "cannot MERGE a '{}' node with a NULL primary key",
                            entry(txn, table)?.name
                        )));
                    }
                    txn.lookup_pk(table, key)?.into_iter().collect()
                };
                let offset = match found.as_slice() {
                    [] => {
                        let mut props = node.properties.clone();
                        props.extend(on_create.iter().cloned());
                        ensure_properties(txn, table, &props, std::slice::from_ref(row), &[true])?;
                        let e = entry(txn, table)?;
                        let values = property_row(&e, &props, row)?;
                        txn.insert_nodes(table, &[values])?[0]
                    }
                    [o] => {
                        for (name, col) in on_match {
                            set_node(txn, (table, *o), name, &row[*col])?;
                        }
                        *o
                    }
                    several => {
                        return Err(Error::not_supported(format!(
                            "MERGE matched {} nodes; binding several matches is not supported yet",
                            several.len()
                        )))
                    }
                };
                env.insert(node.var.clone(), (table, offset));
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
                                if value.is_null() && entry(txn, t)?.property(&s.property).is_none()
                                {
                                    continue;
                                }
                                implicit_schema::ensure_property(
                                    txn,
                                    t,
                                    &s.property,
                                    std::iter::once(value),
                                )?;
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
    let table = implicit_schema::node_table(txn, &n.table)?;
    ensure_properties(txn, table, &n.properties, rows, &vec![true; rows.len()])?;
    let e = entry(txn, table)?;
    let values: Vec<Vec<Value>> = rows
        .iter()
        .map(|row| property_row(&e, &n.properties, row))
        .collect::<Result<_>>()?;
    let offsets = txn.insert_nodes(table, &values)?;
    for (env, o) in env.iter_mut().zip(offsets) {
        env.insert(n.var.clone(), (table, o));
    }
    Ok(())
}

/// Inserts one rel per input row; rows are grouped by the rel table their
/// endpoints' tables select (several for an implicit rel type).
fn create_rels(
    txn: &mut WriteTxn<'_>,
    r: &CreateRel,
    rows: &[Vec<Value>],
    env: &Env,
) -> Result<()> {
    // (src node, dst node) per row.
    let mut ends = Vec::with_capacity(rows.len());
    for (row, env) in rows.iter().zip(env.iter()) {
        let mut pair = [(TableId(0), 0u64); 2];
        for (i, (side, nref)) in [("source", &r.src), ("destination", &r.dst)]
            .into_iter()
            .enumerate()
        {
            let Some(node) = resolve(nref, row, env)? else {
                return Err(Error::runtime(format!(
                    "cannot create a rel: its {side} node is NULL"
                )));
            };
            pair[i] = node;
        }
        ends.push(pair);
    }
    let mut by_table: BTreeMap<TableId, Vec<usize>> = BTreeMap::new();
    for (i, [s, d]) in ends.iter().enumerate() {
        let t = implicit_schema::rel_table(txn, &r.table, s.0, d.0)?;
        by_table.entry(t).or_default().push(i);
    }
    for (table, idx) in by_table {
        let mut which = vec![false; rows.len()];
        for &i in &idx {
            which[i] = true;
        }
        ensure_properties(txn, table, &r.properties, rows, &which)?;
        let e = entry(txn, table)?;
        let info = e
            .rel_info()
            .ok_or_else(|| Error::internal("rel table without rel info"))?
            .clone();
        let mut src = Vec::with_capacity(idx.len());
        let mut dst = Vec::with_capacity(idx.len());
        let mut props = Vec::with_capacity(idx.len());
        for &i in &idx {
            let [s, d] = ends[i];
            for (side, (t, o), want, out) in [
                ("source", s, info.src, &mut src),
                ("destination", d, info.dst, &mut dst),
            ] {
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
            props.push(property_row(&e, &r.properties, &rows[i])?);
        }
        txn.insert_rels(table, &src, &dst, &props)?;
    }
    Ok(())
}
