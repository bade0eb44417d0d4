//! `$parameters` through `Connection::query_with_params`: in expressions,
//! UNWIND, SKIP and LIMIT.

use kith::{Config, Connection, Database, Value};

fn rows(conn: &Connection, q: &str, params: &[(&str, Value)]) -> Vec<Vec<Value>> {
    conn.query_with_params(q, params)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows()
        .collect()
}

fn setup() -> (Database, String) {
    let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .canonicalize()
        .unwrap();
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))")
        .unwrap();
    conn.query(&format!(
        "COPY Person FROM '{}/persons.csv' (HEADER=true)",
        data.display()
    ))
    .unwrap();
    (db, data.display().to_string())
}

#[test]
fn parameters_in_expressions_skip_limit_and_unwind() {
    let (db, _) = setup();
    let conn = Connection::new(&db);
    assert_eq!(
        rows(&conn, "RETURN $x + 1 AS y", &[("x", Value::Int64(41))]),
        vec![vec![Value::Int64(42)]]
    );
    assert_eq!(
        rows(
            &conn,
            "MATCH (a:Person) WHERE a.age > $min RETURN a.name ORDER BY a.name",
            &[("min", Value::Int64(33))]
        ),
        vec![
            vec![Value::String("Alice".into())],
            vec![Value::String("Carol".into())]
        ]
    );
    assert_eq!(
        rows(
            &conn,
            "MATCH (a:Person) RETURN a.id ORDER BY a.id SKIP $s LIMIT $l",
            &[("s", Value::Int64(1)), ("l", Value::Int64(2))]
        ),
        vec![vec![Value::Int64(2)], vec![Value::Int64(3)]]
    );
    assert_eq!(
        rows(
            &conn,
            "UNWIND $list AS x RETURN sum(x)",
            &[(
                "list",
                Value::List(vec![Value::Int64(1), Value::Int64(2), Value::Int64(3)])
            )]
        ),
        vec![vec![Value::Int64(6)]]
    );
    assert_eq!(
        rows(
            &conn,
            "MATCH (a:Person {name: $n}) RETURN a.age",
            &[("n", Value::String("Bob".into()))]
        ),
        vec![vec![Value::Int32(28)]]
    );
}

#[test]
fn parameter_errors() {
    let (db, _) = setup();
    let conn = Connection::new(&db);
    let e = conn.query("RETURN $missing").unwrap_err().to_string();
    assert!(e.contains("parameter $missing"), "{e}");
    let e = conn
        .query_with_params(
            "MATCH (a:Person) RETURN a.id LIMIT $l",
            &[("l", Value::Int64(-1))],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("LIMIT expects a non-negative integer"), "{e}");
}
