//! Intermediate results count against the memory limit (the buffer pool
//! size): a query whose collected rows, sorted rows, aggregation groups or
//! hash-join index outgrow it fails with an out-of-memory error, the
//! database stays usable, and the memory is given back.

use kith::{Config, Connection, Database, ErrorKind};

fn small_database(name: &str) -> (Database, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("kith-memory-limit-{name}-{}", std::process::id()));
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

/// Runs `q`, which must fail with the out-of-memory error of the 48 MiB
/// limit.
fn expect_out_of_memory(conn: &Connection, q: &str) {
    let err = match conn.query(q) {
        Ok(r) => panic!("{q}: expected out of memory, got {:?}", r.rows().next()),
        Err(e) => e,
    };
    assert_eq!(err.kind, ErrorKind::OutOfMemory, "{q}: {err}");
    assert!(err.message.contains("memory limit of 48 MiB"), "{q}: {err}");
}

#[test]
fn queries_beyond_the_memory_limit_fail_cleanly() {
    let (db, dir) = small_database("rows");
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
        expect_out_of_memory(&conn, q);
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

/// A hash join's build rows fit, but its index does not: the index is
/// charged too, so the query fails cleanly instead of growing past the
/// limit. 1.5 M build rows hold their keys (12 MiB), which fits; their
/// hashed index (keys too far apart to be indexed by position) needs more
/// than 40 MiB besides.
#[test]
fn a_hash_join_index_beyond_the_memory_limit_fails_cleanly() {
    let (db, dir) = small_database("hash-join");
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE NODE TABLE M(id INT64, v INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("UNWIND range(0, 2999) AS i CREATE (:N {id: i})")
        .unwrap();
    let csv = dir.join("m.csv");
    let mut text = String::from("id,v\n");
    // Keys spread out (not a range a direct index covers), so the build
    // hashes them; the first 3,000 match `a.id`.
    for i in 0..1_500_000 {
        let v = if i < 3000 { i } else { i * 7 };
        text.push_str(&format!("{i},{v}\n"));
    }
    std::fs::write(&csv, text).unwrap();
    conn.query(&format!("COPY M FROM '{}' (HEADER=true)", csv.display()))
        .unwrap();
    let join = "MATCH (a:N) WITH a.id AS x MATCH (m:M) WHERE m.v = x";
    let plan: String = conn
        .query(&format!("EXPLAIN {join} RETURN count(*)"))
        .unwrap()
        .rows()
        .map(|row| format!("{}\n", row[0]))
        .collect();
    assert!(plan.contains("HashJoin"), "{plan}");
    expect_out_of_memory(&conn, &format!("{join} RETURN count(*)"));
    // The charges were given back, and a build that fits runs.
    for _ in 0..3 {
        let r = conn
            .query(&format!("{join} AND m.id < 100000 RETURN count(*)"))
            .unwrap();
        assert_eq!(r.rows().next().unwrap()[0], kith::Value::Int64(3000));
    }
    drop(conn);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A recursive join's rows count too: shortest-path lengths from every one
/// of 3,000 nodes (9 M rows of about 20 bytes) and weighted costs (9 M
/// rows of 32 bytes) outgrow 48 MiB even though the query only counts
/// them, and fail cleanly; from 100 sources they fit.
#[test]
fn recursive_rows_beyond_the_memory_limit_fail_cleanly() {
    let (db, dir) = small_database("recursive");
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE R(FROM N TO N, w DOUBLE)")
        .unwrap();
    conn.query("UNWIND range(0, 2999) AS i CREATE (:N {id: i})")
        .unwrap();
    // Each node points at its successor and at 7i + 3 (mod 3000): every
    // node reaches every other.
    conn.query(
        "MATCH (a:N), (b:N) WHERE b.id = (a.id + 1) % 3000 OR b.id = (a.id * 7 + 3) % 3000 \
         CREATE (a)-[:R {w: 1.0}]->(b)",
    )
    .unwrap();
    // 9 M join rows (about 180 MB) kept whole: an OPTIONAL MATCH with a
    // WHERE pads the numbered rows without a match only once it has them
    // all, and an UNWIND reads them whole.
    let too_big = [
        "MATCH (a:N) OPTIONAL MATCH (a)-[e:R* SHORTEST 1..30]->(b:N) WHERE b.id >= 0 RETURN count(*), sum(length(e))",
        "MATCH (a:N) OPTIONAL MATCH (a)-[e:R* WSHORTEST(w)]->(b:N) WHERE b.id >= 0 RETURN count(*)",
        "MATCH (a:N)-[e:R* WSHORTEST(w)]->(b:N) UNWIND [1, 2] AS x RETURN count(*)",
    ];
    for q in too_big {
        expect_out_of_memory(&conn, q);
        let r = conn.query("MATCH (a:N) RETURN count(*)").unwrap();
        assert_eq!(r.rows().next().unwrap()[0], kith::Value::Int64(3000));
    }
    // The same 9 M rows aggregated as the search finds them (a pipelined
    // join, a left outer one too) are never kept.
    for q in [
        "MATCH (a:N)-[e:R* SHORTEST 1..30]->(b:N) RETURN count(*)",
        "MATCH (a:N)-[e:R* WSHORTEST(w)]->(b:N) RETURN count(*)",
        "MATCH (a:N) OPTIONAL MATCH (a)-[e:R* SHORTEST 1..30]->(b:N) RETURN count(*)",
        "MATCH (a:N) OPTIONAL MATCH (a)-[e:R* WSHORTEST(w)]->(b:N) RETURN count(b)",
    ] {
        let r = conn.query(q).unwrap();
        assert_eq!(
            r.rows().next().unwrap()[0],
            kith::Value::Int64(3000 * 2999),
            "{q}"
        );
    }
    // Kept paths are charged with their node and rel lists: 302 k walks
    // of up to 6 rels from 2,400 sources hold 49 MB (22 MB without the
    // lists, which then passed).
    expect_out_of_memory(
        &conn,
        "MATCH (a:N) WHERE a.id < 2400 OPTIONAL MATCH p = (a)-[:R*1..6]->(b:N) WHERE true RETURN count(*), sum(size(nodes(p)))",
    );
    // Handed to the next pipeline batch by batch, they are never kept.
    let r = conn
        .query("MATCH (a:N) OPTIONAL MATCH p = (a)-[:R*1..6]->(b:N) RETURN count(*), sum(size(nodes(p)))")
        .unwrap();
    assert_eq!(
        r.rows().next().unwrap(),
        vec![kith::Value::Int64(378_000), kith::Value::Int64(2_304_000)]
    );
    // Shortest paths read as values keep every source's parent tree until
    // the paths are read (a word per node: 72 MB from 3,000 sources), even
    // with one destination each; from 1,000 sources they fit.
    let to_zero = "MATCH p = (a:N)-[:R* SHORTEST 1..30]->(b:N) WHERE b.id = 0";
    expect_out_of_memory(
        &conn,
        &format!("{to_zero} RETURN count(*), min(size(nodes(p)))"),
    );
    let r = conn
        .query(&format!(
            "{to_zero} AND a.id < 1000 RETURN count(*), min(size(nodes(p)))"
        ))
        .unwrap();
    assert_eq!(
        r.rows().next().unwrap(),
        vec![kith::Value::Int64(999), kith::Value::Int64(3)]
    );
    // ... and a LIMIT the rows satisfy ends the search.
    let r = conn
        .query("MATCH (a:N)-[e:R* WSHORTEST(w)]->(b:N) RETURN cost(e) LIMIT 3")
        .unwrap();
    assert_eq!(r.rows().count(), 3);
    for q in [
        "MATCH (a:N)-[e:R* SHORTEST 1..30]->(b:N) WHERE a.id < 100 RETURN count(*)",
        "MATCH (a:N)-[e:R* WSHORTEST(w)]->(b:N) WHERE a.id < 100 RETURN count(*)",
    ] {
        let r = conn.query(q).unwrap();
        assert_eq!(
            r.rows().next().unwrap()[0],
            kith::Value::Int64(100 * 2999),
            "{q}"
        );
    }
    drop(conn);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
