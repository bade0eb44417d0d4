//! CI: a fuzzing campaign with a fixed seed, so every run checks the same
//! cases; fails listing its findings (scripts under the target's tmp dir).

use std::path::PathBuf;

use kith_fuzz::campaign::{self, Config, Limit};

/// The master seed of the fixed campaign.
const SEED: u64 = 20_241_207;

#[test]
fn fuzz_fixed_seed() {
    // 350 cases: about 40 s on a 2-core machine in release. The cap only
    // bites on a slower machine or a debug build (which then checks fewer
    // cases).
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings/fixed-seed");
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = Config::for_ci(SEED, Limit::Queries(3500), dir.clone());
    config.max_seconds = Some(60.0);
    let report = campaign::run(&config);
    eprintln!("{}", report.summary_line());
    assert!(report.queries > 0, "the campaign ran no query");
    if !report.findings.is_empty() {
        let list: Vec<String> = report.findings.iter().map(|f| f.brief()).collect();
        panic!(
            "kith-fuzz (seed {SEED}) found {} problem(s); scripts in {}:\n{}",
            report.findings.len(),
            dir.display(),
            list.join("\n")
        );
    }
}
