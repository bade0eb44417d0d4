#!/bin/bash
# Thread scaling of the recursive workloads on a many-core machine (issue 4:
# 8 and 16 threads like seed 000's tables): generates R-MAT scale SCALE
# (simple; `gen` picks sources that reach 3 levels), then
#  1. with POLICY=1, the dispatch-policy table at each thread count through
#     the shell (bench/policy_table.sh: a fresh process per run);
#  2. the recursive suite's queries in one warm KithDB process per thread
#     count (kith-bench, automatic policy);
#  3. the same queries on Kùzu at KUZU_THREADS (default: 1 and all cores).
#
#   [SCALE=20] [THREADS="1 2 4 8 16"] [POLICY=0] [BIN=target/release] \
#     [WORK=/tmp] bash bench/thread_scaling.sh OUTDIR
#
# Writes OUTDIR/policy.md, kith.md and kuzu.md as it goes (a run cut short
# keeps what it finished). Part 3 needs python3 with kuzu.
set -uo pipefail
OUTDIR=${1:?usage: thread_scaling.sh OUTDIR}
SCALE=${SCALE:-20}
THREADS=${THREADS:-1 2 4 8 16}
BIN=${BIN:-target/release}
WORK=${WORK:-/tmp}
CORES=$(nproc)
QUERIES=${QUERIES:-sp-lengths-1src,sp-lengths-64src,sp-paths-1src,varlen-1..3-8src,wsp-cost-8src,wsp-paths-1src}
DATA=$WORK/rmat$SCALE
mkdir -p "$OUTDIR"
echo "cores: $CORES; $(uname -sr); $(grep -m1 'model name' /proc/cpuinfo)" | tee "$OUTDIR/machine.txt"
"$BIN/kith-bench" gen rmat --scale "$SCALE" --simple --out "$DATA" || exit 1
if [ "${POLICY:-0}" = 1 ]; then
  DB=$WORK/rmat$SCALE.kith
  rm -rf "$DB"
  "$BIN/kith" "$DB" -c "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id)); CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE); COPY Person FROM '$DATA/persons.csv' (HEADER=true); COPY Knows FROM '$DATA/knows.csv' (HEADER=true);" >/dev/null || exit 1
  nodes=$((1 << SCALE))
  # 64 ids with id % (nodes/64) = 7, 8 with id % (nodes/8) = 7, and the
  # generator's first source.
  SRC1=$(grep -o '"SRC1":"\[[0-9]*\]"' "$DATA/meta.json" | grep -o '[0-9][0-9]*' | tail -1)
  THREADS="$THREADS" RUNS=${RUNS:-1} SRC1=$SRC1 M64=$((nodes / 64)) M8=$((nodes / 8)) \
    bash "$(dirname "$0")/policy_table.sh" "$DB" "$BIN/kith" | tee "$OUTDIR/policy.md"
fi
"$BIN/kith-bench" run --suites recursive --data "$DATA" --engines kith \
  --threads "$(echo $THREADS | tr ' ' ',')" --runs "${RUNS:-3}" --warmup 1 --timeout 60 \
  --queries "$QUERIES" --tmp-dir "$WORK" --markdown "$OUTDIR/kith.md" >"$OUTDIR/kith.log" 2>&1
grep -E "^\| " "$OUTDIR/kith.md" | head -40
"$BIN/kith-bench" run --suites recursive --data "$DATA" --engines kuzu \
  --threads "${KUZU_THREADS:-1,$CORES}" --runs 1 --warmup 0 --timeout "${KUZU_TIMEOUT:-30}" \
  --queries "$QUERIES" --tmp-dir "$WORK" --markdown "$OUTDIR/kuzu.md" >"$OUTDIR/kuzu.log" 2>&1
grep -E "^\| " "$OUTDIR/kuzu.md" | head -20
