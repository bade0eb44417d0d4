//! Runs statements with writing clauses: the reading part on the write
//! transaction's base version, then every clause through the storage write
//! path, then commit. Any error drops the transaction (rollback), so a
//! statement is atomic.
//!
//! `apply` hands each clause to the child module of its kind (`create`,
//! `merge`, `merge_path`, `set`, `delete`); `resolve` finds the stored
//! entities a clause names, and `continuation` runs what follows the writes.

mod continuation;
mod create;
mod delete;
mod merge;
mod merge_path;
mod resolve;
mod set;

use std::collections::HashMap;
use std::sync::Arc;

use kith_common::{Chunk, InternalId, Result, TableId, Value};
use kith_planner::bound::{BoundWrite, WriteClause};
use kith_sched::CancelToken;
use kith_storage::WriteTxn;

use crate::database::{Connection, Settings};
use crate::result::QueryResult;

use self::continuation::run_continuation;

/// A node as (table, offset); created nodes per input row by variable.
type Node = (TableId, u64);
type Env = Vec<HashMap<String, Node>>;
/// Named rels created per input row: (rel id, source id, destination id).
type RelEnv = Vec<HashMap<String, [InternalId; 3]>>;

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
    let result = run_write_in(conn, &mut txn, w, None, params, settings, cancel)?;
    txn.commit()?;
    Ok(result)
}

/// What running a statement's clauses needs besides the transaction.
#[derive(Clone, Copy)]
struct Run<'a> {
    conn: &'a Connection,
    params: &'a HashMap<String, Value>,
    settings: &'a Settings,
    cancel: &'a CancelToken,
}

/// Runs `w` inside `txn`: the reading part (from the rows of `initial` when
/// `w` continues an earlier write), the writes, then the continuation (a
/// RETURN, or more reading and writing clauses) over the rows the writes
/// leave, bound now against the transaction's catalog.
fn run_write_in(
    conn: &Connection,
    txn: &mut WriteTxn<'_>,
    w: BoundWrite,
    initial: Option<Chunk>,
    params: &HashMap<String, Value>,
    settings: &Settings,
    cancel: &CancelToken,
) -> Result<QueryResult> {
    let run = Run {
        conn,
        params,
        settings,
        cancel,
    };
    // A reading part that scans no table needs no flush of the
    // transaction's buffered inserts.
    let scans = w
        .query
        .parts
        .iter()
        .any(|p| !p.graph.nodes.is_empty() || !p.graph.rels.is_empty());
    // Nor, when it reads no rel, of the buffered rel inserts (a
    // transaction of `MATCH (a {id: ..}), (b {id: ..}) CREATE (a)-[..]->(b)`
    // merges its rels into the CSR once, not per statement).
    let reads_rels =
        !w.query.subqueries.is_empty() || w.query.parts.iter().any(|p| !p.graph.rels.is_empty());
    let base: Arc<kith_storage::Version> = if !scans {
        txn.catalog_version()
    } else if reads_rels {
        txn.read_version()?
    } else {
        txn.node_read_version()?
    };
    let plan = kith_planner::planner::plan_query(
        w.query,
        &base.catalog,
        &crate::statement::planner_rows(&base, settings),
    )?;
    let chunks = match initial {
        None => crate::statement::execute_plan(conn, &plan, &base, params, cancel, settings)?,
        Some(rows) => {
            crate::statement::execute_plan_from(conn, &plan, rows, &base, params, cancel, settings)?
        }
    };
    let mut rows: Vec<Vec<Value>> = Vec::new();
    for c in &chunks {
        for r in 0..c.num_rows {
            rows.push(c.columns.iter().map(|col| col.get_value(r)).collect());
        }
    }
    let mut env: Env = vec![HashMap::new(); rows.len()];
    let mut rel_env: RelEnv = vec![HashMap::new(); rows.len()];
    for clause in &w.clauses {
        apply(run, txn, clause, &mut rows, &mut env, &mut rel_env)?;
    }
    let Some(cont) = w.continuation else {
        return Ok(QueryResult {
            silent: true,
            ..QueryResult::default()
        });
    };
    run_continuation(run, txn, &cont, &rows, &env, &rel_env)
}

/// One write clause being applied: what the statement runs with, its
/// transaction, and the rows with the nodes (`env`) and named rels
/// (`rel_env`) that earlier clauses created for each.
struct ClauseCtx<'c, 'db> {
    run: Run<'c>,
    txn: &'c mut WriteTxn<'db>,
    rows: &'c mut Vec<Vec<Value>>,
    env: &'c mut Env,
    rel_env: &'c mut RelEnv,
}

/// Applies one write clause to every row; a MERGE binds every match of a
/// row, one row each.
fn apply(
    run: Run<'_>,
    txn: &mut WriteTxn<'_>,
    clause: &WriteClause,
    rows: &mut Vec<Vec<Value>>,
    env: &mut Env,
    rel_env: &mut RelEnv,
) -> Result<()> {
    let ctx = ClauseCtx {
        run,
        txn,
        rows,
        env,
        rel_env,
    };
    match clause {
        WriteClause::Create { nodes, rels } => create::apply_create(ctx, nodes, rels),
        WriteClause::MergeNode {
            node,
            on_create,
            on_match,
            then,
        } => merge::apply_merge_node(ctx, node, on_create, on_match, then),
        WriteClause::Set(items) => set::apply_set(ctx, items),
        WriteClause::MergeRel {
            rel,
            either_direction,
            then,
        } => merge::apply_merge_rel(ctx, rel, *either_direction, then),
        WriteClause::MergePath {
            nodes,
            chain,
            rels,
            then,
        } => merge_path::apply_merge_path(ctx, nodes, chain, rels, then),
        WriteClause::SetLabels {
            node,
            labels,
            remove,
        } => set::apply_set_labels(ctx, node, labels, *remove),
        WriteClause::SetMap {
            target,
            value,
            replace,
        } => set::apply_set_map(ctx, target, *value, *replace),
        WriteClause::Delete {
            detach,
            nodes,
            rels,
            values,
        } => delete::apply_delete(ctx, *detach, nodes, rels, values),
    }
}
