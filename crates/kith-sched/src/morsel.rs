//! Hands out ranges of work to whichever worker asks next.
//!
//! The range may be cut into one region per worker: each worker takes the
//! morsels of its own region in order first, then those left in the others.
//! A worker's morsels are then mostly one contiguous run, so what it builds
//! per morsel (counts by node offset, decoded CSR groups, pinned pages)
//! covers its share of the range instead of all of it, and the workers do
//! not touch the same pages.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Splits `0..total` into ranges of `size`, handed out atomically.
#[derive(Debug)]
pub struct MorselDispenser {
    regions: Box<[Region]>,
    total: u64,
    size: u64,
}

/// A share of the range: the start of its next morsel and its end. Its
/// own cache line, so workers taking from their own regions do not
/// contend.
#[derive(Debug)]
#[repr(align(64))]
struct Region {
    next: AtomicU64,
    end: u64,
}

impl MorselDispenser {
    /// One region: morsels in order to every worker.
    pub fn new(total: u64, size: u64) -> MorselDispenser {
        MorselDispenser::with_regions(total, size, 1)
    }

    /// `regions` shares of whole morsels (the last ones may be empty).
    pub fn with_regions(total: u64, size: u64, regions: usize) -> MorselDispenser {
        let size = size.max(1);
        let regions = regions.max(1) as u64;
        let per = total.div_ceil(size).div_ceil(regions) * size;
        let regions = (0..regions)
            .map(|r| Region {
                next: AtomicU64::new((r * per).min(total)),
                end: ((r + 1) * per).min(total),
            })
            .collect();
        MorselDispenser {
            regions,
            total,
            size,
        }
    }

    /// The next unclaimed range for `worker` (any number: it picks the
    /// region to start from), or `None` when everything was handed out.
    pub fn next(&self, worker: usize) -> Option<Range<u64>> {
        let k = self.regions.len();
        for i in 0..k {
            let region = &self.regions[(worker + i) % k];
            // A plain read first: an exhausted region is not written again.
            if region.next.load(Ordering::Relaxed) >= region.end {
                continue;
            }
            // fetch_add can overshoot `end` by at most one morsel per
            // worker; the counter never wraps (it starts below `total` and
            // adds `size` per call).
            let start = region.next.fetch_add(self.size, Ordering::Relaxed);
            if start < region.end {
                return Some(start..(start + self.size).min(region.end));
            }
        }
        None
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// How many morsels the range splits into.
    pub fn count(&self) -> u64 {
        self.total.div_ceil(self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_everything_once() {
        let d = MorselDispenser::new(10, 3);
        let got: Vec<_> = std::iter::from_fn(|| d.next(0)).collect();
        assert_eq!(got, vec![0..3, 3..6, 6..9, 9..10]);
        assert!(d.next(0).is_none());
        assert_eq!(d.count(), 4);
        assert!(MorselDispenser::new(0, 4).next(0).is_none());
        assert_eq!(MorselDispenser::new(0, 4).count(), 0);
        assert_eq!(MorselDispenser::new(8, 4).count(), 2);
    }

    #[test]
    fn each_worker_starts_in_its_region_then_takes_the_rest() {
        // 10 morsels of 3 in 3 regions of 4, 4 and 2 morsels.
        let d = MorselDispenser::with_regions(29, 3, 3);
        assert_eq!(d.count(), 10);
        assert_eq!(d.next(1), Some(12..15));
        assert_eq!(d.next(2), Some(24..27));
        assert_eq!(d.next(0), Some(0..3));
        assert_eq!(d.next(2), Some(27..29));
        // Region 2 is done: worker 2 goes on in region 0.
        assert_eq!(d.next(2), Some(3..6));
        // Worker numbers beyond the regions wrap around.
        assert_eq!(d.next(4), Some(15..18));
        let mut rest: Vec<_> = std::iter::from_fn(|| d.next(0)).collect();
        rest.sort_by_key(|r| r.start);
        assert_eq!(rest, vec![6..9, 9..12, 18..21, 21..24]);
        assert!((0..3).all(|w| d.next(w).is_none()));
    }

    #[test]
    fn workers_in_parallel_take_every_morsel_once() {
        for (total, size, regions) in [(1000, 7, 4), (5, 10, 3), (0, 4, 2), (64, 8, 8), (9, 1, 16)]
        {
            let d = MorselDispenser::with_regions(total, size, regions);
            let taken: Vec<Vec<Range<u64>>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..regions)
                    .map(|w| {
                        let d = &d;
                        s.spawn(move || std::iter::from_fn(|| d.next(w)).collect::<Vec<_>>())
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut all: Vec<u64> = taken.into_iter().flatten().flatten().collect();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..total).collect::<Vec<_>>(),
                "{total} {size} {regions}"
            );
        }
    }
}
