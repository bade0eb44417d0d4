//! What follows a statement's writes: a RETURN, or more reading and writing
//! clauses, run over the rows the writes leave with their variables bound
//! again against the transaction's catalog.

use std::sync::Arc;

use kith_common::{Chunk, Error, InternalId, LogicalType, Result, TableId, Value, ValueVector};
use kith_planner::bound::{BoundStatement, ContinuationSource, SeedKind, WriteContinuation};
use kith_storage::WriteTxn;

use kith_exec::write::{entry, rel_swapped, Env, Node, RelEnv};

use super::{run_write_in, Run};
use crate::result::QueryResult;

/// Runs continuation `cont` over the rows the writes left.
pub(super) fn run_continuation(
    run: Run<'_>,
    txn: &mut WriteTxn<'_>,
    cont: &WriteContinuation,
    rows: &[Vec<Value>],
    env: &Env,
    rel_env: &RelEnv,
) -> Result<QueryResult> {
    let (seeds, initial) = continuation_rows(txn, cont, rows, env, rel_env)?;
    let procedures = Arc::clone(&run.conn.db.procedures.read());
    let bound = kith_planner::binder::bind_continuation(
        &txn.catalog,
        &procedures,
        &seeds,
        &cont.paths,
        &cont.clauses,
        run.params,
        run.settings.var_length,
    )?;
    match bound {
        BoundStatement::Query(q) => {
            let version = txn.read_version()?;
            let plan = kith_planner::planner::plan_query(
                *q,
                &version.catalog,
                &crate::statement::planner_rows(&version, run.settings),
            )?;
            let chunks = crate::statement::execute_plan_from(
                run.conn,
                &plan,
                initial,
                &version,
                run.params,
                run.cancel,
                run.settings,
            )?;
            Ok(QueryResult {
                names: plan.names,
                types: plan.types,
                chunks,
                silent: false,
            })
        }
        BoundStatement::Write(next) => run_write_in(
            run.conn,
            txn,
            *next,
            Some(initial),
            run.params,
            run.settings,
            run.cancel,
        ),
        _ => Err(Error::internal(
            "a write continuation bound to another statement",
        )),
    }
}

/// The variables a continuation starts with and one input row per row the
/// writes leave: matched nodes and values from the reading part's columns,
/// created nodes (of whichever tables they went to) from `env`.
fn continuation_rows(
    txn: &mut WriteTxn<'_>,
    cont: &WriteContinuation,
    rows: &[Vec<Value>],
    env: &Env,
    rel_env: &RelEnv,
) -> Result<(Vec<(String, SeedKind)>, Chunk)> {
    let mut seeds = Vec::with_capacity(cont.vars.len());
    let mut columns = Vec::with_capacity(cont.vars.len());
    for v in &cont.vars {
        let (kind, values): (SeedKind, Vec<Value>) = match (&v.source, &v.kind) {
            (ContinuationSource::Rel { rel, src, dst }, kind) => {
                let tables = match kind {
                    SeedKind::Rel(t) => t.clone(),
                    _ => Vec::new(),
                };
                let ids = rows
                    .iter()
                    .map(|r| match (&r[*rel], &r[*src], &r[*dst]) {
                        (Value::InternalId(a), Value::InternalId(b), Value::InternalId(c)) => {
                            Some([*a, *b, *c])
                        }
                        _ => None,
                    })
                    .collect::<Vec<_>>();
                columns.extend(rel_columns(txn, &tables, &ids)?);
                seeds.push((v.name.clone(), SeedKind::Rel(tables)));
                continue;
            }
            (ContinuationSource::CreatedRel(name), _) => {
                let ids: Vec<Option<[InternalId; 3]>> =
                    rel_env.iter().map(|e| e.get(name).copied()).collect();
                let mut tables: Vec<TableId> = ids.iter().flatten().map(|i| i[0].table()).collect();
                tables.sort();
                tables.dedup();
                columns.extend(rel_columns(txn, &tables, &ids)?);
                seeds.push((v.name.clone(), SeedKind::Rel(tables)));
                continue;
            }
            (ContinuationSource::Column(c), kind) => {
                (kind.clone(), rows.iter().map(|r| r[*c].clone()).collect())
            }
            (ContinuationSource::Created(name), _) => {
                let nodes: Vec<Option<Node>> = env.iter().map(|e| e.get(name).copied()).collect();
                let mut tables: Vec<TableId> = nodes.iter().flatten().map(|n| n.0).collect();
                tables.sort();
                tables.dedup();
                let values = nodes
                    .into_iter()
                    .map(|n| {
                        n.map_or(Value::Null, |(t, o)| {
                            Value::InternalId(InternalId::new(t, o))
                        })
                    })
                    .collect();
                (SeedKind::Node(tables), values)
            }
        };
        let ty = match &kind {
            SeedKind::Node(_) | SeedKind::Rel(_) => LogicalType::InternalId,
            SeedKind::Value(ty) => ty.clone(),
        };
        let mut col = ValueVector::new(ty, 0);
        for value in &values {
            col.push_value(value);
        }
        columns.push(col);
        if let SeedKind::Node(_) = kind {
            let mut deleted = ValueVector::new(LogicalType::Bool, 0);
            for value in &values {
                deleted.push_value(&match value {
                    Value::InternalId(id) => Value::Bool(txn.node_deleted(id.table(), id.offset())),
                    _ => Value::Null,
                });
            }
            columns.push(deleted);
        }
        seeds.push((v.name.clone(), kind));
    }
    let chunk = Chunk {
        columns,
        num_rows: rows.len(),
    };
    Ok((seeds, chunk))
}

/// The input columns of a rel variable of a continuation (see
/// `SeedKind::Rel`): id, endpoints, its properties as the writes left them,
/// read from the transaction, and whether they deleted it.
fn rel_columns(
    txn: &mut WriteTxn<'_>,
    tables: &[TableId],
    ids: &[Option<[InternalId; 3]>],
) -> Result<Vec<ValueVector>> {
    let props = kith_planner::binder::carried_rel_columns(&txn.catalog, tables);
    let mut cols: Vec<ValueVector> = (0..3)
        .map(|_| ValueVector::new(LogicalType::InternalId, 0))
        .chain(props.iter().map(|(_, ty)| ValueVector::new(ty.clone(), 0)))
        .chain([ValueVector::new(LogicalType::Bool, 0)])
        .collect();
    for id in ids {
        let Some([rel, a, b]) = id else {
            for c in &mut cols {
                c.push_value(&Value::Null);
            }
            continue;
        };
        // A rel matched without a direction: its ends in rel order.
        let (src, dst) = match rel_swapped(txn, *rel, *a, *b)? {
            Some(true) => (b, a),
            _ => (a, b),
        };
        for (c, v) in cols.iter_mut().zip([rel, src, dst]) {
            c.push_value(&Value::InternalId(*v));
        }
        let e = entry(txn, rel.table())?;
        // A rel the writes deleted keeps its id and type; its properties
        // are NULL here and flagged, so reading them is EntityNotFound.
        let values = txn.read_rel_properties(rel.table(), src.offset(), rel.offset())?;
        for (c, (name, _)) in cols[3..].iter_mut().zip(&props) {
            let v = match (&values, e.properties.iter().position(|p| p.name == *name)) {
                (Some(values), Some(i)) => values[i].clone(),
                _ => Value::Null,
            };
            c.push_value(&v);
        }
        if let Some(flag) = cols.last_mut() {
            flag.push_value(&Value::Bool(values.is_none()));
        }
    }
    Ok(cols)
}
