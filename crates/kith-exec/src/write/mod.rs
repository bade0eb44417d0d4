//! Applies a statement's writing clauses (CREATE, MERGE, SET, REMOVE,
//! DELETE) inside a write transaction, one clause at a time over the rows
//! the reading part produced: `apply` hands each clause to the module of
//! its kind (`create`, `merge`, `merge_path`, `set`, `delete`); `resolve`
//! finds the stored entities a clause names; `implicit_schema` adds the
//! tables and columns a schema-less write needs.
//!
//! Opening and committing the transaction, running the reading part and
//! what follows the writes is the caller's (the `kith` facade's): a MERGE's
//! ON CREATE / ON MATCH items that read the graph come back to it through
//! [`Continuations`].

mod create;
mod delete;
pub mod implicit_schema;
mod merge;
mod merge_path;
mod resolve;
mod set;

use std::collections::HashMap;

use kith_common::{InternalId, Result, TableId, Value};
use kith_planner::bound::{WriteClause, WriteContinuation};
use kith_storage::WriteTxn;

pub use implicit_schema::entry;
pub use resolve::rel_swapped;

/// A node as (table, offset).
pub type Node = (TableId, u64);
/// The nodes created per input row, by variable.
pub type Env = Vec<HashMap<String, Node>>;
/// Named rels created per input row: (rel id, source id, destination id).
pub type RelEnv = Vec<HashMap<String, [InternalId; 3]>>;

/// What the writes need from the layer that runs statements: a MERGE's
/// ON CREATE / ON MATCH items that read the graph are bound and run as a
/// continuation of the statement, over the rows (`rows`, with what earlier
/// clauses created for each in `env` and `rel_env`) they apply to.
pub trait Continuations {
    fn run_continuation(
        &self,
        txn: &mut WriteTxn<'_>,
        cont: &WriteContinuation,
        rows: &[Vec<Value>],
        env: &Env,
        rel_env: &RelEnv,
    ) -> Result<()>;
}

/// The statement runner, as the clauses see it.
type Run<'a> = &'a dyn Continuations;

/// One write clause being applied: the statement runner, the
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
/// row, one row each (so `rows`, `env` and `rel_env` may grow).
pub fn apply(
    run: &dyn Continuations,
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
