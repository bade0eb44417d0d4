//! [`OwnedPin`]: a run of pages held resident until dropped.

use std::ops::Deref;
use std::sync::Arc;

use kith_common::constants::PAGE_SIZE;

use crate::pager::Pager;

/// Contiguous bytes of `count` pinned pages. Owns an `Arc` of its pager, so it can be
/// stored and sent across threads freely; the pages are not evicted or overwritten while
/// it lives. The bytes are page-aligned (callers reinterpret them as `&[u64]`).
pub struct OwnedPin {
    pager: Arc<Pager>,
    first: u32,
    count: u32,
}

impl OwnedPin {
    /// Takes over pins the caller already holds on `first..first + count`.
    pub(crate) fn new(pager: Arc<Pager>, first: u32, count: u32) -> OwnedPin {
        OwnedPin {
            pager,
            first,
            count,
        }
    }

    pub fn first_page(&self) -> crate::PageIdx {
        crate::PageIdx(self.first)
    }

    pub fn page_count(&self) -> u32 {
        self.count
    }
}

impl Deref for OwnedPin {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `pin_owned` returns an OwnedPin only after every page of the run is
        // pinned and RESIDENT; pinned pages are never evicted, loaded or overwritten
        // (page_state.rs), and the region outlives `self` through the `Arc`. The run lies
        // inside the region (checked by `pin_owned`), so the slice is in bounds.
        unsafe {
            std::slice::from_raw_parts(
                self.pager.page_ptr(self.first),
                self.count as usize * PAGE_SIZE,
            )
        }
    }
}

impl Drop for OwnedPin {
    fn drop(&mut self) {
        for page in self.first..self.first + self.count {
            self.pager.unpin_page(page);
        }
    }
}

impl std::fmt::Debug for OwnedPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedPin")
            .field("first", &self.first)
            .field("count", &self.count)
            .finish()
    }
}
