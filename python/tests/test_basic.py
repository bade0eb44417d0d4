import datetime
import os

import pytest

import kithdb
from conftest import DATA


def test_open_close_on_disk(tmp_path):
    path = str(tmp_path / "db")
    with kithdb.Database(path) as db:
        conn = kithdb.Connection(db, num_threads=1)
        conn.execute("CREATE NODE TABLE T(id INT64, PRIMARY KEY(id))")
        conn.close()
    assert db.is_closed
    db = kithdb.Database(path, read_only=True)
    conn = kithdb.Connection(db)
    assert list(conn.execute("CALL show_tables() RETURN *")) == [("T", "NODE")]
    with pytest.raises(kithdb.RuntimeError):
        conn.execute("CREATE NODE TABLE U(id INT64, PRIMARY KEY(id))")
    db.close()


def test_closed_connection_raises():
    db = kithdb.Database()
    conn = kithdb.Connection(db)
    conn.close()
    with pytest.raises(kithdb.RuntimeError, match="closed"):
        conn.execute("RETURN 1")


def test_rows_and_columns(graph):
    r = graph.execute("CALL threads=1; MATCH (p:Person) RETURN p.id, p.name, p.age")
    assert r.get_column_names() == ["p.id", "p.name", "p.age"]
    assert r.get_column_data_types() == ["INT64", "STRING", "INT64"]
    assert len(r) == 6
    assert r.has_next()
    first = r.get_next()
    assert first == (1, "Alice", 35)
    rest = list(r)
    assert len(rest) == 5 and rest[3] == (5, 'Eve, the "spy"', None)
    assert not r.has_next()
    with pytest.raises(kithdb.RuntimeError):
        r.get_next()
    r.reset_iterator()
    assert len(r.fetch_all()) == 6


def test_rel_query(graph):
    rows = list(graph.execute(
        "MATCH (a:Person)-[k:Knows]->(b:Person) RETURN a.name, b.name, k.since, k.weight"))
    assert len(rows) > 0
    assert all(r[2] is None or isinstance(r[2], int) for r in rows)
    assert all(r[3] is None or isinstance(r[3], float) for r in rows)


def test_errors_raise_kithdb_runtime_error(conn):
    # An unknown label matches nothing (openCypher); an unknown function is
    # an error that names it.
    assert len(conn.execute("MATCH (x:Nope) RETURN x.id")) == 0
    with pytest.raises(kithdb.RuntimeError, match="nope") as e:
        conn.execute("RETURN nope(1)")
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(RuntimeError, match="Syntax error"):
        conn.execute("MATCH (((")


def test_parameters(conn):
    import datetime

    assert len(conn.execute("RETURN 1 AS a", {})) == 1
    assert list(conn.execute("RETURN $x + 1 AS a, $s AS s", {"x": 41, "s": "hi"})) == [(42, "hi")]
    assert list(conn.execute("UNWIND $l AS v RETURN sum(v)", {"l": [1, 2, 3]})) == [(6,)]
    d = datetime.date(2024, 2, 29)
    assert list(conn.execute("RETURN $d AS d", {"d": d})) == [(d,)]
    ts = datetime.datetime(1999, 12, 31, 23, 59, 59, 500000)
    assert list(conn.execute("RETURN $t AS t", {"t": ts})) == [(ts,)]
    assert list(conn.execute("RETURN $b AS b, $n AS n", {"b": True, "n": None})) == [(True, None)]
    with pytest.raises(TypeError):
        conn.execute("RETURN $x AS a", {"x": object()})
    with pytest.raises(kithdb.RuntimeError, match="was not given a value"):
        conn.execute("RETURN $nope AS a", {"x": 1})


ROWS = [
    (1, True, -128, -32768, -2147483648, 0, 0, 0, 0, 1.5, -2.25, "plain",
     datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 13, 45),
     datetime.timedelta(days=365 + 2)),
    (2, False, 127, 32767, 2147483647, 255, 65535, 4294967295, 18446744073709551615, -0.5,
     1e10, 'with "quotes", and |pipe', datetime.date(1970, 1, 1),
     datetime.datetime(1999, 12, 31, 23, 59, 59, 500000), datetime.timedelta(hours=3)),
    (3,) + (None,) * 14,
]
TYPES = ["INT64", "BOOL", "INT8", "INT16", "INT32", "UINT8", "UINT16", "UINT32", "UINT64",
         "FLOAT", "DOUBLE", "STRING", "DATE", "TIMESTAMP", "INTERVAL"]


@pytest.fixture
def all_types(conn):
    conn.execute("CREATE NODE TABLE T(id INT64, b BOOL, i8 INT8, i16 INT16, i32 INT32, u8 UINT8, "
                 "u16 UINT16, u32 UINT32, u64 UINT64, f FLOAT, d DOUBLE, s STRING, dt DATE, "
                 "ts TIMESTAMP, iv INTERVAL, PRIMARY KEY(id))")
    conn.execute(f"COPY T FROM '{DATA}/all_types.csv' (HEADER=true, DELIM='|')")
    return conn.execute("CALL threads=1; MATCH (t:T) RETURN t.id, t.b, t.i8, t.i16, t.i32, t.u8, t.u16, t.u32, "
                        "t.u64, t.f, t.d, t.s, t.dt, t.ts, t.iv")


def test_scalar_types_round_trip(all_types):
    assert all_types.get_column_data_types() == TYPES
    rows = list(all_types)
    # "1 year 2 days": a month counts 30 days in Python.
    expected = list(ROWS)
    expected[0] = expected[0][:14] + (datetime.timedelta(days=12 * 30 + 2),)
    assert rows == expected
    assert type(rows[0][1]) is bool and type(rows[0][12]) is datetime.date


def test_arrow_df_pl_equal_rows(all_types):
    pa = pytest.importorskip("pyarrow")
    rows = list(all_types)
    table = all_types.get_as_arrow()
    assert table.column_names == all_types.get_column_names()
    assert table.schema.field(12).type == pa.date32()
    assert table.schema.field(13).type == pa.timestamp("us")
    assert table.schema.field(14).type == pa.duration("us")
    assert [tuple(r.values()) for r in table.to_pylist()] == rows
    pd = pytest.importorskip("pandas")
    df = all_types.get_as_df()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == all_types.get_column_names()
    assert df["t.s"].tolist()[:2] == [rows[0][11], rows[1][11]]
    pl = pytest.importorskip("polars")
    pdf = all_types.get_as_pl()
    assert isinstance(pdf, pl.DataFrame)
    assert [tuple(r) for r in pdf.rows()] == rows


def test_arrow_chunk_size(graph):
    pytest.importorskip("pyarrow")
    t = graph.execute("MATCH (p:Person) RETURN p.id, p.name").get_as_arrow(chunk_size=4)
    assert t.num_rows == 6 and max(b.num_rows for b in t.to_batches()) <= 4


def test_arrow_collected_integer_lists(graph):
    pa = pytest.importorskip("pyarrow")
    # collect() of integers keeps them as integers; the export reads them
    # as slices (a NULL list and an empty one among them).
    t = graph.execute(
        "MATCH (a:Person) OPTIONAL MATCH (a)-[:Knows]->(b:Person) "
        "WITH a, collect(b.id) AS l "
        "RETURN a.id, CASE WHEN a.id = 5 THEN NULL ELSE l END AS l ORDER BY a.id"
    ).get_as_arrow()
    assert t.schema.field(1).type == pa.list_(pa.int64())
    lists = [None if x is None else sorted(x) for x in t.column(1).to_pylist()]
    assert lists == [[2, 3], [3], [1, 4], [1, 5], None, []]


def test_temporal_values_round_trip(conn):
    import datetime

    utc2 = datetime.timezone(datetime.timedelta(hours=2))
    row = conn.execute(
        "RETURN localtime('12:34:56.789') AS lt, time('12:34:56+02:00') AS zt, "
        "localdatetime('2024-02-29T13:45:01') AS ldt, "
        "datetime('2024-02-29T13:45:01+02:00') AS zdt, "
        "duration('P1DT2H') AS d, duration('P1M2D') AS dm"
    ).get_next()
    lt, zt, ldt, zdt, d, dm = row
    assert lt == datetime.time(12, 34, 56, 789000)
    assert zt == datetime.time(12, 34, 56, tzinfo=utc2)
    assert ldt == datetime.datetime(2024, 2, 29, 13, 45, 1)
    assert zdt == datetime.datetime(2024, 2, 29, 13, 45, 1, tzinfo=utc2)
    assert d == datetime.timedelta(days=1, hours=2)
    assert dm == kithdb.Duration(months=1, days=2)
    # Each comes back as it went in when passed as a parameter.
    for v in (lt, zt, ldt, zdt, d, dm):
        assert conn.execute("RETURN $v AS v", {"v": v}).get_next()[0] == v


def test_parameter_type_error_is_both_kinds():
    assert issubclass(kithdb.ParameterTypeError, kithdb.RuntimeError)
    assert issubclass(kithdb.ParameterTypeError, TypeError)


def test_graph_columns_become_typed_struct_arrays(conn):
    """Nodes, rels and paths reach get_as_arrow as struct arrays built in Rust,
    with one field per property over the column's labels (NULL where a node
    lacks it): the same values the row API gives as dicts."""
    pa = pytest.importorskip("pyarrow")
    conn.execute("CREATE NODE TABLE P(id INT64, name STRING, PRIMARY KEY(id))")
    conn.execute("CREATE NODE TABLE Q(id INT64, tag STRING, PRIMARY KEY(id))")
    conn.execute("CREATE REL TABLE K(FROM P TO P, w INT64)")
    conn.execute("CREATE REL TABLE L(FROM P TO Q)")
    conn.execute("CREATE (:P {id: 1, name: 'a'})-[:K {w: 5}]->(:P {id: 2, name: 'b'})")
    conn.execute("MATCH (b:P {id: 2}) CREATE (b)-[:L]->(:Q {id: 3, tag: 't'})")
    q = "MATCH p = (a:P {id: 1})-[r*1..2]->(b) RETURN a, b, p ORDER BY b.id"
    table = conn.execute(q).get_as_arrow()
    node = table.schema.field("b").type
    assert pa.types.is_struct(node)
    assert [node.field(i).name for i in range(node.num_fields)] == ["_id", "_label", "id", "name", "tag"]
    rows = list(conn.execute(q))
    for arrow_row, row in zip(table.to_pylist(), rows):
        b = arrow_row["b"]
        def present(d):
            return {k: v for k, v in d.items() if v is not None}
        assert present(b) == present(row[1])
        path = arrow_row["p"]
        assert [n["id"] for n in path["_nodes"]] == [n["id"] for n in row[2]["_nodes"]]
        assert [r["_label"] for r in path["_rels"]] == [r["_label"] for r in row[2]["_rels"]]
        assert [r["_src"] for r in path["_rels"]] == [r["_src"] for r in row[2]["_rels"]]
    assert table.column("p").to_pylist()[0]["_rels"][0]["w"] == 5
