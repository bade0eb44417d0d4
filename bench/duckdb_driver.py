#!/usr/bin/env python3
"""DuckDB driver for kith-bench: the SQL reference, same JSON-lines protocol
as bench/kuzu_driver.py (see there). kith-bench sends it the suites' SQL
equivalents (`sql_ddl`, the loads as DuckDB COPY, each query's `sql`).

`open` sets DuckDB's `threads` to the thread count, `memory_limit` to the
buffer pool size and caps spilling at SPILL_LIMIT; `exec` runs one statement and fetches every row; a query
timeout interrupts the connection from a timer thread.
"""

import decimal
import json
import math
import sys
import threading
import time

from driver_io import is_read_query, out, proc_status_kb

# Most a query may spill to disk (DuckDB syntax).
SPILL_LIMIT = "8GB"


def to_json_value(v):
    """Values as JSON: ints stay ints (HUGEINT sums arrive as Python ints),
    doubles stay doubles, everything else as text."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, decimal.Decimal):
        if v == v.to_integral_value():
            return int(v)
        return float(v)
    if isinstance(v, (list, tuple)):
        return [to_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): to_json_value(x) for k, x in v.items()}
    return str(v)


def main():
    try:
        import duckdb
    except ImportError as e:
        out(
            {
                "ok": False,
                "error": "the duckdb Python package is not installed ("
                + str(e)
                + "); install it with: pip install --user duckdb",
            }
        )
        return 2

    out({"ok": True, "engine": "duckdb", "version": getattr(duckdb, "__version__", "?"), "rss_kb": proc_status_kb("VmRSS")})

    conn = None
    # Names of the prepared statements of the read queries run so far.
    prepared = {}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "open":
                conn = duckdb.connect(req["path"])
                prepared = {}
                threads = int(req.get("threads", 0))
                if threads > 0:
                    conn.execute("SET threads = %d" % threads)
                if req.get("buffer_pool_bytes"):
                    conn.execute("SET memory_limit = '%dB'" % int(req["buffer_pool_bytes"]))
                # DuckDB spills joins that exceed memory_limit to disk, by
                # default up to 90 % of the free space: SQ3 on 1 M nodes
                # once filled a shared disk. Cap it; the query then fails.
                conn.execute("SET max_temp_directory_size = '%s'" % SPILL_LIMIT)
                out({"ok": True})
            elif cmd == "exec":
                if conn is None:
                    raise RuntimeError("no open database")
                timeout_ms = int(req.get("timeout_ms") or 0)
                timer = None
                if timeout_ms > 0:
                    timer = threading.Timer(timeout_ms / 1000.0, conn.interrupt)
                    timer.start()
                try:
                    query = req["query"]
                    name = prepared.get(query)
                    if name is None and is_read_query(query):
                        # Prepared on its first (warm-up) run, outside the
                        # clock; "" marks a text DuckDB would not prepare.
                        name = "kb_%d" % len(prepared)
                        try:
                            conn.execute("PREPARE %s AS %s" % (name, query.strip().rstrip(";")))
                        except duckdb.Error:
                            name = ""
                        prepared[query] = name
                    t0 = time.perf_counter()
                    cur = conn.execute("EXECUTE " + name if name else query)
                    rows = cur.fetchall() if cur.description is not None else []
                    ms = (time.perf_counter() - t0) * 1000.0
                    cols = [d[0] for d in cur.description] if cur.description else []
                finally:
                    if timer is not None:
                        timer.cancel()
                out({"ok": True, "ms": ms, "columns": cols, "rows": to_json_value(rows)})
            elif cmd == "stats":
                out({"ok": True, "peak_rss_kb": proc_status_kb("VmHWM"), "rss_kb": proc_status_kb("VmRSS")})
            elif cmd == "close":
                if conn is not None:
                    conn.close()
                conn = None
                out({"ok": True})
            elif cmd == "quit":
                break
            else:
                out({"ok": False, "error": "unknown command: %r" % (cmd,)})
        except Exception as e:  # report and keep serving
            out({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
