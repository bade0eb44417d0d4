//! Keeping one process's view of the database in step with the other processes
//! that have it open (through the [`SharedFile`] beside it).
//!
//! - **Catching up** ([`Storage::catch_up`]): when the shared commit point is
//!   newer than what this process knows, it reads the WAL records in between
//!   (each carries the whole version's metadata, so the last one is the new
//!   version) and drops its cached copies of the pages those commits wrote:
//!   they may be pages this process cached before another process reused them.
//!   After a checkpoint (a new WAL generation) it reloads from the header and
//!   drops every unpinned cached page.
//! - **Readers** ([`ReaderMark`]): every version handed to a reader carries a
//!   mark that keeps this process's reader slot at or below its sequence
//!   number; the slot holds the oldest snapshot any reader of the process has.
//!   A reader publishes its slot, then checks that the commit point did not
//!   move, so a writer that missed the slot had not freed anything the reader
//!   needs (the LMDB reader-table protocol).
//! - **The allocator** ([`Storage::prepare_alloc`]): the writer's free list is
//!   every page that the newest version, its `freed` runs (pages recent
//!   commits dropped, kept until no live reader can read them) and the two
//!   header slots' metadata do not use. A process rebuilds it when it takes
//!   the writer slot after another process committed; otherwise it keeps its
//!   own. Pending runs become free when the oldest live snapshot of every
//!   process has reached the commit that freed them.
//!
//! Lock order: the writer slot, then `Storage::view`, then `Storage::current`;
//! the reader registry's mutex is taken alone.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use kith_common::codec::Decoder;
use kith_common::constants::PAGE_SIZE;
use kith_common::{Error, Result};
use kith_pager::{CommitPoint, PageIdx, Pager, SharedFile, NO_SNAPSHOT};

use crate::column::PageRun;
use crate::storage::{CommitRecord, Storage, View, HEADER_FORMAT};
use crate::version::Version;

/// Holds this process's reader slot at or below `seq` while alive (and
/// while its storage is open: a version that outlives its storage has no
/// pager to read through).
pub struct ReaderMark {
    readers: Weak<Readers>,
    seq: u64,
}

impl std::fmt::Debug for ReaderMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReaderMark({})", self.seq)
    }
}

impl Drop for ReaderMark {
    fn drop(&mut self) {
        if let Some(readers) = self.readers.upgrade() {
            readers.leave(self.seq);
        }
    }
}

/// The snapshots this process's readers hold, by sequence number; the
/// smallest is what the process's reader slot says.
pub(crate) struct Readers {
    shared: Arc<SharedFile>,
    counts: Mutex<BTreeMap<u64, usize>>,
}

impl Readers {
    pub(crate) fn new(shared: Arc<SharedFile>) -> Arc<Readers> {
        Arc::new(Readers {
            shared,
            counts: Mutex::new(BTreeMap::new()),
        })
    }

    fn enter(self: &Arc<Self>, seq: u64) -> Arc<ReaderMark> {
        let mut counts = self.counts.lock();
        *counts.entry(seq).or_default() += 1;
        let oldest = counts.keys().next().copied().unwrap_or(NO_SNAPSHOT);
        self.shared.set_oldest_snapshot(oldest);
        Arc::new(ReaderMark {
            readers: Arc::downgrade(self),
            seq,
        })
    }

    fn leave(&self, seq: u64) {
        let mut counts = self.counts.lock();
        if let Some(n) = counts.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&seq);
            }
        }
        let oldest = counts.keys().next().copied().unwrap_or(NO_SNAPSHOT);
        self.shared.set_oldest_snapshot(oldest);
    }
}

/// The metadata blob a header payload points at.
pub(crate) fn header_blob(payload: &[u8]) -> Result<(PageRun, usize, u64)> {
    let mut d = Decoder::new(payload);
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
    Ok((run, len, sum))
}

impl Storage {
    /// The newest committed version, by any process, as a reader's snapshot:
    /// its pages stay unchanged until the returned version is dropped.
    pub fn snapshot(&self) -> Result<Arc<Version>> {
        loop {
            self.catch_up()?;
            let current = Arc::clone(&self.current.read());
            let mark = self.readers.enter(current.seq);
            // Published before this check, the slot holds back every page the
            // version uses; a commit in between may have freed some already,
            // so take the newer one.
            if self.shared.commit_point().seq == current.seq {
                let mut version = current.unmarked();
                version.reader = Some(mark);
                return Ok(Arc::new(version));
            }
        }
    }

    /// Brings this process's current version up to the shared commit point.
    pub(crate) fn catch_up(&self) -> Result<()> {
        let mut view = self.view.lock();
        let mut failed_reads = 0;
        loop {
            let point = self.shared.commit_point();
            if view.point == Some(point) {
                return Ok(());
            }
            let incremental = view
                .point
                .filter(|p| p.wal_gen == point.wal_gen && p.wal_end <= point.wal_end);
            let advanced = match incremental {
                Some(from) => self.read_commits(from, point)?,
                None => self.reload(point)?,
            };
            // A checkpoint that started meanwhile may have emptied the log
            // under the read: only a read the generation did not change
            // around counts.
            let settled = self.shared.commit_point();
            match advanced {
                Some(version) if settled.wal_gen == point.wal_gen && version.seq == point.seq => {
                    *self.current.write() = Arc::new(version);
                    view.point = Some(point);
                }
                // Read while commits went on: a checkpoint can write a newer
                // header before it publishes its generation. Only a state
                // that stood still and still disagrees is damage.
                Some(version) if settled == point => {
                    return Err(Error::corruption(format!(
                        "the write-ahead log ends at commit {} but the shared file says {}",
                        version.seq, point.seq
                    )));
                }
                Some(_) => {}
                None => {
                    // The log changed under the read (a checkpoint): read the
                    // whole state again. A log that stays shorter than the
                    // shared file says was cut or replaced behind KithDB's back.
                    failed_reads += 1;
                    if failed_reads > 100 && self.shared.commit_point() == point {
                        return Err(Error::corruption(format!(
                            "the write-ahead log holds no whole records up to byte {} where the shared file says commit {} ends; was it truncated or replaced?",
                            point.wal_end, point.seq
                        )));
                    }
                    view.point = None;
                }
            }
        }
    }

    /// The commits in `(from, to]` of one WAL generation: drops the cached
    /// copies of the pages they wrote and returns the last one's version.
    fn read_commits(&self, from: CommitPoint, to: CommitPoint) -> Result<Option<Version>> {
        let Some(wal) = &self.wal else {
            return Ok(None);
        };
        let Some(records) = wal.read_range(from.wal_end, to.wal_end)? else {
            return Ok(None);
        };
        self.pager.refresh_size()?;
        let mut last = None;
        for rec in &records {
            let commit = CommitRecord::parse(rec)?;
            match &commit.added {
                Some(runs) => self.pager.forget(runs),
                None => self.pager.forget_all(),
            }
            last = Some(commit.metadata);
        }
        match last {
            Some(metadata) => Version::decode(metadata).map(Some),
            None => Ok(Some(self.current.read().unmarked())),
        }
    }

    /// The version at `point` read from the header and the whole WAL, after
    /// dropping every unpinned cached page; `None` if the files changed under
    /// the read.
    fn reload(&self, point: CommitPoint) -> Result<Option<Version>> {
        self.pager.refresh_size()?;
        self.pager.forget_all();
        let header = match self.header_version() {
            Ok(v) => v,
            Err(e) if self.shared.commit_point().wal_gen == point.wal_gen => return Err(e),
            Err(_) => return Ok(None),
        };
        let mut version = header.map_or_else(Version::default, |(v, _)| v);
        let Some(wal) = &self.wal else {
            return Ok(Some(version));
        };
        let Some(records) = wal.read_range(0, point.wal_end)? else {
            return Ok(None);
        };
        let header_seq = version.seq;
        if let Some(last) = records.last() {
            let commit = CommitRecord::parse(last)?;
            if commit.seq > header_seq {
                version = Version::decode(commit.metadata)?;
            }
        }
        Ok(Some(version))
    }

    /// The version the newest header points at, and the format of its
    /// metadata; `None` for a database never checkpointed.
    pub(crate) fn header_version(&self) -> Result<Option<(Version, u32)>> {
        read_header_version(&self.pager)
    }

    /// The page images of the commits published up to `point` that the
    /// data file may lack (see [`wal_images`]); `None` if the log changed
    /// under the read.
    pub(crate) fn logged_images(
        &self,
        point: CommitPoint,
    ) -> Result<Option<HashMap<u32, Box<[u8]>>>> {
        let Some(wal) = &self.wal else {
            return Ok(Some(HashMap::new()));
        };
        let Some(records) = wal.read_range(0, point.wal_end)? else {
            return Ok(None);
        };
        let commits = records
            .iter()
            .map(|r| CommitRecord::parse(r))
            .collect::<Result<Vec<_>>>()?;
        wal_images(&commits).map(Some)
    }

    /// Makes the pager's free list and `view.pending` those of the current
    /// version (rebuilt if another process committed since this one last
    /// did), points the WAL's end at the shared one, and frees the pending
    /// runs no live reader can read any more. The caller holds the writer slot.
    pub(crate) fn prepare_alloc(&self) -> Result<()> {
        let mut view = self.view.lock();
        let current = Arc::clone(&self.current.read());
        // Rebuilt when another open wrote since this one did (or never did):
        // then a writer that died may have left records past the end too.
        let taking_over = view.alloc_seq != Some(current.seq);
        if taking_over {
            self.rebuild_free_list(&mut view, &current)?;
        }
        if let (Some(wal), Some(point)) = (&self.wal, view.point) {
            wal.set_end(point.wal_end, taking_over)?;
        }
        let oldest = self.shared.oldest_snapshot()?;
        let reusable = view
            .pending
            .iter()
            .take_while(|(seq, _)| *seq <= oldest)
            .count();
        for (_, runs) in view.pending.drain(..reusable) {
            for run in runs {
                self.pager.free(PageIdx(run.first), run.count);
            }
        }
        Ok(())
    }

    /// Every page not referenced by `version`, its pending frees or a header
    /// slot's metadata is free.
    fn rebuild_free_list(&self, view: &mut View, version: &Version) -> Result<()> {
        self.pager.refresh_size()?;
        let mut blobs = Vec::new();
        for payload in self.pager.read_header_slots()? {
            blobs.push(header_blob(&payload)?.0);
        }
        view.header_blobs = (blobs.first().copied(), blobs.get(1).copied());
        let mut used = version.pages();
        used.extend(
            version
                .freed
                .iter()
                .flat_map(|(_, runs)| runs.iter().copied()),
        );
        used.extend(blobs);
        used.retain(|r| r.count > 0);
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
        view.pending = version.freed.clone();
        view.alloc_seq = Some(version.seq);
        Ok(())
    }
}

/// The version the newest header of `pager`'s file points at, and the
/// format of its metadata; `None` for a database never checkpointed.
pub(crate) fn read_header_version(pager: &Arc<Pager>) -> Result<Option<(Version, u32)>> {
    let Some(payload) = pager.read_header()? else {
        return Ok(None);
    };
    let (run, len, sum) = header_blob(&payload)?;
    let pin = run
        .pin(pager)?
        .ok_or_else(|| Error::corruption("database header points at no metadata"))?;
    let blob = pin
        .get(..len)
        .ok_or_else(|| Error::corruption("metadata length beyond its pages"))?;
    if xxhash_rust::xxh3::xxh3_64(blob) != sum {
        return Err(Error::corruption("metadata checksum mismatch"));
    }
    let format = blob
        .get(..4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    Ok(Some((Version::decode(blob)?, format)))
}

/// The page images of the commits in `records` that the data file may lack
/// (those after the last commit whose pages were synced before it was
/// logged), page by page; later images of a page replace earlier ones.
pub(crate) fn wal_images(commits: &[CommitRecord<'_>]) -> Result<HashMap<u32, Box<[u8]>>> {
    let replay_from = commits.iter().rposition(|c| c.synced).map_or(0, |i| i + 1);
    let mut overlay = HashMap::new();
    for commit in &commits[replay_from..] {
        for &(first, image) in &commit.images {
            for (i, page) in image.chunks_exact(PAGE_SIZE).enumerate() {
                let idx = first
                    .checked_add(i as u32)
                    .ok_or_else(|| Error::corruption("WAL page index overflow"))?;
                overlay.insert(idx, Box::<[u8]>::from(page));
            }
        }
    }
    Ok(overlay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageConfig;
    use crate::version::METADATA_FORMAT;
    use kith_common::codec::Encoder;

    /// Creates node table `P(id INT64 PRIMARY KEY)` in a transaction of its own.
    fn create_p(storage: &Storage) -> kith_common::TableId {
        let mut txn = storage.begin_write().unwrap();
        let id = txn
            .catalog
            .create_node_table(
                "P",
                vec![("id".to_string(), kith_common::LogicalType::Int64)],
                "id",
            )
            .unwrap();
        let columns = txn
            .catalog
            .table(id)
            .unwrap()
            .properties
            .iter()
            .map(|p| p.id)
            .collect();
        txn.tables.insert(
            id,
            Arc::new(crate::version::TableData::Node(
                crate::node_table::NodeTableData::empty(columns, 0),
            )),
        );
        txn.commit().unwrap();
        id
    }

    /// Inserts `P` rows with ids `ids` in a transaction of its own.
    fn insert_p(storage: &Storage, id: kith_common::TableId, ids: std::ops::Range<i64>) {
        let mut txn = storage.begin_write().unwrap();
        let rows: Vec<Vec<kith_common::Value>> =
            ids.map(|i| vec![kith_common::Value::Int64(i)]).collect();
        txn.insert_nodes(id, &rows).unwrap();
        txn.commit().unwrap();
    }

    /// Rewrites the checkpointed metadata of the database at `path` as
    /// `format`, with `edit` applied to the blob (an older format lacks the
    /// trailing `freed` list).
    fn rewrite_header(path: &std::path::Path, format: u32, cut_tail: usize) {
        let storage = Storage::open(Some(path), StorageConfig::default()).unwrap();
        let (version, _) = storage.header_version().unwrap().unwrap();
        let mut blob = version.encode();
        blob.truncate(blob.len() - cut_tail);
        blob[..4].copy_from_slice(&format.to_le_bytes());
        let _slot = storage.writer_slot().unwrap();
        let run = PageRun::write(&storage.pager, &blob).unwrap();
        storage.pager.sync().unwrap();
        let mut e = Encoder::new();
        e.u32(HEADER_FORMAT);
        e.u32(run.first);
        e.u32(run.count);
        e.u64(blob.len() as u64);
        e.u64(xxhash_rust::xxh3::xxh3_64(&blob));
        storage.pager.write_header(&e.finish()).unwrap();
    }

    fn committed_once(dir: &tempfile::TempDir) -> std::path::PathBuf {
        let path = dir.path().join("g.kith");
        let storage = Storage::open(Some(&path), StorageConfig::default()).unwrap();
        storage.begin_write().unwrap().commit().unwrap();
        storage.checkpoint().unwrap();
        path
    }

    fn id_of(version: &Version) -> kith_common::TableId {
        version.catalog.table_by_name("P").unwrap().id
    }

    /// The WAL's page images of the database at `path`, parsed.
    fn wal_file_images(path: &std::path::Path) -> HashMap<u32, Box<[u8]>> {
        let wal = kith_pager::Wal::open(&path.with_extension("kith.wal")).unwrap();
        let records = wal.read_records().unwrap();
        let commits: Vec<_> = records
            .iter()
            .map(|r| CommitRecord::parse(r).unwrap())
            .collect();
        wal_images(&commits).unwrap()
    }

    /// A power loss after a commit: the WAL carries pages the data file
    /// lost. A read-only first opener reads them through the WAL and says
    /// so, changing no file; the next read-write open writes them back.
    #[test]
    fn read_only_open_reads_lost_pages_through_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.kith");
        {
            let storage = Storage::open(Some(&path), StorageConfig::default()).unwrap();
            let id = create_p(&storage);
            insert_p(&storage, id, 0..100);
        }
        let images = wal_file_images(&path);
        assert!(!images.is_empty());
        // Lose the logged pages from the data file.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        for &page in images.keys() {
            use std::os::unix::fs::FileExt;
            file.write_all_at(&[0u8; PAGE_SIZE], page as u64 * PAGE_SIZE as u64)
                .unwrap();
        }
        let before = (
            std::fs::read(&path).unwrap(),
            std::fs::read(path.with_extension("kith.wal")).unwrap(),
        );
        let read_only = StorageConfig {
            read_only: true,
            ..StorageConfig::default()
        };
        let storage = Storage::open(Some(&path), read_only).unwrap();
        assert!(
            storage.open_note().unwrap().contains("missing"),
            "{:?}",
            storage.open_note()
        );
        let version = storage.snapshot().unwrap();
        assert_eq!(version.cardinality(id_of(&version)), 100);
        for (&page, image) in &images {
            let pin = storage.pager.pin_owned(PageIdx(page), 1).unwrap();
            assert_eq!(&pin[..], &image[..], "page {page}");
        }
        drop(version);
        drop(storage);
        let after = (
            std::fs::read(&path).unwrap(),
            std::fs::read(path.with_extension("kith.wal")).unwrap(),
        );
        assert!(before == after, "a read-only open changed a file");
        let storage = Storage::open(Some(&path), StorageConfig::default()).unwrap();
        assert!(storage.open_note().is_none());
        let version = storage.snapshot().unwrap();
        assert_eq!(version.cardinality(id_of(&version)), 100);
    }

    /// Two opens (as two processes) take turns writing and checkpointing:
    /// neither allocates over what the other wrote (a checkpoint's metadata
    /// blob included), and the database reopens intact.
    #[test]
    fn opens_taking_turns_do_not_allocate_over_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.kith");
        let a = Storage::open(Some(&path), StorageConfig::default()).unwrap();
        let b = Storage::open(Some(&path), StorageConfig::default()).unwrap();
        let id = create_p(&a);
        let mut next = 0i64;
        for round in 0..12 {
            let (writer, checkpointer) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
            // Commits on both sides of the other's checkpoint: the last
            // one's pages must not land on that checkpoint's metadata.
            for i in 0..4 {
                if i == 3 {
                    checkpointer.checkpoint().unwrap();
                }
                insert_p(writer, id, next..next + 50);
                next += 50;
            }
            for s in [&a, &b] {
                assert_eq!(s.snapshot().unwrap().cardinality(id), next as u64);
            }
        }
        drop(a);
        drop(b);
        let storage = Storage::open(Some(&path), StorageConfig::default()).unwrap();
        let version = storage.snapshot().unwrap();
        assert_eq!(version.cardinality(id), next as u64);
        let table = version.node_table(id).unwrap();
        let mut lookup = table.pk_lookup(&storage.pager).unwrap();
        for k in [0, 1, next / 2, next - 1] {
            assert!(
                lookup
                    .lookup(&kith_common::Value::Int64(k))
                    .unwrap()
                    .is_some(),
                "key {k}"
            );
        }
    }

    #[test]
    fn merged_pending_frees_wait_for_the_newest_and_coalesce() {
        let run = |first, count| PageRun { first, count };
        let mut freed = vec![
            (3, vec![run(10, 2)]),
            (5, vec![run(20, 1)]),
            (6, vec![run(21, 4), run(2, 1)]),
        ];
        crate::storage::merge_pending(&mut freed);
        assert_eq!(
            freed,
            vec![(3, vec![run(10, 2)]), (6, vec![run(2, 1), run(20, 5)])]
        );
    }

    #[test]
    fn an_older_metadata_format_opens_and_is_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let path = committed_once(&dir);
        // Format 6: the same encoding without the freed list (its count, 8 bytes).
        rewrite_header(&path, 6, 8);
        let read_only = StorageConfig {
            read_only: true,
            ..StorageConfig::default()
        };
        let storage = Storage::open(Some(&path), read_only.clone()).unwrap();
        assert_eq!(storage.snapshot().unwrap().seq, 1);
        assert_eq!(storage.header_version().unwrap().unwrap().1, 6);
        drop(storage);
        // A read-write open rewrites it in the current format, which older
        // builds refuse, so none opens the database beside a newer one.
        let storage = Storage::open(Some(&path), StorageConfig::default()).unwrap();
        assert_eq!(storage.snapshot().unwrap().seq, 1);
        let (_, format) = storage.header_version().unwrap().unwrap();
        assert_eq!(format, METADATA_FORMAT);
    }

    #[test]
    fn a_newer_metadata_format_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = committed_once(&dir);
        rewrite_header(&path, METADATA_FORMAT + 1, 0);
        let before = std::fs::read(&path).unwrap();
        let err = Storage::open(Some(&path), StorageConfig::default())
            .err()
            .unwrap();
        assert!(
            err.message.contains("unsupported metadata format"),
            "{}",
            err.message
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}
