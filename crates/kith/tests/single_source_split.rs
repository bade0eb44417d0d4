//! A multi-hop expansion from one looked-up node, whose pipeline has a
//! one-tuple source: with several threads every worker produces the tuple
//! and the workers share the first extend's rels. Checked against walk
//! counts computed here, at 1 and 2 threads, on a graph whose first
//! extend's ranges are plain, cut by a later insert (appended runs), from a
//! hub, and from several looked-up nodes. Rels go from lower to higher ids,
//! so no walk repeats a rel and walks are the pattern's matches.

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// (walk count, sum of the last node's id) of `hops`-hop walks from each
/// of `from` along `adj`.
fn walks(adj: &[Vec<usize>], from: &[usize], hops: usize) -> (i64, i64) {
    let mut ways = vec![0i64; adj.len()];
    for &f in from {
        ways[f] += 1;
    }
    for _ in 0..hops {
        let mut next = vec![0i64; adj.len()];
        for (v, &w) in ways.iter().enumerate() {
            if w > 0 {
                for &u in &adj[v] {
                    next[u] += w;
                }
            }
        }
        ways = next;
    }
    let count = ways.iter().sum();
    let sum = ways.iter().enumerate().map(|(v, &w)| v as i64 * w).sum();
    (count, sum)
}

fn create_rels(conn: &Connection, rels: &[(usize, usize)]) {
    for chunk in rels.chunks(4000) {
        let items: Vec<String> = chunk.iter().map(|(a, b)| format!("[{a}, {b}]")).collect();
        conn.query(&format!(
            "UNWIND [{}] AS t MATCH (a:N {{id: t[0]}}), (b:N {{id: t[1]}}) CREATE (a)-[:E]->(b)",
            items.join(", ")
        ))
        .unwrap();
    }
}

#[test]
fn expansions_from_one_node_split_across_workers_match_walk_counts() {
    let db = Database::open(":memory:", Config::default()).unwrap();
    let conn = Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N)").unwrap();
    let n = 600usize;
    let ids: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    conn.query(&format!(
        "UNWIND [{}] AS i CREATE (:N {{id: i}})",
        ids.join(", ")
    ))
    .unwrap();
    let mut rng = Lcg(7);
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    // Node 0 is a hub of 3,000 rels (more than a vector); the others have
    // up to 12.
    let above = |rng: &mut Lcg, a: usize| a + 1 + rng.below((n - a - 1) as u64) as usize;
    let mut rels: Vec<(usize, usize)> = (0..3000).map(|_| (0, above(&mut rng, 0))).collect();
    for a in 1..n - 1 {
        for _ in 0..rng.below(13) {
            rels.push((a, above(&mut rng, a)));
        }
    }
    create_rels(&conn, &rels);
    // A second insert: the earlier nodes' ranges gain appended runs.
    let later: Vec<(usize, usize)> = (0..400)
        .map(|_| {
            let a = rng.below(50) as usize;
            (a, above(&mut rng, a))
        })
        .collect();
    create_rels(&conn, &later);
    for &(a, b) in rels.iter().chain(&later) {
        adj[a].push(b);
    }
    let sources: [&[usize]; 5] = [&[3], &[0], &[7], &[100, 200, 300], &[]];
    for threads in [1, 2] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        for from in sources {
            for hops in [2, 3] {
                let list: Vec<String> = from.iter().map(|f| f.to_string()).collect();
                let chain = "-[:E]->(:N)".repeat(hops - 1);
                let q = format!(
                    "MATCH (a:N){chain}-[:E]->(z:N) WHERE a.id IN [{}] RETURN count(*), sum(z.id)",
                    list.join(", ")
                );
                let row: Vec<Value> = conn.query(&q).unwrap().rows().next().unwrap().to_vec();
                let want = walks(&adj, from, hops);
                let sum = match &row[1] {
                    Value::Null => 0,
                    v => int(v),
                };
                assert_eq!((int(&row[0]), sum), want, "{threads} threads: {q}");
            }
        }
        // One node by its key: the shape the split applies to.
        let q = "MATCH (a:N)-[:E]->(:N)-[:E]->(:N)-[:E]->(z:N) WHERE a.id = 5 RETURN count(*), sum(z.id)";
        let row: Vec<Value> = conn.query(q).unwrap().rows().next().unwrap().to_vec();
        assert_eq!(
            (int(&row[0]), int(&row[1])),
            walks(&adj, &[5], 3),
            "{threads} threads"
        );
        let profile: String = conn
            .query(&format!("PROFILE {q}"))
            .unwrap()
            .rows()
            .map(|r| match &r[0] {
                Value::String(t) => t.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        // Every worker that joined produced the tuple: one under 1 thread,
        // one or two under 2 (a worker that wakes after the caller has
        // finished the small query does not join it).
        let produced = (1..=threads).any(|n| profile.contains(&format!("| SingleTuple | {n} |")));
        assert!(produced, "{threads} threads: {profile}");
        // A LIMIT over the split expansion.
        let got = conn
            .query("MATCH (a:N)-[:E]->(:N)-[:E]->(z:N) WHERE a.id = 0 RETURN z.id LIMIT 7")
            .unwrap()
            .rows()
            .count();
        assert_eq!(got, 7, "{threads} threads: LIMIT");
    }
}
