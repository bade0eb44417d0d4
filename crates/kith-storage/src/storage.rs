//! The storage manager of one database: versions, the single writer, commit,
//! checkpoint and recovery.
//!
//! ```text
//!  write txn ──writes new chunks to fresh pages of the data file (not synced)──┐
//!     │                                                                       ▼
//!  commit:  WAL: [COMMIT_PAGES | metadata | image of every new page], one fdatasync
//!           ──►  publish Version
//!           (a commit whose new pages exceed `wal_page_log_max_bytes`:
//!            pager.sync(), then WAL: [COMMIT | metadata], fdatasync)
//!                                                                           │
//!  checkpoint (WAL large, or close):  blob → fresh pages, pager.sync(),    │
//!                                     header slot ◄─────────────────────────┘, WAL reset
//!  recovery (open):  header → version (sequence number h); of the WAL records with a
//!                    sequence number above h (older ones are in the checkpoint), the
//!                    last gives the version; the page images of the records after the
//!                    last synced COMMIT are written back in log order; a torn tail is
//!                    dropped; free list = every page no version references
//! ```
//!
//! So a committed transaction costs one fdatasync (of the WAL); the data file is
//! synced at checkpoint. Durability: a version is published (and COMMIT returns)
//! only after its WAL record is synced, and every page it references was either
//! synced by a checkpoint or a synced COMMIT, or travels as an image in a synced
//! COMMIT_PAGES record at or after the last of those, which recovery writes back in
//! order. Committed pages are never overwritten, and a page is only reused after the
//! commit that dropped it is durable, so the latest image of a referenced page is its
//! content. Replaying only records newer than the header keeps an interrupted
//! checkpoint's stale records from overwriting pages the checkpoint reused; starting
//! images after the last synced COMMIT keeps older images from overwriting pages such
//! a commit reused. Readers never see a half-done commit. Pages a commit stops using
//! are recycled once no reader holds a version that still references them.
//!
//! A [`WriteTxn`] owns an `Arc` of its storage and the writer slot (not a
//! borrowed lock guard), so a connection can keep one open across statements
//! (`BEGIN TRANSACTION` … `COMMIT`) and move it between threads.
//! [`WriteTxn::read_version`] gives the transaction's own statements a
//! readable version of its uncommitted state. Checkpoints take the writer slot
//! too: one running concurrently with a commit could reset the WAL right after
//! that commit's record was appended, losing an acknowledged commit.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use kith_catalog::Catalog;
use kith_common::codec::{Decoder, Encoder};
use kith_common::constants::PAGE_SIZE;
use kith_common::{Error, ErrorKind, Result, TableId};
use kith_pager::{PageIdx, Pager, PagerConfig, Wal};

use crate::column::PageRun;
use crate::version::{TableData, Version};

/// WAL size above which a commit triggers a checkpoint.
pub const CHECKPOINT_WAL_BYTES: u64 = 16 << 20;
/// How long a second writer waits for the first before giving up (default of
/// [`StorageConfig::writer_wait`]).
pub const WRITER_WAIT: Duration = Duration::from_secs(5);
/// Default of [`StorageConfig::wal_page_log_max_bytes`].
pub const WAL_PAGE_LOG_MAX_BYTES: u64 = 1 << 20;

/// WAL record of a commit whose new pages were synced to the data file before
/// the record was written: `[1][metadata]`.
const WAL_COMMIT: u8 = 1;
/// WAL record of a commit that carries its new pages:
/// `[2][bytes: metadata][u64: runs]` then per run `[u32: first][u32: count][bytes: image]`.
const WAL_COMMIT_PAGES: u8 = 2;
const HEADER_FORMAT: u32 = 1;

#[derive(Debug, Clone)]
pub struct StorageConfig {
    pub memory_limit_bytes: u64,
    pub read_only: bool,
    /// How long `begin_write` and `checkpoint` wait for a running write
    /// transaction before failing with a transaction error.
    pub writer_wait: Duration,
    /// A commit whose new pages take at most this many bytes logs them in its
    /// WAL record (one fdatasync per commit); a larger one syncs the data file
    /// first and logs only the metadata (two fdatasyncs, but its pages are
    /// written once). 0 logs no pages.
    pub wal_page_log_max_bytes: u64,
}

impl Default for StorageConfig {
    fn default() -> StorageConfig {
        StorageConfig {
            memory_limit_bytes: PagerConfig::default_memory_limit(),
            read_only: false,
            writer_wait: WRITER_WAIT,
            wal_page_log_max_bytes: WAL_PAGE_LOG_MAX_BYTES,
        }
    }
}

/// One parsed WAL commit record.
struct CommitRecord<'a> {
    seq: u64,
    metadata: &'a [u8],
    /// Its new pages were synced to the data file before it was logged.
    synced: bool,
    /// `(first page, image of the run)` for a COMMIT_PAGES record.
    images: Vec<(u32, &'a [u8])>,
}

impl<'a> CommitRecord<'a> {
    fn parse(rec: &'a [u8]) -> Result<CommitRecord<'a>> {
        let (kind, body) = rec
            .split_first()
            .ok_or_else(|| Error::corruption("empty WAL record"))?;
        let (metadata, synced, images) = match *kind {
            WAL_COMMIT => (body, true, Vec::new()),
            WAL_COMMIT_PAGES => {
                let mut d = Decoder::new(body);
                let metadata = d.bytes()?;
                let runs = d.count(16)?;
                let mut images = Vec::with_capacity(runs);
                for _ in 0..runs {
                    let first = d.u32()?;
                    let count = d.u32()?;
                    let image = d.bytes()?;
                    if image.len() as u64 != count as u64 * PAGE_SIZE as u64 || count == 0 {
                        return Err(Error::corruption(format!(
                            "WAL page image of {} bytes for {count} pages",
                            image.len()
                        )));
                    }
                    images.push((first, image));
                }
                if !d.is_done() {
                    return Err(Error::corruption("trailing bytes after a WAL record"));
                }
                (metadata, false, images)
            }
            k => {
                return Err(Error::corruption(format!(
                    "unknown WAL record kind {k} (written by a newer build?)"
                )))
            }
        };
        // The metadata starts with its format (u32) and the version's sequence number.
        let mut d = Decoder::new(metadata);
        d.u32()?;
        let seq = d.u64()?;
        Ok(CommitRecord {
            seq,
            metadata,
            synced,
            images,
        })
    }
}

struct PendingFree {
    /// The newest version that still referenced `pages`.
    last_user: Weak<Version>,
    pages: Vec<PageRun>,
}

/// The single writer's slot: a flag plus a condition variable instead of a
/// mutex guard, so the holder can keep it across calls and threads.
#[derive(Default)]
struct WriterSlot {
    busy: Mutex<bool>,
    freed: Condvar,
}

impl WriterSlot {
    /// Takes the slot, waiting up to `wait`; false when still busy then.
    fn acquire(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        let mut busy = self.busy.lock();
        while *busy {
            if self.freed.wait_until(&mut busy, deadline).timed_out() && *busy {
                return false;
            }
        }
        *busy = true;
        true
    }

    fn release(&self) {
        *self.busy.lock() = false;
        self.freed.notify_one();
    }
}

pub struct Storage {
    /// This storage's own `Arc` (weak, so it is no cycle): write transactions
    /// hold a strong one.
    me: Weak<Storage>,
    path: Option<PathBuf>,
    pager: Arc<Pager>,
    wal: Option<Wal>,
    read_only: bool,
    current: RwLock<Arc<Version>>,
    writer: WriterSlot,
    writer_wait: Duration,
    wal_page_log_max_bytes: u64,
    pending: Mutex<Vec<PendingFree>>,
    /// Metadata blob pages of the newest and the previous header slot; freed two
    /// checkpoints later, when no header slot can point at them.
    header_blobs: Mutex<(Option<PageRun>, Option<PageRun>)>,
}

fn wal_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".wal");
    PathBuf::from(p)
}

/// "5 s", "250 ms": how long a writer waited, for error messages.
fn wait_text(wait: Duration) -> String {
    if wait.subsec_millis() == 0 {
        format!("{} s", wait.as_secs())
    } else {
        format!("{} ms", wait.as_millis())
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

impl Storage {
    /// Opens the database at `path` (None: in memory), recovering from the WAL.
    pub fn open(path: Option<&Path>, cfg: StorageConfig) -> Result<Arc<Storage>> {
        let pager_cfg = PagerConfig {
            memory_limit_bytes: cfg.memory_limit_bytes,
            read_only: cfg.read_only,
            ..PagerConfig::default()
        };
        let Some(path) = path else {
            return Ok(Arc::new_cyclic(|me| Storage {
                me: me.clone(),
                path: None,
                pager: Arc::new(Pager::in_memory(pager_cfg)),
                wal: None,
                read_only: cfg.read_only,
                current: RwLock::new(Arc::new(Version::default())),
                writer: WriterSlot::default(),
                writer_wait: cfg.writer_wait,
                wal_page_log_max_bytes: cfg.wal_page_log_max_bytes,
                pending: Mutex::new(Vec::new()),
                header_blobs: Mutex::new((None, None)),
            }));
        };
        let wal = Wal::open(&wal_path(path))?;
        if !path.exists() && !wal.read_records()?.is_empty() {
            // Commits before the last synced one live only in the missing
            // file: replaying the rest would build a damaged database.
            return Err(Error::corruption(format!(
                "found the write-ahead log {} but not its database file {}: the log belongs to a database that is gone; restore the file, or delete the log to start empty",
                wal_path(path).display(),
                path.display()
            )));
        }
        let pager = Arc::new(Pager::open(path, pager_cfg)?);
        let mut header_blob = None;
        let mut version = match pager.read_header()? {
            None => Version::default(),
            Some(payload) => {
                let mut d = Decoder::new(&payload);
                let format = d.u32()?;
                if format != HEADER_FORMAT {
                    return Err(Error::corruption(format!(
                        "unsupported header format {format}"
                    )));
                }
                let run = PageRun {
                    first: d.u32()?,
                    count: d.u32()?,
                };
                let len = d.u64()? as usize;
                let sum = d.u64()?;
                let pin = run
                    .pin(&pager)?
                    .ok_or_else(|| Error::corruption("database header points at no metadata"))?;
                let blob = pin
                    .get(..len)
                    .ok_or_else(|| Error::corruption("metadata length beyond its pages"))?;
                if checksum(blob) != sum {
                    return Err(Error::corruption("metadata checksum mismatch"));
                }
                header_blob = Some(run);
                Version::decode(blob)?
            }
        };
        let records = wal.read_records()?;
        let replayed = !records.is_empty();
        let mut commits = Vec::with_capacity(records.len());
        for rec in &records {
            commits.push(CommitRecord::parse(rec)?);
        }
        // Records up to the header's version are already in the checkpoint (a crash
        // between writing the header and resetting the WAL leaves them behind).
        let header_seq = version.seq;
        commits.retain(|c| c.seq > header_seq);
        if let Some(last) = commits.last() {
            version = Version::decode(last.metadata)?;
        }
        // Images logged before a synced commit are on disk already, and writing them
        // again could overwrite pages that commit reused.
        let replay_from = commits.iter().rposition(|c| c.synced).map_or(0, |i| i + 1);
        let images = commits[replay_from..].iter().flat_map(|c| c.images.iter());
        if cfg.read_only {
            let mut overlay = std::collections::HashMap::new();
            for &(first, image) in images {
                for (i, page) in image.chunks_exact(PAGE_SIZE).enumerate() {
                    let idx = first
                        .checked_add(i as u32)
                        .ok_or_else(|| Error::corruption("WAL page index overflow"))?;
                    overlay.insert(idx, Box::<[u8]>::from(page));
                }
            }
            if !overlay.is_empty() {
                pager.install_overlay(overlay)?;
            }
        } else {
            for &(first, image) in images {
                pager.write_recovered(PageIdx(first), image)?;
            }
        }
        drop(commits);
        drop(records);
        let storage = Arc::new_cyclic(|me| Storage {
            me: me.clone(),
            path: Some(path.to_path_buf()),
            pager,
            wal: Some(wal),
            read_only: cfg.read_only,
            current: RwLock::new(Arc::new(version)),
            writer: WriterSlot::default(),
            writer_wait: cfg.writer_wait,
            wal_page_log_max_bytes: cfg.wal_page_log_max_bytes,
            pending: Mutex::new(Vec::new()),
            header_blobs: Mutex::new((header_blob, None)),
        });
        storage.rebuild_free_list();
        if replayed && !cfg.read_only {
            storage.checkpoint()?;
        }
        Ok(storage)
    }

    /// Every page not referenced by the current version or a header blob is free.
    fn rebuild_free_list(&self) {
        let version = self.snapshot();
        let mut used = version.pages();
        let blobs = *self.header_blobs.lock();
        used.extend(blobs.0);
        used.extend(blobs.1);
        used.sort_by_key(|r| r.first);
        let mut free = Vec::new();
        let mut next = 2u32; // pages 0 and 1 hold the header slots
        for run in used {
            if run.first > next {
                free.push((PageIdx(next), run.first - next));
            }
            next = next.max(run.first + run.count);
        }
        let end = self.pager.num_pages();
        if end > next {
            free.push((PageIdx(next), end - next));
        }
        self.pager.set_free_list(free);
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn pager(&self) -> &Arc<Pager> {
        &self.pager
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The newest committed version (a consistent snapshot).
    pub fn snapshot(&self) -> Arc<Version> {
        Arc::clone(&self.current.read())
    }

    /// Starts the (single) write transaction, waiting up to
    /// [`StorageConfig::writer_wait`] for a running one to finish. The transaction owns what it needs (`'static`),
    /// so it may outlive this borrow.
    pub fn begin_write(&self) -> Result<WriteTxn<'static>> {
        if self.read_only {
            return Err(Error::new(
                ErrorKind::Transaction,
                "the database is open read-only; writes are not allowed",
            ));
        }
        let storage = self
            .me
            .upgrade()
            .ok_or_else(|| Error::internal("storage used while being dropped"))?;
        if !self.writer.acquire(self.writer_wait) {
            return Err(Error::new(
                ErrorKind::Transaction,
                format!(
                    "another write transaction is still running after waiting {}",
                    wait_text(self.writer_wait)
                ),
            ));
        }
        Ok(self.txn_in_slot(storage))
    }

    /// A write transaction for a caller that has just taken the writer
    /// slot; the transaction gives it back when it ends.
    fn txn_in_slot(&self, storage: Arc<Storage>) -> WriteTxn<'static> {
        let base = self.snapshot();
        WriteTxn {
            storage,
            _life: PhantomData,
            catalog: (*base.catalog).clone(),
            tables: base.tables.clone(),
            base,
            local: crate::write::TxnLocal::default(),
        }
    }

    fn commit(
        &self,
        txn_catalog: Catalog,
        tables: std::collections::BTreeMap<TableId, Arc<TableData>>,
        base: &Arc<Version>,
    ) -> Result<()> {
        let version = Version {
            seq: base.seq + 1,
            catalog: Arc::new(txn_catalog),
            tables,
        };
        let mut new_pages = version.pages();
        new_pages.sort_by_key(|r| r.first);
        let mut base_pages = base.pages();
        base_pages.sort_by_key(|r| r.first);
        let not_in = |runs: &[PageRun], r: &PageRun| {
            r.count > 0 && runs.binary_search_by_key(&r.first, |n| n.first).is_err()
        };
        if let Some(wal) = &self.wal {
            // Pages the new version references and the old one does not: exactly
            // those this transaction wrote (pages are copy-on-write, and the base's
            // pages stay allocated until after this commit).
            let added: Vec<PageRun> = new_pages
                .iter()
                .filter(|r| not_in(&base_pages, r))
                .copied()
                .collect();
            let rec = self.commit_record(&version, &added)?;
            wal.append(&rec)?;
            // The commit point: only now may the version be published, COMMIT
            // return, or a page the old version used be reused.
            wal.sync()?;
        }
        // Pages the old version used that the new one does not.
        let freed: Vec<PageRun> = base_pages
            .iter()
            .filter(|r| not_in(&new_pages, r))
            .copied()
            .collect();
        let old = {
            let mut cur = self.current.write();
            std::mem::replace(&mut *cur, Arc::new(version))
        };
        // An entry even when nothing is freed: reclaiming stops at the first
        // entry whose version is still read, so every version must have one,
        // or a reader of it would not hold back the frees of later commits
        // (which may drop pages it shares with the versions after it).
        self.pending.lock().push(PendingFree {
            last_user: Arc::downgrade(&old),
            pages: freed,
        });
        drop(old);
        self.reclaim();
        Ok(())
    }

    /// The WAL record of a commit of `version`, whose new page runs are `added`.
    /// Small commits carry the images of their pages, so the one sync of the WAL
    /// makes everything durable; large ones sync the data file first (a durable
    /// record never points at pages that did not reach the disk).
    fn commit_record(&self, version: &Version, added: &[PageRun]) -> Result<Vec<u8>> {
        let metadata = version.encode();
        let added_bytes: u64 = added
            .iter()
            .map(|r| r.count as u64 * PAGE_SIZE as u64)
            .sum();
        if added_bytes > self.wal_page_log_max_bytes {
            self.pager.sync()?;
            let mut rec = Vec::with_capacity(1 + metadata.len());
            rec.push(WAL_COMMIT);
            rec.extend_from_slice(&metadata);
            return Ok(rec);
        }
        let mut e = Encoder::new();
        e.buf
            .reserve(metadata.len() + added_bytes as usize + 24 * added.len() + 32);
        e.u8(WAL_COMMIT_PAGES);
        e.bytes(&metadata);
        e.u64(added.len() as u64);
        for run in added {
            let pin = run
                .pin(&self.pager)?
                .ok_or_else(|| Error::internal("a committed page run has no pages"))?;
            e.u32(run.first);
            e.u32(run.count);
            e.bytes(&pin);
        }
        Ok(e.finish())
    }

    /// Whether the WAL has grown past [`CHECKPOINT_WAL_BYTES`].
    fn wants_checkpoint(&self) -> bool {
        self.wal
            .as_ref()
            .is_some_and(|w| w.size_bytes() > CHECKPOINT_WAL_BYTES)
    }

    /// Returns pages to the pager once no live version can read them. Entries
    /// are reclaimed in commit order, so an old reader keeps everything newer
    /// versions freed after it too.
    fn reclaim(&self) {
        let mut pending = self.pending.lock();
        let dead = pending
            .iter()
            .take_while(|p| p.last_user.strong_count() == 0)
            .count();
        for p in pending.drain(..dead) {
            for run in p.pages {
                self.pager.free(PageIdx(run.first), run.count);
            }
        }
    }

    /// Folds the WAL into the database file: compacts the data
    /// ([`WriteTxn::compact`], committed as a transaction of its own), writes
    /// the current metadata to fresh pages, syncs the data file (which makes
    /// every page the WAL logged durable), points the header at it and
    /// empties the WAL. Waits up to [`StorageConfig::writer_wait`] for a
    /// running write transaction, then gives up with an error.
    pub fn checkpoint(&self) -> Result<()> {
        if self.wal.is_none() || self.read_only {
            return Ok(());
        }
        let storage = self
            .me
            .upgrade()
            .ok_or_else(|| Error::internal("storage used while being dropped"))?;
        if !self.writer.acquire(self.writer_wait) {
            return Err(Error::new(
                ErrorKind::Transaction,
                format!(
                    "cannot checkpoint: a write transaction is still running after waiting {}",
                    wait_text(self.writer_wait)
                ),
            ));
        }
        // The transaction gives the writer slot back when it ends.
        let mut txn = self.txn_in_slot(storage);
        if txn.compact()? {
            txn.commit_then(true)
        } else {
            self.checkpoint_locked()
        }
    }

    /// [`Storage::checkpoint`] for a caller holding the writer slot.
    fn checkpoint_locked(&self) -> Result<()> {
        let Some(wal) = &self.wal else {
            return Ok(());
        };
        if self.read_only {
            return Ok(());
        }
        let version = self.snapshot();
        let blob = version.encode();
        let run = PageRun::write(&self.pager, &blob)?;
        self.pager.sync()?;
        let mut e = Encoder::new();
        e.u32(HEADER_FORMAT);
        e.u32(run.first);
        e.u32(run.count);
        e.u64(blob.len() as u64);
        e.u64(checksum(&blob));
        self.pager.write_header(&e.finish())?;
        wal.reset()?;
        let mut blobs = self.header_blobs.lock();
        if let Some(old) = blobs.1.take() {
            self.pager.free(PageIdx(old.first), old.count);
        }
        blobs.1 = blobs.0.take();
        blobs.0 = Some(run);
        Ok(())
    }
}

/// The one write transaction: changes a private copy of the catalog and table
/// metadata; new data goes to fresh pages. Dropping it without `commit` rolls
/// back (its pages are unreferenced and are recovered as free space on reopen).
///
/// The lifetime is only nominal (every transaction is a `WriteTxn<'static>`):
/// it keeps the `WriteTxn<'_>` signatures of the write operations valid.
pub struct WriteTxn<'a> {
    storage: Arc<Storage>,
    _life: PhantomData<&'a Storage>,
    base: Arc<Version>,
    pub catalog: Catalog,
    pub tables: std::collections::BTreeMap<TableId, Arc<TableData>>,
    /// State of the storage-level write operations (`write.rs`).
    pub(crate) local: crate::write::TxnLocal,
}

impl Drop for WriteTxn<'_> {
    /// Rollback: pages the write operations wrote in this transaction are
    /// referenced by no version and go straight back to the free list.
    fn drop(&mut self) {
        self.local.release(&self.storage.pager);
        self.storage.writer.release();
    }
}

impl WriteTxn<'_> {
    pub fn pager(&self) -> &Arc<Pager> {
        &self.storage.pager
    }

    /// The version this transaction started from.
    pub fn base(&self) -> &Arc<Version> {
        &self.base
    }

    /// A readable version of this transaction's current state (its own
    /// writes included), for statements running inside it. Buffered inserts
    /// are written first. Valid until the transaction's next write: pages the
    /// transaction itself wrote and then replaced are freed at once.
    pub fn read_version(&mut self) -> Result<Arc<Version>> {
        self.flush_pending()?;
        Ok(self.catalog_version())
    }

    /// [`WriteTxn::read_version`] for a reading part that reads no rel (no
    /// rel pattern, no subquery): buffered node inserts are written, the
    /// buffered rels stay buffered.
    pub fn node_read_version(&mut self) -> Result<Arc<Version>> {
        self.flush_node_inserts()?;
        self.flush_sets()?;
        Ok(self.catalog_version())
    }

    /// This transaction's catalog and tables *without* its buffered inserts:
    /// for planning and running a reading part that scans no table (a
    /// CREATE from literals or an UNWIND), so a transaction of many small
    /// CREATEs does not rewrite the last node group per statement.
    pub fn catalog_version(&self) -> Arc<Version> {
        Arc::new(Version {
            seq: self.base.seq,
            catalog: Arc::new(self.catalog.clone()),
            tables: self.tables.clone(),
        })
    }

    pub fn commit(self) -> Result<()> {
        self.commit_then(false)
    }

    /// Commits, then checkpoints when `checkpoint` is set or the WAL has
    /// grown past its threshold.
    fn commit_then(mut self, checkpoint: bool) -> Result<()> {
        self.prepare_commit()?;
        // The new version references the pages written in this transaction.
        self.local.committed();
        let catalog = std::mem::take(&mut self.catalog);
        let tables = std::mem::take(&mut self.tables);
        self.storage.commit(catalog, tables, &self.base)?;
        // Still holding the writer slot, so no other commit can append to
        // the WAL between the snapshot and the WAL reset.
        if checkpoint || self.storage.wants_checkpoint() {
            self.storage.checkpoint_locked()?;
        }
        Ok(())
    }

    /// Whether this transaction's commit will checkpoint (the WAL has grown
    /// past its threshold).
    pub(crate) fn checkpoint_due(&self) -> bool {
        self.storage.wants_checkpoint()
    }
}
