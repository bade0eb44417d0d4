//! Hands out ranges of work to whichever worker asks next.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Splits `0..total` into ranges of `size`, handed out atomically.
#[derive(Debug)]
pub struct MorselDispenser {
    next: AtomicU64,
    total: u64,
    size: u64,
}

impl MorselDispenser {
    pub fn new(total: u64, size: u64) -> MorselDispenser {
        MorselDispenser {
            next: AtomicU64::new(0),
            total,
            size: size.max(1),
        }
    }

    /// The next unclaimed range, or `None` when everything was handed out.
    pub fn next(&self) -> Option<Range<u64>> {
        // fetch_add can overshoot `total` by at most one morsel per worker; the
        // counter never wraps because it starts at 0 and adds `size` per call.
        let start = self.next.fetch_add(self.size, Ordering::Relaxed);
        if start >= self.total {
            return None;
        }
        Some(start..(start + self.size).min(self.total))
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// How many morsels the range splits into.
    pub fn count(&self) -> u64 {
        self.total.div_ceil(self.size.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_everything_once() {
        let d = MorselDispenser::new(10, 3);
        let got: Vec<_> = std::iter::from_fn(|| d.next()).collect();
        assert_eq!(got, vec![0..3, 3..6, 6..9, 9..10]);
        assert!(d.next().is_none());
        assert_eq!(d.count(), 4);
        assert!(MorselDispenser::new(0, 4).next().is_none());
        assert_eq!(MorselDispenser::new(0, 4).count(), 0);
        assert_eq!(MorselDispenser::new(8, 4).count(), 2);
    }
}
