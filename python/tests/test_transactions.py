"""Explicit transactions through the Python connection (which runs every
statement through the engine's Connection, so it gets them as they are)."""

import pytest

import kithdb


def count(conn):
    return list(conn.execute("MATCH (n:T) RETURN count(*)"))[0][0]


def test_begin_commit_rollback_across_connections():
    db = kithdb.Database()
    a = kithdb.Connection(db)
    b = kithdb.Connection(db)
    a.execute("CREATE NODE TABLE T(id INT64, PRIMARY KEY(id))")
    a.execute("BEGIN TRANSACTION")
    a.execute("CREATE (:T {id: 1})")
    assert count(a) == 1
    assert count(b) == 0
    a.execute("COMMIT")
    assert count(b) == 1
    a.execute("BEGIN TRANSACTION")
    a.execute("CREATE (:T {id: 2})")
    a.execute("ROLLBACK")
    assert count(b) == 1
    with pytest.raises(kithdb.RuntimeError, match="COMMIT without an open transaction"):
        a.execute("COMMIT")
    a.execute("BEGIN TRANSACTION READ ONLY")
    with pytest.raises(kithdb.RuntimeError, match="READ ONLY"):
        a.execute("CREATE (:T {id: 3})")
    a.execute("ROLLBACK")
    # Closing a connection rolls its open transaction back.
    a.execute("BEGIN TRANSACTION")
    a.execute("CREATE (:T {id: 4})")
    a.close()
    b.execute("CREATE (:T {id: 5})")
    assert count(b) == 2
    b.close()
    db.close()


def test_second_writer_fails_after_writer_wait_ms():
    db = kithdb.Database(writer_wait_ms=100)
    a = kithdb.Connection(db)
    b = kithdb.Connection(db)
    a.execute("CREATE NODE TABLE T(id INT64, PRIMARY KEY(id))")
    a.execute("BEGIN TRANSACTION")
    a.execute("CREATE (:T {id: 1})")
    with pytest.raises(kithdb.RuntimeError, match="after waiting 100 ms"):
        b.execute("CREATE (:T {id: 2})")
    a.execute("COMMIT")
    b.execute("CREATE (:T {id: 2})")
    assert count(b) == 2
    db.close()
