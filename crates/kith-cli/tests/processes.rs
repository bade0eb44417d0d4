//! Several processes on one database (issue 53): the test process opens the
//! database through the Rust API (`kith::Database`) and real `kith` shell
//! children open the same files; they share `<db>.shm` and nothing else.
//!
//! - readers (read-only and read-write children) see each commit of another
//!   process at the start of their next statement, and a `BEGIN TRANSACTION
//!   READ ONLY` keeps its answers while others commit;
//! - writers of several processes queue for the one writer slot (no timeouts
//!   under the default wait); one with `--writer-wait-ms 200` behind a long
//!   write transaction fails with a clear, retryable transaction error;
//! - a process SIGKILLed while holding the writer slot blocks nobody and its
//!   uncommitted writes never show; one killed as a reader (idle in a read-only
//!   transaction or mid-query) does not keep pages from being reused;
//! - a shared file deleted or filled with garbage while no process has the
//!   database open is rebuilt silently; one damaged while a process has it open
//!   is refused to a newcomer with a clear error, and nothing changes;
//! - a reader holding a snapshot while thousands of commits go by: its answers
//!   never change, the data file grows boundedly meanwhile, and once the reader
//!   ends (COMMIT or SIGKILL) further commits reuse pages;
//! - a read-only process opening a database whose WAL needs recovery (a writer
//!   SIGKILLed; or, simulated, a power loss that left the data file as the last
//!   checkpoint wrote it; or a torn WAL tail) reads every acknowledged commit and
//!   writes neither the data file nor the WAL; a writer joining it, or the next
//!   read-write open, recovers;
//! - readers (and freshly started processes) querying while the writer commits
//!   and checkpoints only ever see committed states, in commit order;
//! - a writer SIGKILLed at varied moments of a stream of big commits (some
//!   inside a commit) while another process has the database open: that one
//!   goes on, and after it too is killed recovery has every acknowledged commit,
//!   each whole.
//!
//! Children are driven as in `crash.rs`: statements one per line on standard
//! input, `--format jsonl`; after the statements of a step the test sends
//! `RETURN <n> AS kith_ack`, whose output line says they have all finished
//! (the shell flushes each result). Unix only (shared-file locks, SIGKILL).
//!
//! `cargo test --release -p kith-cli --test processes` runs them all (10 to 20 s
//! on two idle cores).
#![cfg(unix)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use kith::{Config, Connection, Database, ErrorKind, Value};
use kith_common::constants::PAGE_SIZE;

/// How long any one step of a child may take before the test gives up on it.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

const SCHEMA: &str = "CREATE NODE TABLE N(id INT64, v INT64, PRIMARY KEY(id))";
/// The state every check compares: how many nodes, and the sum of their `v`.
const COUNT_SUM: &str = "MATCH (n:N) RETURN count(*) AS c, sum(n.v) AS s";

// ---- files ------------------------------------------------------------------------

/// A fresh directory for one test, removed afterwards (kept when the test
/// fails, for a look at the files).
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("kith-processes-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the temp dir");
        TempDir(dir)
    }

    fn db(&self) -> PathBuf {
        self.0.join("g.kith")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("files kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn shm_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(".shm");
    PathBuf::from(p)
}

fn wal_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(".wal");
    PathBuf::from(p)
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("stat {}: {e}", path.display()))
        .len()
}

/// A file's bytes and modification time, to show that nobody wrote it.
#[derive(Debug, PartialEq)]
struct FileState {
    bytes: Vec<u8>,
    modified: SystemTime,
}

fn file_state(path: &Path) -> FileState {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
    FileState {
        bytes: std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
        modified: meta.modified().expect("modification time"),
    }
}

fn assert_unchanged(path: &Path, before: &FileState, what: &str) {
    let after = file_state(path);
    assert!(
        after.bytes == before.bytes,
        "{what}: {} changed ({} bytes before, {} after)",
        path.display(),
        before.bytes.len(),
        after.bytes.len()
    );
    assert_eq!(
        after.modified,
        before.modified,
        "{what}: {} was written (modification time moved)",
        path.display()
    );
}

// ---- the test process as a party ---------------------------------------------------

fn config() -> Config {
    Config {
        max_threads: Some(1),
        ..Config::default()
    }
}

fn open(path: &Path, config: Config) -> Database {
    Database::open(&path.to_string_lossy(), config)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

fn exec(conn: &Connection, q: &str) -> Vec<Vec<Value>> {
    conn.query(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows()
        .collect()
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        other => panic!("not an INT64: {other:?}"),
    }
}

/// `(count, sum of v)` of the N table as this connection sees it.
fn count_sum(conn: &Connection) -> (i64, i64) {
    let rows = exec(conn, COUNT_SUM);
    assert_eq!(rows.len(), 1, "{COUNT_SUM}: {rows:?}");
    (int(&rows[0][0]), int(&rows[0][1]))
}

/// Creates the N table and nodes `0..n` with `v = id`; returns `(count, sum)`.
fn setup(conn: &Connection, n: i64) -> (i64, i64) {
    exec(conn, SCHEMA);
    if n > 0 {
        exec(
            conn,
            &format!(
                "UNWIND range(0, {}) AS i CREATE (:N {{id: i, v: i}})",
                n - 1
            ),
        );
    }
    (n, n * (n - 1) / 2)
}

// ---- `kith` shell children -------------------------------------------------------

/// A `kith` shell child reading statements from a pipe.
struct Shell {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    acks: u64,
}

impl Shell {
    fn spawn(name: &str, db: &Path, args: &[&str]) -> Shell {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kith"))
            .arg(db)
            .args(["--format", "jsonl", "--threads", "1"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kith");
        let stdin = child.stdin.take().expect("child stdin");
        let stdout = child.stdout.take().expect("child stdout");
        let mut stderr = child.stderr.take().expect("child stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Shell {
            name: name.to_string(),
            child,
            stdin: Some(stdin),
            lines,
            stderr: Some(stderr),
            acks: 0,
        }
    }

    /// Writes `text` (statements ending in `;`) without waiting for anything.
    fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let mut line = text.to_string();
        if !line.ends_with('\n') {
            line.push('\n');
        }
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("{}: write to the shell: {e}", self.name));
    }

    /// Sends `text`, then an ack; returns the output lines before the ack, or
    /// the child's standard error if it exited first (a statement failed).
    fn try_run(&mut self, text: &str) -> Result<Vec<String>, String> {
        self.acks += 1;
        let ack = self.acks;
        let mut input = text.trim_end().to_string();
        if !input.is_empty() {
            input.push('\n');
        }
        input.push_str(&format!("RETURN {ack} AS kith_ack;\n"));
        if let Some(stdin) = self.stdin.as_mut() {
            // A child that already exited shows up below as a closed output.
            let _ = stdin
                .write_all(input.as_bytes())
                .and_then(|()| stdin.flush());
        }
        let expected = format!("{{\"kith_ack\":{ack}}}");
        let deadline = Instant::now() + STEP_TIMEOUT;
        let mut out = Vec::new();
        loop {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) if line == expected => return Ok(out),
                Ok(line) => out.push(line),
                Err(RecvTimeoutError::Disconnected) => {
                    self.wait_exit(STEP_TIMEOUT);
                    return Err(self.stderr_text());
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    let stderr = self.stderr_text();
                    panic!(
                        "{}: no answer within {STEP_TIMEOUT:?} to:\n{text}\nstderr: {stderr}",
                        self.name
                    );
                }
            }
        }
    }

    /// [`Shell::try_run`] for statements that must succeed.
    fn run(&mut self, text: &str) -> Vec<String> {
        let name = self.name.clone();
        self.try_run(text)
            .unwrap_or_else(|e| panic!("{name}: failed on:\n{text}\n{e}"))
    }

    /// Sends statements that must fail: the shell stops at the first error and
    /// exits; returns its standard error and how long that took.
    fn run_failing(&mut self, text: &str) -> (String, Duration) {
        let start = Instant::now();
        match self.try_run(text) {
            Ok(lines) => panic!(
                "{}: expected a failure, got {lines:?} for:\n{text}",
                self.name
            ),
            Err(stderr) => {
                let status = self.wait_exit(STEP_TIMEOUT);
                assert!(
                    !status.success(),
                    "{}: failed but exited {status}",
                    self.name
                );
                (stderr, start.elapsed())
            }
        }
    }

    /// `(count, sum of v)` of the N table as this child sees it.
    fn count_sum(&mut self) -> (i64, i64) {
        let lines = self.run(&format!("{COUNT_SUM};"));
        assert_eq!(lines.len(), 1, "{}: {COUNT_SUM}: {lines:?}", self.name);
        parse_count_sum(&lines[0])
    }

    fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for kith") {
                return status;
            }
            if Instant::now() > deadline {
                self.kill();
                panic!("{}: did not exit within {timeout:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL (what `Child::kill` sends on unix), then reaps the child.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn stderr_text(&mut self) -> String {
        self.stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Closes standard input and waits for a clean exit; returns standard error.
    fn finish(mut self) -> String {
        self.stdin = None;
        let status = self.wait_exit(STEP_TIMEOUT);
        let stderr = self.stderr_text();
        assert!(
            status.success(),
            "{}: exited {status}; stderr: {stderr}",
            self.name
        );
        stderr
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.stdin = None;
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            self.kill();
        }
    }
}

/// The integers `keys` of a JSON line.
fn parse_ints(line: &str, keys: &[&str]) -> Vec<i64> {
    let row: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    keys.iter()
        .map(|k| {
            row.get(k)
                .and_then(serde_json::Value::as_i64)
                .unwrap_or_else(|| panic!("no integer '{k}' in {line}"))
        })
        .collect()
}

fn parse_count_sum(line: &str) -> (i64, i64) {
    let v = parse_ints(line, &["c", "s"]);
    (v[0], v[1])
}

/// A one-shot `kith -c` process: its standard output lines, or its standard
/// error when it fails.
fn one_shot(db: &Path, args: &[&str], statements: &str) -> Result<Vec<String>, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_kith"))
        .arg(db)
        .args(["--format", "jsonl", "--threads", "1"])
        .args(args)
        .args(["-c", statements])
        .stdin(Stdio::null())
        .output()
        .expect("run kith");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        assert!(stderr.is_empty(), "kith -c {statements}: stderr: {stderr}");
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    } else {
        Err(stderr)
    }
}

fn one_shot_count_sum(db: &Path, args: &[&str]) -> (i64, i64) {
    let lines = one_shot(db, args, COUNT_SUM).unwrap_or_else(|e| panic!("{COUNT_SUM}: {e}"));
    assert_eq!(lines.len(), 1, "{lines:?}");
    parse_count_sum(&lines[0])
}

// ---- 1. readers see commits; a read-only transaction keeps its snapshot ----------

#[test]
fn readers_see_each_commit_and_read_only_transactions_keep_their_snapshot() {
    let dir = TempDir::new("readers");
    let path = dir.db();
    let db = open(&path, config());
    let conn = Connection::new(&db);
    let mut state = setup(&conn, 1);
    let mut ro = Shell::spawn("read-only child", &path, &["--read-only"]);
    let mut rw = Shell::spawn("read-write child", &path, &[]);
    assert_eq!(ro.count_sum(), state);
    assert_eq!(rw.count_sum(), state);

    // Each commit of the test process is seen at the start of the children's
    // next statement.
    for i in 1..=5 {
        exec(&conn, &format!("CREATE (:N {{id: {i}, v: {i}}})"));
        state = (state.0 + 1, state.1 + i);
        assert_eq!(ro.count_sum(), state, "read-only child after commit {i}");
        assert_eq!(rw.count_sum(), state, "read-write child after commit {i}");
    }

    // Inside READ ONLY transactions the answers stay those of their start.
    ro.run("BEGIN TRANSACTION READ ONLY;");
    rw.run("BEGIN TRANSACTION READ ONLY;");
    let pinned = state;
    for i in 6..=15 {
        exec(&conn, &format!("CREATE (:N {{id: {i}, v: {i}}})"));
        exec(&conn, "MATCH (n:N {id: 0}) SET n.v = n.v + 100");
        state = (state.0 + 1, state.1 + i + 100);
        assert_eq!(count_sum(&conn), state);
        assert_eq!(ro.count_sum(), pinned, "read-only child's snapshot moved");
        assert_eq!(rw.count_sum(), pinned, "read-write child's snapshot moved");
    }
    ro.run("COMMIT;");
    rw.run("COMMIT;");
    assert_eq!(ro.count_sum(), state);
    assert_eq!(rw.count_sum(), state);

    // The other way round: a child commits, the test process sees it at its
    // next statement, but not inside its own READ ONLY transaction.
    exec(&conn, "BEGIN TRANSACTION READ ONLY");
    let pinned = count_sum(&conn);
    rw.run("CREATE (:N {id: 100, v: 1000});");
    assert_eq!(count_sum(&conn), pinned, "test process's snapshot moved");
    assert_eq!(ro.count_sum(), (state.0 + 1, state.1 + 1000));
    exec(&conn, "COMMIT");
    state = (state.0 + 1, state.1 + 1000);
    assert_eq!(count_sum(&conn), state);

    // Schema changes travel too.
    rw.run("CREATE NODE TABLE M(id INT64, PRIMARY KEY(id));\nCREATE (:M {id: 7});");
    assert_eq!(
        exec(&conn, "MATCH (m:M) RETURN m.id"),
        vec![vec![Value::Int64(7)]]
    );
    assert_eq!(ro.run("MATCH (m:M) RETURN m.id AS id;"), vec!["{\"id\":7}"]);
    exec(&conn, "CREATE (:M {id: 8})");
    assert_eq!(
        rw.run("MATCH (m:M) RETURN count(*) AS c;"),
        vec!["{\"c\":2}"]
    );

    // The read-only child refuses to write, clearly.
    let (err, _) = ro.run_failing("CREATE (:N {id: 101, v: 0});");
    assert!(err.contains("read-only"), "read-only child's write: {err}");
    assert_eq!(rw.count_sum(), state);
    rw.finish();
    assert_eq!(count_sum(&conn), state);
}

// ---- 2. writers queue across processes ---------------------------------------------

#[test]
fn writers_queue_across_processes_and_a_short_wait_fails_clearly() {
    const N: i64 = 100;
    let dir = TempDir::new("queue");
    let path = dir.db();
    let db = open(&path, config());
    let conn = Connection::new(&db);
    setup(&conn, 0);
    let mut writers: Vec<Shell> = (0..3)
        .map(|k| Shell::spawn(&format!("writer {k}"), &path, &[]))
        .collect();
    for w in &mut writers {
        w.run(""); // open and ready
    }
    // Every child gets its N auto-commit CREATEs at once; they run concurrently.
    let start = Instant::now();
    for (k, w) in writers.iter_mut().enumerate() {
        let k = k as i64;
        let script: String = (0..N)
            .map(|i| format!("CREATE (:N {{id: {}, v: {k}}});\n", k * N + i))
            .collect();
        w.send(&script);
    }
    for w in &mut writers {
        w.run("");
    }
    eprintln!("3 x {N} queued commits in {:?}", start.elapsed());
    for w in writers {
        let stderr = w.finish();
        assert!(stderr.is_empty(), "a queued writer complained: {stderr}");
    }
    assert_eq!(count_sum(&conn), (3 * N, N * 3));
    let per_writer = exec(&conn, "MATCH (n:N) RETURN n.v, count(*) ORDER BY n.v");
    let per_writer: Vec<(i64, i64)> = per_writer
        .iter()
        .map(|r| (int(&r[0]), int(&r[1])))
        .collect();
    assert_eq!(per_writer, vec![(0, N), (1, N), (2, N)]);

    // A fourth writer with a 200 ms wait, behind a long write transaction of
    // the test process, fails clearly and changes nothing.
    exec(&conn, "BEGIN TRANSACTION");
    exec(&conn, "CREATE (:N {id: -1, v: 0})");
    let mut late = Shell::spawn("impatient writer", &path, &["--writer-wait-ms", "200"]);
    late.run("");
    let (err, took) = late.run_failing("CREATE (:N {id: -2, v: 0});");
    assert!(
        err.contains("Transaction error")
            && err.contains("another write transaction")
            && err.contains("200 ms")
            && err.contains("retry"),
        "the impatient writer's error: {err}"
    );
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(20),
        "the impatient writer gave up after {took:?}"
    );
    // The same through the API: a retryable transaction error, and the retry
    // succeeds once the transaction has ended.
    let impatient = open(
        &path,
        Config {
            writer_wait: Some(Duration::from_millis(200)),
            ..config()
        },
    );
    let other = Connection::new(&impatient);
    let e = other
        .query("CREATE (:N {id: -3, v: 0})")
        .expect_err("a write behind an open write transaction");
    assert_eq!(e.kind, ErrorKind::Transaction, "{e}");
    exec(&conn, "COMMIT");
    exec(&other, "CREATE (:N {id: -3, v: 0})");
    assert_eq!(count_sum(&conn), (3 * N + 2, N * 3));
    let ids = exec(
        &conn,
        "MATCH (n:N) WHERE n.id < 0 RETURN n.id ORDER BY n.id",
    );
    assert_eq!(
        ids.iter().map(|r| int(&r[0])).collect::<Vec<_>>(),
        vec![-3, -1]
    );
}

// ---- 3. a killed writer blocks nobody ------------------------------------------------

#[test]
fn killed_writer_blocks_nobody_and_its_writes_never_show() {
    let dir = TempDir::new("killed-writer");
    let path = dir.db();
    let db = open(
        &path,
        Config {
            writer_wait: Some(Duration::from_secs(30)),
            ..config()
        },
    );
    let conn = Connection::new(&db);
    let state = setup(&conn, 10);

    let mut victim = Shell::spawn("victim", &path, &[]);
    victim.run(
        "BEGIN TRANSACTION;\n\
         CREATE (:N {id: 999, v: 999});\n\
         MATCH (n:N {id: 1}) SET n.v = 12345;",
    );
    // It holds the writer slot: a writer with a short wait is turned away.
    let mut probe = Shell::spawn("probe", &path, &["--writer-wait-ms", "200"]);
    let (err, _) = probe.run_failing("CREATE (:N {id: 500, v: 0});");
    assert!(err.contains("another write transaction"), "{err}");
    assert_eq!(count_sum(&conn), state, "uncommitted writes visible");

    victim.kill();
    let start = Instant::now();
    exec(&conn, "CREATE (:N {id: 10, v: 10})");
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "the next writer waited {took:?} for a dead process's slot"
    );
    let state = (state.0 + 1, state.1 + 10);
    assert_eq!(count_sum(&conn), state);
    assert!(exec(&conn, "MATCH (n:N {id: 999}) RETURN n.v").is_empty());
    assert_eq!(
        exec(&conn, "MATCH (n:N {id: 1}) RETURN n.v"),
        vec![vec![Value::Int64(1)]]
    );
    // A process started afterwards sees the same, and can write too.
    let mut later = Shell::spawn("later", &path, &["--writer-wait-ms", "5000"]);
    assert_eq!(later.count_sum(), state);
    later.run("CREATE (:N {id: 11, v: 11});");
    assert!(later.run("MATCH (n:N {id: 999}) RETURN n.v;").is_empty());
    later.finish();
    drop(conn);
    drop(db);
    // And after everyone has closed.
    assert_eq!(one_shot_count_sum(&path, &[]), (state.0 + 1, state.1 + 11));
}

// ---- 4. the shared file: deleted, garbage, damaged while in use ---------------------

#[test]
fn shared_file_deleted_or_garbage_is_rebuilt_and_damaged_in_use_is_refused() {
    let dir = TempDir::new("shm");
    let path = dir.db();
    let shm = shm_path(&path);
    let mut state = {
        let db = open(&path, config());
        let conn = Connection::new(&db);
        setup(&conn, 50)
    };
    assert!(shm.exists(), "no shared file beside the database");

    // Deleted between runs: nothing lost.
    std::fs::remove_file(&shm).expect("delete the shared file");
    {
        let db = open(&path, config());
        assert_eq!(db.open_note(), None);
        let conn = Connection::new(&db);
        assert_eq!(count_sum(&conn), state);
        exec(&conn, "CREATE (:N {id: 50, v: 50})");
        state = (state.0 + 1, state.1 + 50);
    }
    assert!(shm.exists(), "the shared file was not recreated");

    // Garbage (a full page, and a few bytes) while no process has it open:
    // rebuilt silently, by the API and by the shell.
    for garbage in [vec![0xa5u8; 4096], b"garbage".to_vec()] {
        std::fs::write(&shm, &garbage).expect("write garbage");
        {
            let db = open(&path, config());
            assert_eq!(db.open_note(), None);
            assert_eq!(count_sum(&Connection::new(&db)), state);
        }
        std::fs::write(&shm, &garbage).expect("write garbage");
        assert_eq!(one_shot_count_sum(&path, &[]), state);
        std::fs::write(&shm, &garbage).expect("write garbage");
        assert_eq!(one_shot_count_sum(&path, &["--read-only"]), state);
    }

    // Damaged while a process has the database open: a newcomer is refused
    // with a clear error and changes nothing.
    let mut holder = Shell::spawn("holder", &path, &[]);
    assert_eq!(holder.count_sum(), state);
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&shm)
            .expect("open the shared file");
        f.write_all(b"GARBAGE!").expect("damage the magic");
    }
    let files = [shm.clone(), path.clone(), wal_path(&path)];
    let before: Vec<FileState> = files.iter().map(|f| file_state(f)).collect();
    for read_only in [false, true] {
        let err = match Database::open(
            &path.to_string_lossy(),
            Config {
                read_only,
                ..config()
            },
        ) {
            Ok(_) => panic!("opened beside a damaged shared file (read_only {read_only})"),
            Err(e) => e,
        };
        assert_eq!(err.kind, ErrorKind::Corruption, "{err}");
        let text = err.to_string();
        assert!(
            text.contains("damaged") && text.contains(&*shm.to_string_lossy()),
            "unclear error: {text}"
        );
        let args: &[&str] = if read_only { &["--read-only"] } else { &[] };
        let stderr = one_shot(&path, args, "RETURN 1 AS one").expect_err("kith opened");
        assert!(
            stderr.contains("Cannot open database") && stderr.contains("damaged"),
            "unclear error from the shell: {stderr}"
        );
    }
    for (f, b) in files.iter().zip(&before) {
        assert_unchanged(f, b, "a refused newcomer");
    }
    // The holder goes on reading and writing.
    assert_eq!(holder.count_sum(), state);
    holder.run("CREATE (:N {id: 51, v: 51});");
    state = (state.0 + 1, state.1 + 51);
    assert_eq!(holder.count_sum(), state);
    holder.finish();
    // Alone again: rebuilt, and everything is there.
    let db = open(&path, config());
    assert_eq!(db.open_note(), None);
    assert_eq!(count_sum(&Connection::new(&db)), state);
}

// ---- 5. a held snapshot pins pages; a released (or killed) one does not ----------

#[derive(Debug, Clone, Copy, PartialEq)]
enum ReaderEnd {
    /// The reader commits its read-only transaction.
    Commit,
    /// The reader is SIGKILLed idle inside its read-only transaction.
    KillIdle,
    /// The reader is SIGKILLed while running a long query in it.
    KillMidQuery,
}

/// `n` auto-commit updates of single nodes (of `nodes`); returns the change of sum.
fn update_batch(conn: &Connection, nodes: i64, n: i64, mut between: impl FnMut(i64)) -> i64 {
    for i in 0..n {
        exec(
            conn,
            &format!("MATCH (x:N {{id: {}}}) SET x.v = x.v + 1", i % nodes),
        );
        between(i);
    }
    n
}

fn snapshot_pins_pages(end: ReaderEnd) {
    const NODES: i64 = 500;
    const UPDATES: i64 = 1000;
    let dir = TempDir::new(&format!("pins-{end:?}"));
    let path = dir.db();
    let db = open(&path, config());
    let conn = Connection::new(&db);
    let mut state = setup(&conn, NODES);
    exec(&conn, "CHECKPOINT");

    let mut reader = Shell::spawn("reader", &path, &["--read-only"]);
    reader.run("BEGIN TRANSACTION READ ONLY;");
    let pinned = reader.count_sum();
    assert_eq!(pinned, state);

    // Batch 1, the snapshot held: the reader's answers never change.
    let size0 = file_len(&path);
    let mut d = 0;
    state.1 += update_batch(&conn, NODES, UPDATES, |i| {
        if i % 100 == 99 {
            d += 1;
            assert_eq!(reader.count_sum(), pinned, "the snapshot moved");
        }
    });
    assert!(d > 0);
    assert_eq!(count_sum(&conn), state);
    let size1 = file_len(&path);
    assert_eq!(reader.count_sum(), pinned, "the snapshot moved");

    match end {
        ReaderEnd::Commit => {
            reader.run("COMMIT;");
            assert_eq!(reader.count_sum(), state);
            // Its next statements hold (and drop) newer snapshots only.
        }
        ReaderEnd::KillIdle => reader.kill(),
        ReaderEnd::KillMidQuery => {
            // 500^4 rows: runs for many seconds (a three-way product is
            // counted without enumerating it).
            reader.send(
                "MATCH (a:N), (b:N), (c:N), (d:N) \
                 RETURN count(*) AS c, sum(a.v + b.v + c.v + d.v) AS s;",
            );
            // Give it time to start scanning (it runs for many seconds).
            std::thread::sleep(Duration::from_millis(300));
            reader.kill();
            assert!(
                reader.lines.try_recv().is_err(),
                "the long query finished before the kill: make it longer"
            );
        }
    }

    // Batches 2 and 3: pages freed meanwhile are reused.
    update_batch(&conn, NODES, UPDATES, |_| {});
    let size2 = file_len(&path);
    update_batch(&conn, NODES, UPDATES, |_| {});
    let size3 = file_len(&path);
    state.1 += 2 * UPDATES;
    assert_eq!(count_sum(&conn), state);
    if end == ReaderEnd::Commit {
        assert_eq!(reader.count_sum(), state);
        reader.finish();
    }
    let (g1, g2, g3) = (
        size1.saturating_sub(size0),
        size2.saturating_sub(size1),
        size3.saturating_sub(size2),
    );
    eprintln!(
        "{end:?}: data file {size0} B; +{g1} B over {UPDATES} commits with the snapshot held, \
         then +{g2} B and +{g3} B"
    );
    let page = PAGE_SIZE as u64;
    // Held: grows (that is what holding means), but boundedly.
    assert!(
        g1 >= UPDATES as u64 / 2 * page,
        "the data file grew only {g1} B while a snapshot was held: is it really held?"
    );
    assert!(
        g1 <= UPDATES as u64 * 16 * page,
        "the data file grew {g1} B over {UPDATES} one-row commits"
    );
    // Released: the next batches reuse pages (slack: a checkpoint's metadata
    // and the free list's fragmentation).
    let slack = 64 * page;
    assert!(
        g2 <= g1 / 4 + slack,
        "{end:?}: after the reader ended the file still grew {g2} B over {UPDATES} commits \
         (+{g1} B while held): its reader slot still pins pages"
    );
    assert!(
        g3 <= slack,
        "{end:?}: the file keeps growing: +{g3} B over the third {UPDATES} commits"
    );
}

#[test]
fn held_snapshot_never_changes_and_pages_are_reused_after_commit() {
    snapshot_pins_pages(ReaderEnd::Commit);
}

#[test]
fn reader_killed_in_a_read_only_transaction_pins_nothing() {
    snapshot_pins_pages(ReaderEnd::KillIdle);
}

#[test]
fn reader_killed_mid_query_pins_nothing() {
    snapshot_pins_pages(ReaderEnd::KillMidQuery);
}

// ---- 6. read-only open of a database whose WAL needs recovery ----------------------

#[test]
fn read_only_open_reads_through_an_unrecovered_wal_without_writing() {
    const COMMITS: i64 = 40;
    let dir = TempDir::new("ro-recovery");
    let path = dir.db();
    let wal = wal_path(&path);
    {
        let db = open(&path, config());
        setup(&Connection::new(&db), 10);
    }
    // A writer that is killed without a checkpoint: its commits live in the WAL.
    let mut writer = Shell::spawn("writer", &path, &[]);
    for i in 0..COMMITS {
        let id = 10 + i;
        writer.send(&format!("CREATE (:N {{id: {id}, v: {id}}});"));
        if i % 2 == 1 {
            writer.send(&format!("MATCH (n:N {{id: {}}}) SET n.v = n.v + 1;", i / 2));
        }
    }
    writer.run("");
    writer.kill();
    let n = 10 + COMMITS;
    let state = (n, n * (n - 1) / 2 + COMMITS / 2);
    assert!(file_len(&wal) > 0, "the killed writer left an empty WAL");

    let data_before = file_state(&path);
    let wal_before = file_state(&wal);
    // Read-only, first opener: all acknowledged commits, a note, no writes.
    {
        let db = open(
            &path,
            Config {
                read_only: true,
                ..config()
            },
        );
        // The killed writer's pages are in the data file already (written
        // before their WAL records): nothing is read through, nothing to say.
        assert_eq!(db.open_note(), None);
        assert_eq!(count_sum(&Connection::new(&db)), state);
    }
    let mut reader = Shell::spawn("read-only reader", &path, &["--read-only"]);
    assert_eq!(reader.count_sum(), state);
    let mut also = Shell::spawn("second read-only reader", &path, &["--read-only"]);
    assert_eq!(also.count_sum(), state);
    also.finish();
    assert_unchanged(&path, &data_before, "read-only opens");
    assert_unchanged(&wal, &wal_before, "read-only opens");

    // A writer joining the read-only process recovers, and commits.
    {
        let db = open(&path, config());
        let conn = Connection::new(&db);
        assert_eq!(count_sum(&conn), state);
        exec(&conn, &format!("CREATE (:N {{id: {n}, v: 0}})"));
        assert_eq!(count_sum(&conn), (n + 1, state.1));
        assert_eq!(reader.count_sum(), (n + 1, state.1));
    }
    let stderr = reader.finish();
    assert!(stderr.is_empty(), "{stderr}");
    // After everyone closed: a read-write open, then a read-only one with
    // nothing left to read through.
    {
        let db = open(&path, config());
        assert_eq!(db.open_note(), None);
        assert_eq!(count_sum(&Connection::new(&db)), (n + 1, state.1));
    }
    let db = open(
        &path,
        Config {
            read_only: true,
            ..config()
        },
    );
    assert_eq!(db.open_note(), None, "recovery was not done");
    assert_eq!(count_sum(&Connection::new(&db)), (n + 1, state.1));
}

/// A shell creates the schema and nodes 0..20 (`v` = id), each in its own
/// commit, and is SIGKILLed: no checkpoint, every commit only in the WAL.
/// Returns the (count, sum of `v`) it left.
fn killed_writer_of_20_nodes(path: &Path) -> (i64, i64) {
    let mut writer = Shell::spawn("writer", path, &[]);
    writer.run(&format!("{SCHEMA};"));
    for id in 0..20 {
        writer.send(&format!("CREATE (:N {{id: {id}, v: {id}}});"));
    }
    writer.run("");
    writer.kill();
    (20, 190)
}

/// The same, with the read-only opener a shell and no writer joining: the
/// next read-write open (after all closed) recovers.
#[test]
fn read_only_shell_then_read_write_open_recovers() {
    let dir = TempDir::new("ro-recovery-shell");
    let path = dir.db();
    let wal = wal_path(&path);
    let state = killed_writer_of_20_nodes(&path);
    let data_before = file_state(&path);
    let wal_before = file_state(&wal);
    let out = Command::new(env!("CARGO_BIN_EXE_kith"))
        .arg(&path)
        .args(["--read-only", "--format", "jsonl", "-c", COUNT_SUM])
        .output()
        .expect("run kith");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.is_empty(), "a note after a process crash: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(parse_count_sum(stdout.trim()), state);
    assert_unchanged(&path, &data_before, "a read-only shell");
    assert_unchanged(&wal, &wal_before, "a read-only shell");
    assert_eq!(one_shot_count_sum(&path, &[]), state);
    assert_eq!(one_shot_count_sum(&path, &["--read-only"]), state);
}

/// As after a power loss: the data file lacks every page written since the
/// last checkpoint (only the WAL's page images have them). A read-only first
/// opener reads them through the WAL; a writer joining it recovers them before
/// it checkpoints, while the reader goes on reading; nothing is lost after all
/// close.
#[test]
fn read_only_open_reads_pages_only_the_wal_has_and_a_joining_writer_recovers() {
    const NODES: i64 = 300;
    let dir = TempDir::new("ro-power-loss");
    let path = dir.db();
    let wal = wal_path(&path);
    let mut state = {
        let db = open(&path, config());
        setup(&Connection::new(&db), NODES)
    };
    let checkpointed = std::fs::read(&path).expect("read the data file");
    let mut writer = Shell::spawn("writer", &path, &[]);
    for i in 0..30 {
        writer.send(&format!(
            "MATCH (n:N) WHERE n.id % 7 = {} SET n.v = n.v + 1;",
            i % 7
        ));
        let id = NODES + i;
        writer.send(&format!("CREATE (:N {{id: {id}, v: {id}}});"));
    }
    writer.run("");
    writer.kill();
    for i in 0..30 {
        // The update reaches the nodes created before it too.
        state.1 += (0..NODES + i).filter(|id| id % 7 == i % 7).count() as i64;
        state.0 += 1;
        state.1 += NODES + i;
    }
    // The power loss: the data file as the checkpoint left it.
    std::fs::write(&path, &checkpointed).expect("restore the data file");
    let data_before = file_state(&path);
    let wal_before = file_state(&wal);

    let mut reader = Shell::spawn("read-only reader", &path, &["--read-only"]);
    assert_eq!(reader.count_sum(), state);
    assert_eq!(
        reader.run(&format!(
            "MATCH (n:N {{id: {}}}) RETURN n.v AS v;",
            NODES + 29
        )),
        vec![format!("{{\"v\":{}}}", NODES + 29)]
    );
    assert_unchanged(&path, &data_before, "a read-only open");
    assert_unchanged(&wal, &wal_before, "a read-only open");
    {
        let db = open(&path, config());
        let conn = Connection::new(&db);
        assert_eq!(count_sum(&conn), state);
        for i in 0..300 {
            exec(
                &conn,
                &format!("MATCH (n:N {{id: {}}}) SET n.v = n.v + 1", i % NODES),
            );
            state.1 += 1;
            if i % 50 == 49 {
                exec(&conn, "CHECKPOINT");
                assert_eq!(reader.count_sum(), state, "after {} updates", i + 1);
            }
        }
    }
    assert_eq!(reader.count_sum(), state);
    let stderr = reader.finish();
    assert!(
        stderr.contains("Note: opened read-only") && stderr.contains("missing"),
        "no note about the pages read from the WAL: {stderr}"
    );
    let db = open(&path, config());
    assert_eq!(db.open_note(), None);
    let conn = Connection::new(&db);
    assert_eq!(count_sum(&conn), state);
    let pk = exec(
        &conn,
        &format!("MATCH (n:N {{id: {}}}) RETURN n.v", NODES + 29),
    );
    assert_eq!(pk, vec![vec![Value::Int64(NODES + 29)]]);
}

/// A torn frame at the end of the WAL (a writer killed inside its append, or a
/// power loss): a read-only first opener reads the whole frames before it and
/// leaves the file as it is (it once cut the tail off, issue 53).
#[test]
fn read_only_open_leaves_a_torn_wal_tail_alone() {
    let dir = TempDir::new("ro-torn-tail");
    let path = dir.db();
    let wal = wal_path(&path);
    let state = killed_writer_of_20_nodes(&path);
    // Half a frame: a length, a checksum that cannot match, a few bytes.
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&wal)
            .expect("open the WAL");
        f.write_all(&[0x40, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3])
            .expect("append a torn frame");
    }
    let data_before = file_state(&path);
    let wal_before = file_state(&wal);
    {
        let db = open(
            &path,
            Config {
                read_only: true,
                ..config()
            },
        );
        assert_eq!(count_sum(&Connection::new(&db)), state);
    }
    assert_unchanged(&path, &data_before, "a read-only open");
    assert_unchanged(&wal, &wal_before, "a read-only open");
    // The next read-write open recovers (and may cut the tail).
    assert_eq!(one_shot_count_sum(&path, &[]), state);
    assert_eq!(one_shot_count_sum(&path, &["--read-only"]), state);
}

// ---- 7. readers during commits and checkpoints -------------------------------------

/// What the readers of test 7 ask, in turn, each in one statement (one
/// snapshot): the count and sum of v by a scan with node 0's `v` by a
/// primary-key lookup; the rels into node 0 (through the backward CSR) with the
/// sum of their sources' `v`, and node 0's `v` again.
const NODE_VIEW: &str =
    "MATCH (m:N {id: 0}) MATCH (n:N) RETURN count(*) AS c, sum(n.v) AS s, m.v AS v0";
const REL_VIEW: &str =
    "MATCH (x:N)-[:R]->(m:N {id: 0}) RETURN count(*) AS d, sum(x.v) AS xs, min(m.v) AS v0";

/// One answer: which view, and its three numbers.
type Seen = (bool, [i64; 3]);

fn parse_view(rel: bool, lines: &[String]) -> Seen {
    assert_eq!(lines.len(), 1, "{lines:?}");
    let keys: &[&str] = if rel {
        &["d", "xs", "v0"]
    } else {
        &["c", "s", "v0"]
    };
    let v = parse_ints(&lines[0], keys);
    (rel, [v[0], v[1], v[2]])
}

fn view_query(rel: bool) -> &'static str {
    if rel {
        REL_VIEW
    } else {
        NODE_VIEW
    }
}

/// The state after a commit: node count, sum of v, node 0's v, rels into
/// node 0, sum of their sources' v.
#[derive(Clone, Copy)]
struct State7 {
    c: i64,
    s: i64,
    v0: i64,
    d: i64,
    xs: i64,
}

impl State7 {
    fn view(&self, rel: bool) -> Seen {
        if rel {
            (true, [self.d, self.xs, self.v0])
        } else {
            (false, [self.c, self.s, self.v0])
        }
    }
}

#[test]
fn readers_during_commits_and_checkpoints_see_only_committed_states_in_order() {
    const COMMITS: i64 = 150;
    let dir = TempDir::new("commit-checkpoint");
    let path = dir.db();
    let db = open(&path, config());
    let conn = Connection::new(&db);
    let (c, s) = setup(&conn, 20);
    exec(&conn, "CREATE REL TABLE R(FROM N TO N)");
    exec(
        &conn,
        "MATCH (z:N {id: 0}), (x:N) WHERE x.id > 0 CREATE (x)-[:R]->(z)",
    );
    let mut state = State7 {
        c,
        s,
        v0: 0,
        d: c - 1,
        xs: s,
    };
    let mut next_id = 20;
    // Every committed state, in commit order.
    let mut committed = vec![state];

    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for read_only in [false, true] {
        let mut shell = Shell::spawn(
            &format!("reader (read_only {read_only})"),
            &path,
            if read_only { &["--read-only"] } else { &[] },
        );
        shell.run("");
        let stop = Arc::clone(&stop);
        threads.push(std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut rel = read_only;
            while !stop.load(Ordering::SeqCst) {
                let lines = shell.run(&format!("{};", view_query(rel)));
                seen.push(parse_view(rel, &lines));
                rel = !rel;
            }
            shell.finish();
            seen
        }));
    }
    // Processes started during the commits and checkpoints.
    let starter = {
        let stop = Arc::clone(&stop);
        let path = path.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut k = 0;
            while !stop.load(Ordering::SeqCst) {
                let args: &[&str] = if k % 2 == 0 { &["--read-only"] } else { &[] };
                let rel = k % 3 == 0;
                let lines =
                    one_shot(&path, args, view_query(rel)).unwrap_or_else(|e| panic!("{e}"));
                seen.push(parse_view(rel, &lines));
                k += 1;
            }
            seen
        })
    };

    for i in 0..COMMITS {
        // 1 to 3 nodes per commit, each with a rel into node 0.
        let k = 1 + i % 3;
        let ids = next_id..next_id + k;
        let nodes: Vec<String> = ids
            .clone()
            .map(|id| format!("(:N {{id: {id}, v: {}}})-[:R]->(z)", id * 7))
            .collect();
        exec(
            &conn,
            &format!("MATCH (z:N {{id: 0}}) CREATE {}", nodes.join(", ")),
        );
        let added: i64 = ids.sum::<i64>() * 7;
        state.c += k;
        state.s += added;
        state.d += k;
        state.xs += added;
        next_id += k;
        committed.push(state);
        if i % 4 == 3 {
            exec(&conn, "CHECKPOINT");
        }
        if i % 10 == 9 {
            exec(&conn, "MATCH (n:N {id: 0}) SET n.v = n.v + 1");
            state.s += 1;
            state.v0 += 1;
            committed.push(state);
        }
    }
    stop.store(true, Ordering::SeqCst);
    let mut observed: Vec<(String, Vec<Seen>)> = threads
        .into_iter()
        .enumerate()
        .map(|(i, t)| (format!("reader {i}"), t.join().expect("reader thread")))
        .collect();
    observed.push((
        "freshly started processes".to_string(),
        starter.join().expect("starter thread"),
    ));

    let mut position: HashMap<Seen, usize> = HashMap::new();
    for (i, st) in committed.iter().enumerate() {
        for rel in [false, true] {
            assert!(
                position.insert(st.view(rel), i).is_none(),
                "committed states repeat"
            );
        }
    }
    for (who, seen) in &observed {
        let mut last = 0;
        let mut distinct = 0;
        for s in seen {
            let Some(&at) = position.get(s) else {
                panic!("{who} saw {s:?}, never committed");
            };
            assert!(
                at >= last,
                "{who} saw state #{at} {s:?} after #{last} {:?}",
                committed[last].view(s.0)
            );
            distinct += usize::from(at > last);
            last = at;
        }
        eprintln!(
            "{who}: {} reads, {distinct} state changes, of {} commits",
            seen.len(),
            committed.len()
        );
        assert!(seen.len() >= 5, "{who} read only {} times", seen.len());
    }
    assert_eq!(count_sum(&conn), (state.c, state.s));
}

// ---- 8. a writer killed mid-commit, others open -------------------------------------

/// A writer child streams big commits and is SIGKILLed at varied moments (so
/// some kills land inside a commit: pages written, WAL record half appended or
/// not yet published) while another child stays open; that child then commits
/// and checkpoints now and then, and at the end is SIGKILLed too. The database,
/// recovered from the WAL, holds every acknowledged commit, and each commit
/// whole or not at all.
#[test]
fn writer_killed_mid_commit_while_others_have_the_database_open() {
    const BATCH: i64 = 200;
    const PER_ROUND: i64 = 250;
    let dir = TempDir::new("killed-mid-commit");
    let path = dir.db();
    {
        let db = open(&path, config());
        exec(&Connection::new(&db), SCHEMA);
    }
    let mut survivor = Shell::spawn("survivor", &path, &[]);
    survivor.run("");
    // Batch b creates ids [b * BATCH, (b + 1) * BATCH) with v = b.
    let mut next_batch = 0i64;
    let create = |b: i64| {
        format!(
            "UNWIND range({}, {}) AS i CREATE (:N {{id: i, v: {b}}});",
            b * BATCH,
            (b + 1) * BATCH - 1
        )
    };
    // Batches that must be there (acknowledged), and that may be.
    let mut must: Vec<i64> = Vec::new();
    let mut may: Vec<i64> = Vec::new();
    for (round, delay_ms) in [15u64, 40, 70, 100, 25, 55, 130, 85]
        .into_iter()
        .enumerate()
    {
        let mut victim = Shell::spawn(&format!("victim {round}"), &path, &[]);
        victim.run("");
        let first = next_batch;
        let mut script = String::new();
        for j in 0..PER_ROUND {
            script.push_str(&create(first + j));
            script.push_str(&format!("\nRETURN {} AS kith_ack;\n", first + j));
        }
        next_batch += PER_ROUND;
        victim.send(&script);
        std::thread::sleep(Duration::from_millis(delay_ms));
        victim.kill();
        let mut acked = first - 1;
        while let Ok(line) = victim.lines.try_recv() {
            acked = acked.max(parse_ints(&line, &["kith_ack"])[0]);
        }
        must.extend(first..=acked);
        may.extend(acked + 1..first + PER_ROUND);
        // The survivor reads a state of whole batches, then commits its own.
        let lines = survivor.run("MATCH (n:N) RETURN n.v AS b, count(*) AS c ORDER BY b;");
        check_batches(
            &lines,
            &must,
            &may,
            BATCH,
            &format!("survivor, round {round}"),
        );
        let b = next_batch;
        next_batch += 1;
        survivor.run(&create(b));
        must.push(b);
        if round % 3 == 2 {
            survivor.run("CHECKPOINT;");
        }
        eprintln!(
            "round {round}: killed after {delay_ms} ms, {} batches acknowledged",
            acked - first + 1
        );
    }
    survivor.kill();
    let db = open(&path, config());
    let conn = Connection::new(&db);
    let rows = exec(
        &conn,
        "MATCH (n:N) RETURN n.v AS b, count(*) AS c ORDER BY b",
    );
    let lines: Vec<String> = rows
        .iter()
        .map(|r| format!("{{\"b\":{},\"c\":{}}}", int(&r[0]), int(&r[1])))
        .collect();
    check_batches(&lines, &must, &may, BATCH, "after recovery");
    // The primary-key index agrees.
    for &b in must.iter().step_by(5) {
        let id = b * BATCH + BATCH / 2;
        assert_eq!(
            exec(&conn, &format!("MATCH (n:N {{id: {id}}}) RETURN n.v")),
            vec![vec![Value::Int64(b)]],
            "PK lookup of {id}"
        );
    }
}

/// `lines` (`{"b":…,"c":…}` per batch present) hold every batch of `must`,
/// only batches of `must` and `may`, each whole.
fn check_batches(lines: &[String], must: &[i64], may: &[i64], batch: i64, who: &str) {
    let found: HashMap<i64, i64> = lines
        .iter()
        .map(|l| {
            let v = parse_ints(l, &["b", "c"]);
            (v[0], v[1])
        })
        .collect();
    for (b, c) in &found {
        assert!(
            must.contains(b) || may.contains(b),
            "{who}: batch {b} present but never sent"
        );
        assert_eq!(*c, batch, "{who}: batch {b} half there");
    }
    for b in must {
        assert!(found.contains_key(b), "{who}: acknowledged batch {b} lost");
    }
}
