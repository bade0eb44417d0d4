#!/usr/bin/env python3
"""Kùzu driver for kith-bench: JSON lines on stdin/stdout.

kith-bench starts this once per (engine, thread count) configuration so that
timings exclude Python start-up and peak memory is per configuration.

Protocol (one JSON object per line):
  -> (on start)                            <- {"ok":true,"engine":"kuzu","version":..,"rss_kb":..}
  -> {"cmd":"open","path":P,"threads":T,"buffer_pool_bytes":B}   <- {"ok":true}
  -> {"cmd":"exec","query":Q,"timeout_ms":M}  (M = 0: no limit)              <- {"ok":true,"ms":F,"columns":[..],"rows":[[..],..]}
  -> {"cmd":"exec_params","query":Q,"names":[..],"rows":[[..],..],"per_tx":K,"max_ms":M}
                                           <- {"ok":true,"ms":F,"rows_done":N,"txns":T}
     (Q once per row with the row's values as parameters, prepared once;
      K > 1: K rows per BEGIN TRANSACTION .. COMMIT, else auto-commit;
      M > 0: stop at the first transaction boundary after M ms; `ms` is the
      whole loop, so protocol round trips are not timed per statement)
  -> {"cmd":"stats"}                       <- {"ok":true,"peak_rss_kb":N,"rss_kb":N}
  -> {"cmd":"close"}                       <- {"ok":true}
  -> {"cmd":"quit"}                        (exits)
Errors are answered as {"ok":false,"error":"..."}; the driver keeps going.
`ms` covers execute() plus fetching every row; nothing else.
"""

import decimal
import json
import math
import sys
import time
import warnings

from driver_io import is_read_query, out, proc_status_kb


def to_json_value(v):
    """Values as JSON: ints stay ints, doubles stay doubles (repr round-trips)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return str(v)
    if isinstance(v, decimal.Decimal):
        # INT128 (e.g. sum of INT32) arrives as an integral Decimal.
        if v == v.to_integral_value():
            return int(v)
        return float(v)
    if isinstance(v, (list, tuple)):
        return [to_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): to_json_value(x) for k, x in v.items()}
    return str(v)


def exec_params(conn, req):
    names = req.get("names") or []
    # Parameter dicts are built before the clock starts (client-side work).
    params = [dict(zip(names, r)) for r in req.get("rows") or []]
    per_tx = max(1, int(req.get("per_tx") or 1))
    max_ms = float(req.get("max_ms") or 0)
    done = 0
    txns = 0
    t0 = time.perf_counter()
    # Prepared once: Kuzu's fastest path for a repeated statement (0.11
    # warns that separate prepare + execute is deprecated; it still works).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        stmt = conn.prepare(req["query"])
    for start in range(0, len(params), per_tx):
        group = params[start : start + per_tx]
        if per_tx > 1:
            conn.execute("BEGIN TRANSACTION")
        try:
            for p in group:
                conn.execute(stmt, p)
                done += 1
        except Exception:
            if per_tx > 1:
                try:
                    conn.execute("ROLLBACK")
                except Exception:
                    pass
            raise
        if per_tx > 1:
            conn.execute("COMMIT")
        txns += 1
        if max_ms > 0 and (time.perf_counter() - t0) * 1000.0 >= max_ms:
            break
    ms = (time.perf_counter() - t0) * 1000.0
    return {"ok": True, "ms": ms, "rows_done": done, "txns": txns}


def main():
    try:
        import kuzu
    except ImportError as e:
        out(
            {
                "ok": False,
                "error": "the kuzu Python package is not installed ("
                + str(e)
                + "); install it with: pip install 'kuzu==0.11.*'",
            }
        )
        return 2

    out({"ok": True, "engine": "kuzu", "version": getattr(kuzu, "__version__", "?"), "rss_kb": proc_status_kb("VmRSS")})

    db = None
    conn = None
    timeout_ms = 0
    # Prepared statements of the read queries run so far, by text.
    prepared = {}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "open":
                threads = int(req.get("threads", 0))
                kwargs = {"max_num_threads": threads}
                if req.get("buffer_pool_bytes"):
                    kwargs["buffer_pool_size"] = int(req["buffer_pool_bytes"])
                db = kuzu.Database(req["path"], **kwargs)
                conn = kuzu.Connection(db, num_threads=threads)
                timeout_ms = 0
                prepared = {}
                out({"ok": True})
            elif cmd == "exec":
                if conn is None:
                    raise RuntimeError("no open database")
                want = int(req.get("timeout_ms") or 0)
                if want != timeout_ms:
                    conn.set_query_timeout(want)
                    timeout_ms = want
                query = req["query"]
                stmt = prepared.get(query)
                if stmt is None and is_read_query(query):
                    # Prepared on its first (warm-up) run, outside the
                    # clock; False marks a text Kuzu would not prepare.
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", DeprecationWarning)
                        stmt = conn.prepare(query)
                    if not stmt.is_success():
                        stmt = False
                    prepared[query] = stmt
                t0 = time.perf_counter()
                res = conn.execute(stmt if stmt else query)
                if isinstance(res, list):  # several statements: keep the last
                    res = res[-1]
                rows = []
                while res.has_next():
                    rows.append(res.get_next())
                ms = (time.perf_counter() - t0) * 1000.0
                cols = res.get_column_names()
                res.close()
                out({"ok": True, "ms": ms, "columns": cols, "rows": to_json_value(rows)})
            elif cmd == "exec_params":
                if conn is None:
                    raise RuntimeError("no open database")
                out(exec_params(conn, req))
            elif cmd == "stats":
                out({"ok": True, "peak_rss_kb": proc_status_kb("VmHWM"), "rss_kb": proc_status_kb("VmRSS")})
            elif cmd == "close":
                prepared = {}
                if conn is not None:
                    conn.close()
                if db is not None:
                    db.close()
                conn = None
                db = None
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
