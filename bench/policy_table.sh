#!/bin/bash
# The IFE dispatch-policy table (issue 4; like Tables 3 and 4 of seed 000):
# each query under 1T1S, nT1S, nTkS and nTkMS at each thread count, the
# best of RUNS runs of PROFILE's total time through the shell (a fresh
# process each run, so opening the database is included). KithDB only:
# Kùzu has no policies.
#
#   [THREADS="1 2"] [RUNS=3] [SRC1=58186] [M64=1024] [M8=8192] \
#     bash bench/policy_table.sh DB [KITH]
#
# DB: a KithDB database with Person/Knows loaded from the recursive suite's
# R-MAT data (see BENCHMARKS.md); KITH defaults to target/release/kith.
# Sources: the id SRC1, the ids with `id % M64 = 7` (64 of them when M64 is
# the node count / 64) and with `id % M8 = 7` (8 of them likewise); the
# defaults fit R-MAT scale 16, scale 20 wants M64=16384 M8=131072 and a
# SRC1 that reaches at least 3 levels.
set -euo pipefail
DB=${1:?usage: policy_table.sh DB [KITH]}
K=${2:-target/release/kith}
THREADS=${THREADS:-1 2}
RUNS=${RUNS:-3}
SRC1=${SRC1:-58186}
M64=${M64:-1024}
M8=${M8:-8192}
declare -A Q
Q[lengths-1src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN [$SRC1] RETURN count(*), sum(length(e))"
Q[lengths-64src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id % $M64 = 7 RETURN count(*), sum(length(e))"
Q[paths-1src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN [$SRC1] RETURN count(*), sum(size(nodes(e)))"
Q[paths-8src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id % $M8 = 7 RETURN count(*), sum(size(nodes(e)))"
Q[paths-64src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id % $M64 = 7 RETURN count(*), sum(size(nodes(e)))"
Q[walks1..3-8src]="MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id % $M8 = 7 RETURN count(*)"
Q[wcost-8src]="MATCH (a:Person)-[e:Knows* WSHORTEST(weight)]->(b:Person) WHERE a.id % $M8 = 7 RETURN count(*), sum(cost(e))"
echo "| query | threads | 1T1S | nT1S | nTkS | nTkMS |"
echo "|---|---:|---:|---:|---:|---:|"
for name in ${QUERIES:-lengths-1src lengths-64src paths-1src paths-8src paths-64src walks1..3-8src wcost-8src}; do
  for t in $THREADS; do
    row="| $name | $t |"
    for p in 1T1S nT1S nTkS nTkMS; do
      best=""
      for _ in $(seq "$RUNS"); do
        ms=$("$K" "$DB" -c "CALL recursive_policy='$p'; CALL threads=$t; PROFILE ${Q[$name]}" 2>&1 | grep -o "rows in [0-9.]* ms" | grep -o "[0-9.]*" || true)
        if [ -z "$ms" ]; then best="error"; break; fi
        if [ -z "$best" ] || awk -v a="$ms" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$ms; fi
      done
      row="$row $best |"
    done
    echo "$row"
  done
done
