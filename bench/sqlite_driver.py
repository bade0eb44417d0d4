#!/usr/bin/env python3
"""SQLite driver for kith-bench's `processes` suite: JSON lines on stdin/stdout.

The reference for issue 53's commit-latency target: SQLite through Python's
sqlite3 module, `PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL`, every
statement in autocommit mode. One process is the writer; others read with
the SQL equivalents of the suite's Cypher reads. The schema and rows are the
suite's: p(id INTEGER PRIMARY KEY, name, age), k(src, dst, since) with an
index on k(src), loaded from the CSV files KithDB COPYs.

Protocol (one JSON object per line; same framing as kuzu_driver.py):
  -> (on start)            <- {"ok":true,"engine":"sqlite","version":..,"rss_kb":..}
  -> {"cmd":"open","path":P}                                    <- {"ok":true}
  -> {"cmd":"load","nodes_csv":F,"rels_csv":G}                  <- {"ok":true,"ms":..}
     (creates the tables, inserts the rows in one transaction, builds the index)
  -> {"cmd":"exec","query":SQL}          <- {"ok":true,"ms":..,"columns":[..],"rows":[[..],..]}
  -> {"cmd":"exec_params","query":SQL,"rows":[[..],..],"per_tx":K,"max_ms":M,"latencies":B}
        <- {"ok":true,"ms":..,"rows_done":N,"txns":T,"t0_unix_us":..,"t1_unix_us":..,
            "lat_ms":[..] (with B: each transaction's time)}
  -> {"cmd":"read_start","threads":1,"seed":S,"nodes":N,"warmup_ms":W}   <- {"ok":true}
     (a thread alternates the point lookup and the 1-hop count on random ids
      below N, checking every answer; queries after W ms are counted)
  -> {"cmd":"read_stop"}   <- {"ok":true,"qps":..,"ops":..,"ms":..,"mismatches":..,
                               "errors":..,"problem":..}
  -> {"cmd":"stats"}, {"cmd":"close"}, {"cmd":"quit"}
Errors are answered as {"ok":false,"error":"..."}; the driver keeps going.
"""

import csv
import json
import random
import sqlite3
import sys
import threading
import time

from driver_io import out, proc_status_kb

LOOKUP = "SELECT age, name FROM p WHERE id = ?"
HOP = "SELECT count(*) FROM k WHERE src = ?"


def connect(path):
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=60000")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def load(conn, nodes_csv, rels_csv):
    t0 = time.perf_counter()
    conn.execute("CREATE TABLE p(id INTEGER PRIMARY KEY, name TEXT, age INTEGER)")
    conn.execute("CREATE TABLE k(src INTEGER, dst INTEGER, since INTEGER)")
    conn.execute("BEGIN")
    for table, path, sql in (
        ("p", nodes_csv, "INSERT INTO p VALUES (?, ?, ?)"),
        ("k", rels_csv, "INSERT INTO k VALUES (?, ?, ?)"),
    ):
        with open(path, newline="") as f:
            r = csv.reader(f)
            next(r)
            if table == "p":
                conn.executemany(sql, ((int(a), b, int(c)) for a, b, c in r))
            else:
                conn.executemany(sql, ((int(a), int(b), int(c)) for a, b, c in r))
    conn.execute("CREATE INDEX k_src ON k(src)")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return (time.perf_counter() - t0) * 1000.0


def exec_params(conn, req):
    rows = [tuple(r) for r in req.get("rows") or []]
    per_tx = max(1, int(req.get("per_tx") or 1))
    max_ms = float(req.get("max_ms") or 0)
    latencies = bool(req.get("latencies"))
    lat = []
    query = req["query"]
    done = txns = 0
    t0_unix = time.time_ns() // 1000
    t0 = time.perf_counter()
    for start in range(0, len(rows), per_tx):
        group = rows[start : start + per_tx]
        tx0 = time.perf_counter()
        if per_tx > 1:
            conn.execute("BEGIN")
        try:
            for r in group:
                conn.execute(query, r)
                done += 1
        except Exception:
            if per_tx > 1:
                conn.execute("ROLLBACK")
            raise
        if per_tx > 1:
            conn.execute("COMMIT")
        if latencies:
            lat.append((time.perf_counter() - tx0) * 1000.0)
        txns += 1
        if max_ms > 0 and (time.perf_counter() - t0) * 1000.0 >= max_ms:
            break
    reply = {
        "ok": True,
        "ms": (time.perf_counter() - t0) * 1000.0,
        "rows_done": done,
        "txns": txns,
        "t0_unix_us": t0_unix,
        "t1_unix_us": time.time_ns() // 1000,
    }
    if latencies:
        reply["lat_ms"] = lat
    return reply


class Reader(threading.Thread):
    def __init__(self, path, seed, nodes, warmup_ms):
        super().__init__(daemon=True)
        self.path, self.seed, self.nodes, self.warmup = path, seed, nodes, warmup_ms / 1000.0
        self.stop = threading.Event()
        self.ops = self.mismatches = self.errors = 0
        self.ms = 0.0
        self.problem = None

    def run(self):
        conn = connect(self.path)
        rnd = random.Random(self.seed)
        started = time.perf_counter()
        timed = None
        k = 0
        while not self.stop.is_set():
            if timed is None and time.perf_counter() - started >= self.warmup:
                timed = time.perf_counter()
            i = rnd.randrange(self.nodes)
            lookup = k % 2 == 0
            k += 1
            try:
                if lookup:
                    good = conn.execute(LOOKUP, (i,)).fetchall() == [(i % 100, "n%d" % i)]
                else:
                    good = conn.execute(HOP, (i,)).fetchall() == [(i % 21,)]
                if not good:
                    self.mismatches += 1
                    self.problem = self.problem or "wrong answer for id %d" % i
            except Exception as e:
                self.errors += 1
                self.problem = self.problem or "%s: %s" % (type(e).__name__, e)
            if timed is not None:
                self.ops += 1
        if timed is not None:
            self.ms = (time.perf_counter() - timed) * 1000.0
        conn.close()


def main():
    out({"ok": True, "engine": "sqlite", "version": sqlite3.sqlite_version, "rss_kb": proc_status_kb("VmRSS")})
    conn = None
    path = None
    reader = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "open":
                path = req["path"]
                conn = connect(path)
                out({"ok": True})
            elif cmd == "load":
                out({"ok": True, "ms": load(conn, req["nodes_csv"], req["rels_csv"])})
            elif cmd == "exec":
                t0 = time.perf_counter()
                cur = conn.execute(req["query"], req.get("params") or ())
                rows = [list(r) for r in cur.fetchall()]
                cols = [d[0] for d in cur.description or []]
                out({"ok": True, "ms": (time.perf_counter() - t0) * 1000.0, "columns": cols, "rows": rows})
            elif cmd == "exec_params":
                out(exec_params(conn, req))
            elif cmd == "read_start":
                if reader is not None:
                    raise RuntimeError("read_start: reads are already running")
                if int(req.get("threads") or 1) != 1:
                    raise RuntimeError("read_start: one reading thread per process")
                reader = Reader(path, int(req.get("seed") or 0), int(req["nodes"]), float(req.get("warmup_ms") or 0))
                reader.start()
                out({"ok": True})
            elif cmd == "read_stop":
                if reader is None:
                    raise RuntimeError("read_stop: no reads running")
                reader.stop.set()
                reader.join()
                r, reader = reader, None
                qps = r.ops / r.ms * 1000.0 if r.ms > 0 else 0.0
                problem = r.problem or (None if r.ms > 0 else "stopped before the warm-up ended")
                out({"ok": True, "qps": qps, "ops": r.ops, "ms": r.ms, "mismatches": r.mismatches, "errors": r.errors, "problem": problem})
            elif cmd == "stats":
                out({"ok": True, "peak_rss_kb": proc_status_kb("VmHWM"), "rss_kb": proc_status_kb("VmRSS")})
            elif cmd == "close":
                if reader is not None:
                    reader.stop.set()
                    reader.join()
                    reader = None
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
