//! Runs the end-to-end logic tests under `tests/*.test` at the repository root.
//!
//! File format (one record per blank-line-separated block, `#` comments):
//!
//! ```text
//! statement ok
//! CREATE NODE TABLE P(id INT64, PRIMARY KEY(id))
//!
//! statement error
//! MATCH (a:P) RETURN a.x
//! ----
//! property 'x' does not exist          <- substring of the error message
//!
//! query rowsort                         <- or `query` for an exact order
//! MATCH (a:P) RETURN a.id, a.name
//! ----
//! 1|Alice                               <- values joined by `|`, NULL as NULL
//!
//! reopen                                <- close and reopen the database file
//! ```
//! `${DATA}` expands to `tests/data`, `${TMP}` to a fresh temporary directory.

use std::path::{Path, PathBuf};

use kith::{Config, Connection, Database, Value};

struct Record {
    line: usize,
    kind: Kind,
    sql: String,
    expected: Vec<String>,
}

enum Kind {
    Ok,
    Error,
    Query { sort: bool },
    Reopen,
}

fn parse(text: &str) -> Vec<Record> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        if l.is_empty() || l.starts_with('#') {
            i += 1;
            continue;
        }
        let start = i + 1;
        let kind = match l {
            "statement ok" => Kind::Ok,
            "statement error" => Kind::Error,
            "query" => Kind::Query { sort: false },
            "query rowsort" => Kind::Query { sort: true },
            "reopen" => Kind::Reopen,
            other => panic!("line {start}: unknown record '{other}'"),
        };
        i += 1;
        let mut sql = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() && lines[i].trim() != "----" {
            sql.push(lines[i]);
            i += 1;
        }
        let mut expected = Vec::new();
        if i < lines.len() && lines[i].trim() == "----" {
            i += 1;
            while i < lines.len() && !lines[i].trim().is_empty() {
                expected.push(lines[i].to_string());
                i += 1;
            }
        }
        out.push(Record {
            line: start,
            kind,
            sql: sql.join("\n"),
            expected,
        });
    }
    out
}

fn render(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        other => other.to_string(),
    }
}

fn run_file(path: &Path, data: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let tmp = std::env::temp_dir().join(format!(
        "kith-logic-{}-{}",
        std::process::id(),
        path.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let db_path = tmp.join("db.kith");
    let db_path = db_path.to_string_lossy().to_string();
    let config = Config {
        max_threads: Some(2),
        ..Config::default()
    };
    let mut db = Some(Database::open(&db_path, config.clone()).unwrap());
    let mut failures = Vec::new();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    for rec in parse(&text) {
        let sql = rec
            .sql
            .replace("${DATA}", &data.to_string_lossy())
            .replace("${TMP}", &tmp.to_string_lossy());
        let at = format!("{name}:{}", rec.line);
        if let Kind::Reopen = rec.kind {
            drop(db.take());
            match Database::open(&db_path, config.clone()) {
                Ok(d) => db = Some(d),
                Err(e) => {
                    failures.push(format!("{at}: reopen failed: {e}"));
                    break;
                }
            }
            continue;
        }
        let conn = Connection::new(db.as_ref().unwrap());
        let result = conn.query(&sql);
        match (&rec.kind, result) {
            (Kind::Ok, Ok(_)) => {}
            (Kind::Ok, Err(e)) => failures.push(format!("{at}: expected success, got error:\n{e}")),
            (Kind::Error, Ok(_)) => {
                failures.push(format!("{at}: expected an error, the statement succeeded"))
            }
            (Kind::Error, Err(e)) => {
                let msg = e.to_string();
                for want in &rec.expected {
                    if !msg.contains(want.as_str()) {
                        failures.push(format!(
                            "{at}: error message\n{msg}\ndoes not contain\n{want}"
                        ));
                    }
                }
            }
            (Kind::Query { .. }, Err(e)) => failures.push(format!("{at}: query failed:\n{e}")),
            (Kind::Query { sort }, Ok(r)) => {
                let mut got: Vec<String> = r
                    .rows()
                    .map(|row| row.iter().map(render).collect::<Vec<_>>().join("|"))
                    .collect();
                let mut want = rec.expected.clone();
                if *sort {
                    got.sort();
                    want.sort();
                }
                if got != want {
                    failures.push(format!(
                        "{at}: result mismatch\n--- expected\n{}\n--- got\n{}",
                        want.join("\n"),
                        got.join("\n")
                    ));
                }
            }
            (Kind::Reopen, _) => unreachable!(),
        }
    }
    drop(db);
    let _ = std::fs::remove_dir_all(&tmp);
    failures
}

#[test]
fn logic_tests() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let data = root.join("data").canonicalize().unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        // KITH_TEST_FILE=name runs only the files whose path contains it.
        .filter(|p| {
            std::env::var("KITH_TEST_FILE")
                .map_or(true, |f| p.to_string_lossy().contains(f.as_str()))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no logic test files found");
    let mut failures = Vec::new();
    for f in &files {
        failures.extend(run_file(f, &data));
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
