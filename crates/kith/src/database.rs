//! `Database` (one per file; owns storage and the worker pool) and `Connection`
//! (per-client settings; runs statements).

use std::sync::Arc;

use kith_common::{Error, Result};

use crate::result::QueryResult;

/// Options for opening a database.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Buffer pool memory limit; default: a fraction of physical memory.
    pub buffer_pool_bytes: Option<u64>,
    /// Worker threads of the shared pool; default: available cores.
    pub max_threads: Option<usize>,
    pub read_only: bool,
}

/// Progress of a long statement (COPY), reported to an optional callback.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// An open database.
pub struct Database {
    _path: String,
}

impl Database {
    /// Opens (creating if needed) the database at `path`; `":memory:"` for an
    /// in-memory database.
    pub fn open(path: &str, _config: Config) -> Result<Database> {
        Ok(Database {
            _path: path.to_string(),
        })
    }
}

/// A client session on a database: settings (threads, timeout) and statement
/// execution. Several connections may run statements concurrently.
pub struct Connection {
    progress: Option<ProgressCallback>,
}

impl Connection {
    pub fn new(_db: &Database) -> Connection {
        Connection { progress: None }
    }

    /// Runs one statement (a trailing `;` is allowed).
    pub fn query(&self, text: &str) -> Result<QueryResult> {
        let _ = &self.progress;
        Err(Error::not_supported(format!(
            "query execution is not built yet: {text}"
        )))
    }

    /// Receives progress updates of long statements (COPY) from this connection.
    pub fn set_progress_callback(&mut self, callback: Option<ProgressCallback>) {
        self.progress = callback;
    }

    /// Asks the statement running on this connection to stop at the next morsel.
    pub fn interrupt(&self) {}
}
