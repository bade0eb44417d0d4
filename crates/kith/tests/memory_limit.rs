//! Intermediate results count against the memory limit (the buffer pool
//! size): a query whose collected rows, sorted rows or aggregation groups
//! outgrow it fails with an out-of-memory error, the database stays usable,
//! and the memory is given back.

use kith::{Config, Connection, Database, ErrorKind};

fn small_database() -> (Database, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("kith-memory-limit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        buffer_pool_bytes: Some(48 << 20),
        max_threads: Some(2),
        ..Config::default()
    };
    let db = Database::open(&dir.join("db.kith").to_string_lossy(), config).unwrap();
    (db, dir)
}

#[test]
fn queries_beyond_the_memory_limit_fail_cleanly() {
    let (db, dir) = small_database();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("UNWIND range(0, 2999) AS i CREATE (:N {id: i})")
        .unwrap();
    // 9 M rows of two INT64 columns (about 144 MiB) do not fit 48 MiB.
    let too_big = [
        "MATCH (a:N), (b:N) RETURN a.id, b.id",
        "MATCH (a:N), (b:N) RETURN a.id, b.id ORDER BY b.id DESC, a.id",
        "MATCH (a:N), (b:N) RETURN a.id * 10000 + b.id AS k, count(*)",
        "MATCH (a:N), (b:N) WITH a.id + b.id AS s RETURN count(*)",
    ];
    for q in too_big {
        let err = match conn.query(q) {
            Ok(r) => panic!("{q}: expected out of memory, got {} rows", r.rows().count()),
            Err(e) => e,
        };
        assert_eq!(err.kind, ErrorKind::OutOfMemory, "{q}: {err}");
        assert!(err.message.contains("memory limit of 48 MiB"), "{q}: {err}");
        // The charges were given back: a small query still runs, again and again.
        for _ in 0..3 {
            let r = conn.query("MATCH (a:N) RETURN count(*)").unwrap();
            assert_eq!(r.rows().next().unwrap()[0], kith::Value::Int64(3000));
        }
    }
    // What fits runs: 3 M rows counted without being collected, and 300 k
    // collected.
    let r = conn
        .query("MATCH (a:N), (b:N) WHERE b.id < 1000 RETURN count(*)")
        .unwrap();
    assert_eq!(r.rows().next().unwrap()[0], kith::Value::Int64(3_000_000));
    let r = conn
        .query("MATCH (a:N), (b:N) WHERE b.id < 100 RETURN a.id, b.id")
        .unwrap();
    assert_eq!(r.rows().count(), 300_000);
    drop(conn);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
