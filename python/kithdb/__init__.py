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

Statements run with the GIL released: Python threads using separate connections
run queries concurrently, and ``Connection.interrupt()`` stops a running query.
Engine errors raise :class:`kithdb.RuntimeError` (a subclass of the built-in
``RuntimeError``) with the engine's message.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from . import _kithdb
from ._kithdb import RuntimeError

__all__ = ["Database", "Connection", "QueryResult", "RuntimeError", "__version__"]

__version__: str = _kithdb.__version__


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

        The GIL is released while the query runs. Raises :class:`kithdb.RuntimeError`
        with the engine's message when a statement fails (or is interrupted).
        ``parameters`` (``$name`` values) are not supported by the engine yet: a
        non-empty mapping raises ``NotImplementedError``.
        """
        return QueryResult(super().execute(query, parameters))

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
        DATE -> date32, TIMESTAMP -> timestamp[us], INTERVAL -> duration[us].
        Nested and graph columns are converted through Python objects for now.
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
        """The nodes and rels of the result as a ``networkx`` (Multi)DiGraph / (Multi)Graph.

        Node keys are ``"<label>_<offset>"``; node and edge attributes are the
        properties plus ``_label`` (and ``_id``). Rows without graph values give an
        empty graph.
        """
        import networkx as nx

        graph = nx.MultiDiGraph() if directed else nx.MultiGraph()
        nodes, rels = self._result._graph_values()
        labels: Dict[Tuple[int, int], str] = {}

        def key(node_id: Dict[str, int], label: Optional[str] = None) -> str:
            ident = (node_id["table"], node_id["offset"])
            if label is not None:
                labels[ident] = label
            return f"{labels.get(ident, node_id['table'])}_{node_id['offset']}"

        for node in nodes:
            graph.add_node(key(node["_id"], node["_label"]), **node)
        for rel in rels:
            attrs = {k: v for k, v in rel.items() if k not in ("_src", "_dst")}
            graph.add_edge(key(rel["_src"]), key(rel["_dst"]), **attrs)
        return graph

