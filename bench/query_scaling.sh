#!/bin/bash
# Thread scaling of the read-query suites (issue 3) on a many-core machine:
# seed 004's small queries (`sq`) on its next-neighbours graph (NODES nodes,
# K = 50), and seed 001's micro-benchmarks with the `clauses` suite on an
# R-MAT scale 16 simple graph. KithDB runs at each of THREADS; Kùzu and
# DuckDB (the peers) at PEER_THREADS (default: all cores) after it, each
# part under its own time limit so that a slow peer cannot eat the run.
#
#   [NODES=1000000] [THREADS="1 2 4 8 16"] [PEER_THREADS=$(nproc)] \
#     [BIN=target/release] [WORK=/tmp] [RUNS=3] [LIMIT=100] \
#     bash bench/query_scaling.sh OUTDIR
#
# Writes OUTDIR/{sq,micro}-{kith,peers}.md and .log (each query's median
# is in the log as soon as it is measured, so a part cut short by its limit
# keeps what it finished). The peers need python3 with kuzu and duckdb, and
# skip the 3-hop micro queries (tens of seconds each on 2 cores; measured
# beside KithDB in BENCHMARKS.md).
set -uo pipefail
OUTDIR=${1:?usage: query_scaling.sh OUTDIR}
NODES=${NODES:-1000000}
THREADS=${THREADS:-1 2 4 8 16}
PEER_THREADS=${PEER_THREADS:-$(nproc)}
BIN=${BIN:-target/release}
WORK=${WORK:-/tmp}
RUNS=${RUNS:-3}
LIMIT=${LIMIT:-100}
SQ=SQ1-scan,SQ2-filter,SQ3-expand-out,SQ4-sort,SQ5-mixed
MICRO=1hop-sel1.6,1hop-sel9.5,1hop-min-sel9.5,2hop-sel1.6,2hop-sel9.5,2hop-sel100,2hop-filter-agg,3hop-sel1.6,3hop-sel9.5,3hop-sel100,triangle-sel1.6,optional-count,optional-filter,optional-top5,optional-value-join,not-exists,exists-filter,distinct-dst,collect-per-src,indegree-over-100,group-age-top3
PEER_MICRO=$(echo "$MICRO" | tr ',' '\n' | grep -v '^3hop' | paste -sd, -)
mkdir -p "$OUTDIR"
echo "cores: $(nproc); $(uname -sr); $(grep -m1 'model name' /proc/cpuinfo)" | tee "$OUTDIR/machine.txt"
"$BIN/kith-bench" gen nn50 --nodes "$NODES" --k 50 --format parquet --out "$WORK/nn50" >/dev/null || exit 1
"$BIN/kith-bench" gen rmat --scale 16 --simple --out "$WORK/rmat16" >/dev/null || exit 1
# part NAME LIMIT SUITES DATA ENGINES THREADS QUERIES [extra kith-bench flags]
part() {
  local name=$1 limit=$2 suites=$3 data=$4 engines=$5 threads=$6 queries=$7
  shift 7
  SECONDS=0
  timeout "$limit" "$BIN/kith-bench" run --suites "$suites" --data "$data" --engines "$engines" \
    --threads "$threads" --runs "$RUNS" --warmup 1 --timeout 30 --queries "$queries" \
    --tmp-dir "$WORK" --markdown "$OUTDIR/$name.md" "$@" >"$OUTDIR/$name.log" 2>&1
  echo "$name: rc $? in ${SECONDS}s"
  grep -E "^\| " "$OUTDIR/$name.md" 2>/dev/null
}
kith_threads=$(echo $THREADS | tr ' ' ',')
part sq-kith $((LIMIT * 3 / 2)) sq "$WORK/nn50" kith "$kith_threads" "$SQ" --load-format parquet
part micro-kith "$LIMIT" micro,clauses "$WORK/rmat16" kith "$kith_threads" "$MICRO"
part sq-peers "$LIMIT" sq "$WORK/nn50" kuzu,duckdb "$PEER_THREADS" "$SQ" --load-format parquet
part micro-peers $((LIMIT * 2 / 3)) micro,clauses "$WORK/rmat16" kuzu,duckdb "$PEER_THREADS" "$PEER_MICRO"
