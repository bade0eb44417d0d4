//! The openCypher TCK runner: parses `.feature` files, runs every scenario
//! against a fresh in-memory KithDB database and classifies it as passed,
//! failed or unsupported. See `TCK.md` at the repository root.

pub mod gherkin;
mod procedure;
pub mod value;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kith::{Config, Connection, Database, ErrorKind, QueryResult, Value};

use gherkin::{Scenario, Step};
use value::{parse_value, results_match, CompareOpts, TckValue};

/// What happened to one scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(String),
    /// The engine reported NotSupported, or the scenario needs something the
    /// runner cannot provide (parameters, procedures, unmeasurable side effects).
    Unsupported(String),
}

#[derive(Debug, Clone)]
pub struct ScenarioResult {
    /// Stable id: `feature path: scenario name` plus ` #row N` for outline rows.
    pub id: String,
    /// Feature area: the directory of the feature file (e.g. `clauses/match`).
    pub area: String,
    pub display_name: String,
    pub outcome: Outcome,
    pub elapsed: Duration,
}

/// Runner options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Only scenarios whose id contains this substring.
    pub filter: Option<String>,
    /// Worker threads running scenarios concurrently.
    pub jobs: usize,
    /// Per-query timeout.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            filter: None,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            timeout: Duration::from_millis(5000),
        }
    }
}

/// The stable id of a scenario.
pub fn scenario_id(feature_path: &str, s: &Scenario) -> String {
    match s.example {
        Some(i) => format!("{feature_path}: {} #row {i}", s.name),
        None => format!("{feature_path}: {}", s.name),
    }
}

fn collect_features(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_features(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "feature") {
            out.push(path);
        }
    }
    Ok(())
}

/// The path of a feature file relative to the TCK root, `/`-separated, with a
/// leading `features/` removed.
fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let s = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    s.strip_prefix("features/").map(str::to_string).unwrap_or(s)
}

fn area_of(rel: &str) -> String {
    match rel.rfind('/') {
        Some(p) => rel[..p].to_string(),
        None => ".".to_string(),
    }
}

struct Job {
    rel: String,
    scenario: Scenario,
}

/// Runs every scenario under `dir`. Errors only for unreadable or unparsable files.
pub fn run_dir(dir: &Path, opts: &Options) -> Result<Vec<ScenarioResult>, String> {
    let mut files = Vec::new();
    collect_features(dir, &mut files).map_err(|e| format!("{}: {e}", dir.display()))?;
    files.sort();
    let mut jobs = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let feature = gherkin::parse_feature(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        let rel = relative(dir, f);
        for scenario in feature.scenarios {
            if let Some(filter) = &opts.filter {
                if !scenario_id(&rel, &scenario).contains(filter.as_str()) {
                    continue;
                }
            }
            jobs.push(Job {
                rel: rel.clone(),
                scenario,
            });
        }
    }
    let graphs = find_graphs_dir(dir);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<ScenarioResult>>> = Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let start = Instant::now();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_scenario(&job.scenario, graphs.as_deref(), opts.timeout)
                }))
                .unwrap_or_else(|p| {
                    let what = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    Outcome::Failed(format!("panic: {what}"))
                });
                let r = ScenarioResult {
                    id: scenario_id(&job.rel, &job.scenario),
                    area: area_of(&job.rel),
                    display_name: job.scenario.display_name.clone(),
                    outcome,
                    elapsed: start.elapsed(),
                };
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    Ok(results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect())
}

/// Where the named graphs (`graphs/<name>/<name>.cypher`) are: `DIR/graphs` or
/// beside a `features` directory.
fn find_graphs_dir(dir: &Path) -> Option<PathBuf> {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        let g = d.join("graphs");
        if g.is_dir() {
            return Some(g);
        }
        cur = d.parent();
    }
    None
}

/// Counts per area plus totals.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub unsupported: usize,
}

impl Counts {
    pub fn add(&mut self, o: &Outcome) {
        match o {
            Outcome::Passed => self.passed += 1,
            Outcome::Failed(_) => self.failed += 1,
            Outcome::Unsupported(_) => self.unsupported += 1,
        }
    }
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.unsupported
    }
}

pub fn counts_by_area(results: &[ScenarioResult]) -> (BTreeMap<String, Counts>, Counts) {
    let mut areas: BTreeMap<String, Counts> = BTreeMap::new();
    let mut total = Counts::default();
    for r in results {
        areas.entry(r.area.clone()).or_default().add(&r.outcome);
        total.add(&r.outcome);
    }
    (areas, total)
}

/// The per-area table (Markdown) and the final `tck: ...` line.
pub fn report(results: &[ScenarioResult]) -> String {
    let (areas, total) = counts_by_area(results);
    let mut out = String::new();
    out.push_str("| area | passed | failed | unsupported | total |\n");
    out.push_str("|---|---:|---:|---:|---:|\n");
    for (area, c) in &areas {
        out.push_str(&format!(
            "| {area} | {} | {} | {} | {} |\n",
            c.passed,
            c.failed,
            c.unsupported,
            c.total()
        ));
    }
    out.push_str(&format!(
        "| **total** | **{}** | **{}** | **{}** | **{}** |\n",
        total.passed,
        total.failed,
        total.unsupported,
        total.total()
    ));
    out.push_str(&format!(
        "tck: {} passed, {} failed, {} unsupported\n",
        total.passed, total.failed, total.unsupported
    ));
    out
}

/// Reads a passing list (one id a line; blank lines and `#` comments ignored).
pub fn read_id_list(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------------------
// Running one scenario

/// An early exit from a scenario.
type StepResult = Result<(), Outcome>;

struct Ctx<'a> {
    db: &'a Database,
    conn: Connection,
    graphs: Option<&'a Path>,
    timeout: Duration,
    before: Option<Snapshot>,
    last: Option<kith::Result<QueryResult>>,
    /// Whether the last query was the scenario's main query (side effects
    /// refer to it) rather than a control query.
    side_effects_checked: bool,
    /// The scenario's `parameters are` table, passed with every query.
    params: Vec<(String, Value)>,
}

/// A parameter value as the engine takes it; nodes, rels and paths cannot
/// be parameters.
fn param_value(v: &value::TckValue) -> Result<Value, Outcome> {
    use value::TckValue as T;
    Ok(match v {
        T::Null => Value::Null,
        T::Bool(b) => Value::Bool(*b),
        T::Int(i) => Value::Int64(*i),
        T::Float(f) => Value::Double(*f),
        T::String(s) => Value::String(s.clone()),
        T::List(items) => Value::list(items.iter().map(param_value).collect::<Result<_, _>>()?),
        T::Map(entries) => Value::Struct(
            entries
                .iter()
                .map(|(k, v)| Ok((k.clone(), param_value(v)?)))
                .collect::<Result<_, Outcome>>()?,
        ),
        T::Node(_) | T::Rel(_) | T::Path(..) => {
            return Err(Outcome::Unsupported(
                "a node, rel or path as a parameter".into(),
            ))
        }
    })
}

fn unsupported<T>(why: impl Into<String>) -> Result<T, Outcome> {
    Err(Outcome::Unsupported(why.into()))
}

fn failed<T>(why: impl Into<String>) -> Result<T, Outcome> {
    Err(Outcome::Failed(why.into()))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Runs one scenario against a fresh in-memory database.
pub fn run_scenario(s: &Scenario, graphs: Option<&Path>, timeout: Duration) -> Outcome {
    if s.tags.iter().any(|t| t == "@ignore") {
        return Outcome::Unsupported("tagged @ignore upstream".into());
    }
    let db = match Database::open(
        ":memory:",
        Config {
            max_threads: Some(1),
            buffer_pool_bytes: Some(64 << 20),
            ..Config::default()
        },
    ) {
        Ok(db) => db,
        Err(e) => return Outcome::Failed(format!("cannot open database: {e}")),
    };
    let conn = Connection::new(&db);
    if let Err(e) = conn.query(&format!("CALL timeout={}", timeout.as_millis())) {
        return Outcome::Failed(format!("cannot set timeout: {e}"));
    }
    // openCypher matches a variable-length rel without repeating a rel (the
    // TCK's semantics); KithDB's default is Kùzu's walks, so the runner asks
    // for trails, as any user can (see TCK.md).
    if let Err(e) = conn.query("CALL var_length_semantics='trail'") {
        return Outcome::Failed(format!("cannot set var_length_semantics: {e}"));
    }
    let mut ctx = Ctx {
        db: &db,
        conn,
        graphs,
        timeout,
        before: None,
        last: None,
        side_effects_checked: false,
        params: Vec::new(),
    };
    for step in &s.steps {
        if let Err(o) = ctx.step(step) {
            return o;
        }
    }
    if ctx.last.is_none() {
        return Outcome::Failed("scenario executes no query".into());
    }
    Outcome::Passed
}

fn is_empty_graph_error(e: &kith::Error) -> bool {
    e.kind == ErrorKind::Semantic
        && (e.message.contains("no node table can match")
            || e.message.contains("no rel table can match"))
}

/// Properties of one entity as (key, rendered value).
type Props = Vec<(String, String)>;

/// The graph's entities, for side-effect checks.
#[derive(Debug, Clone, Default, PartialEq)]
struct Snapshot {
    /// id -> (labels, properties as (key, rendered value)).
    nodes: HashMap<u64, (Vec<String>, Props)>,
    rels: HashMap<u64, Props>,
    /// Set when only (node count, relationship count) could be measured.
    counts_only: Option<(u64, u64)>,
}

fn props(p: &[(String, Value)]) -> Props {
    p.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), format!("{v:?}")))
        .collect()
}

impl Ctx<'_> {
    /// Runs a statement with the watchdog: if it outlives the timeout (plus
    /// slack) the connection is interrupted.
    fn exec(&self, text: &str) -> kith::Result<QueryResult> {
        let (tx, rx) = mpsc::channel::<()>();
        let limit = self.timeout + Duration::from_secs(2);
        let conn = &self.conn;
        std::thread::scope(|scope| {
            scope.spawn(move || {
                if rx.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                    conn.interrupt();
                }
            });
            let params: Vec<(&str, Value)> = self
                .params
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            let r = conn.query_with_params(text, &params);
            let _ = tx.send(());
            r
        })
    }

    /// A count query's single integer (an empty catalog counts as 0).
    fn count(&self, q: &str) -> Option<u64> {
        match self.exec(q) {
            Ok(r) => match r.rows().next()?.first()? {
                Value::Int64(n) => u64::try_from(*n).ok(),
                Value::UInt64(n) => Some(*n),
                _ => None,
            },
            Err(e) if is_empty_graph_error(&e) => Some(0),
            Err(_) => None,
        }
    }

    /// The whole graph when the engine can return entities; else only the
    /// node and relationship counts.
    fn snapshot(&self) -> Option<Snapshot> {
        if let Some(full) = self.full_snapshot() {
            return Some(full);
        }
        Some(Snapshot {
            counts_only: Some((
                self.count("MATCH (n) RETURN count(*)")?,
                self.count("MATCH ()-[r]->() RETURN count(*)")?,
            )),
            ..Snapshot::default()
        })
    }

    fn full_snapshot(&self) -> Option<Snapshot> {
        let mut snap = Snapshot::default();
        match self.exec("MATCH (n) RETURN n") {
            Ok(r) => {
                for row in r.rows() {
                    if let Some(Value::Node(n)) = row.first() {
                        let labels: Vec<String> = n
                            .label
                            .split(':')
                            .filter(|l| !l.is_empty())
                            .map(str::to_string)
                            .collect();
                        snap.nodes.insert(n.id.0, (labels, props(&n.properties)));
                    } else {
                        return None;
                    }
                }
            }
            Err(e) if is_empty_graph_error(&e) => {}
            Err(_) => return None,
        }
        match self.exec("MATCH ()-[r]->() RETURN r") {
            Ok(r) => {
                for row in r.rows() {
                    if let Some(Value::Rel(rel)) = row.first() {
                        snap.rels.insert(rel.id.0, props(&rel.properties));
                    } else {
                        return None;
                    }
                }
            }
            Err(e) if is_empty_graph_error(&e) => {}
            Err(_) => return None,
        }
        Some(snap)
    }

    fn step(&mut self, step: &Step) -> StepResult {
        let text = step.text.trim_end_matches(':').trim();
        let doc = || step.docstring.clone().unwrap_or_default();
        match text {
            "an empty graph" | "any graph" => Ok(()),
            "having executed" => match self.exec(&doc()) {
                Ok(_) => Ok(()),
                Err(e) if e.kind == ErrorKind::NotSupported => {
                    unsupported(format!("setup: {}", first_line(&e.message)))
                }
                Err(e) => failed(format!(
                    "setup query failed: {}",
                    first_line(&e.to_string())
                )),
            },
            "parameters are" => {
                for row in step.table.iter().flatten() {
                    let [name, text] = row.as_slice() else {
                        return failed("a parameter row needs a name and a value");
                    };
                    let v = value::parse_value(text)
                        .map_err(|e| Outcome::Failed(format!("parameter {name}: {e}")))?;
                    self.params.push((name.clone(), param_value(&v)?));
                }
                Ok(())
            }
            "executing query" => {
                self.before = self.snapshot();
                self.side_effects_checked = false;
                self.last = Some(self.exec(&doc()));
                Ok(())
            }
            "executing control query" => {
                self.last = Some(self.exec(&doc()));
                Ok(())
            }
            "no side effects" => self.check_side_effects(&[]),
            "the side effects should be" => {
                let table = step.table.clone().unwrap_or_default();
                self.check_side_effects(&table)
            }
            "the result should be empty" => {
                let r = self.result()?;
                if r.num_rows() == 0 {
                    Ok(())
                } else {
                    failed(format!("expected no rows, got {}", r.num_rows()))
                }
            }
            _ if text.starts_with("the result should be") => {
                let ordered = text.contains("in order");
                let opts = CompareOpts {
                    ignore_list_order: text.contains("ignoring element order for lists"),
                };
                self.check_result(step, ordered, opts)
            }
            _ if text.starts_with("the ") && text.ends_with(" graph") => {
                let name = text["the ".len()..text.len() - " graph".len()].trim();
                self.load_named_graph(name)
            }
            _ if text.starts_with("there exists a procedure") => {
                let signature = &text["there exists a procedure".len()..];
                let table = step.table.clone().unwrap_or_default();
                let p =
                    procedure::declared_procedure(signature, &table).map_err(Outcome::Failed)?;
                self.db.register_procedure(p);
                Ok(())
            }
            _ if text.contains("should be raised at") => self.check_error(text),
            other => unsupported(format!("unknown step: {} {other}", step.keyword)),
        }
    }

    fn load_named_graph(&mut self, name: &str) -> StepResult {
        let Some(dir) = self.graphs else {
            return unsupported(format!("named graph {name}: no graphs directory"));
        };
        let file = dir.join(name).join(format!("{name}.cypher"));
        let Ok(script) = std::fs::read_to_string(&file) else {
            return unsupported(format!("named graph {name}: {} missing", file.display()));
        };
        match self.exec(&script) {
            Ok(_) => Ok(()),
            Err(e) if e.kind == ErrorKind::NotSupported => {
                unsupported(format!("named graph {name}: {}", first_line(&e.message)))
            }
            Err(e) => failed(format!(
                "named graph {name}: {}",
                first_line(&e.to_string())
            )),
        }
    }

    fn result(&self) -> Result<&QueryResult, Outcome> {
        match &self.last {
            None => failed("no query executed before the result check"),
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) if e.kind == ErrorKind::NotSupported => {
                unsupported(first_line(&e.message).to_string())
            }
            Some(Err(e)) => failed(format!(
                "expected a result, got error: {}",
                first_line(&e.to_string())
            )),
        }
    }

    fn check_result(&self, step: &Step, ordered: bool, opts: CompareOpts) -> StepResult {
        let r = self.result()?;
        let table = step.table.clone().unwrap_or_default();
        let Some((header, rows)) = table.split_first() else {
            return failed("result step without a table");
        };
        let mut expected: Vec<Vec<TckValue>> = Vec::new();
        for row in rows {
            let mut vals = Vec::new();
            for cell in row {
                match parse_value(cell) {
                    Ok(v) => vals.push(v),
                    Err(e) => return failed(format!("runner cannot parse expected value: {e}")),
                }
            }
            expected.push(vals);
        }
        let names = r.column_names();
        if names != header.as_slice() {
            return failed(format!("columns {names:?}, expected {header:?}"));
        }
        let actual: Vec<Vec<Value>> = r.rows().collect();
        if results_match(&actual, &expected, ordered, opts) {
            Ok(())
        } else {
            let shown: Vec<String> = actual
                .iter()
                .take(5)
                .map(|row| {
                    row.iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(" | ")
                })
                .collect();
            failed(format!(
                "rows differ: got {} row(s) [{}], expected {} {}",
                actual.len(),
                shown.join("; "),
                expected.len(),
                if ordered { "in order" } else { "in any order" }
            ))
        }
    }

    fn check_error(&self, text: &str) -> StepResult {
        // "a TypeError should be raised at runtime: InvalidArgumentType"
        let body = text
            .strip_prefix("an ")
            .or_else(|| text.strip_prefix("a "))
            .unwrap_or(text);
        let (tck_type, rest) = body
            .split_once(" should be raised at ")
            .unwrap_or((body, "any time"));
        let phase = rest.split(':').next().unwrap_or("").trim();
        let accepted = accepted_kinds(phase);
        match &self.last {
            None => failed("no query executed before the error check"),
            Some(Ok(_)) => failed(format!("expected {tck_type} at {phase}, query succeeded")),
            Some(Err(e)) if e.kind == ErrorKind::NotSupported => {
                unsupported(first_line(&e.message).to_string())
            }
            Some(Err(e)) if accepted.contains(&e.kind) => Ok(()),
            Some(Err(e)) => failed(format!(
                "expected {tck_type} at {phase}, got {:?}: {}",
                e.kind,
                first_line(&e.message)
            )),
        }
    }

    fn check_side_effects(&mut self, table: &[Vec<String>]) -> StepResult {
        if self.side_effects_checked {
            return Ok(());
        }
        self.side_effects_checked = true;
        // The main query must have succeeded (an error step handles errors).
        if let Some(Err(e)) = &self.last {
            if e.kind == ErrorKind::NotSupported {
                return unsupported(first_line(&e.message).to_string());
            }
        }
        let mut expected: BTreeMap<String, i64> = BTreeMap::new();
        for row in table {
            let (Some(k), Some(v)) = (row.first(), row.get(1)) else {
                return failed("malformed side-effects table");
            };
            let Ok(n) = v.parse::<i64>() else {
                return failed(format!("bad side-effect count {v:?}"));
            };
            expected.insert(k.clone(), n);
        }
        let (Some(before), Some(after)) = (self.before.clone(), self.snapshot()) else {
            return unsupported("side effects cannot be measured on this graph");
        };
        let (actual, measured): (BTreeMap<&str, i64>, &[&str]) =
            match (before.counts_only, after.counts_only) {
                (None, None) => (diff(&before, &after), &SIDE_EFFECT_KEYS),
                (b, a) => {
                    // Counts only: net changes of nodes and relationships.
                    let (bn, br) =
                        b.unwrap_or((before.nodes.len() as u64, before.rels.len() as u64));
                    let (an, ar) = a.unwrap_or((after.nodes.len() as u64, after.rels.len() as u64));
                    let mut m = BTreeMap::new();
                    m.insert("+nodes", (an as i64 - bn as i64).max(0));
                    m.insert("-nodes", (bn as i64 - an as i64).max(0));
                    m.insert("+relationships", (ar as i64 - br as i64).max(0));
                    m.insert("-relationships", (br as i64 - ar as i64).max(0));
                    (m, &SIDE_EFFECT_KEYS[..4])
                }
            };
        for key in SIDE_EFFECT_KEYS {
            let want = expected.remove(key).unwrap_or(0);
            if !measured.contains(&key) {
                // Labels and properties cannot be read back from this engine:
                // an expected change is unverifiable; "no change" is accepted
                // (KithDB has no writing clauses, see TCK.md).
                if want != 0 {
                    return unsupported(format!("side effect {key} cannot be measured"));
                }
                continue;
            }
            let got = actual.get(key).copied().unwrap_or(0);
            if want != got {
                return failed(format!("side effect {key}: expected {want}, got {got}"));
            }
        }
        if let Some(k) = expected.keys().next() {
            return unsupported(format!("unknown side effect {k}"));
        }
        Ok(())
    }
}

const SIDE_EFFECT_KEYS: [&str; 8] = [
    "+nodes",
    "-nodes",
    "+relationships",
    "-relationships",
    "+labels",
    "-labels",
    "+properties",
    "-properties",
];

/// Which KithDB error kinds satisfy a TCK error expected at `phase`.
pub fn accepted_kinds(phase: &str) -> &'static [ErrorKind] {
    match phase {
        "compile time" => &[ErrorKind::Syntax, ErrorKind::Semantic, ErrorKind::Type],
        "runtime" => &[ErrorKind::Runtime, ErrorKind::Type],
        _ => &[
            ErrorKind::Syntax,
            ErrorKind::Semantic,
            ErrorKind::Type,
            ErrorKind::Runtime,
        ],
    }
}

fn diff(before: &Snapshot, after: &Snapshot) -> BTreeMap<&'static str, i64> {
    let mut m = BTreeMap::new();
    let count = |a: &dyn Fn(&u64) -> bool, keys: &mut dyn Iterator<Item = &u64>| -> i64 {
        keys.filter(|k| a(k)).count() as i64
    };
    m.insert(
        "+nodes",
        count(&|k| !before.nodes.contains_key(k), &mut after.nodes.keys()),
    );
    m.insert(
        "-nodes",
        count(&|k| !after.nodes.contains_key(k), &mut before.nodes.keys()),
    );
    m.insert(
        "+relationships",
        count(&|k| !before.rels.contains_key(k), &mut after.rels.keys()),
    );
    m.insert(
        "-relationships",
        count(&|k| !after.rels.contains_key(k), &mut before.rels.keys()),
    );
    let labels = |s: &Snapshot| -> BTreeSet<String> {
        s.nodes.values().flat_map(|(l, _)| l.clone()).collect()
    };
    let (lb, la) = (labels(before), labels(after));
    m.insert("+labels", la.difference(&lb).count() as i64);
    m.insert("-labels", lb.difference(&la).count() as i64);
    let all_props = |s: &Snapshot| -> BTreeSet<(char, u64, String, String)> {
        let mut set = BTreeSet::new();
        for (id, (_, p)) in &s.nodes {
            for (k, v) in p {
                set.insert(('n', *id, k.clone(), v.clone()));
            }
        }
        for (id, p) in &s.rels {
            for (k, v) in p {
                set.insert(('r', *id, k.clone(), v.clone()));
            }
        }
        set
    };
    let (pb, pa) = (all_props(before), all_props(after));
    m.insert("+properties", pa.difference(&pb).count() as i64);
    m.insert("-properties", pb.difference(&pa).count() as i64);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        let f = gherkin::parse_feature(text).unwrap();
        f.scenarios.into_iter().next().unwrap()
    }

    fn run(text: &str) -> Outcome {
        run_scenario(&scenario(text), None, Duration::from_secs(5))
    }

    #[test]
    fn passes_a_simple_return() {
        let o = run("Feature: f\n Scenario: s\n  Given any graph\n  When executing query:\n   \"\"\"\n   RETURN 1 AS x\n   \"\"\"\n  Then the result should be, in any order:\n   | x |\n   | 1 |\n  And no side effects\n");
        assert_eq!(o, Outcome::Passed);
    }

    #[test]
    fn wrong_value_fails() {
        let o = run("Feature: f\n Scenario: s\n  Given any graph\n  When executing query:\n   \"\"\"\n   RETURN 1 AS x\n   \"\"\"\n  Then the result should be, in any order:\n   | x |\n   | 2 |\n");
        assert!(matches!(o, Outcome::Failed(_)), "{o:?}");
    }

    #[test]
    fn syntax_error_expectation() {
        let o = run("Feature: f\n Scenario: s\n  Given any graph\n  When executing query:\n   \"\"\"\n   RETURN foo(\n   \"\"\"\n  Then a SyntaxError should be raised at compile time: UnexpectedSyntax\n");
        assert_eq!(o, Outcome::Passed);
        let o = run("Feature: f\n Scenario: s\n  Given any graph\n  When executing query:\n   \"\"\"\n   RETURN 1 AS x\n   \"\"\"\n  Then a SyntaxError should be raised at compile time: X\n");
        assert!(matches!(o, Outcome::Failed(_)), "{o:?}");
    }

    #[test]
    fn not_supported_setup_is_unsupported() {
        let scenario = |setup: &str| {
            format!("Feature: f\n Scenario: s\n  Given an empty graph\n  And having executed:\n   \"\"\"\n   {setup}\n   \"\"\"\n  When executing query:\n   \"\"\"\n   MATCH (n) RETURN n\n   \"\"\"\n  Then the result should be, in any order:\n   | n |\n   | (:A) |\n")
        };
        // A node with other labels than expected fails.
        let o = run(&scenario("CREATE (:A:B)"));
        assert!(matches!(o, Outcome::Failed(_)), "{o:?}");
        // Schema-less CREATE is: the implicit table A.
        assert_eq!(run(&scenario("CREATE (:A)")), Outcome::Passed);
    }

    #[test]
    fn parameters_reach_the_query() {
        let scenario = |value: &str| {
            format!("Feature: f\n Scenario: s\n  Given any graph\n  And parameters are:\n   | x | {value} |\n  When executing query:\n   \"\"\"\n   RETURN $x AS x\n   \"\"\"\n  Then the result should be, in any order:\n   | x |\n   | [1, 'a'] |\n")
        };
        assert_eq!(run(&scenario("[1, 'a']")), Outcome::Passed);
        assert!(matches!(run(&scenario("[2, 'a']")), Outcome::Failed(_)));
    }

    #[test]
    fn ids_and_areas() {
        let s = scenario("Feature: f\n Scenario Outline: o <a>\n  Given any graph\n Examples:\n  | a |\n  | 1 |\n  | 2 |\n");
        assert_eq!(
            scenario_id("clauses/match/M.feature", &s),
            "clauses/match/M.feature: o <a> #row 0"
        );
        assert_eq!(area_of("clauses/match/M.feature"), "clauses/match");
        assert_eq!(
            relative(Path::new("/t"), Path::new("/t/features/a/b.feature")),
            "a/b.feature"
        );
    }

    #[test]
    fn side_effect_diff_counts() {
        let mut before = Snapshot::default();
        before
            .nodes
            .insert(1, (vec!["A".into()], vec![("p".into(), "1".into())]));
        let mut after = before.clone();
        after
            .nodes
            .insert(2, (vec!["B".into()], vec![("q".into(), "2".into())]));
        after.nodes.get_mut(&1).unwrap().1[0].1 = "3".into();
        after.rels.insert(7, vec![]);
        let d = diff(&before, &after);
        assert_eq!(d["+nodes"], 1);
        assert_eq!(d["-nodes"], 0);
        assert_eq!(d["+relationships"], 1);
        assert_eq!(d["+labels"], 1);
        assert_eq!(d["+properties"], 2);
        assert_eq!(d["-properties"], 1);
    }
}
