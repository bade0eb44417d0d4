#!/bin/bash
# Insert/delete churn (issue 5: deleted rows reclaimed at checkpoint): a
# table of 100,000 nodes with a string property and a ring of rels, then
# five rounds of DETACH DELETE of 20,000 nodes, CHECKPOINT, 20,000 new
# nodes, CHECKPOINT. Each round prints the live nodes and the largest id()
# (it stays 0:99999 when deleted offsets are reused) and the file size.
#
#   bash bench/churn.sh DB [KITH]
#
# DB: a path for a new database (removed first); KITH defaults to
# target/release/kith.
set -euo pipefail
DB=${1:?usage: churn.sh DB [KITH]}
K=${2:-target/release/kith}
rm -f "$DB" "$DB.wal"
"$K" "$DB" -c "CREATE NODE TABLE P(id INT64, name STRING, PRIMARY KEY(id));
  CREATE REL TABLE R(FROM P TO P);
  UNWIND range(0, 99999) AS i CREATE (:P {id: i, name: 'person-' + toString(i)});
  MATCH (a:P), (b:P {id: (a.id + 1) % 100000}) CREATE (a)-[:R]->(b)" > /dev/null
echo "round,live,last_id,file_bytes"
for round in 1 2 3 4 5; do
  lo=$(( (round - 1) * 20000 )); hi=$(( round * 20000 - 1 ))
  "$K" "$DB" -c "MATCH (p:P) WHERE p.id >= $lo AND p.id <= $hi DETACH DELETE p; CHECKPOINT" > /dev/null
  row=$("$K" "$DB" --format csv -c "UNWIND range($(( 100000 + lo )), $(( 100000 + hi ))) AS i
    CREATE (:P {id: i, name: 'person-' + toString(i)}); CHECKPOINT;
    MATCH (p:P) RETURN count(*) AS live, max(id(p)) AS last_id" | tail -1)
  echo "$round,$row,$(stat -c %s "$DB")"
done
