import pytest

import kithdb


def squares(n):
    return [(i, i * i) for i in range(n)]


def test_python_procedure_standalone_and_in_query():
    db = kithdb.Database(max_threads=2)
    db.register_procedure("py.squares", [("n", "INT64")], [("i", "INT64"), ("sq", "INT64")], squares)
    conn = kithdb.Connection(db)
    assert list(conn.execute("CALL py.squares(3)")) == [(0, 0), (1, 1), (2, 4)]
    conn.execute("UNWIND range(1, 4) AS x CREATE (:N {x: x})")
    got = list(conn.execute(
        "MATCH (n:N) CALL py.squares(n.x) YIELD sq WHERE sq > 0 RETURN n.x, sum(sq) ORDER BY n.x"))
    assert got == [(2, 1), (3, 5), (4, 14)]
    # One output: plain values are rows; None is no rows.
    db.register_procedure("py.words", [("s", "STRING")], [("w", "STRING")],
                          lambda s: None if s is None else s.split())
    assert list(conn.execute("CALL py.words('a bb c') YIELD w RETURN w")) == [("a",), ("bb",), ("c",)]
    assert list(conn.execute("CALL py.words(NULL)")) == []


def test_python_procedure_errors():
    db = kithdb.Database()
    conn = kithdb.Connection(db)

    def boom(x):
        raise ValueError("no " + str(x))

    db.register_procedure("py.boom", [("x", "NUMBER")], [("y", "ANY")], boom)
    with pytest.raises(kithdb.RuntimeError, match="no 1"):
        conn.execute("CALL py.boom(1)")
    db.register_procedure("py.bad", [], [("y", "INT64")], lambda: [("text",)])
    with pytest.raises(kithdb.RuntimeError, match="output 'y'"):
        conn.execute("CALL py.bad()")
    with pytest.raises(ValueError, match="unknown type"):
        db.register_procedure("py.x", [("a", "WHATEVER")], [], lambda a: None)
    with pytest.raises(kithdb.RuntimeError, match="does not exist"):
        conn.execute("CALL py.missing()")
    assert list(conn.execute("RETURN 1")) == [(1,)]
