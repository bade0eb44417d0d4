#!/bin/bash
# The IFE dispatch-policy table (issue 4; like Tables 3 and 4 of seed 000):
# each query under 1T1S, nT1S, nTkS and nTkMS at 1 and 2 threads, the best
# of 3 runs of PROFILE's total time through the shell (a fresh process each
# run, so cold pages are included). KithDB only: Kùzu has no policies.
#
#   bash bench/policy_table.sh DB [KITH]
#
# DB: a KithDB database with Person/Knows loaded from the recursive suite's
# R-MAT data (see BENCHMARKS.md); KITH defaults to target/release/kith.
set -euo pipefail
DB=${1:?usage: policy_table.sh DB [KITH]}
K=${2:-target/release/kith}
declare -A Q
Q[lengths-1src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN [58186] RETURN count(*), sum(length(e))"
Q[lengths-64src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id % 1024 = 7 RETURN count(*), sum(length(e))"
Q[paths-1src]="MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN [58186] RETURN count(*), sum(size(nodes(e)))"
Q[walks1..3-8src]="MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id % 8192 = 7 RETURN count(*)"
Q[wcost-8src]="MATCH (a:Person)-[e:Knows* WSHORTEST(weight)]->(b:Person) WHERE a.id % 8192 = 7 RETURN count(*), sum(cost(e))"
echo "| query | threads | 1T1S | nT1S | nTkS | nTkMS |"
echo "|---|---:|---:|---:|---:|---:|"
for name in lengths-1src lengths-64src paths-1src walks1..3-8src wcost-8src; do
  for t in 1 2; do
    row="| $name | $t |"
    for p in 1T1S nT1S nTkS nTkMS; do
      best=""
      for r in 1 2 3; do
        ms=$("$K" "$DB" -c "CALL recursive_policy='$p'; CALL threads=$t; PROFILE ${Q[$name]}" 2>&1 | grep -o "rows in [0-9.]* ms" | grep -o "[0-9.]*" || true)
        if [ -z "$ms" ]; then best="error"; break; fi
        if [ -z "$best" ] || (( $(echo "$ms < $best" | bc -l) )); then best=$ms; fi
      done
      row="$row $best |"
    done
    echo "$row"
  done
done
