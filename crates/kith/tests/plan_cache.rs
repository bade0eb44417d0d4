//! The connection's plan cache: a query run again must answer as if it
//! were planned afresh, after writes, schema changes, with other parameter
//! values and settings, and inside transactions.

use kith::{Connection, Database, LogicalType, Value};

mod common;

fn run(conn: &Connection, q: &str) {
    conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
}

fn rows(conn: &Connection, q: &str, params: &[(&str, Value)]) -> Vec<Vec<Value>> {
    conn.query_with_params(q, params)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows()
        .collect()
}

fn int(conn: &Connection, q: &str) -> i64 {
    match rows(conn, q, &[]).as_slice() {
        [row] => match row[0] {
            Value::Int64(v) => v,
            ref other => panic!("{q}: not an integer: {other:?}"),
        },
        other => panic!("{q}: {other:?}"),
    }
}

fn db() -> Database {
    let db = common::memory_db(2);
    let conn = Connection::new(&db);
    run(
        &conn,
        "CREATE NODE TABLE P(id INT64, v INT64, PRIMARY KEY(id));
         CREATE REL TABLE K(FROM P TO P);
         CREATE (:P {id: 1, v: 10}), (:P {id: 2, v: 20}), (:P {id: 3, v: 30})",
    );
    // A triangle 1 -> 2 -> 3 -> 1.
    run(
        &conn,
        "MATCH (a:P), (b:P) WHERE b.id = a.id % 3 + 1 CREATE (a)-[:K]->(b)",
    );
    db
}

#[test]
fn writes_by_any_connection_are_seen() {
    let db = db();
    let (conn, other) = (Connection::new(&db), Connection::new(&db));
    let q = "MATCH (a:P)-[:K]->(b:P) WHERE a.v >= 20 RETURN count(*)";
    for _ in 0..3 {
        assert_eq!(int(&conn, q), 2);
    }
    run(&conn, "CREATE (:P {id: 4, v: 40})");
    run(
        &other,
        "MATCH (a:P {id: 4}), (b:P {id: 1}) CREATE (a)-[:K]->(b)",
    );
    assert_eq!(int(&conn, q), 3);
    run(&other, "MATCH (a:P {id: 2}) DETACH DELETE a");
    assert_eq!(int(&conn, q), 2);
}

#[test]
fn parameters_pick_their_own_plan() {
    let db = db();
    let conn = Connection::new(&db);
    let q = "MATCH (a:P) WHERE a.v > $min RETURN a.id ORDER BY a.id LIMIT $n";
    let ids = |min: i64, n: i64| -> Vec<Value> {
        rows(
            &conn,
            q,
            &[("min", Value::Int64(min)), ("n", Value::Int64(n))],
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
    };
    assert_eq!(ids(10, 5), [Value::Int64(2), Value::Int64(3)]);
    assert_eq!(ids(10, 1), [Value::Int64(2)]);
    assert_eq!(ids(0, 5).len(), 3);
    assert_eq!(ids(10, 5).len(), 2);
    // The same value under another type is another parameter.
    let r = rows(&conn, "RETURN $x AS x", &[("x", Value::String("a".into()))]);
    assert_eq!(r, [[Value::String("a".into())]]);
    let r = rows(&conn, "RETURN $x AS x", &[("x", Value::Int64(1))]);
    assert_eq!(r, [[Value::Int64(1)]]);
}

#[test]
fn schema_changes_rebind_the_text() {
    let db = db();
    let conn = Connection::new(&db);
    // A node's value lists the properties its table has when bound.
    let q = "MATCH (a:P {id: 1}) RETURN size(keys(a))";
    assert_eq!(int(&conn, q), 2);
    run(&conn, "ALTER TABLE P ADD w INT64 DEFAULT 7");
    assert_eq!(int(&conn, q), 3);
    // The same name for a table of another schema.
    let t = "MATCH (t:T) RETURN t.x";
    run(
        &conn,
        "CREATE NODE TABLE T(id INT64, x INT64, PRIMARY KEY(id))",
    );
    run(&conn, "CREATE (:T {id: 1, x: 5})");
    assert_eq!(conn.query(t).unwrap().column_types(), [LogicalType::Int64]);
    run(&conn, "DROP TABLE T");
    // An unknown label matches nothing.
    assert_eq!(rows(&conn, t, &[]), Vec::<Vec<Value>>::new());
    run(
        &conn,
        "CREATE NODE TABLE T(id INT64, x STRING, PRIMARY KEY(id))",
    );
    run(&conn, "CREATE (:T {id: 1, x: 'five'})");
    let r = conn.query(t).unwrap();
    assert_eq!(r.column_types(), [LogicalType::String]);
    assert_eq!(r.rows().next().unwrap()[0], Value::String("five".into()));
}

#[test]
fn binding_settings_are_part_of_the_plan() {
    let db = db();
    let conn = Connection::new(&db);
    // Walks of length 4 around the triangle repeat a rel; trails do not.
    let q = "MATCH (a:P {id: 1})-[:K*4..4]->(b:P) RETURN count(*)";
    assert_eq!(int(&conn, q), 1);
    run(&conn, "CALL var_length_semantics='trail'");
    assert_eq!(int(&conn, q), 0);
    run(&conn, "CALL var_length_semantics='walk'");
    assert_eq!(int(&conn, q), 1);
    run(&conn, "CALL plan_cache=false");
    assert_eq!(int(&conn, q), 1);
    assert_eq!(int(&conn, q), 1);
    run(&conn, "CALL plan_cache=true");
    assert_eq!(int(&conn, q), 1);
    let e = conn.query("CALL plan_cache=1").unwrap_err();
    assert!(
        e.to_string().contains("plan_cache expects true or false"),
        "{e}"
    );
}

#[test]
fn transactions_read_their_own_versions() {
    let db = db();
    let (conn, other) = (Connection::new(&db), Connection::new(&db));
    let q = "MATCH (a:P) RETURN count(*)";
    assert_eq!(int(&conn, q), 3);
    // A write transaction reads its own inserts, and forgets them on rollback.
    run(&conn, "BEGIN TRANSACTION");
    run(&conn, "CREATE (:P {id: 9, v: 90})");
    assert_eq!(int(&conn, q), 4);
    assert_eq!(int(&conn, q), 4);
    run(&conn, "ROLLBACK");
    assert_eq!(int(&conn, q), 3);
    // A read-only transaction keeps its snapshot while another commits.
    run(&conn, "BEGIN TRANSACTION READ ONLY");
    assert_eq!(int(&conn, q), 3);
    run(&other, "CREATE (:P {id: 5, v: 50})");
    assert_eq!(int(&conn, q), 3);
    assert_eq!(int(&other, q), 4);
    run(&conn, "COMMIT");
    assert_eq!(int(&conn, q), 4);
}
