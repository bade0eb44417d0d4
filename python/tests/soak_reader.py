"""Reader child of the process soak (crates/kith-cli/tests/process_soak.rs).

Not a pytest module: the soak starts it as
``python soak_reader.py <db path>``. It opens the database read-only and
behaves like ``kith --read-only --format jsonl`` on piped input: it runs one
statement per input line (a trailing ``;`` is dropped) and prints each
result row as one JSON object, flushed; the first failing statement goes to
standard error and ends the process with status 1.

If the installed ``kithdb`` module predates this build (it cannot read the
database's format, or does not map ``<db>.shm``), it prints ``{"skip": "<why>"}`` and exits 0, so the
soak leaves the Python reader out instead of failing on a stale build.
"""

import json
import sys

import kithdb


def maps_shared_file(path):
    """Whether this process maps ``<path>.shm`` (Linux only; else assume so)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            maps = f.read()
    except OSError:
        return True
    return (path + ".shm") in maps


def skip(why):
    """Tells the soak to leave this reader out (a stale kithdb build)."""
    print(json.dumps({"skip": why + "; rebuild it with python/test.sh"}), flush=True)
    return 0


def main():
    path = sys.argv[1]
    try:
        db = kithdb.Database(path, read_only=True, max_threads=1)
    except kithdb.RuntimeError as e:
        if "unsupported" in str(e) and "format" in str(e):
            return skip(f"the installed kithdb cannot read this database ({e})")
        raise
    conn = kithdb.Connection(db)
    if not maps_shared_file(path):
        return skip("the installed kithdb does not map <db>.shm")
    for line in sys.stdin:
        statement = line.strip().rstrip(";").strip()
        if not statement:
            continue
        try:
            result = conn.execute(statement)
            names = result.get_column_names()
            rows = [dict(zip(names, row)) for row in result]
        except Exception as e:  # noqa: BLE001 - any failure ends the reader
            print(f"{statement}: {e}", file=sys.stderr, flush=True)
            return 1
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
