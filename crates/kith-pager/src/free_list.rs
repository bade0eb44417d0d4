//! The page allocator: a free list of page runs plus the end of the file.
//!
//! Runs are kept in a `BTreeMap` keyed by first page, always coalesced, so neighbours of a
//! freed run are found in O(log n). Allocation is first-fit by address, which keeps the
//! file compact; a free run that touches the end of the file is extended rather than
//! leaving a hole behind.

use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub struct FreeList {
    /// first page -> run length in pages; no two runs overlap or touch.
    runs: BTreeMap<u32, u32>,
    /// Total pages, free runs included.
    end_page: u32,
}

impl FreeList {
    pub fn new(end_page: u32) -> FreeList {
        FreeList {
            runs: BTreeMap::new(),
            end_page,
        }
    }

    pub fn end_page(&self) -> u32 {
        self.end_page
    }

    /// Returns the first page of a contiguous run of `count` pages, or `None` when the run
    /// would end past `limit_page` (exclusive).
    pub fn allocate(&mut self, count: u32, limit_page: u32) -> Option<u32> {
        if count == 0 {
            return Some(self.end_page);
        }
        let fit = self
            .runs
            .iter()
            .find(|(_, &len)| len >= count)
            .map(|(&first, &len)| (first, len));
        if let Some((first, len)) = fit {
            self.runs.remove(&first);
            if len > count {
                self.runs.insert(first + count, len - count);
            }
            return Some(first);
        }
        // No run is big enough: grow the file, starting inside a free tail run if any.
        let start = match self.runs.last_key_value() {
            Some((&first, &len)) if first + len == self.end_page => first,
            _ => self.end_page,
        };
        let new_end = start.checked_add(count).filter(|&end| end <= limit_page)?;
        self.runs.remove(&start);
        self.end_page = self.end_page.max(new_end);
        Some(start)
    }

    /// Returns `[first, first + count)` to the free list, merging it with touching runs.
    pub fn free(&mut self, first: u32, count: u32) {
        if count == 0 {
            return;
        }
        assert!(
            first
                .checked_add(count)
                .is_some_and(|end| end <= self.end_page),
            "free of pages {first}..+{count} past the end {}",
            self.end_page
        );
        let mut start = first;
        let mut len = count;
        if let Some((&prev_first, &prev_len)) = self.runs.range(..first).next_back() {
            assert!(
                prev_first + prev_len <= first,
                "double free of page {first}"
            );
            if prev_first + prev_len == first {
                self.runs.remove(&prev_first);
                start = prev_first;
                len += prev_len;
            }
        }
        if let Some((&next_first, &next_len)) = self.runs.range(first..).next() {
            assert!(
                next_first >= first + count,
                "double free of page {next_first}"
            );
            if next_first == first + count {
                self.runs.remove(&next_first);
                len += next_len;
            }
        }
        self.runs.insert(start, len);
    }

    /// Grows the file to `end_page` pages (no-op if it is that long already); the new pages
    /// are free. Recovery uses it for pages the WAL restores past the end of the file.
    pub fn extend_to(&mut self, end_page: u32) {
        if end_page > self.end_page {
            let old_end = self.end_page;
            self.end_page = end_page;
            self.free(old_end, end_page - old_end);
        }
    }

    /// Replaces the free list (the storage layer rebuilds it from its metadata on open).
    pub fn set(&mut self, runs: impl IntoIterator<Item = (u32, u32)>) {
        self.runs.clear();
        for (first, count) in runs {
            self.end_page = self.end_page.max(first.saturating_add(count));
            self.free(first, count);
        }
    }

    /// Removes the free run that ends the file, if any, shortening the file to its start;
    /// returns the pages cut off.
    pub fn cut_free_tail(&mut self) -> Option<(u32, u32)> {
        let (&first, &len) = self.runs.last_key_value()?;
        if first + len != self.end_page {
            return None;
        }
        self.runs.remove(&first);
        self.end_page = first;
        Some((first, len))
    }

    pub fn runs(&self) -> Vec<(u32, u32)> {
        self.runs
            .iter()
            .map(|(&first, &len)| (first, len))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_free_tail_only_cuts_a_run_at_the_end() {
        let mut list = FreeList::new(10);
        list.free(3, 2);
        assert_eq!(list.cut_free_tail(), None);
        list.free(7, 3);
        assert_eq!(list.cut_free_tail(), Some((7, 3)));
        assert_eq!(list.end_page(), 7);
        assert_eq!(list.runs(), vec![(3, 2)]);
    }

    #[test]
    fn first_fit_then_extend() {
        let mut list = FreeList::new(2);
        assert_eq!(list.allocate(3, u32::MAX), Some(2));
        assert_eq!(list.allocate(2, u32::MAX), Some(5));
        assert_eq!(list.end_page(), 7);
        list.free(2, 3);
        assert_eq!(list.allocate(2, u32::MAX), Some(2));
        assert_eq!(list.runs(), vec![(4, 1)]);
        assert_eq!(list.allocate(4, u32::MAX), Some(7));
    }

    #[test]
    fn coalesces_both_sides() {
        let mut list = FreeList::new(20);
        list.free(2, 2);
        list.free(6, 2);
        list.free(4, 2);
        assert_eq!(list.runs(), vec![(2, 6)]);
        list.free(10, 10);
        list.free(8, 2);
        assert_eq!(list.runs(), vec![(2, 18)]);
    }

    #[test]
    fn free_tail_run_is_extended() {
        let mut list = FreeList::new(10);
        list.free(8, 2);
        assert_eq!(list.allocate(5, u32::MAX), Some(8));
        assert_eq!(list.end_page(), 13);
        assert!(list.runs().is_empty());
    }

    #[test]
    fn extend_to_adds_free_pages() {
        let mut list = FreeList::new(10);
        list.free(8, 2);
        list.extend_to(14);
        assert_eq!(list.end_page(), 14);
        assert_eq!(list.runs(), vec![(8, 6)]);
        list.extend_to(12);
        assert_eq!(list.end_page(), 14);
    }

    #[test]
    fn limit_is_respected() {
        let mut list = FreeList::new(2);
        assert_eq!(list.allocate(10, 8), None);
        assert_eq!(list.allocate(6, 8), Some(2));
        assert_eq!(list.end_page(), 8);
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_panics() {
        let mut list = FreeList::new(10);
        list.free(2, 4);
        list.free(3, 1);
    }
}
