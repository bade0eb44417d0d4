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
                Value::list(vec![Value::Int64(1), Value::Int64(2), Value::Int64(3)])
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

/// `WHERE a.pk IN $ids` looks each item up in the key index (EXPLAIN:
/// LookupNode); the result equals a scan's for lists of every shape.
#[test]
fn key_membership_in_a_parameter_list() {
    let (db, _) = setup();
    let conn = Connection::new(&db);
    let plan: String = conn
        .query_with_params(
            "EXPLAIN MATCH (a:Person) WHERE a.id IN $ids RETURN a.name",
            &[("ids", Value::list(vec![Value::Int64(1)]))],
        )
        .unwrap()
        .rows()
        .map(|r| format!("{}\n", r[0]))
        .collect();
    assert!(plan.contains("each item of"), "{plan}");
    let lists = [
        vec![],
        vec![Value::Int64(2), Value::Int64(2), Value::Int64(5)],
        vec![Value::Null, Value::Double(3.0), Value::Double(3.5)],
        vec![Value::String("1".into()), Value::Int32(6), Value::Int64(99)],
        (0..20).map(Value::Int64).rev().collect(),
    ];
    for list in lists {
        let p = [("ids", Value::list(list.clone()))];
        let got = rows(
            &conn,
            "MATCH (a:Person) WHERE a.id IN $ids RETURN a.id ORDER BY a.id",
            &p,
        );
        // The same membership where no index can serve it.
        let want = rows(
            &conn,
            "MATCH (a:Person) WHERE a.id + 0 IN $ids RETURN a.id ORDER BY a.id",
            &p,
        );
        assert_eq!(got, want, "{list:?}");
    }
    assert!(rows(
        &conn,
        "MATCH (a:Person) WHERE a.id IN $ids RETURN a.id",
        &[("ids", Value::Null)]
    )
    .is_empty());
    let err = conn
        .query_with_params(
            "MATCH (a:Person) WHERE a.id IN $ids RETURN a.id",
            &[("ids", Value::Int64(1))],
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("IN expects a LIST"), "{err}");
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

#[test]
fn parameters_in_writing_clauses_on_bulk_loaded_data() {
    let (db, _) = setup();
    let conn = Connection::new(&db);
    let count = |conn: &Connection| rows(conn, "MATCH (n:Person) RETURN count(*)", &[]);
    let before = count(&conn);
    let Value::Int64(n) = before[0][0] else {
        panic!("count: {before:?}")
    };
    conn.query_with_params(
        "CREATE (:Person {id: $id, name: $name})",
        &[
            ("id", Value::Int64(1000)),
            ("name", Value::String("Zed".into())),
        ],
    )
    .unwrap();
    assert_eq!(
        rows(
            &conn,
            "MATCH (n:Person) WHERE n.id = $id RETURN n.name",
            &[("id", Value::Int64(1000))]
        ),
        vec![vec![Value::String("Zed".into())]]
    );
    // A duplicate key given by parameter fails and changes nothing.
    assert!(conn
        .query_with_params("CREATE (:Person {id: $id})", &[("id", Value::Int64(1000))])
        .is_err());
    assert_eq!(count(&conn), vec![vec![Value::Int64(n + 1)]]);
    // Deleting bulk-loaded rows: scans skip them.
    conn.query_with_params(
        "MATCH (n:Person) WHERE n.id < $id DELETE n",
        &[("id", Value::Int64(1000))],
    )
    .unwrap();
    assert_eq!(count(&conn), vec![vec![Value::Int64(1)]]);
    conn.query_with_params(
        "MATCH (n:Person) WHERE n.id = 1000 SET n.age = $age",
        &[("age", Value::Int64(7))],
    )
    .unwrap();
    assert_eq!(
        rows(&conn, "MATCH (n:Person) RETURN n.id, n.age", &[]),
        vec![vec![Value::Int64(1000), Value::Int32(7)]]
    );
}
