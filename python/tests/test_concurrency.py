import os
import threading
import time

import pytest

import kithdb


def _make_big(tmp_path, conn, n):
    csv = tmp_path / "big.csv"
    with open(csv, "w") as f:
        f.write("id,name,score\n")
        f.write("".join(f"{i},name{i},{i * 0.5}\n" for i in range(n)))
    conn.execute("CREATE NODE TABLE Big(id INT64, name STRING, score DOUBLE, PRIMARY KEY(id))")
    conn.execute(f"COPY Big FROM '{csv}' (HEADER=true)")


def test_threads_on_separate_connections(tmp_path):
    db = kithdb.Database()
    _make_big(tmp_path, kithdb.Connection(db), 200_000)
    query = "MATCH (b:Big) WHERE b.score > 10.0 RETURN count(*), sum(b.id)"
    expected = list(kithdb.Connection(db).execute(query))
    results, errors = [], []

    def work():
        try:
            c = kithdb.Connection(db, num_threads=1)
            for _ in range(3):
                results.append(list(c.execute(query)))
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors and len(results) == 12 and all(r == expected for r in results)


def test_gil_released_during_query(tmp_path):
    db = kithdb.Database()
    conn = kithdb.Connection(db)
    _make_big(tmp_path, conn, 200_000)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    for _ in range(5):
        conn.execute("MATCH (b:Big) WHERE b.score > 5.0 RETURN count(*)")
    stop.set()
    t.join()
    assert len(ticks) >= 1


def test_interrupt_and_timeout(tmp_path):
    db = kithdb.Database()
    conn = kithdb.Connection(db)
    _make_big(tmp_path, conn, 5_000)
    slow = "MATCH (a:Big), (b:Big), (c:Big) RETURN count(*)"
    errors = []

    def run():
        try:
            conn.execute(slow)
        except kithdb.RuntimeError as e:
            errors.append(str(e))

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    conn.interrupt()
    t.join(timeout=30)
    assert not t.is_alive()
    assert errors and "nterrupt" in errors[0]
    conn.set_query_timeout(200)
    with pytest.raises(kithdb.RuntimeError):
        conn.execute(slow)


def test_arrow_1m_rows_under_a_second(tmp_path):
    pa = pytest.importorskip("pyarrow")
    db = kithdb.Database()
    conn = kithdb.Connection(db)
    _make_big(tmp_path, conn, 1_000_000)
    result = conn.execute("MATCH (b:Big) RETURN b.id, b.name, b.score")
    start = time.perf_counter()
    table = result.get_as_arrow()
    elapsed = time.perf_counter() - start
    assert table.num_rows == 1_000_000
    assert table.schema.types == [pa.int64(), pa.string(), pa.float64()]
    assert elapsed < 1.0, f"get_as_arrow of 1M rows took {elapsed:.3f}s"
