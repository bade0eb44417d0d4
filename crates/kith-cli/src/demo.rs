//! `kith --demo`: a small social graph (bundled CSVs) and sample queries.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::format::{Format, TableStyle};
use crate::{run_script, Execute, Outcome};

/// `id,name,age` for 20 people.
pub const PERSONS_CSV: &str = include_str!("../demo/persons.csv");
/// `from,to,since,weight` for 50 directed `Knows` edges (by person id).
pub const KNOWS_CSV: &str = include_str!("../demo/knows.csv");

/// Sample queries, each with a one-line description. They stick to
/// MATCH/WHERE/RETURN with aggregates and LIMIT.
pub const QUERIES: &[(&str, &str)] = &[
    ("How many people?", "MATCH (p:Person) RETURN count(*) AS people"),
    (
        "Age range",
        "MATCH (p:Person) RETURN min(p.age) AS youngest, max(p.age) AS oldest, avg(p.age) AS mean_age",
    ),
    (
        "Friendships of people over 30, and their total weight",
        "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*) AS edges, sum(k.weight) AS total_weight",
    ),
    (
        "Friends per person (first 5)",
        "MATCH (a:Person)-[:Knows]->(b:Person) RETURN a.name, count(*) AS friends LIMIT 5",
    ),
    (
        "Friendships since 2020 (first 5)",
        "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE k.since >= 2020 RETURN a.name, b.name, k.since LIMIT 5",
    ),
    (
        "Friend-of-a-friend paths",
        "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) RETURN count(*) AS two_hop_paths",
    ),
];

/// A path as a Cypher string literal body.
fn quote_path(path: &Path) -> String {
    // Forward slashes work on every platform and need no escaping.
    path.to_string_lossy()
        .replace('\\', "/")
        .replace('\'', "\\'")
}

/// The DDL and COPY statements that load the demo graph from the given files.
pub fn setup_statements(persons: &Path, knows: &Path) -> Vec<String> {
    vec![
        "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))".into(),
        "CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE)".into(),
        format!("COPY Person FROM '{}' (HEADER=true)", quote_path(persons)),
        format!("COPY Knows FROM '{}' (HEADER=true)", quote_path(knows)),
    ]
}

/// A temporary directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> io::Result<TempDir> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("kith-demo-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one statement of the demo: echoes it, then its result.
fn step(
    exec: &dyn Execute,
    statement: &str,
    format: Format,
    style: TableStyle,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Outcome {
    if writeln!(out, "kith> {statement};").is_err() {
        return Outcome::OutputClosed;
    }
    run_script(exec, statement, format, style, out, err, || {})
}

/// Loads the demo graph and runs the sample queries, printing each.
pub fn run(exec: &dyn Execute, format: Format) -> Outcome {
    let style = if io::stdout().is_terminal() {
        TableStyle::Terminal
    } else {
        TableStyle::Ascii
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut err = io::stderr();
    let dir = match TempDir::new() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("Cannot create a directory for the demo data: {e}");
            return Outcome::Failed;
        }
    };
    let persons = dir.0.join("persons.csv");
    let knows = dir.0.join("knows.csv");
    let written =
        std::fs::write(&persons, PERSONS_CSV).and_then(|()| std::fs::write(&knows, KNOWS_CSV));
    if let Err(e) = written {
        eprintln!("Cannot write the demo data to {}: {e}", dir.0.display());
        return Outcome::Failed;
    }
    run_demo(exec, format, style, &persons, &knows, &mut out, &mut err)
}

fn run_demo(
    exec: &dyn Execute,
    format: Format,
    style: TableStyle,
    persons: &Path,
    knows: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Outcome {
    let _ = writeln!(out, "// Loading the demo graph: 20 people, 50 Knows edges");
    for stmt in setup_statements(persons, knows) {
        let outcome = step(exec, &stmt, format, style, out, err);
        if outcome != Outcome::Ok {
            return outcome;
        }
    }
    for (title, query) in QUERIES {
        if writeln!(out, "\n// {title}").is_err() {
            return Outcome::OutputClosed;
        }
        let outcome = step(exec, query, format, style, out, err);
        if outcome != Outcome::Ok {
            return outcome;
        }
    }
    let _ = out.flush();
    Outcome::Ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith::QueryResult;
    use std::cell::RefCell;
    use std::collections::HashSet;

    fn records(csv: &str) -> Vec<Vec<&str>> {
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect()
    }

    #[test]
    fn persons_csv_is_well_formed() {
        assert!(PERSONS_CSV.starts_with("id,name,age\n"));
        let rows = records(PERSONS_CSV);
        assert_eq!(rows.len(), 20);
        let mut ids = HashSet::new();
        for r in &rows {
            assert_eq!(r.len(), 3, "{r:?}");
            assert!(ids.insert(r[0].parse::<i64>().unwrap()));
            assert!(!r[1].is_empty());
            let age: i32 = r[2].parse().unwrap();
            assert!((0..130).contains(&age));
        }
    }

    #[test]
    fn knows_csv_references_existing_people() {
        assert!(KNOWS_CSV.starts_with("from,to,since,weight\n"));
        let ids: HashSet<i64> = records(PERSONS_CSV)
            .iter()
            .map(|r| r[0].parse().unwrap())
            .collect();
        let rows = records(KNOWS_CSV);
        assert_eq!(rows.len(), 50);
        let mut pairs = HashSet::new();
        for r in &rows {
            assert_eq!(r.len(), 4, "{r:?}");
            let (a, b): (i64, i64) = (r[0].parse().unwrap(), r[1].parse().unwrap());
            assert!(ids.contains(&a) && ids.contains(&b));
            assert_ne!(a, b, "no self-loops");
            assert!(pairs.insert((a, b)), "no duplicate edges");
            r[2].parse::<i32>().unwrap();
            r[3].parse::<f64>().unwrap();
        }
    }

    #[test]
    fn statements_are_single_and_quote_paths() {
        let stmts = setup_statements(Path::new("/tmp/x/persons.csv"), Path::new("C:\\t\\o'k.csv"));
        assert_eq!(
            stmts[2],
            "COPY Person FROM '/tmp/x/persons.csv' (HEADER=true)"
        );
        assert_eq!(stmts[3], "COPY Knows FROM 'C:/t/o\\'k.csv' (HEADER=true)");
        for s in stmts
            .iter()
            .map(String::as_str)
            .chain(QUERIES.iter().map(|q| q.1))
        {
            assert_eq!(kith::split_statements(s), [s], "{s}");
            assert!(!s.contains("ORDER BY"), "{s}");
        }
    }

    struct Recorder(RefCell<Vec<String>>);

    impl Execute for Recorder {
        fn execute(&self, statement: &str) -> kith::Result<QueryResult> {
            self.0.borrow_mut().push(statement.to_string());
            Ok(QueryResult::default())
        }
    }

    #[test]
    fn demo_runs_setup_then_queries_and_echoes_them() {
        let rec = Recorder(RefCell::new(Vec::new()));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let outcome = run_demo(
            &rec,
            Format::Table,
            TableStyle::Ascii,
            Path::new("/p.csv"),
            Path::new("/k.csv"),
            &mut out,
            &mut err,
        );
        assert_eq!(outcome, Outcome::Ok);
        let seen = rec.0.into_inner();
        assert_eq!(seen.len(), 4 + QUERIES.len());
        assert!(seen[0].starts_with("CREATE NODE TABLE Person"));
        assert_eq!(seen[4], QUERIES[0].1);
        let out = String::from_utf8(out).unwrap();
        for q in QUERIES {
            assert!(out.contains(&format!("kith> {};", q.1)), "{out}");
        }
    }

    #[test]
    fn demo_stops_at_first_failure() {
        struct Failing;
        impl Execute for Failing {
            fn execute(&self, _: &str) -> kith::Result<QueryResult> {
                Err(kith::Error::not_supported("no engine"))
            }
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let outcome = run_demo(
            &Failing,
            Format::Csv,
            TableStyle::Ascii,
            Path::new("/p.csv"),
            Path::new("/k.csv"),
            &mut out,
            &mut err,
        );
        assert_eq!(outcome, Outcome::Failed);
        assert!(String::from_utf8(err).unwrap().contains("no engine"));
    }
}
