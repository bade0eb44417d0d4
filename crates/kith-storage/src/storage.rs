//! The storage manager of one database: versions, the single writer, commit,
//! checkpoint and recovery, shared by every process that opens the database.
//!
//! ```text
//!  write txn ──writes new chunks to fresh pages of the data file (not synced)──┐
//!     │                                                                       ▼
//!  commit:  WAL: [COMMIT_PAGES | metadata | image of every new page], one fdatasync
//!           ──►  publish the commit point in the shared file, then the Version
//!           (a commit whose new pages exceed `wal_page_log_max_bytes`:
//!            pager.sync(), then WAL: [COMMIT_RUNS | metadata | new runs], fdatasync)
//!                                                                           │
//!  checkpoint (WAL large, or close):  blob → fresh pages, pager.sync(),    │
//!                                     header slot ◄─────────────────────────┘,
//!                                     new WAL generation published, WAL reset
//!  recovery (open by the first process):  header → version (sequence number h);
//!                    of the WAL records with a sequence number above h, the last
//!                    gives the version; the page images of the records after the
//!                    last synced commit are written back in log order (a read-only
//!                    opener reads them through instead, and the next writer
//!                    recovers); a torn tail is dropped
//! ```
//!
//! So a committed transaction costs one fdatasync (of the WAL); the data file is
//! synced at checkpoint. Durability: a version is published (and COMMIT returns)
//! only after its WAL record is synced, and every page it references was either
//! synced by a checkpoint or a synced commit, or travels as an image in a synced
//! COMMIT_PAGES record at or after the last of those, which recovery writes back in
//! order. Committed pages are never overwritten, and a page is only reused after the
//! commit that dropped it is durable and no reader in any process holds a version
//! that references it (`shared.rs`), so the latest image of a referenced page is its
//! content. Replaying only records newer than the header keeps an interrupted
//! checkpoint's stale records from overwriting pages the checkpoint reused; starting
//! images after the last synced commit keeps older images from overwriting pages such
//! a commit reused. Readers never see a half-done commit.
//!
//! Several processes: every open maps the [`SharedFile`] (`g.kith.shm`). Its writer
//! lock is the single writer's slot, for connections of one process and of all
//! processes alike, served in arrival order; its commit point says which version is
//! newest and where its WAL record ends, so another process catches up by reading
//! the WAL; its reader table says which snapshots live readers hold. Pages written
//! by the writer reach the data file before the commit's WAL record, so a process
//! that reads the record finds its pages in the file.
//!
//! A [`WriteTxn`] owns an `Arc` of its storage and the writer slot (not a
//! borrowed lock guard), so a connection can keep one open across statements
//! (`BEGIN TRANSACTION` … `COMMIT`) and move it between threads.
//! [`WriteTxn::read_version`] gives the transaction's own statements a
//! readable version of its uncommitted state. Checkpoints take the writer slot
//! too: one running concurrently with a commit could reset the WAL right after
//! that commit's record was appended, losing an acknowledged commit.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use kith_catalog::Catalog;
use kith_common::codec::{Decoder, Encoder};
use kith_common::constants::PAGE_SIZE;
use kith_common::{Error, ErrorKind, Result, TableId};
use kith_pager::{Arrival, CommitPoint, PageIdx, Pager, PagerConfig, SharedFile, Wal};

use crate::column::PageRun;
use crate::shared::{read_header_version, wal_images, Readers};
use crate::version::{TableData, Version, METADATA_FORMAT};

/// WAL size above which a commit triggers a checkpoint.
pub const CHECKPOINT_WAL_BYTES: u64 = 16 << 20;
/// How long a writer waits for the slot before giving up (default of
/// [`StorageConfig::writer_wait`]).
pub const WRITER_WAIT: Duration = Duration::from_secs(60);
/// Default of [`StorageConfig::wal_page_log_max_bytes`].
pub const WAL_PAGE_LOG_MAX_BYTES: u64 = 1 << 20;

/// WAL record of a commit whose new pages were synced to the data file before
/// the record was written: `[1][metadata]` (written by older builds).
const WAL_COMMIT: u8 = 1;
/// WAL record of a commit that carries its new pages:
/// `[2][bytes: metadata][u64: runs]` then per run `[u32: first][u32: count][bytes: image]`.
const WAL_COMMIT_PAGES: u8 = 2;
/// [`WAL_COMMIT`] that names its new pages (other processes drop their cached
/// copies): `[3][bytes: metadata][u64: runs]` then per run `[u32: first][u32: count]`.
const WAL_COMMIT_RUNS: u8 = 3;
pub(crate) const HEADER_FORMAT: u32 = 1;

#[derive(Debug, Clone)]
pub struct StorageConfig {
    pub memory_limit_bytes: u64,
    pub read_only: bool,
    /// How long `begin_write` and `checkpoint` wait for the writer slot (held
    /// by a write transaction of this or another process) before failing with
    /// a transaction error.
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
pub(crate) struct CommitRecord<'a> {
    pub(crate) seq: u64,
    pub(crate) metadata: &'a [u8],
    /// Its new pages were synced to the data file before it was logged.
    pub(crate) synced: bool,
    /// `(first page, image of the run)` for a COMMIT_PAGES record.
    pub(crate) images: Vec<(u32, &'a [u8])>,
    /// The page runs the commit wrote (unknown for an old COMMIT record).
    pub(crate) added: Option<Vec<(PageIdx, u32)>>,
}

impl<'a> CommitRecord<'a> {
    pub(crate) fn parse(rec: &'a [u8]) -> Result<CommitRecord<'a>> {
        let (kind, body) = rec
            .split_first()
            .ok_or_else(|| Error::corruption("empty WAL record"))?;
        let mut images = Vec::new();
        let (metadata, synced, added) = match *kind {
            WAL_COMMIT => (body, true, None),
            WAL_COMMIT_RUNS => {
                let mut d = Decoder::new(body);
                let metadata = d.bytes()?;
                let n = d.count(8)?;
                let mut runs = Vec::with_capacity(n);
                for _ in 0..n {
                    runs.push((PageIdx(d.u32()?), d.u32()?));
                }
                if !d.is_done() {
                    return Err(Error::corruption("trailing bytes after a WAL record"));
                }
                (metadata, true, Some(runs))
            }
            WAL_COMMIT_PAGES => {
                let mut d = Decoder::new(body);
                let metadata = d.bytes()?;
                let runs = d.count(16)?;
                let mut added = Vec::with_capacity(runs);
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
                    added.push((PageIdx(first), count));
                }
                if !d.is_done() {
                    return Err(Error::corruption("trailing bytes after a WAL record"));
                }
                (metadata, false, Some(added))
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
            added,
        })
    }
}

/// What this process knows of the shared state, and its allocator's.
#[derive(Default)]
pub(crate) struct View {
    /// The commit point `current` is at (`None`: read everything again).
    pub(crate) point: Option<CommitPoint>,
    /// The version the pager's free list and `pending` were made for (`None`:
    /// rebuild before allocating).
    pub(crate) alloc_seq: Option<u64>,
    /// Runs freed by recent commits, by freeing commit, not yet reusable.
    pub(crate) pending: Vec<(u64, Vec<PageRun>)>,
    /// Metadata blob pages of the newest and the previous header slot; freed
    /// two checkpoints later, when no header slot can point at them.
    pub(crate) header_blobs: (Option<PageRun>, Option<PageRun>),
}

pub struct Storage {
    /// This storage's own `Arc` (weak, so it is no cycle): write transactions
    /// hold a strong one.
    me: Weak<Storage>,
    path: Option<PathBuf>,
    pub(crate) pager: Arc<Pager>,
    pub(crate) wal: Option<Wal>,
    read_only: bool,
    pub(crate) current: RwLock<Arc<Version>>,
    pub(crate) shared: Arc<SharedFile>,
    pub(crate) readers: Arc<Readers>,
    pub(crate) view: Mutex<View>,
    writer_wait: Duration,
    wal_page_log_max_bytes: u64,
    /// What the open did that a user may want to know (a read-only open that
    /// read commits through the WAL instead of recovering them).
    open_note: Option<String>,
}

fn wal_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".wal");
    PathBuf::from(p)
}

fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// What [`Storage::open`] found, before the storage exists.
struct Opened {
    pager: Arc<Pager>,
    wal: Option<Wal>,
    shared: Arc<SharedFile>,
    version: Option<Version>,
    point: Option<CommitPoint>,
    note: Option<String>,
    /// The first opener replayed the WAL into the file: checkpoint it.
    checkpoint: bool,
    /// No other process had the database open: this open holds the shared
    /// file's INIT lock until the storage exists.
    alone: bool,
}

impl Storage {
    /// Opens the database at `path` (None: in memory). The first process to
    /// open it recovers from the WAL; later ones take the state it shares.
    pub fn open(path: Option<&Path>, cfg: StorageConfig) -> Result<Arc<Storage>> {
        let pager_cfg = PagerConfig {
            memory_limit_bytes: cfg.memory_limit_bytes,
            read_only: cfg.read_only,
            ..PagerConfig::default()
        };
        let opened = match path {
            None => Opened {
                pager: Arc::new(Pager::in_memory(pager_cfg)),
                wal: None,
                shared: Arc::new(SharedFile::private()?),
                version: Some(Version::default()),
                point: Some(CommitPoint::default()),
                note: None,
                checkpoint: false,
                alone: false,
            },
            Some(path) => open_files(path, pager_cfg, cfg.read_only)?,
        };
        let readers = Readers::new(Arc::clone(&opened.shared));
        let storage = Arc::new_cyclic(|me| Storage {
            me: me.clone(),
            path: path.map(Path::to_path_buf),
            pager: opened.pager,
            wal: opened.wal,
            read_only: cfg.read_only,
            current: RwLock::new(Arc::new(opened.version.unwrap_or_default())),
            shared: opened.shared,
            readers,
            view: Mutex::new(View {
                point: opened.point,
                ..View::default()
            }),
            writer_wait: cfg.writer_wait,
            wal_page_log_max_bytes: cfg.wal_page_log_max_bytes,
            open_note: opened.note,
        });
        if opened.alone {
            // The first opener has set the commit point: let others in.
            storage.shared.finish_open()?;
        }
        storage.catch_up()?;
        if !cfg.read_only && (opened.checkpoint || storage.shared.recovery_pending()) {
            storage.recover_pending()?;
            storage.checkpoint()?;
        } else if cfg.read_only && storage.shared.recovery_pending() {
            storage.read_through_wal()?;
        }
        Ok(storage)
    }

    /// A read-only process that joins after a read-only first opener read
    /// through the WAL does the same: the data file may lack those pages.
    fn read_through_wal(&self) -> Result<()> {
        let Some(point) = self.view.lock().point else {
            return Ok(());
        };
        if let Some(overlay) = self.logged_images(point)? {
            if !overlay.is_empty() {
                self.pager.install_overlay(overlay)?;
            }
        }
        Ok(())
    }

    /// A read-only process read this database through its WAL (after a power
    /// loss the data file may lack pages the WAL carries): write them back
    /// now, under the writer slot, then [`Storage::checkpoint`] publishes a
    /// new WAL generation, after which readers read the file again.
    fn recover_pending(&self) -> Result<()> {
        if !self.shared.recovery_pending() {
            return Ok(());
        }
        let _slot = self.writer_slot()?;
        self.catch_up()?;
        let point = self.view.lock().point;
        if let Some(images) = point.map(|p| self.logged_images(p)).transpose()?.flatten() {
            for (page, image) in images {
                self.pager.write_recovered(PageIdx(page), &image)?;
            }
            self.pager.sync()?;
        }
        self.shared.set_recovery_pending(false);
        Ok(())
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

    /// What the open did that the user may want to know, if anything.
    pub fn open_note(&self) -> Option<&str> {
        self.open_note.as_deref()
    }

    /// The newest version this process knows, without a reader mark (its
    /// pages may be reused once no reader holds it): for the writer.
    pub(crate) fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current.read())
    }

    /// Takes the writer slot (queueing in arrival order, across processes),
    /// released when the guard drops.
    pub(crate) fn writer_slot(&self) -> Result<WriterSlotGuard> {
        self.shared.acquire_writer(self.writer_wait)?;
        let guard = WriterSlotGuard {
            shared: Arc::clone(&self.shared),
        };
        if self.shared.writer_changed() {
            // Another open wrote (or checkpointed) since this one did: its
            // allocations and frees are not in this process's free list.
            self.view.lock().alloc_seq = None;
        }
        Ok(guard)
    }

    /// Starts the (single) write transaction, waiting up to
    /// [`StorageConfig::writer_wait`] for the slot. The transaction owns what
    /// it needs (`'static`), so it may outlive this borrow.
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
        let slot = self.writer_slot()?;
        self.catch_up()?;
        self.prepare_alloc()?;
        Ok(self.txn_in_slot(storage, slot))
    }

    /// A write transaction for a caller that has just taken the writer
    /// slot; the transaction gives it back when it ends.
    fn txn_in_slot(&self, storage: Arc<Storage>, slot: WriterSlotGuard) -> WriteTxn<'static> {
        let base = self.current();
        WriteTxn {
            storage,
            _slot: slot,
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
        let mut view = self.view.lock();
        let mut version = Version {
            seq: base.seq + 1,
            catalog: Arc::new(txn_catalog),
            tables,
            freed: view.pending.clone(),
            reader: None,
        };
        let mut new_pages = version.pages();
        new_pages.sort_by_key(|r| r.first);
        let mut base_pages = base.pages();
        base_pages.sort_by_key(|r| r.first);
        let not_in = |runs: &[PageRun], r: &PageRun| {
            r.count > 0 && runs.binary_search_by_key(&r.first, |n| n.first).is_err()
        };
        // Pages the old version used that the new one does not: reusable once
        // no reader's snapshot is older than this commit.
        let freed: Vec<PageRun> = base_pages
            .iter()
            .filter(|r| not_in(&new_pages, r))
            .copied()
            .collect();
        if !freed.is_empty() {
            version.freed.push((version.seq, freed));
        }
        if version.freed.len() > PENDING_ENTRIES_MAX {
            merge_pending(&mut version.freed);
        }
        let mut wal_end = 0;
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
            wal_end = wal.size_bytes();
        }
        let point = CommitPoint {
            seq: version.seq,
            wal_end,
            wal_gen: view.point.map_or(0, |p| p.wal_gen),
        };
        self.shared.publish(point);
        view.pending = version.freed.clone();
        view.alloc_seq = Some(version.seq);
        view.point = Some(point);
        let old = std::mem::replace(&mut *self.current.write(), Arc::new(version));
        drop(view);
        drop(old);
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
        let mut e = Encoder::new();
        if added_bytes > self.wal_page_log_max_bytes {
            self.pager.sync()?;
            e.u8(WAL_COMMIT_RUNS);
            e.bytes(&metadata);
            e.u64(added.len() as u64);
            for run in added {
                e.u32(run.first);
                e.u32(run.count);
            }
            return Ok(e.finish());
        }
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

    /// Folds the WAL into the database file: compacts the data
    /// ([`WriteTxn::compact`], committed as a transaction of its own), writes
    /// the current metadata to fresh pages, syncs the data file (which makes
    /// every page the WAL logged durable), points the header at it and
    /// empties the WAL. Waits up to [`StorageConfig::writer_wait`] for the
    /// writer slot, then gives up with an error.
    pub fn checkpoint(&self) -> Result<()> {
        if self.wal.is_none() || self.read_only {
            return Ok(());
        }
        let storage = self
            .me
            .upgrade()
            .ok_or_else(|| Error::internal("storage used while being dropped"))?;
        let slot = self.writer_slot().map_err(|e| {
            Error::new(
                ErrorKind::Transaction,
                format!("cannot checkpoint: {}", e.message),
            )
        })?;
        self.catch_up()?;
        self.prepare_alloc()?;
        // The transaction gives the writer slot back when it ends.
        let mut txn = self.txn_in_slot(storage, slot);
        if txn.compact()? {
            txn.commit_then(true)
        } else {
            self.checkpoint_locked()
        }
    }

    /// [`Storage::checkpoint`] for a caller holding the writer slot. Readers
    /// of other processes keep their snapshots: their pages are not touched
    /// (the metadata goes to free pages), and the new WAL generation is
    /// published before the log is emptied, so a process reading the log
    /// sees that it changed and reads the header instead.
    fn checkpoint_locked(&self) -> Result<()> {
        let Some(wal) = &self.wal else {
            return Ok(());
        };
        if self.read_only {
            return Ok(());
        }
        // The pending frees as the allocator has them: `prepare_alloc` may
        // have freed (and this process reused) some that the last commit's
        // version still lists.
        let version = Version {
            freed: self.view.lock().pending.clone(),
            ..self.current().unmarked()
        };
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
        let mut view = self.view.lock();
        let point = CommitPoint {
            seq: version.seq,
            wal_end: 0,
            wal_gen: view.point.map_or(0, |p| p.wal_gen) + 1,
        };
        self.shared.publish(point);
        view.point = Some(point);
        wal.reset()?;
        let blobs = &mut view.header_blobs;
        if let Some(old) = blobs.1.take() {
            self.pager.free(PageIdx(old.first), old.count);
        }
        blobs.1 = blobs.0.take();
        blobs.0 = Some(run);
        drop(view);
        self.pager.truncate_free_tail()
    }
}

/// Entries of [`Version::freed`] past which the newer ones merge: a reader
/// holding an old snapshot while thousands of commits free pages would
/// otherwise make every commit's metadata grow by one entry.
const PENDING_ENTRIES_MAX: usize = 64;

/// Merges every pending entry but the oldest into one, under the newest
/// entry's commit (its runs wait a little longer; none is reused early),
/// coalescing touching runs.
pub(crate) fn merge_pending(freed: &mut Vec<(u64, Vec<PageRun>)>) {
    let newer = freed.split_off(1);
    let Some(seq) = newer.last().map(|e| e.0) else {
        return;
    };
    let mut runs: Vec<PageRun> = newer.into_iter().flat_map(|e| e.1).collect();
    runs.sort_by_key(|r| r.first);
    let mut merged: Vec<PageRun> = Vec::with_capacity(runs.len());
    for run in runs {
        match merged.last_mut() {
            Some(last) if last.first + last.count == run.first => last.count += run.count,
            _ => merged.push(run),
        }
    }
    freed.push((seq, merged));
}

/// Opens the files of the database at `path`: the shared file, the data file
/// and the WAL. The first process recovers (or, read-only, reads through the
/// WAL); a later one reads the shared commit point (in `catch_up`).
fn open_files(path: &Path, pager_cfg: PagerConfig, read_only: bool) -> Result<Opened> {
    let wal = Wal::open(&wal_path(path))?;
    let (shared, arrival) = SharedFile::open(path, read_only)?;
    let shared = Arc::new(shared);
    if arrival == Arrival::Alone && !path.exists() && !wal.read_records_untouched()?.is_empty() {
        // Commits before the last synced one live only in the missing
        // file: replaying the rest would build a damaged database.
        return Err(Error::corruption(format!(
            "found the write-ahead log {} but not its database file {}: the log belongs to a database that is gone; restore the file, or delete the log to start empty",
            wal_path(path).display(),
            path.display()
        )));
    }
    let pager = Arc::new(Pager::open(path, pager_cfg)?);
    let mut opened = Opened {
        pager,
        wal: Some(wal),
        shared,
        version: None,
        point: None,
        note: None,
        checkpoint: false,
        alone: arrival == Arrival::Alone,
    };
    if opened.alone {
        recover(&mut opened, read_only)?;
    }
    Ok(opened)
}

/// Recovery by the first process to open the database: the header's version,
/// then the WAL's newer commits; their page images are written back (or, for
/// a read-only opener, read through an overlay, and the next writer writes
/// them). Publishes the commit point.
fn recover(opened: &mut Opened, read_only: bool) -> Result<()> {
    let (pager, shared) = (&opened.pager, &opened.shared);
    let Some(wal) = &opened.wal else {
        return Ok(());
    };
    // A database never checkpointed gets a header at once: builds before
    // this format would read an empty header and then misread the WAL.
    let (mut version, old_format) = match read_header_version(pager)? {
        Some((version, format)) => (version, format < METADATA_FORMAT),
        None => (Version::default(), true),
    };
    // A read-only opener leaves a torn tail for the next writer to cut.
    let records = if read_only {
        wal.read_records_untouched()?
    } else {
        wal.read_records()?
    };
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
    let mut images = wal_images(&commits)?;
    let replayed = !commits.is_empty();
    if read_only {
        // After a process crash the writer's pages are in the file already
        // (it writes them before logging); only a power loss can lose some.
        let mut missing = HashMap::new();
        for (page, image) in images.drain() {
            if !pager.file_holds(PageIdx(page), &image)? {
                missing.insert(page, image);
            }
        }
        images = missing;
        if !images.is_empty() {
            opened.note = Some(format!(
                "opened read-only: {} page(s) of the last {} commit(s) are missing from the database file (after a crash of the machine) and were read from the write-ahead log instead; the next read-write open writes them back",
                images.len(),
                commits.len()
            ));
            pager.install_overlay(images)?;
            shared.set_recovery_pending(true);
        }
    } else {
        for (page, image) in &images {
            pager.write_recovered(PageIdx(*page), image)?;
        }
    }
    let point = CommitPoint {
        seq: version.seq,
        wal_end: wal.size_bytes(),
        wal_gen: 1,
    };
    shared.publish(point);
    opened.point = Some(point);
    opened.version = Some(version);
    // A checkpoint folds the replayed records into the file and rewrites an
    // older format's metadata in the current one (which older builds refuse,
    // so none opens the database beside this one).
    opened.checkpoint = !read_only && (replayed || old_format);
    Ok(())
}

/// The writer slot while held; gives it back when dropped.
pub(crate) struct WriterSlotGuard {
    shared: Arc<SharedFile>,
}

impl Drop for WriterSlotGuard {
    fn drop(&mut self) {
        self.shared.release_writer();
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
    /// Released after the rollback in `drop` (fields drop after `Drop::drop`).
    _slot: WriterSlotGuard,
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
            freed: Vec::new(),
            reader: None,
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
