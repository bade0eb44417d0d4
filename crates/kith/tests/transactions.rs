//! Explicit transactions (BEGIN / COMMIT / ROLLBACK, READ ONLY), CHECKPOINT,
//! and snapshot isolation under a concurrent writer.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use kith::{Config, Connection, Database, ErrorKind, Value};

fn temp_db(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("kith-txn-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("g.kith").to_string_lossy().to_string();
    (dir, path)
}

fn config() -> Config {
    Config {
        max_threads: Some(2),
        ..Config::default()
    }
}

fn run(conn: &Connection, q: &str) {
    conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
}

fn int(conn: &Connection, q: &str) -> i64 {
    let r = conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let rows: Vec<Vec<Value>> = r.rows().collect();
    assert_eq!(rows.len(), 1, "{q}: {rows:?}");
    match &rows[0][0] {
        Value::Int64(v) => *v,
        other => panic!("{q}: not an integer: {other:?}"),
    }
}

fn count(conn: &Connection, table: &str) -> i64 {
    int(conn, &format!("MATCH (n:{table}) RETURN count(*)"))
}

fn err(conn: &Connection, q: &str) -> kith::Error {
    match conn.query(q) {
        Ok(_) => panic!("{q}: expected an error"),
        Err(e) => e,
    }
}

fn setup(db: &Database) {
    let c = Connection::new(db);
    run(
        &c,
        "CREATE NODE TABLE P(id INT64, v INT64, PRIMARY KEY(id));
         CREATE REL TABLE K(FROM P TO P, w INT64)",
    );
}

#[test]
fn commit_is_invisible_to_others_until_commit() {
    let db = Database::open(":memory:", config()).unwrap();
    setup(&db);
    let a = Connection::new(&db);
    let b = Connection::new(&db);
    run(&a, "BEGIN TRANSACTION");
    assert!(a.in_transaction());
    run(&a, "CREATE (:P {id: 1, v: 10}), (:P {id: 2, v: 20})");
    run(
        &a,
        "MATCH (x:P {id: 1}), (y:P {id: 2}) CREATE (x)-[:K {w: 5}]->(y)",
    );
    // Read-your-writes, including the rel and the PK index.
    assert_eq!(count(&a, "P"), 2);
    assert_eq!(int(&a, "MATCH (x:P {id: 2}) RETURN x.v"), 20);
    assert_eq!(int(&a, "MATCH (x:P)-[k:K]->(y:P) RETURN sum(k.w)"), 5);
    // Others see nothing, and their reads do not wait for the writer.
    assert_eq!(count(&b, "P"), 0);
    run(&a, "COMMIT");
    assert!(!a.in_transaction());
    assert_eq!(count(&b, "P"), 2);
    assert_eq!(int(&b, "MATCH (y:P)<-[k:K]-(x:P) RETURN sum(k.w)"), 5);
}

#[test]
fn rollback_discards_data_and_ddl() {
    let db = Database::open(":memory:", config()).unwrap();
    setup(&db);
    let a = Connection::new(&db);
    run(&a, "CREATE (:P {id: 1, v: 1})");
    run(&a, "BEGIN TRANSACTION");
    run(&a, "CREATE NODE TABLE Q(id INT64, PRIMARY KEY(id))");
    run(&a, "CREATE (:Q {id: 7})");
    assert_eq!(count(&a, "Q"), 1);
    run(&a, "MATCH (x:P {id: 1}) SET x.v = 100");
    run(&a, "CREATE (:P {id: 2, v: 2})");
    assert_eq!(int(&a, "MATCH (x:P) RETURN sum(x.v)"), 102);
    run(&a, "MATCH (x:P {id: 1}) DELETE x");
    assert_eq!(int(&a, "MATCH (x:P) RETURN sum(x.v)"), 2);
    run(&a, "ROLLBACK");
    assert_eq!(int(&a, "MATCH (x:P) RETURN sum(x.v)"), 1);
    // The table is gone: creating it again works.
    run(&a, "CREATE NODE TABLE Q(id INT64, PRIMARY KEY(id))");
    assert_eq!(count(&a, "Q"), 0);
    // The writer slot is free again: an auto-commit write goes through.
    run(&a, "CREATE (:P {id: 3, v: 3})");
    assert_eq!(count(&a, "P"), 2);
}

#[test]
fn read_only_transaction_pins_a_snapshot_and_rejects_writes() {
    let db = Database::open(":memory:", config()).unwrap();
    setup(&db);
    let a = Connection::new(&db);
    let b = Connection::new(&db);
    run(&b, "CREATE (:P {id: 1, v: 1})");
    run(&a, "BEGIN TRANSACTION READ ONLY");
    assert_eq!(count(&a, "P"), 1);
    // A read-only transaction holds no writer slot.
    run(&b, "CREATE (:P {id: 2, v: 2})");
    assert_eq!(count(&a, "P"), 1, "the snapshot is pinned");
    for q in [
        "CREATE (:P {id: 9, v: 9})",
        "MATCH (x:P) SET x.v = 0",
        "MATCH (x:P) DETACH DELETE x",
        "CREATE NODE TABLE Z(id INT64, PRIMARY KEY(id))",
    ] {
        let e = err(&a, q);
        assert_eq!(e.kind, ErrorKind::Transaction, "{q}: {e}");
        assert!(e.to_string().contains("READ ONLY"), "{q}: {e}");
    }
    // Rejected writes do not end the transaction.
    assert_eq!(count(&a, "P"), 1);
    run(&a, "COMMIT");
    assert_eq!(count(&a, "P"), 2);
}

#[test]
fn misuse_gets_clear_errors() {
    let db = Database::open(":memory:", config()).unwrap();
    setup(&db);
    let a = Connection::new(&db);
    for (q, want) in [
        ("COMMIT", "COMMIT without an open transaction"),
        ("ROLLBACK", "ROLLBACK without an open transaction"),
    ] {
        let e = err(&a, q);
        assert_eq!(e.kind, ErrorKind::Transaction);
        assert!(e.to_string().contains(want), "{e}");
    }
    for begin in ["BEGIN TRANSACTION", "BEGIN TRANSACTION READ ONLY"] {
        run(&a, begin);
        let e = err(&a, "BEGIN TRANSACTION");
        assert!(e.to_string().contains("already open"), "{e}");
        let e = err(&a, "CHECKPOINT");
        assert!(e.to_string().contains("inside a transaction"), "{e}");
        run(&a, "ROLLBACK");
    }
    run(&a, "CHECKPOINT");
    let e = err(&a, "EXPLAIN COMMIT");
    assert!(e.to_string().contains("statements of their own"), "{e}");
}

#[test]
fn failing_statement_aborts_the_transaction() {
    let db = Database::open(":memory:", config()).unwrap();
    setup(&db);
    let a = Connection::new(&db);
    let b = Connection::new(&db);
    run(&a, "BEGIN TRANSACTION");
    run(&a, "CREATE (:P {id: 1, v: 1})");
    // Errors before anything is written (syntax, binding) leave it usable.
    err(&a, "MATCH (x:P RETURN x");
    err(&a, "MATCH (x:P) RETURN x.nope");
    assert_eq!(count(&a, "P"), 1);
    // A failing write aborts it: rolled back, only ROLLBACK accepted.
    let e = err(&a, "CREATE (:P {id: 1, v: 2})");
    assert!(e.to_string().contains("duplicate"), "{e}");
    assert!(a.in_transaction());
    for q in [
        "MATCH (x:P) RETURN count(*)",
        "CREATE (:P {id: 5})",
        "COMMIT",
    ] {
        let e = err(&a, q);
        assert!(e.to_string().contains("run ROLLBACK"), "{q}: {e}");
    }
    // The writer slot was released at the failure, not at ROLLBACK.
    run(&b, "CREATE (:P {id: 2, v: 2})");
    run(&a, "ROLLBACK");
    assert!(!a.in_transaction());
    assert_eq!(count(&a, "P"), 1);
    assert_eq!(int(&a, "MATCH (x:P) RETURN min(x.id)"), 2);
}

#[test]
fn dropping_the_connection_rolls_back() {
    let db = Database::open(":memory:", config()).unwrap();
    setup(&db);
    {
        let a = Connection::new(&db);
        run(&a, "BEGIN TRANSACTION");
        run(&a, "CREATE (:P {id: 1, v: 1})");
    }
    let b = Connection::new(&db);
    assert_eq!(count(&b, "P"), 0);
    run(&b, "CREATE (:P {id: 1, v: 1})");
    assert_eq!(count(&b, "P"), 1);
}

#[test]
fn script_with_transaction_and_copy_rule() {
    let db = Database::open(":memory:", config()).unwrap();
    setup(&db);
    let a = Connection::new(&db);
    // A whole transaction in one script.
    run(
        &a,
        "BEGIN TRANSACTION; CREATE (:P {id: 1, v: 1}); CREATE (:P {id: 2, v: 2}); COMMIT;",
    );
    assert_eq!(count(&a, "P"), 2);
    run(&a, "BEGIN TRANSACTION");
    let e = err(&a, "COPY P FROM 'nowhere.csv'");
    assert!(
        e.to_string()
            .contains("COPY inside an explicit transaction"),
        "{e}"
    );
    // Rejected before it ran: the transaction goes on.
    run(&a, "CREATE (:P {id: 3, v: 3})");
    run(&a, "COMMIT");
    assert_eq!(count(&a, "P"), 3);
}

#[test]
fn committed_transactions_survive_reopen() {
    let (dir, path) = temp_db("reopen");
    {
        let db = Database::open(&path, config()).unwrap();
        setup(&db);
        let a = Connection::new(&db);
        run(&a, "BEGIN TRANSACTION");
        for i in 0..50 {
            run(&a, &format!("CREATE (:P {{id: {i}, v: {i}}})"));
        }
        run(
            &a,
            "MATCH (x:P), (y:P) WHERE y.id = x.id + 1 CREATE (x)-[:K {w: 1}]->(y)",
        );
        run(&a, "COMMIT");
        run(&a, "BEGIN TRANSACTION");
        run(&a, "CREATE (:P {id: 1000, v: 0})");
        // Left open: dropping the database rolls it back.
    }
    {
        let db = Database::open(&path, config()).unwrap();
        let a = Connection::new(&db);
        assert_eq!(count(&a, "P"), 50);
        assert_eq!(int(&a, "MATCH (x:P)-[k:K]->(y:P) RETURN count(*)"), 49);
        run(&a, "CHECKPOINT");
        run(&a, "MATCH (x:P {id: 0}) SET x.v = 100");
    }
    {
        let db = Database::open(&path, config()).unwrap();
        let a = Connection::new(&db);
        assert_eq!(int(&a, "MATCH (x:P) RETURN sum(x.v)"), 49 * 50 / 2 + 100);
        assert_eq!(int(&a, "MATCH (x:P {id: 49}) RETURN x.v"), 49);
        assert_eq!(int(&a, "MATCH (y:P)<-[k:K]-(x:P) RETURN count(*)"), 49);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A writer moves money between accounts, two SETs per transaction (and
/// sometimes one two-node statement), while readers sum all balances: every
/// reader must always see the same total.
#[test]
fn readers_always_see_the_invariant_total() {
    invariant_total(false);
}

/// [`readers_always_see_the_invariant_total`] with a thread running CHECKPOINT
/// every 20 ms (each one a commit that frees no page). This found a bug: a
/// commit that freed nothing left no reclaim entry, so a reader of the
/// version before it did not hold back the frees of the next commit, which
/// recycled pages the reader still used (wrong totals in about one run in
/// 10-25).
#[test]
fn readers_see_the_invariant_total_during_checkpoints() {
    invariant_total(true);
}

fn invariant_total(checkpoints: bool) {
    const ACCOUNTS: i64 = 16;
    const START: i64 = 1000;
    const TRANSFERS: u64 = 1000;
    let (dir, path) = temp_db(if checkpoints {
        "invariant-ckpt"
    } else {
        "invariant"
    });
    let db = Arc::new(Database::open(&path, config()).unwrap());
    let c = Connection::new(&db);
    run(
        &c,
        "CREATE NODE TABLE Account(id INT64, balance INT64, PRIMARY KEY(id))",
    );
    run(
        &c,
        &format!(
            "UNWIND range(0, {}) AS i CREATE (:Account {{id: i, balance: {START}}})",
            ACCOUNTS - 1
        ),
    );
    let total = ACCOUNTS * START;
    assert_eq!(int(&c, "MATCH (a:Account) RETURN sum(a.balance)"), total);
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for _ in 0..3 {
        let (db, done, reads) = (Arc::clone(&db), Arc::clone(&done), Arc::clone(&reads));
        readers.push(std::thread::spawn(move || {
            let conn = Connection::new(&db);
            let mut seen = 0u64;
            while !done.load(Ordering::SeqCst) || seen == 0 {
                let sum = int(&conn, "MATCH (a:Account) RETURN sum(a.balance)");
                assert_eq!(sum, total, "a reader saw a half-done transfer");
                let n = int(&conn, "MATCH (a:Account) RETURN count(*)");
                assert_eq!(n, ACCOUNTS);
                seen += 1;
            }
            reads.fetch_add(seen, Ordering::SeqCst);
        }));
    }
    let checkpointer = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let conn = Connection::new(&db);
            while checkpoints && !done.load(Ordering::SeqCst) {
                run(&conn, "CHECKPOINT");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
    };
    let writer = Connection::new(&db);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for t in 0..TRANSFERS {
        let from = (next() % ACCOUNTS as u64) as i64;
        let to = (from + 1 + (next() % (ACCOUNTS as u64 - 1)) as i64) % ACCOUNTS;
        let amount = (next() % 50) as i64 + 1;
        if t % 5 == 4 {
            run(
                &writer,
                &format!(
                    "MATCH (a:Account {{id: {from}}}), (b:Account {{id: {to}}}) \
                     WITH a, b, a.balance AS x, b.balance AS y \
                     SET a.balance = x - {amount}, b.balance = y + {amount}"
                ),
            );
            continue;
        }
        run(&writer, "BEGIN TRANSACTION");
        run(
            &writer,
            &format!("MATCH (a:Account {{id: {from}}}) SET a.balance = a.balance - {amount}"),
        );
        // The writer sees its own half-done transfer.
        assert_eq!(
            int(&writer, "MATCH (a:Account) RETURN sum(a.balance)"),
            total - amount
        );
        run(
            &writer,
            &format!("MATCH (b:Account {{id: {to}}}) SET b.balance = b.balance + {amount}"),
        );
        if t % 7 == 3 {
            run(&writer, "ROLLBACK");
        } else {
            run(&writer, "COMMIT");
        }
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    checkpointer.join().unwrap();
    assert!(reads.load(Ordering::SeqCst) >= 3);
    assert_eq!(
        int(&writer, "MATCH (a:Account) RETURN sum(a.balance)"),
        total
    );
    drop(writer);
    drop(c);
    drop(db);
    let db = Database::open(&path, config()).unwrap();
    let c = Connection::new(&db);
    assert_eq!(int(&c, "MATCH (a:Account) RETURN sum(a.balance)"), total);
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// A second writer waits `Config::writer_wait` for the running write
/// transaction, then fails with a clear error and changes nothing; once the
/// first commits, it goes through.
#[test]
fn second_writer_gives_up_after_the_configured_wait() {
    let db = Database::open(
        ":memory:",
        Config {
            writer_wait: Some(std::time::Duration::from_millis(150)),
            ..config()
        },
    )
    .unwrap();
    setup(&db);
    let a = Connection::new(&db);
    let b = Connection::new(&db);
    run(&a, "BEGIN TRANSACTION");
    run(&a, "CREATE (:P {id: 1, v: 1})");
    let started = std::time::Instant::now();
    let err = b.query("CREATE (:P {id: 2, v: 2})").unwrap_err();
    let waited = started.elapsed();
    assert!(
        err.to_string()
            .contains("another write transaction is still running after waiting 150 ms"),
        "{err}"
    );
    assert!(
        waited >= std::time::Duration::from_millis(140)
            && waited < std::time::Duration::from_secs(3),
        "waited {waited:?}"
    );
    run(&a, "COMMIT");
    run(&b, "CREATE (:P {id: 2, v: 2})");
    assert_eq!(count(&b, "P"), 2);
}

#[test]
fn a_log_without_its_database_file_is_refused() {
    let (dir, path) = temp_db("orphan-wal");
    {
        let db = Database::open(&path, config()).unwrap();
        setup(&db);
        let c = Connection::new(&db);
        run(&c, "CREATE (:P {id: 1, v: 1})");
    }
    let wal = format!("{path}.wal");
    // Closing does not checkpoint: the commit is still in the log.
    let logged = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(logged > 0, "the log is empty after the commit");
    {
        std::fs::remove_file(&path).unwrap();
        let e = match Database::open(&path, config()) {
            Ok(_) => panic!("opened a database from a log without its file"),
            Err(e) => e,
        };
        assert_eq!(e.kind, ErrorKind::Corruption, "{e}");
        assert!(e.message.contains("write-ahead log"), "{e}");
        // Nothing was created: the same error again, and the database
        // opens empty once the log is gone.
        assert!(Database::open(&path, config()).is_err());
        std::fs::remove_file(&wal).unwrap();
        let db = Database::open(&path, config()).unwrap();
        setup(&db);
        assert_eq!(count(&Connection::new(&db), "P"), 0);
    }
    let _ = std::fs::remove_dir_all(dir);
}
