//! The `processes` suite (issue 53): several processes on one database file.
//!
//! No data set is needed: the suite writes its own graph as CSV files,
//! `nodes` nodes `P(id INT64 PRIMARY KEY, name STRING, age INT64)` with
//! node i = `{id: i, name: 'n<i>', age: i % 100}` (the `insert` suite's
//! rows) and `K(FROM P TO P, since INT64)` rels, node v having
//! `v % 21` out-rels (about 10 × `nodes` in all) to [`rel_dst`]; one
//! KithDB worker COPYs them into a fresh database file. Every process below
//! is a driver process (`kith-bench __kith-worker`, or
//! `bench/sqlite_driver.py` for SQLite) with its own `Database` on that file.
//! Three parts, each a target of the issue:
//!
//! 1. `reads`: read throughput from 1, 2, 4 … processes (each opens the
//!    file read-only, `threads=1`, one reading thread) against the same
//!    number of threads of one process (one read-only `Database`, one
//!    `Connection` per thread with `CALL threads=1`). A reading thread
//!    alternates [`LOOKUP`] (a primary-key lookup) and [`HOP`] (a 1-hop
//!    neighbour count) on uniformly random ids, parameterised, and checks
//!    every answer against the formula (age, name, out-degree). All readers
//!    are started, run `warmup_ms` untimed, then count queries for
//!    `read_ms`; queries/s is the sum over threads of each one's count over
//!    its own timed window. Goal: processes within 10 % of threads.
//! 2. `latency`: commit latency of [`insert::INSERT_ONE`], one auto-commit
//!    transaction per row, timed one by one inside a read-write writer
//!    process (after 50 untimed ones), with no other process and with
//!    `readers` read-only processes running the reads of part 1 in a loop. Then the same for SQLite (Python's
//!    `sqlite3`, `journal_mode=WAL`, `synchronous=FULL`, autocommit) on its
//!    own copy of the graph loaded from the same CSV files: `INSERT INTO p`
//!    by one driver process, the equivalent SELECTs ([`LOOKUP_SQL`],
//!    [`HOP_SQL`]) by `readers` driver processes. Goals: KithDB with readers
//!    ≤ 1.2 × without; KithDB ≤ 1.5 × SQLite (both with readers).
//! 3. `handover`: `handover_procs` read-write processes each committing
//!    `handover_commits` single-row auto-commit CREATEs at once (the
//!    requests are sent to all before any reply is read), wall time from the
//!    first process's start to the last one's end (each measures its loop
//!    and reports wall-clock instants), against one process committing all
//!    of them. Goal: ≤ 1.5 ×.
//!
//! Rounds: every part runs its configurations `rounds` times, interleaved
//! (the order alternates, or rotates by one, from round to round), so that
//! drift in the machine's state (an fsync costs more while other processes
//! write to the same disk; CPU shared with builds) falls on all of them
//! alike. Part 1 and 3 report the median round (and every round); part 2
//! pools the rounds' commits, `commits / rounds` per round and
//! configuration, before taking median and p99; readers are fresh
//! processes in every round.
//!
//! Every part is checked: readers count answers that differ from the
//! formula (must be 0); every written id range is counted and summed
//! afterwards, and a new read-only process counts every node at the end.
//! Parallelism is the variable here, not the engine's threads: every
//! process and reading thread runs queries with one thread, and the report
//! gives the machine's core count (4 processes on 2 cores oversubscribe
//! them, for processes and threads alike).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::driver::{Driver, DriverSpawn, EngineKind};
use crate::insert::{self, load_avg, Check};
use crate::json::Json;
use crate::rng::{mix, Xoshiro256};
use crate::runner::RunMeta;

/// A primary-key lookup; answer `[[id % 100, 'n<id>']]`.
pub const LOOKUP: &str = "MATCH (p:P {id: $id}) RETURN p.age, p.name";
/// A 1-hop neighbour count; answer `[[id % 21]]`.
pub const HOP: &str = "MATCH (:P {id: $id})-[:K]->(q:P) RETURN count(*)";
pub const LOOKUP_SQL: &str = "SELECT age, name FROM p WHERE id = ?";
pub const HOP_SQL: &str = "SELECT count(*) FROM k WHERE src = ?";
pub const INSERT_SQL: &str = "INSERT INTO p(id, name, age) VALUES (?, ?, ?)";

pub const PARTS: &[&str] = &["reads", "latency", "handover"];

/// Ids written by the suite start here (the graph's are below `nodes`).
const WRITE_BASE: u64 = 1_000_000_000;
/// Untimed commits before the timed ones of part 2.
const WARM_COMMITS: u64 = 50;

/// Out-degree of node `v`.
pub fn out_degree(v: u64) -> u64 {
    v % 21
}

/// Destination of node `v`'s `j`-th rel among `nodes` nodes.
pub fn rel_dst(v: u64, j: u64, nodes: u64) -> u64 {
    (v.wrapping_mul(7919) + j.wrapping_mul(104_729) + 1) % nodes
}

/// Number of rels among `nodes` nodes.
pub fn rel_count(nodes: u64) -> u64 {
    (nodes / 21) * 210 + (0..nodes % 21).sum::<u64>()
}

#[derive(Clone, Debug)]
pub struct ProcessesOptions {
    pub nodes: u64,
    pub read_ms: u64,
    pub warmup_ms: u64,
    /// Parallelism of part 1 (processes, and threads of one process).
    pub parallel: Vec<usize>,
    /// Timed commits per configuration of part 2.
    pub commits: u64,
    /// Reading processes of part 2.
    pub readers: usize,
    pub handover_procs: usize,
    pub handover_commits: u64,
    /// Each part's configurations run this many times, interleaved (see
    /// the module comment).
    pub rounds: usize,
    pub parts: Vec<String>,
    pub buffer_pool_bytes: Option<u64>,
    pub tmp_dir: PathBuf,
    pub spawn: DriverSpawn,
    pub sqlite_script: PathBuf,
    pub timeout_ms: Option<u64>,
}

// ---------------------------------------------------------------------
// The reading threads, run inside a KithDB driver process (`read_start`,
// `read_stop` of `__kith-worker`).
// ---------------------------------------------------------------------

#[derive(Default)]
struct ThreadReads {
    ops: u64,
    ms: f64,
    mismatches: u64,
    errors: u64,
    problem: Option<String>,
}

/// Reading threads of one driver process, running until [`ReadLoop::stop`].
pub struct ReadLoop {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<ThreadReads>>,
}

impl ReadLoop {
    /// Starts `threads` threads, each with its own connection on `db`
    /// (`CALL threads=1`), alternating [`LOOKUP`] and [`HOP`] on random ids
    /// below `nodes`; each counts its queries after `warmup`.
    pub fn start(
        db: &kith::Database,
        threads: usize,
        seed: u64,
        nodes: u64,
        warmup: Duration,
    ) -> Result<ReadLoop, String> {
        if nodes == 0 {
            return Err("read_start: nodes must be positive".into());
        }
        let conns = (0..threads.max(1))
            .map(|_| {
                let c = kith::Connection::new(db);
                c.query("CALL threads=1")
                    .map(|_| c)
                    .map_err(|e| format!("CALL threads=1: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let threads = conns
            .into_iter()
            .enumerate()
            .map(|(t, conn)| {
                let stop = Arc::clone(&stop);
                let seed = mix(seed, t as u64);
                std::thread::spawn(move || read_thread(&conn, seed, nodes, warmup, &stop))
            })
            .collect();
        Ok(ReadLoop { stop, threads })
    }

    /// Stops the threads; the reply's fields: `qps` (sum over threads of
    /// timed queries / timed window), `ops`, `ms` (longest window),
    /// `mismatches`, `errors`, `problem` (the first one).
    pub fn stop(self) -> Vec<(String, Json)> {
        self.stop.store(true, Ordering::Relaxed);
        let (mut qps, mut ops, mut ms, mut mismatches, mut errors) = (0.0, 0, 0.0f64, 0, 0);
        let mut problem = None;
        for h in self.threads {
            let t = h.join().unwrap_or_else(|_| ThreadReads {
                errors: 1,
                problem: Some("a reading thread panicked".into()),
                ..ThreadReads::default()
            });
            if t.ms > 0.0 {
                qps += t.ops as f64 / t.ms * 1e3;
            } else if problem.is_none() {
                problem = Some("stopped before the warm-up ended".into());
            }
            ops += t.ops;
            ms = ms.max(t.ms);
            mismatches += t.mismatches;
            errors += t.errors;
            problem = problem.or(t.problem);
        }
        vec![
            ("qps".into(), Json::Float(qps)),
            ("ops".into(), Json::Int(ops as i64)),
            ("ms".into(), Json::Float(ms)),
            ("mismatches".into(), Json::Int(mismatches as i64)),
            ("errors".into(), Json::Int(errors as i64)),
            ("problem".into(), Json::opt_str(problem.as_deref())),
        ]
    }
}

fn int_value(v: &kith::Value) -> Option<i64> {
    use kith::Value as V;
    match v {
        V::Int64(x) => Some(*x),
        V::Int32(x) => Some(i64::from(*x)),
        V::UInt64(x) => i64::try_from(*x).ok(),
        V::UInt32(x) => Some(i64::from(*x)),
        _ => None,
    }
}

/// One query of the read loop: `Ok(true)` when the answer is right.
fn read_one(conn: &kith::Connection, id: u64, lookup: bool) -> Result<bool, String> {
    let params = [("id", kith::Value::Int64(id as i64))];
    let res = conn
        .query_with_params(if lookup { LOOKUP } else { HOP }, &params)
        .map_err(|e| e.to_string())?;
    let rows: Vec<Vec<kith::Value>> = res.rows().collect();
    let [row] = rows.as_slice() else {
        return Ok(false);
    };
    Ok(if lookup {
        row.len() == 2
            && int_value(&row[0]) == Some((id % 100) as i64)
            && matches!(&row[1], kith::Value::String(s) if *s == format!("n{id}"))
    } else {
        row.len() == 1 && int_value(&row[0]) == Some(out_degree(id) as i64)
    })
}

fn read_thread(
    conn: &kith::Connection,
    seed: u64,
    nodes: u64,
    warmup: Duration,
    stop: &AtomicBool,
) -> ThreadReads {
    let mut rng = Xoshiro256::seed_from(seed);
    let mut r = ThreadReads::default();
    let started = Instant::now();
    let mut timed: Option<Instant> = None;
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if timed.is_none() && started.elapsed() >= warmup {
            timed = Some(Instant::now());
        }
        let id = rng.below(nodes);
        let lookup = k.is_multiple_of(2);
        k += 1;
        match read_one(conn, id, lookup) {
            Ok(true) => {}
            Ok(false) => {
                r.mismatches += 1;
                r.problem
                    .get_or_insert_with(|| format!("wrong answer for id {id} (lookup: {lookup})"));
            }
            Err(e) => {
                r.errors += 1;
                r.problem.get_or_insert(e);
            }
        }
        if timed.is_some() {
            r.ops += 1;
        }
    }
    r.ms = timed.map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e3);
    r
}

// ---------------------------------------------------------------------
// The runner side.
// ---------------------------------------------------------------------

#[derive(Clone, Debug)]
pub struct ReadResult {
    /// `processes` or `threads`.
    pub mode: &'static str,
    pub parallel: usize,
    /// Median over the rounds of `rounds`.
    pub qps: f64,
    /// Queries/s of each round.
    pub rounds: Vec<f64>,
    pub ops: u64,
    pub mismatches: u64,
    pub errors: u64,
    pub problem: Option<String>,
    pub error: Option<String>,
    pub load: (Option<f64>, Option<f64>),
}

#[derive(Clone, Debug)]
pub struct LatencyResult {
    /// `kith` or `sqlite`.
    pub engine: &'static str,
    pub readers: usize,
    /// Every timed commit of every round.
    pub lat_ms: Vec<f64>,
    /// The reading processes' queries/s while the writer ran, per round.
    pub reader_qps: Vec<f64>,
    /// Wrong answers and errors of the readers.
    pub reader_problems: u64,
    pub reader_problem: Option<String>,
    pub error: Option<String>,
    pub load: (Option<f64>, Option<f64>),
}

/// Median, p99 (nearest rank), mean and max of `xs`.
pub fn latency_stats(xs: &[f64]) -> Option<(f64, f64, f64, f64)> {
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
    let rank = ((0.99 * n as f64).ceil() as usize).clamp(1, n);
    let mean = v.iter().sum::<f64>() / n as f64;
    Some((median, v[rank - 1], mean, v[n - 1]))
}

impl LatencyResult {
    pub fn stats(&self) -> Option<(f64, f64, f64, f64)> {
        latency_stats(&self.lat_ms)
    }
}

#[derive(Clone, Debug)]
pub struct HandoverResult {
    pub procs: usize,
    pub commits_each: u64,
    /// Median of `walls_ms`.
    pub wall_ms: f64,
    /// Wall time of each round.
    pub walls_ms: Vec<f64>,
    pub error: Option<String>,
    pub load: (Option<f64>, Option<f64>),
}

#[derive(Clone, Debug)]
pub struct ProcessesReport {
    pub meta: RunMeta,
    pub opts: ProcessesOptions,
    pub rels: u64,
    pub kith_version: Option<String>,
    pub sqlite_version: Option<String>,
    /// Set-up steps (name, ms).
    pub setup: Vec<(String, f64)>,
    pub error: Option<String>,
    pub reads: Vec<ReadResult>,
    pub latency: Vec<LatencyResult>,
    pub handover: Vec<HandoverResult>,
    pub checks: Vec<Check>,
}

fn log(msg: &str) {
    eprintln!("[kith-bench processes] {msg}");
}

/// Writes `nodes.csv` and `rels.csv` into `dir`.
fn write_csv(dir: &Path, nodes: u64) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(dir.join("nodes.csv"))?);
    writeln!(w, "id,name,age")?;
    for i in 0..nodes {
        writeln!(w, "{i},n{i},{}", i % 100)?;
    }
    w.flush()?;
    let mut w = std::io::BufWriter::new(std::fs::File::create(dir.join("rels.csv"))?);
    writeln!(w, "from,to,since")?;
    let mut since = 0u64;
    for v in 0..nodes {
        for j in 0..out_degree(v) {
            writeln!(w, "{v},{},{since}", rel_dst(v, j, nodes))?;
            since += 1;
        }
    }
    w.flush()
}

/// Parameter rows of ids `lo..lo + n` for [`insert::INSERT_ONE`] / [`INSERT_SQL`].
fn rows(lo: u64, n: u64) -> Json {
    Json::Arr((lo..lo + n).map(insert::row).collect())
}

fn exec_params_req(sql: bool, lo: u64, n: u64) -> Json {
    Json::Obj(vec![
        ("cmd".into(), Json::str("exec_params")),
        (
            "query".into(),
            Json::str(if sql { INSERT_SQL } else { insert::INSERT_ONE }),
        ),
        (
            "names".into(),
            Json::Arr(["id", "name", "age"].map(Json::str).to_vec()),
        ),
        ("rows".into(), rows(lo, n)),
        ("per_tx".into(), Json::Int(1)),
        ("max_ms".into(), Json::Int(0)),
        ("latencies".into(), Json::Bool(true)),
    ])
}

fn read_start_req(threads: usize, seed: u64, nodes: u64, warmup_ms: u64) -> Json {
    Json::Obj(vec![
        ("cmd".into(), Json::str("read_start")),
        ("threads".into(), Json::Int(threads as i64)),
        ("seed".into(), Json::Int(seed as i64)),
        ("nodes".into(), Json::Int(nodes as i64)),
        ("warmup_ms".into(), Json::Int(warmup_ms as i64)),
    ])
}

fn cmd(name: &str) -> Json {
    Json::Obj(vec![("cmd".into(), Json::str(name))])
}

/// The sum of ids `lo..lo + n`.
fn id_sum(lo: u64, n: u64) -> u64 {
    n * lo + n * n.saturating_sub(1) / 2
}

/// Which engine a driver runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Eng {
    Kith,
    Sqlite,
}

struct Suite<'a> {
    o: &'a ProcessesOptions,
    db: PathBuf,
    sqlite_db: PathBuf,
    /// Id ranges (first, count) written into the KithDB file.
    written: Vec<(u64, u64)>,
    /// The next id [`Suite::ids`] hands out.
    next_id: u64,
    report: ProcessesReport,
}

impl Eng {
    fn name(self) -> &'static str {
        match self {
            Eng::Kith => "kith",
            Eng::Sqlite => "sqlite",
        }
    }
}

/// The median of `xs` (0 for none).
fn median(xs: &[f64]) -> f64 {
    latency_stats(xs).map_or(0.0, |s| s.0)
}

impl Suite<'_> {
    fn hard_timeout(&self) -> Option<Duration> {
        self.o
            .timeout_ms
            .map(|ms| Duration::from_millis(2 * ms) + Duration::from_secs(30))
    }

    /// A started driver with the database open: KithDB with one thread
    /// (read-only or not), or SQLite.
    fn driver(&mut self, eng: Eng, read_only: bool) -> Result<Driver, String> {
        let (mut d, open) = match eng {
            Eng::Kith => {
                let d = Driver::start(&EngineKind::Kith, &self.o.spawn)?;
                let open = Json::Obj(vec![
                    ("cmd".into(), Json::str("open")),
                    ("path".into(), Json::str(self.db.to_string_lossy())),
                    ("threads".into(), Json::Int(1)),
                    (
                        "buffer_pool_bytes".into(),
                        Json::opt_u64(self.o.buffer_pool_bytes),
                    ),
                    ("read_only".into(), Json::Bool(read_only)),
                ]);
                if self.report.kith_version.is_none() {
                    self.report.kith_version = d
                        .hello
                        .get("version")
                        .and_then(Json::as_str)
                        .map(String::from);
                }
                (d, open)
            }
            Eng::Sqlite => {
                let d =
                    Driver::start_python(&self.o.spawn.python, &self.o.sqlite_script, "sqlite")?;
                let open = Json::Obj(vec![
                    ("cmd".into(), Json::str("open")),
                    ("path".into(), Json::str(self.sqlite_db.to_string_lossy())),
                ]);
                if self.report.sqlite_version.is_none() {
                    self.report.sqlite_version = d
                        .hello
                        .get("version")
                        .and_then(Json::as_str)
                        .map(String::from);
                }
                (d, open)
            }
        };
        d.hard_timeout = self.hard_timeout();
        match d.call(open) {
            Ok(_) => Ok(d),
            Err(e) => {
                d.quit();
                Err(format!("open: {e}"))
            }
        }
    }

    /// `n` drivers; none when one fails.
    fn drivers(&mut self, eng: Eng, read_only: bool, n: usize) -> Result<Vec<Driver>, String> {
        let mut ds = Vec::new();
        for _ in 0..n {
            match self.driver(eng, read_only) {
                Ok(d) => ds.push(d),
                Err(e) => {
                    quit_all(ds);
                    return Err(e);
                }
            }
        }
        Ok(ds)
    }

    fn check(&mut self, d: &mut Driver, eng: Eng, query: String, expected: Json) {
        let req = Json::Obj(vec![
            ("cmd".into(), Json::str("exec")),
            ("query".into(), Json::str(query.as_str())),
            ("timeout_ms".into(), Json::Int(0)),
        ]);
        let got = d
            .call(req)
            .map(|r| r.get("rows").cloned().unwrap_or(Json::Null));
        let c = Check {
            query: match eng {
                Eng::Kith => query,
                Eng::Sqlite => format!("sqlite: {query}"),
            },
            got,
            expected,
        };
        if !c.ok() {
            log(&format!(
                "CHECK FAILED {}: got {:?}, expected {}",
                c.query, c.got, c.expected
            ));
        }
        self.report.checks.push(c);
    }

    /// Checks that ids `lo..lo + n` are there, once each.
    fn check_range(&mut self, d: &mut Driver, eng: Eng, lo: u64, n: u64, hi: u64) {
        let q = match eng {
            Eng::Kith => {
                format!("MATCH (p:P) WHERE p.id >= {lo} AND p.id < {hi} RETURN count(*), sum(p.id)")
            }
            Eng::Sqlite => {
                format!("SELECT count(*), sum(id) FROM p WHERE id >= {lo} AND id < {hi}")
            }
        };
        let want = Json::Arr(vec![Json::Arr(vec![
            Json::Int(n as i64),
            Json::Int(id_sum(lo, n) as i64),
        ])]);
        self.check(d, eng, q, want);
    }

    fn setup(&mut self) -> Result<(), String> {
        let o = self.o;
        let dir = self.db.parent().unwrap_or(Path::new(".")).to_path_buf();
        let t0 = Instant::now();
        write_csv(&dir, o.nodes).map_err(|e| format!("writing the CSV files: {e}"))?;
        self.report
            .setup
            .push(("write CSV files".into(), t0.elapsed().as_secs_f64() * 1e3));
        let mut d = Driver::start(&EngineKind::Kith, &o.spawn)?;
        self.report.kith_version = d
            .hello
            .get("version")
            .and_then(Json::as_str)
            .map(String::from);
        d.hard_timeout = self.hard_timeout();
        let r = (|| {
            d.open(&self.db, 0, o.buffer_pool_bytes)?;
            for s in insert::DDL {
                d.exec(s, o.timeout_ms)?;
            }
            let mut ms = 0.0;
            for (table, file) in [("P", "nodes.csv"), ("K", "rels.csv")] {
                let stmt = format!(
                    "COPY {table} FROM '{}' (HEADER=true)",
                    dir.join(file).display()
                );
                ms += d.exec(&stmt, o.timeout_ms)?.ms;
            }
            Ok::<f64, String>(ms)
        })();
        match r {
            Ok(ms) => {
                log(&format!(
                    "KithDB: {} nodes, {} rels loaded in {ms:.0} ms",
                    o.nodes, self.report.rels
                ));
                self.report.setup.push(("KithDB: COPY P, K".into(), ms));
            }
            Err(e) => {
                d.quit();
                return Err(format!("KithDB set-up: {e}"));
            }
        }
        let m = self.report.rels;
        self.check(
            &mut d,
            Eng::Kith,
            insert::NODE_CHECK.into(),
            insert::node_check_expected(o.nodes),
        );
        self.check(
            &mut d,
            Eng::Kith,
            insert::SINCE_CHECK.into(),
            Json::Arr(vec![Json::Arr(vec![
                Json::Int(m as i64),
                Json::Int((m * m.saturating_sub(1) / 2) as i64),
            ])]),
        );
        let _ = d.close();
        d.quit();
        Ok(())
    }

    fn sqlite_setup(&mut self) -> Result<(), String> {
        let dir = self.db.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut d = self.driver(Eng::Sqlite, false)?;
        let req = Json::Obj(vec![
            ("cmd".into(), Json::str("load")),
            (
                "nodes_csv".into(),
                Json::str(dir.join("nodes.csv").to_string_lossy()),
            ),
            (
                "rels_csv".into(),
                Json::str(dir.join("rels.csv").to_string_lossy()),
            ),
        ]);
        match d.call(req) {
            Ok(r) => {
                let ms = r.get("ms").and_then(Json::as_f64).unwrap_or(f64::NAN);
                log(&format!("SQLite: loaded in {ms:.0} ms"));
                self.report
                    .setup
                    .push(("SQLite: INSERT P, K, CREATE INDEX k(src)".into(), ms));
            }
            Err(e) => {
                d.quit();
                return Err(format!("SQLite set-up: {e}"));
            }
        }
        let (n, m) = (self.o.nodes, self.report.rels);
        self.check(
            &mut d,
            Eng::Sqlite,
            "SELECT count(*), sum(age), sum(id) FROM p".into(),
            insert::node_check_expected(n),
        );
        self.check(
            &mut d,
            Eng::Sqlite,
            "SELECT count(*), sum(since) FROM k".into(),
            Json::Arr(vec![Json::Arr(vec![
                Json::Int(m as i64),
                Json::Int((m * m.saturating_sub(1) / 2) as i64),
            ])]),
        );
        d.quit();
        Ok(())
    }

    /// `n` fresh ids: the first (the rest follow it).
    fn ids(&mut self, n: u64) -> u64 {
        let lo = self.next_id;
        self.next_id += n.max(1);
        lo
    }

    /// One round of part 1 at parallelism `p`, as processes or as threads.
    fn reads(&mut self, mode: &'static str, p: usize) {
        let o = self.o;
        let before = load_avg();
        let (procs, threads) = if mode == "processes" { (p, 1) } else { (1, p) };
        let i = match self
            .report
            .reads
            .iter()
            .position(|r| r.mode == mode && r.parallel == p)
        {
            Some(i) => i,
            None => {
                self.report.reads.push(ReadResult {
                    mode,
                    parallel: p,
                    qps: 0.0,
                    rounds: vec![],
                    ops: 0,
                    mismatches: 0,
                    errors: 0,
                    problem: None,
                    error: None,
                    load: (before, None),
                });
                self.report.reads.len() - 1
            }
        };
        let seed = 1000 * p as u64 + 100 * self.report.reads[i].rounds.len() as u64;
        let r = self.drivers(Eng::Kith, true, procs).and_then(|mut ds| {
            let r = read_round(&mut ds, threads, seed, o, o.read_ms);
            quit_all(ds);
            r
        });
        let out = &mut self.report.reads[i];
        match r {
            Ok(s) => {
                out.rounds.push(s.qps);
                out.qps = median(&out.rounds);
                out.ops += s.ops;
                out.mismatches += s.mismatches;
                out.errors += s.errors;
                out.problem = out.problem.take().or(s.problem);
            }
            Err(e) => {
                out.error.get_or_insert(e);
            }
        }
        out.load.1 = load_avg();
        log(&format!(
            "reads, {p} {mode}, round {}: {:.0} queries/s ({} queries, {} wrong, {} errors){}",
            out.rounds.len(),
            out.rounds.last().copied().unwrap_or(0.0),
            out.ops,
            out.mismatches,
            out.errors,
            out.error
                .as_deref()
                .map_or(String::new(), |e| format!(": {e}"))
        ));
    }

    /// A writer for part 2 after 50 untimed commits (and, for SQLite, the
    /// load of its copy of the graph); ids written go to `written`.
    fn writer(&mut self, eng: Eng, written: &mut Vec<(u64, u64)>) -> Result<Driver, String> {
        if eng == Eng::Sqlite {
            self.sqlite_setup()?;
        }
        let mut w = self.driver(eng, false)?;
        let lo = self.ids(WARM_COMMITS);
        match w.call(exec_params_req(eng == Eng::Sqlite, lo, WARM_COMMITS)) {
            Ok(_) => {
                written.push((lo, WARM_COMMITS));
                Ok(w)
            }
            Err(e) => {
                w.quit();
                Err(format!("warm-up commits: {e}"))
            }
        }
    }

    /// `n` timed commits from ids `lo` on by `w` beside `readers` fresh
    /// reading processes: (latencies, rows done, the readers' sums).
    fn latency_segment(
        &mut self,
        w: &mut Driver,
        eng: Eng,
        readers: usize,
        (lo, n): (u64, u64),
    ) -> Result<(Vec<f64>, u64, Option<ReadSum>), String> {
        let o = self.o;
        let mut rs = self.drivers(eng, true, readers)?;
        let r = (|| {
            for (i, d) in rs.iter_mut().enumerate() {
                d.call(read_start_req(
                    1,
                    7000 + lo + i as u64,
                    o.nodes,
                    o.warmup_ms,
                ))
                .map_err(|e| format!("read_start: {e}"))?;
            }
            if readers > 0 {
                std::thread::sleep(Duration::from_millis(o.warmup_ms));
            }
            let reply = w.call(exec_params_req(eng == Eng::Sqlite, lo, n))?;
            let lat: Vec<f64> = reply
                .get("lat_ms")
                .and_then(Json::as_arr)
                .unwrap_or(&[])
                .iter()
                .filter_map(Json::as_f64)
                .collect();
            let done = reply.get("rows_done").and_then(Json::as_i64).unwrap_or(0);
            let sums = if readers > 0 {
                Some(stop_all(&mut rs).map_err(|e| format!("read_stop: {e}"))?)
            } else {
                None
            };
            Ok((lat, done.max(0) as u64, sums))
        })();
        quit_all(rs);
        r
    }

    /// Part 2: in every round, KithDB and SQLite with 0 and `readers`
    /// readers each commit `commits / rounds` rows, in an order rotated by
    /// one each round; the latencies of a configuration are pooled.
    fn latency(&mut self) {
        let o = self.o;
        let configs = [
            (Eng::Kith, 0),
            (Eng::Sqlite, 0),
            (Eng::Kith, o.readers),
            (Eng::Sqlite, o.readers),
        ];
        for (eng, readers) in configs {
            self.report.latency.push(LatencyResult {
                engine: eng.name(),
                readers,
                lat_ms: vec![],
                reader_qps: vec![],
                reader_problems: 0,
                reader_problem: None,
                error: None,
                load: (load_avg(), None),
            });
        }
        let mut written: [Vec<(u64, u64)>; 2] = [vec![], vec![]];
        let mut writers: Vec<Option<Driver>> = Vec::new();
        for (e, eng) in [Eng::Kith, Eng::Sqlite].into_iter().enumerate() {
            match self.writer(eng, &mut written[e]) {
                Ok(w) => writers.push(Some(w)),
                Err(err) => {
                    log(&format!("{}: {err}", eng.name()));
                    for r in self.report.latency.iter_mut() {
                        if r.engine == eng.name() {
                            r.error = Some(err.clone());
                        }
                    }
                    writers.push(None);
                }
            }
        }
        let rounds = o.rounds.max(1);
        let per = (o.commits / rounds as u64).max(1);
        for round in 0..rounds {
            for k in 0..configs.len() {
                let ci = (k + round) % configs.len();
                let (eng, readers) = configs[ci];
                let e = usize::from(eng == Eng::Sqlite);
                let Some(mut w) = writers[e].take() else {
                    continue;
                };
                let lo = self.ids(per);
                let seg = self.latency_segment(&mut w, eng, readers, (lo, per));
                writers[e] = Some(w);
                let out = &mut self.report.latency[ci];
                match seg {
                    Ok((lat, done, sums)) => {
                        written[e].push((lo, done));
                        let st = latency_stats(&lat);
                        out.lat_ms.extend(lat);
                        if let Some(s) = &sums {
                            out.reader_qps.push(s.qps);
                            out.reader_problems += s.mismatches + s.errors;
                            if out.reader_problem.is_none() {
                                out.reader_problem.clone_from(&s.problem);
                            }
                        }
                        if let Some((med, p99, _, _)) = st {
                            log(&format!(
                                "{} commit latency, {readers} readers, round {}: median {med:.3} ms, p99 {p99:.3} ms{}",
                                eng.name(),
                                round + 1,
                                sums.map_or(String::new(), |s| format!(
                                    " (readers {:.0} queries/s)",
                                    s.qps
                                ))
                            ));
                        }
                    }
                    Err(err) => {
                        log(&format!("{}, {readers} readers: {err}", eng.name()));
                        out.error.get_or_insert(err);
                    }
                }
            }
        }
        for r in self.report.latency.iter_mut() {
            r.load.1 = load_avg();
        }
        for (e, eng) in [Eng::Kith, Eng::Sqlite].into_iter().enumerate() {
            let Some(mut w) = writers[e].take() else {
                continue;
            };
            for &(lo, n) in &written[e] {
                self.check_range(&mut w, eng, lo, n, lo + n);
            }
            let _ = w.call(cmd("close"));
            w.quit();
        }
        let [kith, _] = written;
        self.written.extend(kith);
    }

    /// Part 3: in every round, one process committing everything and
    /// `handover_procs` processes at once (in alternating order).
    fn handover(&mut self) {
        let o = self.o;
        let procs = o.handover_procs.max(1);
        let total = procs as u64 * o.handover_commits;
        for n in [1, procs] {
            self.report.handover.push(HandoverResult {
                procs: n,
                commits_each: total / n as u64,
                wall_ms: 0.0,
                walls_ms: vec![],
                error: None,
                load: (load_avg(), None),
            });
        }
        for round in 0..o.rounds.max(1) {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for ci in order {
                let (n, each) = {
                    let h = &self.report.handover[ci];
                    (h.procs, h.commits_each)
                };
                let los: Vec<u64> = (0..n).map(|_| self.ids(each)).collect();
                let r = self.drivers(Eng::Kith, false, n).and_then(|mut ds| {
                    let r = handover_round(&mut ds, &los, each);
                    if let (Ok((_, done)), Some(d)) = (&r, ds.first_mut()) {
                        for (&lo, &k) in los.iter().zip(done) {
                            self.written.push((lo, k));
                            self.check_range(d, Eng::Kith, lo, k, lo + each);
                        }
                    }
                    quit_all(ds);
                    r
                });
                let h = &mut self.report.handover[ci];
                match r {
                    Ok((wall, _)) => {
                        h.walls_ms.push(wall);
                        h.wall_ms = median(&h.walls_ms);
                    }
                    Err(e) => {
                        h.error.get_or_insert(e);
                    }
                }
                h.load.1 = load_avg();
                log(&format!(
                    "hand-over: {n} process(es) x {each} commits, round {}: {:.0} ms{}",
                    round + 1,
                    h.walls_ms.last().copied().unwrap_or(0.0),
                    h.error
                        .as_deref()
                        .map_or(String::new(), |e| format!(": {e}"))
                ));
            }
        }
    }

    /// A new read-only process counts every node.
    fn final_check(&mut self) {
        let mut d = match self.driver(Eng::Kith, true) {
            Ok(d) => d,
            Err(e) => {
                self.report.checks.push(Check {
                    query: "final count".into(),
                    got: Err(e),
                    expected: Json::Null,
                });
                return;
            }
        };
        let n = self.o.nodes;
        let extra: u64 = self.written.iter().map(|w| w.1).sum();
        let ids: u64 = n * n.saturating_sub(1) / 2
            + self
                .written
                .iter()
                .map(|&(lo, c)| id_sum(lo, c))
                .sum::<u64>();
        self.check(
            &mut d,
            Eng::Kith,
            "MATCH (p:P) RETURN count(*), sum(p.id)".into(),
            Json::Arr(vec![Json::Arr(vec![
                Json::Int((n + extra) as i64),
                Json::Int(ids as i64),
            ])]),
        );
        let _ = d.close();
        d.quit();
    }
}

/// Summed reply of `read_stop` over several drivers.
#[derive(Default)]
struct ReadSum {
    qps: f64,
    ops: u64,
    mismatches: u64,
    errors: u64,
    problem: Option<String>,
}

fn stop_all(ds: &mut [Driver]) -> Result<ReadSum, String> {
    let mut s = ReadSum::default();
    for d in ds.iter_mut() {
        let r = d.call(cmd("read_stop"))?;
        let int = |k: &str| r.get(k).and_then(Json::as_i64).unwrap_or(0).max(0) as u64;
        s.qps += r.get("qps").and_then(Json::as_f64).unwrap_or(0.0);
        s.ops += int("ops");
        s.mismatches += int("mismatches");
        s.errors += int("errors");
        if s.problem.is_none() {
            s.problem = r.get("problem").and_then(Json::as_str).map(String::from);
        }
    }
    Ok(s)
}

/// Starts `threads` reading threads in every driver, lets them warm up and
/// run `ms`, stops them.
fn read_round(
    ds: &mut [Driver],
    threads: usize,
    seed: u64,
    o: &ProcessesOptions,
    ms: u64,
) -> Result<ReadSum, String> {
    for (i, d) in ds.iter_mut().enumerate() {
        d.call(read_start_req(
            threads,
            seed + i as u64,
            o.nodes,
            o.warmup_ms,
        ))?;
    }
    std::thread::sleep(Duration::from_millis(o.warmup_ms + ms));
    stop_all(ds)
}

/// Sends every driver its `each` commits from ids `los[i]` on before
/// reading any reply: (wall ms from the first start to the last end, rows
/// each did).
fn handover_round(ds: &mut [Driver], los: &[u64], each: u64) -> Result<(f64, Vec<u64>), String> {
    for (d, &lo) in ds.iter_mut().zip(los) {
        d.send(&exec_params_req(false, lo, each))?;
    }
    let mut span: Option<(i64, i64)> = None;
    let mut done = Vec::new();
    let mut error = None;
    for (i, d) in ds.iter_mut().enumerate() {
        match d.recv() {
            Ok(r) => {
                let t = |k: &str| r.get(k).and_then(Json::as_i64).unwrap_or(0);
                let (a, b) = (t("t0_unix_us"), t("t1_unix_us"));
                span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
                done.push(t("rows_done").max(0) as u64);
            }
            Err(e) => {
                done.push(0);
                error.get_or_insert(format!("process {i}: {e}"));
            }
        }
    }
    match (error, span) {
        (Some(e), _) => Err(e),
        (None, Some((a, b))) => Ok(((b - a) as f64 / 1e3, done)),
        (None, None) => Err("no writers".into()),
    }
}

fn quit_all(ds: Vec<Driver>) {
    for mut d in ds {
        let _ = d.call(cmd("close"));
        d.quit();
    }
}

pub fn run(o: &ProcessesOptions) -> ProcessesReport {
    let dir = o
        .tmp_dir
        .join(format!("kith-bench-processes-{}", std::process::id()));
    let mut s = Suite {
        o,
        db: dir.join("g.kith"),
        sqlite_db: dir.join("g.sqlite"),
        written: vec![],
        next_id: WRITE_BASE,
        report: ProcessesReport {
            meta: RunMeta::collect(),
            opts: o.clone(),
            rels: rel_count(o.nodes),
            kith_version: None,
            sqlite_version: None,
            setup: vec![],
            error: None,
            reads: vec![],
            latency: vec![],
            handover: vec![],
            checks: vec![],
        },
    };
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        s.report.error = Some(format!("cannot create {}: {e}", dir.display()));
        return s.report;
    }
    let wants = |p: &str| o.parts.iter().any(|x| x == p);
    log(&format!(
        "graph: {} nodes, {} rels in {}",
        o.nodes,
        s.report.rels,
        dir.display()
    ));
    match s.setup() {
        Err(e) => {
            log(&e);
            s.report.error = Some(e);
        }
        Ok(()) => {
            if wants("reads") {
                for round in 0..o.rounds.max(1) {
                    for &p in &o.parallel {
                        let modes = if round % 2 == 0 {
                            ["processes", "threads"]
                        } else {
                            ["threads", "processes"]
                        };
                        for mode in modes {
                            s.reads(mode, p);
                        }
                    }
                }
            }
            if wants("latency") {
                s.latency();
            }
            if wants("handover") {
                s.handover();
            }
            s.final_check();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    s.report
}

// ---------------------------------------------------------------------
// Report.
// ---------------------------------------------------------------------

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

fn load(l: (Option<f64>, Option<f64>)) -> String {
    let f = |x: Option<f64>| x.map_or("?".into(), |x| format!("{x:.2}"));
    format!("{}→{}", f(l.0), f(l.1))
}

/// A goal row: (target, measured, goal text, met).
type Goal = (String, Option<f64>, &'static str, Option<bool>);

impl ProcessesReport {
    fn read(&self, mode: &str, p: usize) -> Option<&ReadResult> {
        self.reads
            .iter()
            .find(|r| r.mode == mode && r.parallel == p && r.error.is_none() && r.qps > 0.0)
    }

    fn lat(&self, engine: &str, readers: usize) -> Option<(f64, f64, f64, f64)> {
        self.latency
            .iter()
            .find(|r| r.engine == engine && r.readers == readers && r.error.is_none())
            .and_then(LatencyResult::stats)
    }

    /// The goals with what was measured.
    pub fn goals(&self) -> Vec<Goal> {
        let mut g: Vec<Goal> = Vec::new();
        for &p in &self.opts.parallel {
            let ratio = match (self.read("processes", p), self.read("threads", p)) {
                (Some(a), Some(b)) => Some(a.qps / b.qps),
                _ => None,
            };
            g.push((
                format!("reads at parallelism {p}: processes / threads (q/s)"),
                ratio,
                "≥ 0.90",
                ratio.map(|r| r >= 0.9),
            ));
        }
        if self.opts.parts.iter().any(|p| p == "latency") {
            let r = self.opts.readers;
            let (k0, kr, s0, sr) = (
                self.lat("kith", 0),
                self.lat("kith", r),
                self.lat("sqlite", 0),
                self.lat("sqlite", r),
            );
            let ratio = |a: Option<(f64, f64, f64, f64)>, b: Option<(f64, f64, f64, f64)>, p99| {
                a.zip(b)
                    .map(|(a, b)| if p99 { a.1 / b.1 } else { a.0 / b.0 })
            };
            for (what, p99) in [("median", false), ("p99", true)] {
                let x = ratio(kr, k0, p99);
                g.push((
                    format!("KithDB commit {what}: {r} readers / 0 readers"),
                    x,
                    "≤ 1.2",
                    x.map(|x| x <= 1.2),
                ));
            }
            for (what, p99) in [("median", false), ("p99", true)] {
                let x = ratio(kr, sr, p99);
                g.push((
                    format!("commit {what} with {r} readers: KithDB / SQLite WAL"),
                    x,
                    "≤ 1.5",
                    x.map(|x| x <= 1.5),
                ));
            }
            let x = ratio(k0, s0, false);
            g.push((
                "commit median, no readers: KithDB / SQLite WAL (for reference)".into(),
                x,
                "–",
                None,
            ));
        }
        let one = self
            .handover
            .iter()
            .find(|h| h.procs == 1 && h.error.is_none());
        let many = self
            .handover
            .iter()
            .find(|h| h.procs > 1 && h.error.is_none());
        if let (Some(a), Some(b)) = (one, many) {
            let x = b.wall_ms / a.wall_ms;
            g.push((
                format!(
                    "hand-over: {} processes × {} commits / 1 process × {} (wall)",
                    b.procs, b.commits_each, a.commits_each
                ),
                Some(x),
                "≤ 1.5",
                Some(x <= 1.5),
            ));
        }
        g
    }

    /// The read-throughput table.
    fn md_reads(&self, s: &mut String) {
        let o = &self.opts;
        if !self.reads.is_empty() {
            let _ = writeln!(
                s,
                "\n### Read throughput: `{LOOKUP}` and `{HOP}` alternating, random ids; {:.1} s timed after {:.1} s warm-up; median of {} rounds\n",
                o.read_ms as f64 / 1e3,
                o.warmup_ms as f64 / 1e3,
                o.rounds
            );
            s.push_str("| parallelism | processes q/s | threads q/s | processes / threads | goal | rounds, k q/s (processes; threads) | wrong answers | load avg (proc.; threads) |\n|---:|---:|---:|---:|---|---|---:|---|\n");
            for &p in &o.parallel {
                let find = |mode| {
                    self.reads
                        .iter()
                        .find(|r| r.mode == mode && r.parallel == p)
                };
                let (a, b) = (find("processes"), find("threads"));
                let cell = |r: Option<&ReadResult>| match r {
                    None => "–".to_string(),
                    Some(r) => match &r.error {
                        Some(e) => format!("error: {e}"),
                        None => fmt_int(r.qps),
                    },
                };
                let ratio = match (self.read("processes", p), self.read("threads", p)) {
                    (Some(a), Some(b)) => format!("{:.2}", a.qps / b.qps),
                    _ => "–".into(),
                };
                let bad: u64 = [a, b]
                    .iter()
                    .flatten()
                    .map(|r| r.mismatches + r.errors)
                    .sum();
                let rounds = |r: Option<&ReadResult>| {
                    r.map_or("–".into(), |r| {
                        r.rounds
                            .iter()
                            .map(|q| format!("{:.1}", q / 1e3))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                };
                let _ = writeln!(
                    s,
                    "| {p} | {} | {} | {ratio} | ≥ 0.90 | {}; {} | {bad} | {}; {} |",
                    cell(a),
                    cell(b),
                    rounds(a),
                    rounds(b),
                    a.map_or("–".into(), |r| load(r.load)),
                    b.map_or("–".into(), |r| load(r.load))
                );
            }
        }
    }

    /// The commit-latency table.
    fn md_latency(&self, s: &mut String) {
        let o = &self.opts;
        if !self.latency.is_empty() {
            let _ = writeln!(
                s,
                "\n### Commit latency of one single-row auto-commit write: {} rounds of {} timed commits per configuration, pooled (after {WARM_COMMITS} untimed), readers running the reads above\n",
                o.rounds,
                o.commits / o.rounds.max(1) as u64
            );
            let _ = writeln!(
                s,
                "KithDB: `{}`; SQLite: `{INSERT_SQL}` (readers: `{LOOKUP_SQL}`, `{HOP_SQL}`).\n",
                insert::INSERT_ONE
            );
            s.push_str("| writer | reading processes | commits | median ms | p99 ms | mean ms | max ms | readers' q/s | readers' wrong answers | load avg |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
            for r in &self.latency {
                let name = if r.engine == "kith" {
                    "KithDB"
                } else {
                    "SQLite WAL"
                };
                match (&r.error, r.stats()) {
                    (None, Some((med, p99, mean, max))) => {
                        let _ = writeln!(
                            s,
                            "| {name} | {} | {} | {med:.3} | {p99:.3} | {mean:.3} | {max:.2} | {} | {} | {} |",
                            r.readers,
                            r.lat_ms.len(),
                            if r.reader_qps.is_empty() {
                                "–".into()
                            } else {
                                fmt_int(median(&r.reader_qps))
                            },
                            r.reader_problems,
                            load(r.load)
                        );
                    }
                    (e, _) => {
                        let _ = writeln!(
                            s,
                            "| {name} | {} | error: {} | | | | | | | |",
                            r.readers,
                            e.as_deref().unwrap_or("no commits")
                        );
                    }
                }
            }
        }
    }

    /// The writer hand-over table.
    fn md_handover(&self, s: &mut String) {
        let o = &self.opts;
        if !self.handover.is_empty() {
            let _ = writeln!(
                s,
                "\n### Writer hand-over: single-row auto-commit CREATEs, processes committing at once; median of {} rounds\n",
                o.rounds
            );
            s.push_str("| writers | commits each | commits in all | wall s | commits/s | rounds, s | load avg |\n|---:|---:|---:|---:|---:|---|---|\n");
            for h in &self.handover {
                match &h.error {
                    None => {
                        let all = h.procs as u64 * h.commits_each;
                        let rounds: Vec<String> = h
                            .walls_ms
                            .iter()
                            .map(|w| format!("{:.2}", w / 1e3))
                            .collect();
                        let _ = writeln!(
                            s,
                            "| {} | {} | {} | {:.3} | {} | {} | {} |",
                            h.procs,
                            fmt_int(h.commits_each as f64),
                            fmt_int(all as f64),
                            h.wall_ms / 1e3,
                            fmt_int(all as f64 / (h.wall_ms / 1e3)),
                            rounds.join(", "),
                            load(h.load)
                        );
                    }
                    Some(e) => {
                        let _ = writeln!(s, "| {} | error: {e} | | | | | |", h.procs);
                    }
                }
            }
        }
    }

    pub fn markdown(&self) -> String {
        let o = &self.opts;
        let m = &self.meta;
        let mut s = String::new();
        s.push_str("## processes (issue 53): several processes on one database\n\n");
        let _ = writeln!(
            s,
            "- date {}, git `{}`, {} cores{}{}",
            m.date,
            m.git_rev,
            m.cores,
            m.mem_bytes.map_or(String::new(), |b| format!(
                ", {:.1} GiB",
                b as f64 / (1u64 << 30) as f64
            )),
            m.cpu.as_deref().map_or(String::new(), |c| format!(", {c}"))
        );
        let _ = writeln!(s, "- command: `{}`", m.command);
        let _ = writeln!(
            s,
            "- KithDB {}, SQLite {} (Python sqlite3; WAL, synchronous=FULL)",
            self.kith_version.as_deref().unwrap_or("?"),
            self.sqlite_version.as_deref().unwrap_or("not run")
        );
        let setup: Vec<String> = self
            .setup
            .iter()
            .map(|(n, ms)| format!("{n} {:.2} s", ms / 1e3))
            .collect();
        let _ = writeln!(
            s,
            "- graph: {} nodes P, {} rels K (out-degree id % 21); set-up: {}",
            fmt_int(o.nodes as f64),
            fmt_int(self.rels as f64),
            setup.join(", ")
        );
        let _ = writeln!(
            s,
            "- every process and reading thread runs its queries with 1 thread; parallelism above {} oversubscribes the cores",
            m.cores
        );
        if let Some(e) = &self.error {
            let _ = writeln!(s, "- **error**: {e}");
        }
        self.md_reads(&mut s);
        self.md_latency(&mut s);
        self.md_handover(&mut s);
        s.push_str("\n### Goals\n\n| target | measured | goal | met |\n|---|---:|---|---|\n");
        for (what, x, goal, met) in self.goals() {
            let _ = writeln!(
                s,
                "| {what} | {} | {goal} | {} |",
                x.map_or("–".into(), |x| format!("{x:.2}")),
                match met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "–",
                }
            );
        }
        let bad = self.checks.iter().filter(|c| !c.ok()).count();
        let _ = writeln!(
            s,
            "\nChecks: {} of {} matched{}",
            self.checks.len() - bad,
            self.checks.len(),
            if bad == 0 { "." } else { ":" }
        );
        for c in self.checks.iter().filter(|c| !c.ok()) {
            let _ = writeln!(
                s,
                "- **MISMATCH** `{}`: got {}, expected {}",
                c.query,
                match &c.got {
                    Ok(g) => g.to_string(),
                    Err(e) => format!("error: {e}"),
                },
                c.expected
            );
        }
        s
    }

    pub fn to_json(&self) -> Json {
        let m = &self.meta;
        let o = &self.opts;
        let f = |x: f64| Json::Float(x);
        let pair =
            |l: (Option<f64>, Option<f64>)| Json::Arr(vec![Json::opt_f64(l.0), Json::opt_f64(l.1)]);
        let reads = self
            .reads
            .iter()
            .map(|r| {
                Json::Obj(vec![
                    ("mode".into(), Json::str(r.mode)),
                    ("parallel".into(), Json::Int(r.parallel as i64)),
                    ("qps".into(), f(r.qps)),
                    (
                        "qps_rounds".into(),
                        Json::Arr(r.rounds.iter().map(|&x| f(x)).collect()),
                    ),
                    ("queries".into(), Json::Int(r.ops as i64)),
                    ("wrong_answers".into(), Json::Int(r.mismatches as i64)),
                    ("errors".into(), Json::Int(r.errors as i64)),
                    ("problem".into(), Json::opt_str(r.problem.as_deref())),
                    ("error".into(), Json::opt_str(r.error.as_deref())),
                    ("load_avg".into(), pair(r.load)),
                ])
            })
            .collect();
        let latency = self.latency.iter().map(latency_json).collect();
        let handover = self
            .handover
            .iter()
            .map(|h| {
                Json::Obj(vec![
                    ("processes".into(), Json::Int(h.procs as i64)),
                    ("commits_each".into(), Json::Int(h.commits_each as i64)),
                    ("wall_ms".into(), f(h.wall_ms)),
                    (
                        "walls_ms".into(),
                        Json::Arr(h.walls_ms.iter().map(|&x| f(x)).collect()),
                    ),
                    ("error".into(), Json::opt_str(h.error.as_deref())),
                    ("load_avg".into(), pair(h.load)),
                ])
            })
            .collect();
        let goals = self
            .goals()
            .into_iter()
            .map(|(what, x, goal, met)| {
                Json::Obj(vec![
                    ("target".into(), Json::Str(what)),
                    ("measured".into(), Json::opt_f64(x)),
                    ("goal".into(), Json::str(goal)),
                    ("met".into(), met.map_or(Json::Null, Json::Bool)),
                ])
            })
            .collect();
        let checks = self
            .checks
            .iter()
            .map(|c| {
                Json::Obj(vec![
                    ("query".into(), Json::str(c.query.as_str())),
                    (
                        "got".into(),
                        match &c.got {
                            Ok(g) => g.clone(),
                            Err(e) => Json::Str(format!("error: {e}")),
                        },
                    ),
                    ("expected".into(), c.expected.clone()),
                    ("ok".into(), Json::Bool(c.ok())),
                ])
            })
            .collect();
        Json::Obj(vec![
            ("suite".into(), Json::str("processes")),
            ("date".into(), Json::str(m.date.as_str())),
            ("git_rev".into(), Json::str(m.git_rev.as_str())),
            ("cores".into(), Json::Int(m.cores as i64)),
            ("mem_bytes".into(), Json::opt_u64(m.mem_bytes)),
            ("cpu".into(), Json::opt_str(m.cpu.as_deref())),
            ("command".into(), Json::str(m.command.as_str())),
            (
                "kith_version".into(),
                Json::opt_str(self.kith_version.as_deref()),
            ),
            (
                "sqlite_version".into(),
                Json::opt_str(self.sqlite_version.as_deref()),
            ),
            ("nodes".into(), Json::Int(o.nodes as i64)),
            ("rels".into(), Json::Int(self.rels as i64)),
            ("read_ms".into(), Json::Int(o.read_ms as i64)),
            ("warmup_ms".into(), Json::Int(o.warmup_ms as i64)),
            ("readers".into(), Json::Int(o.readers as i64)),
            ("rounds".into(), Json::Int(o.rounds as i64)),
            (
                "buffer_pool_bytes".into(),
                Json::opt_u64(o.buffer_pool_bytes),
            ),
            (
                "setup".into(),
                Json::Arr(
                    self.setup
                        .iter()
                        .map(|(n, ms)| {
                            Json::Obj(vec![
                                ("step".into(), Json::str(n.as_str())),
                                ("ms".into(), f(*ms)),
                            ])
                        })
                        .collect(),
                ),
            ),
            ("error".into(), Json::opt_str(self.error.as_deref())),
            ("reads".into(), Json::Arr(reads)),
            ("latency".into(), Json::Arr(latency)),
            ("handover".into(), Json::Arr(handover)),
            ("goals".into(), Json::Arr(goals)),
            ("checks".into(), Json::Arr(checks)),
        ])
    }
}

/// One commit-latency configuration as JSON (with every commit's time).
fn latency_json(r: &LatencyResult) -> Json {
    let f = |x: f64| Json::Float(x);
    let pair =
        |l: (Option<f64>, Option<f64>)| Json::Arr(vec![Json::opt_f64(l.0), Json::opt_f64(l.1)]);
    let st = r.stats();
    Json::Obj(vec![
        ("engine".into(), Json::str(r.engine)),
        ("readers".into(), Json::Int(r.readers as i64)),
        ("commits".into(), Json::Int(r.lat_ms.len() as i64)),
        ("median_ms".into(), Json::opt_f64(st.map(|s| s.0))),
        ("p99_ms".into(), Json::opt_f64(st.map(|s| s.1))),
        ("mean_ms".into(), Json::opt_f64(st.map(|s| s.2))),
        ("max_ms".into(), Json::opt_f64(st.map(|s| s.3))),
        (
            "reader_qps_rounds".into(),
            Json::Arr(r.reader_qps.iter().map(|&x| f(x)).collect()),
        ),
        (
            "reader_wrong_or_errors".into(),
            Json::Int(r.reader_problems as i64),
        ),
        (
            "reader_problem".into(),
            Json::opt_str(r.reader_problem.as_deref()),
        ),
        ("error".into(), Json::opt_str(r.error.as_deref())),
        ("load_avg".into(), pair(r.load)),
        (
            "lat_ms".into(),
            Json::Arr(r.lat_ms.iter().map(|&x| f(x)).collect()),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_formulas() {
        for n in [1u64, 20, 21, 22, 1000, 100_000] {
            assert_eq!(rel_count(n), (0..n).map(out_degree).sum::<u64>());
        }
        assert!((0..1000).all(|v| (0..out_degree(v)).all(|j| rel_dst(v, j, 1000) < 1000)));
        assert_eq!(id_sum(10, 3), 33);
        assert_eq!(id_sum(5, 0), 0);
    }

    #[test]
    fn stats() {
        let xs: Vec<f64> = (1..=200).map(f64::from).collect();
        let (med, p99, mean, max) = latency_stats(&xs).unwrap();
        assert_eq!((med, p99, mean, max), (100.5, 198.0, 100.5, 200.0));
        assert_eq!(latency_stats(&[3.0]), Some((3.0, 3.0, 3.0, 3.0)));
        assert_eq!(latency_stats(&[]), None);
    }
}
