//! Subqueries that only count one node's rels in one rel table (`EXISTS`,
//! `COUNT`, pattern predicates) are answered from the CSR degrees instead
//! of running: checked against a reference count over the edge list, and
//! against the same subquery with a WHERE that keeps it running, on rels
//! loaded by COPY, created one by one, deleted, and written inside an open
//! transaction, in both directions and for a rel table between two node
//! tables.

use std::fmt::Write as _;

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

/// A query the degrees answer, the same counted by running it, and the
/// expected (id, count) rows.
type Case = (String, String, Vec<(i64, i64)>);

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        Value::Bool(b) => i64::from(*b),
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// `(id, value)` rows of `q`, sorted.
fn pairs(conn: &Connection, q: &str) -> Vec<(i64, i64)> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut rows: Vec<(i64, i64)> = r.rows().map(|row| (int(&row[0]), int(&row[1]))).collect();
    rows.sort();
    rows
}

fn profile_text(conn: &Connection, q: &str) -> String {
    let r = conn
        .query(&format!("PROFILE {q}"))
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    r.rows()
        .map(|row| format!("{row:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn degree_subqueries_match_reference_counts() {
    let dir = std::env::temp_dir().join(format!("kith-degree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        max_threads: Some(2),
        ..Config::default()
    };
    let db = Database::open(&dir.join("db").to_string_lossy(), config).unwrap();
    let conn = Connection::new(&db);
    let (n, m) = (60usize, 20usize);
    conn.query(
        "CREATE NODE TABLE N(id INT64, PRIMARY KEY(id)); \
         CREATE NODE TABLE M(id INT64, PRIMARY KEY(id)); \
         CREATE REL TABLE E(FROM N TO N, k INT64); \
         CREATE REL TABLE F(FROM N TO M);",
    )
    .unwrap();
    conn.query(&format!(
        "UNWIND range(0, {}) AS i CREATE (:N {{id: i}})",
        n - 1
    ))
    .unwrap();
    conn.query(&format!(
        "UNWIND range(0, {}) AS i CREATE (:M {{id: i}})",
        m - 1
    ))
    .unwrap();
    let mut r = Lcg(99);
    // E: skewed sources, self loops and parallel rels; F: into M.
    let mut e: Vec<(usize, usize, i64)> = (0..400)
        .map(|k| {
            let a = (r.below(n as u64) * r.below(n as u64) / n as u64) as usize;
            (a, r.below(n as u64) as usize, k)
        })
        .collect();
    let f: Vec<(usize, usize)> = (0..120)
        .map(|_| (r.below(n as u64) as usize, r.below(m as u64) as usize))
        .collect();
    let csv = dir.join("e.csv");
    let mut text = String::new();
    for &(a, b, k) in &e[..250] {
        writeln!(text, "{a},{b},{k}").unwrap();
    }
    std::fs::write(&csv, text).unwrap();
    conn.query(&format!("COPY E FROM '{}'", csv.display()))
        .unwrap();
    for &(a, b, k) in &e[250..] {
        conn.query(&format!(
            "MATCH (a:N {{id: {a}}}), (b:N {{id: {b}}}) CREATE (a)-[:E {{k: {k}}}]->(b)"
        ))
        .unwrap();
    }
    for &(a, b) in &f {
        conn.query(&format!(
            "MATCH (a:N {{id: {a}}}), (b:M {{id: {b}}}) CREATE (a)-[:F]->(b)"
        ))
        .unwrap();
    }
    // Deleted rels, loaded and created ones.
    conn.query("MATCH ()-[x:E]->() WHERE x.k % 7 = 3 DELETE x")
        .unwrap();
    e.retain(|&(_, _, k)| k % 7 != 3);

    let check = |e: &[(usize, usize, i64)], f: &[(usize, usize)], stage: &str| {
        let count = |pick: &dyn Fn(&(usize, usize)) -> Option<usize>,
                     rels: &[(usize, usize)],
                     size: usize| {
            let mut c = vec![0i64; size];
            for x in rels {
                if let Some(i) = pick(x) {
                    c[i] += 1;
                }
            }
            c.into_iter()
                .enumerate()
                .map(|(i, v)| (i as i64, v))
                .collect::<Vec<_>>()
        };
        let e2: Vec<(usize, usize)> = e.iter().map(|&(a, b, _)| (a, b)).collect();
        let out_e = count(&|&(a, _)| Some(a), &e2, n);
        let in_e = count(&|&(_, b)| Some(b), &e2, n);
        let out_f = count(&|&(a, _)| Some(a), f, n);
        let in_f = count(&|&(_, b)| Some(b), f, m);
        let exists = |c: &[(i64, i64)]| {
            c.iter()
                .map(|&(i, v)| (i, i64::from(v > 0)))
                .collect::<Vec<_>>()
        };
        let cases: Vec<Case> = vec![
            (
                "MATCH (a:N) RETURN a.id, COUNT { MATCH (a)-[:E]->() }".into(),
                "MATCH (a:N) RETURN a.id, COUNT { MATCH (a)-[x:E]->() WHERE x.k >= 0 }".into(),
                out_e.clone(),
            ),
            (
                "MATCH (a:N) RETURN a.id, COUNT { MATCH (a)<-[:E]-(:N) }".into(),
                "MATCH (a:N) RETURN a.id, COUNT { MATCH (a)<-[:E]-(b:N) WHERE b.id >= 0 }".into(),
                in_e.clone(),
            ),
            (
                "MATCH (a:N) RETURN a.id, EXISTS { MATCH (a)-[:E]->() }".into(),
                "MATCH (a:N) RETURN a.id, EXISTS { MATCH (a)-[:E]->(b) WHERE b.id >= 0 }".into(),
                exists(&out_e),
            ),
            (
                "MATCH (a:N) RETURN a.id, COUNT { MATCH (a)-[:F]->(:M) }".into(),
                "MATCH (a:N) RETURN a.id, COUNT { MATCH (a)-[:F]->(b:M) WHERE b.id >= 0 }".into(),
                out_f.clone(),
            ),
            (
                "MATCH (b:M) RETURN b.id, EXISTS { MATCH (b)<-[:F]-() }".into(),
                "MATCH (b:M) RETURN b.id, EXISTS { MATCH (b)<-[:F]-(a) WHERE a.id >= 0 }".into(),
                exists(&in_f),
            ),
        ];
        for (fast, slow, want) in &cases {
            assert_eq!(&pairs(&conn, fast), want, "{stage}: {fast}");
            assert_eq!(&pairs(&conn, slow), want, "{stage}: {slow}");
            assert!(
                profile_text(&conn, fast).contains("Subquery by degree"),
                "{stage}: {fast}"
            );
            assert!(
                !profile_text(&conn, slow).contains("Subquery by degree"),
                "{stage}: {slow}"
            );
        }
        // Pattern predicates and NOT EXISTS filter by the same degrees.
        let q = "MATCH (a:N) WHERE (a)-[:E]->() RETURN count(*), 0";
        let with = out_e.iter().filter(|x| x.1 > 0).count() as i64;
        assert_eq!(pairs(&conn, q), vec![(with, 0)], "{stage}: {q}");
        let q = "MATCH (a:N) WHERE NOT EXISTS { MATCH (a)-[:E]->() } RETURN count(*), 0";
        assert_eq!(pairs(&conn, q), vec![(n as i64 - with, 0)], "{stage}: {q}");
    };
    check(&e, &f, "committed");
    // Inside an open transaction the subquery sees its own writes.
    conn.query("BEGIN TRANSACTION").unwrap();
    conn.query("MATCH (a:N {id: 5}), (b:N {id: 6}) CREATE (a)-[:E {k: 1000}]->(b)")
        .unwrap();
    conn.query("MATCH ()-[x:E]->() WHERE x.k % 7 = 5 DELETE x")
        .unwrap();
    let mut e2 = e.clone();
    e2.push((5, 6, 1000));
    e2.retain(|&(_, _, k)| k % 7 != 5);
    check(&e2, &f, "in a transaction");
    conn.query("ROLLBACK").unwrap();
    check(&e, &f, "after rollback");
    conn.query("CHECKPOINT").unwrap();
    check(&e, &f, "after checkpoint");
    drop(conn);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
