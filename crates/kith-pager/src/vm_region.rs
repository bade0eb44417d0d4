//! One reserved range of anonymous virtual memory.
//!
//! The range is mapped `MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE`, so reserving tens
//! of GiB costs address space only: the kernel backs a 4 KiB page with memory the first
//! time it is touched, and [`VmRegion::discard`] (`MADV_DONTNEED`) hands the memory back
//! while keeping the address range, after which the page reads as zeros again.

use std::ptr::NonNull;

use kith_common::{Error, Result};

/// The smallest reservation tried when the kernel refuses a large one (for example
/// with `vm.overcommit_memory = 2`, where `MAP_NORESERVE` is ignored).
const RESERVE_BYTES_MIN: usize = 64 << 20;

pub struct VmRegion {
    base: NonNull<u8>,
    len_bytes: usize,
}

// SAFETY: the region is plain memory owned by this value; which thread may touch which
// bytes is decided by the callers' page-state protocol (see `page_state.rs`), not by the
// thread that created the mapping.
unsafe impl Send for VmRegion {}
// SAFETY: as above; shared access hands out raw pointers only, and every dereference is
// guarded by the page-state protocol.
unsafe impl Sync for VmRegion {}

impl VmRegion {
    /// Reserves `len_bytes` (rounded up to a whole OS page). If the kernel refuses, halves
    /// the request down to [`RESERVE_BYTES_MIN`] (or `len_bytes`, if smaller) before failing.
    pub fn reserve(len_bytes: usize) -> Result<VmRegion> {
        let os_page_bytes = os_page_size_bytes();
        let floor_bytes = len_bytes.min(RESERVE_BYTES_MIN).max(os_page_bytes);
        let mut try_bytes = len_bytes.max(os_page_bytes).next_multiple_of(os_page_bytes);
        loop {
            // SAFETY: an anonymous mapping with a null hint creates fresh memory and
            // aliases nothing; the result is checked against MAP_FAILED below.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    try_bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if ptr != libc::MAP_FAILED {
                let base = NonNull::new(ptr.cast::<u8>())
                    .ok_or_else(|| Error::internal("mmap returned null"))?;
                return Ok(VmRegion {
                    base,
                    len_bytes: try_bytes,
                });
            }
            let err = std::io::Error::last_os_error();
            if try_bytes / 2 < floor_bytes {
                return Err(Error::io(format!(
                    "cannot reserve {len_bytes} bytes of virtual memory for the buffer pool: {err}"
                )));
            }
            try_bytes = (try_bytes / 2).next_multiple_of(os_page_bytes);
        }
    }

    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Returns the memory behind `[offset_bytes, offset_bytes + len_bytes)` to the OS; the
    /// range reads as zeros afterwards. The caller must guarantee that no reference into
    /// the range is alive.
    pub fn discard(&self, offset_bytes: usize, len_bytes: usize) {
        assert!(
            offset_bytes
                .checked_add(len_bytes)
                .is_some_and(|end| end <= self.len_bytes),
            "discard past the end of the region"
        );
        if len_bytes == 0 {
            return;
        }
        // SAFETY: the range lies inside our own private anonymous mapping (asserted above)
        // and the caller guarantees no reference into it is alive; MADV_DONTNEED on such a
        // mapping only drops the contents, which later read as zeros.
        let rc = unsafe {
            libc::madvise(
                self.base.as_ptr().add(offset_bytes).cast(),
                len_bytes,
                libc::MADV_DONTNEED,
            )
        };
        // The range is page-aligned and mapped, so madvise cannot fail short of a kernel bug.
        assert_eq!(
            rc,
            0,
            "madvise(MADV_DONTNEED) failed: {}",
            std::io::Error::last_os_error()
        );
    }
}

impl Drop for VmRegion {
    fn drop(&mut self) {
        // SAFETY: `base`/`len_bytes` are exactly what mmap returned, and `&mut self` means
        // nothing borrows the region any more (pins hold an `Arc` of the owner).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len_bytes);
        }
    }
}

pub fn os_page_size_bytes() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_write_discard_reads_zero() {
        let region = VmRegion::reserve(1 << 20).unwrap();
        assert!(region.len_bytes() >= 1 << 20);
        let page = os_page_size_bytes();
        // SAFETY: the region is ours, at least 1 MiB, and no reference into it exists.
        let bytes = unsafe { std::slice::from_raw_parts_mut(region.base(), 2 * page) };
        bytes.fill(0xAB);
        region.discard(0, page);
        // SAFETY: as above; the mutable borrow ended.
        let bytes = unsafe { std::slice::from_raw_parts(region.base(), 2 * page) };
        assert!(bytes[..page].iter().all(|&b| b == 0));
        assert!(bytes[page..].iter().all(|&b| b == 0xAB));
    }

    #[test]
    fn huge_reserve_is_virtual_only() {
        let region = VmRegion::reserve(16 << 30).unwrap();
        assert!(region.len_bytes() >= RESERVE_BYTES_MIN);
    }
}
