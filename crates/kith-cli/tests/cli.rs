//! Runs the built `kith` binary end to end.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn kith(args: &[&str]) -> Output {
    kith_with_stdin(args, "")
}

fn kith_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kith"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kith");
    {
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(stdin.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("wait for kith")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_options() {
    let out = kith(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for opt in [
        "DB_PATH",
        "-c",
        "--format",
        "--threads",
        "--buffer-pool",
        "--read-only",
        "--demo",
    ] {
        assert!(help.contains(opt), "missing {opt} in:\n{help}");
    }
}

#[test]
fn version_prints() {
    let out = kith(&["--version"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).starts_with("kith "));
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        &["--format", "xml"][..],
        &["--threads", "0"],
        &["--threads", "many"],
        &["--buffer-pool", "1XB"],
        &["--no-such-flag"],
        &["db1", "db2"],
        &["-c"],
    ] {
        let out = kith(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            text(&out.stderr).starts_with("error:"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn empty_input_runs_nothing() {
    let out = kith(&["-c", "  ;  "]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let out = kith_with_stdin(&[], "\n\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
}

/// Holds before and after the engine is wired: the bad statement fails.
#[test]
fn failing_statement_exits_1_with_message() {
    let out = kith(&["-c", "RETURN (1 +;"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(!text(&out.stderr).trim().is_empty());
}

#[test]
fn batch_csv_output() {
    let out = kith(&[
        "-c",
        "RETURN 1 AS a, 'x,y' AS b; RETURN 'say \"hi\"' AS q, NULL AS n, '' AS e",
        "--format",
        "csv",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "a,b\n1,\"x,y\"\nq,n,e\n\"say \"\"hi\"\"\",,\"\"\n"
    );
}

#[test]
fn stdin_batch_runs_each_statement() {
    let out = kith_with_stdin(
        &["--format", "jsonl"],
        "RETURN 1 AS one;\n// a comment\nRETURN 'two' AS two, 2.5 AS x;\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"one\":1}\n{\"two\":\"two\",\"x\":2.5}\n"
    );
}

#[test]
fn syntax_error_stops_with_caret_and_exit_1() {
    let out = kith(&[
        "-c",
        "RETURN 1 AS ok;\nRETURN (1 +;\nRETURN 3 AS never",
        "--format",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "ok\n1\n", "earlier output is kept");
    let err = text(&out.stderr);
    assert!(err.starts_with("Syntax error"), "{err}");
    assert!(err.contains("line 2, column"), "{err}");
    assert!(err.contains("RETURN (1 +"), "{err}");
    assert!(
        err.lines().any(|l| l.trim_start().starts_with('^')),
        "{err}"
    );
    assert!(!text(&out.stdout).contains("never"));
}

#[test]
fn demo_answers_match_the_bundled_data() {
    let persons = include_str!("../demo/persons.csv");
    let knows = include_str!("../demo/knows.csv");
    let ages: Vec<(i64, i64)> = persons
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    let edges: Vec<(i64, i64, f64)> = knows
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    let age = |id: i64| ages.iter().find(|p| p.0 == id).unwrap().1;
    let over_30: Vec<_> = edges.iter().filter(|e| age(e.0) > 30).collect();
    let two_hop: usize = edges
        .iter()
        .map(|e1| edges.iter().filter(|e2| e2.0 == e1.1).count())
        .sum();

    let out = kith(&["--demo", "--format", "csv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let after = |header: &str| -> String {
        let mut lines = stdout.lines();
        lines
            .find(|l| *l == header)
            .unwrap_or_else(|| panic!("{header} in {stdout}"));
        lines.next().unwrap().to_string()
    };
    assert_eq!(after("people"), ages.len().to_string());
    let row = after("edges,total_weight");
    let (n, w) = row.split_once(',').unwrap();
    assert_eq!(n, over_30.len().to_string());
    let expected: f64 = over_30.iter().map(|e| e.2).sum();
    assert!(
        (w.parse::<f64>().unwrap() - expected).abs() < 1e-9,
        "{w} vs {expected}"
    );
    assert_eq!(after("two_hop_paths"), two_hop.to_string());
}

/// The two example commands on a database file, then the query again
/// after the database was closed and reopened by a new process.
#[test]
fn example_commands_work_and_survive_reopen() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let data = data.canonicalize().expect("tests/data");
    let dir = std::env::temp_dir().join(format!("kith-cli-example-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("graph.kith");
    let db = db.to_str().expect("utf-8 path");
    let load = format!(
        "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id));
         CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE);
         COPY Person FROM '{}' (HEADER=true);
         COPY Knows FROM '{}' (HEADER=true)",
        data.join("persons.csv").display(),
        data.join("knows.csv").display()
    );
    let out = kith(&[db, "-c", &load]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let query =
        "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*), sum(k.weight)";
    for _ in 0..2 {
        let out = kith(&[db, "--format", "csv", "-c", query]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "count(*),sum(k.weight)\n6,6.25\n");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Piped statements run as soon as their `;` arrives, each result flushed
/// before the next statement is read: the caller sees an acknowledgement
/// while standard input is still open.
#[test]
fn stdin_statements_run_and_flush_before_input_ends() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_kith"))
        .args(["--format", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kith");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    for (stmt, want) in [
        ("RETURN 1 AS a;\n", "{\"a\":1}\n"),
        // A statement split over lines runs once its `;` is read.
        ("RETURN\n", ""),
        ("  2 AS b; // done\n", "{\"b\":2}\n"),
    ] {
        input.write_all(stmt.as_bytes()).expect("write stdin");
        input.flush().expect("flush stdin");
        if want.is_empty() {
            continue;
        }
        line.clear();
        output.read_line(&mut line).expect("read stdout");
        assert_eq!(line, want);
    }
    drop(input);
    let status = child.wait().expect("wait for kith");
    assert!(status.success());
}

/// Transactions in batch mode: committed work stays, a transaction left
/// open at the end of the input is rolled back, misuse stops the run.
#[test]
fn batch_transactions_commit_and_roll_back() {
    let dir = std::env::temp_dir().join(format!("kith-cli-txn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("t.kith");
    let db = db.to_str().expect("utf-8 path");
    let out = kith_with_stdin(
        &[db, "--format", "csv"],
        "CREATE NODE TABLE T(id INT64, PRIMARY KEY(id));
         BEGIN TRANSACTION;
         CREATE (:T {id: 1});
         MATCH (t:T) RETURN count(*) AS inside;
         COMMIT;
         BEGIN TRANSACTION;
         CREATE (:T {id: 2});
         ",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).ends_with("inside\n1\n"),
        "{}",
        text(&out.stdout)
    );
    let out = kith_with_stdin(
        &[db, "--format", "csv"],
        "MATCH (t:T) RETURN count(*) AS n; ROLLBACK; RETURN 1;",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "n\n1\n");
    assert!(
        text(&out.stderr).contains("ROLLBACK without an open transaction"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
