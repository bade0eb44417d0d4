//! OPTIONAL MATCH on random graphs, checked against a reference written in
//! the test, with 1 and 2 threads and enough input rows for several
//! morsels (so the workers' runs interleave): every input row gets its
//! matches, and a row whose matches all fail the WHERE gets one row of
//! NULLs. With one thread the rows also keep the input's order (an ORDER BY
//! before the OPTIONAL MATCH survives it, each row's matches after it);
//! with more, the RETURN after it collects the workers' rows in any order,
//! so only each row's group is compared.

use std::collections::HashMap;

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

#[test]
fn optional_match_keeps_the_input_order_and_pads_rows_without_a_match() {
    let mut rng = Lcg(7);
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, k INT64, name STRING, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    let n = 3000usize;
    let keys: Vec<i64> = (0..n).map(|_| rng.below(500) as i64).collect();
    let nodes: Vec<String> = (0..n)
        .map(|i| format!("{{id: {i}, k: {}, name: 'n{}'}}", keys[i], i % 11))
        .collect();
    conn.query(&format!(
        "UNWIND [{}] AS r CREATE (:N {{id: r.id, k: r.k, name: r.name}})",
        nodes.join(", ")
    ))
    .unwrap();
    // Skewed out-degrees; a third of the nodes have none.
    let rels: Vec<(usize, usize)> = (0..8000)
        .map(|_| {
            let a = (rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize;
            (a, rng.below(n as u64) as usize)
        })
        .filter(|&(a, _)| a % 3 != 1)
        .collect();
    let pairs: Vec<String> = rels.iter().map(|(a, b)| format!("[{a}, {b}]")).collect();
    conn.query(&format!(
        "UNWIND [{}] AS p MATCH (a:N {{id: p[0]}}), (b:N {{id: p[1]}}) CREATE (a)-[:E]->(b)",
        pairs.join(", ")
    ))
    .unwrap();
    let mut out: HashMap<usize, Vec<usize>> = HashMap::new();
    for &(a, b) in &rels {
        out.entry(a).or_default().push(b);
    }
    // The input order: k descending, id ascending.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (-keys[i], i));
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let rows: Vec<Vec<Value>> = conn
            .query(
                "MATCH (a:N) WITH a ORDER BY a.k DESC, a.id \
                 OPTIONAL MATCH (a)-[:E]->(b:N) WHERE b.k % 3 = 0 \
                 RETURN a.id, a.name, b.id",
            )
            .unwrap()
            .rows()
            .collect();
        let rows = if threads == 1 {
            rows
        } else {
            // Each input row's rows together, in the input's order.
            let mut by_a: HashMap<i64, Vec<Vec<Value>>> = HashMap::new();
            for row in rows {
                let Value::Int64(a) = row[0] else {
                    panic!("a.id {:?}", row[0]);
                };
                by_a.entry(a).or_default().push(row);
            }
            order
                .iter()
                .flat_map(|a| by_a.remove(&(*a as i64)).unwrap_or_default())
                .collect()
        };
        let mut at = 0;
        for &a in &order {
            let mut want: Vec<Option<i64>> = out
                .get(&a)
                .into_iter()
                .flatten()
                .filter(|&&b| keys[b] % 3 == 0)
                .map(|&b| Some(b as i64))
                .collect();
            if want.is_empty() {
                want.push(None);
            }
            let mut got: Vec<Option<i64>> = Vec::new();
            for row in rows.iter().skip(at).take(want.len()) {
                assert_eq!(
                    row[0],
                    Value::Int64(a as i64),
                    "{threads} threads, row {at}"
                );
                assert_eq!(row[1], Value::String(format!("n{}", a % 11)));
                got.push(match &row[2] {
                    Value::Int64(b) => Some(*b),
                    Value::Null => None,
                    other => panic!("b.id {other:?}"),
                });
            }
            got.sort();
            want.sort();
            assert_eq!(got, want, "{threads} threads, node {a}");
            at += want.len();
        }
        assert_eq!(at, rows.len(), "{threads} threads");
    }
}
