//! [`SharedFile`]: the state the processes that open one database share, in a small
//! file beside it (`g.kith.shm`), mapped `MAP_SHARED` by each of them.
//!
//! ```text
//!  page 0 of g.kith.shm (little endian, every field an atomic)
//!  0    magic "KITHSHM\0"      8   format u32, reader slots u32
//!  16   commit point index     24  commit point [2] x {seq, wal end, wal generation}
//!  72   flags (recovery pending)                 80  next writer ticket
//!  88   queue futex u32       96  opens so far      104  the open that held the writer lock last
//!  128  reader slots [128] x {oldest snapshot seq, pid}
//!  2176 waiter slots [64]  x {ticket, pid}
//!
//!  lock bytes (open-file-description locks, past the end of the file)
//!  LOCK_BASE + 0  INIT     held exclusively while a process opens
//!  LOCK_BASE + 1  USERS    held shared by every process that has the file open;
//!                          exclusively acquirable only by the one that is alone
//!  LOCK_BASE + 2  WRITER   held by the one writer
//!  LOCK_BASE + 64 + i      reader slot i, held by its owner
//!  LOCK_BASE + 256 + j     waiter slot j, held by the waiting process
//! ```
//!
//! Why these locks: an open-file-description lock belongs to one `open` of the file,
//! not to a process, so two opens in one process are two users, and the kernel drops it
//! when its owner dies, however it dies. A slot whose lock is free is a dead process's
//! slot, whatever its bytes say; nobody has to clean up after a killed process.
//!
//! The commit point (newest commit's sequence number, where its WAL record ends and the
//! WAL's generation, bumped when a checkpoint empties the WAL) is written by the writer
//! only, into the record the index does not point at, then published by bumping the
//! index; a reader that sees the index unchanged around its read has a consistent
//! triple, and a writer killed halfway leaves the old one in force.
//!
//! Boundaries: this module knows slots, tickets and locks, not versions or pages; the
//! storage layer decides what the numbers mean. An in-memory database uses
//! [`SharedFile::private`], the same state in anonymous memory with no locks.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kith_common::{Error, ErrorKind, Result};
use parking_lot::{Condvar, Mutex};

use crate::data_file::io_error;

const MAGIC: [u8; 8] = *b"KITHSHM\0";
/// Bumped whenever what processes share changes (the shared file, or how the WAL
/// is read), so processes of different builds refuse to mix.
const FORMAT: u32 = 2;
const MAP_BYTES: usize = 4096;
const READER_SLOTS: usize = 128;
const WAITER_SLOTS: usize = 64;
/// A reader slot that holds no snapshot.
pub const NO_SNAPSHOT: u64 = u64::MAX;
const FLAG_RECOVERY_PENDING: u64 = 1;

const OFF_FORMAT: usize = 8;
const OFF_POINT_INDEX: usize = 16;
const OFF_POINTS: usize = 24;
const OFF_FLAGS: usize = 72;
const OFF_NEXT_TICKET: usize = 80;
const OFF_QUEUE_FUTEX: usize = 88;
const OFF_OPEN_COUNTER: usize = 96;
const OFF_LAST_WRITER: usize = 104;
const OFF_READERS: usize = 128;
const OFF_WAITERS: usize = OFF_READERS + READER_SLOTS * 16;
const _: () = assert!(OFF_WAITERS + WAITER_SLOTS * 16 <= MAP_BYTES);
const _: () = assert!(OFF_POINTS + 2 * 24 <= OFF_FLAGS);

const LOCK_BASE: i64 = 1 << 20;
const LOCK_INIT: i64 = LOCK_BASE;
const LOCK_USERS: i64 = LOCK_BASE + 1;
const LOCK_WRITER: i64 = LOCK_BASE + 2;
const LOCK_READERS: i64 = LOCK_BASE + 64;
const LOCK_WAITERS: i64 = LOCK_BASE + 256;

/// How often a waiting writer looks again without being woken (a holder that died
/// wakes nobody).
const WAIT_POLL: Duration = Duration::from_millis(20);

/// Where the newest commit is: its sequence number, the end of its WAL record and the
/// WAL's generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitPoint {
    pub seq: u64,
    pub wal_end: u64,
    pub wal_gen: u64,
}

/// How an open found the shared file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// No other process has the database open: the file was (re)initialised and this
    /// opener must set the commit point (recovering the WAL if it may).
    Alone,
    /// Other processes have it open; the commit point is theirs.
    Joined,
}

/// What this process (this open) holds of the writer queue.
struct LocalQueue {
    /// Waiter slots this open has claimed (its own locks are invisible to `F_OFD_GETLK`).
    claimed: [bool; WAITER_SLOTS],
    /// Whether a connection of this open holds the writer lock.
    holding: bool,
}

impl Default for LocalQueue {
    fn default() -> LocalQueue {
        LocalQueue {
            claimed: [false; WAITER_SLOTS],
            holding: false,
        }
    }
}

pub struct SharedFile {
    /// `None` for the private (in-memory) state.
    file: Option<File>,
    path: PathBuf,
    base: NonNull<u8>,
    /// This open's number, unique among the opens of one shared file's life.
    open_id: u64,
    reader_slot: usize,
    local: Mutex<LocalQueue>,
    local_changed: Condvar,
}

// SAFETY: the mapping is shared memory accessed only through atomics (see `atomic_u64`),
// so any thread may use it; the file and the mutexes are Send + Sync themselves.
unsafe impl Send for SharedFile {}
// SAFETY: as above.
unsafe impl Sync for SharedFile {}

impl Drop for SharedFile {
    fn drop(&mut self) {
        // SAFETY: `base` is the start of a live mapping of MAP_BYTES made in `map`, and
        // nothing borrows into it past this point (every access goes through `&self`).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), MAP_BYTES);
        }
        // Closing the file releases every lock this open holds.
    }
}

impl SharedFile {
    /// The shared file of the database at `db_path` (`<db_path>.shm`), created if
    /// missing; returns it with a claimed reader slot and whether this open is alone.
    /// The caller that is [`Arrival::Alone`] holds the INIT lock until it calls
    /// [`SharedFile::finish_open`], so no other process opens meanwhile.
    ///
    /// On a read-only file system a read-only opener gets [`SharedFile::private`]
    /// state and is alone: nobody can write there, so there is nothing to share.
    pub fn open(db_path: &Path, read_only: bool) -> Result<(SharedFile, Arrival)> {
        let path = shm_path(db_path);
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path);
        if let Err(e) = &opened {
            if read_only && e.raw_os_error() == Some(libc::EROFS) {
                return Ok((SharedFile::private()?, Arrival::Alone));
            }
        }
        let file = opened
            .map_err(|e| {
                let hint = match e.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        " (every process that opens the database, read-only ones too, needs to write this file)"
                    }
                    std::io::ErrorKind::ReadOnlyFilesystem => {
                        " (the database is on a read-only file system: open it read-only)"
                    }
                    _ => "",
                };
                Error::io(format!(
                    "cannot open the shared file '{}': {e}{hint}",
                    path.display()
                ))
            })?;
        lock(&file, &path, LOCK_INIT, LockKind::Exclusive, true)?;
        let alone = lock(&file, &path, LOCK_USERS, LockKind::Exclusive, false)?;
        if alone {
            file.set_len(0)
                .and_then(|()| file.set_len(MAP_BYTES as u64))
                .map_err(|e| io_error(&path, "reset", &e))?;
        } else {
            let len = file
                .metadata()
                .map_err(|e| io_error(&path, "stat", &e))?
                .len();
            if len < MAP_BYTES as u64 {
                return Err(damaged(&path));
            }
        }
        let base = map(&file, &path)?;
        let mut shared = SharedFile {
            file: Some(file),
            path,
            base,
            open_id: 0,
            reader_slot: 0,
            local: Mutex::new(LocalQueue::default()),
            local_changed: Condvar::new(),
        };
        if alone {
            shared.write_header();
        } else if !shared.header_ok() {
            return Err(damaged(&shared.path));
        }
        shared.open_id = shared
            .atomic_u64(OFF_OPEN_COUNTER)
            .fetch_add(1, Ordering::SeqCst)
            + 1;
        shared.reader_slot = shared.claim_reader_slot()?;
        if !alone {
            shared.finish_open()?;
        }
        Ok((
            shared,
            if alone {
                Arrival::Alone
            } else {
                Arrival::Joined
            },
        ))
    }

    /// The same state in anonymous memory, for a database no other process can see.
    pub fn private() -> Result<SharedFile> {
        // SAFETY: an anonymous shared mapping with a null hint aliases nothing; the
        // result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MAP_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::io(format!(
                "cannot map the in-memory shared state: {}",
                std::io::Error::last_os_error()
            )));
        }
        let base = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| Error::internal("mmap null"))?;
        let shared = SharedFile {
            file: None,
            path: PathBuf::from(":memory:"),
            base,
            open_id: 1,
            reader_slot: 0,
            local: Mutex::new(LocalQueue::default()),
            local_changed: Condvar::new(),
        };
        shared.write_header();
        Ok(shared)
    }

    /// Ends an [`Arrival::Alone`] open: takes the USERS lock shared (so the next opener
    /// joins) and lets other openers in.
    pub fn finish_open(&self) -> Result<()> {
        if let Some(file) = &self.file {
            // Converting our exclusive lock (when alone) to shared is atomic.
            lock(file, &self.path, LOCK_USERS, LockKind::Shared, true)?;
            lock(file, &self.path, LOCK_INIT, LockKind::Unlock, false)?;
        }
        Ok(())
    }

    fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(offset.is_multiple_of(8) && offset + 8 <= MAP_BYTES);
        // SAFETY: the offset is 8-aligned inside the page-aligned mapping of MAP_BYTES
        // (asserted), the mapping lives as long as `self`, and every access to these
        // bytes, from any process, is atomic.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert!(offset.is_multiple_of(4) && offset + 4 <= MAP_BYTES);
        // SAFETY: as in `atomic_u64`, for a 4-aligned u32.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    fn write_header(&self) {
        self.atomic_u64(0)
            .store(u64::from_le_bytes(MAGIC), Ordering::Relaxed);
        let format = u64::from(FORMAT) | ((READER_SLOTS as u64) << 32);
        self.atomic_u64(OFF_FORMAT).store(format, Ordering::Relaxed);
        for slot in 0..READER_SLOTS {
            self.reader_seq(slot).store(NO_SNAPSHOT, Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
    }

    fn header_ok(&self) -> bool {
        let format = u64::from(FORMAT) | ((READER_SLOTS as u64) << 32);
        self.atomic_u64(0).load(Ordering::Acquire) == u64::from_le_bytes(MAGIC)
            && self.atomic_u64(OFF_FORMAT).load(Ordering::Acquire) == format
            && self.atomic_u64(OFF_POINT_INDEX).load(Ordering::Acquire) < u64::MAX / 2
    }

    // ---- the commit point --------------------------------------------------------

    /// The newest commit's point, consistent across its three fields.
    pub fn commit_point(&self) -> CommitPoint {
        loop {
            let index = self.atomic_u64(OFF_POINT_INDEX).load(Ordering::SeqCst);
            let at = OFF_POINTS + (index as usize & 1) * 24;
            let point = CommitPoint {
                seq: self.atomic_u64(at).load(Ordering::Relaxed),
                wal_end: self.atomic_u64(at + 8).load(Ordering::Relaxed),
                wal_gen: self.atomic_u64(at + 16).load(Ordering::Relaxed),
            };
            fence(Ordering::SeqCst);
            if self.atomic_u64(OFF_POINT_INDEX).load(Ordering::SeqCst) == index {
                return point;
            }
        }
    }

    /// Publishes a new commit point (the writer, or the opener that is alone, only).
    pub fn publish(&self, point: CommitPoint) {
        let index = self.atomic_u64(OFF_POINT_INDEX).load(Ordering::SeqCst);
        let at = OFF_POINTS + ((index + 1) as usize & 1) * 24;
        self.atomic_u64(at).store(point.seq, Ordering::Relaxed);
        self.atomic_u64(at + 8)
            .store(point.wal_end, Ordering::Relaxed);
        self.atomic_u64(at + 16)
            .store(point.wal_gen, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.atomic_u64(OFF_POINT_INDEX)
            .store(index + 1, Ordering::SeqCst);
    }

    /// Whether a read-only process read this database through a WAL whose pages the
    /// data file may lack (after a power loss), so that the next writer must recover.
    pub fn recovery_pending(&self) -> bool {
        self.atomic_u64(OFF_FLAGS).load(Ordering::SeqCst) & FLAG_RECOVERY_PENDING != 0
    }

    pub fn set_recovery_pending(&self, pending: bool) {
        if pending {
            self.atomic_u64(OFF_FLAGS)
                .fetch_or(FLAG_RECOVERY_PENDING, Ordering::SeqCst);
        } else {
            self.atomic_u64(OFF_FLAGS)
                .fetch_and(!FLAG_RECOVERY_PENDING, Ordering::SeqCst);
        }
    }

    // ---- reader slots ----------------------------------------------------------------

    fn reader_seq(&self, slot: usize) -> &AtomicU64 {
        self.atomic_u64(OFF_READERS + slot * 16)
    }

    fn claim_reader_slot(&self) -> Result<usize> {
        let Some(file) = &self.file else {
            return Ok(0);
        };
        for slot in 0..READER_SLOTS {
            if lock(
                file,
                &self.path,
                LOCK_READERS + slot as i64,
                LockKind::Exclusive,
                false,
            )? {
                // A free lock means the slot's bytes are a dead process's, or zero.
                self.reader_seq(slot).store(NO_SNAPSHOT, Ordering::SeqCst);
                self.atomic_u64(OFF_READERS + slot * 16 + 8)
                    .store(u64::from(std::process::id()), Ordering::Relaxed);
                return Ok(slot);
            }
        }
        Err(Error::io(format!(
            "more than {READER_SLOTS} opens of the database at once (shared file '{}')",
            self.path.display()
        )))
    }

    /// Sets the oldest snapshot this open's readers hold ([`NO_SNAPSHOT`]: none).
    pub fn set_oldest_snapshot(&self, seq: u64) {
        self.reader_seq(self.reader_slot)
            .store(seq, Ordering::SeqCst);
    }

    /// The oldest snapshot any live open (this one included) holds; [`NO_SNAPSHOT`] if
    /// none. Slots of dead processes are skipped.
    pub fn oldest_snapshot(&self) -> Result<u64> {
        let mut oldest = self.reader_seq(self.reader_slot).load(Ordering::SeqCst);
        let Some(file) = &self.file else {
            return Ok(oldest);
        };
        for slot in 0..READER_SLOTS {
            if slot == self.reader_slot {
                continue;
            }
            let seq = self.reader_seq(slot).load(Ordering::SeqCst);
            if seq < oldest && is_locked(file, &self.path, LOCK_READERS + slot as i64)? {
                oldest = seq;
            }
        }
        Ok(oldest)
    }

    // ---- the writer queue ------------------------------------------------------------

    fn waiter_ticket(&self, slot: usize) -> &AtomicU64 {
        self.atomic_u64(OFF_WAITERS + slot * 16)
    }

    fn queue_futex(&self) -> &AtomicU32 {
        self.atomic_u32(OFF_QUEUE_FUTEX)
    }

    /// Takes the writer lock, queueing behind earlier callers of any process in arrival
    /// order; a transaction error when it is still held by others after `wait`.
    pub fn acquire_writer(&self, wait: Duration) -> Result<()> {
        let deadline = Instant::now() + wait;
        let (slot, ticket) = self.enqueue(deadline, wait)?;
        let result = self.wait_for_turn(slot, ticket, deadline, wait);
        self.dequeue(slot);
        result
    }

    /// Claims a waiter slot and draws the next ticket.
    fn enqueue(&self, deadline: Instant, wait: Duration) -> Result<(usize, u64)> {
        loop {
            let mut local = self.local.lock();
            for slot in 0..WAITER_SLOTS {
                if local.claimed[slot] {
                    continue;
                }
                let free = match &self.file {
                    Some(file) => lock(
                        file,
                        &self.path,
                        LOCK_WAITERS + slot as i64,
                        LockKind::Exclusive,
                        false,
                    )?,
                    None => true,
                };
                if free {
                    local.claimed[slot] = true;
                    let ticket = self
                        .atomic_u64(OFF_NEXT_TICKET)
                        .fetch_add(1, Ordering::SeqCst)
                        + 1;
                    self.waiter_ticket(slot).store(ticket, Ordering::SeqCst);
                    return Ok((slot, ticket));
                }
            }
            if Instant::now() >= deadline {
                return Err(busy(wait));
            }
            // Every waiter slot is taken: wait for one to free.
            self.local_changed
                .wait_for(&mut local, Duration::from_millis(5));
        }
    }

    /// Waits until no live waiter holds an earlier ticket and the writer lock is free,
    /// then takes it.
    fn wait_for_turn(
        &self,
        slot: usize,
        ticket: u64,
        deadline: Instant,
        wait: Duration,
    ) -> Result<()> {
        loop {
            let seen = self.queue_futex().load(Ordering::SeqCst);
            if !self.earlier_waiter(slot, ticket)? && self.try_take_writer()? {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(busy(wait));
            }
            self.sleep_on_queue(seen, (deadline - now).min(WAIT_POLL));
        }
    }

    /// Whether a live waiter holds a ticket before `ticket`.
    fn earlier_waiter(&self, own: usize, ticket: u64) -> Result<bool> {
        let claimed = self.local.lock().claimed;
        for (slot, &ours) in claimed.iter().enumerate() {
            if slot == own {
                continue;
            }
            let t = self.waiter_ticket(slot).load(Ordering::SeqCst);
            if t == 0 || t >= ticket {
                continue;
            }
            let live = ours
                || match &self.file {
                    Some(file) => is_locked(file, &self.path, LOCK_WAITERS + slot as i64)?,
                    None => false,
                };
            if live {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn try_take_writer(&self) -> Result<bool> {
        let mut local = self.local.lock();
        if local.holding {
            return Ok(false);
        }
        let taken = match &self.file {
            Some(file) => lock(file, &self.path, LOCK_WRITER, LockKind::Exclusive, false)?,
            None => true,
        };
        local.holding = taken;
        Ok(taken)
    }

    fn dequeue(&self, slot: usize) {
        self.waiter_ticket(slot).store(0, Ordering::SeqCst);
        let mut local = self.local.lock();
        if let Some(file) = &self.file {
            // Unlocking cannot fail on a valid descriptor and range; if it did, the slot
            // would only stay claimed until the file closes.
            let _ = lock(
                file,
                &self.path,
                LOCK_WAITERS + slot as i64,
                LockKind::Unlock,
                false,
            );
        }
        local.claimed[slot] = false;
        self.local_changed.notify_all();
        drop(local);
        self.wake_queue();
    }

    /// For the holder of the writer lock: records this open as the last writer and says
    /// whether another open held the lock since this one last did (its allocator state
    /// is then stale: that writer may have allocated or freed pages).
    pub fn writer_changed(&self) -> bool {
        self.atomic_u64(OFF_LAST_WRITER)
            .swap(self.open_id, Ordering::SeqCst)
            != self.open_id
    }

    /// Gives the writer lock back and wakes the waiters.
    pub fn release_writer(&self) {
        let mut local = self.local.lock();
        if let Some(file) = &self.file {
            let _ = lock(file, &self.path, LOCK_WRITER, LockKind::Unlock, false);
        }
        local.holding = false;
        drop(local);
        self.wake_queue();
    }

    fn wake_queue(&self) {
        self.queue_futex().fetch_add(1, Ordering::SeqCst);
        futex_wake(self.queue_futex());
    }

    fn sleep_on_queue(&self, seen: u32, timeout: Duration) {
        futex_wait(self.queue_futex(), seen, timeout);
    }
}

/// `g.kith` -> `g.kith.shm`.
fn shm_path(db_path: &Path) -> PathBuf {
    let mut p = db_path.as_os_str().to_owned();
    p.push(".shm");
    PathBuf::from(p)
}

fn damaged(path: &Path) -> Error {
    Error::corruption(format!(
        "the shared file '{}' is damaged or was written by another build; it is rebuilt \
         when no process has the database open: close them all and open again",
        path.display()
    ))
}

fn busy(wait: Duration) -> Error {
    Error::new(
        ErrorKind::Transaction,
        format!(
            "another write transaction is still running after waiting {} (the writer wait \
             limit; the holder may be another process); retry later",
            wait_text(wait)
        ),
    )
}

/// "5 s", "250 ms": how long a writer waited, for error messages.
fn wait_text(wait: Duration) -> String {
    if wait.subsec_millis() == 0 {
        format!("{} s", wait.as_secs())
    } else {
        format!("{} ms", wait.as_millis())
    }
}

fn map(file: &File, path: &Path) -> Result<NonNull<u8>> {
    // SAFETY: a shared mapping of the first MAP_BYTES of a file at least that long
    // (checked or set by the caller); the result is checked against MAP_FAILED.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            MAP_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io_error(path, "map", &std::io::Error::last_os_error()));
    }
    NonNull::new(ptr.cast::<u8>()).ok_or_else(|| Error::internal("mmap returned null"))
}

#[derive(Clone, Copy)]
enum LockKind {
    Shared,
    Exclusive,
    Unlock,
}

fn lock_struct(kind: libc::c_short, at: i64) -> libc::flock {
    // SAFETY: `flock` is a plain C struct for which all-zero is a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = at as libc::off_t;
    fl.l_len = 1;
    fl
}

/// An open-file-description lock on byte `at`; with `block`, waits for it. Returns
/// whether it was taken (always true when blocking or unlocking).
fn lock(file: &File, path: &Path, at: i64, kind: LockKind, block: bool) -> Result<bool> {
    let ty = match kind {
        LockKind::Shared => libc::F_RDLCK,
        LockKind::Exclusive => libc::F_WRLCK,
        LockKind::Unlock => libc::F_UNLCK,
    } as libc::c_short;
    let fl = lock_struct(ty, at);
    let cmd = if block {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    loop {
        // SAFETY: a valid descriptor owned by `file` and a fully initialised flock
        // struct that lives across the call.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), cmd, &fl) };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) | Some(libc::EACCES) if !block => return Ok(false),
            _ => return Err(io_error(path, "lock", &err)),
        }
    }
}

/// Whether another open holds a lock on byte `at` (our own locks do not count).
fn is_locked(file: &File, path: &Path, at: i64) -> Result<bool> {
    let mut fl = lock_struct(libc::F_WRLCK as libc::c_short, at);
    // SAFETY: as in `lock`; F_OFD_GETLK writes the conflicting lock, if any, into `fl`.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
    if rc != 0 {
        return Err(io_error(
            path,
            "test a lock of",
            &std::io::Error::last_os_error(),
        ));
    }
    Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
}

fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT reads the aligned u32 at `word` (alive for the call) and sleeps
    // at most `ts` while it still equals `seen`; a shared (not private) futex because
    // other processes wake it through their own mappings.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            &ts as *const libc::timespec,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two opens of one database's shared file, as two processes would have.
    fn two_opens(dir: &tempfile::TempDir) -> (SharedFile, SharedFile) {
        let db = dir.path().join("g.kith");
        let (a, _) = SharedFile::open(&db, false).unwrap();
        a.finish_open().unwrap();
        let (b, _) = SharedFile::open(&db, false).unwrap();
        (a, b)
    }

    #[test]
    fn commit_point_round_trips_and_second_open_joins() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("g.kith");
        let (a, arrival) = SharedFile::open(&db, false).unwrap();
        assert_eq!(arrival, Arrival::Alone);
        let p = CommitPoint {
            seq: 7,
            wal_end: 100,
            wal_gen: 2,
        };
        a.publish(p);
        a.finish_open().unwrap();
        let (b, arrival) = SharedFile::open(&db, false).unwrap();
        assert_eq!(arrival, Arrival::Joined);
        assert_eq!(b.commit_point(), p);
        assert_ne!(a.reader_slot, b.reader_slot);
        drop(a);
        drop(b);
        // Everyone gone: the next open starts afresh.
        let (c, arrival) = SharedFile::open(&db, false).unwrap();
        assert_eq!(arrival, Arrival::Alone);
        assert_eq!(c.commit_point(), CommitPoint::default());
    }

    #[test]
    fn oldest_snapshot_sees_other_opens_and_forgets_closed_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = two_opens(&dir);
        assert_eq!(a.oldest_snapshot().unwrap(), NO_SNAPSHOT);
        b.set_oldest_snapshot(5);
        a.set_oldest_snapshot(9);
        assert_eq!(a.oldest_snapshot().unwrap(), 5);
        // A closed (or killed) open's slot no longer counts, whatever it says.
        drop(b);
        assert_eq!(a.oldest_snapshot().unwrap(), 9);
    }

    #[test]
    fn writer_lock_is_exclusive_across_opens_and_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = two_opens(&dir);
        a.acquire_writer(Duration::from_secs(1)).unwrap();
        let err = b.acquire_writer(Duration::from_millis(50)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Transaction);
        // Within one open too.
        assert!(a.acquire_writer(Duration::from_millis(50)).is_err());
        a.release_writer();
        b.acquire_writer(Duration::from_millis(200)).unwrap();
        b.release_writer();
    }

    #[test]
    fn a_closed_holder_frees_the_writer_lock() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = two_opens(&dir);
        a.acquire_writer(Duration::from_secs(1)).unwrap();
        // Closing the file (as a killed process's does) drops its locks.
        drop(a);
        b.acquire_writer(Duration::from_millis(500)).unwrap();
    }

    #[test]
    fn waiters_are_served_in_arrival_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = two_opens(&dir);
        let b = std::sync::Arc::new(b);
        a.acquire_writer(Duration::from_secs(1)).unwrap();
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for i in 0..4 {
            let (b, order) = (b.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                b.acquire_writer(Duration::from_secs(10)).unwrap();
                order.lock().push(i);
                std::thread::sleep(Duration::from_millis(5));
                b.release_writer();
            }));
            // Let thread i draw its ticket before thread i + 1.
            std::thread::sleep(Duration::from_millis(30));
        }
        a.release_writer();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn damaged_file_is_refused_while_in_use_and_rebuilt_when_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("g.kith");
        let (a, _) = SharedFile::open(&db, false).unwrap();
        a.finish_open().unwrap();
        a.atomic_u64(0).store(0xdead, Ordering::SeqCst);
        let err = SharedFile::open(&db, false).err().unwrap();
        assert!(err.message.contains("damaged"), "{}", err.message);
        drop(a);
        let (c, arrival) = SharedFile::open(&db, false).unwrap();
        assert_eq!(arrival, Arrival::Alone);
        assert!(c.header_ok());
    }
}
