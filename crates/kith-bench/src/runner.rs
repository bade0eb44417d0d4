//! Runs a suite on each engine and thread count: fresh database, DDL, timed
//! bulk loads, then each query with warm-up and timed runs; records peak RSS
//! and database size, and checks results for equality across engines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::driver::{Dialect, Driver, DriverSpawn, EngineKind, HARD_TIMEOUT};
use crate::json::{self, Json};
use crate::networkit;
use crate::suite::{self, Load, LoadFormat, Query, Suite};
use crate::sys;

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub suite: &'static Suite,
    pub data_dir: PathBuf,
    pub threads: Vec<usize>,
    pub runs: usize,
    pub warmup: usize,
    pub engines: Vec<EngineKind>,
    pub buffer_pool_bytes: Option<u64>,
    pub tmp_dir: PathBuf,
    pub spawn: DriverSpawn,
    /// Per-query limit asked of the engine; a query that has not answered
    /// after twice this plus 30 s gets its driver killed and restarted.
    pub timeout_ms: Option<u64>,
    /// Which files the loads read.
    pub load_format: LoadFormat,
    /// Run only the queries whose name contains one of these (all when
    /// empty; see [`query_wanted`]).
    pub only: Vec<String>,
}

/// Whether query `name` of `names` (its suite's) is wanted by the filters
/// `only`: a filter that is a query's whole name picks that query alone
/// (`sp-paths-8src` is not also `wsp-paths-8src`); any other picks every
/// name containing it. No filter: every query.
pub fn query_wanted(name: &str, names: &[&str], only: &[String]) -> bool {
    only.is_empty()
        || only.iter().any(|o| {
            if names.contains(&o.as_str()) {
                name == o
            } else {
                name.contains(o.as_str())
            }
        })
}

#[derive(Clone, Debug)]
pub struct StepResult {
    pub name: String,
    pub ms: Option<f64>,
    pub error: Option<String>,
}

#[derive(Clone, Debug)]
pub struct QueryRun {
    pub name: String,
    pub cypher: String,
    pub times_ms: Vec<f64>,
    /// Rows of the first successful execution.
    pub rows: Option<Json>,
    pub error: Option<String>,
}

impl QueryRun {
    pub fn summary(&self) -> Option<Summary> {
        Summary::of(&self.times_ms)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() {
            return None;
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Summary {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

#[derive(Clone, Debug)]
pub struct ConfigResult {
    pub engine: EngineKind,
    pub version: Option<String>,
    pub threads: usize,
    /// Set when the configuration could not run at all (driver missing, open failed).
    pub error: Option<String>,
    pub ddl: Vec<StepResult>,
    pub loads: Vec<StepResult>,
    pub queries: Vec<QueryRun>,
    pub start_rss_kb: Option<u64>,
    pub peak_rss_kb: Option<u64>,
    pub db_bytes: Option<u64>,
}

impl ConfigResult {
    pub fn query(&self, name: &str) -> Option<&QueryRun> {
        self.queries.iter().find(|q| q.name == name)
    }
}

/// Facts about the data set (from `meta.json`, else counted).
#[derive(Clone, Debug)]
pub struct DataInfo {
    pub dir: PathBuf,
    pub meta: Json,
    pub nodes: Option<u64>,
    pub edges: Option<u64>,
}

impl DataInfo {
    pub fn load(dir: &Path) -> DataInfo {
        let meta = std::fs::read_to_string(dir.join("meta.json"))
            .ok()
            .and_then(|t| json::parse(&t).ok())
            .unwrap_or(Json::Null);
        let count = |f: &str| -> Option<u64> {
            let data = std::fs::read(dir.join(f)).ok()?;
            Some(
                data.iter()
                    .filter(|&&b| b == b'\n')
                    .count()
                    .saturating_sub(1) as u64,
            )
        };
        let nodes = meta
            .get("nodes")
            .and_then(Json::as_i64)
            .map(|n| n as u64)
            .or_else(|| count("persons.csv"));
        let edges = meta
            .get("edges")
            .and_then(Json::as_i64)
            .map(|n| n as u64)
            .or_else(|| count("knows.csv"));
        DataInfo {
            dir: dir.to_path_buf(),
            meta,
            nodes,
            edges,
        }
    }

    /// Values for the suites' `{NAME}` placeholders: those derived from the
    /// node count (Person ids for the rmat/er data), then `meta.json`'s
    /// `params` (which win).
    pub fn params(&self) -> BTreeMap<String, String> {
        let persons = self
            .meta
            .get("persons")
            .and_then(Json::as_i64)
            .map(|n| n as u64)
            .or(self.nodes)
            .unwrap_or(1);
        let mut m = suite::derived_params(persons);
        if let Some(Json::Obj(fields)) = self.meta.get("params") {
            for (k, v) in fields {
                let text = match v {
                    Json::Str(s) => s.clone(),
                    other => other.to_string(),
                };
                m.insert(k.clone(), text);
            }
        }
        m
    }

    pub fn describe(&self) -> String {
        let m = &self.meta;
        let mut s = match m.get("generator").and_then(Json::as_str) {
            Some("rmat") => format!(
                "R-MAT scale {} edge factor {} (a={}, b={}, c={}, noise {}), seed {}",
                m.get("scale").map_or("?".into(), |v| v.to_string()),
                m.get("edge_factor").map_or("?".into(), |v| v.to_string()),
                m.get("a").map_or("?".into(), |v| v.to_string()),
                m.get("b").map_or("?".into(), |v| v.to_string()),
                m.get("c").map_or("?".into(), |v| v.to_string()),
                m.get("noise").map_or("?".into(), |v| v.to_string()),
                m.get("seed").map_or("?".into(), |v| v.to_string()),
            ),
            Some("er") => format!(
                "Erdős–Rényi, average out-degree {}, seed {}",
                m.get("degree").map_or("?".into(), |v| v.to_string()),
                m.get("seed").map_or("?".into(), |v| v.to_string()),
            ),
            Some("social") => format!(
                "LDBC-like social network, {} persons ({} KNOWS, {} posts, {} comments, {} likes), seed {}",
                m.get("persons").map_or("?".into(), |v| v.to_string()),
                m.get("knows").map_or("?".into(), |v| v.to_string()),
                m.get("posts").map_or("?".into(), |v| v.to_string()),
                m.get("comments").map_or("?".into(), |v| v.to_string()),
                m.get("likes").map_or("?".into(), |v| v.to_string()),
                m.get("seed").map_or("?".into(), |v| v.to_string()),
            ),
            Some("nn50") => format!(
                "seed 004 next-neighbours graph (node n → n+1..n+{} mod N)",
                m.get("k").map_or("?".into(), |v| v.to_string()),
            ),
            _ => "CSV files".to_string(),
        };
        s.push_str(&format!(
            ": {} nodes, {} edges ({}), `{}`",
            self.nodes.map_or("?".into(), |n| n.to_string()),
            self.edges.map_or("?".into(), |n| n.to_string()),
            if m.get("self_loops").and_then(Json::as_str) == Some("dropped") {
                "simple graph: self loops and duplicates dropped"
            } else if m.get("self_loops").and_then(Json::as_str) == Some("none") {
                "simple graph"
            } else {
                "self loops and duplicates kept"
            },
            self.dir.display()
        ));
        s
    }
}

/// Header facts recorded with every run.
#[derive(Clone, Debug)]
pub struct RunMeta {
    pub date: String,
    pub git_rev: String,
    pub cores: usize,
    pub mem_bytes: Option<u64>,
    pub cpu: Option<String>,
    pub command: String,
}

impl RunMeta {
    pub fn collect() -> RunMeta {
        RunMeta {
            date: sys::utc_now(),
            git_rev: sys::git_rev(),
            cores: sys::cores(),
            mem_bytes: sys::mem_total_bytes(),
            cpu: sys::cpu_model(),
            command: sys::command_line(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Report {
    pub suite: &'static Suite,
    pub meta: RunMeta,
    pub data: DataInfo,
    pub runs: usize,
    pub warmup: usize,
    pub buffer_pool_bytes: Option<u64>,
    pub engines: Vec<EngineKind>,
    pub threads: Vec<usize>,
    pub configs: Vec<ConfigResult>,
    pub load_format: LoadFormat,
}

impl Report {
    pub fn config(&self, engine: &EngineKind, threads: usize) -> Option<&ConfigResult> {
        self.configs
            .iter()
            .find(|c| &c.engine == engine && c.threads == threads)
    }
}

fn log(msg: &str) {
    eprintln!("[kith-bench] {msg}");
}

/// Runs the suite on `engine` at `threads` threads in a fresh database: DDL,
/// loads, then the wanted queries; an error that stops it is in `error`.
fn run_config(opts: &RunOptions, engine: &EngineKind, threads: usize) -> ConfigResult {
    let mut out = ConfigResult {
        engine: engine.clone(),
        version: None,
        threads,
        error: None,
        ddl: vec![],
        loads: vec![],
        queries: vec![],
        start_rss_kb: None,
        peak_rss_kb: None,
        db_bytes: None,
    };
    let Some(mut run) = ConfigRun::start(opts, engine, threads, &mut out) else {
        return out;
    };
    run.ddl(&mut out);
    run.loads(&mut out);
    run.queries(&mut out);
    run.finish(&mut out);
    out
}

/// One engine at one thread count while it runs, with its driver and the
/// database directory it created.
struct ConfigRun<'a> {
    opts: &'a RunOptions,
    engine: &'a EngineKind,
    threads: usize,
    dialect: Dialect,
    driver: Driver,
    /// The run's scratch directory, removed at the end.
    dir: PathBuf,
    db_path: PathBuf,
    /// The data directory, as the loads and queries name it.
    data: String,
    /// Why the driver is gone for good, once it is: later queries do not run.
    dead: Option<String>,
}

impl<'a> ConfigRun<'a> {
    /// Starts the driver and opens a fresh database. On failure the error is
    /// in `out` and nothing is left running.
    fn start(
        opts: &'a RunOptions,
        engine: &'a EngineKind,
        threads: usize,
        out: &mut ConfigResult,
    ) -> Option<ConfigRun<'a>> {
        let dialect = engine.dialect();
        let missing = match dialect {
            Dialect::Sql if opts.suite.sql_ddl.is_empty() => Some("SQL version"),
            Dialect::Networkit if opts.suite.networkit_walk().is_none() => Some("NetworKit form"),
            _ => None,
        };
        if let Some(what) = missing {
            out.error = Some(format!(
                "suite {} has no {what} for {}",
                opts.suite.name,
                engine.name()
            ));
            return None;
        }
        let mut driver = match Driver::start(engine, &opts.spawn) {
            Ok(d) => d,
            Err(e) => {
                out.error = Some(e);
                return None;
            }
        };
        out.version = driver
            .hello
            .get("version")
            .and_then(Json::as_str)
            .map(String::from);
        out.start_rss_kb = driver
            .hello
            .get("rss_kb")
            .and_then(Json::as_i64)
            .map(|v| v as u64);
        let dir = opts.tmp_dir.join(format!(
            "kith-bench-{}-{}-t{threads}",
            std::process::id(),
            engine.name()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            out.error = Some(format!("cannot create {}: {e}", dir.display()));
            driver.quit();
            return None;
        }
        let db_path = dir.join("db");
        if let Err(e) = driver.open(&db_path, threads, opts.buffer_pool_bytes) {
            out.error = Some(format!("open: {e}"));
            driver.quit();
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
        let data_dir =
            std::fs::canonicalize(&opts.data_dir).unwrap_or_else(|_| opts.data_dir.clone());
        let data = data_dir.to_string_lossy().to_string();
        Some(ConfigRun {
            opts,
            engine,
            threads,
            dialect,
            driver,
            dir,
            db_path,
            data,
            dead: None,
        })
    }

    /// Runs the suite's DDL in the engine's dialect, one step per statement.
    fn ddl(&mut self, out: &mut ConfigResult) {
        let (engine, threads) = (self.engine, self.threads);
        let ddl = match self.dialect {
            Dialect::Cypher => self.opts.suite.ddl,
            Dialect::Sql => self.opts.suite.sql_ddl,
            Dialect::Networkit => &[],
        };
        for stmt in ddl {
            let r = self.driver.exec(stmt, None);
            if let Err(e) = &r {
                log(&format!("{} t={threads}: DDL error: {e}", engine.name()));
            }
            out.ddl.push(StepResult {
                name: stmt.to_string(),
                ms: r.as_ref().ok().map(|x| x.ms),
                error: r.err(),
            });
        }
    }

    /// Runs and times the suite's bulk loads.
    fn loads(&mut self, out: &mut ConfigResult) {
        let (engine, threads) = (self.engine, self.threads);
        for load in self.opts.suite.loads {
            let name = load.name();
            log(&format!("{} t={threads}: {name}", engine.name()));
            let r = load_text(self.opts, self.dialect, load, &self.data)
                .and_then(|q| self.driver.exec(&q, None));
            match &r {
                Ok(x) => log(&format!(
                    "{} t={threads}: {name} took {:.1} ms",
                    engine.name(),
                    x.ms
                )),
                Err(e) => log(&format!("{} t={threads}: {name} error: {e}", engine.name())),
            }
            out.loads.push(StepResult {
                name,
                ms: r.as_ref().ok().map(|x| x.ms),
                error: r.err(),
            });
        }
    }

    /// Runs every wanted query of the suite, under the hard timeout.
    fn queries(&mut self, out: &mut ConfigResult) {
        let opts = self.opts;
        let params = DataInfo::load(&opts.data_dir).params();
        self.driver.hard_timeout = opts
            .timeout_ms
            .map(|ms| Duration::from_millis(2 * ms) + Duration::from_secs(30));
        let names: Vec<&str> = opts.suite.queries.iter().map(|q| q.name).collect();
        let wanted = |name: &str| query_wanted(name, &names, &opts.only);
        for q in opts.suite.queries.iter().filter(|q| wanted(q.name)) {
            let run = self.query(q, &params);
            out.queries.push(run);
        }
    }

    /// Query `q`: its warm-up and timed runs, or why it did not run.
    fn query(&mut self, q: &Query, params: &BTreeMap<String, String>) -> QueryRun {
        let (text, bound) = query_text(self.dialect, q, &self.data, params);
        let mut run = QueryRun {
            name: q.name.to_string(),
            cypher: bound.clone().unwrap_or(text),
            times_ms: vec![],
            rows: None,
            error: None,
        };
        if let Some(why) = &self.dead {
            run.error = Some(format!("not run: {why}"));
            return run;
        }
        let cypher = match bound {
            Ok(c) => c,
            Err(e) => {
                run.error = Some(e);
                return run;
            }
        };
        self.time(&cypher, &mut run);
        self.log_query(q, &run);
        run
    }

    /// The warm-up and timed executions of `cypher` into `run`; stops at the
    /// first error, restarting the driver if it was killed.
    fn time(&mut self, cypher: &str, run: &mut QueryRun) {
        let opts = self.opts;
        for i in 0..opts.warmup + opts.runs {
            match self.driver.exec(cypher, opts.timeout_ms) {
                Ok(r) => {
                    if run.rows.is_none() {
                        run.rows = Some(r.rows);
                    }
                    if i >= opts.warmup {
                        run.times_ms.push(r.ms);
                    }
                }
                Err(e) => {
                    let killed = e.starts_with(HARD_TIMEOUT) || e.starts_with("driver exited");
                    run.error = Some(e);
                    if killed {
                        // The driver is gone: start a new one on the same
                        // database so the remaining queries still run.
                        match restart(opts, self.engine, &self.db_path, self.threads, &self.data) {
                            Ok(mut d) => {
                                d.hard_timeout = self.driver.hard_timeout;
                                let old = std::mem::replace(&mut self.driver, d);
                                old.quit();
                            }
                            Err(e) => {
                                self.dead = Some(format!("driver could not be restarted: {e}"))
                            }
                        }
                    }
                    break;
                }
            }
        }
    }

    /// Logs a query's error or its timings and (the start of) its rows.
    fn log_query(&self, q: &Query, run: &QueryRun) {
        let (engine, threads) = (self.engine, self.threads);
        match (&run.error, run.summary()) {
            (Some(e), _) => log(&format!(
                "{} t={threads}: {}: error: {e}",
                engine.name(),
                q.name
            )),
            (None, Some(s)) => log(&format!(
                "{} t={threads}: {}: median {:.2} ms (min {:.2}, max {:.2}) rows {}",
                engine.name(),
                q.name,
                s.median,
                s.min,
                s.max,
                run.rows.as_ref().map_or(String::new(), |r| {
                    let t = r.to_string();
                    if t.len() > 200 {
                        format!(
                            "{}…",
                            &t[..t.char_indices().nth(200).map_or(t.len(), |(i, _)| i)]
                        )
                    } else {
                        t
                    }
                })
            )),
            _ => {}
        }
    }

    /// Records peak RSS, closes the database and the driver, and records the
    /// database's size before removing it.
    fn finish(self, out: &mut ConfigResult) {
        let ConfigRun {
            engine,
            threads,
            mut driver,
            dir,
            ..
        } = self;
        driver.hard_timeout = None;
        out.peak_rss_kb = driver.peak_rss_kb();
        if let Err(e) = driver.close() {
            log(&format!("{} t={threads}: close: {e}", engine.name()));
        }
        driver.quit();
        out.db_bytes = Some(sys::disk_usage(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A load as `dialect` states it, with the data directory filled in.
fn load_text(
    opts: &RunOptions,
    dialect: Dialect,
    load: &Load,
    data: &str,
) -> Result<String, String> {
    let text = match dialect {
        Dialect::Cypher => load.cypher(opts.load_format),
        Dialect::Sql => load.sql(opts.load_format),
        Dialect::Networkit => {
            let walk = opts
                .suite
                .networkit_walk()
                .ok_or("the suite has no NetworKit form")?;
            let files = opts.suite.dataset.files();
            return networkit::load_request(files, load.file, walk, opts.load_format, data);
        }
    };
    Ok(suite::with_data_dir(&text, data))
}

/// A query as `dialect` states it: the text to show when it cannot be
/// bound, and the bound text (`Err` when the dialect has no form of it or
/// a placeholder has no value).
fn query_text(
    dialect: Dialect,
    q: &Query,
    data: &str,
    params: &BTreeMap<String, String>,
) -> (String, Result<String, String>) {
    match dialect {
        Dialect::Cypher => (q.cypher.to_string(), suite::bind(q.cypher, data, params)),
        Dialect::Sql => match q.sql {
            Some(sql) => (sql.to_string(), suite::bind(sql, data, params)),
            None => (
                String::new(),
                Err(format!("no SQL equivalent of {}", q.name)),
            ),
        },
        Dialect::Networkit => match q.networkit {
            Some(n) => (n.describe(), n.bind(data, params)),
            None => (
                String::new(),
                Err(format!("no NetworKit form of {}", q.name)),
            ),
        },
    }
}

fn restart(
    opts: &RunOptions,
    engine: &EngineKind,
    db_path: &Path,
    threads: usize,
    data: &str,
) -> Result<Driver, String> {
    log(&format!(
        "{} t={threads}: restarting the driver",
        engine.name()
    ));
    let mut d = Driver::start(engine, &opts.spawn)?;
    d.open(db_path, threads, opts.buffer_pool_bytes)?;
    // NetworKit's graph lived in the killed process: load it again.
    if engine.dialect() == Dialect::Networkit {
        for load in opts.suite.loads {
            d.exec(&load_text(opts, Dialect::Networkit, load, data)?, None)?;
        }
    }
    Ok(d)
}

/// Runs every configuration. An engine whose driver cannot start (Kùzu not
/// installed, say) is reported once and skipped; the others still run.
pub fn run(opts: &RunOptions) -> Report {
    let mut configs = Vec::new();
    for engine in &opts.engines {
        for &t in &opts.threads {
            log(&format!("== {} with {t} thread(s)", engine.name()));
            let c = run_config(opts, engine, t);
            let fatal = c.error.clone();
            configs.push(c);
            if let Some(e) = fatal {
                log(&format!(
                    "!! {} cannot run: {e}; skipping this engine",
                    engine.name()
                ));
                break;
            }
        }
    }
    Report {
        suite: opts.suite,
        meta: RunMeta::collect(),
        data: DataInfo::load(&opts.data_dir),
        runs: opts.runs,
        warmup: opts.warmup,
        buffer_pool_bytes: opts.buffer_pool_bytes,
        engines: opts.engines.clone(),
        threads: opts.threads.clone(),
        configs,
        load_format: opts.load_format,
    }
}

/// Relative tolerance for doubles when comparing results.
pub const REL_TOL: f64 = 1e-9;

fn num_equal(x: f64, y: f64) -> bool {
    x == y || (x - y).abs() <= REL_TOL * x.abs().max(y.abs()) || (x.is_nan() && y.is_nan())
}

/// Equality of two result values: numbers compare by value (an integer
/// equals a double of the same value), doubles with relative tolerance 1e-9.
pub fn values_equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Int(x), Json::Int(y)) => x == y,
        (Json::Int(_) | Json::Float(_), Json::Int(_) | Json::Float(_)) => num_equal(
            a.as_f64().unwrap_or(f64::NAN),
            b.as_f64().unwrap_or(f64::NAN),
        ),
        (Json::Arr(x), Json::Arr(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q))
        }
        (Json::Obj(x), Json::Obj(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Compares two row sets, ignoring row order (suites have no ORDER BY
/// unless a query says so). `Err` describes the first difference.
pub fn compare_rows(a: &Json, b: &Json) -> Result<(), String> {
    let (Some(ra), Some(rb)) = (a.as_arr(), b.as_arr()) else {
        return Err("rows are not lists".into());
    };
    if ra.len() != rb.len() {
        return Err(format!("{} rows vs {} rows", ra.len(), rb.len()));
    }
    let key = |r: &Json| r.to_string();
    let mut sa: Vec<&Json> = ra.iter().collect();
    let mut sb: Vec<&Json> = rb.iter().collect();
    if ra.len() > 1 {
        sa.sort_by_key(|r| key(r));
        sb.sort_by_key(|r| key(r));
    }
    for (x, y) in sa.iter().zip(&sb) {
        if !values_equal(x, y) {
            return Err(format!("{x} vs {y}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_query_name_picks_that_query_alone() {
        let names = ["sp-paths-8src", "wsp-paths-8src", "sp-lengths-8src"];
        let only = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let picked = |f: &[&str]| -> Vec<&str> {
            let only = only(f);
            names
                .iter()
                .copied()
                .filter(|n| query_wanted(n, &names, &only))
                .collect()
        };
        assert_eq!(picked(&["sp-paths-8src"]), ["sp-paths-8src"]);
        assert_eq!(picked(&["paths-8src"]), ["sp-paths-8src", "wsp-paths-8src"]);
        assert_eq!(picked(&["8src"]), names);
        assert_eq!(picked(&[]), names);
        assert_eq!(
            picked(&["wsp-paths-8src", "lengths"]),
            ["wsp-paths-8src", "sp-lengths-8src"]
        );
    }

    #[test]
    fn summary_median() {
        let s = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 5.0));
        assert_eq!(Summary::of(&[1.0, 2.0, 4.0, 10.0]).unwrap().median, 3.0);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn row_comparison() {
        let a = json::parse("[[16777216, 4123456.123456789]]").unwrap();
        let b = json::parse("[[16777216, 4123456.1234567895]]").unwrap();
        let c = json::parse("[[16777215, 4123456.123456789]]").unwrap();
        let d = json::parse("[[16777216.0, 4123457.0]]").unwrap();
        assert!(compare_rows(&a, &b).is_ok());
        assert!(compare_rows(&a, &c).is_err());
        assert!(compare_rows(&a, &d).is_err());
        let e = json::parse("[[1],[2]]").unwrap();
        let f = json::parse("[[2],[1]]").unwrap();
        assert!(compare_rows(&e, &f).is_ok());
        assert!(compare_rows(&e, &a).is_err());
    }
}
