//! NetworKit as the BFS reference: on tiny generated graphs its answers to
//! the shortest-path count and length queries equal KithDB's, walking the
//! rels one way (`recursive`, an R-MAT graph with self loops and duplicate
//! edges kept) and both ways (`recursive-social`). NetworKit is optional:
//! without it the comparison is skipped, saying why, and a run that asks
//! for it reports the engine as not run instead of failing.

use std::path::Path;
use std::process::{Command, Output};

use kith_bench::json::Json;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_kith-bench")
}

fn gen(args: &[&str]) {
    let st = Command::new(exe()).arg("gen").args(args).status().unwrap();
    assert!(st.success(), "gen {args:?}");
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(exe()).arg("run").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Why NetworKit cannot run here, if it cannot.
fn networkit_missing() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import networkit"])
        .output()
    {
        Err(e) => Some(format!("python3 cannot start: {e}")),
        Ok(o) if !o.status.success() => Some(format!(
            "`python3 -c \"import networkit\"` failed: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(_) => None,
    }
}

/// Runs `suite` on kith and networkit at 1 and 2 threads and checks that
/// every query both ran and that their rows are equal.
fn compare(suite: &str, data: &Path, queries: &str, tmp: &Path) {
    let json_path = tmp.join(format!("{suite}.json"));
    let out = run(&[
        "--suites",
        suite,
        "--data",
        data.to_str().unwrap(),
        "--engines",
        "kith,networkit",
        "--threads",
        "1,2",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--queries",
        queries,
        "--tmp-dir",
        tmp.to_str().unwrap(),
        "--json",
        json_path.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("| networkit median ms | networkit/kith ratio |"),
        "{stdout}"
    );
    assert!(!stdout.contains("MISMATCH"), "{stdout}");
    assert!(!stdout.contains("error:"), "{stdout}");
    assert!(!stdout.contains("did not run"), "{stdout}");
    let report = kith_bench::json::parse(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let configs = report.get("configs").unwrap().as_arr().unwrap();
    assert_eq!(configs.len(), 4, "{stdout}");
    let rows = |engine: &str, threads: i64| -> Vec<(String, Json)> {
        let c = configs
            .iter()
            .find(|c| {
                c.get("engine").and_then(Json::as_str) == Some(engine)
                    && c.get("threads").and_then(Json::as_i64) == Some(threads)
            })
            .unwrap_or_else(|| panic!("no {engine} at {threads} threads"));
        c.get("queries")
            .unwrap()
            .as_arr()
            .unwrap()
            .iter()
            .map(|q| {
                let name = q.get("name").and_then(Json::as_str).unwrap().to_string();
                (name, q.get("rows").cloned().unwrap_or(Json::Null))
            })
            .collect()
    };
    for threads in [1, 2] {
        let kith = rows("kith", threads);
        let nk = rows("networkit", threads);
        assert!(kith.len() >= 3, "{suite}: {kith:?}");
        assert_eq!(kith, nk, "{suite} at {threads} threads");
        for (name, r) in &kith {
            let count = r.as_arr().and_then(|r| r[0].as_arr()).map(|r| &r[0]);
            assert!(
                count.and_then(Json::as_i64).is_some_and(|c| c > 0),
                "{suite}/{name}: {r}"
            );
        }
    }
}

#[test]
fn networkit_answers_equal_kith() {
    if let Some(why) = networkit_missing() {
        eprintln!("skipping networkit_answers_equal_kith: {why}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("kith-bench-test-nk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let rmat = dir.join("rmat");
    let social = dir.join("social");
    let rmat_dir = rmat.to_str().unwrap();
    let social_dir = social.to_str().unwrap();
    gen(&[
        "rmat",
        "--scale",
        "8",
        "--edge-factor",
        "4",
        "--out",
        rmat_dir,
    ]);
    gen(&[
        "social",
        "--persons",
        "300",
        "--knows-per-person",
        "4",
        "--out",
        social_dir,
    ]);
    compare("recursive", &rmat, "sp-lengths,sp-count", &dir);
    compare("recursive-social", &social, "sp-lengths", &dir);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A `python3` that cannot import networkit (a module of that name that
/// fails) makes the engine a "did not run" line; KithDB still runs.
#[test]
#[cfg(unix)]
fn without_networkit_the_engine_is_reported_not_run() {
    if Command::new("python3").args(["-c", "1"]).status().is_err() {
        eprintln!("skipping: python3 not available");
        return;
    }
    let dir = std::env::temp_dir().join(format!("kith-bench-test-no-nk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
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
    let data = dir.join("rmat");
    gen(&[
        "rmat",
        "--scale",
        "6",
        "--edge-factor",
        "4",
        "--out",
        data.to_str().unwrap(),
    ]);
    let out = run(&[
        "--suites",
        "recursive",
        "--data",
        data.to_str().unwrap(),
        "--engines",
        "kith,networkit",
        "--threads",
        "1",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--queries",
        "sp-count-1src",
        "--python",
        python.to_str().unwrap(),
        "--tmp-dir",
        dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("networkit (1 threads) did not run: networkit not installed"),
        "{stdout}"
    );
    assert!(stdout.contains("| sp-count-1src | 1 | "), "{stdout}");
    assert!(!stdout.contains("MISMATCH"), "{stdout}");
    std::fs::remove_dir_all(dir).unwrap();
}
