#!/bin/bash
# Seed 000's policy tables at many thread counts, for a lent many-core
# machine (issue 4), each part under its own time limit so that a short
# lease still brings back what finished:
#  1. the LDBC-like network (gen social, PERSONS persons, 20 KNOWS each:
#     average degree 40 walked both ways): `recursive-social` under the
#     automatic choice and each pinned policy at THREADS;
#  2. the same on Kùzu at KUZU_THREADS (needs python3 with kuzu);
#  3. R-MAT scale SCALE: the `recursive` suite's RMAT_QUERIES on KithDB at
#     RMAT_THREADS (automatic policy).
#
#   [PERSONS=100000] [THREADS=1,4,16] [KUZU_THREADS=16] [SCALE=20] \
#     [RMAT_THREADS=1,16] [BIN=target/release] [WORK=/tmp] \
#     [LIMITS="280 150 120"] bash bench/policy_scaling.sh OUTDIR
#
# Writes OUTDIR/social-kith.md, social-kuzu.md and rmat-kith.md (with the
# logs beside them) as the parts finish.
set -uo pipefail
OUTDIR=${1:?usage: policy_scaling.sh OUTDIR}
PERSONS=${PERSONS:-100000}
THREADS=${THREADS:-1,4,16}
KUZU_THREADS=${KUZU_THREADS:-16}
SCALE=${SCALE:-20}
RMAT_THREADS=${RMAT_THREADS:-1,16}
RMAT_QUERIES=${RMAT_QUERIES:-sp-lengths-64src,sp-paths-1src,sp-paths-8src}
BIN=${BIN:-target/release}
WORK=${WORK:-/tmp}
read -r L1 L2 L3 <<<"${LIMITS:-280 150 120}"
mkdir -p "$OUTDIR"
echo "cores: $(nproc); $(uname -sr); $(grep -m1 'model name' /proc/cpuinfo)" | tee "$OUTDIR/machine.txt"
SOCIAL=$WORK/social$PERSONS-d40
"$BIN/kith-bench" gen social --persons "$PERSONS" --knows-per-person 20 --out "$SOCIAL" >/dev/null || exit 1
run() { # LIMIT NAME ARGS...
  local limit=$1 name=$2
  shift 2
  timeout "$limit" "$BIN/kith-bench" run "$@" --tmp-dir "$WORK" \
    --markdown "$OUTDIR/$name.md" >"$OUTDIR/$name.log" 2>&1
  echo "$name: exit $? after $SECONDS s"
}
run "$L1" social-kith --suites recursive-social --data "$SOCIAL" \
  --engines kith,kith:1T1S,kith:nT1S,kith:nTkS,kith:nTkMS \
  --threads "$THREADS" --runs 1 --warmup 0 --timeout 60
run "$L2" social-kuzu --suites recursive-social --data "$SOCIAL" --engines kuzu \
  --threads "$KUZU_THREADS" --runs 1 --warmup 0 --timeout 30
"$BIN/kith-bench" gen rmat --scale "$SCALE" --simple --out "$WORK/rmat$SCALE" >/dev/null || exit 1
run "$L3" rmat-kith --suites recursive --data "$WORK/rmat$SCALE" --engines kith \
  --threads "$RMAT_THREADS" --runs 1 --warmup 1 --timeout 60 --queries "$RMAT_QUERIES"
