"""Several processes on one database, from Python: a writer in a child
process commits while this process reads read-only; a snapshot stays
unchanged; a child killed inside a write transaction blocks nobody."""

import os
import signal
import subprocess
import sys
import textwrap

import kithdb

WRITER = textwrap.dedent(
    """
    import sys, kithdb
    db = kithdb.Database(sys.argv[1])
    c = kithdb.Connection(db)
    for line in sys.stdin:
        c.execute(line)
        print("ok", flush=True)
    """
)


def _child(path):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _run(child, statement):
    child.stdin.write(statement + "\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "ok"


def _count(conn):
    return list(conn.execute("MATCH (p:P) RETURN count(*)"))[0][0]


def test_reader_process_sees_writer_process(tmp_path):
    path = tmp_path / "g.kith"
    writer = _child(path)
    try:
        _run(writer, "CREATE NODE TABLE P(id INT64, PRIMARY KEY(id))")
        db = kithdb.Database(str(path), read_only=True)
        conn = kithdb.Connection(db)
        for i in range(10):
            _run(writer, f"CREATE (:P {{id: {i}}})")
            assert _count(conn) == i + 1
        conn.execute("BEGIN TRANSACTION READ ONLY")
        _run(writer, "CREATE (:P {id: 100})")
        assert _count(conn) == 10
        conn.execute("COMMIT")
        assert _count(conn) == 11
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)


def test_killed_writer_blocks_nobody(tmp_path):
    path = tmp_path / "g.kith"
    db = kithdb.Database(str(path), writer_wait_ms=10_000)
    conn = kithdb.Connection(db)
    conn.execute("CREATE NODE TABLE P(id INT64, PRIMARY KEY(id))")
    writer = _child(path)
    _run(writer, "BEGIN TRANSACTION")
    _run(writer, "CREATE (:P {id: 1})")
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    conn.execute("CREATE (:P {id: 2})")
    assert [r[0] for r in conn.execute("MATCH (p:P) RETURN p.id")] == [2]
