//! The peer of the Kùzu differential oracle: Kùzu 0.11's Python package
//! behind `bench/kuzu_driver.py` (one JSON request and reply per line),
//! one process per fuzzing worker thread, a fresh on-disk database per
//! graph.
//!
//! Boundaries: this module only starts the driver, loads a graph into it
//! and runs a statement; what counts as agreement is the oracle's
//! ([`crate::oracle`]). Kùzu not installed, a statement it rejects or a
//! reply that is no scalar or list is a skip, never a finding.

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use kith::Value;
use serde_json::Value as Json;

use crate::graph::Graph;

/// Kùzu's statement timeout: the same bound as KithDB's.
const TIMEOUT_MS: u64 = crate::exec::TIMEOUT_MS;

/// Where the driver script is: `KITH_KUZU_DRIVER`, else the repository's.
fn driver_path() -> PathBuf {
    std::env::var_os("KITH_KUZU_DRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/kuzu_driver.py")
        })
}

/// One running driver.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The open database's directory and the script it was loaded with.
    open: Option<(PathBuf, Vec<String>)>,
    /// Databases opened by this peer (names the next directory).
    opened: u64,
}

impl Peer {
    fn start() -> Result<Peer, String> {
        let mut child = Command::new(std::env::var("KITH_PYTHON").unwrap_or("python3".into()))
            .arg(driver_path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the Kùzu driver: {e}"))?;
        let stdin = child.stdin.take().ok_or("the Kùzu driver has no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("the Kùzu driver has no stdout")?);
        let mut p = Peer {
            child,
            stdin,
            stdout,
            open: None,
            opened: 0,
        };
        let hello = p.read()?;
        if hello.get("ok") != Some(&Json::Bool(true)) {
            return Err(format!(
                "the Kùzu driver did not start: {}",
                error_of(&hello)
            ));
        }
        Ok(p)
    }

    fn read(&mut self) -> Result<Json, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err("the Kùzu driver exited".into()),
            Ok(_) => serde_json::from_str(&line)
                .map_err(|e| format!("the Kùzu driver's reply is no JSON: {e}")),
            Err(e) => Err(format!("reading the Kùzu driver: {e}")),
        }
    }

    fn request(&mut self, req: Json) -> Result<Json, String> {
        writeln!(self.stdin, "{req}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to the Kùzu driver: {e}"))?;
        self.read()
    }

    fn exec(&mut self, query: &str) -> Result<Json, String> {
        self.request(serde_json::json!({
            "cmd": "exec", "query": query, "timeout_ms": TIMEOUT_MS
        }))
    }

    fn close(&mut self) {
        if let Some((dir, _)) = self.open.take() {
            let _ = self.request(serde_json::json!({"cmd": "close"}));
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::remove_file(&dir);
            let _ = std::fs::remove_file(dir.with_extension("wal"));
        }
    }

    /// Opens a fresh database holding `script` unless the open one does.
    fn load(&mut self, script: &[String]) -> Result<(), Skip> {
        if self.open.as_ref().is_some_and(|(_, s)| s == script) {
            return Ok(());
        }
        self.close();
        self.opened += 1;
        let dir = std::env::temp_dir().join(format!(
            "kith-fuzz-kuzu-{}-{:?}-{}",
            std::process::id(),
            std::thread::current().id(),
            self.opened
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let reply = self
            .request(serde_json::json!({
                "cmd": "open", "path": dir.to_string_lossy(), "threads": 1
            }))
            .map_err(Skip::Peer)?;
        if reply.get("ok") != Some(&Json::Bool(true)) {
            return Err(Skip::Peer(format!("kuzu open: {}", error_of(&reply))));
        }
        self.open = Some((dir, Vec::new()));
        for stmt in script {
            let reply = self.exec(stmt).map_err(Skip::Peer)?;
            if reply.get("ok") != Some(&Json::Bool(true)) {
                // The database holds part of the graph: not reused.
                self.close();
                return Err(Skip::Dialect(format!(
                    "kuzu cannot load the graph: {stmt}: {}",
                    error_of(&reply)
                )));
            }
        }
        if let Some(open) = self.open.as_mut() {
            open.1 = script.to_vec();
        }
        Ok(())
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.close();
        let _ = self.request(serde_json::json!({"cmd": "quit"}));
        let _ = self.child.wait();
    }
}

fn error_of(reply: &Json) -> String {
    reply
        .get("error")
        .and_then(Json::as_str)
        .unwrap_or("no reason given")
        .to_string()
}

/// Why Kùzu gave no comparable answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Skip {
    /// The driver is missing or broke.
    Peer(String),
    /// Kùzu rejected the statement or answered with values this oracle
    /// does not compare (nodes, rels, structs).
    Dialect(String),
}

impl Skip {
    pub fn reason(&self) -> &str {
        match self {
            Skip::Peer(m) | Skip::Dialect(m) => m,
        }
    }
}

thread_local! {
    /// This worker's driver, started on first use; `Err` remembers why it
    /// could not start (not retried for every query).
    static PEER: RefCell<Option<Result<Peer, String>>> = const { RefCell::new(None) };
}

/// The statements that load `graph` into Kùzu: KithDB's script without
/// its CHECKPOINT (a storage detail of ours).
pub fn script(graph: &Graph) -> Vec<String> {
    graph
        .script()
        .into_iter()
        .filter(|s| s != "CHECKPOINT")
        .collect()
}

/// Runs `query` in Kùzu on `graph`: the rows as KithDB values.
pub fn run(graph: &Graph, query: &str) -> Result<Vec<Vec<Value>>, Skip> {
    PEER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Peer::start());
        }
        let peer = match slot.as_mut() {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Err(Skip::Peer(e.clone())),
            None => return Err(Skip::Peer("no Kùzu driver".into())),
        };
        let result = peer.load(&script(graph)).and_then(|()| {
            let reply = peer.exec(query).map_err(Skip::Peer)?;
            if reply.get("ok") != Some(&Json::Bool(true)) {
                return Err(Skip::Dialect(format!("kuzu: {}", error_of(&reply))));
            }
            let rows = reply
                .get("rows")
                .and_then(Json::as_array)
                .ok_or_else(|| Skip::Peer("kuzu reply without rows".into()))?;
            rows.iter()
                .map(|r| {
                    r.as_array()
                        .ok_or_else(|| Skip::Peer("kuzu row is no list".into()))?
                        .iter()
                        .map(value)
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect()
        });
        if let Err(Skip::Peer(_)) = &result {
            // A broken pipe or a dead process: start afresh next time.
            *slot = None;
        }
        result
    })
}

/// A Kùzu value as a KithDB value; nodes, rels and structs (JSON objects)
/// are not compared.
fn value(j: &Json) -> Result<Value, Skip> {
    Ok(match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int64(i),
            None => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::list(items.iter().map(value).collect::<Result<Vec<_>, _>>()?),
        Json::Object(_) => {
            return Err(Skip::Dialect(
                "kuzu answered with a node, rel or struct (not compared)".into(),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_become_kith_values() {
        let j: Json = serde_json::from_str(r#"[null, true, 3, -2.5, "a", [1, [2.0]]]"#).unwrap();
        let v: Vec<Value> = j
            .as_array()
            .unwrap()
            .iter()
            .map(|x| value(x).unwrap())
            .collect();
        assert_eq!(v[0], Value::Null);
        assert_eq!(v[1], Value::Bool(true));
        assert_eq!(v[2], Value::Int64(3));
        assert_eq!(v[3], Value::Double(-2.5));
        assert_eq!(v[4], Value::String("a".into()));
        assert_eq!(
            v[5],
            Value::list(vec![Value::Int64(1), Value::list(vec![Value::Double(2.0)])])
        );
        assert!(matches!(
            value(&serde_json::json!({"_id": 1})),
            Err(Skip::Dialect(_))
        ));
    }
}
