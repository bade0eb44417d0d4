//! CREATE: new nodes and rels inserted a batch at a time, and the property
//! rows (and implicit columns) that new entities need.

use std::collections::{BTreeMap, HashMap};

use kith_catalog::TableEntry;
use kith_common::{Error, InternalId, Result, TableId, Value};
use kith_planner::bound::{CreateNode, CreateRel};
use kith_storage::WriteTxn;

use super::implicit_schema::{self, entry};
use super::resolve::resolve;
use super::{ClauseCtx, Node};

/// `CREATE`: the new nodes (in pattern order), then the rels between them
/// and matched nodes.
pub(super) fn apply_create(
    ctx: ClauseCtx<'_, '_>,
    nodes: &[CreateNode],
    rels: &[CreateRel],
) -> Result<()> {
    let ClauseCtx {
        txn,
        rows,
        env,
        rel_env,
        ..
    } = ctx;
    for n in nodes {
        create_nodes(txn, n, rows, env)?;
    }
    for r in rels {
        create_rels(txn, r, rows, env, rel_env)?;
    }
    Ok(())
}

/// Inserts one node per input row (one batch) and records it under its variable.
pub(super) fn create_nodes(
    txn: &mut WriteTxn<'_>,
    n: &CreateNode,
    rows: &[Vec<Value>],
    env: &mut [HashMap<String, Node>],
) -> Result<()> {
    let table = implicit_schema::node_table(txn, &n.table)?;
    ensure_properties(txn, table, &n.properties, rows, &vec![true; rows.len()])?;
    let labels = if n.labels.is_empty() {
        None
    } else {
        Some(implicit_schema::label_column(txn, table, &n.labels)?)
    };
    let e = entry(txn, table)?;
    let mut values: Vec<Vec<Value>> = rows
        .iter()
        .map(|row| property_row(&e, &n.properties, row))
        .collect::<Result<_>>()?;
    if let Some(p) = labels {
        let i = e
            .properties
            .iter()
            .position(|q| q.id == p)
            .ok_or_else(|| Error::internal("label column missing"))?;
        let list = Value::list(n.labels.iter().map(|l| Value::String(l.clone())).collect());
        for v in &mut values {
            v[i] = list.clone();
        }
    }
    let offsets = txn.insert_nodes(table, &values)?;
    for (env, o) in env.iter_mut().zip(offsets) {
        env.insert(n.var.clone(), (table, o));
    }
    Ok(())
}

/// Inserts one rel per input row; rows are grouped by the rel table their
/// endpoints' tables select (several for an implicit rel type).
pub(super) fn create_rels(
    txn: &mut WriteTxn<'_>,
    r: &CreateRel,
    rows: &[Vec<Value>],
    env: &[HashMap<String, Node>],
    rel_env: &mut [HashMap<String, [InternalId; 3]>],
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
        let ids = txn.insert_rels(table, &src, &dst, &props)?;
        if let Some(var) = &r.var {
            for ((&i, id), (s, d)) in idx.iter().zip(ids).zip(src.iter().zip(&dst)) {
                rel_env[i].insert(
                    var.clone(),
                    [
                        InternalId::new(table, id),
                        InternalId::new(info.src, *s),
                        InternalId::new(info.dst, *d),
                    ],
                );
            }
        }
    }
    Ok(())
}

/// One row of values for every catalog property of `entry` (NULL where not given).
pub(super) fn property_row(
    entry: &TableEntry,
    props: &[(String, usize)],
    row: &[Value],
) -> Result<Vec<Value>> {
    let mut out = vec![Value::Null; entry.properties.len()];
    for (name, col) in props {
        match entry.property_index(name) {
            Some(i) => out[i] = row[*col].clone(),
            // Writing NULL is leaving the property out (a schema-less table
            // gains no column for a value that is only ever NULL).
            None if row[*col].is_null() => {}
            None => {
                return Err(Error::runtime(format!(
                    "table '{}' has no property '{name}'",
                    entry.name
                )))
            }
        }
    }
    Ok(out)
}

/// Adds the columns implicit table `table` lacks for `props` (values from
/// the rows with `which` set).
pub(super) fn ensure_properties(
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
