"""What every Python engine driver of kith-bench shares: writing one JSON
reply per line, and reading its process's memory from /proc."""

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
