"""What every Python engine driver of kith-bench shares: writing one JSON
reply per line, reading its process's memory from /proc, and telling which
texts are read queries worth preparing once."""

import json
import sys


def out(obj):
    """One reply: a JSON object on one line, flushed."""
    sys.stdout.write(json.dumps(obj, allow_nan=False, default=str) + "\n")
    sys.stdout.flush()


def proc_status_kb(field):
    """A kB field of /proc/self/status (VmHWM = peak RSS, VmRSS = current)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    if field == "VmHWM":
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    return None


READ_STARTS = ("MATCH", "OPTIONAL", "UNWIND", "WITH", "RETURN", "SELECT")


def is_read_query(text):
    """Whether `text` is one read statement (Cypher or SQL): the drivers
    prepare such a text once and execute the prepared statement on every
    run, so no engine parses and plans a repeated query again (KithDB keeps
    plans by text on its own)."""
    t = text.strip().rstrip(";")
    return ";" not in t and t.split(None, 1)[0].upper() in READ_STARTS if t else False
