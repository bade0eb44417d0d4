//! End to end through the binary: generate a tiny graph and run the suite on
//! KithDB alone. Engine errors must show up as `error: ...` cells, not a crash.

use std::process::Command;

#[test]
fn gen_then_run_kith_only_reports_errors_without_crashing() {
    let exe = env!("CARGO_BIN_EXE_kith-bench");
    let dir = std::env::temp_dir().join(format!("kith-bench-test-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    let st = Command::new(exe)
        .args([
            "gen",
            "rmat",
            "--scale",
            "8",
            "--edge-factor",
            "4",
            "--out",
            d,
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let json_path = dir.join("out.json");
    let out = Command::new(exe)
        .args([
            "run",
            "--suite",
            "foundation",
            "--data",
            d,
            "--threads",
            "1,2",
            "--runs",
            "2",
            "--engines",
            "kith",
            "--json",
            json_path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("| one-hop-filter-agg | 2 |"), "{stdout}");
    let report = kith_bench::json::parse(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let configs = report.get("configs").unwrap().as_arr().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        assert!(c.get("peak_rss_kb").and_then(|v| v.as_i64()).unwrap_or(0) > 0);
        for q in c.get("queries").unwrap().as_arr().unwrap() {
            // Either the engine answered with rows or it reported an error.
            let answered = q.get("rows").is_some_and(|r| r.as_arr().is_some());
            let errored = q.get("error").and_then(|e| e.as_str()).is_some();
            assert!(answered || errored);
            if errored {
                assert!(stdout.contains("error: "), "{stdout}");
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_arguments_fail_cleanly() {
    let exe = env!("CARGO_BIN_EXE_kith-bench");
    let out = Command::new(exe)
        .args(["run", "--data", "/nonexistent/x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(exe)
        .args(["gen", "rmat", "--scale", "0", "--out", "/tmp/x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn nn50_parquet_end_to_end() {
    let exe = env!("CARGO_BIN_EXE_kith-bench");
    let dir = std::env::temp_dir().join(format!("kith-bench-test-nn50-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    let st = Command::new(exe)
        .args([
            "gen", "nn50", "--nodes", "2000", "--k", "4", "--format", "parquet", "--out", d,
        ])
        .status()
        .unwrap();
    assert!(st.success());
    assert!(dir.join("edges.parquet").exists());
    assert!(
        !dir.join("edges.csv").exists(),
        "--format parquet keeps no CSV"
    );
    // CSV loads cannot run on this directory; the message says how to fix it.
    let out = Command::new(exe)
        .args(["run", "--suite", "sq", "--data", d, "--engines", "kith"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nodes.csv"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(exe)
        .args([
            "run",
            "--suite",
            "sq",
            "--data",
            d,
            "--engines",
            "kith",
            "--threads",
            "1",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--load-format",
            "parquet",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("loads from parquet"), "{stdout}");
    // 2000 nodes; 4^4 outgoing 4-hop walks from node 777.
    assert!(
        stdout.contains("`SQ1-scan`: `[[2000,1999000,5995]]`"),
        "{stdout}"
    );
    assert!(stdout.contains("`SQ3-expand-out`: `[[256,"), "{stdout}");
    assert!(!stdout.contains("error:"), "{stdout}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The `insert` suite needs no data set: every phase runs on KithDB at a
/// tiny size and its check query matches the row formula.
#[test]
fn insert_suite_runs_and_checks() {
    let exe = env!("CARGO_BIN_EXE_kith-bench");
    let dir = std::env::temp_dir().join(format!("kith-bench-test-insert-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(exe)
        .args([
            "run",
            "--suites",
            "insert",
            "--engines",
            "kith",
            "--threads",
            "1",
            "--insert-rows",
            "250",
            "--insert-per-tx",
            "100",
            "--insert-scale",
            "0.0005",
            "--insert-chunk",
            "200",
            "--insert-phases",
            "autocommit,batched,bulk,rels-batched",
            "--tmp-dir",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "| auto-commit single-row CREATE | 1 |",
        "| batched single-row CREATE | 1 |",
        "| bulk nodes | 1 |",
        "| bulk rels | 1 |",
        "| batched single-rel MATCH by id + CREATE | 1 |",
    ] {
        assert!(stdout.contains(step), "{step}\n{stdout}");
    }
    // 500 nodes, 5,000 rels in chunks of 200; 250 single rows (ages sum to
    // 2 * 4950 + 0 + .. + 49).
    assert!(stdout.contains("ok [[250,11125,31125]]"), "{stdout}");
    assert!(stdout.contains("ok [[500,24750,124750]]"), "{stdout}");
    assert!(!stdout.contains("MISMATCH"), "{stdout}");
    assert!(!stdout.contains("error"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--engines kith:POLICY` pins the worker's recursive dispatch policy:
/// the worker passes it to `CALL recursive_policy` (a policy the engine
/// refuses fails the open), and the report gets the policy table, with
/// every policy's results checked against the others.
#[test]
fn pinned_policies_reach_the_engine_and_the_report() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let exe = env!("CARGO_BIN_EXE_kith-bench");
    let dir = std::env::temp_dir().join(format!("kith-bench-test-policy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut w = Command::new(exe)
        .arg("__kith-worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = w.stdin.take().unwrap();
    let mut lines = BufReader::new(w.stdout.take().unwrap()).lines();
    let _hello = lines.next().unwrap().unwrap();
    let db = dir.join("db");
    let db = db.to_str().unwrap();
    writeln!(
        stdin,
        r#"{{"cmd":"open","path":"{db}","threads":1,"policy":"bogus"}}"#
    )
    .unwrap();
    let reply = lines.next().unwrap().unwrap();
    assert!(
        reply.contains(r#""ok":false"#) && reply.contains("recursive_policy"),
        "{reply}"
    );
    drop(stdin);
    let _ = w.wait();

    let data = dir.join("data");
    let d = data.to_str().unwrap();
    let st = Command::new(exe)
        .args([
            "gen",
            "social",
            "--persons",
            "300",
            "--knows-per-person",
            "4",
            "--out",
            d,
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(exe)
        .args([
            "run",
            "--suite",
            "recursive-social",
            "--data",
            d,
            "--threads",
            "2",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--engines",
            "kith,kith:1T1S,kith:nTkS,kith:nTkMS",
            "--tmp-dir",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("### Dispatch policies"), "{stdout}");
    assert!(
        stdout.contains("| kith-1T1S | kith-nTkS | kith-nTkMS | nTkS ÷ best policy |"),
        "{stdout}"
    );
    assert!(stdout.contains("| sp-paths-64src | 2 |"), "{stdout}");
    assert!(
        !stdout.contains("MISMATCHES") && !stdout.contains("error:"),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
