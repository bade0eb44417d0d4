//! Regression guard for the openCypher TCK: every scenario listed in
//! `passing.txt` must still pass. Runs the whole `../shared/tck` directory
//! (beside the repository); skipped with a note when it is absent.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use kith_tck::{read_id_list, run_dir, Options, Outcome};

#[test]
fn listed_tck_scenarios_still_pass() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tck = manifest.join("../../../shared/tck");
    if !tck.is_dir() {
        eprintln!(
            "note: {} not found; skipping the TCK regression test",
            tck.display()
        );
        return;
    }
    let listed = read_id_list(
        &std::fs::read_to_string(manifest.join("passing.txt")).expect("read passing.txt"),
    );
    let start = Instant::now();
    let results = run_dir(&tck, &Options::default()).expect("run the TCK");
    eprintln!(
        "ran {} TCK scenarios in {:.1?}",
        results.len(),
        start.elapsed()
    );
    let by_id: HashMap<&str, &Outcome> = results
        .iter()
        .map(|r| (r.id.as_str(), &r.outcome))
        .collect();
    let mut regressions = Vec::new();
    for id in &listed {
        match by_id.get(id.as_str()) {
            Some(Outcome::Passed) => {}
            Some(other) => regressions.push(format!("{id}: {other:?}")),
            None => regressions.push(format!("{id}: scenario not found")),
        }
    }
    assert!(
        regressions.is_empty(),
        "{} TCK scenario(s) listed in crates/kith-tck/passing.txt no longer pass:\n{}",
        regressions.len(),
        regressions.join("\n")
    );
    let newly: Vec<&str> = results
        .iter()
        .filter(|r| r.outcome == Outcome::Passed && !listed.contains(&r.id))
        .map(|r| r.id.as_str())
        .collect();
    if !newly.is_empty() {
        eprintln!(
            "{} scenario(s) pass but are not in passing.txt yet; regenerate it with \
             `cargo run -p kith-tck --release -- ../shared/tck --write-passing crates/kith-tck/passing.txt`",
            newly.len()
        );
    }
}
