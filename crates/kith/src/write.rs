//! Runs statements with writing clauses: the reading part on the write
//! transaction's base version, then every clause through the storage write
//! path, then commit. Any error drops the transaction (rollback), so a
//! statement is atomic.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kith_catalog::{PropertyId, TableEntry};
use kith_common::{Chunk, Error, InternalId, LogicalType, Result, TableId, Value, ValueVector};
use kith_planner::bound::{
    BoundStatement, BoundWrite, ContinuationSource, CreateNode, CreateRel, MergeItems,
    MergePathNode, MergePathRel, MergeThen, NodeRef, RelRef, SeedKind, SetTarget, WriteClause,
    WriteContinuation, WriteTable,
};
use kith_sched::CancelToken;
use kith_storage::{RelDirection, WriteTxn};

use crate::database::{Connection, Settings};
use crate::implicit_schema::{self, entry};
use crate::result::QueryResult;

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

/// Runs continuation `cont` over the rows the writes left.
fn run_continuation(
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
            // A node carried as a value (`UNWIND collect(n) AS m SET m.x = 1`).
            Value::Node(n) => Ok(Some((n.id.table(), n.id.offset()))),
            other => Err(Error::runtime(format!("{other} is not a node"))),
        },
    }
}

/// A rel as (table, src offset, dst offset, rel id).
type RelKey = (TableId, u64, u64, u64);

/// The rel `r` refers to in `row`, oriented (a rel matched without a
/// direction comes with its end nodes in either order), and whether it
/// still exists (None: NULL).
fn resolve_rel(
    txn: &mut WriteTxn<'_>,
    r: &RelRef,
    row: &[Value],
) -> Result<Option<(RelKey, bool)>> {
    let (Value::InternalId(id), Value::InternalId(a), Value::InternalId(b)) =
        (&row[r.rel], &row[r.src], &row[r.dst])
    else {
        return Ok(None);
    };
    orient_rel(txn, *id, *a, *b).map(Some)
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

/// The rel a directed match bound in `row`, and whether it still exists: it
/// did when the statement read it, so only this transaction can have deleted
/// it since (rel ids are not reused).
fn oriented_rel(txn: &WriteTxn<'_>, r: &RelRef, row: &[Value]) -> Option<(RelKey, bool)> {
    match (&row[r.rel], &row[r.src], &row[r.dst]) {
        (Value::InternalId(id), Value::InternalId(s), Value::InternalId(d)) => {
            let (t, id) = (id.table(), id.offset());
            Some(((t, s.offset(), d.offset(), id), !txn.rel_deleted(t, id)))
        }
        _ => None,
    }
}

/// Rel `id` between nodes `a` and `b` as (src, dst) (see [`rel_swapped`]);
/// `(a, b)` and false when it leaves neither (deleted).
fn orient_rel(
    txn: &mut WriteTxn<'_>,
    id: InternalId,
    a: InternalId,
    b: InternalId,
) -> Result<(RelKey, bool)> {
    let t = id.table();
    Ok(match rel_swapped(txn, id, a, b)? {
        Some(false) => ((t, a.offset(), b.offset(), id.offset()), true),
        Some(true) => ((t, b.offset(), a.offset(), id.offset()), true),
        None => ((t, a.offset(), b.offset(), id.offset()), false),
    })
}

/// Whether rel `id` between nodes `a` and `b` goes from `b` to `a`: the
/// order whose tables fit the rel table and whose source the rel leaves
/// (None: it leaves neither, it was deleted).
fn rel_swapped(
    txn: &mut WriteTxn<'_>,
    id: InternalId,
    a: InternalId,
    b: InternalId,
) -> Result<Option<bool>> {
    let table = id.table();
    let e = entry(txn, table)?;
    let info = e
        .rel_info()
        .ok_or_else(|| Error::internal(format!("'{}' is not a rel table", e.name)))?
        .clone();
    for (s, d, swapped) in [(a, b, false), (b, a, true)] {
        if s.table() == info.src
            && d.table() == info.dst
            && txn.rel_leaves(table, s.offset(), id.offset())?
        {
            return Ok(Some(swapped));
        }
    }
    Ok(None)
}

/// The rel a SET writes to; an error once it was deleted.
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

/// One row of values for every catalog property of `entry` (NULL where not given).
fn property_row(
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

fn set_node(txn: &mut WriteTxn<'_>, node: Node, name: &str, value: &Value) -> Result<()> {
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
fn check_merge_properties(what: &str, props: &[(String, usize)], row: &[Value]) -> Result<()> {
    match props.iter().find(|(_, c)| row[*c].is_null()) {
        Some((name, _)) => Err(Error::runtime(format!(
            "cannot MERGE a {what} whose property '{name}' is NULL"
        ))),
        None => Ok(()),
    }
}

/// `props` (name -> input column) as property ids of table `e`; None when
/// `e` lacks one of them (then it matches nothing there).
fn probe(
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
fn node_candidates(
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
fn node_fits(
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

/// One match of a path MERGE: a node per pattern node, a rel (id, source,
/// destination) per pattern rel; rels are None where the path was just
/// created (they are bound already).
struct PathMatch {
    nodes: Vec<Node>,
    rels: Vec<Option<[InternalId; 3]>>,
}

/// The search for matches of one row's path MERGE: a depth-first walk from
/// an anchor node along the chain, right then left, extending through each
/// rel's CSR from the node already placed.
struct PathSearch<'a> {
    nodes: &'a [MergePathNode],
    chain: &'a [usize],
    rels: &'a [MergePathRel],
    /// Each new node with its resolved table (None: a bound node).
    news: &'a [Option<(&'a CreateNode, TableId)>],
    row: &'a [Value],
    /// (rel, from position, to position) in walk order.
    steps: Vec<(usize, usize, usize)>,
    placed: Vec<Option<Node>>,
    /// Rels of the partial match, by step; a match uses each rel once.
    used: Vec<[InternalId; 3]>,
    found: Vec<PathMatch>,
}

impl PathSearch<'_> {
    fn walk(&mut self, txn: &mut WriteTxn<'_>, step: usize) -> Result<()> {
        let Some(&(r, from, to)) = self.steps.get(step) else {
            let nodes = self
                .placed
                .iter()
                .map(|n| n.ok_or_else(|| Error::internal("path MERGE match with an unplaced node")))
                .collect::<Result<_>>()?;
            let mut rels = vec![None; self.rels.len()];
            for (&(r, _, _), ids) in self.steps.iter().zip(&self.used) {
                rels[r] = Some(*ids);
            }
            self.found.push(PathMatch { nodes, rels });
            return Ok(());
        };
        let (a, b) = (self.chain[from], self.chain[to]);
        let Some(here) = self.placed[a] else {
            return Err(Error::internal("path MERGE step from an unplaced node"));
        };
        let there = self.placed[b];
        let spec = &self.rels[r];
        // Rel r's source is at position r (`from` walks rightwards) unless
        // the pattern points left; undirected, both ways.
        let src_is_left = spec.rel.src == self.nodes[self.chain[r]].node;
        let rightwards = to > from;
        let mut dirs = vec![if rightwards == src_is_left {
            RelDirection::Fwd
        } else {
            RelDirection::Bwd
        }];
        if spec.either_direction && a != b {
            dirs.push(match dirs[0] {
                RelDirection::Fwd => RelDirection::Bwd,
                RelDirection::Bwd => RelDirection::Fwd,
            });
        }
        let mut hits: Vec<([InternalId; 3], Node)> = Vec::new();
        for dir in dirs {
            let candidates: Vec<TableEntry> = match &spec.rel.table {
                WriteTable::Declared(t) => vec![entry(txn, *t)?],
                WriteTable::Implicit(ty) => txn.catalog.rel_tables_typed(ty).cloned().collect(),
            };
            for e in candidates {
                let Some(info) = e.rel_info() else {
                    continue;
                };
                let (near, far) = match dir {
                    RelDirection::Fwd => (info.src, info.dst),
                    RelDirection::Bwd => (info.dst, info.src),
                };
                if near != here.0 || there.is_some_and(|t| t.0 != far) {
                    continue;
                }
                let Some(probe) = probe(&e, &spec.rel.properties, self.row) else {
                    continue;
                };
                for (nbr, id) in txn.find_rels(e.id, dir, here.1, there.map(|t| t.1), &probe)? {
                    let (s, d) = match dir {
                        RelDirection::Fwd => (here, (far, nbr)),
                        RelDirection::Bwd => ((far, nbr), here),
                    };
                    let ids = [
                        InternalId::new(e.id, id),
                        InternalId::new(s.0, s.1),
                        InternalId::new(d.0, d.1),
                    ];
                    hits.push((ids, (far, nbr)));
                }
            }
        }
        for (ids, next) in hits {
            if self.used.iter().any(|u| u[0] == ids[0]) {
                continue;
            }
            if there.is_none() {
                let Some((new, table)) = self.news[b] else {
                    return Err(Error::internal("unplaced bound node in a path MERGE"));
                };
                if !node_fits(txn, new, table, next, self.row)? {
                    continue;
                }
                self.placed[b] = Some(next);
            }
            self.used.push(ids);
            self.walk(txn, step + 1)?;
            self.used.pop();
            if there.is_none() {
                self.placed[b] = None;
            }
        }
        Ok(())
    }
}

/// One row of a path MERGE: every match of the pattern, or (when none)
/// the pattern created, its new nodes and named rels bound in `env` /
/// `rel_env`; and whether it was created.
#[allow(clippy::too_many_arguments)]
fn merge_path(
    txn: &mut WriteTxn<'_>,
    nodes: &[MergePathNode],
    chain: &[usize],
    rels: &[MergePathRel],
    news: &[Option<(&CreateNode, TableId)>],
    row: &[Value],
    env: &mut HashMap<String, Node>,
    rel_env: &mut HashMap<String, [InternalId; 3]>,
) -> Result<(Vec<PathMatch>, bool)> {
    let mut placed = Vec::with_capacity(nodes.len());
    for (n, new) in nodes.iter().zip(news) {
        match new {
            Some((c, _)) => {
                check_merge_properties("node", &c.properties, row)?;
                placed.push(None);
            }
            None => match resolve(&n.node, row, env)? {
                Some(node) => placed.push(Some(node)),
                None => return Err(Error::runtime("cannot MERGE a path through a NULL node")),
            },
        }
    }
    for r in rels {
        check_merge_properties("rel", &r.rel.properties, row)?;
    }
    // The anchor: a bound node, else a new node found by primary key, else
    // the one with the most properties (fewest candidates, likely).
    let anchor = (0..chain.len())
        .max_by_key(|&p| match (news[chain[p]], &placed[chain[p]]) {
            (_, Some(_)) => (2, 0, std::cmp::Reverse(p)),
            (Some((c, t)), None) => {
                let keyed = txn
                    .catalog
                    .table(t)
                    .and_then(|e| e.primary_key())
                    .is_some_and(|pk| c.properties.iter().any(|(name, _)| *name == pk.name));
                (usize::from(keyed), c.properties.len(), std::cmp::Reverse(p))
            }
            (None, None) => (0, 0, std::cmp::Reverse(p)),
        })
        .unwrap_or(0);
    let starts: Vec<Option<Node>> = match (news[chain[anchor]], placed[chain[anchor]]) {
        (_, Some(n)) => vec![Some(n)],
        (Some((c, table)), None) => node_candidates(txn, c, table, row)?
            .into_iter()
            .map(Some)
            .collect(),
        (None, None) => Vec::new(),
    };
    let mut steps: Vec<(usize, usize, usize)> =
        (anchor..rels.len()).map(|r| (r, r, r + 1)).collect();
    steps.extend((0..anchor).rev().map(|r| (r, r + 1, r)));
    let mut search = PathSearch {
        nodes,
        chain,
        rels,
        news,
        row,
        steps,
        placed,
        used: Vec::with_capacity(rels.len()),
        found: Vec::new(),
    };
    for start in starts {
        search.placed[chain[anchor]] = start;
        search.walk(txn, 0)?;
    }
    if !search.found.is_empty() {
        return Ok((search.found, false));
    }
    let row = vec![row.to_vec()];
    for n in nodes {
        if let Some(c) = &n.new {
            create_nodes(txn, c, &row, std::slice::from_mut(env))?;
        }
    }
    for r in rels {
        create_rels(
            txn,
            &r.rel,
            &row,
            std::slice::from_ref(env),
            std::slice::from_mut(rel_env),
        )?;
    }
    let mut placed = Vec::with_capacity(nodes.len());
    for n in nodes {
        let node = resolve(&n.node, &row[0], env)?;
        placed.push(node.ok_or_else(|| Error::internal("path MERGE created no node"))?);
    }
    Ok((
        vec![PathMatch {
            nodes: placed,
            rels: vec![None; rels.len()],
        }],
        true,
    ))
}

/// A MERGE's ON CREATE / ON MATCH items bound as SET clauses: each runs on
/// the rows (after the MERGE bound its variable) that created (`created[i]`)
/// or matched.
fn apply_merge_then(
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
                run_continuation(run, txn, cont, &sub_rows, &sub_env, &sub_rel)?;
            }
        }
    }
    Ok(())
}

/// Binds what a MERGE found for each input row: `bound[i]` lists row i's
/// matches (at least one), and a row with several becomes one row per match
/// (openCypher binds every match).
fn fan_out<T>(
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
fn node_labels(txn: &mut WriteTxn<'_>, (table, offset): Node) -> Result<Vec<String>> {
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
fn set_labels(
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
    run: Run<'_>,
    txn: &mut WriteTxn<'_>,
    clause: &WriteClause,
    rows: &mut Vec<Vec<Value>>,
    env: &mut Env,
    rel_env: &mut RelEnv,
) -> Result<()> {
    match clause {
        WriteClause::Create { nodes, rels } => {
            for n in nodes {
                create_nodes(txn, n, rows, env)?;
            }
            for r in rels {
                create_rels(txn, r, rows, env, rel_env)?;
            }
        }
        WriteClause::MergeNode {
            node,
            on_create,
            on_match,
            then,
        } => {
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
            apply_merge_then(run, txn, then, &created, rows, env, rel_env)?;
        }
        WriteClause::Set(items) => {
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
        }
        WriteClause::MergeRel {
            rel,
            either_direction,
            then,
        } => {
            let mut bound = Vec::with_capacity(rows.len());
            let mut created = Vec::with_capacity(rows.len());
            for (i, row) in rows.iter().enumerate() {
                let (ids, new) = merge_rel(txn, rel, *either_direction, row, &env[i])?;
                created.extend(std::iter::repeat_n(new, ids.len()));
                bound.push(ids);
            }
            fan_out(rows, env, rel_env, bound, |_, rel_env, ids| {
                if let Some(var) = &rel.var {
                    rel_env.insert(var.clone(), *ids);
                }
            });
            apply_merge_then(run, txn, then, &created, rows, env, rel_env)?;
        }
        WriteClause::MergePath {
            nodes,
            chain,
            rels,
            then,
        } => {
            // New nodes with their tables, made when missing (once, not
            // per row).
            let news: Vec<Option<(&CreateNode, TableId)>> = nodes
                .iter()
                .map(|n| {
                    n.new
                        .as_ref()
                        .map(|c| Ok((c, implicit_schema::node_table(txn, &c.table)?)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            let mut bound = Vec::with_capacity(rows.len());
            let mut created = Vec::with_capacity(rows.len());
            for i in 0..rows.len() {
                let (found, new) = merge_path(
                    txn,
                    nodes,
                    chain,
                    rels,
                    &news,
                    &rows[i],
                    &mut env[i],
                    &mut rel_env[i],
                )?;
                created.extend(std::iter::repeat_n(new, found.len()));
                bound.push(found);
            }
            fan_out(rows, env, rel_env, bound, |env, rel_env, m| {
                for (n, &node) in nodes.iter().zip(&m.nodes) {
                    if let Some(c) = &n.new {
                        env.insert(c.var.clone(), node);
                    }
                }
                for (r, ids) in rels.iter().zip(&m.rels) {
                    if let (Some(var), Some(ids)) = (&r.rel.var, ids) {
                        rel_env.insert(var.clone(), *ids);
                    }
                }
            });
            apply_merge_then(run, txn, then, &created, rows, env, rel_env)?;
        }
        WriteClause::SetLabels {
            node,
            labels,
            remove,
        } => {
            for (row, env) in rows.iter().zip(env.iter()) {
                if let Some(n) = resolve(node, row, env)? {
                    set_labels(txn, n, labels, *remove)?;
                }
            }
        }
        WriteClause::SetMap {
            target,
            value,
            replace,
        } => {
            for (i, (row, env)) in rows.iter().zip(env.iter()).enumerate() {
                let entries: Vec<(String, Value)> = match &row[*value] {
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
                if *replace {
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
        }
        WriteClause::Delete {
            detach,
            nodes,
            rels,
            values,
        } => {
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
            doomed.apply(txn, *detach)?;
        }
    }
    Ok(())
}

/// Inserts one node per input row (one batch) and records it under its variable.
fn create_nodes(
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
fn create_rels(
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
