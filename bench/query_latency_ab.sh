#!/usr/bin/env bash
# Whole-query latency of two or more builds in alternation, for A/B runs on
# a noisy host (see crates/kith/examples/query_latency.rs).
#
#   cargo build --release --example query_latency -p kith --features mimalloc
#   cp target/release/examples/query_latency /tmp/ql_new   # one copy per build
#   bench/query_latency_ab.sh N ROUNDS "/tmp/ql_old:/tmp/r16.kith /tmp/ql_new:/tmp/r16.kith" QUERY...
#
# Each pair is BINARY:DATABASE (a build that writes a newer metadata format
# may need its own copy of the data). For every query, ROUNDS rounds of
# 1 and 2 threads, each build N runs per round; prints one line per run
# set: round, threads, build, then query_latency's `min_ms median_ms query`.
# Compare the builds' lowest minimums within one invocation.
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,14p' "$0"
  exit 2
fi
N=$1; R=$2; PAIRS=$3; shift 3
for q in "$@"; do
  echo "== $q"
  for r in $(seq 1 "$R"); do
    for T in 1 2; do
      for pd in $PAIRS; do
        b=${pd%%:*}; db=${pd#*:}
        echo "r$r T$T $(basename "$b"): $("$b" "$db" "$T" "$N" "$q" 2>&1 | tail -1)"
      done
    done
  done
done
