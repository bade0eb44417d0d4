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
