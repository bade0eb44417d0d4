//! The page layer of KithDB: the database file, its buffer pool and the WAL file.
//!
//! Job:
//! - [`Pager`] owns the database file (`flock`ed shared by every process that opens it;
//!   who may write is the [`SharedFile`]'s writer lock), allocates contiguous page runs from a free list, writes immutable pages,
//!   keeps the double-buffered header in pages 0 and 1, and serves reads through a
//!   vmcache-style buffer pool with a hard memory limit: [`Pager::pin_owned`] returns an
//!   [`OwnedPin`], one contiguous slice of a page run that stays resident until dropped.
//!   Unpinned pages are evicted by a clock sweep; when everything is pinned, a pin fails
//!   with an out-of-memory error instead of going over the limit.
//! - [`Wal`] appends checksummed frames to the write-ahead-log file and reads back the
//!   valid prefix after a crash.
//! - [`SharedFile`] is what the processes that open one database share: the newest
//!   commit point, a reader table and the writer queue, in `<db>.shm`, with locks the
//!   kernel drops when a process dies.
//!
//! Boundaries: this crate knows pages and byte frames only. What is in a page, which
//! pages are live (the storage layer rebuilds the free list with
//! [`Pager::set_free_list`]), what a header or WAL payload means, and when to
//! checkpoint belong to `kith-storage`. Pages are immutable after they are written
//! (storage is copy-on-write), so there are no dirty pages and no write-back here.
//!
//! Main entry points: [`Pager::open`], [`Pager::in_memory`], [`Wal::open`]. The pin and
//! eviction protocol is described in `page_state.rs`.

mod config;
mod crc32;
mod data_file;
mod free_list;
mod header;
mod page_state;
mod pager;
mod pin;
mod shared_file;
mod vm_region;
mod wal;

pub use config::{PageIdx, PagerConfig, MEMORY_LIMIT_BYTES_MIN, VM_RESERVE_BYTES_DEFAULT};
pub use header::{HEADER_PAGES, PAYLOAD_BYTES_MAX as HEADER_PAYLOAD_BYTES_MAX};
pub use pager::Pager;
pub use pin::OwnedPin;
pub use shared_file::{Arrival, CommitPoint, SharedFile, NO_SNAPSHOT};
pub use wal::{Wal, HEADER_BYTES as WAL_HEADER_BYTES, RECORD_BYTES_MAX as WAL_RECORD_BYTES_MAX};

#[cfg(test)]
mod send_sync {
    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn handles_are_send_sync() {
        assert_send_sync::<super::Pager>();
        assert_send_sync::<super::OwnedPin>();
        assert_send_sync::<super::Wal>();
    }
}
