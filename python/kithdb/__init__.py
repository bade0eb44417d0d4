"""KithDB: an embeddable graph database, from Python.

Example::

    import kithdb

    db = kithdb.Database()                      # in-memory; or a directory path
    conn = kithdb.Connection(db)
    conn.execute("CREATE NODE TABLE Person(id INT64, name STRING, age INT64, PRIMARY KEY(id))")
    conn.execute("COPY Person FROM 'persons.csv' (HEADER=true)")
    for name, age in conn.execute("MATCH (p:Person) RETURN p.name, p.age"):
        print(name, age)
    df = conn.execute("MATCH (p:Person) RETURN p.name, p.age").get_as_df()

    people = pandas.DataFrame({"id": [7, 8], "name": ["Ann", "Ben"], "age": [40, 41]})
    conn.execute("COPY Person FROM people")     # pandas, polars or pyarrow, through Arrow

Statements run with the GIL released: Python threads using separate connections
run queries concurrently, and ``Connection.interrupt()`` stops a running query.
Engine errors raise :class:`kithdb.RuntimeError` (a subclass of the built-in
``RuntimeError``) with the engine's message.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from . import _kithdb
from ._kithdb import ParameterTypeError, RuntimeError

__all__ = [
    "Database",
    "Connection",
    "QueryResult",
    "RuntimeError",
    "ParameterTypeError",
    "Duration",
    "__version__",
]


class Duration:
    """A Cypher DURATION that ``datetime.timedelta`` cannot hold (it has months).

    Months, days and seconds are kept apart, as Cypher does: a month has no fixed
    number of days. Returned for DURATION values with months; accepted as a
    parameter.
    """

    __slots__ = ("months", "days", "seconds", "nanoseconds")

    def __init__(self, months: int = 0, days: int = 0, seconds: int = 0, nanoseconds: int = 0):
        self.months = int(months)
        self.days = int(days)
        self.seconds = int(seconds)
        self.nanoseconds = int(nanoseconds)

    def _key(self) -> Tuple[int, int, int, int]:
        return (self.months, self.days, self.seconds, self.nanoseconds)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"kithdb.Duration(months={self.months}, days={self.days}, "
            f"seconds={self.seconds}, nanoseconds={self.nanoseconds})"
        )

__version__: str = _kithdb.__version__


def _as_arrow(obj: Any, name: str) -> Any:
    """``obj`` as an object exporting an Arrow C stream (``__arrow_c_stream__``).

    pandas DataFrames go through ``pyarrow.Table.from_pandas`` (without the
    index), polars DataFrames (and LazyFrames, collected) through ``to_arrow()``,
    pyarrow Tables, RecordBatches and RecordBatchReaders are used as they are,
    and so is any other object implementing the Arrow PyCapsule stream protocol.
    """
    module = type(obj).__module__.split(".", 1)[0]
    try:
        if module == "pandas":
            import pandas as pd

            if isinstance(obj, pd.DataFrame):
                import pyarrow as pa

                return pa.Table.from_pandas(obj, preserve_index=False)
        elif module == "polars":
            import polars as pl

            if isinstance(obj, pl.LazyFrame):
                obj = obj.collect()
            if isinstance(obj, pl.DataFrame):
                return obj.to_arrow()
        elif module == "pyarrow":
            import pyarrow as pa

            if isinstance(obj, pa.RecordBatch):
                return pa.Table.from_batches([obj])
            if isinstance(obj, (pa.Table, pa.RecordBatchReader)):
                return obj
    except RuntimeError:
        raise
    except Exception as e:  # conversion errors of pandas/pyarrow/polars
        raise RuntimeError(
            f"COPY FROM {name}: cannot convert the {type(obj).__name__} to Arrow: {e}"
        ) from e
    if hasattr(obj, "__arrow_c_stream__") and not isinstance(obj, type):
        return obj
    raise RuntimeError(
        f"COPY FROM {name}: unsupported object of type {type(obj).__module__}.{type(obj).__qualname__}"
        " (expected a pandas or polars DataFrame, or a pyarrow Table or RecordBatch)"
    )


_MISSING = object()


def _copy_sources(
    query: str, parameters: Optional[Mapping[str, Any]], frame: Any
) -> Tuple[Optional[Dict[str, Any]], Optional[Mapping[str, Any]]]:
    """The Arrow sources of the ``COPY T FROM name`` statements in ``query`` and
    the parameters left for the statements themselves.

    A name is looked up in ``parameters`` first, then in the caller's local and
    global variables (as Kùzu and DuckDB do)."""
    if "copy" not in query.lower():
        return None, parameters
    names = _kithdb._copy_source_names(query)
    if not names:
        return None, parameters
    rest = dict(parameters) if parameters else {}
    sources: Dict[str, Any] = {}
    for name in names:
        obj = rest.pop(name, _MISSING)
        if obj is _MISSING and frame is not None:
            obj = frame.f_locals.get(name, _MISSING)
            if obj is _MISSING:
                obj = frame.f_globals.get(name, _MISSING)
        if obj is _MISSING:
            raise RuntimeError(
                f"COPY FROM {name}: no parameter and no variable named '{name}' in the calling "
                f"scope (pass the DataFrame as parameters={{'{name}': df}})"
            )
        sources[name] = _as_arrow(obj, name)
    return sources, rest


class Connection(_kithdb.Connection):
    """A session on a :class:`Database` that runs Cypher statements.

    ``Connection(database, num_threads=None)``: ``num_threads`` limits the
    worker threads this connection's queries use (``CALL threads=N``); by
    default they use the database's whole pool. Several connections on one
    database may run statements at the same time (from different threads).
    """

    def execute(self, query: str, parameters: Optional[Mapping[str, Any]] = None) -> "QueryResult":
        """Run ``query`` (one or more ``;``-separated statements) and return the last
        statement's result.

        ``parameters`` gives values to ``$name`` parameters (int, float, str, bool,
        None, date, datetime, timedelta, list, dict).

        ``COPY T FROM df`` loads a pandas DataFrame, a polars DataFrame or a
        pyarrow Table/RecordBatch into table ``T``: ``df`` is looked up in
        ``parameters`` first (``execute("COPY T FROM df", {"df": frame})``), then
        among the caller's local and global variables. The data crosses into the
        engine through the Arrow C stream interface without per-value Python
        objects (pandas is converted with ``pyarrow.Table.from_pandas``, its index
        dropped; polars with ``to_arrow()``). Columns map to the table's
        properties by position (for rel tables the first two columns are the
        ``from`` and ``to`` primary keys), as for CSV files; nulls (``None``,
        ``NaN``, ``pd.NA``) load as NULL. The COPY is all-or-nothing: a value that
        does not convert, a duplicate or NULL primary key, a missing endpoint, or
        a column count or type mismatch raises :class:`kithdb.RuntimeError` (rows
        counted from 1) and leaves the database unchanged.

        The GIL is released while the query runs. Raises :class:`kithdb.RuntimeError`
        with the engine's message when a statement fails (or is interrupted).
        """
        sources, parameters = _copy_sources(query, parameters, sys._getframe(1))
        return QueryResult(super().execute(query, parameters, sources))

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Database(_kithdb.Database):
    """An open KithDB database.

    ``Database(path=None, buffer_pool_size=0, read_only=False, max_threads=0)``:
    ``path`` is a directory (created if needed) or ``None``/``":memory:"`` for an
    in-memory database; ``buffer_pool_size`` is the memory limit in bytes (0: a
    fraction of physical memory); ``max_threads`` sizes the shared worker pool
    (0: all cores).
    """

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class QueryResult:
    """The rows of one statement's result.

    Iterating yields each row as a tuple (``INT*`` -> int, ``FLOAT``/``DOUBLE`` ->
    float, ``STRING`` -> str, ``BOOL`` -> bool, NULL -> None, ``DATE`` ->
    ``datetime.date``, ``TIMESTAMP`` -> ``datetime.datetime``, ``INTERVAL`` ->
    ``datetime.timedelta`` (a month counts 30 days), lists -> list, structs and
    maps -> dict, nodes and rels -> dicts with ``_id``, ``_label`` and their
    properties). ``get_next``/``has_next`` and iteration share one cursor; the
    ``get_as_*`` conversions always cover all rows.
    """

    __slots__ = ("_result",)

    def __init__(self, native: _kithdb.QueryResult) -> None:
        self._result = native

    def __iter__(self) -> Iterator[Tuple[Any, ...]]:
        return self._result

    def __len__(self) -> int:
        return len(self._result)

    def __repr__(self) -> str:
        return f"<kithdb.QueryResult columns={self.get_column_names()!r} rows={len(self)}>"

    def get_column_names(self) -> List[str]:
        """The column names, in order."""
        return self._result.get_column_names()

    def get_column_data_types(self) -> List[str]:
        """The column types as KithDB type names (``INT64``, ``STRING``, ``INT64[]``, ``NODE``, ...)."""
        return self._result.get_column_data_types()

    def get_num_tuples(self) -> int:
        """The number of rows."""
        return self._result.get_num_tuples()

    def has_next(self) -> bool:
        """True while ``get_next`` has a row to return."""
        return self._result.has_next()

    def get_next(self) -> Tuple[Any, ...]:
        """The next row as a tuple; raises :class:`kithdb.RuntimeError` when none is left."""
        return self._result.get_next()

    def reset_iterator(self) -> None:
        """Moves the row cursor back to the first row."""
        self._result.reset_iterator()

    def fetch_all(self) -> List[Tuple[Any, ...]]:
        """The remaining rows as a list of tuples."""
        return self._result.fetch_all()

    def close(self) -> None:
        """Releases nothing yet (results are materialised); kept for API compatibility."""

    def get_as_arrow(self, chunk_size: Optional[int] = 1_000_000) -> "pyarrow.Table":  # noqa: F821
        """The result as a ``pyarrow.Table`` in record batches of at most ``chunk_size`` rows.

        Scalar columns are built from the engine's typed vectors in Rust and passed
        to pyarrow through the Arrow C data interface (no per-value Python objects):
        DATE -> date32, TIMESTAMP -> timestamp[us], INTERVAL -> duration[us];
        LIST, STRUCT and MAP columns of such types become list, struct and map
        arrays; nodes, rels and paths become structs shaped like the row API's
        dicts (``_id``, ``_label``, one field per property over the column's
        labels, rels also ``_src``/``_dst``, paths ``_nodes``/``_rels``).
        Variant (ANY) columns, and graph columns whose property types disagree
        across labels, are converted through Python objects (pyarrow infers
        their type).
        """
        import pyarrow as pa

        names = self.get_column_names()
        arrays = self._result._arrow_columns()
        table = pa.Table.from_arrays(arrays, names=names)
        if chunk_size is not None and chunk_size > 0 and table.num_rows > chunk_size:
            table = pa.Table.from_batches(table.to_batches(max_chunksize=chunk_size), table.schema)
        return table

    def get_as_df(self) -> "pandas.DataFrame":  # noqa: F821
        """The result as a ``pandas.DataFrame`` (built through :meth:`get_as_arrow`)."""
        return self.get_as_arrow(chunk_size=None).to_pandas()

    def get_as_pl(self) -> "polars.DataFrame":  # noqa: F821
        """The result as a ``polars.DataFrame`` (built through :meth:`get_as_arrow`)."""
        import polars as pl

        return pl.from_arrow(self.get_as_arrow(chunk_size=None))

    def get_as_networkx(self, directed: bool = True) -> Any:
        """The nodes and rels in the result as a ``networkx.MultiDiGraph`` (or a
        ``networkx.MultiGraph`` with ``directed=False``), as Kùzu 0.11 returns them.

        Every node and rel value in any column (also inside paths and lists) is
        added once, however many rows repeat it; other values are ignored. A node
        is keyed by its internal id as a string ``"<table>:<offset>"`` (the
        ``_id`` dict's ``table`` and ``offset``), with its properties, ``_label``
        and ``_id`` as attributes. A rel becomes an edge from its source to its
        destination node keyed by its own internal id string, with its properties,
        ``_label`` and ``_id`` as attributes; an endpoint not returned as a node
        appears without attributes. Parallel rels stay separate edges. Rows
        without graph values give an empty graph.
        """
        import networkx as nx

        graph = nx.MultiDiGraph() if directed else nx.MultiGraph()
        nodes, rels = self._result._graph_values()

        def key(internal_id: Dict[str, int]) -> str:
            return f"{internal_id['table']}:{internal_id['offset']}"

        for node in nodes:
            k = key(node["_id"])
            if k not in graph or not graph.nodes[k]:
                graph.add_node(k, **node)
        for rel in rels:
            attrs = {k: v for k, v in rel.items() if k not in ("_src", "_dst")}
            src, dst, k = key(rel["_src"]), key(rel["_dst"]), key(rel["_id"])
            if not graph.has_edge(src, dst, key=k):
                graph.add_edge(src, dst, key=k, **attrs)
        return graph
