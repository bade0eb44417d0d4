//! Hub nodes of a skewed expansion, shared by the workers. However a scan's
//! morsels are cut, a node with thousands of rels is one worker's work: on
//! R-MAT 16, one of the 1,004 nodes that `3hop-sel1.6` expands from stands
//! for 45 % of its 15.8 M tuples, and the other worker waits for it.
//!
//! So in an aggregating pipeline that scans a node table and extends twice
//! or more, the first extend defers the scanned nodes with at least
//! [`HUB_RELS`] rels ([`HubSplit::defer`]) instead of expanding them. Once
//! every morsel is done, the pipeline runs again over those nodes alone
//! (`run_pipelines`): every worker scans each of them, in offset order, and
//! the workers share that extend's rels by claims ([`SplitClaims`]), as for
//! a single source (`split_single_source`). The steps before the extend
//! (filters, property reads, masks) are deterministic, so every worker sees
//! the same tuples in the same order.

use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::extend::SplitClaims;

/// Rels from which the first extend's input node is deferred: far above
/// an average degree (R-MAT 16 averages 15), and enough for a few claims
/// per worker.
pub const HUB_RELS: u64 = 1024;

/// The hubs one pipeline's first extend deferred, then shared.
#[derive(Debug, Default)]
pub struct HubSplit {
    /// First run: the node offsets deferred so far.
    found: Mutex<Vec<u64>>,
    /// Second run: the deferred nodes in offset order.
    list: OnceLock<Arc<Vec<u64>>>,
    /// Second run: the claims on the extend's rels.
    pub claims: Arc<SplitClaims>,
}

impl HubSplit {
    /// Defers node `offset` (first run).
    pub fn defer(&self, offset: u64) {
        self.found.lock().push(offset);
    }

    /// Ends the first run: makes the list of deferred nodes the second run
    /// scans, and says how many there are (0: no second run).
    pub fn start_second_run(&self) -> usize {
        let mut found = std::mem::take(&mut *self.found.lock());
        if found.is_empty() || self.list.get().is_some() {
            return 0;
        }
        found.sort_unstable();
        found.dedup();
        let n = found.len();
        match self.list.set(Arc::new(found)) {
            Ok(()) => n,
            Err(_) => 0,
        }
    }

    /// The nodes of the second run; None during the first.
    pub fn second_run(&self) -> Option<&Arc<Vec<u64>>> {
        self.list.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deferred nodes come back sorted and once each, for one second run.
    #[test]
    fn deferred_nodes_make_one_sorted_list() {
        let h = HubSplit::default();
        assert_eq!(h.start_second_run(), 0);
        assert!(h.second_run().is_none());
        for o in [70, 3, 70, 12] {
            h.defer(o);
        }
        assert!(h.second_run().is_none());
        assert_eq!(h.start_second_run(), 3);
        assert_eq!(h.second_run().map(|l| l.as_slice()), Some(&[3, 12, 70][..]));
        h.defer(5);
        assert_eq!(h.start_second_run(), 0);
    }
}
