//! The per-page state word of the buffer pool, and its protocol.
//!
//! Every page of the virtual region has one `AtomicU64`:
//!
//! ```text
//!   63       62         61           32..60   0..31
//!  +--------+----------+------------+--------+-----------+
//!  | LOCKED | RESIDENT | REFERENCED | unused | pin count |
//!  +--------+----------+------------+--------+-----------+
//! ```
//!
//! ```text
//!                 pin (CAS; waits while LOCKED)         loader: CAS +LOCKED,
//!   ABSENT  ───────────────────────────────►  ABSENT,pinned ──── pread ────┐
//!     ▲  ▲                                                                │
//!     │  │ free: CAS to LOCKED                                             ▼
//!     │  │ only when pins == 0, discard, store 0             RESIDENT,pinned
//!     │  └────────────────────────────────────────────┐                   │ last unpin
//!     │                                               │                   ▼
//!     └── store 0 ◄── EVICTING (LOCKED) ◄── clock: CAS ── RESIDENT, pins == 0
//!                       madvise(DONTNEED)     (second chance via REFERENCED)
//!
//!   write_pages: CAS to LOCKED (keeping RESIDENT) only when pins == 0, write the file,
//!   copy the bytes into the frame, store RESIDENT (write-through; a page it cannot
//!   cache, or a failed write, is discarded and stored 0)
//! ```
//!
//! Why this is safe without a page table lock:
//! - A page is only *written* (loaded, discarded, overwritten) by the thread that set
//!   LOCKED, and LOCKED is only set on a page that is either pinned by the locker and not
//!   resident (loading), or has no pins at all (evicting, `write_pages`, `free`); the
//!   clock and `free` skip LOCKED pages, so a RESIDENT page being overwritten stays put.
//! - Pinning waits while LOCKED, so no new reader can appear while a page changes, and a
//!   page with pins is never evicted or overwritten. A pin hands out bytes only after
//!   every page of it is RESIDENT, so readers never see a half-loaded page.
//! - Nobody waits for anything while holding LOCKED (the load is one `pread`), so
//!   there is no lock ordering to get wrong and no deadlock.

use std::sync::atomic::AtomicU64;

pub const LOCKED: u64 = 1 << 63;
pub const RESIDENT: u64 = 1 << 62;
pub const REFERENCED: u64 = 1 << 61;
pub const PIN_MASK: u64 = 0xFFFF_FFFF;
/// One pin short of overflowing into the unused bits.
pub const PINS_MAX: u64 = PIN_MASK - 1;

pub type PageState = AtomicU64;

pub fn pins(state: u64) -> u64 {
    state & PIN_MASK
}

/// Backs off while another thread holds a page LOCKED (for the length of one `pread`
/// or `madvise` at most).
pub fn wait_for_unlock() {
    std::thread::yield_now();
}
