#!/usr/bin/env python3
"""NetworKit driver for kith-bench: the BFS reference of issue 4, same
JSON-lines protocol as bench/kuzu_driver.py (see there).

NetworKit runs no Cypher. kith-bench sends it no DDL, and as `exec` queries
JSON requests (crates/kith-bench/src/networkit.rs writes them):

  {"load":"nodes","path":P,"id":"id"}
      reads the id column of the CSV file P and numbers the ids densely
      (the only node file: the suites that have a NetworKit form have one);
  {"load":"edges","path":P,"from":"from","to":"to","directed":B}
      reads the two endpoint columns, maps them to dense ids and builds the
      nk.Graph (directed or not; an undirected graph walks every edge both
      ways, as Cypher's `-[]-`). `ms` of a load is reading plus building;
  {"op":"bfs-count"|"bfs-lengths","walk":"out"|"both","sources":[ids],"max_hops":H}
      a BFS from each distinct source id (ids not in the node file reach
      nothing), keeping the nodes at distance 1..H: the source itself
      (distance 0) is not counted even when a cycle leads back to it, as
      KithDB's and Kuzu's `-[* SHORTEST 1..H]->` do not return it. Rows:
      [[count]] or [[count, sum of distances]], summed over the sources.

`ms` of a query is NetworKit's nk.distance.SPSP run alone (one BFS per
source without paths, in parallel over the sources on the `open`'s thread
count, as nk.setNumberOfThreads sets it); reducing its distance matrix to
the row with numpy comes after the clock stops. The BFS itself is not
bounded by H (NetworKit's BFS has no depth limit), so on a graph with a
diameter above H it does more work than the query asks for. A query
timeout cannot interrupt NetworKit: only kith-bench's hard timeout (which
kills the driver) stops a runaway query.

If networkit (or numpy) cannot be imported, the greeting is
{"ok":false,"error":"networkit not installed: ..."} and the driver exits.
"""

import json
import sys
import time

from driver_io import out, proc_status_kb


def read_int_columns(np, path, names):
    """The named columns of a CSV file with a header, as int64 arrays."""
    with open(path) as f:
        header = f.readline().rstrip("\r\n").split(",")
    try:
        idx = [header.index(n) for n in names]
    except ValueError:
        raise ValueError("%s has columns %s, not %s" % (path, header, names))
    data = np.loadtxt(
        path,
        delimiter=",",
        skiprows=1,
        usecols=idx,
        dtype=np.int64,
        comments=None,
        quotechar='"',
        ndmin=2,
    )
    return [data[:, k] for k in range(len(names))]


class Graph:
    """The driver's state: dense numbering of the node ids and the graph."""

    def __init__(self, nk, np):
        self.nk = nk
        self.np = np
        self.sorted_ids = None  # the node ids, sorted
        self.dense_of_sorted = None  # dense id of each sorted id
        self.graph = None
        self.directed = None

    def load_nodes(self, req):
        np = self.np
        if self.sorted_ids is not None:
            raise RuntimeError("the networkit driver takes one node file")
        (ids,) = read_int_columns(np, req["path"], [req.get("id", "id")])
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        if len(sorted_ids) > 1 and (sorted_ids[1:] == sorted_ids[:-1]).any():
            raise ValueError("%s: duplicate node ids" % req["path"])
        self.sorted_ids = sorted_ids
        self.dense_of_sorted = order.astype(np.uint64)

    def dense(self, ids, what):
        """Dense ids of external `ids`; every one must be a node."""
        np = self.np
        n = len(self.sorted_ids)
        if n == 0:
            if len(ids):
                raise ValueError("%s: there are no nodes" % what)
            return np.zeros(0, dtype=np.uint64)
        pos = np.searchsorted(self.sorted_ids, ids)
        found = self.sorted_ids[np.minimum(pos, n - 1)] == ids
        if not found.all():
            raise ValueError("%s: id %d is not a node" % (what, ids[np.argmin(found)]))
        return self.dense_of_sorted[pos]

    def load_edges(self, req):
        if self.sorted_ids is None:
            raise RuntimeError("load the node file before the edges")
        if self.graph is not None:
            raise RuntimeError("the networkit driver takes one edge file")
        src, dst = read_int_columns(self.np, req["path"], [req.get("from", "from"), req.get("to", "to")])
        what = req["path"]
        self.directed = bool(req.get("directed", True))
        self.graph = self.nk.GraphFromCoo(
            (self.dense(src, what), self.dense(dst, what)),
            n=len(self.sorted_ids),
            directed=self.directed,
        )

    def sources(self, ids):
        """Dense ids of the distinct source ids that are nodes, in order."""
        np = self.np
        seen = []
        for x in ids:
            if x not in seen:
                seen.append(x)
        if not seen or len(self.sorted_ids) == 0:
            return []
        want = np.array(seen, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.sorted_ids, want), len(self.sorted_ids) - 1)
        keep = self.sorted_ids[pos] == want
        return [int(v) for v in self.dense_of_sorted[pos[keep]]]

    def bfs(self, req):
        """(ms, columns, rows) of a BFS request."""
        np = self.np
        if self.graph is None:
            raise RuntimeError("no graph loaded")
        walk = req.get("walk", "out")
        if walk not in ("out", "both"):
            raise ValueError("unknown walk %r" % (walk,))
        if (walk == "out") != self.directed:
            raise ValueError(
                "the graph was loaded %s; this query walks %s"
                % ("directed" if self.directed else "undirected", walk)
            )
        op = req.get("op")
        if op not in ("bfs-count", "bfs-lengths"):
            raise ValueError("unknown op %r" % (op,))
        max_hops = int(req.get("max_hops", 30))
        sources = self.sources(req.get("sources") or [])
        count = 0
        total = 0
        ms = 0.0
        if sources:
            spsp = self.nk.distance.SPSP(self.graph, sources)
            t0 = time.perf_counter()
            spsp.run()
            ms = (time.perf_counter() - t0) * 1000.0
            dist = np.asarray(spsp.getDistances(asarray=True))
            # Unreached nodes have the largest double as their distance.
            reached = (dist >= 1) & (dist <= max_hops)
            count = int(reached.sum())
            total = int(dist[reached].sum())
        if op == "bfs-count":
            return ms, ["count"], [[count]]
        # KithDB's sum over no rows is 0.
        return ms, ["count", "sum_lengths"], [[count, total]]


def main():
    try:
        # networkit first: it needs numpy itself, and a missing networkit
        # is what the refusal must name.
        import networkit as nk
        import numpy as np
    except Exception as e:  # ImportError, or a broken installation
        out({"ok": False, "error": "networkit not installed: %s (install it with: pip install networkit)" % (e,)})
        return 2

    out({"ok": True, "engine": "networkit", "version": getattr(nk, "__version__", "?"), "rss_kb": proc_status_kb("VmRSS")})

    state = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "open":
                # In memory: the path and buffer pool size do not apply.
                threads = int(req.get("threads", 0))
                if threads > 0:
                    nk.setNumberOfThreads(threads)
                state = Graph(nk, np)
                out({"ok": True})
            elif cmd == "exec":
                if state is None:
                    raise RuntimeError("no open database")
                text = req["query"]
                try:
                    q = json.loads(text)
                except ValueError:
                    q = None
                if not isinstance(q, dict):
                    raise ValueError("the networkit driver runs JSON requests, not %r" % (text[:80],))
                if "load" in q:
                    t0 = time.perf_counter()
                    if q["load"] == "nodes":
                        state.load_nodes(q)
                    elif q["load"] == "edges":
                        state.load_edges(q)
                    else:
                        raise ValueError("unknown load %r" % (q["load"],))
                    ms = (time.perf_counter() - t0) * 1000.0
                    out({"ok": True, "ms": ms, "columns": [], "rows": []})
                else:
                    ms, cols, rows = state.bfs(q)
                    out({"ok": True, "ms": ms, "columns": cols, "rows": rows})
            elif cmd == "stats":
                out({"ok": True, "peak_rss_kb": proc_status_kb("VmHWM"), "rss_kb": proc_status_kb("VmRSS")})
            elif cmd == "close":
                state = None
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
