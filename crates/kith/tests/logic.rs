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
//! statement error semantic              <- also the error's kind (syntax,
//! MATCH (a:P) RETURN b                     semantic, type, runtime, ...)
//!
//! query rowsort                         <- or `query` for an exact order
//! MATCH (a:P) RETURN a.id, a.name
//! ----
//! 1|Alice                               <- values joined by `|`, NULL as NULL
//!
//! reopen                                <- close and reopen the database file
//! ```
//! `${DATA}` expands to `tests/data`, `${TMP}` to a fresh temporary directory.
//!
//! `KITH_TEST_COMPLETE=1` rewrites the expected rows of every `query` whose
//! result differs with what the engine returns (as DataFusion's `--complete`
//! and DuckDB's rewrite modes do): write the queries, run once, read the
//! diff. It never touches statements, errors or comments.

use std::path::{Path, PathBuf};

use kith::{Config, Connection, Database, Value};

struct Record {
    line: usize,
    /// The record's lines in the file: `[first, end)` (header to last
    /// expected line), for the rewrite mode.
    lines: (usize, usize),
    header: String,
    kind: Kind,
    sql: String,
    expected: Vec<String>,
}

enum Kind {
    Ok,
    /// With the error kind it must have, lower case (`semantic`).
    Error(Option<String>),
    Query {
        sort: bool,
    },
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
            "statement error" => Kind::Error(None),
            _ if l.starts_with("statement error ") => {
                Kind::Error(Some(l["statement error ".len()..].trim().to_lowercase()))
            }
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
            lines: (start - 1, i),
            header: l.to_string(),
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
    let complete = std::env::var("KITH_TEST_COMPLETE").is_ok_and(|v| v == "1");
    // (record lines, new text) for the rewrite mode.
    let mut rewrites: Vec<((usize, usize), Vec<String>)> = Vec::new();
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
            (Kind::Error(_), Ok(_)) => {
                failures.push(format!("{at}: expected an error, the statement succeeded"))
            }
            (Kind::Error(kind), Err(e)) => {
                let got = format!("{:?}", e.kind).to_lowercase();
                if kind.as_ref().is_some_and(|k| *k != got) {
                    failures.push(format!(
                        "{at}: expected a {} error, got a {got} error:\n{e}",
                        kind.as_deref().unwrap_or("")
                    ));
                }
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
                if got != want && complete {
                    let mut new = vec![rec.header.clone()];
                    new.extend(rec.sql.lines().map(str::to_string));
                    new.push("----".to_string());
                    new.extend(got.iter().cloned());
                    rewrites.push((rec.lines, new));
                } else if got != want {
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
    if !rewrites.is_empty() {
        std::fs::write(path, rewrite(&text, &rewrites)).unwrap();
        eprintln!("{name}: rewrote {} expected result(s)", rewrites.len());
    }
    failures
}

/// `text` with each record's lines replaced by its new ones.
fn rewrite(text: &str, rewrites: &[((usize, usize), Vec<String>)]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    for ((first, end), new) in rewrites {
        out.extend(lines[i..*first].iter().map(|l| l.to_string()));
        out.extend(new.iter().cloned());
        i = *end;
    }
    out.extend(lines[i..].iter().map(|l| l.to_string()));
    let mut s = out.join("\n");
    s.push('\n');
    s
}

#[test]
fn the_rewrite_mode_replaces_only_expected_rows() {
    let text = "# c\nquery\nRETURN 1\n----\n2\n\nstatement ok\nRETURN 1\n";
    let recs = parse(text);
    assert_eq!(recs[0].lines, (1, 5));
    let new = vec![
        "query".to_string(),
        "RETURN 1".to_string(),
        "----".to_string(),
        "1".to_string(),
    ];
    assert_eq!(
        rewrite(text, &[(recs[0].lines, new)]),
        "# c\nquery\nRETURN 1\n----\n1\n\nstatement ok\nRETURN 1\n"
    );
    assert!(
        matches!(parse("statement error semantic\nX\n")[0].kind, Kind::Error(Some(ref k)) if k == "semantic")
    );
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
