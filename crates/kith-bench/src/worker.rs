//! The KithDB driver: `kith-bench __kith-worker`, in-process `kith` facade
//! behind the JSON-lines protocol of `bench/kuzu_driver.py`, plus what the
//! `processes` suite needs: `open` with `read_only` and `writer_wait_ms`,
//! `read_start` / `read_stop` (reading threads in the background, see
//! `processes::ReadLoop`) and per-transaction latencies from `exec_params`.

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::json::{self, Json};
use crate::sys::proc_status_kb;

fn value_json(v: &kith::Value) -> Json {
    use kith::Value as V;
    match v {
        V::Null => Json::Null,
        V::Bool(b) => Json::Bool(*b),
        V::Int8(x) => Json::Int(*x as i64),
        V::Int16(x) => Json::Int(*x as i64),
        V::Int32(x) => Json::Int(*x as i64),
        V::Int64(x) => Json::Int(*x),
        V::UInt8(x) => Json::Int(*x as i64),
        V::UInt16(x) => Json::Int(*x as i64),
        V::UInt32(x) => Json::Int(*x as i64),
        V::UInt64(x) => i64::try_from(*x).map_or(Json::Float(*x as f64), Json::Int),
        V::Float(x) => Json::Float(*x as f64),
        V::Double(x) => Json::Float(*x),
        V::String(s) => Json::str(s.as_str()),
        V::List(items) => Json::Arr(items.iter().map(value_json).collect()),
        other => Json::Str(other.to_string()),
    }
}

fn ok(fields: Vec<(String, Json)>) -> Json {
    let mut f = vec![("ok".to_string(), Json::Bool(true))];
    f.extend(fields);
    Json::Obj(f)
}

fn err(msg: impl Into<String>) -> Json {
    Json::Obj(vec![
        ("ok".into(), Json::Bool(false)),
        ("error".into(), Json::Str(msg.into())),
    ])
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

struct State {
    /// The `CALL timeout=` value last set on `conn` (0: none).
    timeout_ms: i64,
    conn: Option<kith::Connection>,
    db: Option<kith::Database>,
    /// Reading threads of the `processes` suite (`read_start`).
    reads: Option<crate::processes::ReadLoop>,
}

/// Microseconds since the Unix epoch: instants that other processes'
/// replies can be compared with.
fn unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

fn handle(state: &mut State, req: &Json) -> Json {
    match req.get("cmd").and_then(Json::as_str) {
        Some("open") => {
            let Some(path) = req.get("path").and_then(Json::as_str) else {
                return err("open: missing path");
            };
            let threads = req
                .get("threads")
                .and_then(Json::as_i64)
                .unwrap_or(0)
                .max(0) as usize;
            let config = kith::Config {
                buffer_pool_bytes: req
                    .get("buffer_pool_bytes")
                    .and_then(Json::as_i64)
                    .map(|b| b as u64),
                max_threads: (threads > 0).then_some(threads),
                read_only: req.get("read_only").and_then(Json::as_bool) == Some(true),
                writer_wait: req
                    .get("writer_wait_ms")
                    .and_then(Json::as_i64)
                    .map(|ms| Duration::from_millis(ms.max(0) as u64)),
            };
            if let Some(r) = state.reads.take() {
                r.stop();
            }
            match kith::Database::open(path, config) {
                Ok(db) => {
                    let conn = kith::Connection::new(&db);
                    if threads > 0 {
                        // The per-connection setting as well; an engine that
                        // does not know it yet must not stop the run.
                        if let Err(e) = conn.query(&format!("CALL threads={threads}")) {
                            eprintln!("[kith] CALL threads={threads}: {e}");
                        }
                    }
                    // A pinned policy must hold for every query, so a
                    // refusal fails the configuration.
                    if let Some(policy) = req.get("policy").and_then(Json::as_str) {
                        if let Err(e) = conn.query(&format!("CALL recursive_policy='{policy}'")) {
                            return err(format!("CALL recursive_policy='{policy}': {e}"));
                        }
                    }
                    state.conn = Some(conn);
                    state.timeout_ms = 0;
                    state.db = Some(db);
                    ok(vec![])
                }
                Err(e) => err(e.to_string()),
            }
        }
        Some("exec") => {
            let Some(conn) = state.conn.as_ref() else {
                return err("no open database");
            };
            let Some(q) = req.get("query").and_then(Json::as_str) else {
                return err("exec: missing query");
            };
            let timeout_ms = req
                .get("timeout_ms")
                .and_then(Json::as_i64)
                .unwrap_or(0)
                .max(0);
            if timeout_ms != state.timeout_ms {
                if let Err(e) = conn.query(&format!("CALL timeout={timeout_ms}")) {
                    return err(format!("CALL timeout={timeout_ms}: {e}"));
                }
                state.timeout_ms = timeout_ms;
            }
            let t0 = Instant::now();
            match conn.query(q) {
                Ok(res) => {
                    let rows: Vec<Json> = res
                        .rows()
                        .map(|r| Json::Arr(r.iter().map(value_json).collect()))
                        .collect();
                    let ms = t0.elapsed().as_secs_f64() * 1e3;
                    let cols = res
                        .column_names()
                        .iter()
                        .map(|c| Json::str(c.as_str()))
                        .collect();
                    ok(vec![
                        ("ms".into(), Json::Float(ms)),
                        ("columns".into(), Json::Arr(cols)),
                        ("rows".into(), Json::Arr(rows)),
                    ])
                }
                Err(e) => err(e.to_string()),
            }
        }
        Some("exec_params") => match state.conn.as_ref() {
            None => err("no open database"),
            Some(conn) => exec_params(conn, req),
        },
        Some("read_start") => {
            let Some(db) = state.db.as_ref() else {
                return err("no open database");
            };
            if state.reads.is_some() {
                return err("read_start: reads are already running");
            }
            let int = |k: &str| req.get(k).and_then(Json::as_i64).unwrap_or(0).max(0) as u64;
            match crate::processes::ReadLoop::start(
                db,
                int("threads").max(1) as usize,
                int("seed"),
                int("nodes"),
                Duration::from_millis(int("warmup_ms")),
            ) {
                Ok(r) => {
                    state.reads = Some(r);
                    ok(vec![])
                }
                Err(e) => err(e),
            }
        }
        Some("read_stop") => match state.reads.take() {
            Some(r) => ok(r.stop()),
            None => err("read_stop: no reads running"),
        },
        Some("stats") => ok(vec![
            ("peak_rss_kb".into(), Json::opt_u64(proc_status_kb("VmHWM"))),
            ("rss_kb".into(), Json::opt_u64(proc_status_kb("VmRSS"))),
        ]),
        Some("close") => {
            if let Some(r) = state.reads.take() {
                r.stop();
            }
            state.conn = None;
            state.db = None;
            ok(vec![])
        }
        other => err(format!("unknown command: {other:?}")),
    }
}

/// A JSON parameter value as a KithDB value (the insert suite sends
/// integers, doubles and strings only).
fn param_value(v: &Json) -> kith::Value {
    match v {
        Json::Int(x) => kith::Value::Int64(*x),
        Json::Float(x) => kith::Value::Double(*x),
        Json::Str(s) => kith::Value::String(s.clone()),
        Json::Bool(b) => kith::Value::Bool(*b),
        _ => kith::Value::Null,
    }
}

/// `exec_params`: the same statement once per parameter row, timed as a
/// whole inside this process, so that per-statement protocol round trips
/// (which would dominate single-row inserts) are not measured. With
/// `per_tx` > 1 the rows go `per_tx` to a `BEGIN TRANSACTION` … `COMMIT`;
/// otherwise each statement auto-commits. `max_ms` > 0 stops at the first
/// transaction boundary after that much time. With `latencies`, the reply
/// has each transaction's time (`lat_ms`); it always has the loop's start
/// and end as Unix microseconds (`t0_unix_us`, `t1_unix_us`).
fn exec_params(conn: &kith::Connection, req: &Json) -> Json {
    let Some(q) = req.get("query").and_then(Json::as_str) else {
        return err("exec_params: missing query");
    };
    let names: Vec<&str> = req
        .get("names")
        .and_then(Json::as_arr)
        .unwrap_or(&[])
        .iter()
        .filter_map(Json::as_str)
        .collect();
    let rows = req.get("rows").and_then(Json::as_arr).unwrap_or(&[]);
    let per_tx = req.get("per_tx").and_then(Json::as_i64).unwrap_or(1).max(1) as usize;
    let max_ms = req.get("max_ms").and_then(Json::as_i64).unwrap_or(0).max(0) as f64;
    let latencies = req.get("latencies").and_then(Json::as_bool) == Some(true);
    let mut lat_ms = Vec::new();
    // Values are converted before the clock starts: building them is the
    // client's work, the same for every engine.
    let params: Vec<Vec<(&str, kith::Value)>> = rows
        .iter()
        .map(|r| {
            names
                .iter()
                .zip(r.as_arr().unwrap_or(&[]))
                .map(|(n, v)| (*n, param_value(v)))
                .collect()
        })
        .collect();
    let t0_unix = unix_us();
    let t0 = Instant::now();
    let mut done = 0usize;
    let mut txns = 0usize;
    for group in params.chunks(per_tx) {
        let tx0 = Instant::now();
        if per_tx > 1 {
            if let Err(e) = conn.query("BEGIN TRANSACTION") {
                return err(format!("BEGIN TRANSACTION after {done} rows: {e}"));
            }
        }
        for p in group {
            if let Err(e) = conn.query_with_params(q, p) {
                if per_tx > 1 {
                    let _ = conn.query("ROLLBACK");
                }
                return err(format!("row {done}: {e}"));
            }
            done += 1;
        }
        if per_tx > 1 {
            if let Err(e) = conn.query("COMMIT") {
                return err(format!("COMMIT after {done} rows: {e}"));
            }
        }
        if latencies {
            lat_ms.push(Json::Float(tx0.elapsed().as_secs_f64() * 1e3));
        }
        txns += 1;
        if max_ms > 0.0 && t0.elapsed().as_secs_f64() * 1e3 >= max_ms {
            break;
        }
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut reply = vec![
        ("ms".into(), Json::Float(ms)),
        ("rows_done".into(), Json::Int(done as i64)),
        ("txns".into(), Json::Int(txns as i64)),
        ("t0_unix_us".into(), Json::Int(t0_unix)),
        ("t1_unix_us".into(), Json::Int(unix_us())),
    ];
    if latencies {
        reply.push(("lat_ms".into(), Json::Arr(lat_ms)));
    }
    ok(reply)
}

/// Serves requests until `quit` or end of input.
pub fn serve() -> i32 {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let hello = ok(vec![
        ("engine".into(), Json::str("kith")),
        ("version".into(), Json::str(env!("CARGO_PKG_VERSION"))),
        ("rss_kb".into(), Json::opt_u64(proc_status_kb("VmRSS"))),
    ]);
    if writeln!(stdout, "{hello}")
        .and_then(|_| stdout.flush())
        .is_err()
    {
        return 1;
    }
    let mut state = State {
        timeout_ms: 0,
        conn: None,
        db: None,
        reads: None,
    };
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let reply = match json::parse(&line) {
            Ok(req) if req.get("cmd").and_then(Json::as_str) == Some("quit") => break,
            Ok(req) => catch_unwind(AssertUnwindSafe(|| handle(&mut state, &req)))
                .unwrap_or_else(|p| err(format!("engine panicked: {}", panic_message(p)))),
            Err(e) => err(e),
        };
        if writeln!(stdout, "{reply}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            return 1;
        }
    }
    if let Some(r) = state.reads.take() {
        r.stop();
    }
    drop(state.conn.take());
    drop(state.db.take());
    0
}
