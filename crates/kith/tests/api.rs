//! The embedding API end to end: reopen, failed COPY, errors, concurrency.

use std::path::PathBuf;

use kith::{Config, Connection, Database, ErrorKind, Value};

mod common;

fn data(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(name)
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .to_string()
}

fn temp_db(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("kith-api-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("g.kith").to_string_lossy().to_string();
    (dir, path)
}

fn rows(conn: &Connection, q: &str) -> Vec<Vec<Value>> {
    let mut r: Vec<Vec<Value>> = conn
        .query(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows()
        .collect();
    r.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    r
}

fn load(conn: &Connection) {
    for q in [
        "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))".to_string(),
        "CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE)".to_string(),
        format!("COPY Person FROM '{}' (HEADER=true)", data("persons.csv")),
        format!("COPY Knows FROM '{}' (HEADER=true)", data("knows.csv")),
    ] {
        conn.query(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}

const QUERIES: &[&str] = &[
    "MATCH (a:Person) RETURN a.id, a.name, a.age",
    "MATCH (a:Person)-[k:Knows]->(b:Person) RETURN a.id, b.id, k.since, k.weight",
    "MATCH (a:Person)<-[k:Knows]-(b:Person) RETURN a.id, b.id, k.weight",
    "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*), sum(k.weight)",
];

#[test]
fn results_survive_reopen() {
    let (dir, path) = temp_db("reopen");
    let before: Vec<_> = {
        let db = Database::open(&path, Config::default()).unwrap();
        let conn = Connection::new(&db);
        load(&conn);
        QUERIES.iter().map(|q| rows(&conn, q)).collect()
    };
    for _ in 0..2 {
        let db = Database::open(&path, Config::default()).unwrap();
        let conn = Connection::new(&db);
        let after: Vec<_> = QUERIES.iter().map(|q| rows(&conn, q)).collect();
        assert_eq!(before, after);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn failed_copy_changes_nothing() {
    let (dir, path) = temp_db("failed-copy");
    let db = Database::open(&path, Config::default()).unwrap();
    let conn = Connection::new(&db);
    load(&conn);
    let before: Vec<_> = QUERIES.iter().map(|q| rows(&conn, q)).collect();
    for (table, file) in [
        ("Person", "dup_key.csv"),
        ("Person", "bad_number.csv"),
        ("Person", "bad_columns.csv"),
        ("Person", "bad_quote.csv"),
        ("Knows", "dangling.csv"),
    ] {
        let err = conn
            .query(&format!("COPY {table} FROM '{}' (HEADER=true)", data(file)))
            .unwrap_err();
        assert!(err.to_string().contains(file), "{err}");
        let now: Vec<_> = QUERIES.iter().map(|q| rows(&conn, q)).collect();
        assert_eq!(before, now, "after failed COPY of {file}");
    }
    drop(conn);
    drop(db);
    let db = Database::open(&path, Config::default()).unwrap();
    let conn = Connection::new(&db);
    let now: Vec<_> = QUERIES.iter().map(|q| rows(&conn, q)).collect();
    assert_eq!(before, now, "after reopen");
    let _ = std::fs::remove_dir_all(dir);
}

/// Two opens of one file (as two processes would) share it: each sees the
/// other's commits, a read-only open reads them too, and their writers take
/// turns. (Real processes: kith-cli's `processes` tests.)
#[test]
fn two_opens_share_one_database() {
    let (dir, path) = temp_db("shared");
    let a = Database::open(&path, Config::default()).unwrap();
    let b = Database::open(&path, Config::default()).unwrap();
    let ro = Database::open(
        &path,
        Config {
            read_only: true,
            ..Config::default()
        },
    )
    .unwrap();
    let (ca, cb, cro) = (
        Connection::new(&a),
        Connection::new(&b),
        Connection::new(&ro),
    );
    ca.query("CREATE NODE TABLE P(id INT64, PRIMARY KEY(id))")
        .unwrap();
    let count = |c: &Connection| rows(c, "MATCH (p:P) RETURN count(*)");
    for i in 0..20 {
        let c = if i % 2 == 0 { &ca } else { &cb };
        c.query(&format!("CREATE (:P {{id: {i}}})")).unwrap();
        let want = vec![vec![Value::Int64(i + 1)]];
        assert_eq!(count(&ca), want);
        assert_eq!(count(&cb), want);
        assert_eq!(count(&cro), want);
    }
    let err = cro.query("CREATE (:P {id: 100})").unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    // A snapshot of one open is unchanged by the other's commits.
    cro.query("BEGIN TRANSACTION READ ONLY").unwrap();
    ca.query("CREATE (:P {id: 101})").unwrap();
    assert_eq!(count(&cro), vec![vec![Value::Int64(20)]]);
    cro.query("COMMIT").unwrap();
    assert_eq!(count(&cro), vec![vec![Value::Int64(21)]]);
    // The writer slot is one for both opens.
    let short = Database::open(
        &path,
        Config {
            writer_wait: Some(std::time::Duration::from_millis(100)),
            ..Config::default()
        },
    )
    .unwrap();
    ca.query("BEGIN TRANSACTION").unwrap();
    let err = Connection::new(&short)
        .query("CREATE (:P {id: 102})")
        .unwrap_err();
    assert!(err.to_string().contains("100 ms"), "{err}");
    ca.query("ROLLBACK").unwrap();
    Connection::new(&short)
        .query("CREATE (:P {id: 102})")
        .unwrap();
    assert_eq!(count(&cb), vec![vec![Value::Int64(22)]]);
    let _ = std::fs::remove_dir_all(dir);
}

/// On a read-only file system a read-only open reads (there is no shared
/// file to write, and nobody can write there), and a read-write open says
/// what to do. Needs a tmpfs it may mount (root); says so and passes
/// where it cannot.
#[test]
fn read_only_file_system() {
    let (dir, path) = temp_db("rofs");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mount = |args: &[&str]| {
        std::process::Command::new("mount")
            .args(args)
            .status()
            .is_ok_and(|s| s.success())
    };
    let m = mnt.to_str().unwrap();
    if !mount(&["-t", "tmpfs", "-o", "size=16m", "tmpfs", m]) {
        eprintln!("read_only_file_system: cannot mount a tmpfs here; not tested");
        return;
    }
    drop(path);
    let db_path = mnt.join("g.kith");
    let p = db_path.to_str().unwrap();
    {
        let db = Database::open(p, Config::default()).unwrap();
        let c = Connection::new(&db);
        c.query("CREATE NODE TABLE P(id INT64, PRIMARY KEY(id))")
            .unwrap();
        c.query("CREATE (:P {id: 1})").unwrap();
    }
    let remounted = mount(&["-o", "remount,ro", m]);
    if remounted {
        let ro = Config {
            read_only: true,
            ..Config::default()
        };
        let db = Database::open(p, ro).unwrap();
        assert_eq!(
            rows(&Connection::new(&db), "MATCH (p:P) RETURN count(*)"),
            vec![vec![Value::Int64(1)]]
        );
        drop(db);
        let err = Database::open(p, Config::default()).err().unwrap();
        assert!(err.to_string().contains("open it read-only"), "{err}");
    }
    let _ = std::process::Command::new("umount").arg(m).status();
    assert!(remounted, "remount read-only failed");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn syntax_errors_point_at_the_spot() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    let err = conn.query("MATCH (a)\nRETRUN a").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Syntax);
    let text = err.to_string();
    assert!(text.contains("line 2, column 1"), "{text}");
    assert!(text.contains('^'), "{text}");
}

#[test]
fn connections_query_concurrently() {
    let db = common::memory_db(2);
    load(&Connection::new(&db));
    let expected = rows(&Connection::new(&db), QUERIES[1]);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let conn = Connection::new(&db);
                for _ in 0..20 {
                    assert_eq!(rows(&conn, QUERIES[1]), expected);
                }
            });
        }
    });
}

#[test]
fn thread_counts_agree() {
    let db = common::memory_db(2);
    let conn = Connection::new(&db);
    load(&conn);
    let one: Vec<_> = QUERIES
        .iter()
        .map(|q| rows(&conn, &format!("CALL threads=1; {q}")))
        .collect();
    let two: Vec<_> = QUERIES
        .iter()
        .map(|q| rows(&conn, &format!("CALL threads=2; {q}")))
        .collect();
    assert_eq!(one, two);
}

#[test]
fn parquet_copy_matches_csv_copy() {
    let (dir, path) = temp_db("parquet");
    // Export the CSV-loaded graph to Parquet (two row groups each), load it
    // into a second database and compare every query.
    let csv_db = Database::open(":memory:", Config::default()).unwrap();
    let csv_conn = Connection::new(&csv_db);
    load(&csv_conn);
    let export = |q: &str, file: &str| {
        let r = csv_conn.query(q).unwrap();
        let rows: Vec<Vec<Value>> = r.rows().collect();
        let half = rows.len() / 2;
        let chunks: Vec<kith::Chunk> = [&rows[..half], &rows[half..]]
            .iter()
            .map(|part| {
                let mut c = kith::Chunk::new(r.column_types(), 0);
                for row in part.iter() {
                    for (col, v) in c.columns.iter_mut().zip(row) {
                        col.push_value(v);
                    }
                }
                c.num_rows = part.len();
                c
            })
            .collect();
        let names: Vec<String> = r.column_names().to_vec();
        let out = dir.join(file);
        kith_io::write_parquet(&out, &names, &chunks).unwrap();
        out.to_string_lossy().to_string()
    };
    let persons = export(
        "CALL threads=1; MATCH (a:Person) RETURN a.id, a.name, a.age",
        "persons.parquet",
    );
    let knows = export(
        "CALL threads=1; MATCH (a:Person)-[k:Knows]->(b:Person) RETURN a.id, b.id, k.since, k.weight",
        "knows.parquet",
    );
    let db = Database::open(&path, Config::default()).unwrap();
    let conn = Connection::new(&db);
    for q in [
        "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))".to_string(),
        "CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE)".to_string(),
        format!("COPY Person FROM '{persons}'"),
        format!("COPY Knows FROM '{knows}'"),
    ] {
        conn.query(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    for q in QUERIES {
        assert_eq!(rows(&csv_conn, q), rows(&conn, q), "{q}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A dense graph whose 3-hop count takes seconds, for cancellation tests.
fn dense_graph(conn: &Connection, dir: &std::path::Path) {
    let nodes = dir.join("nodes.csv");
    let edges = dir.join("edges.csv");
    let mut n = String::from("id\n");
    let mut e = String::from("from,to\n");
    for i in 0..1000 {
        n.push_str(&format!("{i}\n"));
        for j in 0..200 {
            e.push_str(&format!("{i},{}\n", (i * 7 + j * 13) % 1000));
        }
    }
    std::fs::write(&nodes, n).unwrap();
    std::fs::write(&edges, e).unwrap();
    for q in [
        "CREATE NODE TABLE V(id INT64, PRIMARY KEY(id))".to_string(),
        "CREATE REL TABLE L(FROM V TO V)".to_string(),
        format!("COPY V FROM '{}' (HEADER=true)", nodes.display()),
        format!("COPY L FROM '{}' (HEADER=true)", edges.display()),
    ] {
        conn.query(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}

/// 8 G matches, each tested: counting extends would answer a plain
/// `count(*)` from degrees in a few milliseconds.
const THREE_HOPS: &str =
    "MATCH (a:V)-[:L]->(b:V)-[:L]->(c:V)-[:L]->(d:V) WHERE a.id + d.id >= 0 RETURN count(*)";

#[test]
fn timeout_stops_a_long_query() {
    let (dir, _) = temp_db("timeout");
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    dense_graph(&conn, &dir);
    let start = std::time::Instant::now();
    let err = conn
        .query(&format!("CALL timeout=100; {THREE_HOPS}"))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Interrupted, "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    // The connection still works afterwards.
    conn.query("CALL timeout=0").unwrap();
    assert_eq!(
        rows(&conn, "MATCH (a:V) RETURN count(*)"),
        vec![vec![Value::Int64(1000)]]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn interrupt_from_another_thread() {
    let (dir, _) = temp_db("interrupt");
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    dense_graph(&conn, &dir);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            conn.interrupt();
        });
        let err = conn.query(THREE_HOPS).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Interrupted, "{err}");
    });
    let _ = std::fs::remove_dir_all(dir);
}

/// A pattern over several tables runs one pipeline per consistent choice of
/// tables and directions; EXPLAIN says how many, and the answer is the same
/// with 1 and 2 threads.
#[test]
fn several_tables_union_of_pipelines() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    load(&conn);
    for q in [
        "CREATE NODE TABLE City(name STRING, PRIMARY KEY(name))",
        "CREATE REL TABLE LivesIn(FROM Person TO City)",
        "CREATE (:City {name: 'Oslo'})",
        "MATCH (p:Person), (c:City) WHERE p.id <= 3 CREATE (p)-[:LivesIn]->(c)",
    ] {
        conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    let text: String = conn
        .query("EXPLAIN MATCH (a)-[r]-(b) RETURN count(*)")
        .unwrap()
        .rows()
        .map(|row| format!("{}\n", row[0]))
        .collect();
    assert!(
        text.contains("Union of 4 pipelines (one per table combination)"),
        "{text}"
    );
    // 8 Knows rels seen from both ends + 3 LivesIn from both ends.
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        assert_eq!(
            rows(&conn, "MATCH (a)-[r]-(b) RETURN count(*)"),
            vec![vec![Value::Int64(22)]]
        );
        assert_eq!(
            rows(
                &conn,
                "MATCH (a)-[r]->(b:City) RETURN count(*), min(a.name)"
            ),
            vec![vec![Value::Int64(3), Value::String("Alice".into())]]
        );
    }
}

/// PROFILE runs the query and reports each operator's tuples: the scan sees
/// every person, the filter keeps those older than 30, the extend counts
/// their rels.
#[test]
fn profile_counts_tuples_per_operator() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    load(&conn);
    let text: String = conn
        .query("PROFILE MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*)")
        .unwrap()
        .rows()
        .map(|row| format!("{}\n", row[0]))
        .collect();
    // 6 persons, 3 older than 30 (Alice 35, Carol 42, Dan 31) with 2+2+2 rels.
    for want in [
        "| ScanNodes Person | 6 |",
        "| Filter | 3 |",
        "| Extend Knows Fwd -> Person | 6 |",
        "result: 1 rows",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

/// A node whose primary key an equality fixes is found through the PK index:
/// EXPLAIN shows a LookupNode step (not a scan, not a cross product), for a
/// constant, a parameter, an UNWIND variable and a key computed from a node
/// bound earlier; a key without an index-able equality keeps the scan.
#[test]
fn primary_key_equalities_use_the_index() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    load(&conn);
    let plan = |q: &str| -> String {
        conn.query(&format!("EXPLAIN {q}"))
            .unwrap_or_else(|e| panic!("{q}: {e}"))
            .rows()
            .map(|row| format!("{}\n", row[0]))
            .collect()
    };
    for q in [
        "MATCH (a:Person {id: 3}) RETURN a.name",
        "MATCH (a:Person) WHERE a.id = $x RETURN a.name",
        "UNWIND [1, 2] AS k MATCH (a:Person {id: k}) RETURN a.name",
        "MATCH (a:Person {id: 1}), (b:Person {id: 2}) RETURN a.name, b.name",
        "MATCH (a:Person)-[:Knows]->(b:Person) MATCH (c:Person {id: b.id + 1}) RETURN c.name",
    ] {
        let text = plan(q);
        assert!(text.contains("LookupNode Person"), "{q}:\n{text}");
        assert!(!text.contains("CrossProduct"), "{q}:\n{text}");
    }
    for q in [
        "MATCH (a:Person) WHERE a.id > 3 RETURN a.name",
        "MATCH (a:Person) WHERE a.id = a.age RETURN a.name",
        "MATCH (a:Person {name: 'Bob'}) RETURN a.id",
    ] {
        let text = plan(q);
        assert!(!text.contains("LookupNode"), "{q}:\n{text}");
    }
}

/// An equality between two unconnected parts of a pattern is a hash join
/// (EXPLAIN: HashJoin); its rows equal those of the same condition written
/// so that it cannot be hashed (`NOT (x <> y)`, a cross product + filter),
/// across integers, floats equal to integers, NULLs, strings and ids.
#[test]
fn hash_join_equals_cross_product() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query(
        "CREATE NODE TABLE A(id INT64, x INT64, f DOUBLE, s STRING, PRIMARY KEY(id)); \
         CREATE NODE TABLE B(id INT64, y INT64, g DOUBLE, t STRING, PRIMARY KEY(id))",
    )
    .unwrap();
    // Deterministic pseudo-random values with repeats and NULLs.
    let mut seed = 12345u64;
    let mut next = |m: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % m
    };
    for (table, n) in [("A", 120), ("B", 90)] {
        for i in 0..n {
            let x = if next(7) == 0 {
                "NULL".to_string()
            } else {
                next(15).to_string()
            };
            let f = match next(4) {
                0 => "NULL".to_string(),
                1 => format!("{}.5", next(10)),
                _ => format!("{}.0", next(15)),
            };
            let s = if next(6) == 0 {
                "NULL".to_string()
            } else {
                format!("'k{}'", next(9))
            };
            let props = if table == "A" {
                format!("id: {i}, x: {x}, f: {f}, s: {s}")
            } else {
                format!("id: {i}, y: {x}, g: {f}, t: {s}")
            };
            conn.query(&format!("CREATE (:{table} {{{props}}})"))
                .unwrap();
        }
    }
    let plan = |q: &str| -> String {
        conn.query(&format!("EXPLAIN {q}"))
            .unwrap()
            .rows()
            .map(|row| format!("{}\n", row[0]))
            .collect()
    };
    let sorted = |q: &str| -> Vec<Vec<Value>> {
        let mut rows: Vec<Vec<Value>> = conn
            .query(q)
            .unwrap_or_else(|e| panic!("{q}: {e}"))
            .rows()
            .collect();
        rows.sort_by_key(|r| format!("{r:?}"));
        rows
    };
    for (l, r) in [
        ("a.x", "b.y"),
        ("a.x", "b.g"),
        ("a.f", "b.g"),
        ("a.f", "b.y + 1"),
        ("a.s", "b.t"),
        ("a.x * 2", "b.y"),
        ("id(a)", "id(b)"),
    ] {
        let hashed = format!("MATCH (a:A), (b:B) WHERE {l} = {r} RETURN a.id, b.id");
        let crossed = format!("MATCH (a:A), (b:B) WHERE NOT ({l} <> {r}) RETURN a.id, b.id");
        assert!(
            plan(&hashed).contains("HashJoin"),
            "{hashed}\n{}",
            plan(&hashed)
        );
        assert!(plan(&crossed).contains("CrossProduct"), "{crossed}");
        let (h, c) = (sorted(&hashed), sorted(&crossed));
        assert_eq!(h, c, "{l} = {r}");
        if l != "id(a)" {
            assert!(!h.is_empty(), "{l} = {r} matched nothing: a weak test");
        }
    }
    // Threads and a count over the join.
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        assert_eq!(
            sorted("MATCH (a:A), (b:B) WHERE a.x = b.y RETURN count(*)"),
            sorted("MATCH (a:A), (b:B) WHERE NOT (a.x <> b.y) RETURN count(*)")
        );
    }
}

/// Late materialization: after an extend, the properties a filter reads are
/// scanned first and the rest only for the tuples that pass (two
/// ScanProperties around the filter), with the same answer.
#[test]
fn filtered_properties_are_scanned_before_the_rest() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    load(&conn);
    let q = "MATCH (a:Person {id: 1})-[:Knows]->(b:Person) WHERE b.age > 30 RETURN a.id, b.name ORDER BY a.id, b.name";
    let text: String = conn
        .query(&format!("EXPLAIN {q}"))
        .unwrap()
        .rows()
        .map(|row| format!("{}\n", row[0]))
        .collect();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let at = |p: &str| lines.iter().position(|l| l.starts_with(p));
    let extend = at("Extend Knows").unwrap_or_else(|| panic!("{text}"));
    // The plan prints top-down: rest of the properties, filter, filtered
    // property, the semijoin mask of the filter's predicate, extend.
    assert!(lines[extend - 1].starts_with("SemiMask Person"), "{text}");
    assert!(
        lines[extend - 2].starts_with("ScanProperties Person [1 properties]"),
        "{text}"
    );
    assert!(lines[extend - 3].starts_with("Filter"), "{text}");
    assert!(
        lines[extend - 4].starts_with("ScanProperties Person [1 properties]"),
        "{text}"
    );
    let rows: Vec<Vec<Value>> = conn.query(q).unwrap().rows().collect();
    assert!(!rows.is_empty());
    let all: Vec<Vec<Value>> = conn
        .query("MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.id = 1 RETURN a.id, b.name, b.age ORDER BY a.id, b.name")
        .unwrap()
        .rows()
        .filter(|r| matches!(r[2], Value::Int32(x) if x > 30) || matches!(r[2], Value::Int64(x) if x > 30))
        .map(|r| r[..2].to_vec())
        .collect();
    assert_eq!(rows, all);
}
