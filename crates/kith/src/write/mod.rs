//! Runs statements with writing clauses: the reading part on the write
//! transaction's base version, then every clause through the executor's
//! write module (`kith_exec::write`), then what follows the writes
//! (`continuation`), then commit. Any error drops the transaction
//! (rollback), so a statement is atomic.

mod continuation;

use std::collections::HashMap;
use std::sync::Arc;

use kith_common::{Chunk, Result, Value};
use kith_exec::write::{apply, Continuations, Env, RelEnv};
use kith_planner::bound::{BoundWrite, WriteContinuation};
use kith_sched::CancelToken;
use kith_storage::WriteTxn;

use crate::database::{Connection, Settings};
use crate::result::QueryResult;

use self::continuation::run_continuation;

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
        apply(&run, txn, clause, &mut rows, &mut env, &mut rel_env)?;
    }
    let Some(cont) = w.continuation else {
        return Ok(QueryResult {
            silent: true,
            ..QueryResult::default()
        });
    };
    run_continuation(run, txn, &cont, &rows, &env, &rel_env)
}

impl Continuations for Run<'_> {
    fn run_continuation(
        &self,
        txn: &mut WriteTxn<'_>,
        cont: &WriteContinuation,
        rows: &[Vec<Value>],
        env: &Env,
        rel_env: &RelEnv,
    ) -> Result<()> {
        run_continuation(*self, txn, cont, rows, env, rel_env).map(|_| ())
    }
}
