//! The executor's physical plan as EXPLAIN and PROFILE show it: hash-join
//! build sides are pipelines run before the pipeline that probes them (and
//! EXPLAIN runs none of them), and the rewrites that fire are listed per
//! pipeline, the same in EXPLAIN as in the run PROFILE reports.

mod common;

use kith::{Connection, Value};

/// A graph of 60 nodes (`P`, ids 0..60, `g` = id % 5) and rels `i -> i+1`
/// and `i -> 2i % 60`.
fn graph(threads: usize) -> (kith::Database, String) {
    let db = common::memory_db(threads);
    let setup = "CREATE NODE TABLE P(id INT64, g INT64, PRIMARY KEY(id)); \
         CREATE REL TABLE R(FROM P TO P); \
         UNWIND range(0, 59) AS i CREATE (:P {id: i, g: i % 5}); \
         MATCH (a:P), (b:P) WHERE b.id = (a.id + 1) % 60 OR b.id = (2 * a.id) % 60 \
         CREATE (a)-[:R]->(b)";
    (db, setup.to_string())
}

fn rows(conn: &Connection, q: &str) -> Vec<Vec<Value>> {
    let mut r: Vec<Vec<Value>> = conn.query(q).unwrap().rows().collect();
    r.sort_by_key(|row| format!("{row:?}"));
    r
}

/// The rewrite lists of a report (EXPLAIN's `rewrites: a, b` lines or
/// PROFILE's `pipeline N rewrites: a, b`), sorted.
fn rewrite_lists(text: &str) -> Vec<String> {
    let mut lists: Vec<String> = text
        .lines()
        .filter_map(|l| {
            l.split_once("rewrites: ")
                .map(|(_, names)| names.trim().to_string())
        })
        .collect();
    lists.sort();
    lists
}

#[test]
fn explain_resolves_build_sides_without_running_them() {
    let (db, setup) = graph(2);
    let conn = Connection::new(&db);
    conn.query(&setup).unwrap();
    // The build key divides by zero: running the build side fails, so
    // EXPLAIN succeeding shows that it runs nothing.
    let q = "MATCH (a:P), (b:P) WHERE a.id = b.id / 0 RETURN a.id, b.id";
    assert!(conn.query(q).is_err());
    let text = common::explain(&conn, q);
    let physical = text
        .split_once("Physical pipelines")
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        physical.contains("HashJoin (unique keys: decided at run time)"),
        "{text}"
    );
    assert!(
        physical.contains("pipeline 2 (build side of pipeline 1, runs before it):"),
        "{text}"
    );
}

#[test]
fn build_sides_run_first_with_the_same_rows() {
    for threads in [1, 2] {
        let (db, setup) = graph(threads);
        let conn = Connection::new(&db);
        conn.query(&setup).unwrap();
        // A hash join on unique keys (probed by batch), one on repeated
        // keys, a cross product and a left outer join, each against the
        // same answer written without a join.
        let cases = [
            (
                "MATCH (a:P), (b:P) WHERE a.id = b.id + 1 RETURN a.id, b.id",
                "MATCH (a:P) WHERE a.id >= 1 RETURN a.id, a.id - 1",
            ),
            (
                "MATCH (a:P), (b:P) WHERE a.g = b.g AND a.id < 3 RETURN count(*), sum(b.id)",
                "MATCH (a:P) WHERE a.id < 3 RETURN 12 * count(*), sum(a.g * 12 + 5 * 66)",
            ),
            (
                "MATCH (a:P), (b:P) WHERE a.id < 2 AND b.id < 3 RETURN count(*)",
                "RETURN 6",
            ),
            (
                "MATCH (a:P) WHERE a.id < 4 OPTIONAL MATCH (b:P) WHERE b.id = a.id * 20 RETURN a.id, b.id",
                "UNWIND [[0, 0], [1, 20], [2, 40], [3, NULL]] AS r RETURN r[0], r[1]",
            ),
        ];
        for (q, same) in cases {
            assert_eq!(rows(&conn, q), rows(&conn, same), "{threads} threads: {q}");
            let profile = common::profile(&conn, q);
            assert!(profile.contains("ScanNodes P"), "{profile}");
        }
    }
}

#[test]
fn profile_and_explain_list_the_same_rewrites() {
    for threads in [1, 2] {
        let (db, setup) = graph(threads);
        let conn = Connection::new(&db);
        conn.query(&setup).unwrap();
        let profile = common::profile(&conn, "MATCH (a:P)-[:R]->(b:P) RETURN count(*)");
        assert!(
            profile.contains("pipeline 1 rewrites: count-last-extend, count-whole-rel-table"),
            "{profile}"
        );
        for q in [
            "MATCH (a:P)-[:R]->(b:P) RETURN count(*)",
            "MATCH (a:P)-[:R]->(b:P)-[:R]->(c:P) RETURN count(*)",
            "MATCH (a:P)-[:R]->(b:P) RETURN a.id, count(*)",
            "MATCH (a:P)-[:R]->(b:P)-[:R]->(c:P) RETURN a.g, count(c)",
            "MATCH (a:P {id: 3})-[:R]->(b:P)-[:R]->(c:P) RETURN c.id",
            "MATCH (a:P)-[:R]->(b:P) WITH b, count(*) AS n MATCH (b)-[:R]->(c:P) RETURN sum(n)",
        ] {
            let explained = rewrite_lists(&common::explain(&conn, q));
            let profiled = rewrite_lists(&common::profile(&conn, q));
            assert_eq!(explained, profiled, "{threads} threads: {q}");
        }
    }
}
