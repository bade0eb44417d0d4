#!/usr/bin/env python3
"""Compares kith-bench JSON reports of two KithDB builds (an A/B run).

    kith-bench-old run --suites micro --data D --engines kith --json a1.json
    kith-bench-new run --suites micro --data D --engines kith --json b1.json
    ... (alternate the builds, several rounds)
    bench/ab_compare.py --a a1.json a2.json --b b1.json b2.json

For each (threads, query): each build's best minimum and median over its
files, the ratio B/A of the minima (below 1: B is faster), and whether the
row counts agree. The last line is the geometric mean of the ratios per
thread count. Exits 1 when any row count differs.
"""
import argparse
import json
import math
import sys


def same_rows(a, b):
    """Equal results, floats to a relative 1e-9 (a parallel sum of doubles
    adds in a different order from run to run)."""
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_rows(x, y) for x, y in zip(a, b))
    return a == b


def load(paths):
    """{(threads, query): (min_ms, median_ms, rows)} best over the files."""
    out = {}
    for p in paths:
        with open(p) as f:
            report = json.load(f)
        for c in report.get("configs", []):
            if not str(c.get("engine", "")).startswith("kith"):
                continue
            for q in c.get("queries", []):
                if q.get("min_ms") is None:
                    continue
                key = (c["threads"], q["name"])
                cur = out.get(key)
                cand = (q["min_ms"], q["median_ms"], q.get("rows"))
                if cur is None:
                    out[key] = cand
                else:
                    rows = cur[2] if same_rows(cur[2], cand[2]) else "differs between runs"
                    out[key] = (min(cur[0], cand[0]), min(cur[1], cand[1]), rows)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", nargs="+", required=True, help="reports of build A")
    ap.add_argument("--b", nargs="+", required=True, help="reports of build B")
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    bad = False
    ratios = {}
    print("| threads | query | A min ms | B min ms | B/A | A median | B median | rows |")
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for key in sorted(set(a) & set(b)):
        (amin, amed, arows), (bmin, bmed, brows) = a[key], b[key]
        same = same_rows(arows, brows)
        bad |= not same
        r = bmin / amin if amin > 0 else float("nan")
        if amin > 0 and bmin > 0:
            ratios.setdefault(key[0], []).append(r)
        print(
            f"| {key[0]} | {key[1]} | {amin:.2f} | {bmin:.2f} | {r:.2f} | "
            f"{amed:.2f} | {bmed:.2f} | {'same' if same else 'DIFFER'} |"
        )
    for t, rs in sorted(ratios.items()):
        g = math.exp(sum(math.log(x) for x in rs) / len(rs))
        print(f"threads {t}: geometric mean B/A of minima {g:.3f} over {len(rs)} queries")
    missing = sorted(set(a) ^ set(b))
    if missing:
        print(f"only in one build: {missing}", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
