//! Helpers shared by the shell's process tests (`crash.rs`, `process_soak.rs`).

/// xorshift64*: a small deterministic generator, so a failing seed
/// reproduces on every machine.
pub struct Rng(pub u64);

#[allow(dead_code)] // not every test that shares this module forks
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// An independent generator for another thread.
    pub fn fork(&mut self) -> Rng {
        Rng(self.next() | 1)
    }
}
