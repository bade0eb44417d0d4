//! Grouped aggregates with tens of thousands of groups at several threads:
//! each worker's table splits into partitions by key, and each partition
//! merges every worker's piece and finishes on its own. Checked against a
//! reference computed here: node, integer (with NULLs), string and
//! multi-column keys, collected lists, distinct counts, a key over two
//! tables (two pipelines whose groups overlap), and ORDER BY with LIMIT
//! over the partitions' rows.

use std::collections::BTreeMap;

use kith::{Config, Connection, Database, Value};

const N: i64 = 30_000;
const M: i64 = 10_000;

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int64(x) => Some(*x),
        Value::Null => None,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => panic!("expected a string, got {other:?}"),
    }
}

/// Equal maps, or a panic naming the first key that differs (the maps are
/// too big to print).
fn same<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    got: &BTreeMap<K, V>,
    want: &BTreeMap<K, V>,
    what: &str,
) {
    for (k, v) in want {
        assert_eq!(got.get(k), Some(v), "{what}: key {k:?}");
    }
    assert_eq!(got.len(), want.len(), "{what}: extra keys");
}

fn g_of(i: i64) -> Option<i64> {
    (i % 11 != 3).then_some((i * 7919) % 12_000)
}

fn s_of(i: i64) -> String {
    format!("s{}", i % 5000)
}

/// M's key: some equal to N's keys, some beyond them.
fn mg_of(j: i64) -> i64 {
    (j * 3) % 13_000
}

/// Each N node `i` has rels to `(31 i + 7) mod N` and to `i² mod 1000`.
fn rels() -> Vec<(i64, i64)> {
    (0..N)
        .flat_map(|i| [(i, (i * 31 + 7) % N), (i, (i * i) % 1000)])
        .collect()
}

fn setup() -> (Database, Connection) {
    let config = Config {
        max_threads: Some(4),
        ..Config::default()
    };
    let db = Database::open(":memory:", config).unwrap();
    let conn = Connection::new(&db);
    for q in [
        "CREATE NODE TABLE N(id INT64, g INT64, s STRING, PRIMARY KEY(id))",
        "CREATE NODE TABLE M(id INT64, g INT64, PRIMARY KEY(id))",
        "CREATE REL TABLE E(FROM N TO N)",
    ] {
        conn.query(q).unwrap();
    }
    conn.query(&format!(
        "UNWIND range(0, {}) AS i CREATE (:N {{id: i, g: CASE WHEN i % 11 = 3 THEN NULL ELSE (i * 7919) % 12000 END, s: 's' + toString(i % 5000)}})",
        N - 1
    ))
    .unwrap();
    conn.query(&format!(
        "UNWIND range(0, {}) AS j CREATE (:M {{id: j, g: (j * 3) % 13000}})",
        M - 1
    ))
    .unwrap();
    conn.query(&format!(
        "MATCH (a:N) WITH a, a.id AS i MATCH (b:N) WHERE b.id = (i * 31 + 7) % {N} OR b.id = (i * i) % 1000 CREATE (a)-[:E]->(b)"
    ))
    .unwrap();
    (db, conn)
}

#[test]
fn many_groups_merge_by_partition_like_a_reference() {
    let (_db, conn) = setup();
    let rels = rels();
    // Distinct rels only: the two targets of a node may coincide.
    let mut rels_dedup = rels.clone();
    rels_dedup.sort_unstable();
    rels_dedup.dedup();
    let rels = rels_dedup;
    assert_eq!(
        int(&conn
            .query("MATCH ()-[e:E]->() RETURN count(e)")
            .unwrap()
            .rows()
            .next()
            .unwrap()[0]),
        Some(rels.len() as i64)
    );

    let mut by_dst: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    let mut collected: BTreeMap<Option<i64>, Vec<i64>> = BTreeMap::new();
    let mut distinct: BTreeMap<i64, std::collections::BTreeSet<Option<i64>>> = BTreeMap::new();
    for &(a, b) in &rels {
        let e = by_dst.entry(b).or_default();
        e.0 += 1;
        e.1 += a;
        collected.entry(g_of(a)).or_default().push(b);
        distinct.entry(b % 7000).or_default().insert(g_of(a));
    }
    for l in collected.values_mut() {
        l.sort_unstable();
    }
    let distinct: BTreeMap<i64, i64> = distinct
        .into_iter()
        .map(|(k, s)| (k, s.iter().filter(|g| g.is_some()).count() as i64))
        .collect();
    let mut by_g: BTreeMap<Option<i64>, (i64, i64, i64, i64)> = BTreeMap::new();
    let mut by_s_mod: BTreeMap<(String, i64), i64> = BTreeMap::new();
    for i in 0..N {
        let e = by_g.entry(g_of(i)).or_insert((0, 0, i64::MAX, i64::MIN));
        e.0 += 1;
        e.1 += i;
        e.2 = e.2.min(i);
        e.3 = e.3.max(i);
        *by_s_mod.entry((s_of(i), i % 3)).or_default() += 1;
    }
    let mut both: BTreeMap<Option<i64>, i64> = BTreeMap::new();
    for i in 0..N {
        *both.entry(g_of(i)).or_default() += 1;
    }
    for j in 0..M {
        *both.entry(Some(mg_of(j))).or_default() += 1;
    }
    let mut top: Vec<(i64, i64)> = by_dst.iter().map(|(&b, &(c, _))| (c, b)).collect();
    top.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
    top.truncate(10);

    for threads in [1, 2, 4] {
        conn.query(&format!("CALL threads={threads}")).unwrap();
        let at = |what: &str| format!("{threads} threads, {what}");

        let got: BTreeMap<i64, (i64, i64)> = conn
            .query(
                "MATCH (a:N)-[:E]->(b:N) WITH b, count(*) AS c, sum(a.id) AS s RETURN b.id, c, s",
            )
            .unwrap()
            .rows()
            .map(|r| {
                (
                    int(&r[0]).unwrap(),
                    (int(&r[1]).unwrap(), int(&r[2]).unwrap()),
                )
            })
            .collect();
        same(&got, &by_dst, &at("by node"));

        let rows: Vec<_> = conn
            .query("MATCH (n:N) RETURN n.g, count(*), sum(n.id), min(n.id), max(n.id)")
            .unwrap()
            .rows()
            .map(|r| {
                (
                    int(&r[0]),
                    (
                        int(&r[1]).unwrap(),
                        int(&r[2]).unwrap(),
                        int(&r[3]).unwrap(),
                        int(&r[4]).unwrap(),
                    ),
                )
            })
            .collect();
        assert_eq!(rows.len(), by_g.len(), "{}", at("one row per integer key"));
        let got: BTreeMap<_, _> = rows.into_iter().collect();
        same(&got, &by_g, &at("by integer key"));

        let rows: Vec<_> = conn
            .query("MATCH (n:N) RETURN n.s, n.id % 3, count(*)")
            .unwrap()
            .rows()
            .map(|r| ((text(&r[0]), int(&r[1]).unwrap()), int(&r[2]).unwrap()))
            .collect();
        assert_eq!(
            rows.len(),
            by_s_mod.len(),
            "{}",
            at("one row per two-column key")
        );
        let got: BTreeMap<_, _> = rows.into_iter().collect();
        same(&got, &by_s_mod, &at("by string and integer"));

        let got: BTreeMap<Option<i64>, Vec<i64>> = conn
            .query("MATCH (a:N)-[:E]->(b:N) RETURN a.g, collect(b.id)")
            .unwrap()
            .rows()
            .map(|r| {
                let Value::List(l) = &r[1] else {
                    panic!("expected a list, got {:?}", r[1]);
                };
                let mut l: Vec<i64> = l.iter().map(|v| int(v).unwrap()).collect();
                l.sort_unstable();
                (int(&r[0]), l)
            })
            .collect();
        same(&got, &collected, &at("collected lists"));

        let got: BTreeMap<i64, i64> = conn
            .query("MATCH (a:N)-[:E]->(b:N) RETURN b.id % 7000, count(DISTINCT a.g)")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]).unwrap(), int(&r[1]).unwrap()))
            .collect();
        same(&got, &distinct, &at("distinct counts"));

        let rows: Vec<_> = conn
            .query("MATCH (n) RETURN n.g, count(*)")
            .unwrap()
            .rows()
            .map(|r| (int(&r[0]), int(&r[1]).unwrap()))
            .collect();
        assert_eq!(
            rows.len(),
            both.len(),
            "{}",
            at("one row per key of two tables")
        );
        let got: BTreeMap<_, _> = rows.into_iter().collect();
        same(&got, &both, &at("keys over two tables"));

        let got: Vec<(i64, i64)> = conn
            .query(
                "MATCH (a:N)-[:E]->(b:N) RETURN b.id, count(*) AS c ORDER BY c DESC, b.id LIMIT 10",
            )
            .unwrap()
            .rows()
            .map(|r| (int(&r[1]).unwrap(), int(&r[0]).unwrap()))
            .collect();
        assert_eq!(got, top, "{}", at("top 10 by count"));
        let got: Vec<(i64, i64)> = conn
            .query("MATCH (a:N)-[:E]->(b:N) RETURN b.id, count(*) AS c ORDER BY c DESC, b.id SKIP 6 LIMIT 4")
            .unwrap()
            .rows()
            .map(|r| (int(&r[1]).unwrap(), int(&r[0]).unwrap()))
            .collect();
        assert_eq!(got, top[6..], "{}", at("top 10 by count, skipping 6"));
    }
}
