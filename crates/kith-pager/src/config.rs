//! Buffer-pool configuration and page identifiers.

/// Index of a `PAGE_SIZE` page in the database file (page 0 and 1 are the header slots).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageIdx(pub u32);

#[derive(Clone, Debug)]
pub struct PagerConfig {
    /// Resident page bytes the buffer pool may hold; pins beyond it evict, or fail with
    /// an out-of-memory error when everything resident is pinned.
    pub memory_limit_bytes: u64,
    pub read_only: bool,
    /// Virtual address space reserved for the pool (address space only, not memory); the
    /// database cannot grow past it while open.
    pub vm_reserve_bytes: u64,
}

/// 64 GiB of address space: 16 Mi pages.
pub const VM_RESERVE_BYTES_DEFAULT: u64 = 64 << 30;
/// The memory limit never defaults below this.
pub const MEMORY_LIMIT_BYTES_MIN: u64 = 64 << 20;

impl PagerConfig {
    /// Half of the physical memory, at least [`MEMORY_LIMIT_BYTES_MIN`].
    pub fn default_memory_limit() -> u64 {
        // SAFETY: sysconf has no memory-safety preconditions.
        let (pages, page_bytes) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages <= 0 || page_bytes <= 0 {
            return MEMORY_LIMIT_BYTES_MIN;
        }
        let physical_bytes = (pages as u64).saturating_mul(page_bytes as u64);
        (physical_bytes / 2).max(MEMORY_LIMIT_BYTES_MIN)
    }
}

impl Default for PagerConfig {
    fn default() -> PagerConfig {
        PagerConfig {
            memory_limit_bytes: PagerConfig::default_memory_limit(),
            read_only: false,
            vm_reserve_bytes: VM_RESERVE_BYTES_DEFAULT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limit_is_sane() {
        let limit = PagerConfig::default_memory_limit();
        assert!(limit >= MEMORY_LIMIT_BYTES_MIN);
        assert!(!PagerConfig::default().read_only);
    }
}
