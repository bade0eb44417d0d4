//! The campaign runner: derives one case seed per iteration from the master
//! seed, runs cases on worker threads (each case: a fresh database with a
//! random graph, read queries through every enabled oracle, a write
//! sequence against the model, reads after the writes), watches for hangs,
//! minimizes and writes findings, and sums everything up.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use kith::ErrorKind;

use crate::exec::{CrashEvent, Session, Slot};
use crate::graph::Graph;
use crate::minimize::minimize;
use crate::oracle::{self, replay, Case, Check, CrashSig, Oracle, Verdict};
use crate::query::{Features, Gen};
use crate::report::Finding;
use crate::rng::{derive, Rng};
use crate::write;

/// When a campaign stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    Seconds(f64),
    /// About this many generated read queries (whole cases).
    Queries(u64),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub limit: Limit,
    /// Worker threads, each with its own databases.
    pub workers: usize,
    /// Where finding scripts go (`None`: not written).
    pub findings_dir: Option<PathBuf>,
    pub oracles: BTreeSet<Oracle>,
    pub features: Features,
    pub verbose: bool,
    /// Minimize at most this many findings per oracle (0: none).
    pub minimize_per_oracle: usize,
    pub minimize_seconds: f64,
    pub queries_per_case: usize,
    pub writes_per_case: usize,
    /// Read queries after the writes of a case.
    pub reads_after_writes: usize,
    /// Start no case after this many seconds, whatever `limit` says (a
    /// cap for `Limit::Queries` on a slow build).
    pub max_seconds: Option<f64>,
}

impl Config {
    pub fn new(seed: u64, limit: Limit) -> Config {
        Config {
            seed,
            limit,
            workers: 1,
            findings_dir: None,
            oracles: Oracle::ALL.iter().copied().collect(),
            features: Features::default(),
            verbose: false,
            minimize_per_oracle: 3,
            minimize_seconds: 20.0,
            queries_per_case: 10,
            writes_per_case: 12,
            reads_after_writes: 3,
            max_seconds: None,
        }
    }

    /// The CI campaigns' settings: the CI construct set
    /// ([`crate::query::CI_SKIP`] left out), at most one finding shrunk per
    /// oracle (10 s each), scripts written to `dir`.
    pub fn for_ci(seed: u64, limit: Limit, dir: PathBuf) -> Config {
        let mut config = Config::new(seed, limit);
        config.features = crate::query::Features::ci();
        config.minimize_per_oracle = 1;
        config.minimize_seconds = 10.0;
        config.findings_dir = Some(dir);
        config
    }

    fn on(&self, o: Oracle) -> bool {
        self.oracles.contains(&o)
    }
}

/// Counts of one oracle's checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckStats {
    pub run: u64,
    pub passed: u64,
    pub skipped: u64,
    pub failed: u64,
}

/// What a campaign (or one case) did.
#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub cases: u64,
    /// Generated read queries.
    pub queries: u64,
    /// Generated write statements.
    pub writes: u64,
    /// Statements executed in all (oracle variants, dumps, settings).
    pub statements: u64,
    /// Errors of the generated read queries, by kind.
    pub errors: BTreeMap<String, u64>,
    /// A few of those errors per kind: message and query.
    pub error_samples: BTreeMap<String, Vec<String>>,
    pub checks: BTreeMap<Oracle, CheckStats>,
    pub findings: Vec<Finding>,
    /// Crash findings left out because one with the same message was kept.
    pub duplicates: u64,
    /// Timeouts of queries whose results are simply too big (not hangs).
    pub big: u64,
    pub written: Vec<PathBuf>,
    pub elapsed: Duration,
}

impl Report {
    fn note_error(&mut self, kind: ErrorKind, message: &str, check: &Check) {
        let name = kind_name(kind);
        *self.errors.entry(name.clone()).or_default() += 1;
        let samples = self.error_samples.entry(name).or_default();
        if samples.len() < 5 {
            let query = match check {
                Check::Tlp { query, .. }
                | Check::NoRec { query, .. }
                | Check::Diff { query }
                | Check::Kuzu { query } => query.to_string(),
                _ => String::new(),
            };
            samples.push(format!(
                "{}\n      {query}",
                message.lines().next().unwrap_or("")
            ));
        }
    }

    fn absorb(&mut self, other: Report) {
        self.cases += other.cases;
        self.queries += other.queries;
        self.writes += other.writes;
        self.statements += other.statements;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (k, v) in other.error_samples {
            let mine = self.error_samples.entry(k).or_default();
            for x in v {
                if mine.len() < 5 {
                    mine.push(x);
                }
            }
        }
        for (o, s) in other.checks {
            let e = self.checks.entry(o).or_default();
            e.run += s.run;
            e.passed += s.passed;
            e.skipped += s.skipped;
            e.failed += s.failed;
        }
        self.findings.extend(other.findings);
        self.duplicates += other.duplicates;
        self.big += other.big;
        self.written.extend(other.written);
    }

    /// Findings per label (`tlp`, `hang`, ...).
    pub fn findings_by_label(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for f in &self.findings {
            *m.entry(f.label()).or_default() += 1;
        }
        m
    }

    /// `kith-fuzz: seed S, Q queries (...), F findings (...)`.
    pub fn summary_line(&self) -> String {
        let errors: u64 = self.errors.values().sum();
        let by_kind: Vec<String> = self
            .errors
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let by_label: Vec<String> = self
            .findings_by_label()
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let secs = self.elapsed.as_secs_f64().max(1e-3);
        format!(
            "kith-fuzz: seed {}, {} cases, {} queries ({} errors{}{}), {} write statements, {} statements run ({:.0} queries/s, {:.0} statements/s), {} findings{}{}",
            self.seed,
            self.cases,
            self.queries,
            errors,
            if by_kind.is_empty() { "" } else { ": " },
            by_kind.join(", "),
            self.writes,
            self.statements,
            self.queries as f64 / secs,
            self.statements as f64 / secs,
            self.findings.len(),
            if by_label.is_empty() {
                String::new()
            } else {
                format!(" ({})", by_label.join(", "))
            },
            if self.duplicates > 0 {
                format!(", {} duplicate crashes left out", self.duplicates)
            } else {
                String::new()
            }
        ) + &if self.big > 0 {
            format!(", {} timeouts of too-big queries", self.big)
        } else {
            String::new()
        }
    }
}

/// State shared by the workers of a campaign.
struct Shared {
    config: Config,
    /// Findings minimized so far, per oracle.
    minimized: Mutex<BTreeMap<Oracle, usize>>,
    /// Crashes already reported.
    crash_signatures: Mutex<HashSet<CrashSig>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn kind_name(k: ErrorKind) -> String {
    format!("{k:?}")
}

/// Runs one case: the graph of `seed`, its queries through the oracles,
/// its writes. `slot` lets a watchdog see and interrupt it.
pub fn run_case(seed: u64, config: &Config, slot: Option<Arc<Slot>>) -> Report {
    let shared = Shared {
        config: config.clone(),
        minimized: Mutex::new(BTreeMap::new()),
        crash_signatures: Mutex::new(HashSet::new()),
    };
    run_case_shared(seed, &shared, slot)
}

fn run_case_shared(seed: u64, shared: &Shared, slot: Option<Arc<Slot>>) -> Report {
    let config = &shared.config;
    let mut report = Report {
        seed,
        cases: 1,
        ..Report::default()
    };
    let graph = Graph::generate(&mut Rng::new(seed));
    let mut session = match Session::open(slot.clone(), seed) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kith-fuzz: case {seed}: {e}");
            return report;
        }
    };
    let mut pending: Vec<(Case, oracle::Failure)> = Vec::new();
    if let Err((stmt, out)) = session.load(&graph) {
        // Loading must work; anything else is a finding of its own.
        report.statements += session.executed;
        let kind = out.error_kind().unwrap_or(ErrorKind::Internal);
        pending.push((
            Case {
                seed,
                graph: graph.clone(),
                writes: Vec::new(),
                check: Check::Crash {
                    settings: Vec::new(),
                    repeat: false,
                    statement: stmt.clone(),
                    kind,
                },
                crash: None,
            },
            oracle::Failure {
                summary: format!("loading the graph failed: {}", out.describe()),
                statements: vec![stmt],
                expected: "the statement succeeds".into(),
                actual: out.describe(),
            },
        ));
        session.events.clear();
        finish(shared, &mut report, pending, slot);
        return report;
    }
    let mut run = CaseRun {
        shared,
        config,
        seed,
        graph: &graph,
        found: BTreeSet::new(),
        pending,
        report,
    };
    run.reads(&mut session, 0, config.queries_per_case);
    if config.on(Oracle::Write) && config.writes_per_case > 0 {
        let steps = write::generate(
            &mut Rng::new(derive(seed, 1_000_000)),
            &graph,
            config.writes_per_case,
        );
        run.report.writes += steps.len() as u64;
        run.check(Check::Write { steps }, &mut session, false);
        run.reads(&mut session, 2_000_000, config.reads_after_writes);
    }
    let CaseRun {
        mut report,
        pending,
        ..
    } = run;
    report.statements += session.executed;
    drop(session);
    finish(shared, &mut report, pending, slot);
    report
}

/// The state of one case while it runs.
struct CaseRun<'a> {
    shared: &'a Shared,
    config: &'a Config,
    seed: u64,
    graph: &'a Graph,
    /// Oracles that already have a finding in this case.
    found: BTreeSet<Oracle>,
    pending: Vec<(Case, oracle::Failure)>,
    report: Report,
}

impl CaseRun<'_> {
    /// Runs a check; `base`: it is the first check of its query (its base
    /// query's error counts in the statistics).
    fn check(&mut self, check: Check, session: &mut Session, base: bool) {
        let o = check.oracle();
        let writes = session.writes.clone();
        let first_event = session.events.len();
        let ran = oracle::run(&check, session, self.graph);
        // Crashes and hangs of any statement the check ran.
        let events: Vec<CrashEvent> = session.events.drain(first_event..).collect();
        if self.config.on(Oracle::Crash) {
            for e in events {
                let sig = CrashSig::of(e.kind, &e.message);
                if sig.is_hang() && (self.is_big(&check, session) || finishes_later(session, &e)) {
                    self.report.big += 1;
                    continue;
                }
                let fresh = if sig.is_hang() {
                    self.found.insert(Oracle::Crash)
                } else {
                    lock(&self.shared.crash_signatures).insert(sig.clone())
                };
                if !fresh {
                    self.report.duplicates += 1;
                    continue;
                }
                if self.config.verbose {
                    eprintln!("    CRASH: {:?}: {}", e.kind, e.message);
                }
                self.pending.push((
                    Case {
                        seed: self.seed,
                        graph: self.graph.clone(),
                        writes: writes.clone(),
                        check: check.clone(),
                        crash: Some(sig),
                    },
                    oracle::crash_failure(&e),
                ));
            }
        }
        if base {
            if let Some((k, message)) = &ran.base_error {
                self.report.note_error(*k, message, &check);
                if self.config.verbose {
                    eprintln!("    error {k:?}: {}", message.lines().next().unwrap_or(""));
                }
            }
        }
        let stats = self.report.checks.entry(o).or_default();
        stats.run += 1;
        match ran.verdict {
            Verdict::Pass => stats.passed += 1,
            Verdict::Skip(why) => {
                stats.skipped += 1;
                if self.config.verbose {
                    eprintln!("    {} skipped: {why}", o.name());
                }
            }
            Verdict::Fail(failure) => {
                stats.failed += 1;
                if self.config.verbose {
                    eprintln!("    {} FAILED: {}", o.name(), failure.summary);
                }
                // One finding per oracle and case: the rest are most
                // likely the same bug.
                if self.found.insert(o) {
                    self.pending.push((
                        Case {
                            seed: self.seed,
                            graph: self.graph.clone(),
                            writes,
                            check,
                            crash: None,
                        },
                        failure,
                    ));
                }
            }
        }
    }

    /// Whether the check's query is too big for a timeout to be a hang.
    fn is_big(&self, check: &Check, session: &mut Session) -> bool {
        let events = session.events.len();
        let big = match check {
            Check::Tlp { query, .. }
            | Check::NoRec { query, .. }
            | Check::Diff { query }
            | Check::Kuzu { query } => oracle::is_big(session, query),
            _ => false,
        };
        // Timeouts while counting are no findings of their own.
        session.events.truncate(events);
        big
    }

    /// Generates `count` read queries (streams `first..`) and runs the
    /// enabled oracles on each.
    fn reads(&mut self, session: &mut Session, first: u64, count: usize) {
        let config = self.config;
        for k in 0..count as u64 {
            let mut gen = Gen::new(self.graph, &config.features, derive(self.seed, first + k));
            let query = gen.query();
            // Predicates are drawn whether or not their oracles run, so a
            // case is the same under any --oracle choice.
            let points = query.filter_points();
            let tlp = (!points.is_empty()).then(|| {
                let at = *gen.rng.pick(&points);
                (at, gen.predicate(&query.scopes[at], true))
            });
            let norec_points: Vec<usize> = points
                .iter()
                .copied()
                .filter(|p| query.no_with_after(*p))
                .collect();
            let norec = (!norec_points.is_empty()).then(|| {
                let at = *gen.rng.pick(&norec_points);
                (at, gen.predicate(&query.scopes[at], false))
            });
            self.report.queries += 1;
            if config.verbose {
                eprintln!("  query {k}: {query}");
            }
            let mut base = true;
            if config.on(Oracle::Diff) {
                self.check(
                    Check::Diff {
                        query: query.clone(),
                    },
                    session,
                    base,
                );
                base = false;
            }
            if config.on(Oracle::Kuzu) {
                self.check(
                    Check::Kuzu {
                        query: query.clone(),
                    },
                    session,
                    base,
                );
                base = false;
            }
            if config.on(Oracle::Tlp) {
                if let Some((at, pred)) = tlp {
                    let query = oracle::tlp_query(&query);
                    self.check(Check::Tlp { query, at, pred }, session, base);
                    base = false;
                }
            }
            if config.on(Oracle::NoRec) {
                if let Some((at, pred)) = norec {
                    self.check(
                        Check::NoRec {
                            query: query.clone(),
                            at,
                            pred,
                        },
                        session,
                        base,
                    );
                    base = false;
                }
            }
            if base {
                // Only the crash oracle: run the query once.
                let text = query.to_string();
                if let Some((k, message)) = session.run(&text).error() {
                    self.report.note_error(k, &message, &Check::Diff { query });
                }
            }
        }
    }
}

/// Turns failures and crash events into findings: deduplicates crashes,
/// minimizes within the budget, writes the scripts.
fn finish(
    shared: &Shared,
    report: &mut Report,
    pending: Vec<(Case, oracle::Failure)>,
    slot: Option<Arc<Slot>>,
) {
    let config = &shared.config;
    for (case, failure) in pending {
        let oracle = case.oracle();
        let hang = case.crash.as_ref().is_some_and(CrashSig::is_hang)
            || matches!(
                case.check,
                Check::Crash {
                    kind: ErrorKind::Interrupted,
                    ..
                }
            );
        let original_size = (case.graph.nodes.len(), case.graph.rels.len());
        let allowed = {
            let mut m = lock(&shared.minimized);
            let n = m.entry(oracle).or_default();
            if *n < config.minimize_per_oracle {
                *n += 1;
                true
            } else {
                false
            }
        };
        let mut finding = Finding {
            oracle,
            hang,
            master_seed: config.seed,
            case: case.clone(),
            failure,
            original_size,
            minimized: false,
        };
        // A hang takes the whole timeout per replay: not worth shrinking.
        if allowed && !hang {
            let started = Instant::now();
            let deadline = started + Duration::from_secs_f64(config.minimize_seconds);
            let (small, tries) = minimize(&case, deadline, slot.clone());
            // Rerun the smallest case for the failure it shows now.
            if let Verdict::Fail(f) = replay(&small, slot.clone()) {
                finding.failure = f;
                finding.case = small;
                finding.minimized = true;
            }
            if config.verbose {
                eprintln!(
                    "  minimized {} finding in {:.1}s ({tries} replays): {} nodes, {} rels",
                    finding.label(),
                    started.elapsed().as_secs_f64(),
                    finding.case.graph.nodes.len(),
                    finding.case.graph.rels.len()
                );
            }
        }
        eprintln!("kith-fuzz: finding {}", finding.brief());
        if let Some(dir) = &config.findings_dir {
            match finding.write_to(dir) {
                Ok(p) => {
                    eprintln!("    written to {}", p.display());
                    report.written.push(p);
                }
                Err(e) => eprintln!(
                    "kith-fuzz: cannot write a finding to {}: {e}",
                    dir.display()
                ),
            }
        }
        report.findings.push(finding);
    }
}

enum Msg {
    Case(Box<Report>),
    Done,
}

/// How long a statement may run before the watchdog interrupts it, and
/// before its worker is given up for hung.
pub const INTERRUPT_AFTER: Duration = Duration::from_secs(15);
pub const ABANDON_AFTER: Duration = Duration::from_secs(45);

/// Runs a whole campaign.
pub fn run(config: &Config) -> Report {
    let started = Instant::now();
    let shared = Arc::new(Shared {
        config: config.clone(),
        minimized: Mutex::new(BTreeMap::new()),
        crash_signatures: Mutex::new(HashSet::new()),
    });
    let next = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Msg>();
    let workers = config.workers.max(1);
    let slots: Vec<Arc<Slot>> = (0..workers).map(|_| Arc::new(Slot::default())).collect();
    let busy = Arc::new(AtomicUsize::new(workers));
    let mut handles = Vec::new();
    for slot in &slots {
        let (shared, next, stop, tx, slot, busy) = (
            Arc::clone(&shared),
            Arc::clone(&next),
            Arc::clone(&stop),
            tx.clone(),
            Arc::clone(slot),
            Arc::clone(&busy),
        );
        handles.push(std::thread::spawn(move || {
            let config = &shared.config;
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let more = match config.limit {
                    Limit::Queries(n) => i * (config.queries_per_case.max(1) as u64) < n,
                    Limit::Seconds(s) => started.elapsed().as_secs_f64() < s,
                };
                let capped = config
                    .max_seconds
                    .is_some_and(|m| started.elapsed().as_secs_f64() >= m);
                if !more || capped {
                    break;
                }
                let seed = derive(config.seed, i);
                if config.verbose {
                    eprintln!("kith-fuzz: case {i}, seed {seed}");
                }
                let r = run_case_shared(seed, &shared, Some(Arc::clone(&slot)));
                if tx.send(Msg::Case(Box::new(r))).is_err() {
                    break;
                }
            }
            busy.fetch_sub(1, Ordering::Relaxed);
            let _ = tx.send(Msg::Done);
        }));
    }
    drop(tx);
    let mut report = Report {
        seed: config.seed,
        ..Report::default()
    };
    let mut done = 0;
    let mut abandoned: Vec<usize> = Vec::new();
    while done + abandoned.len() < workers {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Case(r)) => {
                let mut r = *r;
                r.seed = 0;
                report.absorb(r);
            }
            Ok(Msg::Done) => done += 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // The watchdog.
        for (w, slot) in slots.iter().enumerate() {
            if abandoned.contains(&w) {
                continue;
            }
            let mut cur = lock(&slot.current);
            let Some(running) = cur.as_mut() else {
                continue;
            };
            let age = running.started.elapsed();
            if age > INTERRUPT_AFTER && !running.interrupted {
                running.interrupted = true;
                running.conn.interrupt();
            }
            if age > ABANDON_AFTER {
                let finding = hang_finding(config, running);
                eprintln!("kith-fuzz: worker {w} hung; finding {}", finding.brief());
                if let Some(dir) = &config.findings_dir {
                    if let Ok(p) = finding.write_to(dir) {
                        report.written.push(p);
                    }
                }
                report.findings.push(finding);
                abandoned.push(w);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for (w, h) in handles.into_iter().enumerate() {
        if !abandoned.contains(&w) {
            let _ = h.join();
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// A worker's statement that ignored both the timeout and the interrupt.
fn hang_finding(config: &Config, running: &crate::exec::Running) -> Finding {
    let graph = Graph::generate(&mut Rng::new(running.case_seed));
    let mut statements = running.settings.clone();
    statements.push(running.statement.clone());
    Finding {
        oracle: Oracle::Crash,
        hang: true,
        master_seed: config.seed,
        original_size: (graph.nodes.len(), graph.rels.len()),
        case: Case {
            seed: running.case_seed,
            graph,
            writes: running.writes.clone(),
            check: Check::Crash {
                settings: running.settings.clone(),
                repeat: false,
                statement: running.statement.clone(),
                kind: ErrorKind::Interrupted,
            },
            crash: None,
        },
        failure: oracle::Failure {
            summary: format!(
                "the statement ran for more than {}s despite the timeout and an interrupt",
                ABANDON_AFTER.as_secs()
            ),
            statements,
            expected: "the statement finishes or is interrupted".into(),
            actual: "still running".into(),
        },
        minimized: false,
    }
}

/// Whether a statement that timed out finishes when given four times as
/// long: then it is slow on a loaded machine (a 2-core CI runner building
/// beside it, say), not hung, and no finding. Its own timeout and any
/// events of the rerun are left out of the statistics.
fn finishes_later(session: &mut Session, e: &CrashEvent) -> bool {
    let events = session.events.len();
    let longer = crate::exec::TIMEOUT_MS * 4;
    session.run(&format!("CALL timeout={longer}"));
    let out = session.run(&e.statement);
    session.run(&format!("CALL timeout={}", crate::exec::TIMEOUT_MS));
    session.events.truncate(events);
    !out.is_crash_or_hang()
}
