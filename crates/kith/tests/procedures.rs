//! Procedures registered through the Rust API and called with `CALL`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kith::{
    Config, Connection, Database, ErrorKind, LogicalType, Procedure, ProcedureColumn,
    ProcedureType, Value,
};

fn rows(conn: &Connection, q: &str) -> Vec<Vec<Value>> {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    r.rows().collect()
}

fn int(t: &str) -> ProcedureColumn {
    ProcedureColumn::new(t, ProcedureType::Of(LogicalType::Int64))
}

/// `test.range(n)`: the rows (i, i * i) for i in 0..n.
fn range() -> Procedure {
    Procedure::new(
        "test.range",
        vec![int("n")],
        vec![int("i"), int("sq")],
        |args| {
            let n = args[0].as_i64().unwrap_or(0);
            Ok((0..n)
                .map(|i| vec![Value::Int64(i), Value::Int64(i * i)])
                .collect())
        },
    )
}

fn db() -> Database {
    let db = Database::open(":memory:", Config::default()).unwrap();
    db.register_procedure(range());
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE P(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("UNWIND range(0, 9) AS x CREATE (:P {id: x})")
        .unwrap();
    db
}

#[test]
fn standalone_calls_return_every_output_in_the_procedure_order() {
    let db = db();
    let conn = Connection::new(&db);
    let r = conn.query("CALL test.range(3)").unwrap();
    assert_eq!(r.column_names(), ["i", "sq"]);
    assert_eq!(
        rows(&conn, "CALL test.range(3)"),
        (0..3)
            .map(|i| vec![Value::Int64(i), Value::Int64(i * i)])
            .collect::<Vec<_>>()
    );
    // YIELD picks and renames; WHERE filters.
    assert_eq!(
        rows(&conn, "CALL test.range(5) YIELD sq AS s, i WHERE i > 2"),
        vec![
            vec![Value::Int64(9), Value::Int64(3)],
            vec![Value::Int64(16), Value::Int64(4)]
        ]
    );
    // Arguments from parameters: `CALL p` without parentheses.
    let r = conn
        .query_with_params("CALL test.range", &[("n", Value::Int64(2))])
        .unwrap();
    assert_eq!(r.num_rows(), 2);
}

#[test]
fn in_query_calls_run_once_per_row() {
    let db = db();
    let conn = Connection::new(&db);
    let got = rows(
        &conn,
        "MATCH (p:P) WHERE p.id < 4 CALL test.range(p.id) YIELD sq RETURN p.id AS id, sum(sq) AS s ORDER BY id",
    );
    let want: Vec<Vec<Value>> = (0..4i64)
        .map(|id| vec![Value::Int64(id), Value::Int64((0..id).map(|i| i * i).sum())])
        .collect();
    // An id whose range is empty has no rows, so no group.
    let want: Vec<_> = want
        .into_iter()
        .filter(|r| r[0] != Value::Int64(0))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        rows(
            &conn,
            "UNWIND [2, 3] AS n CALL test.range(n) YIELD i RETURN count(*)"
        ),
        vec![vec![Value::Int64(5)]]
    );
}

#[test]
fn procedures_without_outputs_keep_each_row_and_are_called_per_row() {
    let db = db();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    db.register_procedure(Procedure::new(
        "test.touch",
        Vec::new(),
        Vec::new(),
        move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(Vec::new())
        },
    ));
    let conn = Connection::new(&db);
    assert_eq!(
        rows(&conn, "MATCH (p:P) CALL test.touch() RETURN count(*)"),
        vec![vec![Value::Int64(10)]]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 10);
    let r = conn.query("CALL test.touch()").unwrap();
    assert_eq!(r.num_rows(), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 11);
}

#[test]
fn bad_calls_are_errors_that_name_the_problem() {
    let db = db();
    db.register_procedure(Procedure::new(
        "test.fails",
        Vec::new(),
        vec![int("x")],
        |_| Err(kith::Error::runtime("the body said no")),
    ));
    db.register_procedure(Procedure::new(
        "test.panics",
        Vec::new(),
        vec![int("x")],
        |_| panic!("a bug in the body"),
    ));
    let conn = Connection::new(&db);
    let err = |q: &str| {
        conn.query(q)
            .err()
            .unwrap_or_else(|| panic!("{q} succeeded"))
    };
    let e = err("CALL test.nope()");
    assert!(
        e.message.contains("procedure 'test.nope' does not exist"),
        "{e}"
    );
    let e = err("CALL test.range(1, 2)");
    assert!(e.message.contains("takes 1 argument(s), got 2"), "{e}");
    let e = err("CALL test.range('x')");
    assert_eq!(e.kind, ErrorKind::Type, "{e}");
    let e = err("CALL test.range(1) YIELD nope RETURN nope");
    assert!(e.message.contains("has no output 'nope'"), "{e}");
    let e = err("CALL test.range(1) YIELD i, sq AS i RETURN i");
    assert_eq!(e.kind, ErrorKind::Semantic, "{e}");
    let e = err("WITH 1 AS i CALL test.range(1) YIELD i RETURN i");
    assert!(e.message.contains("already defined"), "{e}");
    let e = err("CALL test.range(1) YIELD * RETURN i");
    assert_eq!(e.kind, ErrorKind::Syntax, "{e}");
    let e = err("MATCH (p:P) CALL test.range(count(p)) YIELD i RETURN i");
    assert!(e.message.contains("not allowed"), "{e}");
    let e = err("CALL test.range YIELD i RETURN i");
    assert!(e.message.contains("explicitly"), "{e}");
    let e = err("CALL test.fails()");
    assert!(e.message.contains("the body said no"), "{e}");
    let e = err("CALL test.panics()");
    assert_eq!(e.kind, ErrorKind::Internal, "{e}");
    // The database still answers.
    assert_eq!(rows(&conn, "CALL test.range(1)").len(), 1);
}

#[test]
fn procedure_rows_feed_writes_and_calls_follow_writes() {
    let db = db();
    let conn = Connection::new(&db);
    conn.query("CALL test.range(4) YIELD i, sq CREATE (:Q {i: i, sq: sq})")
        .unwrap();
    assert_eq!(
        rows(&conn, "MATCH (q:Q) RETURN sum(q.sq), count(*)"),
        vec![vec![Value::Int64(14), Value::Int64(4)]]
    );
    // A call in the clauses that follow a write (bound after the writes).
    assert_eq!(
        rows(
            &conn,
            "CREATE (:Z {n: 3}) WITH 1 AS one CALL test.range(3) YIELD i RETURN count(*)"
        ),
        vec![vec![Value::Int64(3)]]
    );
}
