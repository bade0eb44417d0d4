//! The `insert` suite (issue 5): write throughput, KithDB and Kùzu side by
//! side, through the same drivers as the read suites.
//!
//! Schema `P(id INT64 PRIMARY KEY, name STRING, age INT64)`,
//! `K(FROM P TO P, since INT64)`. Row i is
//! `{id: i, name: 'n<i>', age: i % 100}` (the issue writes `toString(i)`;
//! Kùzu 0.11 has no `toString`, so both engines get `to_string`).
//! Four phases, each on a fresh on-disk database in a fresh driver process
//! (so peak RSS and DB size are per phase):
//!
//! 1. `autocommit`: `CREATE (:P {id: $id, name: $name, age: $age})` once per
//!    row, each its own transaction, until `single_rows` rows or
//!    `single_max_ms` have passed (checked after each transaction).
//! 2. `batched`: the same rows and statement, `per_tx` per
//!    `BEGIN TRANSACTION` … `COMMIT`.
//! 3. `bulk`: `nodes` nodes by `UNWIND range(..) … CREATE`, then `rels`
//!    relationships by `UNWIND range(..) MATCH (a), (b) CREATE (a)-[:K]->(b)`,
//!    `chunk` rows per statement (same chunks for both engines).
//! 4. `rels-batched` (not in the issue; added because the UNWIND form of 3
//!    is a cross product in both engines): `nodes` nodes as in 3, then
//!    `MATCH (a:P {id: $a}), (b:P {id: $b}) CREATE (a)-[:K {since: $s}]->(b)`
//!    once per rel, `per_tx` per transaction, capped like phase 1.
//! 5. `rels-autocommit` (not in the issue): `nodes` nodes and `rels` rels
//!    loaded with COPY from CSV files written here (the same files for both
//!    engines; reported as "setup"), then [`INSERT_REL`] once per rel, each
//!    its own transaction, capped like phase 1: one-edge commits into a
//!    large existing rel table.
//! 6. `updates` (not in the issue): the set-up of 5, then SETs and DELETEs
//!    of single rows into the loaded tables, each its own transaction and
//!    capped like phase 1 ([`SET_NODE`] on nodes 0.., [`SET_REL`] on rels
//!    0.., [`DELETE_REL`] on the last rels), then one statement setting a
//!    property of every rel ([`SET_ALL_RELS`]) and of every node
//!    ([`SET_ALL_NODES`]).
//!
//! Phases 1 and 2 loop inside the driver (`exec_params`): one protocol round
//! trip per phase, so the figures are the engines' (plus, for Kùzu, its
//! Python binding, which is how Kùzu is driven everywhere here), not the
//! pipe's. Every phase ends with a check query whose answer is compared with
//! the value computed here from the row formula, which also makes the
//! engines' answers comparable with each other.

use std::path::PathBuf;
use std::time::Duration;

use crate::driver::{Driver, DriverSpawn, EngineKind};
use crate::json::Json;
use crate::runner::RunMeta;
use crate::sys;

pub const DDL: &[&str] = &[
    "CREATE NODE TABLE P(id INT64 PRIMARY KEY, name STRING, age INT64)",
    "CREATE REL TABLE K(FROM P TO P, since INT64)",
];

pub const INSERT_ONE: &str = "CREATE (:P {id: $id, name: $name, age: $age})";

/// Issue 5's full size: 1 M nodes, 10 M relationships.
pub const FULL_NODES: u64 = 1_000_000;
pub const FULL_RELS: u64 = 10_000_000;

#[derive(Clone, Debug)]
pub struct InsertOptions {
    pub threads: Vec<usize>,
    pub engines: Vec<EngineKind>,
    pub single_rows: u64,
    pub single_max_ms: u64,
    pub per_tx: usize,
    pub nodes: u64,
    pub rels: u64,
    pub chunk: u64,
    /// Which phases to run (`autocommit`, `batched`, `bulk`).
    pub phases: Vec<String>,
    pub buffer_pool_bytes: Option<u64>,
    pub tmp_dir: PathBuf,
    pub spawn: DriverSpawn,
    pub timeout_ms: Option<u64>,
}

pub const PHASES: &[&str] = &[
    "autocommit",
    "batched",
    "bulk",
    "rels-batched",
    "rels-autocommit",
    "updates",
];

/// Phase `updates`: one node's property by primary key.
pub const SET_NODE: &str = "MATCH (p:P {id: $id}) SET p.age = $age";
/// One rel, found from its ends' keys and its `since` (rel i's is i).
pub const SET_REL: &str =
    "MATCH (a:P {id: $a})-[k:K]->(b:P {id: $b}) WHERE k.since = $s SET k.since = $t";
pub const DELETE_REL: &str =
    "MATCH (a:P {id: $a})-[k:K]->(b:P {id: $b}) WHERE k.since = $s DELETE k";
pub const SET_ALL_RELS: &str = "MATCH ()-[k:K]->() SET k.since = k.since + 1";
pub const SET_ALL_NODES: &str = "MATCH (p:P) SET p.age = p.age + 1";
pub const AGE_CHECK: &str = "MATCH (p:P) RETURN count(*), sum(p.age)";
pub const SINCE_CHECK: &str = "MATCH ()-[k:K]->() RETURN count(*), sum(k.since)";

fn pair(a: u64, b: u64) -> Json {
    Json::Arr(vec![Json::Arr(vec![
        Json::Int(a as i64),
        Json::Int(b as i64),
    ])])
}

/// One relationship per statement, endpoints found by primary key: the
/// index-lookup form that a client inserting edges one at a time uses.
pub const INSERT_REL: &str =
    "MATCH (a:P {id: $a}), (b:P {id: $b}) CREATE (a)-[:K {since: $s}]->(b)";

/// Statement creating nodes `lo..=hi`.
pub fn nodes_stmt(lo: u64, hi: u64) -> String {
    format!(
        "UNWIND range({lo}, {hi}) AS i CREATE (:P {{id: i, name: 'n' + to_string(i), age: i % 100}})"
    )
}

/// Statement creating relationships `lo..=hi` among `nodes` nodes.
pub fn rels_stmt(lo: u64, hi: u64, nodes: u64) -> String {
    format!(
        "UNWIND range({lo}, {hi}) AS i MATCH (a:P {{id: i % {nodes}}}), (b:P {{id: (i * 7919) % {nodes}}}) CREATE (a)-[:K {{since: i}}]->(b)"
    )
}

pub const NODE_CHECK: &str = "MATCH (p:P) RETURN count(*), sum(p.age), sum(p.id)";
pub const REL_CHECK: &str =
    "MATCH (a:P)-[k:K]->(b:P) RETURN count(*), sum(k.since), sum(a.id), sum(b.id)";

/// Expected answer of [`NODE_CHECK`] after rows `0..n`.
pub fn node_check_expected(n: u64) -> Json {
    let ages: u64 = (n / 100) * 4950 + (0..n % 100).sum::<u64>();
    let ids = n * n.saturating_sub(1) / 2;
    Json::Arr(vec![Json::Arr(vec![
        Json::Int(n as i64),
        Json::Int(ages as i64),
        Json::Int(ids as i64),
    ])])
}

/// Expected answer of [`REL_CHECK`] after relationships `0..m` among `nodes`.
pub fn rel_check_expected(m: u64, nodes: u64) -> Json {
    let mut a = 0u128;
    let mut b = 0u128;
    for i in 0..m {
        let (src, dst, _) = rel_row(i, nodes);
        a += u128::from(src);
        b += u128::from(dst);
    }
    let since = u128::from(m) * u128::from(m.saturating_sub(1)) / 2;
    Json::Arr(vec![Json::Arr(vec![
        Json::Int(m as i64),
        Json::Int(since as i64),
        Json::Int(a as i64),
        Json::Int(b as i64),
    ])])
}

/// Row `i` as parameter values in the order `id, name, age`.
pub fn row(i: u64) -> Json {
    Json::Arr(vec![
        Json::Int(i as i64),
        Json::Str(format!("n{i}")),
        Json::Int((i % 100) as i64),
    ])
}

#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub rows: u64,
    pub txns: u64,
    pub ms: f64,
    pub error: Option<String>,
}

impl Step {
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / (self.ms / 1e3)
    }
    pub fn txns_per_s(&self) -> f64 {
        self.txns as f64 / (self.ms / 1e3)
    }
}

#[derive(Clone, Debug)]
pub struct Check {
    pub query: String,
    pub got: Result<Json, String>,
    pub expected: Json,
}

impl Check {
    pub fn ok(&self) -> bool {
        self.got
            .as_ref()
            .is_ok_and(|g| crate::runner::compare_rows(g, &self.expected).is_ok())
    }
}

#[derive(Clone, Debug)]
pub struct PhaseResult {
    pub engine: EngineKind,
    pub version: Option<String>,
    pub threads: usize,
    pub phase: String,
    pub steps: Vec<Step>,
    pub checks: Vec<Check>,
    pub error: Option<String>,
    pub peak_rss_kb: Option<u64>,
    pub db_bytes: Option<u64>,
    /// 1-minute load average before and after the phase.
    pub load: (Option<f64>, Option<f64>),
}

pub fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn log(msg: &str) {
    eprintln!("[kith-bench insert] {msg}");
}

fn run_phase(o: &InsertOptions, engine: &EngineKind, threads: usize, phase: &str) -> PhaseResult {
    let mut out = PhaseResult {
        engine: engine.clone(),
        version: None,
        threads,
        phase: phase.to_string(),
        steps: vec![],
        checks: vec![],
        error: None,
        peak_rss_kb: None,
        db_bytes: None,
        load: (load_avg(), None),
    };
    let mut d = match Driver::start(engine, &o.spawn) {
        Ok(d) => d,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    out.version = d
        .hello
        .get("version")
        .and_then(Json::as_str)
        .map(String::from);
    let dir = o.tmp_dir.join(format!(
        "kith-bench-insert-{}-{}-t{threads}-{phase}",
        std::process::id(),
        engine.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        out.error = Some(format!("cannot create {}: {e}", dir.display()));
        d.quit();
        return out;
    }
    if let Err(e) = d.open(&dir.join("db"), threads, o.buffer_pool_bytes) {
        out.error = Some(format!("open: {e}"));
        d.quit();
        let _ = std::fs::remove_dir_all(&dir);
        return out;
    }
    d.hard_timeout = o
        .timeout_ms
        .map(|ms| Duration::from_millis(2 * ms) + Duration::from_secs(30));
    let tag = format!("{} t={threads} {phase}", engine.name());
    for s in DDL {
        if let Err(e) = d.exec(s, o.timeout_ms) {
            out.error = Some(format!("DDL: {e}"));
        }
    }
    if out.error.is_none() {
        match phase {
            "autocommit" | "batched" => {
                let (per_tx, max_ms, name) = if phase == "autocommit" {
                    (1, o.single_max_ms, "auto-commit single-row CREATE")
                } else {
                    (o.per_tx, 0, "batched single-row CREATE")
                };
                let rows: Vec<Json> = (0..o.single_rows).map(row).collect();
                let stmt = (INSERT_ONE, &["id", "name", "age"][..], rows);
                params_step(&mut d, &tag, name, stmt, (per_tx, max_ms), &mut out, |n| {
                    (NODE_CHECK, node_check_expected(n))
                });
            }
            "rels-autocommit" => {
                if copy_setup(&mut d, o, &tag, &dir, &mut out) {
                    rel_insert_step(
                        &mut d,
                        o,
                        &tag,
                        "auto-commit single-rel MATCH by id + CREATE",
                        (o.rels, o.nodes),
                        1,
                        &mut out,
                    );
                }
            }
            "updates" => {
                if copy_setup(&mut d, o, &tag, &dir, &mut out) {
                    updates(&mut d, o, &tag, &mut out);
                }
            }
            "rels-batched" => {
                // Nodes first (timed and reported, but not the point), then
                // rel i = (i % nodes) -> (i * 7919 % nodes), as in `bulk`.
                let nodes = o.nodes;
                if bulk_step(
                    &mut d,
                    o,
                    &tag,
                    "setup: bulk nodes",
                    nodes,
                    &mut out,
                    nodes_stmt,
                ) {
                    rel_insert_step(
                        &mut d,
                        o,
                        &tag,
                        "batched single-rel MATCH by id + CREATE",
                        (0, nodes),
                        o.per_tx,
                        &mut out,
                    );
                }
            }
            _ => {
                let ok_nodes =
                    bulk_step(&mut d, o, &tag, "bulk nodes", o.nodes, &mut out, nodes_stmt);
                if ok_nodes {
                    out.checks
                        .push(check(&mut d, NODE_CHECK, node_check_expected(o.nodes)));
                }
                if ok_nodes && o.rels > 0 {
                    let nodes = o.nodes;
                    if bulk_step(&mut d, o, &tag, "bulk rels", o.rels, &mut out, |lo, hi| {
                        rels_stmt(lo, hi, nodes)
                    }) {
                        out.checks.push(check(
                            &mut d,
                            REL_CHECK,
                            rel_check_expected(o.rels, nodes),
                        ));
                    }
                }
            }
        }
    }
    for c in &out.checks {
        if !c.ok() {
            log(&format!(
                "{tag}: CHECK FAILED {}: got {:?}, expected {}",
                c.query, c.got, c.expected
            ));
        }
    }
    d.hard_timeout = None;
    out.peak_rss_kb = d.peak_rss_kb();
    if let Err(e) = d.close() {
        log(&format!("{tag}: close: {e}"));
    }
    d.quit();
    out.db_bytes = Some(sys::disk_usage(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    out.load.1 = load_avg();
    out
}

fn check(d: &mut Driver, query: &str, expected: Json) -> Check {
    Check {
        query: query.to_string(),
        got: d.exec(query, None).map(|r| r.rows),
        expected,
    }
}

/// Rel `i` among `nodes` nodes: (source id, destination id, since).
fn rel_row(i: u64, nodes: u64) -> (u64, u64, u64) {
    (i % nodes, i.wrapping_mul(7919) % nodes, i)
}

/// The set-up of phases `rels-autocommit` and `updates`: `nodes` nodes and
/// `rels` rels written to CSV files and loaded with COPY (one step). False
/// on error.
fn copy_setup(
    d: &mut Driver,
    o: &InsertOptions,
    tag: &str,
    dir: &std::path::Path,
    out: &mut PhaseResult,
) -> bool {
    use std::fmt::Write as _;
    let (nodes, rels) = (o.nodes, o.rels);
    let mut text = String::from("id,name,age\n");
    for i in 0..nodes {
        let _ = writeln!(text, "{i},n{i},{}", i % 100);
    }
    let nodes_csv = dir.join("nodes.csv");
    let mut rel_text = String::from("from,to,since\n");
    for i in 0..rels {
        let (a, b, s) = rel_row(i, nodes);
        let _ = writeln!(rel_text, "{a},{b},{s}");
    }
    let rels_csv = dir.join("rels.csv");
    if let Err(e) = std::fs::write(&nodes_csv, text).and(std::fs::write(&rels_csv, rel_text)) {
        out.error = Some(format!("cannot write the CSV files: {e}"));
        return false;
    }
    let mut setup = Step {
        name: "setup: COPY nodes and rels".into(),
        rows: nodes + rels,
        txns: 2,
        ms: 0.0,
        error: None,
    };
    for (table, file) in [("P", &nodes_csv), ("K", &rels_csv)] {
        let stmt = format!("COPY {table} FROM '{}' (HEADER=true)", file.display());
        match d.exec(&stmt, o.timeout_ms) {
            Ok(r) => setup.ms += r.ms,
            Err(e) => {
                log(&format!("{tag}: {stmt}: error: {e}"));
                setup.error = Some(e.clone());
                out.error = Some(e);
            }
        }
    }
    log(&format!(
        "{tag}: setup: {} rows in {:.0} ms",
        setup.rows, setup.ms
    ));
    out.steps.push(setup);
    out.error.is_none()
}

/// Phase `updates` after [`copy_setup`] (see the module comment). Every
/// step's check is computed from the rows the steps before it did.
fn updates(d: &mut Driver, o: &InsertOptions, tag: &str, out: &mut PhaseResult) {
    let (nodes, rels) = (o.nodes, o.rels);
    let done = |out: &PhaseResult| {
        out.error
            .is_none()
            .then(|| out.steps.last().map_or(0, |s| s.rows))
    };
    // Node i's age is i % 100; SET_NODE makes it 1000 + i.
    let base_ages: u64 = (nodes / 100) * 4950 + (0..nodes % 100).sum::<u64>();
    let rows: Vec<Json> = (0..o.single_rows.min(nodes))
        .map(|i| Json::Arr(vec![Json::Int(i as i64), Json::Int(1000 + i as i64)]))
        .collect();
    let limits = (1, o.single_max_ms);
    params_step(
        d,
        tag,
        "auto-commit single-node SET",
        (SET_NODE, &["id", "age"], rows),
        limits,
        out,
        |n| {
            let raised: u64 = (0..n).map(|i| 1000 + i - i % 100).sum();
            (AGE_CHECK, pair(nodes, base_ages + raised))
        },
    );
    let Some(set_nodes) = done(out) else { return };
    let ages = base_ages + (0..set_nodes).map(|i| 1000 + i - i % 100).sum::<u64>();
    // Rel i's since is i; SET_REL adds `rels`, DELETE_REL takes the last ones.
    let base_since = rels * rels.saturating_sub(1) / 2;
    let rel_params = |i: u64, extra: Option<u64>| {
        let (a, b, s) = rel_row(i, nodes);
        let mut v = vec![
            Json::Int(a as i64),
            Json::Int(b as i64),
            Json::Int(s as i64),
        ];
        v.extend(extra.map(|t| Json::Int(t as i64)));
        Json::Arr(v)
    };
    let rows: Vec<Json> = (0..o.single_rows.min(rels / 2))
        .map(|i| rel_params(i, Some(i + rels)))
        .collect();
    params_step(
        d,
        tag,
        "auto-commit single-rel SET",
        (SET_REL, &["a", "b", "s", "t"], rows),
        limits,
        out,
        |n| (SINCE_CHECK, pair(rels, base_since + n * rels)),
    );
    let Some(set_rels) = done(out) else { return };
    let since = base_since + set_rels * rels;
    let doomed = |n: u64| rels - n..rels;
    let rows: Vec<Json> = doomed(o.single_rows.min(rels / 2))
        .rev()
        .map(|i| rel_params(i, None))
        .collect();
    params_step(
        d,
        tag,
        "auto-commit single-rel DELETE",
        (DELETE_REL, &["a", "b", "s"], rows),
        limits,
        out,
        |n| (SINCE_CHECK, pair(rels - n, since - doomed(n).sum::<u64>())),
    );
    let Some(deleted) = done(out) else { return };
    let (live, since) = (rels - deleted, since - doomed(deleted).sum::<u64>());
    if one_statement_step(
        d,
        o,
        tag,
        "SET of every rel (one statement)",
        SET_ALL_RELS,
        live,
        out,
    ) {
        out.checks
            .push(check(d, SINCE_CHECK, pair(live, since + live)));
    }
    if one_statement_step(
        d,
        o,
        tag,
        "SET of every node (one statement)",
        SET_ALL_NODES,
        nodes,
        out,
    ) {
        out.checks
            .push(check(d, AGE_CHECK, pair(nodes, ages + nodes)));
    }
}

/// Runs `stmt` once, as a step of `rows` rows; false on error.
fn one_statement_step(
    d: &mut Driver,
    o: &InsertOptions,
    tag: &str,
    name: &str,
    stmt: &str,
    rows: u64,
    out: &mut PhaseResult,
) -> bool {
    let (ms, error) = match d.exec(stmt, o.timeout_ms) {
        Ok(r) => (r.ms, None),
        Err(e) => (0.0, Some(e)),
    };
    log(&format!(
        "{tag}: {name}: {ms:.0} ms{}",
        error
            .as_deref()
            .map_or(String::new(), |e| format!(" ({e})"))
    ));
    let ok = error.is_none();
    out.steps.push(Step {
        name: name.into(),
        rows,
        txns: 1,
        ms,
        error,
    });
    ok
}

/// Rels `first..` among `nodes` nodes (`(first, nodes)`) by [`INSERT_REL`],
/// `per_tx` per transaction, until `single_rows` rels or `single_max_ms`;
/// then checks every rel from 0 on.
fn rel_insert_step(
    d: &mut Driver,
    o: &InsertOptions,
    tag: &str,
    name: &str,
    (first, nodes): (u64, u64),
    per_tx: usize,
    out: &mut PhaseResult,
) {
    let params: Vec<Json> = (first..first + o.single_rows)
        .map(|i| {
            let (a, b, s) = rel_row(i, nodes);
            Json::Arr(vec![
                Json::Int(a as i64),
                Json::Int(b as i64),
                Json::Int(s as i64),
            ])
        })
        .collect();
    let stmt = (INSERT_REL, &["a", "b", "s"][..], params);
    let limits = (per_tx, o.single_max_ms);
    params_step(d, tag, name, stmt, limits, out, |n| {
        (REL_CHECK, rel_check_expected(first + n, nodes))
    });
}

/// Runs `stmt` (text, parameter names, one parameter row per execution)
/// inside the driver, `limits.0` executions per transaction, stopping after
/// `limits.1` ms (0: never); records the step and the check `expected`
/// gives for the number of rows done.
fn params_step(
    d: &mut Driver,
    tag: &str,
    name: &str,
    (text, names, rows): (&str, &[&str], Vec<Json>),
    (per_tx, max_ms): (usize, u64),
    out: &mut PhaseResult,
    expected: impl FnOnce(u64) -> (&'static str, Json),
) {
    match d.exec_params(text, names, rows, per_tx, max_ms) {
        Ok((ms, n, t)) => {
            log(&format!("{tag}: {n} rows in {t} txns, {ms:.0} ms"));
            out.steps.push(Step {
                name: name.into(),
                rows: n,
                txns: t,
                ms,
                error: None,
            });
            let (query, want) = expected(n);
            out.checks.push(check(d, query, want));
        }
        Err(e) => {
            log(&format!("{tag}: error: {e}"));
            out.error = Some(e);
        }
    }
}

/// Runs `total` rows in statements of `chunk` rows; false on error.
fn bulk_step(
    d: &mut Driver,
    o: &InsertOptions,
    tag: &str,
    name: &str,
    total: u64,
    out: &mut PhaseResult,
    stmt: impl Fn(u64, u64) -> String,
) -> bool {
    let mut step = Step {
        name: name.to_string(),
        rows: 0,
        txns: 0,
        ms: 0.0,
        error: None,
    };
    let chunk = o.chunk.max(1);
    let mut lo = 0;
    while lo < total {
        let hi = (lo + chunk).min(total) - 1;
        match d.exec(&stmt(lo, hi), o.timeout_ms) {
            Ok(r) => {
                step.ms += r.ms;
                step.rows = hi + 1;
                step.txns += 1;
            }
            Err(e) => {
                log(&format!("{tag}: {name} rows {lo}..={hi}: error: {e}"));
                step.error = Some(format!("rows {lo}..={hi}: {e}"));
                break;
            }
        }
        lo = hi + 1;
    }
    log(&format!(
        "{tag}: {name}: {} rows in {:.0} ms{}",
        step.rows,
        step.ms,
        step.error
            .as_deref()
            .map_or(String::new(), |e| format!(" ({e})"))
    ));
    let ok = step.error.is_none();
    out.steps.push(step);
    ok
}

#[derive(Clone, Debug)]
pub struct InsertReport {
    pub meta: RunMeta,
    pub opts: InsertOptions,
    pub results: Vec<PhaseResult>,
}

pub fn run(o: &InsertOptions) -> InsertReport {
    let mut results = Vec::new();
    'engines: for engine in &o.engines {
        for &t in &o.threads {
            for phase in &o.phases {
                log(&format!("== {} with {t} thread(s): {phase}", engine.name()));
                let r = run_phase(o, engine, t, phase);
                let fatal = r.error.as_deref().is_some_and(|e| !e.starts_with("DDL"))
                    && r.steps.is_empty()
                    && r.version.is_none();
                results.push(r);
                if fatal {
                    log(&format!("!! {} cannot run; skipping it", engine.name()));
                    continue 'engines;
                }
            }
        }
    }
    InsertReport {
        meta: RunMeta::collect(),
        opts: o.clone(),
        results,
    }
}

fn fmt_int(x: f64) -> String {
    let s = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl InsertReport {
    fn find(&self, e: &EngineKind, t: usize, phase: &str) -> Option<&PhaseResult> {
        self.results
            .iter()
            .find(|r| &r.engine == e && r.threads == t && r.phase == phase)
    }

    pub fn markdown(&self) -> String {
        let o = &self.opts;
        let m = &self.meta;
        let mut s = String::new();
        s.push_str("## insert (issue 5): write throughput\n\n");
        s.push_str(&format!(
            "- date {}, git `{}`, {} cores{}{}\n",
            m.date,
            m.git_rev,
            m.cores,
            m.mem_bytes.map_or(String::new(), |b| format!(
                ", {:.1} GiB",
                b as f64 / (1u64 << 30) as f64
            )),
            m.cpu.as_deref().map_or(String::new(), |c| format!(", {c}"))
        ));
        s.push_str(&format!("- command: `{}`\n", m.command));
        let versions: Vec<String> = o
            .engines
            .iter()
            .filter_map(|e| {
                self.results
                    .iter()
                    .find(|r| &r.engine == e && r.version.is_some())
                    .map(|r| format!("{} {}", e.name(), r.version.as_deref().unwrap_or("?")))
            })
            .collect();
        s.push_str(&format!("- engines: {}\n", versions.join(", ")));
        s.push_str(&format!(
            "- single-row phases: up to {} rows (auto-commit stops after {} ms), batched {} rows per BEGIN TRANSACTION … COMMIT; bulk: {} nodes + {} rels, {} rows per UNWIND statement\n",
            o.single_rows, o.single_max_ms, o.per_tx, o.nodes, o.rels, o.chunk
        ));
        s.push_str("- throughput: rows/s (transactions/s where it differs), time in the driver; ratio = kith throughput / kuzu throughput (> 1: KithDB faster)\n\n");
        let kith = EngineKind::Kith;
        let kuzu = EngineKind::Kuzu;
        s.push_str("| step | threads | kith | kuzu | ratio kith/kuzu | load avg (kith; kuzu) |\n|---|---:|---:|---:|---:|---|\n");
        let cell = |st: Option<&Step>| -> String {
            match st {
                None => "–".into(),
                Some(st) if st.error.is_some() => {
                    format!("error: {}", st.error.as_deref().unwrap_or(""))
                }
                Some(st) => {
                    let mut c = format!("{} rows/s", fmt_int(st.rows_per_s()));
                    if st.txns != st.rows && st.txns > 1 {
                        let tps = st.txns_per_s();
                        let tps = if tps < 10.0 {
                            format!("{tps:.2}")
                        } else {
                            fmt_int(tps)
                        };
                        c.push_str(&format!(" ({tps} tx/s)"));
                    }
                    c.push_str(&format!(
                        " [{} rows, {:.2} s]",
                        fmt_int(st.rows as f64),
                        st.ms / 1e3
                    ));
                    c
                }
            }
        };
        let load = |r: Option<&PhaseResult>| -> String {
            r.map_or("–".into(), |r| {
                format!(
                    "{}→{}",
                    r.load.0.map_or("?".into(), |x| format!("{x:.2}")),
                    r.load.1.map_or("?".into(), |x| format!("{x:.2}"))
                )
            })
        };
        for phase in &o.phases {
            for &t in &o.threads {
                let a = self.find(&kith, t, phase);
                let b = self.find(&kuzu, t, phase);
                let names: Vec<String> = a
                    .or(b)
                    .map(|r| r.steps.iter().map(|s| s.name.clone()).collect())
                    .unwrap_or_default();
                for n in names {
                    let sa = a.and_then(|r| r.steps.iter().find(|s| s.name == n));
                    let sb = b.and_then(|r| r.steps.iter().find(|s| s.name == n));
                    let ratio = match (sa, sb) {
                        (Some(x), Some(y)) if x.error.is_none() && y.error.is_none() => {
                            format!("{:.2}", x.rows_per_s() / y.rows_per_s())
                        }
                        _ => "–".into(),
                    };
                    s.push_str(&format!(
                        "| {n} | {t} | {} | {} | {ratio} | {}; {} |\n",
                        cell(sa),
                        cell(sb),
                        load(a),
                        load(b)
                    ));
                }
                for (e, r) in [(&kith, a), (&kuzu, b)] {
                    if let Some(err) = r.and_then(|r| r.error.as_deref()) {
                        s.push_str(&format!(
                            "| {phase} | {t} | {}: error: {err} | | | |\n",
                            e.name()
                        ));
                    }
                }
            }
        }
        s.push_str("\n| engine | threads | phase | peak RSS MiB | DB size MiB | checks |\n|---|---:|---|---:|---:|---|\n");
        for r in &self.results {
            let checks: Vec<String> = r
                .checks
                .iter()
                .map(|c| match &c.got {
                    Ok(g) if c.ok() => format!("ok {g}"),
                    Ok(g) => format!("**MISMATCH** got {g}, expected {}", c.expected),
                    Err(e) => format!("error: {e}"),
                })
                .collect();
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                r.engine.name(),
                r.threads,
                r.phase,
                r.peak_rss_kb
                    .map_or("?".into(), |k| format!("{:.0}", k as f64 / 1024.0)),
                r.db_bytes
                    .map_or("?".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
                checks.join("; ")
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_checks() {
        // Brute force for small sizes.
        for n in [0u64, 1, 99, 100, 101, 1234] {
            let ages: u64 = (0..n).map(|i| i % 100).sum();
            let ids: u64 = (0..n).sum();
            assert_eq!(
                node_check_expected(n).to_string(),
                format!("[[{n},{ages},{ids}]]")
            );
        }
        assert_eq!(rel_check_expected(3, 2).to_string(), "[[3,3,1,1]]");
        assert_eq!(
            rels_stmt(0, 9, 10),
            "UNWIND range(0, 9) AS i MATCH (a:P {id: i % 10}), (b:P {id: (i * 7919) % 10}) CREATE (a)-[:K {since: i}]->(b)"
        );
        assert_eq!(row(7).to_string(), "[7,\"n7\",7]");
    }
}
