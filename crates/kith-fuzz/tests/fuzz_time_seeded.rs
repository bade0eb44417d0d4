//! CI: a fuzzing campaign seeded from the clock, so every run explores new
//! cases; prints its seed first and fails with it (rerun with
//! `kith-fuzz --seed S`, or one case with `--case`).

use std::path::PathBuf;

use kith_fuzz::campaign::{self, Config, Limit};

#[test]
fn fuzz_time_seeded() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let seed = kith_fuzz::rng::mix(nanos);
    eprintln!("kith-fuzz: time-seeded campaign, seed {seed}");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings/time-seeded");
    let config = Config::for_ci(seed, Limit::Seconds(45.0), dir.clone());
    let report = campaign::run(&config);
    eprintln!("{}", report.summary_line());
    assert!(report.queries > 0, "the campaign ran no query");
    if !report.findings.is_empty() {
        let list: Vec<String> = report.findings.iter().map(|f| f.brief()).collect();
        panic!(
            "kith-fuzz found {} problem(s) with seed {seed} (rerun: kith-fuzz --seed {seed}); scripts in {}:\n{}",
            report.findings.len(),
            dir.display(),
            list.join("\n")
        );
    }
}
