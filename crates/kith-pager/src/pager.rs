//! [`Pager`]: the database file, its page allocator, its header and the buffer pool.
//!
//! The pool is vmcache-style: one anonymous virtual region as large as the biggest file
//! we accept, where page `i` always lives at byte `i * PAGE_SIZE`. A pin of a run of
//! pages is therefore one contiguous slice with no copying or page table, and evicting
//! a page is an `madvise(MADV_DONTNEED)` of its 4 KiB. The protocol on the per-page
//! state words is in `page_state.rs`.
//!
//! Data pages are immutable once written (storage is copy-on-write), so the pool has no
//! dirty pages: `write_pages` goes straight to the file and writes the same bytes
//! through to the cached copy, so a later pin finds them without a read.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use kith_common::constants::PAGE_SIZE;
use kith_common::{Error, ErrorKind, Result};
use parking_lot::{Mutex, RwLock};

use crate::config::{PageIdx, PagerConfig};
use crate::data_file::{io_error, open_locked, read_at_most, sync_parent_dir};
use crate::free_list::FreeList;
use crate::header::{self, HEADER_PAGES};
use crate::page_state::{pins, wait_for_unlock, PageState, LOCKED, PINS_MAX, REFERENCED, RESIDENT};
use crate::pin::OwnedPin;
use crate::vm_region::VmRegion;

const PAGE_BYTES: u64 = PAGE_SIZE as u64;

/// Which header slot holds the newest valid header, and its generation.
#[derive(Debug, Default)]
struct HeaderState {
    latest: Option<(u32, u64)>,
    /// The header of an in-memory pager.
    payload_in_memory: Option<Vec<u8>>,
}

pub struct Pager {
    /// `None` for an in-memory database.
    file: Option<File>,
    path: PathBuf,
    read_only: bool,
    /// Page `i` lives at byte `i * PAGE_SIZE`.
    region: VmRegion,
    /// One [`PageState`] per page of `region`; the OS backs it lazily like the region.
    states: VmRegion,
    capacity_pages: u32,
    memory_limit_bytes: u64,
    limit_pages: u64,
    /// Resident pages plus pages reserved by loads in flight.
    resident_pages: AtomicU64,
    /// Mirror of `alloc.end_page()` for lock-free reads.
    num_pages: AtomicU32,
    alloc: Mutex<FreeList>,
    clock_hand: AtomicU32,
    header: Mutex<HeaderState>,
    /// Page images that replace the file's bytes on load: what a read-only open
    /// recovered from the WAL but may not write to the file. Entries go when a later
    /// commit reuses their page ([`Pager::forget`]) or a checkpoint wrote them.
    overlay: RwLock<HashMap<u32, Box<[u8]>>>,
}

impl Pager {
    /// Opens (or, unless read-only, creates) a database file and locks it.
    pub fn open(path: &Path, cfg: PagerConfig) -> Result<Pager> {
        let existed = path.exists();
        let file = open_locked(path, cfg.read_only, true)?;
        if !existed && !cfg.read_only {
            sync_parent_dir(path)?;
        }
        let len_bytes = file
            .metadata()
            .map_err(|e| io_error(path, "stat", &e))?
            .len();
        let name = path.display().to_string();
        let slots = [read_slot(&file, path, 0)?, read_slot(&file, path, 1)?];
        let latest = latest_slot(&slots);
        header::pick_latest(slots, &name)?;
        let num_pages = len_bytes.div_ceil(PAGE_BYTES).max(HEADER_PAGES as u64);
        let mut pager = Pager::with_region(cfg, Some(file), path.to_path_buf())?;
        if num_pages > pager.capacity_pages as u64 {
            return Err(Error::io(format!(
                "database file '{name}' ({len_bytes} bytes) is larger than the reserved virtual memory of {} bytes; raise vm_reserve_bytes",
                pager.region.len_bytes()
            )));
        }
        pager.set_end_page(num_pages as u32);
        pager.header.get_mut().latest = latest;
        Ok(pager)
    }

    /// A pager without a file: pages stay resident until freed, never evicted, and the
    /// memory limit still applies.
    pub fn in_memory(cfg: PagerConfig) -> Pager {
        let mut pager = Pager::with_region(cfg, None, PathBuf::from(":memory:"))
            .unwrap_or_else(|e| panic!("in-memory database: {}", e.message));
        pager.set_end_page(HEADER_PAGES);
        pager
    }

    fn with_region(cfg: PagerConfig, file: Option<File>, path: PathBuf) -> Result<Pager> {
        let reserve_bytes = usize::try_from(cfg.vm_reserve_bytes)
            .unwrap_or(usize::MAX)
            .max(PAGE_SIZE * 4);
        let region = VmRegion::reserve(reserve_bytes)?;
        let capacity_pages = (region.len_bytes() / PAGE_SIZE).min(u32::MAX as usize) as u32;
        let states = VmRegion::reserve(capacity_pages as usize * size_of::<PageState>())?;
        Ok(Pager {
            file,
            path,
            read_only: cfg.read_only,
            region,
            states,
            capacity_pages,
            memory_limit_bytes: cfg.memory_limit_bytes,
            limit_pages: cfg.memory_limit_bytes / PAGE_BYTES,
            resident_pages: AtomicU64::new(0),
            num_pages: AtomicU32::new(HEADER_PAGES),
            alloc: Mutex::new(FreeList::new(HEADER_PAGES)),
            clock_hand: AtomicU32::new(0),
            header: Mutex::new(HeaderState::default()),
            overlay: RwLock::new(HashMap::new()),
        })
    }

    fn set_end_page(&mut self, end_page: u32) {
        *self.alloc.get_mut() = FreeList::new(end_page);
        *self.num_pages.get_mut() = end_page;
    }

    /// Total pages, including the two header pages and free pages.
    pub fn num_pages(&self) -> u32 {
        self.num_pages.load(Ordering::Acquire)
    }

    /// Bytes of page data currently held in memory.
    pub fn resident_bytes(&self) -> u64 {
        self.resident_pages.load(Ordering::Acquire) * PAGE_BYTES
    }

    /// Accounts `bytes` (rounded up to whole pages) of memory held outside
    /// the buffer pool (a query's intermediate results) against the memory
    /// limit, evicting unpinned pages to make room; an out-of-memory error
    /// when it cannot. [`Pager::release_memory`] gives it back.
    pub fn reserve_memory(&self, bytes: u64) -> Result<()> {
        self.reserve(bytes.div_ceil(PAGE_BYTES))
    }

    /// Gives back memory accounted by [`Pager::reserve_memory`].
    pub fn release_memory(&self, bytes: u64) {
        self.resident_pages
            .fetch_sub(bytes.div_ceil(PAGE_BYTES), Ordering::AcqRel);
    }

    pub fn memory_limit_bytes(&self) -> u64 {
        self.memory_limit_bytes
    }

    /// The free runs, in page order (for tests and diagnostics).
    pub fn free_runs(&self) -> Vec<(PageIdx, u32)> {
        self.alloc
            .lock()
            .runs()
            .into_iter()
            .map(|(first, count)| (PageIdx(first), count))
            .collect()
    }

    /// A contiguous run of `count` pages: first fit from the free list, else the end grows.
    pub fn allocate(&self, count: u32) -> Result<PageIdx> {
        self.check_writable()?;
        let mut alloc = self.alloc.lock();
        let first = alloc.allocate(count, self.capacity_pages).ok_or_else(|| {
            Error::io(format!(
                "database '{}' cannot grow by {count} pages past the reserved virtual memory of {} bytes; raise vm_reserve_bytes",
                self.path.display(),
                self.region.len_bytes()
            ))
        })?;
        self.num_pages.store(alloc.end_page(), Ordering::Release);
        Ok(PageIdx(first))
    }

    /// Replaces the free list; the storage layer rebuilds it from its metadata on open.
    pub fn set_free_list(&self, runs: Vec<(PageIdx, u32)>) {
        let mut alloc = self.alloc.lock();
        alloc.set(runs.into_iter().map(|(first, count)| (first.0, count)));
        self.num_pages.store(alloc.end_page(), Ordering::Release);
    }

    /// Returns a run to the free list (coalescing with its neighbours); in memory it
    /// also drops the cached copy where nobody pins it.
    pub fn free(&self, first: PageIdx, count: u32) {
        self.alloc.lock().free(first.0, count);
        // In memory the frame is the only copy: drop it, so a reused page starts
        // zeroed. A file's frames stay cached until the clock takes them or a write
        // reusing the page overwrites them, which saves an madvise and a page fault
        // per page a commit retires.
        if self.file.is_none() {
            for page in first.0..first.0 + count {
                self.try_evict(page, false);
            }
        }
    }

    /// Writes `bytes` to the pages starting at `first`, zero-padding the last page.
    /// Write-through: the cached copy becomes the new bytes (kept or made resident when
    /// the memory limit allows), so the pin that follows a write (the WAL image of a
    /// commit, the next statement's read) needs no read and no page fault.
    pub fn write_pages(&self, first: PageIdx, bytes: &[u8]) -> Result<()> {
        self.check_writable()?;
        let count = u32::try_from(bytes.len().div_ceil(PAGE_SIZE))
            .map_err(|_| Error::internal("write of more than 2^32 pages"))?;
        self.check_range(first, count, "write")?;
        let pages = first.0..first.0 + count;
        let mut resident = 0u64;
        for page in pages.clone() {
            match self.lock_exclusive(page) {
                Ok(was_resident) => resident += u64::from(was_resident),
                Err(e) => {
                    self.unlock_after_failed_write(first.0..page);
                    return Err(e);
                }
            }
        }
        let newly = count as u64 - resident;
        let result = match &self.file {
            Some(file) => {
                write_padded(file, first, bytes).map_err(|e| io_error(&self.path, "write", &e))
            }
            None => self.reserve(newly),
        };
        if let Err(e) = result {
            self.unlock_after_failed_write(pages);
            return Err(e);
        }
        // The file holds the bytes now; caching them is optional for a file.
        let cached = newly == 0 || self.file.is_none() || self.reserve(newly).is_ok();
        if cached {
            self.copy_in(first, count, bytes);
            for page in pages {
                self.state(page).store(RESIDENT, Ordering::Release);
            }
        } else {
            self.unlock_after_failed_write(pages);
        }
        Ok(())
    }

    /// Unlocks pages [`Pager::lock_exclusive`] took for a write that did not complete
    /// (or is not cached): their cached copies, which may be stale, are dropped.
    fn unlock_after_failed_write(&self, pages: std::ops::Range<u32>) {
        for page in pages {
            let state = self.state(page);
            if state.load(Ordering::Acquire) & RESIDENT != 0 {
                self.region.discard(page as usize * PAGE_SIZE, PAGE_SIZE);
                self.resident_pages.fetch_sub(1, Ordering::AcqRel);
            }
            state.store(0, Ordering::Release);
        }
    }

    /// Recovery: writes the image of pages a WAL record carries, growing the file when
    /// they lie past its end (the grown pages count as free until the storage layer
    /// rebuilds the free list). Not durable until [`Pager::sync`].
    pub fn write_recovered(&self, first: PageIdx, bytes: &[u8]) -> Result<()> {
        self.extend_for(first, bytes.len())?;
        self.write_pages(first, bytes)
    }

    /// Recovery of a read-only database: `pages` (page index -> one page of bytes)
    /// replace what the file holds for those pages whenever they are loaded, since the
    /// file may not be written. Call before anything is pinned.
    pub fn install_overlay(&self, pages: HashMap<u32, Box<[u8]>>) -> Result<()> {
        if pages.values().any(|p| p.len() != PAGE_SIZE) {
            return Err(Error::internal("overlay page of the wrong size"));
        }
        for &page in pages.keys() {
            self.extend_for(PageIdx(page), PAGE_SIZE)?;
        }
        self.overlay.write().extend(pages);
        Ok(())
    }

    /// Another process wrote the pages of `runs` (it reused them): drops their overlay
    /// images and reads the cached copies again from the file in place (a commit's new
    /// pages are likely read next, and evicting them made the reload fault in and zero
    /// fresh memory: an eighth of the time of writers taking turns). Pinned pages are
    /// kept: a pin belongs to a snapshot, and no process reuses a page a live snapshot
    /// can read.
    pub fn forget(&self, runs: &[(PageIdx, u32)]) {
        let end = self.num_pages().min(self.capacity_pages);
        let pages = || {
            runs.iter()
                .flat_map(move |&(first, count)| first.0..first.0.saturating_add(count).min(end))
        };
        {
            let mut overlay = self.overlay.write();
            if !overlay.is_empty() {
                pages().for_each(|page| {
                    overlay.remove(&page);
                });
            }
        }
        pages().for_each(|page| self.reread(page));
    }

    /// Reads a resident, unpinned page again from the file, holding it LOCKED
    /// meanwhile; evicts it if the read fails. Pages being loaded or pinned are left
    /// alone (see [`Pager::forget`]).
    fn reread(&self, page: u32) {
        let Some(file) = &self.file else {
            return;
        };
        let state = self.state(page);
        let current = state.load(Ordering::Acquire);
        if current & LOCKED != 0 || current & RESIDENT == 0 || pins(current) != 0 {
            return;
        }
        if state
            .compare_exchange(
                current,
                LOCKED | RESIDENT,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return;
        }
        // SAFETY: the page is inside the region (below `end`, checked by the caller) and
        // we hold it LOCKED with no pins, so nobody else reads or writes these bytes.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.page_ptr(page), PAGE_SIZE) };
        match read_at_most(file, buf, page as u64 * PAGE_BYTES) {
            Ok(n) => {
                buf[n..].fill(0);
                state.store(RESIDENT, Ordering::Release);
            }
            Err(_) => {
                self.region.discard(page as usize * PAGE_SIZE, PAGE_SIZE);
                self.resident_pages.fetch_sub(1, Ordering::AcqRel);
                state.store(0, Ordering::Release);
            }
        }
    }

    /// [`Pager::forget`] of every page (another process checkpointed, or its changes
    /// are not known page by page).
    pub fn forget_all(&self) {
        self.overlay.write().clear();
        for page in HEADER_PAGES..self.num_pages().min(self.capacity_pages) {
            self.try_evict(page, false);
        }
    }

    /// Gives the free pages at the end of the file back to the file system (the writer,
    /// at checkpoint: no snapshot references a free page).
    pub fn truncate_free_tail(&self) -> Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        self.check_writable()?;
        let mut alloc = self.alloc.lock();
        let Some((first, count)) = alloc.cut_free_tail() else {
            return Ok(());
        };
        for page in first..(first + count).min(self.capacity_pages) {
            self.try_evict(page, false);
        }
        self.num_pages.store(alloc.end_page(), Ordering::Release);
        file.set_len(first as u64 * PAGE_BYTES)
            .map_err(|e| io_error(&self.path, "truncate", &e))
    }

    /// Whether the data file holds `image` at `page` (a page a WAL record carries may be
    /// on disk already: the writer wrote it there before logging it).
    pub fn file_holds(&self, page: PageIdx, image: &[u8]) -> Result<bool> {
        let Some(file) = &self.file else {
            return Ok(false);
        };
        let mut buf = vec![0u8; image.len()];
        let read = read_at_most(file, &mut buf, page.0 as u64 * PAGE_BYTES)
            .map_err(|e| io_error(&self.path, "read", &e))?;
        Ok(read == image.len() && buf == image)
    }

    /// Another process may have grown the file: takes its pages in.
    pub fn refresh_size(&self) -> Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let len_bytes = file
            .metadata()
            .map_err(|e| io_error(&self.path, "stat", &e))?
            .len();
        let pages = len_bytes.div_ceil(PAGE_BYTES);
        if pages > self.num_pages() as u64 {
            if pages > self.capacity_pages as u64 {
                return Err(Error::io(format!(
                    "database file '{}' ({len_bytes} bytes) grew past the reserved virtual memory of {} bytes; raise vm_reserve_bytes",
                    self.path.display(),
                    self.region.len_bytes()
                )));
            }
            let mut alloc = self.alloc.lock();
            alloc.extend_to(pages as u32);
            self.num_pages.store(alloc.end_page(), Ordering::Release);
        }
        Ok(())
    }

    /// Grows the page count so that `len_bytes` from `first` lie inside the file.
    fn extend_for(&self, first: PageIdx, len_bytes: usize) -> Result<()> {
        let count = u32::try_from(len_bytes.div_ceil(PAGE_SIZE))
            .map_err(|_| Error::corruption("recovered page run too long"))?;
        let end = first
            .0
            .checked_add(count)
            .filter(|&end| end <= self.capacity_pages && first.0 >= HEADER_PAGES)
            .ok_or_else(|| {
                Error::corruption(format!(
                    "recovered pages {}..+{count} outside the database's pages",
                    first.0
                ))
            })?;
        let mut alloc = self.alloc.lock();
        alloc.extend_to(end);
        self.num_pages.store(alloc.end_page(), Ordering::Release);
        Ok(())
    }

    /// Pins `count` pages from `first` as one contiguous slice, loading what is not
    /// resident; the pages stay in memory until the pin drops.
    pub fn pin_owned(self: &Arc<Self>, first: PageIdx, count: u32) -> Result<OwnedPin> {
        self.check_range(first, count, "pin")?;
        if count as u64 > self.limit_pages {
            return Err(self.out_of_memory(count as u64));
        }
        for page in first.0..first.0 + count {
            self.pin_page(page);
        }
        // From here on, dropping `pin` unpins, also on the error path.
        let pin = OwnedPin::new(Arc::clone(self), first.0, count);
        self.make_resident(first.0, count)?;
        Ok(pin)
    }

    /// fsyncs the data file (no-op in memory).
    pub fn sync(&self) -> Result<()> {
        match &self.file {
            Some(file) if !self.read_only => file
                .sync_data()
                .map_err(|e| io_error(&self.path, "fsync", &e)),
            _ => Ok(()),
        }
    }

    /// The payload of the newest valid header, `None` for a fresh database.
    pub fn read_header(&self) -> Result<Option<Vec<u8>>> {
        let Some(file) = &self.file else {
            return Ok(self.header.lock().payload_in_memory.clone());
        };
        let slots = [
            read_slot(file, &self.path, 0)?,
            read_slot(file, &self.path, 1)?,
        ];
        Ok(
            header::pick_latest(slots, &self.path.display().to_string())?
                .map(|(_, payload)| payload),
        )
    }

    /// The payloads of both valid header slots, newest first (the older one's blob
    /// must stay until the next header replaces it).
    pub fn read_header_slots(&self) -> Result<Vec<Vec<u8>>> {
        let Some(file) = &self.file else {
            return Ok(self
                .header
                .lock()
                .payload_in_memory
                .clone()
                .into_iter()
                .collect());
        };
        let mut valid: Vec<(u64, Vec<u8>)> = Vec::new();
        for slot_idx in 0..2 {
            if let header::Slot::Valid {
                generation,
                payload,
            } = read_slot(file, &self.path, slot_idx)?
            {
                valid.push((generation, payload));
            }
        }
        valid.sort_by_key(|v| std::cmp::Reverse(v.0));
        Ok(valid.into_iter().map(|v| v.1).collect())
    }

    /// Writes a new header into the slot *not* holding the newest one and fsyncs it, so a
    /// torn write leaves the previous header intact. The slots are read again first:
    /// another process may have written one since this one opened.
    pub fn write_header(&self, payload: &[u8]) -> Result<()> {
        self.check_writable()?;
        let mut state = self.header.lock();
        let Some(file) = &self.file else {
            if payload.len() > header::PAYLOAD_BYTES_MAX {
                return Err(Error::internal("database header payload too large"));
            }
            state.payload_in_memory = Some(payload.to_vec());
            return Ok(());
        };
        state.latest = latest_slot(&[
            read_slot(file, &self.path, 0)?,
            read_slot(file, &self.path, 1)?,
        ]);
        let (slot_idx, generation) = match state.latest {
            Some((latest_slot, latest_generation)) => (1 - latest_slot, latest_generation + 1),
            None => (0, 1),
        };
        let page = header::encode_slot(generation, payload)?;
        file.write_all_at(&page, slot_idx as u64 * PAGE_BYTES)
            .and_then(|()| file.sync_data())
            .map_err(|e| io_error(&self.path, "write the header of", &e))?;
        state.latest = Some((slot_idx, generation));
        Ok(())
    }

    pub(crate) fn page_ptr(&self, page: u32) -> *mut u8 {
        assert!(
            page <= self.capacity_pages,
            "page {page} outside the region"
        );
        // SAFETY: `page * PAGE_SIZE` is at most the region length (asserted above), so the
        // result stays inside (or one past) the mapping.
        unsafe { self.region.base().add(page as usize * PAGE_SIZE) }
    }

    pub(crate) fn state(&self, page: u32) -> &PageState {
        assert!(page < self.capacity_pages, "page {page} outside the region");
        // SAFETY: `states` holds `capacity_pages` properly aligned (page-aligned base)
        // u64 slots, zero-initialised by the kernel, and zero is a valid AtomicU64; the
        // reference lives no longer than `self`, which owns the mapping.
        unsafe { &*self.states.base().cast::<PageState>().add(page as usize) }
    }

    pub(crate) fn unpin_page(&self, page: u32) {
        let before = self.state(page).fetch_sub(1, Ordering::Release);
        assert!(pins(before) > 0, "unpin of unpinned page {page}");
    }

    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::io(format!(
                "database file '{}' is opened read-only",
                self.path.display()
            )));
        }
        Ok(())
    }

    fn check_range(&self, first: PageIdx, count: u32, action: &str) -> Result<()> {
        let end = first.0 as u64 + count as u64;
        if first.0 < HEADER_PAGES || end > self.num_pages() as u64 {
            return Err(Error::internal(format!(
                "{action} of pages {}..{end} outside the data pages {HEADER_PAGES}..{}",
                first.0,
                self.num_pages()
            )));
        }
        Ok(())
    }

    fn out_of_memory(&self, more_pages: u64) -> Error {
        Error::new(
            ErrorKind::OutOfMemory,
            format!(
                "buffer pool out of memory: {more_pages} more pages needed, {} KiB held by \
                 pinned pages and running queries' intermediate results, which is all \
                 the memory limit of {} MiB allows (limit {} bytes, the buffer pool size)",
                self.resident_bytes() >> 10,
                self.memory_limit_bytes >> 20,
                self.memory_limit_bytes
            ),
        )
    }

    fn pin_page(&self, page: u32) {
        let state = self.state(page);
        let mut current = state.load(Ordering::Relaxed);
        loop {
            if current & LOCKED != 0 {
                wait_for_unlock();
                current = state.load(Ordering::Relaxed);
                continue;
            }
            assert!(pins(current) < PINS_MAX, "too many pins on page {page}");
            match state.compare_exchange_weak(
                current,
                (current + 1) | REFERENCED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// Loads every non-resident page of a pinned range. Pages another thread is loading
    /// are waited for; our own are locked, read in coalesced runs and published.
    fn make_resident(&self, first: u32, count: u32) -> Result<()> {
        loop {
            let mut runs: Vec<(u32, u32)> = Vec::new();
            let mut others_loading = false;
            for page in first..first + count {
                let state = self.state(page);
                let current = state.load(Ordering::Acquire);
                if current & RESIDENT != 0 {
                    continue;
                }
                if current & LOCKED != 0
                    || state
                        .compare_exchange(
                            current,
                            current | LOCKED,
                            Ordering::Acquire,
                            Ordering::Relaxed,
                        )
                        .is_err()
                {
                    others_loading = true;
                    continue;
                }
                match runs.last_mut() {
                    Some((run_first, run_count)) if *run_first + *run_count == page => {
                        *run_count += 1
                    }
                    _ => runs.push((page, 1)),
                }
            }
            if runs.is_empty() && !others_loading {
                return Ok(());
            }
            if runs.is_empty() {
                wait_for_unlock();
                continue;
            }
            self.load_runs(&runs)?;
        }
    }

    /// Reads runs we hold LOCKED and marks them RESIDENT; on error unlocks them all
    /// unloaded (and gives back their memory reservation).
    fn load_runs(&self, runs: &[(u32, u32)]) -> Result<()> {
        let total_pages: u64 = runs.iter().map(|&(_, count)| count as u64).sum();
        let result = self.reserve(total_pages).and_then(|()| {
            let filled = runs
                .iter()
                .try_for_each(|&(first, count)| self.fill(first, count));
            if filled.is_err() {
                self.resident_pages.fetch_sub(total_pages, Ordering::AcqRel);
            }
            filled
        });
        let flip = if result.is_ok() {
            LOCKED | RESIDENT
        } else {
            LOCKED
        };
        for &(first, count) in runs {
            for page in first..first + count {
                self.state(page).fetch_xor(flip, Ordering::Release);
            }
        }
        result
    }

    /// Reads `count` pages from the file into the region (zeros past the end of file).
    fn fill(&self, first: u32, count: u32) -> Result<()> {
        let Some(file) = &self.file else {
            // In memory, a non-resident page was never written or was discarded: it is
            // already all zeros.
            return Ok(());
        };
        let len_bytes = count as usize * PAGE_SIZE;
        // SAFETY: the pages are inside the region (check_range), we hold them LOCKED and not
        // RESIDENT, so no other thread reads or writes these bytes until we publish them.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.page_ptr(first), len_bytes) };
        let read_bytes = read_at_most(file, buf, first as u64 * PAGE_BYTES)
            .map_err(|e| io_error(&self.path, "read", &e))?;
        buf[read_bytes..].fill(0);
        let overlay = self.overlay.read();
        if !overlay.is_empty() {
            for (i, page_buf) in buf.chunks_exact_mut(PAGE_SIZE).enumerate() {
                if let Some(image) = overlay.get(&(first + i as u32)) {
                    page_buf.copy_from_slice(image);
                }
            }
        }
        Ok(())
    }

    fn copy_in(&self, first: PageIdx, count: u32, bytes: &[u8]) {
        // SAFETY: the pages are inside the region (check_range) and we hold all of them
        // LOCKED with no pins, so nobody else reads or writes these bytes.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(self.page_ptr(first.0), count as usize * PAGE_SIZE)
        };
        buf[..bytes.len()].copy_from_slice(bytes);
        buf[bytes.len()..].fill(0);
    }

    /// Accounts `more_pages` as resident, evicting unpinned pages to stay in the limit.
    fn reserve(&self, more_pages: u64) -> Result<()> {
        let after = self.resident_pages.fetch_add(more_pages, Ordering::AcqRel) + more_pages;
        if after <= self.limit_pages {
            return Ok(());
        }
        let over_pages = after - self.limit_pages;
        if self.file.is_some() && self.evict(over_pages) >= over_pages {
            return Ok(());
        }
        self.resident_pages.fetch_sub(more_pages, Ordering::AcqRel);
        Err(self.out_of_memory(more_pages))
    }

    /// Clock sweep with second chance; returns how many pages it evicted.
    fn evict(&self, need_pages: u64) -> u64 {
        let span = self.num_pages().saturating_sub(HEADER_PAGES);
        if span == 0 {
            return 0;
        }
        let mut evicted = 0;
        // Two sweeps: the first may only clear REFERENCED bits.
        for _ in 0..2 * span as u64 + 1 {
            if evicted >= need_pages {
                break;
            }
            let page = HEADER_PAGES + self.clock_hand.fetch_add(1, Ordering::Relaxed) % span;
            if self.try_evict(page, true) {
                evicted += 1;
            }
        }
        evicted
    }

    /// Drops one resident, unpinned, unlocked page; with `second_chance`, a referenced
    /// page only loses its REFERENCED bit.
    fn try_evict(&self, page: u32, second_chance: bool) -> bool {
        let state = self.state(page);
        let current = state.load(Ordering::Acquire);
        if current & LOCKED != 0 || current & RESIDENT == 0 || pins(current) != 0 {
            return false;
        }
        if second_chance && current & REFERENCED != 0 {
            let _ = state.compare_exchange(
                current,
                current & !REFERENCED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            return false;
        }
        if state
            .compare_exchange(current, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.region.discard(page as usize * PAGE_SIZE, PAGE_SIZE);
        state.store(0, Ordering::Release);
        self.resident_pages.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// Takes a page LOCKED for overwriting, keeping its cached copy (the writer replaces
    /// it) and its RESIDENT bit; returns whether it was resident. Fails if pinned: pinned
    /// pages are immutable.
    fn lock_exclusive(&self, page: u32) -> Result<bool> {
        let state = self.state(page);
        loop {
            let current = state.load(Ordering::Acquire);
            if current & LOCKED != 0 {
                wait_for_unlock();
                continue;
            }
            if pins(current) != 0 {
                return Err(Error::internal(format!(
                    "page {page} is written while pinned"
                )));
            }
            let resident = current & RESIDENT;
            if state
                .compare_exchange(
                    current,
                    LOCKED | resident,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return Ok(resident != 0);
            }
        }
    }
}

/// The slot holding the newest valid header, and its generation.
fn latest_slot(slots: &[header::Slot; 2]) -> Option<(u32, u64)> {
    let mut best: Option<(u32, u64)> = None;
    for (slot_idx, slot) in slots.iter().enumerate() {
        if let header::Slot::Valid { generation, .. } = slot {
            if best.is_none_or(|(_, g)| *generation > g) {
                best = Some((slot_idx as u32, *generation));
            }
        }
    }
    best
}

fn read_slot(file: &File, path: &Path, slot_idx: u64) -> Result<header::Slot> {
    let mut page = vec![0u8; PAGE_SIZE];
    let read_bytes = read_at_most(file, &mut page, slot_idx * PAGE_BYTES)
        .map_err(|e| io_error(path, "read", &e))?;
    Ok(header::decode_slot(&page[..read_bytes]))
}

fn write_padded(file: &File, first: PageIdx, bytes: &[u8]) -> std::io::Result<()> {
    let offset_bytes = first.0 as u64 * PAGE_BYTES;
    file.write_all_at(bytes, offset_bytes)?;
    let pad_bytes = bytes.len().next_multiple_of(PAGE_SIZE) - bytes.len();
    if pad_bytes > 0 {
        file.write_all_at(&vec![0u8; pad_bytes], offset_bytes + bytes.len() as u64)?;
    }
    Ok(())
}
