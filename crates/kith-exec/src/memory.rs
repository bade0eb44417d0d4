//! Memory accounting for a query's intermediate state (collected rows,
//! sorted rows, aggregation groups, unwound lists, hash-join indexes,
//! recursive join rows and search state): each
//! holder charges what
//! it has grown to against the buffer manager's memory limit, which evicts
//! cached pages to make room, so data pages and intermediate results share
//! one budget. A query that cannot stay within it fails with an
//! out-of-memory error instead of the process being killed. Charges are
//! given back when the query ends, or earlier by a holder that frees
//! temporary buffers ([`MemoryCharge::shrink_to`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kith_common::{Error, ErrorKind, Result};
use kith_pager::Pager;

/// Charges are made in steps of this many bytes, so that a growing holder
/// calls the pager once per step, not once per batch.
const CHARGE_STEP: u64 = 64 << 10;

/// The memory one statement has charged.
pub struct QueryMemory {
    pager: Arc<Pager>,
    charged: AtomicU64,
}

impl QueryMemory {
    pub fn new(pager: Arc<Pager>) -> QueryMemory {
        QueryMemory {
            pager,
            charged: AtomicU64::new(0),
        }
    }

    /// Bytes charged so far.
    pub fn charged(&self) -> u64 {
        self.charged.load(Ordering::Relaxed)
    }

    fn charge(&self, bytes: u64) -> Result<()> {
        if let Err(e) = self.pager.reserve_memory(bytes) {
            if e.kind != ErrorKind::OutOfMemory {
                return Err(e);
            }
            return Err(Error::new(
                ErrorKind::OutOfMemory,
                format!(
                    "out of memory: the query's intermediate results need more than \
                     the memory limit of {} MiB allows (it held {} KiB and needed {} KiB \
                     more; the limit is the buffer pool size)",
                    self.pager.memory_limit_bytes() >> 20,
                    self.charged() >> 10,
                    bytes.div_ceil(1 << 10),
                ),
            ));
        }
        self.charged.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Gives back `bytes` of what this query charged (a multiple of
    /// [`CHARGE_STEP`], so the pager's page rounding matches the charge).
    fn release(&self, bytes: u64) {
        debug_assert!(
            bytes.is_multiple_of(CHARGE_STEP),
            "release of {bytes} bytes"
        );
        self.pager.release_memory(bytes);
        self.charged.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for QueryMemory {
    fn drop(&mut self) {
        self.pager.release_memory(*self.charged.get_mut());
    }
}

/// A recursive search's per-source state (frontiers, levels, lanes) is
/// charged here while each source morsel runs (in whole steps both ways).
impl kith_graph::StateBudget for QueryMemory {
    fn charge(&self, bytes: u64) -> Result<()> {
        QueryMemory::charge(self, bytes.div_ceil(CHARGE_STEP) * CHARGE_STEP)
    }

    fn release(&self, bytes: u64) {
        QueryMemory::release(self, bytes.div_ceil(CHARGE_STEP) * CHARGE_STEP)
    }
}

/// What one holder (a worker's sink, a list of unwound rows) has charged:
/// it reports its size as it grows and is charged the difference.
#[derive(Default)]
pub struct MemoryCharge {
    charged: u64,
}

impl MemoryCharge {
    /// The holder now takes `bytes`: charges the growth (in whole steps).
    #[inline]
    pub fn grow_to(&mut self, memory: &QueryMemory, bytes: u64) -> Result<()> {
        if bytes <= self.charged {
            return Ok(());
        }
        let more = (bytes - self.charged).div_ceil(CHARGE_STEP) * CHARGE_STEP;
        memory.charge(more)?;
        self.charged += more;
        Ok(())
    }

    /// The holder now takes only `bytes` (it freed temporary buffers, as a
    /// hash-join build does between its phases): gives back what was
    /// charged beyond that, in whole steps, so that a query's later holders
    /// can use it.
    pub fn shrink_to(&mut self, memory: &QueryMemory, bytes: u64) {
        let keep = bytes.div_ceil(CHARGE_STEP) * CHARGE_STEP;
        if keep < self.charged {
            memory.release(self.charged - keep);
            self.charged = keep;
        }
    }
}

/// A query's memory over an in-memory pager whose limit is `limit_bytes`
/// (unit tests of the holders).
#[cfg(test)]
pub(crate) fn test_memory(limit_bytes: u64) -> Arc<QueryMemory> {
    let pager = Pager::in_memory(kith_pager::PagerConfig {
        memory_limit_bytes: limit_bytes,
        read_only: false,
        vm_reserve_bytes: 64 << 20,
    });
    Arc::new(QueryMemory::new(Arc::new(pager)))
}
