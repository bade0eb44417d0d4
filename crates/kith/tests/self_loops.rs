//! A rel table counts its self loops (`RelTableData::self_loops`), and a
//! 2-hop count through one table in both directions reads neighbours for
//! self loops only when that count is not 0. The count must follow every
//! write: COPY (into an empty and a filled table), CREATE one by one and
//! inside an explicit transaction, DELETE of rels and DETACH DELETE of
//! nodes, a rolled-back transaction, CHECKPOINT and reopening the file.
//! Each step's 2-hop counts (fused into degree products) are checked
//! against a reference over the edge list, at 1 and 2 threads.

use kith::{Config, Connection, Database, Value};

mod common;
use common::Lcg;

fn run(conn: &Connection, q: &str) {
    conn.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
}

/// The graph the database should hold: node ids and their group, and the
/// rels as (from id, to id).
struct Reference {
    g: Vec<i64>,
    rels: Vec<(usize, usize)>,
}

impl Reference {
    /// Pairs of distinct rels `a -> b -> c` with `b.g < below`.
    fn two_hops(&self, below: i64) -> i64 {
        let n = self.g.len();
        let (mut inc, mut out, mut loops) = (vec![0i64; n], vec![0i64; n], vec![0i64; n]);
        for &(a, b) in &self.rels {
            out[a] += 1;
            inc[b] += 1;
            loops[a] += i64::from(a == b);
        }
        (0..n)
            .filter(|&b| self.g[b] < below)
            .map(|b| inc[b] * out[b] - loops[b])
            .sum()
    }
}

fn check(conn: &Connection, want: &Reference, step: &str) {
    for threads in [1, 2] {
        run(conn, &format!("CALL threads={threads}"));
        for below in [3, 40, 100] {
            let q =
                format!("MATCH (a:N)-[:E]->(b:N)-[:E]->(c:N) WHERE b.g < {below} RETURN count(*)");
            let got = conn.query(&q).unwrap().rows().next().unwrap()[0].clone();
            assert_eq!(
                got,
                Value::Int64(want.two_hops(below)),
                "{step}, {threads} threads: {q}"
            );
        }
    }
}

#[test]
fn two_hop_counts_follow_the_self_loops_through_every_write() {
    let dir = std::env::temp_dir().join(format!("kith-self-loops-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("db").to_string_lossy().to_string();
    let open = || Database::open(&path, Config::default()).unwrap();
    let mut rng = Lcg(5);
    let n = 3000usize;
    let mut want = Reference {
        g: (0..n).map(|_| rng.below(100) as i64).collect(),
        rels: Vec::new(),
    };
    {
        let db = open();
        let conn = Connection::new(&db);
        run(
            &conn,
            "CREATE NODE TABLE N(id INT64, g INT64, PRIMARY KEY(id))",
        );
        run(&conn, "CREATE REL TABLE E(FROM N TO N, w INT64)");
        let gs: Vec<Option<i64>> = want.g.iter().map(|&x| Some(x)).collect();
        common::create_nodes(&conn, &gs);
        // Without self loops: the count reads none.
        let rels: Vec<(usize, usize, i64)> = (0..12000)
            .map(|_| {
                let a = rng.below(n as u64) as usize;
                let b = (a + 1 + rng.below(n as u64 - 1) as usize) % n;
                (a, b, 0)
            })
            .collect();
        common::copy_rels(&conn, "E", &rels);
        want.rels.extend(rels.iter().map(|&(a, b, _)| (a, b)));
        check(&conn, &want, "copied without self loops");

        // One self loop, then a second on the same node.
        for _ in 0..2 {
            run(&conn, "MATCH (a:N {id: 7}) CREATE (a)-[:E {w: 1}]->(a)");
            want.rels.push((7, 7));
            check(&conn, &want, "created a self loop");
        }
        // In an explicit transaction, read before the commit.
        run(&conn, "BEGIN TRANSACTION");
        run(&conn, "MATCH (a:N {id: 11}) CREATE (a)-[:E {w: 2}]->(a)");
        want.rels.push((11, 11));
        check(&conn, &want, "created inside a transaction");
        run(&conn, "COMMIT");
        // A rolled-back self loop leaves nothing.
        run(&conn, "BEGIN TRANSACTION");
        run(&conn, "MATCH (a:N {id: 13}) CREATE (a)-[:E {w: 3}]->(a)");
        run(&conn, "ROLLBACK");
        check(&conn, &want, "rolled back");
        // Deleting one of node 7's loops.
        run(
            &conn,
            "MATCH (a:N {id: 7})-[r:E {w: 1}]->(a) WITH r LIMIT 1 DELETE r",
        );
        let at = want.rels.iter().position(|&r| r == (7, 7)).unwrap();
        want.rels.remove(at);
        check(&conn, &want, "deleted a self loop");
        run(&conn, "CHECKPOINT");
        check(&conn, &want, "checkpointed");
    }
    {
        // Reopened: the count was written with the metadata.
        let db = open();
        let conn = Connection::new(&db);
        check(&conn, &want, "reopened");
        // COPY into the filled table, with self loops.
        let rels: Vec<(usize, usize, i64)> = (0..3000)
            .map(|_| {
                let a = rng.below(n as u64) as usize;
                let b = if rng.below(20) == 0 {
                    a
                } else {
                    rng.below(n as u64) as usize
                };
                (a, b, 0)
            })
            .collect();
        common::copy_rels(&conn, "E", &rels);
        want.rels.extend(rels.iter().map(|&(a, b, _)| (a, b)));
        check(&conn, &want, "copied with self loops");
        // Every self loop gone with its nodes (DETACH DELETE) or alone.
        let looped: std::collections::BTreeSet<usize> = want
            .rels
            .iter()
            .filter(|(a, b)| a == b)
            .map(|&(a, _)| a)
            .collect();
        let (gone, rest): (Vec<usize>, Vec<usize>) = looped.into_iter().partition(|&a| a % 2 == 0);
        let list = |v: &[usize]| {
            v.iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        run(
            &conn,
            &format!(
                "MATCH (a:N) WHERE a.id IN [{}] DETACH DELETE a",
                list(&gone)
            ),
        );
        run(
            &conn,
            &format!(
                "MATCH (a:N)-[r:E]->(a) WHERE a.id IN [{}] DELETE r",
                list(&rest)
            ),
        );
        want.rels
            .retain(|&(a, b)| a != b && !gone.contains(&a) && !gone.contains(&b));
        // Deleted nodes are in no count (their group is past every filter).
        for &a in &gone {
            want.g[a] = 1000;
        }
        check(&conn, &want, "every self loop deleted");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
