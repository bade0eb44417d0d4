//! Running statements against the engine: a [`Session`] (one in-memory
//! database and connection with known settings), the outcome of each
//! statement as data, and the [`Slot`] through which a watchdog sees what a
//! worker runs and interrupts it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use kith::{Config, Connection, Database, ErrorKind};

use crate::graph::Graph;
use crate::results::Rows;

/// What a statement did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Ok(Rows),
    Err { kind: ErrorKind, message: String },
}

impl Outcome {
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            Outcome::Ok(_) => None,
            Outcome::Err { kind, .. } => Some(*kind),
        }
    }

    /// The error kind and message, if it failed.
    pub fn error(&self) -> Option<(ErrorKind, String)> {
        match self {
            Outcome::Ok(_) => None,
            Outcome::Err { kind, message } => Some((*kind, message.clone())),
        }
    }

    /// A crash (internal error or caught panic) or a hang (interrupted by
    /// the timeout on a tiny graph).
    pub fn is_crash_or_hang(&self) -> bool {
        matches!(
            self.error_kind(),
            Some(ErrorKind::Internal | ErrorKind::Interrupted)
        )
    }

    pub fn describe(&self) -> String {
        match self {
            Outcome::Ok(rows) => format!("{} rows", rows.rows.len()),
            Outcome::Err { kind, message } => format!("error {kind:?}: {message}"),
        }
    }
}

/// A statement that ended in an internal error or was interrupted, with
/// what it takes to rerun it.
#[derive(Debug, Clone, PartialEq)]
pub struct CrashEvent {
    /// Write statements run on the session after loading, before this one.
    pub writes: Vec<String>,
    /// The settings statements in force.
    pub settings: Vec<String>,
    /// The same text ran before on this connection with the plan cache on
    /// (its plan came from the cache).
    pub repeat: bool,
    pub statement: String,
    pub kind: ErrorKind,
    pub message: String,
}

/// What one worker is running, for the watchdog.
#[derive(Default)]
pub struct Slot {
    pub current: Mutex<Option<Running>>,
}

pub struct Running {
    pub started: Instant,
    pub case_seed: u64,
    pub statement: String,
    pub settings: Vec<String>,
    pub writes: Vec<String>,
    pub conn: Arc<Connection>,
    /// The watchdog asked it to stop.
    pub interrupted: bool,
}

/// Per-statement timeout set on every session, milliseconds.
pub const TIMEOUT_MS: u64 = 5000;

/// Results with more rows are not compared (nor copied out of the engine):
/// such a query is too big for the fuzzer's small graphs to mean much.
pub const MAX_ROWS: usize = 200_000;

/// The memory limit of each fuzzing database.
pub const MEMORY_LIMIT: u64 = 1 << 30;

/// The message of a result left out for its size.
pub const TOO_LARGE: &str = "kith-fuzz: result too large to compare";

/// One in-memory database with one connection.
pub struct Session {
    _db: Database,
    conn: Arc<Connection>,
    slot: Option<Arc<Slot>>,
    pub case_seed: u64,
    /// Settings statements in force (name → statement).
    settings: Vec<(String, String)>,
    /// The value of each setting.
    values: std::collections::HashMap<String, String>,
    /// Write statements run after loading.
    pub writes: Vec<String>,
    /// Texts run with the plan cache on (their plans may be cached).
    cached: std::collections::HashSet<String>,
    plan_cache: bool,
    pub events: Vec<CrashEvent>,
    /// Statements run.
    pub executed: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    /// A fresh in-memory database with a 2-thread pool and the timeout set.
    pub fn open(slot: Option<Arc<Slot>>, case_seed: u64) -> Result<Session, String> {
        let db = Database::open(
            ":memory:",
            Config {
                max_threads: Some(2),
                buffer_pool_bytes: Some(MEMORY_LIMIT),
                ..Default::default()
            },
        )
        .map_err(|e| format!("cannot open a database: {e}"))?;
        let conn = Arc::new(Connection::new(&db));
        let mut s = Session {
            _db: db,
            conn,
            slot,
            case_seed,
            settings: Vec::new(),
            values: [
                ("threads", "2"),
                ("plan_cache", "true"),
                ("recursive_policy", "'auto'"),
                ("var_length_semantics", "'walk'"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            writes: Vec::new(),
            cached: Default::default(),
            plan_cache: true,
            events: Vec::new(),
            executed: 0,
        };
        match s.run(&format!("CALL timeout={TIMEOUT_MS}")) {
            Outcome::Ok(_) => Ok(s),
            Outcome::Err { message, .. } => Err(format!("cannot set the timeout: {message}")),
        }
    }

    /// The settings statements in force, in the order they were set.
    pub fn settings(&self) -> Vec<String> {
        self.settings.iter().map(|(_, s)| s.clone()).collect()
    }

    /// `CALL name=value`, remembered for reproductions (nothing runs when
    /// the setting already has that value).
    pub fn set(&mut self, name: &str, value: &str) -> Outcome {
        if self.values.get(name).is_some_and(|v| v == value) {
            return Outcome::Ok(Rows::default());
        }
        let stmt = format!("CALL {name}={value}");
        let out = self.run(&stmt);
        if matches!(out, Outcome::Ok(_)) {
            self.values.insert(name.to_string(), value.to_string());
            self.settings.retain(|(n, _)| n != name);
            self.settings.push((name.to_string(), stmt));
            if name == "plan_cache" {
                self.plan_cache = value == "true";
                if !self.plan_cache {
                    self.cached.clear();
                }
            }
        }
        out
    }

    /// The default settings: two threads, the plan cache on, automatic
    /// recursive policy, the planner's real table sizes.
    pub fn reset(&mut self) {
        self.set("threads", "2");
        self.set("plan_cache", "true");
        self.set("recursive_policy", "'auto'");
        self.set("plan_seed", "0");
        self.set("var_length_semantics", "'walk'");
        self.settings.clear();
    }

    /// Creates the schema and loads the data; the first failing statement
    /// and its error otherwise.
    pub fn load(&mut self, graph: &Graph) -> Result<(), (String, Outcome)> {
        for stmt in graph.script() {
            let out = self.run(&stmt);
            if let Outcome::Err { .. } = out {
                return Err((stmt, out));
            }
        }
        Ok(())
    }

    /// Runs a statement that changes the graph and remembers it.
    pub fn write(&mut self, stmt: &str) -> Outcome {
        let out = self.run(stmt);
        self.writes.push(stmt.to_string());
        out
    }

    /// Runs one statement; internal errors and interruptions are recorded
    /// as crash events.
    pub fn run(&mut self, text: &str) -> Outcome {
        let repeat = self.plan_cache && self.cached.contains(text);
        if let Some(slot) = &self.slot {
            *lock(&slot.current) = Some(Running {
                started: Instant::now(),
                case_seed: self.case_seed,
                statement: text.to_string(),
                settings: self.settings(),
                writes: self.writes.clone(),
                conn: Arc::clone(&self.conn),
                interrupted: false,
            });
        }
        self.executed += 1;
        let result = self.conn.query(text);
        if let Some(slot) = &self.slot {
            *lock(&slot.current) = None;
        }
        if self.plan_cache {
            self.cached.insert(text.to_string());
        }
        let out = match result {
            Ok(r) if r.num_rows() > MAX_ROWS => Outcome::Err {
                kind: ErrorKind::OutOfMemory,
                message: format!("{TOO_LARGE} ({} rows)", r.num_rows()),
            },
            Ok(r) => Outcome::Ok(Rows {
                columns: r.column_names().to_vec(),
                rows: r.rows().collect(),
            }),
            Err(e) => Outcome::Err {
                kind: e.kind,
                message: e.message.clone(),
            },
        };
        if let Outcome::Err { kind, message } = &out {
            if matches!(kind, ErrorKind::Internal | ErrorKind::Interrupted) {
                self.events.push(CrashEvent {
                    writes: self.writes.clone(),
                    settings: self.settings(),
                    repeat,
                    statement: text.to_string(),
                    kind: *kind,
                    message: message.clone(),
                });
            }
        }
        out
    }
}
