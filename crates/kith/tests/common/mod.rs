//! Helpers shared by the integration tests that generate random graphs.

/// A small deterministic generator (64-bit LCG, high bits out), so a failing
/// seed reproduces on every machine.
#[allow(dead_code)] // not every test that shares this module draws numbers
pub struct Lcg(pub u64);

#[allow(dead_code)]
impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The EXPLAIN plan of `q`, one operator per line.
#[allow(dead_code)] // not every test that shares this module reads plans
pub fn explain(conn: &kith::Connection, q: &str) -> String {
    conn.query(&format!("EXPLAIN {q}"))
        .unwrap()
        .rows()
        .map(|r| r[0].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Fails, naming the first groups that differ, when `got` (the plan under
/// test) is not `want`, saying whether `general` (the same query planned
/// the general way) is; then fails when `general` is not `want`.
#[allow(dead_code)]
pub fn check_groups<R: PartialEq + std::fmt::Debug>(
    label: &str,
    want: &std::collections::BTreeMap<i64, R>,
    got: &std::collections::BTreeMap<i64, R>,
    general: &std::collections::BTreeMap<i64, R>,
) {
    if got != want {
        let diff: Vec<_> = want
            .iter()
            .filter(|(a, w)| got.get(a) != Some(w))
            .take(3)
            .map(|(a, w)| (a, w, got.get(a)))
            .collect();
        panic!("{label}: {diff:?}, general equal: {}", general == want);
    }
    assert!(general == want, "{label}: the general plan");
}

/// Creates rels `(source id, destination id, w)` of `rel_table` between
/// nodes of `node_table` (found by primary key `id`), with property `w`,
/// a few thousand per statement.
#[allow(dead_code)]
pub fn create_rels(
    conn: &kith::Connection,
    node_table: &str,
    rel_table: &str,
    rels: &[(usize, usize, i64)],
) {
    for chunk in rels.chunks(2000) {
        let items: Vec<String> = chunk
            .iter()
            .map(|(a, b, w)| format!("[{a}, {b}, {w}]"))
            .collect();
        conn.query(&format!(
            "UNWIND [{}] AS t MATCH (a:{node_table} {{id: t[0]}}), (b:{node_table} {{id: t[1]}}) \
             CREATE (a)-[:{rel_table} {{w: t[2]}}]->(b)",
            items.join(", ")
        ))
        .unwrap();
    }
}

/// Nodes `N` with ids `0..g.len()` and property `g` (NULL where `None`).
#[allow(dead_code)]
pub fn create_nodes(conn: &kith::Connection, g: &[Option<i64>]) {
    let rows: Vec<String> = g
        .iter()
        .enumerate()
        .map(|(i, gv)| {
            let gv = gv.map_or("NULL".to_string(), |x| x.to_string());
            format!("{{id: {i}, g: {gv}}}")
        })
        .collect();
    conn.query(&format!(
        "UNWIND [{}] AS r CREATE (:N {{id: r.id, g: r.g}})",
        rows.join(", ")
    ))
    .unwrap();
}

/// An in-memory database with node table `N(id, g)` and rel table
/// `E(FROM N TO N, w)`.
#[allow(dead_code)]
pub fn nodes_with_weighted_rels() -> kith::Connection {
    let db = kith::Database::open(":memory:", kith::Config::default()).unwrap();
    let conn = kith::Connection::new(&db);
    conn.query("CREATE NODE TABLE N(id INT64, g INT64, PRIMARY KEY(id))")
        .unwrap();
    conn.query("CREATE REL TABLE E(FROM N TO N, w INT64)")
        .unwrap();
    conn
}

/// Copies rels `(source id, destination id, w)` of `rel_table` (with
/// property `w`) from a CSV file, so each node's rels are one CSR range
/// (created rels are appended runs).
#[allow(dead_code)]
pub fn copy_rels(conn: &kith::Connection, rel_table: &str, rels: &[(usize, usize, i64)]) {
    // A directory per call: a test file's tests run side by side.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kith-copy-rels-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("rels.csv");
    let lines: Vec<String> = rels
        .iter()
        .map(|(a, b, w)| format!("{a},{b},{w}"))
        .collect();
    std::fs::write(&csv, lines.join("\n")).unwrap();
    conn.query(&format!("COPY {rel_table} FROM '{}'", csv.display()))
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The PROFILE report of `q`, one line per row.
#[allow(dead_code)]
pub fn profile(conn: &kith::Connection, q: &str) -> String {
    let r = conn.query(&format!("PROFILE {q}")).unwrap();
    r.rows().map(|row| format!("{}\n", row[0])).collect()
}

/// An in-memory database whose queries may use `threads` threads.
#[allow(dead_code)]
pub fn memory_db(threads: usize) -> kith::Database {
    kith::Database::open(
        ":memory:",
        kith::Config {
            max_threads: Some(threads),
            ..kith::Config::default()
        },
    )
    .unwrap()
}
