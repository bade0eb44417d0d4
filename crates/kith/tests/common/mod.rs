//! Helpers shared by the integration tests that generate random graphs.

/// A small deterministic generator (64-bit LCG, high bits out), so a failing
/// seed reproduces on every machine.
pub struct Lcg(pub u64);

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
