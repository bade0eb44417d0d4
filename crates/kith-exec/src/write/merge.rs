//! MERGE of one node, or of one rel between bound nodes: the existing
//! matches (each bound, one row each) or else the new entity, then the
//! ON CREATE / ON MATCH items.

use std::collections::HashMap;

use kith_catalog::{PropertyId, TableEntry};
use kith_common::{Error, InternalId, Result, TableId, Value};
use kith_planner::bound::{CreateNode, CreateRel, MergeItems, MergeThen, WriteTable};
use kith_storage::{RelDirection, WriteTxn};

use super::create::{ensure_properties, property_row};
use super::implicit_schema::{self, entry};
use super::resolve::resolve;
use super::set::{node_labels, set_labels, set_node};
use super::{apply, ClauseCtx, Env, Node, RelEnv, Run};

/// `MERGE (n ...)`: per row, the nodes that match (ON MATCH items set on
/// each) or else a new node (with the ON CREATE items); then `then`.
pub(super) fn apply_merge_node(
    ctx: ClauseCtx<'_, '_>,
    node: &CreateNode,
    on_create: &[(String, usize)],
    on_match: &[(String, usize)],
    then: &MergeThen,
) -> Result<()> {
    let ClauseCtx {
        run,
        txn,
        rows,
        env,
        rel_env,
    } = ctx;
    let mut created: Vec<bool> = Vec::with_capacity(rows.len());
    let table = implicit_schema::node_table(txn, &node.table)?;
    let mut bound: Vec<Vec<Node>> = Vec::with_capacity(rows.len());
    for row in rows.iter() {
        check_merge_properties("node", &node.properties, row)?;
        let found = node_candidates(txn, node, table, row)?;
        if found.is_empty() {
            let mut props = node.properties.clone();
            props.extend(on_create.iter().cloned());
            ensure_properties(txn, table, &props, std::slice::from_ref(row), &[true])?;
            let e = entry(txn, table)?;
            let values = property_row(&e, &props, row)?;
            let new_node = (table, txn.insert_nodes(table, &[values])?[0]);
            if !node.labels.is_empty() {
                set_labels(txn, new_node, &node.labels, false)?;
            }
            created.push(true);
            bound.push(vec![new_node]);
        } else {
            // Every match is bound, one row each (ON MATCH on each).
            for &n in &found {
                for (name, col) in on_match {
                    set_node(txn, n, name, &row[*col])?;
                }
            }
            created.extend(std::iter::repeat_n(false, found.len()));
            bound.push(found);
        }
    }
    fan_out(rows, env, rel_env, bound, |env, _, &n| {
        env.insert(node.var.clone(), n);
    });
    apply_merge_then(run, txn, then, &created, rows, env, rel_env)
}

/// `MERGE (a)-[r ...]->(b)` between bound nodes: per row, the rels that
/// match or else a new one; then `then`.
pub(super) fn apply_merge_rel(
    ctx: ClauseCtx<'_, '_>,
    rel: &CreateRel,
    either_direction: bool,
    then: &MergeThen,
) -> Result<()> {
    let ClauseCtx {
        run,
        txn,
        rows,
        env,
        rel_env,
    } = ctx;
    let mut bound = Vec::with_capacity(rows.len());
    let mut created = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let (ids, new) = merge_rel(txn, rel, either_direction, row, &env[i])?;
        created.extend(std::iter::repeat_n(new, ids.len()));
        bound.push(ids);
    }
    fan_out(rows, env, rel_env, bound, |_, rel_env, ids| {
        if let Some(var) = &rel.var {
            rel_env.insert(var.clone(), *ids);
        }
    });
    apply_merge_then(run, txn, then, &created, rows, env, rel_env)
}

/// One row of `MERGE (a)-[r:T {..}]->(b)`: the first matching rel from a
/// to b (or b to a when `either`), else a new one; then the ON MATCH or ON
/// CREATE items.
fn merge_rel(
    txn: &mut WriteTxn<'_>,
    rel: &CreateRel,
    either: bool,
    row: &[Value],
    env: &HashMap<String, Node>,
) -> Result<(Vec<[InternalId; 3]>, bool)> {
    let (Some(src), Some(dst)) = (resolve(&rel.src, row, env)?, resolve(&rel.dst, row, env)?)
    else {
        return Err(Error::runtime("cannot MERGE a rel whose end node is NULL"));
    };
    check_merge_properties("rel", &rel.properties, row)?;
    let mut found: Vec<(TableId, Node, Node, u64)> = Vec::new();
    let tries: &[(Node, Node)] = if either {
        &[(src, dst), (dst, src)]
    } else {
        &[(src, dst)]
    };
    for &(s, d) in tries {
        let candidates: Vec<TableId> = match &rel.table {
            WriteTable::Declared(t) => vec![*t],
            WriteTable::Implicit(ty) => txn
                .catalog
                .rel_tables_typed(ty)
                .filter(|e| e.rel_info().is_some_and(|i| i.src == s.0 && i.dst == d.0))
                .map(|e| e.id)
                .collect(),
        };
        for t in candidates {
            let e = entry(txn, t)?;
            if e.rel_info().is_some_and(|i| i.src != s.0 || i.dst != d.0) {
                continue;
            }
            let Some(probe) = probe(&e, &rel.properties, row) else {
                continue;
            };
            for (_, id) in txn.find_rels(t, RelDirection::Fwd, s.1, Some(d.1), &probe)? {
                found.push((t, s, d, id));
            }
        }
        if s == d {
            // A self-loop would be found again in the other direction.
            break;
        }
    }
    let created = found.is_empty();
    let bindings = if !created {
        found
    } else {
        let table = implicit_schema::rel_table(txn, &rel.table, src.0, dst.0)?;
        ensure_properties(
            txn,
            table,
            &rel.properties,
            std::slice::from_ref(&row.to_vec()),
            &[true],
        )?;
        let e = entry(txn, table)?;
        let info = e
            .rel_info()
            .ok_or_else(|| Error::internal("rel table without rel info"))?;
        if info.src != src.0 || info.dst != dst.0 {
            return Err(Error::runtime(format!(
                "cannot MERGE a rel in '{}': its endpoints are of other tables",
                e.name
            )));
        }
        let props = property_row(&e, &rel.properties, row)?;
        let id = txn.insert_rels(table, &[src.1], &[dst.1], &[props])?[0];
        vec![(table, src, dst, id)]
    };
    let out = bindings
        .into_iter()
        .map(|(table, s, d, id)| {
            [
                InternalId::new(table, id),
                InternalId::new(s.0, s.1),
                InternalId::new(d.0, d.1),
            ]
        })
        .collect();
    Ok((out, created))
}

/// NULL never equals anything, so a MERGE with a NULL property could only
/// ever create (openCypher refuses it).
pub(super) fn check_merge_properties(
    what: &str,
    props: &[(String, usize)],
    row: &[Value],
) -> Result<()> {
    match props.iter().find(|(_, c)| row[*c].is_null()) {
        Some((name, _)) => Err(Error::runtime(format!(
            "cannot MERGE a {what} whose property '{name}' is NULL"
        ))),
        None => Ok(()),
    }
}

/// `props` (name -> input column) as property ids of table `e`; None when
/// `e` lacks one of them (then it matches nothing there).
pub(super) fn probe(
    e: &TableEntry,
    props: &[(String, usize)],
    row: &[Value],
) -> Option<Vec<(PropertyId, Value)>> {
    props
        .iter()
        .map(|(name, col)| e.property(name).map(|p| (p.id, row[*col].clone())))
        .collect()
}

/// Whether node `n` carries every extra label of MERGE node `node`.
fn has_labels(txn: &mut WriteTxn<'_>, node: &CreateNode, n: Node) -> Result<bool> {
    if node.labels.is_empty() {
        return Ok(true);
    }
    let have = node_labels(txn, n)?;
    Ok(node.labels.iter().all(|l| have.contains(l)))
}

/// The live nodes MERGE node `node` matches: of `table` (every table when
/// unlabeled), with its properties (looked up by primary key when the key
/// is one of them) and all its labels.
pub(super) fn node_candidates(
    txn: &mut WriteTxn<'_>,
    node: &CreateNode,
    table: TableId,
    row: &[Value],
) -> Result<Vec<Node>> {
    let mut tables = vec![entry(txn, table)?];
    if matches!(&node.table, WriteTable::Implicit(l) if l.is_empty()) {
        tables.extend(txn.catalog.node_tables().filter(|t| t.id != table).cloned());
    }
    let mut found = Vec::new();
    for e in tables {
        let Some(probe) = probe(&e, &node.properties, row) else {
            continue;
        };
        let pk = e.primary_key().map(|p| p.id);
        match probe.iter().find(|(p, _)| Some(*p) == pk) {
            Some((_, key)) => {
                if let Some(o) = txn.lookup_pk(e.id, key)? {
                    if txn.node_has_properties(e.id, o, &probe)? {
                        found.push((e.id, o));
                    }
                }
            }
            None => found.extend(txn.find_nodes(e.id, &probe)?.into_iter().map(|o| (e.id, o))),
        }
    }
    let mut keep = Vec::with_capacity(found.len());
    for n in found {
        if has_labels(txn, node, n)? {
            keep.push(n);
        }
    }
    Ok(keep)
}

/// Whether node `n`, reached by a rel of a path MERGE, is one MERGE node
/// `node` (of resolved table `table`) matches.
pub(super) fn node_fits(
    txn: &mut WriteTxn<'_>,
    node: &CreateNode,
    table: TableId,
    n: Node,
    row: &[Value],
) -> Result<bool> {
    let unlabeled = matches!(&node.table, WriteTable::Implicit(l) if l.is_empty());
    if !unlabeled && n.0 != table {
        return Ok(false);
    }
    let e = entry(txn, n.0)?;
    let Some(probe) = probe(&e, &node.properties, row) else {
        return Ok(false);
    };
    Ok(txn.node_has_properties(n.0, n.1, &probe)? && has_labels(txn, node, n)?)
}

/// A MERGE's ON CREATE / ON MATCH items bound as SET clauses: each runs on
/// the rows (after the MERGE bound its variable) that created (`created[i]`)
/// or matched.
pub(super) fn apply_merge_then(
    run: Run<'_>,
    txn: &mut WriteTxn<'_>,
    then: &MergeThen,
    created: &[bool],
    rows: &[Vec<Value>],
    env: &Env,
    rel_env: &RelEnv,
) -> Result<()> {
    for (items, want) in [(&then.on_create, true), (&then.on_match, false)] {
        let picked: Vec<usize> = (0..created.len()).filter(|&i| created[i] == want).collect();
        if picked.is_empty() || matches!(items, MergeItems::Now(c) if c.is_empty()) {
            continue;
        }
        let mut sub_rows: Vec<Vec<Value>> = picked.iter().map(|&i| rows[i].clone()).collect();
        let mut sub_env: Env = picked.iter().map(|&i| env[i].clone()).collect();
        let mut sub_rel: RelEnv = picked.iter().map(|&i| rel_env[i].clone()).collect();
        match items {
            MergeItems::Now(clauses) => {
                for c in clauses {
                    apply(run, txn, c, &mut sub_rows, &mut sub_env, &mut sub_rel)?;
                }
            }
            MergeItems::Later(cont) => {
                run.run_continuation(txn, cont, &sub_rows, &sub_env, &sub_rel)?;
            }
        }
    }
    Ok(())
}

/// Binds what a MERGE found for each input row: `bound[i]` lists row i's
/// matches (at least one), and a row with several becomes one row per match
/// (openCypher binds every match).
pub(super) fn fan_out<T>(
    rows: &mut Vec<Vec<Value>>,
    env: &mut Env,
    rel_env: &mut RelEnv,
    bound: Vec<Vec<T>>,
    bind: impl Fn(&mut HashMap<String, Node>, &mut HashMap<String, [InternalId; 3]>, &T),
) {
    if bound.iter().all(|b| b.len() == 1) {
        for ((b, e), r) in bound.iter().zip(env.iter_mut()).zip(rel_env.iter_mut()) {
            bind(e, r, &b[0]);
        }
        return;
    }
    let old_rows = std::mem::take(rows);
    let old_env = std::mem::take(env);
    let old_rel = std::mem::take(rel_env);
    for (((b, row), e), r) in bound.iter().zip(old_rows).zip(old_env).zip(old_rel) {
        for t in b {
            let mut e = e.clone();
            let mut r = r.clone();
            bind(&mut e, &mut r, t);
            rows.push(row.clone());
            env.push(e);
            rel_env.push(r);
        }
    }
}
