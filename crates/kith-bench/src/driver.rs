//! Engine drivers: a child process speaking JSON lines on stdin/stdout.
//!
//! Both engines run out of process, one process per (engine, threads)
//! configuration, so peak RSS is per configuration and a crash in an engine
//! costs one configuration, not the run. KithDB's driver is this binary
//! re-executed with the hidden `__kith-worker` subcommand (see `worker.rs`);
//! Kùzu's is `bench/kuzu_driver.py`, DuckDB's (SQL, an optional reference)
//! `bench/duckdb_driver.py`, NetworKit's (BFS, an optional reference for
//! the shortest-path queries) `bench/networkit_driver.py`. The protocol is
//! documented in Kùzu's.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use crate::json::{self, Json};

/// The IFE dispatch policies a KithDB configuration can be pinned to
/// (`CALL recursive_policy=...`), with the engine name each gets.
pub const KITH_POLICIES: &[(&str, &str)] = &[
    ("1T1S", "kith-1T1S"),
    ("nT1S", "kith-nT1S"),
    ("nTkS", "kith-nTkS"),
    ("nTkMS", "kith-nTkMS"),
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// KithDB with its automatic choices.
    Kith,
    /// KithDB with every recursive query under one dispatch policy
    /// (`kith:nTkS`; an index into [`KITH_POLICIES`]), for seed 000's
    /// policy tables measured in one warm process.
    KithPolicy(usize),
    Kuzu,
    /// DuckDB through Python, fed the suites' SQL equivalents.
    Duckdb,
    /// NetworKit through Python, fed the suites' structured BFS forms.
    Networkit,
}

/// What an engine is given to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Cypher,
    /// The suites' `sql_ddl`, loads as DuckDB COPY and each query's `sql`.
    Sql,
    /// No DDL; loads and each query's `networkit` form as JSON requests
    /// (see `networkit.rs`).
    Networkit,
}

impl EngineKind {
    pub fn parse(s: &str) -> Option<EngineKind> {
        let lower = s.trim().to_ascii_lowercase();
        if let Some(policy) = lower.strip_prefix("kith:") {
            return KITH_POLICIES
                .iter()
                .position(|(p, _)| p.to_ascii_lowercase() == policy)
                .map(EngineKind::KithPolicy);
        }
        match lower.as_str() {
            "kith" | "kithdb" => Some(EngineKind::Kith),
            "kuzu" | "kùzu" => Some(EngineKind::Kuzu),
            "duckdb" => Some(EngineKind::Duckdb),
            "networkit" | "nk" => Some(EngineKind::Networkit),
            _ => None,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            EngineKind::Kith => "kith",
            EngineKind::KithPolicy(i) => KITH_POLICIES[*i].1,
            EngineKind::Kuzu => "kuzu",
            EngineKind::Duckdb => "duckdb",
            EngineKind::Networkit => "networkit",
        }
    }
    /// What the engine is given instead of (or as) the suites' Cypher.
    pub fn dialect(&self) -> Dialect {
        match self {
            EngineKind::Duckdb => Dialect::Sql,
            EngineKind::Networkit => Dialect::Networkit,
            EngineKind::Kith | EngineKind::KithPolicy(_) | EngineKind::Kuzu => Dialect::Cypher,
        }
    }
    /// Whether the engine is given the suites' SQL instead of Cypher.
    pub fn speaks_sql(&self) -> bool {
        self.dialect() == Dialect::Sql
    }
    /// The dispatch policy a KithDB configuration is pinned to.
    pub fn policy(&self) -> Option<&'static str> {
        match self {
            EngineKind::KithPolicy(i) => Some(KITH_POLICIES[*i].0),
            _ => None,
        }
    }
}

/// How to start drivers.
#[derive(Clone, Debug)]
pub struct DriverSpawn {
    pub python: String,
    pub kuzu_script: PathBuf,
    pub duckdb_script: PathBuf,
    pub networkit_script: PathBuf,
}

impl DriverSpawn {
    /// `bench/<name>` in the current directory's repository, or the one in
    /// this crate's source tree.
    fn bench_script(name: &str) -> PathBuf {
        let local = Path::new("bench").join(name);
        if local.exists() {
            return local;
        }
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../bench")
            .join(name)
    }
    pub fn default_kuzu_script() -> PathBuf {
        Self::bench_script("kuzu_driver.py")
    }
    pub fn default_duckdb_script() -> PathBuf {
        Self::bench_script("duckdb_driver.py")
    }
    pub fn default_networkit_script() -> PathBuf {
        Self::bench_script("networkit_driver.py")
    }
    /// The `processes` suite's SQLite reference (started with
    /// [`Driver::start_python`]).
    pub fn default_sqlite_script() -> PathBuf {
        Self::bench_script("sqlite_driver.py")
    }
}

/// Prefix of the error of a reply that did not come before the hard timeout.
pub const HARD_TIMEOUT: &str = "hard timeout";

pub struct Driver {
    child: Child,
    stdin: ChildStdin,
    /// Lines of the driver's stdout, read by a thread so that a reply can
    /// be waited for with a deadline.
    lines: Receiver<std::io::Result<String>>,
    /// Replies slower than this kill the driver (see [`Driver::exec`]).
    pub hard_timeout: Option<Duration>,
    /// The greeting: engine, version, rss_kb.
    pub hello: Json,
    /// Sent with `open`: the recursive dispatch policy to pin.
    policy: Option<&'static str>,
}

/// A driver's answer to one exec.
#[derive(Clone, Debug)]
pub struct ExecReply {
    pub ms: f64,
    pub rows: Json,
}

impl Driver {
    pub fn start(kind: &EngineKind, spawn: &DriverSpawn) -> Result<Driver, String> {
        let cmd = match kind {
            EngineKind::Kith | EngineKind::KithPolicy(_) => {
                let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
                let mut c = Command::new(exe);
                c.arg("__kith-worker");
                c
            }
            EngineKind::Kuzu => {
                let mut c = Command::new(&spawn.python);
                c.arg(&spawn.kuzu_script);
                c
            }
            EngineKind::Duckdb => {
                let mut c = Command::new(&spawn.python);
                c.arg(&spawn.duckdb_script);
                c
            }
            EngineKind::Networkit => {
                let mut c = Command::new(&spawn.python);
                c.arg(&spawn.networkit_script);
                c
            }
        };
        Self::spawn(kind.name(), cmd, kind.policy())
    }

    /// A driver that is a Python script outside [`EngineKind`] (the
    /// `processes` suite's `bench/sqlite_driver.py`), named `name` in errors.
    pub fn start_python(python: &str, script: &Path, name: &str) -> Result<Driver, String> {
        let mut c = Command::new(python);
        c.arg(script);
        Self::spawn(name, c, None)
    }

    fn spawn(name: &str, mut cmd: Command, policy: Option<&'static str>) -> Result<Driver, String> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name} driver ({cmd:?}): {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let stop = line.is_err();
                if tx.send(line).is_err() || stop {
                    break;
                }
            }
        });
        let mut d = Driver {
            child,
            stdin,
            lines,
            hard_timeout: None,
            hello: Json::Null,
            policy,
        };
        let hello = d.read_reply()?;
        if hello.get("ok").and_then(Json::as_bool) != Some(true) {
            let msg = hello
                .get("error")
                .and_then(Json::as_str)
                .unwrap_or("driver refused to start")
                .to_string();
            d.kill();
            return Err(msg);
        }
        d.hello = hello;
        Ok(d)
    }

    fn read_reply(&mut self) -> Result<Json, String> {
        loop {
            let next = match self.hard_timeout {
                None => self
                    .lines
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
                Some(t) => self.lines.recv_timeout(t),
            };
            let line = match next {
                Ok(Ok(l)) => l,
                Ok(Err(e)) => return Err(format!("driver read: {e}")),
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Err(format!(
                        "{HARD_TIMEOUT}: no reply in {:.0} s, driver killed",
                        self.hard_timeout.unwrap_or_default().as_secs_f64()
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                    return Err(format!("driver exited ({status})"));
                }
            };
            let t = line.trim();
            if t.starts_with('{') {
                return json::parse(t);
            }
            // Anything else on stdout is engine chatter: pass it on.
            if !t.is_empty() {
                eprintln!("[driver] {t}");
            }
        }
    }

    /// Sends one request; `Err` for protocol failures and `{"ok":false}` replies.
    pub fn call(&mut self, req: Json) -> Result<Json, String> {
        self.send(&req)?;
        self.recv()
    }

    /// Sends one request without waiting for its reply (see [`Driver::recv`]):
    /// several drivers can then work at once.
    pub fn send(&mut self, req: &Json) -> Result<(), String> {
        writeln!(self.stdin, "{req}").map_err(|e| format!("driver write: {e}"))?;
        self.stdin.flush().map_err(|e| format!("driver write: {e}"))
    }

    /// The reply to the request [`Driver::send`] sent; `Err` for protocol
    /// failures and `{"ok":false}` replies.
    pub fn recv(&mut self) -> Result<Json, String> {
        let reply = self.read_reply()?;
        if reply.get("ok").and_then(Json::as_bool) == Some(true) {
            Ok(reply)
        } else {
            Err(reply
                .get("error")
                .and_then(Json::as_str)
                .unwrap_or("unknown error")
                .to_string())
        }
    }

    pub fn open(
        &mut self,
        path: &Path,
        threads: usize,
        buffer_pool_bytes: Option<u64>,
    ) -> Result<(), String> {
        self.call(Json::Obj(vec![
            ("cmd".into(), Json::str("open")),
            ("path".into(), Json::str(path.to_string_lossy())),
            ("threads".into(), Json::Int(threads as i64)),
            ("buffer_pool_bytes".into(), Json::opt_u64(buffer_pool_bytes)),
            ("policy".into(), self.policy.map_or(Json::Null, Json::str)),
        ]))
        .map(|_| ())
    }

    /// Runs `query`; `timeout_ms` asks the engine to stop it after that
    /// long (0 or `None`: no limit).
    pub fn exec(&mut self, query: &str, timeout_ms: Option<u64>) -> Result<ExecReply, String> {
        let r = self.call(Json::Obj(vec![
            ("cmd".into(), Json::str("exec")),
            ("query".into(), Json::str(query)),
            (
                "timeout_ms".into(),
                Json::Int(timeout_ms.unwrap_or(0) as i64),
            ),
        ]))?;
        Ok(ExecReply {
            ms: r.get("ms").and_then(Json::as_f64).unwrap_or(f64::NAN),
            rows: r.get("rows").cloned().unwrap_or(Json::Arr(vec![])),
        })
    }

    /// Runs `query` once per row of `rows` (values bound to `names`), timed
    /// as a whole inside the driver: `per_tx` rows per explicit transaction
    /// (1: auto-commit), stopping at the first transaction boundary after
    /// `max_ms` (0: never). Returns (ms, rows done, transactions).
    pub fn exec_params(
        &mut self,
        query: &str,
        names: &[&str],
        rows: Vec<Json>,
        per_tx: usize,
        max_ms: u64,
    ) -> Result<(f64, u64, u64), String> {
        let r = self.call(Json::Obj(vec![
            ("cmd".into(), Json::str("exec_params")),
            ("query".into(), Json::str(query)),
            (
                "names".into(),
                Json::Arr(names.iter().map(|n| Json::str(*n)).collect()),
            ),
            ("rows".into(), Json::Arr(rows)),
            ("per_tx".into(), Json::Int(per_tx as i64)),
            ("max_ms".into(), Json::Int(max_ms as i64)),
        ]))?;
        let int = |k: &str| r.get(k).and_then(Json::as_i64).unwrap_or(0).max(0) as u64;
        Ok((
            r.get("ms").and_then(Json::as_f64).unwrap_or(f64::NAN),
            int("rows_done"),
            int("txns"),
        ))
    }

    /// Peak RSS of the driver process in kB.
    pub fn peak_rss_kb(&mut self) -> Option<u64> {
        let r = self
            .call(Json::Obj(vec![("cmd".into(), Json::str("stats"))]))
            .ok()?;
        r.get("peak_rss_kb")
            .and_then(Json::as_i64)
            .map(|v| v as u64)
    }

    pub fn close(&mut self) -> Result<(), String> {
        self.call(Json::Obj(vec![("cmd".into(), Json::str("close"))]))
            .map(|_| ())
    }

    pub fn quit(mut self) {
        let _ = writeln!(
            self.stdin,
            "{}",
            Json::Obj(vec![("cmd".into(), Json::str("quit"))])
        );
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver that greets, then never answers: the hard timeout must kill it.
    #[test]
    fn hard_timeout_kills_a_silent_driver() {
        let dir = std::env::temp_dir().join(format!("kith-bench-silent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("silent.py");
        std::fs::write(
            &script,
            "import sys, time\nprint('{\"ok\":true,\"engine\":\"kuzu\"}', flush=True)\nfor line in sys.stdin:\n    time.sleep(60)\n",
        )
        .unwrap();
        let spawn = DriverSpawn {
            python: "python3".into(),
            kuzu_script: script.clone(),
            duckdb_script: script.clone(),
            networkit_script: script,
        };
        let Ok(mut d) = Driver::start(&EngineKind::Kuzu, &spawn) else {
            eprintln!("python3 not available; skipping");
            return;
        };
        d.hard_timeout = Some(Duration::from_millis(300));
        let t0 = std::time::Instant::now();
        let e = d.exec("RETURN 1", Some(100)).unwrap_err();
        assert!(e.starts_with(HARD_TIMEOUT), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn networkit_parses_and_gets_its_own_dialect() {
        for name in ["networkit", "NetworKit", "nk"] {
            assert_eq!(EngineKind::parse(name), Some(EngineKind::Networkit));
        }
        assert_eq!(EngineKind::Networkit.name(), "networkit");
        assert_eq!(EngineKind::Networkit.dialect(), Dialect::Networkit);
        assert!(!EngineKind::Networkit.speaks_sql());
        assert_eq!(EngineKind::Duckdb.dialect(), Dialect::Sql);
        assert_eq!(EngineKind::Kuzu.dialect(), Dialect::Cypher);
    }

    /// Without the networkit package the driver refuses in its greeting,
    /// saying why, and `start` reports that (the runner then skips the
    /// engine). The package is hidden by a module of that name that fails
    /// to import, so the test runs whether it is installed or not.
    #[test]
    #[cfg(unix)]
    fn networkit_driver_refuses_without_the_package() {
        let dir = std::env::temp_dir().join(format!("kith-bench-no-nk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("networkit.py"),
            "raise ImportError('simulated: no networkit here')\n",
        )
        .unwrap();
        let python = dir.join("python.sh");
        std::fs::write(
            &python,
            format!(
                "#!/bin/sh\nPYTHONPATH='{}' exec python3 \"$@\"\n",
                dir.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        if Command::new("python3").arg("-c").arg("1").status().is_err() {
            eprintln!("python3 not available; skipping");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        let spawn = DriverSpawn {
            python: python.to_string_lossy().into_owned(),
            kuzu_script: DriverSpawn::default_kuzu_script(),
            duckdb_script: DriverSpawn::default_duckdb_script(),
            networkit_script: DriverSpawn::default_networkit_script(),
        };
        let e = Driver::start(&EngineKind::Networkit, &spawn)
            .err()
            .expect("the driver must refuse");
        assert!(e.starts_with("networkit not installed: "), "{e}");
        assert!(e.contains("simulated: no networkit here"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
