//! Result dumps for comparing two builds of the engine (the normal build and
//! the `kith_tiny` one, whose vectors, node groups and morsels are tiny):
//! each build runs the same generated queries on the same graphs and writes
//! one line per query; [`compare`] reports the lines that differ.
//!
//! A line is `case seed, query index, outcome`, where the outcome is the
//! result's rows in canonical form (sorted unless the query orders them,
//! doubles to six digits: the builds may add in a different order) or the
//! error's kind. A timeout or the memory limit is `skip`: the tiny build is
//! slower and may hit them where the other does not.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use kith::ErrorKind;

use crate::exec::{Outcome, Session};
use crate::graph::Graph;
use crate::query::{Features, Gen};
use crate::results::{canon_row, COARSE};
use crate::rng::{derive, Rng};

/// Longer outcomes are written as a hash of their text.
const MAX_OUTCOME: usize = 512;

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// One query's outcome as a line's last field.
pub fn outcome_text(out: &Outcome, ordered: bool) -> String {
    match out {
        Outcome::Ok(r) => {
            let mut rows: Vec<String> = r.rows.iter().map(|row| canon_row(row, COARSE)).collect();
            if !ordered {
                rows.sort();
            }
            let text = format!("{} rows: {}", rows.len(), rows.join(" ; "));
            if text.len() > MAX_OUTCOME {
                format!("{} rows, hash {:016x}", rows.len(), fnv(&text))
            } else {
                text
            }
        }
        Outcome::Err {
            kind: ErrorKind::Interrupted | ErrorKind::OutOfMemory,
            ..
        } => "skip".to_string(),
        Outcome::Err { kind, .. } => format!("error {kind:?}"),
    }
}

/// Runs `cases` cases of `queries` generated read queries each, from master
/// seed `seed`, writing one line per query to `out`.
pub fn write(
    seed: u64,
    cases: u64,
    queries: usize,
    features: &Features,
    out: &mut dyn Write,
) -> Result<u64, String> {
    let mut written = 0;
    for i in 0..cases {
        let case = derive(seed, i);
        let graph = Graph::generate(&mut Rng::new(case));
        let mut session = Session::open(None, case)?;
        if let Err((stmt, o)) = session.load(&graph) {
            writeln!(out, "{case}\tload\t{}: {}", stmt, outcome_text(&o, false))
                .map_err(|e| e.to_string())?;
            continue;
        }
        for k in 0..queries as u64 {
            let query = Gen::new(&graph, features, derive(case, k)).query();
            let o = session.run(&query.to_string());
            writeln!(out, "{case}\t{k}\t{}", outcome_text(&o, query.ordered()))
                .map_err(|e| e.to_string())?;
            written += 1;
        }
    }
    Ok(written)
}

/// The lines of two dumps that differ (a `skip` on either side matches
/// anything); each as `key: a | b`.
pub fn compare(a: &str, b: &str) -> Vec<String> {
    let parse = |text: &str| -> BTreeMap<String, String> {
        text.lines()
            .filter_map(|l| {
                let (case, rest) = l.split_once('\t')?;
                let (k, outcome) = rest.split_once('\t')?;
                Some((format!("case {case} query {k}"), outcome.to_string()))
            })
            .collect()
    };
    let (a, b) = (parse(a), parse(b));
    let mut out = Vec::new();
    for (key, x) in &a {
        match b.get(key) {
            None => out.push(format!("{key}: only in the first dump")),
            Some(y) if x != y && x != "skip" && y != "skip" => {
                out.push(format!("{key}: {x}  |  {y}"))
            }
            Some(_) => {}
        }
    }
    for key in b.keys().filter(|k| !a.contains_key(*k)) {
        out.push(format!("{key}: only in the second dump"));
    }
    out
}

/// Compares two dump files; the differences, or why they could not be read.
pub fn compare_files(a: &Path, b: &Path) -> Result<Vec<String>, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    Ok(compare(&read(a)?, &read(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_ignores_skips_and_reports_the_rest() {
        let a = "1\t0\t1 rows: 3\n1\t1\tskip\n1\t2\terror Runtime\n";
        let b = "1\t0\t1 rows: 4\n1\t1\t2 rows: 1 ; 2\n1\t2\terror Runtime\n2\t0\t0 rows: \n";
        let d = compare(a, b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("case 1 query 0") && d[0].contains("3") && d[0].contains("4"));
        assert!(d[1].contains("only in the second"));
        assert!(compare(a, a).is_empty());
    }

    #[test]
    fn the_same_build_writes_the_same_dump() {
        let f = Features::default();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        write(5, 2, 3, &f, &mut x).unwrap();
        write(5, 2, 3, &f, &mut y).unwrap();
        let (x, y) = (String::from_utf8(x).unwrap(), String::from_utf8(y).unwrap());
        assert_eq!(x.lines().count(), 6);
        assert!(compare(&x, &y).is_empty());
    }
}
