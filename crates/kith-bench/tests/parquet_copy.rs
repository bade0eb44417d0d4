//! The Parquet files of `gen --format both` load into KithDB exactly like
//! the CSV files: same row counts per table, and every query of the suites
//! that use the data set answers the same on both databases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kith::{Config, Connection, Database};
use kith_bench::nn50::{self, Nn50Params};
use kith_bench::parquet_out;
use kith_bench::runner::DataInfo;
use kith_bench::social::{self, Social, SocialParams};
use kith_bench::suite::{self, Dataset, LoadFormat, SUITES};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kith-bench-pqcopy-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn rows(conn: &Connection, q: &str) -> Vec<String> {
    let res = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut out: Vec<String> = res
        .rows()
        .map(|r| {
            r.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    out.sort();
    out
}

/// The suite of `dataset` that loads the most of its tables (some load
/// only the ones their queries read).
fn fullest_suite(dataset: Dataset) -> &'static suite::Suite {
    SUITES
        .iter()
        .filter(|s| s.dataset == dataset)
        .max_by_key(|s| s.loads.len())
        .unwrap()
}

fn load(dir: &Path, dataset: Dataset, format: LoadFormat) -> (Database, Connection) {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    let s = fullest_suite(dataset);
    for stmt in s.ddl {
        conn.query(stmt).unwrap();
    }
    let data = dir.to_string_lossy().to_string();
    for l in s.loads {
        let q = suite::with_data_dir(&l.cypher(format), &data);
        conn.query(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    (db, conn)
}

fn check(dir: &Path, dataset: Dataset) {
    let (_a, csv) = load(dir, dataset, LoadFormat::Csv);
    let (_b, pq) = load(dir, dataset, LoadFormat::Parquet);
    let s = fullest_suite(dataset);
    // Row counts per table, from the DDL's table names.
    for l in s.loads {
        let is_rel = s
            .ddl
            .iter()
            .any(|d| d.starts_with(&format!("CREATE REL TABLE {}(", l.table)));
        let q = if is_rel {
            format!("MATCH ()-[r:{}]->() RETURN count(*)", l.table)
        } else {
            format!("MATCH (n:{}) RETURN count(*)", l.table)
        };
        let (x, y) = (rows(&csv, &q), rows(&pq, &q));
        assert_eq!(x, y, "{q}");
        assert_ne!(x, vec!["0".to_string()], "{q}: nothing loaded");
    }
    // Every query of every suite on this data set.
    let params: BTreeMap<String, String> = DataInfo::load(dir).params();
    let data = dir.to_string_lossy().to_string();
    let mut compared = 0;
    for s in SUITES.iter().filter(|s| s.dataset == dataset) {
        for q in s.queries {
            let text = suite::bind(q.cypher, &data, &params).unwrap();
            let (Ok(x), Ok(y)) = (csv.query(&text), pq.query(&text)) else {
                continue; // not supported by the engine yet: nothing to compare
            };
            let fmt = |r: kith::QueryResult| {
                let mut v: Vec<String> = r
                    .rows()
                    .map(|row| {
                        row.iter()
                            .map(|v| v.to_string())
                            .collect::<Vec<_>>()
                            .join("|")
                    })
                    .collect();
                v.sort();
                v
            };
            let (x, y) = (fmt(x), fmt(y));
            assert!(!x.is_empty(), "{}: no rows", q.name);
            assert_eq!(x, y, "{}: {}", q.name, text);
            compared += 1;
        }
    }
    assert!(compared >= 5, "only {compared} queries ran on both");
}

#[test]
fn nn50_parquet_loads_like_csv() {
    let dir = tmp("nn50");
    let p = Nn50Params::new(3000, 5).unwrap();
    nn50::generate(&dir, &p, 2).unwrap();
    parquet_out::convert_dir(&dir, Dataset::Nn50.files(), 2, true).unwrap();
    check(&dir, Dataset::Nn50);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn social_parquet_loads_like_csv() {
    let dir = tmp("social");
    let s = Social::new(SocialParams::new(300, 7));
    social::generate(&dir, &s, 2).unwrap();
    parquet_out::convert_dir(&dir, Dataset::Social.files(), 2, true).unwrap();
    check(&dir, Dataset::Social);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rmat_parquet_loads_like_csv() {
    use kith_bench::gen::{self, Rmat, RmatParams};
    let dir = tmp("rmat");
    let p = RmatParams::graph500(9, 8, 3);
    gen::generate(&dir, &Rmat::new(p.clone()), gen::rmat_meta(&p), 2).unwrap();
    parquet_out::convert_dir(&dir, Dataset::PersonKnows.files(), 2, true).unwrap();
    // Weights are parsed by each reader: the sum must agree to the last bit.
    let (_a, csv) = load(&dir, Dataset::PersonKnows, LoadFormat::Csv);
    let (_b, pq) = load(&dir, Dataset::PersonKnows, LoadFormat::Parquet);
    let q = "MATCH (a:Person)-[k:Knows]->(b:Person) RETURN count(*), sum(k.weight), sum(k.since), sum(a.age), min(b.name)";
    assert_eq!(rows(&csv, q), rows(&pq, q));
    let _ = std::fs::remove_dir_all(&dir);
}
