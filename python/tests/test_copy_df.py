"""COPY T FROM df: pandas, polars and pyarrow sources, through the Arrow C stream."""
import datetime

import pytest

import kithdb
from test_basic import ROWS, TYPES

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

ALL_TYPES_DDL = ("CREATE NODE TABLE T(id INT64, b BOOL, i8 INT8, i16 INT16, i32 INT32, u8 UINT8, "
                 "u16 UINT16, u32 UINT32, u64 UINT64, f FLOAT, d DOUBLE, s STRING, dt DATE, "
                 "ts TIMESTAMP, iv INTERVAL, PRIMARY KEY(id))")
ALL_TYPES_QUERY = ("MATCH (t:T) RETURN t.id, t.b, t.i8, t.i16, t.i32, t.u8, t.u16, t.u32, "
                   "t.u64, t.f, t.d, t.s, t.dt, t.ts, t.iv ORDER BY t.id")
ARROW_TYPES = [pa.int64(), pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16(),
               pa.uint32(), pa.uint64(), pa.float32(), pa.float64(), pa.string(), pa.date32(),
               pa.timestamp("us"), pa.duration("us")]

# A module-level DataFrame: COPY finds it among the caller's globals.
GLOBAL_PEOPLE = pd.DataFrame({"id": [100, 101], "name": ["g1", "g2"], "age": [1, 2]})


def all_types_table():
    cols = list(zip(*ROWS))
    return pa.table([pa.array(c, type=t) for c, t in zip(cols, ARROW_TYPES)],
                    names=[f"c{i}" for i in range(len(TYPES))])


def count(conn, table="T"):
    return conn.execute(f"MATCH (n:{table}) RETURN count(*)").get_next()[0]


@pytest.fixture
def people(conn):
    conn.execute("CREATE NODE TABLE Person(id INT64, name STRING, age INT64, PRIMARY KEY(id))")
    conn.execute("CREATE REL TABLE Knows(FROM Person TO Person, since INT64, weight DOUBLE)")
    return conn


def rows(conn, q):
    return list(conn.execute("CALL threads=1; " + q))


def test_pyarrow_table_every_scalar_type_and_nulls(conn):
    conn.execute(ALL_TYPES_DDL)
    table = all_types_table()
    r = conn.execute("COPY T FROM table")
    assert r.get_next() == ("3 tuples have been copied to the T table.",)
    assert rows(conn, ALL_TYPES_QUERY) == ROWS


def test_pyarrow_types_map_to_engine_types(conn):
    """Every Arrow type the conversion accepts, into the matching column type."""
    conn.execute("CREATE NODE TABLE A(id INT64, f16 FLOAT, ls STRING, sv STRING, cat STRING, "
                 "d64 DATE, tss TIMESTAMP, tsms TIMESTAMP, tsns TIMESTAMP, tstz TIMESTAMP, "
                 "dur_s INTERVAL, dur_ns INTERVAL, mdn INTERVAL, nul INT32, dts DATE, "
                 "i_to_d DOUBLE, s_to_i INT16, PRIMARY KEY(id))")
    import numpy as np

    ts = datetime.datetime(2021, 3, 4, 5, 6, 7)
    table = pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "f16": pa.array([np.float16(1.5), None], pa.float16()),
        "ls": pa.array(["large", None], pa.large_string()),
        "sv": pa.array(["view", None], pa.string_view()),
        "cat": pa.array(["x", None]).dictionary_encode(),
        "d64": pa.array([datetime.date(2000, 1, 2), None], pa.date64()),
        "tss": pa.array([ts, None], pa.timestamp("s")),
        "tsms": pa.array([ts, None], pa.timestamp("ms")),
        "tsns": pa.array([ts, None], pa.timestamp("ns")),
        "tstz": pa.array([datetime.datetime(2021, 3, 4, 5, 6, 7, tzinfo=datetime.timezone.utc), None],
                         pa.timestamp("us", tz="UTC")),
        "dur_s": pa.array([datetime.timedelta(days=2, seconds=5), None], pa.duration("s")),
        "dur_ns": pa.array([datetime.timedelta(microseconds=-1), None], pa.duration("ns")),
        "mdn": pa.array([pa.scalar((1, 2, 3000), pa.month_day_nano_interval()).as_py(), None],
                        pa.month_day_nano_interval()),
        "nul": pa.array([None, None], pa.null()),
        "dts": pa.array([ts, None], pa.timestamp("us")),
        "i_to_d": pa.array([7, None], pa.int32()),
        "s_to_i": pa.array(["42", None], pa.string()),
    })
    conn.execute("COPY A FROM table")
    got = rows(conn, "MATCH (a:A) RETURN a.f16, a.ls, a.sv, a.cat, a.d64, a.tss, a.tsms, a.tsns, "
                     "a.tstz, a.dur_s, a.dur_ns, a.mdn, a.nul, a.dts, a.i_to_d, a.s_to_i ORDER BY a.id")
    assert got[0] == (1.5, "large", "view", "x", datetime.date(2000, 1, 2), ts, ts, ts, ts,
                      datetime.timedelta(days=2, seconds=5), datetime.timedelta(microseconds=-1),
                      datetime.timedelta(days=30 + 2, microseconds=3), None,
                      datetime.date(2021, 3, 4), 7.0, 42)
    assert got[1] == (None,) * 16


def test_pandas_node_and_rel_tables(people):
    persons = pd.DataFrame({
        "id": [1, 2, 3, 4],
        "name": ["Alice", None, "Carol", "Dan"],
        "age": pd.array([35, 28, None, 31], dtype="Int64"),
    })
    people.execute("COPY Person FROM persons")
    knows = pd.DataFrame({"from": [1, 1, 2], "to": [2, 3, 4], "since": [2010, 2012, 2015],
                          "weight": [0.5, float("nan"), 2.0]})
    people.execute("COPY Knows FROM knows")
    assert rows(people, "MATCH (p:Person) RETURN p.id, p.name, p.age ORDER BY p.id") == [
        (1, "Alice", 35), (2, None, 28), (3, "Carol", None), (4, "Dan", 31)]
    assert rows(people, "MATCH (a:Person)-[k:Knows]->(b:Person) "
                        "RETURN a.id, b.id, k.since, k.weight ORDER BY b.id") == [
        (1, 2, 2010, 0.5), (1, 3, 2012, None), (2, 4, 2015, 2.0)]


def test_pandas_index_dropped_and_pandas_dtypes(conn):
    conn.execute(ALL_TYPES_DDL)
    df = pd.DataFrame({
        "id": [1, 2],
        "b": pd.array([True, None], dtype="boolean"),
        "i8": pd.array([-1, None], dtype="Int8"),
        "i16": pd.array([-2, None], dtype="Int16"),
        "i32": pd.array([-3, None], dtype="Int32"),
        "u8": pd.array([4, None], dtype="UInt8"),
        "u16": pd.array([5, None], dtype="UInt16"),
        "u32": pd.array([6, None], dtype="UInt32"),
        "u64": pd.array([2**64 - 1, None], dtype="UInt64"),
        "f": pd.array([0.5, None], dtype="Float32"),
        "d": [1e300, None],
        "s": pd.Categorical(["cat", None]),
        "dt": [datetime.date(2024, 2, 29), None],
        "ts": pd.to_datetime(["2024-02-29 13:45:00.123456", None]),
        "iv": pd.to_timedelta(["1 days 02:00:00", None]),
    }, index=[10, 20])  # a non-default index does not become a column
    conn.execute("COPY T FROM df")
    assert rows(conn, ALL_TYPES_QUERY) == [
        (1, True, -1, -2, -3, 4, 5, 6, 2**64 - 1, 0.5, 1e300, "cat", datetime.date(2024, 2, 29),
         datetime.datetime(2024, 2, 29, 13, 45, 0, 123456), datetime.timedelta(days=1, hours=2)),
        (2,) + (None,) * 14,
    ]


def test_polars_node_and_rel_tables(people):
    persons = pl.DataFrame({"id": [1, 2, 3], "name": ["a", None, "c"], "age": [30, None, 50]})
    knows = pl.DataFrame({"from": [1, 2], "to": [2, 3], "since": [None, 2000],
                          "weight": [1.0, None]})
    people.execute("COPY Person FROM persons; COPY Knows FROM knows")
    assert rows(people, "MATCH (p:Person) RETURN p.id, p.name, p.age ORDER BY p.id") == [
        (1, "a", 30), (2, None, None), (3, "c", 50)]
    assert rows(people, "MATCH (a:Person)-[k:Knows]->(b:Person) "
                        "RETURN a.id, b.id, k.since, k.weight ORDER BY a.id") == [
        (1, 2, None, 1.0), (2, 3, 2000, None)]
    lazy = pl.DataFrame({"id": [9], "name": ["lazy"], "age": [9]}).lazy()
    people.execute("COPY Person FROM lazy")
    assert count(people, "Person") == 4


def test_polars_every_scalar_type(conn):
    conn.execute(ALL_TYPES_DDL)
    df = pl.from_arrow(all_types_table())
    conn.execute("COPY T FROM df")
    assert rows(conn, ALL_TYPES_QUERY) == ROWS


def test_record_batch_reader_explicit_parameters_and_globals(people):
    batch = pa.record_batch({"id": [1, 2], "name": ["x", "y"], "age": [1, 2]})
    people.execute("COPY Person FROM batch")
    reader = pa.RecordBatchReader.from_batches(
        batch.schema, [pa.record_batch({"id": [3], "name": ["z"], "age": [3]})])
    # Passed explicitly (no local variable of that name), next to an ordinary parameter.
    r = people.execute("COPY Person FROM src; MATCH (p:Person) WHERE p.id >= $min RETURN count(*)",
                       {"src": reader, "min": 2})
    assert r.get_next() == (2,)
    # A parameter wins over a variable of the same name.
    batch = pa.record_batch({"id": [4], "name": ["w"], "age": [4]})
    people.execute("COPY Person FROM batch", parameters={"batch": pa.table(
        {"id": [5], "name": ["v"], "age": [5]})})
    assert rows(people, "MATCH (p:Person) WHERE p.id >= 4 RETURN p.id") == [(5,)]
    people.execute("COPY Person FROM GLOBAL_PEOPLE")
    assert count(people, "Person") == 6


def test_large_frame_crosses_morsels(people):
    import numpy as np

    n = 300_000
    ids = np.arange(n, dtype=np.int64)
    df = pd.DataFrame({"id": ids, "name": ids.astype(str), "age": ids % 100})
    people.execute("COPY Person FROM df")
    knows = pl.DataFrame({"from": ids, "to": (ids + 1) % n, "since": ids, "weight": ids / 2})
    people.execute("COPY Knows FROM knows")
    assert people.execute("MATCH (p:Person) RETURN count(*), sum(p.id), sum(p.age)").get_next() == (
        n, n * (n - 1) // 2, int((ids % 100).sum()))
    assert people.execute(
        "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.id = 299999 RETURN b.name, k.weight"
    ).get_next() == ("0", 149999.5)


def test_empty_frame(people):
    df = pd.DataFrame({"id": pd.Series([], dtype="int64"), "name": pd.Series([], dtype="str"),
                       "age": pd.Series([], dtype="int64")})
    assert people.execute("COPY Person FROM df").get_next() == (
        "0 tuples have been copied to the Person table.",)


def assert_unchanged(conn, query, match, before, **sources):
    with pytest.raises(kithdb.RuntimeError, match=match):
        conn.execute(query, sources)
    assert rows(conn, "MATCH (p:Person) RETURN p.id, p.name, p.age ORDER BY p.id") == before[0]
    assert rows(conn, "MATCH (a:Person)-[k:Knows]->(b:Person) RETURN a.id, b.id ORDER BY a.id") \
        == before[1]


def test_errors_leave_the_database_unchanged(people):
    people.execute("COPY Person FROM seed", {"seed": pd.DataFrame(
        {"id": [1, 2], "name": ["a", "b"], "age": [1, 2]})})
    people.execute("COPY Knows FROM k", {"k": pd.DataFrame(
        {"from": [1], "to": [2], "since": [1], "weight": [1.0]})})
    before = (rows(people, "MATCH (p:Person) RETURN p.id, p.name, p.age ORDER BY p.id"),
              rows(people, "MATCH (a:Person)-[k:Knows]->(b:Person) RETURN a.id, b.id ORDER BY a.id"))

    assert_unchanged(people, "COPY Person FROM no_such_frame",
                     "no parameter and no variable named 'no_such_frame'", before)
    # Found among this function's locals.
    wrong_type = pd.DataFrame({"id": [7], "name": ["x"], "age": [True]})  # noqa: F841
    with pytest.raises(kithdb.RuntimeError, match=r"column 3 \('age', Arrow type Boolean\) "
                       r"cannot be loaded into column 'age' of type INT64"):
        people.execute("COPY Person FROM wrong_type")
    assert_unchanged(people, "COPY Person FROM x", "unsupported object of type builtins.list",
                     before, x=[1, 2, 3])
    assert_unchanged(people, "COPY Person FROM x",
                     r"x: has 2 columns, table Person expects 3 \(id, name, age\)", before,
                     x=pd.DataFrame({"id": [7], "name": ["x"]}))
    assert_unchanged(people, "COPY Person FROM x",
                     r"x:3: column 1 \(id\): cannot convert 'x' to INT64", before,
                     x=pd.DataFrame({"id": ["7", "8", "x"], "name": ["a", "b", "c"], "age": [1, 2, 3]}))
    assert_unchanged(people, "COPY Person FROM x", r"x:3: column 3 \(age\): cannot convert", before,
                     x=pa.table({"id": [7, 8, 9], "name": ["a", "b", "c"],
                                 "age": pa.array([1, 2, 2**63], pa.uint64())}))
    assert_unchanged(people, "COPY Person FROM x", r"x:3: duplicate primary key 7", before,
                     x=pd.DataFrame({"id": [7, 8, 7], "name": ["a", "b", "c"], "age": [1, 2, 3]}))
    assert_unchanged(people, "COPY Person FROM x",
                     r"x:2: duplicate primary key 2 .*an existing node", before,
                     x=pd.DataFrame({"id": [9, 2], "name": ["a", "b"], "age": [1, 2]}))
    assert_unchanged(people, "COPY Person FROM x", r"x:2: the primary key 'id' is NULL", before,
                     x=pd.DataFrame({"id": pd.array([9, None], dtype="Int64"), "name": ["a", "b"],
                                     "age": [1, 2]}))
    assert_unchanged(people, "COPY Knows FROM x",
                     r"x:2: destination node with primary key 99 does not exist", before,
                     x=pd.DataFrame({"from": [1, 2], "to": [2, 99], "since": [1, 2],
                                     "weight": [1.0, 2.0]}))
    ok = pd.DataFrame({"id": [50], "name": ["a"], "age": [1]})
    assert_unchanged(people, "COPY Person FROM x (HEADER=true)", "takes no options", before, x=ok)
    assert_unchanged(people, "COPY Nope FROM x", "Nope", before, x=ok)
    assert_unchanged(people, "COPY Person FROM x", "cannot convert the DataFrame to Arrow", before,
                     x=pd.DataFrame({"id": [1], "name": [object()], "age": [1]}))
    assert_unchanged(people, "COPY Person FROM x", r"Arrow type List", before,
                     x=pa.table({"id": [60], "name": [[1, 2]], "age": [1]}))
    # The second COPY of a script fails: the first one stays committed (one
    # transaction per statement, as for files).
    with pytest.raises(kithdb.RuntimeError, match="duplicate primary key 70"):
        people.execute("COPY Person FROM a; COPY Person FROM a",
                       {"a": pd.DataFrame({"id": [70], "name": ["a"], "age": [1]})})
    assert count(people, "Person") == 3


def test_copy_round_trips_a_query_result(all_types_copy):
    conn, expected = all_types_copy
    assert rows(conn, ALL_TYPES_QUERY.replace("(t:T)", "(t:T2)")) == expected


@pytest.fixture
def all_types_copy(conn):
    """T loaded from a pyarrow table; T2 loaded from T's own get_as_arrow()."""
    conn.execute(ALL_TYPES_DDL)
    conn.execute(ALL_TYPES_DDL.replace("TABLE T(", "TABLE T2("))
    conn.execute("COPY T FROM t", {"t": all_types_table()})
    result = conn.execute(ALL_TYPES_QUERY).get_as_arrow()
    conn.execute("COPY T2 FROM result")
    return conn, rows(conn, ALL_TYPES_QUERY)


def test_timeout_stops_copy_and_gil_is_released(people):
    import threading

    import numpy as np

    n = 1_000_000
    ids = np.arange(n, dtype=np.int64)
    df = pa.table({"id": ids, "name": pa.array(ids.astype(str)), "age": ids})
    people.set_query_timeout(1)
    with pytest.raises(kithdb.RuntimeError, match="(?i)interrupt|time"):
        people.execute("COPY Person FROM df")
    people.set_query_timeout(0)
    assert count(people, "Person") == 0
    # Another Python thread runs while the COPY converts and loads.
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        before = len(ticks)
        people.execute("COPY Person FROM df")
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
    assert count(people, "Person") == n
    # Holding the GIL for the whole COPY would allow at most a tick or two.
    assert during > 10, during


NESTED_DDL = ("CREATE NODE TABLE N(id INT64, tags STRING[], nums INT64[][], "
              "pt STRUCT(x DOUBLE, label STRING), m MAP(STRING, INT32), PRIMARY KEY(id))")
NESTED_QUERY = "MATCH (n:N) RETURN n.id, n.tags, n.nums, n.pt, n.m ORDER BY n.id"


def test_declared_nested_columns_from_pyarrow_pandas_and_polars(conn):
    """LIST, STRUCT and MAP columns load from Arrow's nested arrays (with NULLs
    at every level, sliced across morsels) and come back as Python values."""
    conn.execute(NESTED_DDL)
    table = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "tags": pa.array([["a", "b"], [], None], pa.list_(pa.string())),
        "nums": pa.array([[[1], [2, 3]], [None, []], [[4]]], pa.large_list(pa.list_(pa.int64()))),
        "pt": pa.array([{"x": 1.5, "label": "p"}, None, {"x": None, "label": "q"}],
                       pa.struct([("x", pa.float64()), ("label", pa.string())])),
        "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int32())),
    })
    conn.execute("COPY N FROM table")
    want = [
        (1, ["a", "b"], [[1], [2, 3]], {"x": 1.5, "label": "p"}, {"k": 1}),
        (2, [], [None, []], None, None),
        (3, None, [[4]], {"x": None, "label": "q"}, {}),
    ]
    got = rows(conn, NESTED_QUERY)
    assert [r[:4] for r in got] == [w[:4] for w in want]
    # A MAP comes back as a dict (or Kùzu's key/value form); compare its items.
    maps = [r[4] for r in got]
    assert maps[1] is None
    assert dict(maps[0].items()) == {"k": 1} and len(maps[2]) == 0
    # get_as_arrow builds typed nested arrays (not inferred from Python objects).
    out = conn.execute("MATCH (n:N) RETURN n.tags, n.nums, n.pt, n.m ORDER BY n.id").get_as_arrow()
    assert out.schema.types == [
        pa.list_(pa.string()), pa.list_(pa.list_(pa.int64())),
        pa.struct([("x", pa.float64()), ("label", pa.string())]), pa.map_(pa.string(), pa.int32())]
    assert out.column(1).to_pylist() == [[[1], [2, 3]], [None, []], [[4]]]
    assert out.column(3).to_pylist() == [[("k", 1)], None, []]

    # pandas: Python lists in an object column; polars: a List column.
    frame = pd.DataFrame({"id": [10, 11], "tags": [["x"], ["y", "z"]]})
    conn.execute("CREATE NODE TABLE L(id INT64, tags STRING[], PRIMARY KEY(id))")
    conn.execute("COPY L FROM frame")
    polars_frame = pl.DataFrame({"id": [12], "tags": [["w"]]})
    conn.execute("COPY L FROM polars_frame")
    assert rows(conn, "MATCH (l:L) RETURN l.id, l.tags ORDER BY l.id") == [
        (10, ["x"]), (11, ["y", "z"]), (12, ["w"])]
    # Back out to Arrow as a list column.
    out = conn.execute("MATCH (l:L) RETURN l.tags ORDER BY l.id").get_as_arrow()
    assert out.column(0).to_pylist() == [["x"], ["y", "z"], ["w"]]


def test_nested_column_type_errors_leave_the_table_unchanged(conn):
    conn.execute("CREATE NODE TABLE L(id INT64, tags INT64[], PRIMARY KEY(id))")
    bad = pa.table({"id": pa.array([1], pa.int64()), "tags": pa.array([["x"]], pa.list_(pa.string()))})
    with pytest.raises(kithdb.RuntimeError, match="tags"):
        conn.execute("COPY L FROM bad")
    wrong_shape = pa.table({"id": pa.array([1], pa.int64()), "tags": pa.array([1], pa.int64())})
    with pytest.raises(kithdb.RuntimeError, match="cannot be loaded"):
        conn.execute("COPY L FROM wrong_shape")
    with pytest.raises(kithdb.RuntimeError, match="cannot store"):
        conn.execute("CREATE (:L {id: 2, tags: ['x']})")
    assert count(conn, "L") == 0
