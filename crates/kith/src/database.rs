//! `Database` (one per file; owns storage and the worker pool) and `Connection`
//! (per-client settings and explicit transaction; runs statements).
//!
//! Transactions: without `BEGIN TRANSACTION` every statement commits on its
//! own. `BEGIN TRANSACTION` takes the database's single writer slot and keeps
//! the write transaction in the connection until `COMMIT` or `ROLLBACK` (or
//! until the connection is dropped, which rolls back); its statements read
//! its own uncommitted writes. `BEGIN TRANSACTION READ ONLY` pins one
//! snapshot for all its statements and takes no writer slot.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use kith_common::{Error, ErrorKind, Result, Value};
use kith_planner::procedure::{Procedure, Procedures};
use kith_sched::{CancelToken, Scheduler};
use kith_storage::{Storage, StorageConfig, Version, WriteTxn};

use crate::result::QueryResult;
use crate::statement;

/// Options for opening a database.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Buffer pool memory limit; default: a fraction of physical memory.
    pub buffer_pool_bytes: Option<u64>,
    /// Worker threads of the shared pool; default: available cores.
    pub max_threads: Option<usize>,
    pub read_only: bool,
    /// How long a write waits for another connection's write transaction
    /// to finish before it fails with a clear error; default 60 s.
    pub writer_wait: Option<Duration>,
}

/// Progress of a long statement (COPY), reported to an optional callback.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

pub(crate) type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

pub(crate) struct DbInner {
    pub storage: Arc<Storage>,
    pub sched: Arc<Scheduler>,
    /// Registered procedures; a statement binds against the set current
    /// when it starts (registration swaps in a new set).
    pub procedures: parking_lot::RwLock<Arc<Procedures>>,
}

/// An open database. Cheap to share across threads (`&Database`); every
/// [`Connection`] on it shares its storage and worker pool.
pub struct Database {
    pub(crate) inner: Arc<DbInner>,
}

impl Database {
    /// Opens (creating if needed) the database at `path`; `":memory:"` (or an
    /// empty path) for an in-memory database.
    pub fn open(path: &str, config: Config) -> Result<Database> {
        crate::guard(|| {
            let mut cfg = StorageConfig {
                read_only: config.read_only,
                ..StorageConfig::default()
            };
            if let Some(b) = config.buffer_pool_bytes {
                cfg.memory_limit_bytes = b;
            }
            if let Some(w) = config.writer_wait {
                cfg.writer_wait = w;
            }
            let storage = if path.is_empty() || path == ":memory:" {
                Storage::open(None, cfg)?
            } else {
                Storage::open(Some(Path::new(path)), cfg)?
            };
            let threads = config
                .max_threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .max(1);
            Ok(Database {
                inner: Arc::new(DbInner {
                    storage,
                    sched: Scheduler::new(threads),
                    procedures: parking_lot::RwLock::new(Arc::new(Procedures::new())),
                }),
            })
        })
    }

    /// What opening did that the user may want to know: e.g. that a
    /// read-only open read commits through the write-ahead log because the
    /// database needs recovery that only a read-write open may write.
    pub fn open_note(&self) -> Option<&str> {
        self.inner.storage.open_note()
    }

    /// Worker threads of the shared pool.
    pub fn max_threads(&self) -> usize {
        self.inner.sched.num_threads()
    }

    /// Registers a procedure that queries on every connection of this
    /// database can `CALL` (replacing one of the same name, ignoring case).
    /// Statements already running keep the procedures they started with.
    /// Procedures live in memory only: register them after each open.
    pub fn register_procedure(&self, procedure: Procedure) {
        let mut current = self.inner.procedures.write();
        let mut next = Procedures::clone(&current);
        next.register(procedure);
        *current = Arc::new(next);
    }
}

/// Per-connection settings (`CALL name = value`).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub threads: usize,
    pub timeout: Option<Duration>,
    /// `recursive_policy`, `recursive_k`, `var_length_max_depth`.
    pub recursive: kith_exec::operator::recursive_join::RecursiveSettings,
    /// `var_length_semantics`: resolved when a statement is bound.
    pub var_length: kith_planner::bound::VarLengthSemantics,
    /// `plan_cache`: whether read queries keep their plans
    /// ([`crate::plan_cache`]).
    pub plan_cache: bool,
    /// `plan_seed`: 0 plans from the real table sizes; another value skews
    /// them (see [`crate::statement::planner_rows`]) so that other join
    /// orders run. A testing aid: the query fuzzer compares the results.
    pub plan_seed: u64,
}

/// The explicit transaction of a connection.
pub(crate) enum TxnState {
    /// None: every statement commits on its own.
    Auto,
    /// `BEGIN TRANSACTION READ ONLY`: every statement reads this snapshot.
    ReadOnly(Arc<Version>),
    /// `BEGIN TRANSACTION`: statements write into (and read) this.
    Write(Box<WriteTxn<'static>>),
    /// A write statement failed inside the transaction. Its partial effects
    /// cannot be undone on their own (the write path frees pages it replaced
    /// at once, so there is no cheap savepoint), so the whole transaction was
    /// rolled back and only ROLLBACK is accepted, which ends it.
    Aborted,
}

pub(crate) fn txn_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Transaction, message)
}

pub(crate) const ABORTED: &str =
    "the transaction was rolled back after an error in one of its statements; run ROLLBACK to end it";

/// The write transaction a write statement runs in: its own (committed by
/// [`WriteHandle::commit`]) or the connection's explicit one (left open).
pub(crate) enum WriteHandle<'c> {
    Auto(Box<WriteTxn<'static>>),
    Explicit(parking_lot::MappedMutexGuard<'c, WriteTxn<'static>>),
}

impl WriteHandle<'_> {
    /// Commits an auto-commit transaction; inside an explicit transaction the
    /// changes wait for COMMIT.
    pub(crate) fn commit(self) -> Result<()> {
        match self {
            WriteHandle::Auto(txn) => txn.commit(),
            WriteHandle::Explicit(_) => Ok(()),
        }
    }
}

impl std::ops::Deref for WriteHandle<'_> {
    type Target = WriteTxn<'static>;
    fn deref(&self) -> &WriteTxn<'static> {
        match self {
            WriteHandle::Auto(t) => t,
            WriteHandle::Explicit(t) => t,
        }
    }
}

impl std::ops::DerefMut for WriteHandle<'_> {
    fn deref_mut(&mut self) -> &mut WriteTxn<'static> {
        match self {
            WriteHandle::Auto(t) => t,
            WriteHandle::Explicit(t) => t,
        }
    }
}

/// A client session on a database: settings (threads, timeout), the explicit
/// transaction, and statement execution. Several connections may run
/// statements concurrently.
pub struct Connection {
    pub(crate) db: Arc<DbInner>,
    pub(crate) settings: Mutex<Settings>,
    pub(crate) txn: Mutex<TxnState>,
    pub(crate) running: Mutex<Option<CancelToken>>,
    pub(crate) progress: Option<ProgressCallback>,
    /// Plans of read queries run on this connection, by text.
    pub(crate) plans: Mutex<crate::plan_cache::PlanCache>,
}

impl Connection {
    pub fn new(db: &Database) -> Connection {
        Connection {
            db: Arc::clone(&db.inner),
            settings: Mutex::new(Settings {
                threads: db.inner.sched.num_threads(),
                timeout: None,
                recursive: Default::default(),
                var_length: Default::default(),
                plan_cache: true,
                plan_seed: 0,
            }),
            txn: Mutex::new(TxnState::Auto),
            running: Mutex::new(None),
            progress: None,
            plans: Mutex::default(),
        }
    }

    /// True while an explicit transaction (`BEGIN TRANSACTION`) is open,
    /// including one aborted by an error and waiting for ROLLBACK.
    pub fn in_transaction(&self) -> bool {
        !matches!(*self.txn.lock(), TxnState::Auto)
    }

    /// The transaction a write statement runs in: a new auto-commit one, or
    /// the open explicit one (locked for the statement).
    pub(crate) fn write_txn(&self) -> Result<WriteHandle<'_>> {
        let state = self.txn.lock();
        match &*state {
            TxnState::Auto => {
                drop(state);
                Ok(WriteHandle::Auto(Box::new(self.db.storage.begin_write()?)))
            }
            TxnState::ReadOnly(_) => Err(txn_error(
                "cannot write in a READ ONLY transaction; COMMIT or ROLLBACK it first",
            )),
            TxnState::Aborted => Err(txn_error(ABORTED)),
            TxnState::Write(_) => {
                let mapped = parking_lot::MutexGuard::try_map(state, |s| match s {
                    TxnState::Write(t) => Some(&mut **t),
                    _ => None,
                });
                mapped
                    .map(WriteHandle::Explicit)
                    .map_err(|_| Error::internal("the transaction vanished"))
            }
        }
    }

    /// Runs the statements of `text` in order and returns the last one's
    /// result; stops at the first error. Errors carry the position in `text`.
    pub fn query(&self, text: &str) -> Result<QueryResult> {
        crate::guard(|| statement::run_script(self, text)).map_err(|e| e.with_source(text))
    }

    /// Like [`Connection::query`], with values for the `$name` parameters
    /// the statements use (also allowed in SKIP and LIMIT).
    pub fn query_with_params(&self, text: &str, params: &[(&str, Value)]) -> Result<QueryResult> {
        let params: std::collections::HashMap<String, Value> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        crate::guard(|| statement::run_script_with_params(self, text, &params))
            .map_err(|e| e.with_source(text))
    }

    /// Receives progress updates of long statements (COPY) from this connection.
    pub fn set_progress_callback(&mut self, callback: Option<ProgressCallback>) {
        self.progress = callback;
    }

    /// Asks the statement running on this connection to stop at the next morsel.
    pub fn interrupt(&self) {
        if let Some(t) = self.running.lock().as_ref() {
            t.cancel();
        }
    }

    /// Number of worker threads this connection's statements use.
    pub fn threads(&self) -> usize {
        self.settings.lock().threads
    }

    pub(crate) fn check_threads(&self, n: i64) -> Result<usize> {
        let max = self.db.sched.num_threads();
        if n < 1 || n as u64 > max as u64 {
            return Err(Error::runtime(format!(
                "threads must be between 1 and {max} (the database's worker pool), got {n}"
            )));
        }
        Ok(n as usize)
    }
}
