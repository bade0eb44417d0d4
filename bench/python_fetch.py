#!/usr/bin/env python3
"""Python fetch benchmark (issue 7): `get_as_df()` and `get_as_arrow()` on a
10M-row result, KithDB vs Kùzu, at 1 and 2 threads; median of 3 runs.

    .venv/bin/python bench/python_fetch.py [--rows 10000000] [--runs 3] [--threads 1,2]

Both engines load the same generated Parquet file (id INT64, age INT32,
score DOUBLE, name STRING) into a node table of an in-memory database, then
run `MATCH (p:P) RETURN p.id, p.age, p.score, p.name` and convert the result.
Every (engine, thread count) runs in its own process, so one engine's memory
does not weigh on the other. Reported per method:

* fetch: the `get_as_*` call alone (the result is already computed);
* total: `execute` plus the `get_as_*` call.

It needs pyarrow and pandas (as `python/test.sh` installs them into .venv),
`kithdb` installed in the running interpreter, and `kuzu` importable either
there or from the system `python3` (it is then loaded from that interpreter's
site-packages; only the `kuzu` package itself is added to the path).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

QUERY = "MATCH (p:P) RETURN p.id, p.age, p.score, p.name"
DDL = "CREATE NODE TABLE P(id INT64, age INT32, score DOUBLE, name STRING, PRIMARY KEY(id))"
METHODS = ("get_as_df", "get_as_arrow")
CHUNK = 1_000_000


def make_kuzu_importable() -> None:
    try:
        import kuzu  # noqa: F401
        return
    except ImportError:
        pass
    out = subprocess.run(
        ["python3", "-c", "import kuzu, os; print(os.path.dirname(kuzu.__file__))"],
        capture_output=True, text=True, check=True)
    pkg = out.stdout.strip()
    shim = tempfile.mkdtemp(prefix="kuzu-path-")
    os.symlink(pkg, os.path.join(shim, "kuzu"))
    sys.path.append(shim)


def generate(path: str, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import numpy as np

    ids = pa.array(np.arange(rows, dtype=np.int64))
    age = pc.cast(pc.remainder(ids, 100), pa.int32())
    score = pc.divide(pc.cast(ids, pa.float64()), 7.0)
    name = pc.binary_join_element_wise("person_", pc.cast(ids, pa.string()), "")
    table = pa.table({"id": ids, "age": age, "score": score, "name": name})
    pq.write_table(table, path, row_group_size=1 << 20)


def worker(engine: str, threads: int, parquet: str, runs: int) -> dict:
    """Loads the data and times each method; returns {method: {fetch: [...], total: [...]}}."""
    import pandas  # noqa: F401  (imported up front: neither engine pays for it in a timing)
    import pyarrow  # noqa: F401

    if engine == "kithdb":
        import kithdb

        db = kithdb.Database(max_threads=threads)
        conn = kithdb.Connection(db, num_threads=threads)
        version = kithdb.__version__
    else:
        make_kuzu_importable()
        import kuzu

        db = kuzu.Database(":memory:")
        conn = kuzu.Connection(db, num_threads=threads)
        version = kuzu.__version__
    conn.execute(DDL)
    t = time.perf_counter()
    conn.execute(f"COPY P FROM '{parquet}'")
    load = time.perf_counter() - t
    out: dict = {"version": version, "load_s": load, "methods": {}}
    for method in METHODS:
        fetch, total = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            result = conn.execute(QUERY)
            t1 = time.perf_counter()
            if method == "get_as_arrow":
                data = result.get_as_arrow(CHUNK)
            else:
                data = result.get_as_df()
            t2 = time.perf_counter()
            assert len(data) == out.setdefault("rows", len(data))
            fetch.append(t2 - t1)
            total.append(t2 - t0)
            del data, result
        out["methods"][method] = {"fetch": fetch, "total": total}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--worker", nargs=3, metavar=("ENGINE", "THREADS", "PARQUET"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        engine, threads, parquet = args.worker
        print(json.dumps(worker(engine, int(threads), parquet, args.runs)))
        return

    threads = [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        parquet = os.path.join(tmp, "p.parquet")
        generate(parquet, args.rows)
        results = {}
        for n in threads:
            for engine in ("kithdb", "kuzu"):
                proc = subprocess.run(
                    [sys.executable, __file__, "--runs", str(args.runs),
                     "--worker", engine, str(n), parquet],
                    capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"{engine} at {n} threads failed:\n{proc.stderr}")
                results[(engine, n)] = json.loads(proc.stdout.strip().splitlines()[-1])
                print(f"# {engine} threads={n} done (load {results[(engine, n)]['load_s']:.1f} s)",
                      file=sys.stderr)

    med = statistics.median
    kith_v = results[("kithdb", threads[0])]["version"]
    kuzu_v = results[("kuzu", threads[0])]["version"]
    print(f"Result: `{QUERY}` ({args.rows:,} rows; INT64, INT32, DOUBLE, STRING), "
          f"median of {args.runs} runs, seconds. KithDB {kith_v}, Kùzu {kuzu_v}. "
          "fetch = the get_as_* call alone; total = execute + get_as_*; "
          "ratio = Kùzu / KithDB (> 1: KithDB faster).\n")
    print("| method | threads | KithDB fetch | Kùzu fetch | fetch ratio "
          "| KithDB total | Kùzu total | total ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for method in METHODS:
        for n in threads:
            k = results[("kithdb", n)]["methods"][method]
            z = results[("kuzu", n)]["methods"][method]
            kf, zf, kt, zt = med(k["fetch"]), med(z["fetch"]), med(k["total"]), med(z["total"])
            print(f"| `{method}` | {n} | {kf:.3f} | {zf:.3f} | {zf / kf:.2f}× "
                  f"| {kt:.3f} | {zt:.3f} | {zt / kt:.2f}× |")


if __name__ == "__main__":
    main()
