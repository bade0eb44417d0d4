//! Runs one parsed statement: DDL and COPY through a write transaction,
//! settings on the connection, queries through planner and executor on a
//! snapshot; BEGIN/COMMIT/ROLLBACK/CHECKPOINT on the connection's transaction
//! state (see `database.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kith_common::{Chunk, Error, LogicalType, Result, Value};
use kith_exec::{ddl, QueryContext};
use kith_planner::bound::{BoundStatement, TableCall, VarLengthSemantics};
use kith_sched::CancelToken;

use crate::database::{txn_error, Connection, TxnState, ABORTED};
use crate::plan_cache::{params_are_small, CachedPlan, PlanKey, PlanKeyRef};
use crate::result::QueryResult;

pub(crate) fn run_script(conn: &Connection, text: &str) -> Result<QueryResult> {
    run_script_with_params(conn, text, &HashMap::new())
}

/// Runs the statements of `text` with `$name` parameters bound to `params`.
pub(crate) fn run_script_with_params(
    conn: &Connection,
    text: &str,
    params: &HashMap<String, Value>,
) -> Result<QueryResult> {
    if let Some(result) = run_cached(conn, text, params) {
        return result;
    }
    let statements = kith_parser::parse(text)?;
    if statements.is_empty() {
        return Err(Error::syntax(
            kith_common::Span::new(0, text.len()),
            "empty statement",
        ));
    }
    // A script of one statement may keep its plan under its text.
    let whole = (statements.len() == 1).then_some(text);
    let mut last = QueryResult::default();
    for stmt in &statements {
        last = run_statement(conn, stmt, params, whole)?;
    }
    Ok(last)
}

/// Runs `text` from the connection's plan cache, if it holds a plan of it
/// for this version, parameters and settings; None when it does not (the
/// text is then parsed, bound and planned).
fn run_cached(
    conn: &Connection,
    text: &str,
    params: &HashMap<String, Value>,
) -> Option<Result<QueryResult>> {
    let settings = conn.settings.lock().clone();
    if !settings.plan_cache {
        return None;
    }
    let snapshot = match &*conn.txn.lock() {
        TxnState::Auto => match conn.db.storage.snapshot() {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        },
        TxnState::ReadOnly(v) => Arc::clone(v),
        TxnState::Aborted | TxnState::Write(_) => return None,
    };
    let procedures = Arc::clone(&conn.db.procedures.read());
    let key = PlanKeyRef {
        seq: snapshot.seq,
        catalog: &snapshot.catalog,
        procedures: &procedures,
        params,
        var_length: settings.var_length,
    };
    let cached = conn.plans.lock().get(text, &key)?;
    if cached.matches_patterns {
        conn.db.sched.anticipate(settings.threads);
    }
    let (cancel, _running) = statement_token(conn, &settings);
    Some(query_result(
        conn,
        &cached.plan,
        &snapshot,
        params,
        &cancel,
        &settings,
    ))
}

/// The token that interrupts or times out the statement starting now; the
/// connection's `interrupt()` reaches it until the guard drops.
fn statement_token<'a>(
    conn: &'a Connection,
    settings: &crate::database::Settings,
) -> (CancelToken, Running<'a>) {
    let cancel = match settings.timeout {
        Some(t) => CancelToken::with_timeout(t),
        None => CancelToken::new(),
    };
    *conn.running.lock() = Some(cancel.clone());
    (cancel, Running(conn))
}

/// Runs a planned query and names its columns.
fn query_result(
    conn: &Connection,
    plan: &kith_planner::plan::QueryPlan,
    snapshot: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cancel: &CancelToken,
    settings: &crate::database::Settings,
) -> Result<QueryResult> {
    let chunks = execute_plan(conn, plan, snapshot, params, cancel, settings)?;
    Ok(QueryResult {
        names: plan.names.clone(),
        types: plan.types.clone(),
        chunks,
        silent: false,
    })
}

/// A one-cell result carrying a status message ("Table P has been created.").
pub(crate) fn message(text: String) -> QueryResult {
    let mut chunk = Chunk::new(&[LogicalType::String], 0);
    chunk.columns[0].push_value(&Value::String(text));
    chunk.num_rows = 1;
    QueryResult {
        names: vec!["result".to_string()],
        types: vec![LogicalType::String],
        chunks: vec![chunk],
        silent: false,
    }
}

fn table_result(names: &[&str], types: Vec<LogicalType>, rows: Vec<Vec<Value>>) -> QueryResult {
    let mut chunk = Chunk::new(&types, 0);
    for row in &rows {
        for (col, v) in chunk.columns.iter_mut().zip(row) {
            col.push_value(v);
        }
    }
    chunk.num_rows = rows.len();
    QueryResult {
        names: names.iter().map(|s| s.to_string()).collect(),
        types,
        chunks: vec![chunk],
        silent: false,
    }
}

/// Registers the running statement's token so `interrupt` can reach it.
struct Running<'a>(&'a Connection);
impl Drop for Running<'_> {
    fn drop(&mut self) {
        *self.0.running.lock() = None;
    }
}

fn silent() -> QueryResult {
    QueryResult {
        silent: true,
        ..QueryResult::default()
    }
}

/// `BEGIN TRANSACTION [READ ONLY]`, `COMMIT`, `ROLLBACK`, `CHECKPOINT`; None
/// for every other statement.
fn run_transaction_control(
    conn: &Connection,
    stmt: &kith_parser::ast::Statement,
) -> Option<Result<QueryResult>> {
    use kith_parser::ast::Statement as S;
    let storage = &conn.db.storage;
    Some(match stmt {
        S::Begin { read_only } => {
            let mut state = conn.txn.lock();
            if !matches!(*state, TxnState::Auto) {
                return Some(Err(txn_error(
                    "a transaction is already open on this connection; COMMIT or ROLLBACK it first",
                )));
            }
            if *read_only {
                match storage.snapshot() {
                    Ok(v) => *state = TxnState::ReadOnly(v),
                    Err(e) => return Some(Err(e)),
                }
            } else {
                match storage.begin_write() {
                    Ok(txn) => *state = TxnState::Write(Box::new(txn)),
                    Err(e) => return Some(Err(e)),
                }
            }
            Ok(silent())
        }
        S::Commit => {
            let mut state = conn.txn.lock();
            match std::mem::replace(&mut *state, TxnState::Auto) {
                TxnState::Auto => Err(txn_error(
                    "COMMIT without an open transaction (start one with BEGIN TRANSACTION)",
                )),
                TxnState::ReadOnly(_) => Ok(silent()),
                TxnState::Write(txn) => txn.commit().map(|()| silent()),
                TxnState::Aborted => {
                    *state = TxnState::Aborted;
                    Err(txn_error(ABORTED))
                }
            }
        }
        S::Rollback => {
            let mut state = conn.txn.lock();
            match std::mem::replace(&mut *state, TxnState::Auto) {
                TxnState::Auto => Err(txn_error(
                    "ROLLBACK without an open transaction (start one with BEGIN TRANSACTION)",
                )),
                // Dropping the write transaction rolls it back.
                _ => Ok(silent()),
            }
        }
        S::Checkpoint => {
            if conn.in_transaction() {
                return Some(Err(txn_error(
                    "CHECKPOINT cannot run inside a transaction; COMMIT or ROLLBACK it first",
                )));
            }
            if storage.is_read_only() {
                return Some(Ok(silent()));
            }
            // Fold the PK deltas into the indexes too, so the checkpointed
            // metadata is compact.
            let merged = storage
                .begin_write()
                .and_then(|mut txn| txn.merge_pk_deltas(true).and_then(|()| txn.commit()));
            merged
                .and_then(|()| storage.checkpoint())
                .map(|()| silent())
        }
        _ => return None,
    })
}

/// Runs one statement; `text` is the whole script's when the statement is
/// all of it (its plan may then be cached under it).
fn run_statement(
    conn: &Connection,
    stmt: &kith_parser::ast::Statement,
    params: &HashMap<String, Value>,
    text: Option<&str>,
) -> Result<QueryResult> {
    if let Some(result) = run_transaction_control(conn, stmt) {
        return result;
    }
    let storage = &conn.db.storage;
    // The version this statement reads: the newest snapshot, the pinned one
    // of a READ ONLY transaction, or the open write transaction's own state.
    let mut state = conn.txn.lock();
    let (snapshot, in_write_txn, read_only_txn) = match &mut *state {
        TxnState::Auto => (storage.snapshot()?, false, false),
        TxnState::ReadOnly(v) => (Arc::clone(v), false, true),
        TxnState::Aborted => return Err(txn_error(ABORTED)),
        // Binding needs only the catalog; reads flush the transaction's
        // buffered inserts below (flushing per statement would rewrite the
        // last node group for every CREATE of a batch).
        TxnState::Write(txn) => (txn.catalog_version(), true, false),
    };
    let procedures = Arc::clone(&conn.db.procedures.read());
    let (var_length, threads, plan_cache) = {
        let settings = conn.settings.lock();
        // Skewed plans are not kept: the next statement may ask for others.
        let plan_cache = settings.plan_cache && settings.plan_seed == 0;
        (settings.var_length, settings.threads, plan_cache)
    };
    // The pool's workers wake while a statement that matches patterns is
    // bound and planned (others would only make them spin).
    if matches_patterns(stmt) {
        conn.db.sched.anticipate(threads);
    }
    let bound = kith_planner::binder::bind_with_params(
        &snapshot.catalog,
        &procedures,
        stmt,
        params,
        var_length,
    )?;
    let writes = matches!(
        bound,
        BoundStatement::CreateNodeTable { .. }
            | BoundStatement::CreateRelTable { .. }
            | BoundStatement::DropTable { .. }
            | BoundStatement::AlterTable { .. }
            | BoundStatement::CopyFrom(_)
            | BoundStatement::Write(_)
    );
    let snapshot = match &mut *state {
        TxnState::Write(txn) if !writes => match txn.read_version() {
            Ok(v) => v,
            Err(e) => {
                *state = TxnState::Aborted;
                return Err(e);
            }
        },
        _ => snapshot,
    };
    if writes && read_only_txn {
        return Err(txn_error(
            "cannot write in a READ ONLY transaction; COMMIT or ROLLBACK it first",
        ));
    }
    if in_write_txn && matches!(bound, BoundStatement::CopyFrom(_)) {
        return Err(Error::not_supported(
            "COPY inside an explicit transaction (run it outside BEGIN TRANSACTION ... COMMIT)",
        ));
    }
    // A read inside the write transaction keeps it locked, so another thread
    // of this connection cannot write (and free pages the read still uses)
    // meanwhile; a write locks it again itself.
    let _reading = if writes || !in_write_txn {
        drop(state);
        None
    } else {
        Some(state)
    };
    // Plans read committed versions only (see `plan_cache.rs`).
    let cache = match (text, plan_cache, in_write_txn, &bound) {
        (Some(text), true, false, BoundStatement::Query(_)) if params_are_small(params) => Some((
            text,
            PlanKey {
                seq: snapshot.seq,
                catalog: Arc::clone(&snapshot.catalog),
                procedures,
                params: params.clone(),
                var_length,
            },
            matches_patterns(stmt),
        )),
        _ => None,
    };
    let result = run_bound(conn, bound, &snapshot, params, cache);
    if writes && in_write_txn && result.is_err() {
        let mut state = conn.txn.lock();
        if matches!(*state, TxnState::Write(_)) {
            // Dropping the transaction rolls it back and frees the writer slot.
            *state = TxnState::Aborted;
        }
    }
    result
}

/// Whether a statement matches patterns (MATCH, MERGE), and so runs
/// pipelines on the pool's workers.
fn matches_patterns(stmt: &kith_parser::ast::Statement) -> bool {
    use kith_parser::ast::{Clause, Statement};
    match stmt {
        Statement::Query(q) => q.parts.iter().any(|part| {
            part.clauses
                .iter()
                .any(|c| matches!(c, Clause::Match { .. } | Clause::Merge { .. }))
        }),
        Statement::Explain { inner, .. } => matches_patterns(inner),
        _ => false,
    }
}

/// Runs a bound statement: DDL and COPY in their own write transaction,
/// settings on the connection, queries (and their EXPLAIN or PROFILE) on
/// `snapshot`; a query's plan goes into the plan cache under `cache`.
fn run_bound(
    conn: &Connection,
    bound: BoundStatement,
    snapshot: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cache: Option<(&str, PlanKey, bool)>,
) -> Result<QueryResult> {
    let settings = conn.settings.lock().clone();
    let (cancel, _running) = statement_token(conn, &settings);
    let run = BoundRun {
        conn,
        snapshot,
        params,
        settings,
        cancel,
    };
    match bound {
        BoundStatement::CreateNodeTable {
            name,
            columns,
            primary_key,
            if_not_exists,
        } => {
            if if_not_exists && snapshot.catalog.table_by_name(&name).is_some() {
                return Ok(message(format!("Table {name} already exists.")));
            }
            in_write_txn(conn, |txn| {
                ddl::create_node_table(txn, &name, columns, &primary_key)
            })
        }
        BoundStatement::CreateRelTable {
            name,
            src,
            dst,
            columns,
            multiplicity,
            if_not_exists,
        } => {
            if if_not_exists && snapshot.catalog.table_by_name(&name).is_some() {
                return Ok(message(format!("Table {name} already exists.")));
            }
            in_write_txn(conn, |txn| {
                ddl::create_rel_table(txn, &name, (&src, &dst), columns, multiplicity)
            })
        }
        BoundStatement::DropTable { name, if_exists } => {
            if if_exists && snapshot.catalog.table_by_name(&name).is_none() {
                return Ok(message(format!("Table {name} does not exist.")));
            }
            in_write_txn(conn, |txn| ddl::drop_table(txn, &name))
        }
        BoundStatement::AlterTable { table, action } => {
            in_write_txn(conn, |txn| ddl::alter_table(txn, table, action))
        }
        BoundStatement::CopyFrom(copy) => run.copy_from(&copy),
        BoundStatement::SetOption { name, value } => {
            set_option(conn, &name, value)?;
            Ok(QueryResult {
                silent: true,
                ..QueryResult::default()
            })
        }
        BoundStatement::TableCall(TableCall::Procedure { procedure, args }) => {
            let no_subqueries = [];
            let values = args
                .iter()
                .map(|a| kith_exec::expression::evaluate_constant(a, params, &no_subqueries))
                .collect::<Result<Vec<_>>>()?;
            procedure.0.call(&values)?;
            Ok(QueryResult::default())
        }
        BoundStatement::TableCall(TableCall::ShowTables) => Ok(show_tables(snapshot)),
        BoundStatement::TableCall(TableCall::TableInfo(id)) => table_info(snapshot, id),
        BoundStatement::Query(q) => run.query(*q, cache),
        BoundStatement::Union { queries, all } => run_union(
            conn,
            queries,
            all,
            snapshot,
            params,
            &run.cancel,
            &run.settings,
        ),
        BoundStatement::Write(w) => {
            crate::write::run_write(conn, *w, params, &run.settings, &run.cancel)
        }
        BoundStatement::Explain {
            inner,
            profile: true,
        } => run.profile(*inner),
        BoundStatement::Explain { inner, .. } => run.explain(*inner),
    }
}

/// Runs a DDL statement in a write transaction of its own (or the
/// connection's explicit one) and commits it; its status message is the
/// result.
fn in_write_txn(
    conn: &Connection,
    ddl: impl FnOnce(&mut kith_storage::WriteTxn<'_>) -> Result<String>,
) -> Result<QueryResult> {
    let mut txn = conn.write_txn()?;
    let text = ddl(&mut txn)?;
    txn.commit()?;
    Ok(message(text))
}

/// `CALL name = value`: changes one setting of the connection.
fn set_option(conn: &Connection, name: &str, value: Value) -> Result<()> {
    let mut s = conn.settings.lock();
    match name {
        "threads" => {
            let n = value.as_i64().ok_or_else(|| {
                Error::runtime(format!("threads expects an integer, got {value}"))
            })?;
            s.threads = conn.check_threads(n)?;
        }
        "timeout" => {
            let ms = value.as_i64().filter(|ms| *ms >= 0).ok_or_else(|| {
                Error::runtime(format!(
                    "timeout expects milliseconds (a non-negative integer), got {value}"
                ))
            })?;
            s.timeout = (ms > 0).then(|| Duration::from_millis(ms as u64));
        }
        "recursive_policy" => s.recursive.policy = recursive_policy(&value)?,
        "recursive_k" => {
            let k = value.as_i64().filter(|k| *k >= 0).ok_or_else(|| {
                Error::runtime(format!(
                    "recursive_k expects a non-negative integer (0: automatic), got {value}"
                ))
            })?;
            s.recursive.k = (k > 0).then_some(k as usize);
        }
        "var_length_max_depth" => {
            let max = kith_graph_max_upper();
            let d = value
                .as_i64()
                .filter(|d| *d >= 1 && *d <= max as i64)
                .ok_or_else(|| {
                    Error::runtime(format!(
                        "var_length_max_depth expects an integer between 1 and {max}, got {value}"
                    ))
                })?;
            s.recursive.max_depth = d as u32;
        }
        "var_length_semantics" => s.var_length = var_length_semantics(&value)?,
        "plan_cache" => {
            let Value::Bool(on) = value else {
                return Err(Error::runtime(format!(
                    "plan_cache expects true or false, got {value}"
                )));
            };
            s.plan_cache = on;
            if !on {
                conn.plans.lock().clear();
            }
        }
        "plan_seed" => {
            let seed = value.as_i64().filter(|v| *v >= 0).ok_or_else(|| {
                Error::runtime(format!(
                    "plan_seed expects a non-negative integer (0: plan from the real table sizes), got {value}"
                ))
            })?;
            s.plan_seed = seed as u64;
        }
        other => {
            return Err(Error::runtime(format!(
                "unknown setting '{other}' (known: threads, timeout, recursive_policy, recursive_k, var_length_max_depth, var_length_semantics, plan_cache, plan_seed)"
            )))
        }
    }
    Ok(())
}

/// The value of the `recursive_policy` setting: None for `auto`.
fn recursive_policy(value: &Value) -> Result<Option<kith_exec::operator::recursive_join::Policy>> {
    let Value::String(p) = value else {
        return Err(Error::runtime(format!(
            "recursive_policy expects a string (auto, 1T1S, nT1S, nTkS or nTkMS), got {value}"
        )));
    };
    Ok(if p.trim().eq_ignore_ascii_case("auto") {
        None
    } else {
        Some(kith_exec::operator::recursive_join::Policy::parse(p)?)
    })
}

/// The value of the `var_length_semantics` setting.
fn var_length_semantics(value: &Value) -> Result<VarLengthSemantics> {
    Ok(match value {
        Value::String(v) if v.eq_ignore_ascii_case("walk") => VarLengthSemantics::Walk,
        Value::String(v) if v.eq_ignore_ascii_case("trail") => VarLengthSemantics::Trail,
        Value::String(v) if v.eq_ignore_ascii_case("walk_all") => VarLengthSemantics::WalkAll,
        _ => {
            return Err(Error::runtime(format!(
                "var_length_semantics expects 'walk' (rels may repeat, the default), 'trail' (openCypher: no rel twice in a path) or 'walk_all' (Kùzu: the fixed-length rels of a MATCH may repeat too), got {value}"
            )))
        }
    })
}

/// `CALL show_tables()`: every table's name and kind.
fn show_tables(snapshot: &kith_storage::Version) -> QueryResult {
    let rows = snapshot
        .catalog
        .tables()
        .iter()
        .map(|t| {
            vec![
                Value::String(t.name.clone()),
                Value::String(t.kind_name().to_string()),
            ]
        })
        .collect();
    table_result(
        &["name", "type"],
        vec![LogicalType::String, LogicalType::String],
        rows,
    )
}

/// `CALL table_info(name)`: every property of table `id`.
fn table_info(snapshot: &kith_storage::Version, id: kith_common::TableId) -> Result<QueryResult> {
    let t = snapshot
        .catalog
        .table(id)
        .ok_or_else(|| Error::catalog("table vanished"))?;
    let pk = t.primary_key().map(|p| p.id);
    let rows = t
        .properties
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![
                Value::Int64(i as i64),
                Value::String(p.name.clone()),
                Value::String(p.ty.to_string()),
                Value::Bool(Some(p.id) == pk),
            ]
        })
        .collect();
    Ok(table_result(
        &["property id", "name", "type", "primary key"],
        vec![
            LogicalType::Int64,
            LogicalType::String,
            LogicalType::String,
            LogicalType::Bool,
        ],
        rows,
    ))
}

/// A bound statement while it runs: the connection, the version it reads,
/// its parameters, the settings it started with and its token.
struct BoundRun<'a> {
    conn: &'a Connection,
    snapshot: &'a Arc<kith_storage::Version>,
    params: &'a HashMap<String, Value>,
    settings: crate::database::Settings,
    cancel: CancelToken,
}

impl BoundRun<'_> {
    /// `COPY T FROM 'file'`, in a write transaction of its own.
    fn copy_from(&self, copy: &kith_planner::bound::BoundCopy) -> Result<QueryResult> {
        let conn = self.conn;
        let table = self
            .snapshot
            .catalog
            .table(copy.table)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        let progress = conn.progress.clone().map(|cb| {
            Arc::new(move |done, total| cb(crate::Progress { done, total }))
                as kith_exec::copy::ProgressFn
        });
        let rows = kith_exec::copy::copy_from(
            &conn.db.storage,
            &conn.db.sched,
            self.settings.threads,
            &self.cancel,
            copy,
            progress,
        )
        .map_err(|e| e.or_span(copy.span))?;
        Ok(message(format!(
            "{rows} tuples have been copied to the {table} table."
        )))
    }

    /// Plans a query (keeping the plan in the cache under `cache`) and runs it.
    fn query(
        &self,
        q: kith_planner::bound::BoundQuery,
        cache: Option<(&str, PlanKey, bool)>,
    ) -> Result<QueryResult> {
        let snapshot = self.snapshot;
        let plan = Arc::new(kith_planner::planner::plan_query(
            q,
            &snapshot.catalog,
            &planner_rows(snapshot, &self.settings),
        )?);
        if let Some((text, key, matches_patterns)) = cache {
            let cached = CachedPlan {
                plan: Arc::clone(&plan),
                matches_patterns,
            };
            self.conn.plans.lock().insert(text, key, cached);
        }
        query_result(
            self.conn,
            &plan,
            snapshot,
            self.params,
            &self.cancel,
            &self.settings,
        )
    }

    /// `PROFILE` of `inner`.
    fn profile(&self, inner: BoundStatement) -> Result<QueryResult> {
        let (snapshot, settings) = (self.snapshot, &self.settings);
        match inner {
            // PROFILE runs the query and reports, under the plan, each
            // operator's tuples and time (totals over all workers).
            BoundStatement::Query(q) => {
                let plan = kith_planner::planner::plan_query(
                    *q,
                    &snapshot.catalog,
                    &planner_rows(snapshot, settings),
                )?;
                let profile = Arc::new(kith_exec::profile::Profile::default());
                let start = std::time::Instant::now();
                let chunks = execute_plan_profiled(
                    self.conn,
                    &plan,
                    snapshot,
                    self.params,
                    &self.cancel,
                    settings,
                    Some(Arc::clone(&profile)),
                )?;
                let elapsed = start.elapsed();
                let rows: usize = chunks.iter().map(|c| c.num_rows).sum();
                Ok(message(format!(
                    "{}
{}
result: {rows} rows in {:.3} ms with {} threads (operator times are summed over threads and include the operators they pull from; sinks are not listed)",
                    plan.explain(&snapshot.catalog).trim_end(),
                    profile.report().trim_end(),
                    elapsed.as_secs_f64() * 1e3,
                    settings.threads
                )))
            }
            _ => Err(Error::not_supported(
                "PROFILE of statements other than single queries",
            )),
        }
    }

    /// `EXPLAIN` of `inner`.
    fn explain(&self, inner: BoundStatement) -> Result<QueryResult> {
        let (snapshot, settings) = (self.snapshot, &self.settings);
        match inner {
            BoundStatement::Query(q) => self.explain_query(*q),
            BoundStatement::Union { queries, all } => {
                let mut parts = Vec::new();
                for q in queries {
                    let plan = kith_planner::planner::plan_query(
                        q,
                        &snapshot.catalog,
                        &planner_rows(snapshot, settings),
                    )?;
                    let ctx = query_context(self.conn, snapshot, self.params, &self.cancel, None);
                    let physical = kith_exec::run::explain_physical(&plan, ctx, settings.threads)?;
                    parts.push(
                        format!("{}{physical}", plan.explain(&snapshot.catalog))
                            .trim_end()
                            .to_string(),
                    );
                }
                let glue = if all { "\nUNION ALL\n" } else { "\nUNION\n" };
                Ok(message(parts.join(glue)))
            }
            _ => Err(Error::not_supported(
                "EXPLAIN of statements other than queries",
            )),
        }
    }

    /// `EXPLAIN` of a single query: its plan, with the recursive joins'
    /// dispatch policy as the settings choose it, then its pipelines as the
    /// executor resolves them (operators, rewrites, build sides), with
    /// nothing run.
    fn explain_query(&self, q: kith_planner::bound::BoundQuery) -> Result<QueryResult> {
        let (snapshot, settings) = (self.snapshot, &self.settings);
        let mut plan = kith_planner::planner::plan_query(
            q,
            &snapshot.catalog,
            &planner_rows(snapshot, settings),
        )?;
        for part in &mut plan.parts {
            if let Some(r) = &mut part.recursive {
                let k = settings
                    .recursive
                    .k
                    .map_or("auto".to_string(), |k| k.to_string());
                r.policy = Some(format!(
                    "{} k={k} threads={}",
                    settings.recursive.policy.map_or(
                        "auto (nTkMS for shortest lengths from 8+ sources, else nTkS)",
                        |p| p.name()
                    ),
                    settings.threads
                ));
            }
        }
        let ctx = query_context(self.conn, snapshot, self.params, &self.cancel, None);
        let physical = kith_exec::run::explain_physical(&plan, ctx, settings.threads)?;
        Ok(message(format!(
            "{}{physical}",
            plan.explain(&snapshot.catalog)
        )))
    }
}

/// `UNION [ALL]`: plans and runs the queries one after another on the same
/// snapshot and concatenates their rows; without ALL, a row equal (as
/// grouping keys compare: NULLs equal, 1 = 1.0) to an earlier one is dropped.
/// A column whose type differs between the queries is returned as ANY.
fn run_union(
    conn: &Connection,
    queries: Vec<kith_planner::bound::BoundQuery>,
    all: bool,
    snapshot: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cancel: &CancelToken,
    settings: &crate::database::Settings,
) -> Result<QueryResult> {
    let mut names = Vec::new();
    let mut types: Vec<LogicalType> = Vec::new();
    let mut results = Vec::with_capacity(queries.len());
    for (i, q) in queries.into_iter().enumerate() {
        let plan = kith_planner::planner::plan_query(
            q,
            &snapshot.catalog,
            &planner_rows(snapshot, settings),
        )?;
        let chunks = execute_plan(conn, &plan, snapshot, params, cancel, settings)?;
        if i == 0 {
            names = plan.names;
            types = plan.types.clone();
        } else {
            for (t, u) in types.iter_mut().zip(&plan.types) {
                if t != u {
                    *t = LogicalType::Any;
                }
            }
        }
        results.push((plan.types, chunks));
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (query_types, chunks) in results {
        for chunk in chunks {
            if all && query_types == types {
                out.push(chunk);
                continue;
            }
            let mut copy = Chunk::new(&types, 0);
            append_rows(&mut copy, &chunk, (!all).then_some(&mut seen))?;
            if copy.num_rows > 0 {
                out.push(copy);
            }
        }
    }
    Ok(QueryResult {
        names,
        types,
        chunks: out,
        silent: false,
    })
}

/// Appends the rows of `chunk` to `out` (converting values to `out`'s column
/// types), skipping rows already in `seen` when given.
fn append_rows(
    out: &mut Chunk,
    chunk: &Chunk,
    mut seen: Option<&mut std::collections::HashSet<kith_exec::operator::hash_aggregate::GroupKey>>,
) -> Result<()> {
    for pos in 0..chunk.num_rows {
        let row = chunk.row(pos);
        if let Some(seen) = seen.as_deref_mut() {
            if !seen.insert(kith_exec::operator::hash_aggregate::GroupKey(row.clone())) {
                continue;
            }
        }
        for (col, v) in out.columns.iter_mut().zip(row) {
            let v = kith_exec::expression::cast::coerce(v, &col.ty)?;
            col.push_value(&v);
        }
        out.num_rows += 1;
    }
    Ok(())
}

/// Runs a planned query on `version` with the connection's settings; the
/// statement's own token decides interruption and timeouts.
pub(crate) fn execute_plan(
    conn: &Connection,
    plan: &kith_planner::plan::QueryPlan,
    version: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cancel: &CancelToken,
    settings: &crate::database::Settings,
) -> Result<Vec<Chunk>> {
    execute_plan_profiled(conn, plan, version, params, cancel, settings, None)
}

/// [`execute_plan`] whose first part starts from the rows of `initial`.
pub(crate) fn execute_plan_from(
    conn: &Connection,
    plan: &kith_planner::plan::QueryPlan,
    initial: Chunk,
    version: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cancel: &CancelToken,
    settings: &crate::database::Settings,
) -> Result<Vec<Chunk>> {
    run_plan(
        conn,
        plan,
        Some(initial),
        version,
        params,
        cancel,
        settings,
        None,
    )
}

/// [`execute_plan`], counting every operator's output into `profile`.
fn execute_plan_profiled(
    conn: &Connection,
    plan: &kith_planner::plan::QueryPlan,
    version: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cancel: &CancelToken,
    settings: &crate::database::Settings,
    profile: Option<Arc<kith_exec::profile::Profile>>,
) -> Result<Vec<Chunk>> {
    run_plan(conn, plan, None, version, params, cancel, settings, profile)
}

/// Runs `plan` on `version` with the connection's settings; its first part
/// starts from `initial` when given.
#[allow(clippy::too_many_arguments)]
fn run_plan(
    conn: &Connection,
    plan: &kith_planner::plan::QueryPlan,
    initial: Option<Chunk>,
    version: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cancel: &CancelToken,
    settings: &crate::database::Settings,
    profile: Option<Arc<kith_exec::profile::Profile>>,
) -> Result<Vec<Chunk>> {
    let ctx = query_context(conn, version, params, cancel, profile);
    let chunks = kith_exec::run::execute_query_from(
        plan,
        initial,
        ctx,
        &conn.db.sched,
        settings.threads,
        &settings.recursive,
    )?;
    cancel.check()?;
    Ok(chunks)
}

/// The executor's context of a statement on `version`.
fn query_context(
    conn: &Connection,
    version: &Arc<kith_storage::Version>,
    params: &HashMap<String, Value>,
    cancel: &CancelToken,
    profile: Option<Arc<kith_exec::profile::Profile>>,
) -> Arc<QueryContext> {
    Arc::new(QueryContext {
        version: Arc::clone(version),
        pager: Arc::clone(conn.db.storage.pager()),
        params: params.clone(),
        cancel: cancel.clone(),
        profile,
        subqueries: Arc::default(),
        memory: Arc::new(kith_exec::memory::QueryMemory::new(Arc::clone(
            conn.db.storage.pager(),
        ))),
        semi_masks: Arc::default(),
        csr_pins: Arc::default(),
    })
}

/// The largest `var_length_max_depth`.
fn kith_graph_max_upper() -> u32 {
    kith_exec::operator::recursive_join::MAX_DEPTH_LIMIT
}

/// The table sizes the planner estimates from: the snapshot's, or with
/// `plan_seed` set, each scaled by a factor between 1/64 and 64 that the
/// seed and the table fix. Wrong estimates only change which (equally
/// correct) join order, start node or join kind the planner picks, so
/// results must not change: the query fuzzer checks that they do not.
pub(crate) fn planner_rows<'a>(
    snapshot: &'a kith_storage::Version,
    settings: &crate::database::Settings,
) -> impl Fn(kith_common::TableId) -> u64 + 'a {
    let seed = settings.plan_seed;
    move |t| {
        let rows = snapshot.cardinality(t);
        if seed == 0 {
            return rows;
        }
        // splitmix64 of the seed and the table: a fixed, well-spread draw.
        let mut z = seed ^ (u64::from(t.0)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let shift = (z % 13) as i32 - 6;
        let scaled = if shift >= 0 {
            rows.saturating_mul(1 << shift)
        } else {
            rows >> -shift
        };
        scaled.max(1)
    }
}
