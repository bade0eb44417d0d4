//! [`Wal`]: the write-ahead-log file.
//!
//! ```text
//!  file:   +-----------------------------------------+---------+---------+--- - -
//!          | magic "KWAL" u32 | version u32 | salt u64 | frame   | frame   | (old bytes)
//!          +-----------------------------------------+---------+---------+--- - -
//!  frame:  +-------------+-------------+------------------+
//!          | len u32 LE  | sum u32 LE  | payload[len]     |
//!          +-------------+-------------+------------------+
//!  sum: the low 32 bits of XXH3-64 of the payload seeded with the length and the
//!  salt, so a damaged length, or a frame of an earlier round of the file, fails it.
//!  (Not CRC-32: commit records carry page images, tens of KiB each, and a
//!  byte-table CRC cost 3 instructions per byte there.)
//! ```
//!
//! The file is written in place and never shrinks: it is grown in zero-filled steps
//! ahead of the appends, and a reset (after a checkpoint) writes a new random salt
//! instead of truncating, after which the old frames fail their checksums. So an
//! append changes no file size and its fdatasync flushes no metadata (on ext4 a
//! growing log cost twice as much per commit, and made the journal wait for the data
//! file's pages too). Frames count once `sync` returns after them. A crash can leave
//! a torn or garbage tail: [`Wal::read_records`] returns the longest prefix of
//! complete frames with the current salt and blanks the next frame header, so the next
//! append starts on a clean boundary. A file without the header (written by builds
//! before this format) has frames from byte 0 and no salt; its first reset converts
//! it. What the payloads mean is the storage layer's business.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind as IoErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use kith_common::{Error, Result};
use parking_lot::Mutex;

use crate::data_file::{io_error, read_at_most, sync_parent_dir};

const MAGIC: u32 = 0x4C41_574B; // "KWAL"; more than any frame length an old file holds
const VERSION: u32 = 1;
/// Bytes of the file header; the first frame starts here.
pub const HEADER_BYTES: u64 = 16;
/// The file grows ahead of the appends by this much.
const GROW_BYTES: u64 = 4 << 20;

pub const FRAME_HEADER_BYTES: usize = 8;

/// The checksum of a frame: covers the payload and, through the seed, its length and
/// the file's salt (none in an old-format file).
fn frame_sum(payload: &[u8], salt: Option<u64>) -> u32 {
    let seed = payload.len() as u64 ^ salt.unwrap_or(0);
    xxhash_rust::xxh3::xxh3_64_with_seed(payload, seed) as u32
}

/// Where frames start and how they are salted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Layout {
    /// `None`: an old-format file, frames from byte 0.
    salt: Option<u64>,
}

impl Layout {
    fn start(&self) -> u64 {
        if self.salt.is_some() {
            HEADER_BYTES
        } else {
            0
        }
    }
}

/// A salt nobody can guess (so no payload embeds a valid frame of the next round).
fn random_salt() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

fn encode_header(salt: u64) -> [u8; HEADER_BYTES as usize] {
    let mut h = [0u8; HEADER_BYTES as usize];
    h[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    h[4..8].copy_from_slice(&VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&salt.to_le_bytes());
    h
}
/// Largest payload one frame may carry; bigger lengths read back are treated as garbage.
pub const RECORD_BYTES_MAX: usize = 1 << 30;

pub struct Wal {
    file: File,
    path: PathBuf,
    /// The file could only be opened read-only: records are readable, nothing is written.
    read_only: bool,
    /// The mutex also orders appends.
    state: Mutex<WalState>,
}

struct WalState {
    /// End of the last complete frame; appends go here.
    end_bytes: u64,
    layout: Layout,
    /// Bytes the file is known to hold (zero-filled past the frames).
    file_bytes: u64,
}

impl Wal {
    /// Opens the log, creating it (with a header) if missing. Falls back to read-only
    /// when the file exists but cannot be opened for writing (a read-only database
    /// directory).
    pub fn open(path: &Path) -> Result<Wal> {
        let existed = path.exists();
        let writable = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path);
        let (file, read_only) = match writable {
            Ok(file) => (file, false),
            Err(e)
                if matches!(
                    e.kind(),
                    IoErrorKind::PermissionDenied | IoErrorKind::ReadOnlyFilesystem
                ) =>
            {
                (
                    File::open(path).map_err(|e| io_error(path, "open", &e))?,
                    true,
                )
            }
            Err(e) => return Err(io_error(path, "open", &e)),
        };
        let wal = Wal {
            file,
            path: path.to_path_buf(),
            read_only,
            state: Mutex::new(WalState {
                end_bytes: 0,
                layout: Layout { salt: None },
                file_bytes: 0,
            }),
        };
        {
            let mut state = wal.state.lock();
            state.file_bytes = wal.file_len()?;
            match wal.read_layout()? {
                Some(layout) => state.layout = layout,
                None if state.file_bytes == 0 && !read_only => {
                    wal.write_header(&mut state, random_salt())?;
                }
                None => {}
            }
            state.end_bytes = state.layout.start();
        }
        if !existed && !read_only {
            // A commit is durable once its frame is synced; the file's directory entry
            // must be durable before that, or a power loss could lose the whole log.
            sync_parent_dir(path)?;
        }
        Ok(wal)
    }

    fn file_len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| io_error(&self.path, "stat", &e))?
            .len())
    }

    /// The header's layout; `None` for an empty or old-format file.
    fn read_layout(&self) -> Result<Option<Layout>> {
        let mut h = [0u8; HEADER_BYTES as usize];
        let read =
            read_at_most(&self.file, &mut h, 0).map_err(|e| io_error(&self.path, "read", &e))?;
        let word = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        if read < 4 || word(0) != MAGIC {
            return Ok(None);
        }
        if read < HEADER_BYTES as usize || word(4) != VERSION {
            return Err(Error::corruption(format!(
                "write-ahead log '{}' has an unknown header (version {}); written by a newer build?",
                self.path.display(),
                word(4)
            )));
        }
        let mut salt = [0u8; 8];
        salt.copy_from_slice(&h[8..16]);
        Ok(Some(Layout {
            salt: Some(u64::from_le_bytes(salt)),
        }))
    }

    /// Starts a new round of the file: a header with `salt`, made durable; frames of
    /// earlier rounds fail their checksums from now on.
    fn write_header(&self, state: &mut WalState, salt: u64) -> Result<()> {
        self.file
            .write_all_at(&encode_header(salt), 0)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| io_error(&self.path, "write the header of", &e))?;
        state.layout = Layout { salt: Some(salt) };
        state.end_bytes = HEADER_BYTES;
        state.file_bytes = state.file_bytes.max(HEADER_BYTES);
        Ok(())
    }

    /// Appends one frame (not durable until [`Wal::sync`]).
    pub fn append(&self, payload: &[u8]) -> Result<()> {
        if self.read_only {
            return Err(Error::io(format!(
                "cannot append to read-only log '{}'",
                self.path.display()
            )));
        }
        if payload.is_empty() || payload.len() > RECORD_BYTES_MAX {
            return Err(Error::internal(format!(
                "log record of {} bytes is empty or exceeds the maximum of {RECORD_BYTES_MAX}",
                payload.len()
            )));
        }
        let mut state = self.state.lock();
        let mut frame = Vec::with_capacity(FRAME_HEADER_BYTES + payload.len());
        frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        frame.extend_from_slice(&frame_sum(payload, state.layout.salt).to_le_bytes());
        frame.extend_from_slice(payload);
        let end = state.end_bytes + frame.len() as u64;
        if state.layout.salt.is_some() && end > state.file_bytes {
            self.grow(&mut state, end)?;
        }
        // A failed write leaves `end` alone, so the next append overwrites the partial frame.
        self.file
            .write_all_at(&frame, state.end_bytes)
            .map_err(|e| io_error(&self.path, "append to", &e))?;
        state.end_bytes = end;
        Ok(())
    }

    /// Zero-fills the file past `need` bytes, a step at a time, so appends overwrite
    /// bytes the file already has (the zeros are synced with the next commit's sync).
    fn grow(&self, state: &mut WalState, need: u64) -> Result<()> {
        let target = need.next_multiple_of(GROW_BYTES);
        let zeros = vec![0u8; 1 << 20];
        let mut at = state.file_bytes;
        while at < target {
            let n = zeros.len().min((target - at) as usize);
            self.file
                .write_all_at(&zeros[..n], at)
                .map_err(|e| io_error(&self.path, "grow", &e))?;
            at += n as u64;
        }
        state.file_bytes = target;
        Ok(())
    }

    /// Makes every appended frame durable (fdatasync).
    pub fn sync(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.file
            .sync_data()
            .map_err(|e| io_error(&self.path, "fsync", &e))
    }

    /// Every complete, checksum-valid frame of the current round. Stops without error
    /// at the first torn or corrupt frame and makes sure the next append starts there
    /// (blanking the frame header found there; an old-format file is truncated).
    pub fn read_records(&self) -> Result<Vec<Vec<u8>>> {
        self.read_valid_prefix(true)
    }

    /// [`Wal::read_records`] for a reader that may not write: the torn tail stays.
    pub fn read_records_untouched(&self) -> Result<Vec<Vec<u8>>> {
        self.read_valid_prefix(false)
    }

    fn read_valid_prefix(&self, cut: bool) -> Result<Vec<Vec<u8>>> {
        let mut state = self.state.lock();
        let file_bytes = self.file_len()?;
        state.file_bytes = file_bytes;
        let layout = state.layout;
        let mut records = Vec::new();
        let mut offset_bytes = layout.start();
        while let Some(payload) = self.read_frame(offset_bytes, file_bytes, layout)? {
            offset_bytes += (FRAME_HEADER_BYTES + payload.len()) as u64;
            records.push(payload);
        }
        if cut && !self.read_only && offset_bytes < file_bytes {
            self.cut_at(offset_bytes, layout)?;
        }
        state.end_bytes = offset_bytes;
        Ok(records)
    }

    /// Makes `offset_bytes` the durable end: truncates an old-format file, blanks the
    /// frame header there in a salted one.
    fn cut_at(&self, offset_bytes: u64, layout: Layout) -> Result<()> {
        let result = if layout.salt.is_some() {
            self.file
                .write_all_at(&[0u8; FRAME_HEADER_BYTES], offset_bytes)
        } else {
            self.file.set_len(offset_bytes)
        };
        result
            .and_then(|()| self.file.sync_data())
            .map_err(|e| io_error(&self.path, "cut the torn tail of", &e))
    }

    /// The frames in `[from_bytes, to_bytes)`, as another process published them: never
    /// writes. `None` when the range does not hold whole valid frames of the current
    /// round (the log was reset meanwhile: the caller looks at the commit point again).
    pub fn read_range(&self, from_bytes: u64, to_bytes: u64) -> Result<Option<Vec<Vec<u8>>>> {
        let file_bytes = self.file_len()?;
        if to_bytes > file_bytes || from_bytes > to_bytes {
            return Ok(None);
        }
        // Another process may have started a new round since this one looked.
        let layout = self.read_layout()?.unwrap_or(Layout { salt: None });
        let from_bytes = from_bytes.max(layout.start());
        let mut records = Vec::new();
        let mut offset_bytes = from_bytes;
        while offset_bytes < to_bytes {
            let Some(payload) = self.read_frame(offset_bytes, to_bytes, layout)? else {
                return Ok(None);
            };
            offset_bytes += (FRAME_HEADER_BYTES + payload.len()) as u64;
            records.push(payload);
        }
        Ok(Some(records))
    }

    /// Makes `end_bytes` the end of the log for the writer. `taking_over`: another open
    /// may have written since this one last did, so records a writer that died appended
    /// but never published are cut off durably, before anything reuses the pages they
    /// name. A writer continuing its own log at its own end does nothing.
    pub fn set_end(&self, end_bytes: u64, taking_over: bool) -> Result<()> {
        let mut state = self.state.lock();
        if !taking_over && state.end_bytes == end_bytes.max(state.layout.start()) {
            return Ok(());
        }
        if let Some(layout) = self.read_layout()? {
            state.layout = layout;
        } else if state.layout.salt.is_some() && end_bytes <= HEADER_BYTES {
            // Emptied by a process that died before writing the header: nothing to keep.
            state.layout = Layout { salt: None };
        }
        let end_bytes = end_bytes.max(state.layout.start());
        state.file_bytes = self.file_len()?;
        if !self.read_only {
            self.cut_unpublished(&mut state, end_bytes)?;
        }
        state.end_bytes = end_bytes;
        Ok(())
    }

    /// Invalidates every frame of the current round past `end_bytes` (a dead writer's
    /// unpublished records): blanking only the first would leave later ones to line up
    /// behind the next writer's frames and be read back by a recovery. An empty round
    /// with frames in it (a checkpoint that died before emptying the log) starts a new
    /// round instead.
    fn cut_unpublished(&self, state: &mut WalState, end_bytes: u64) -> Result<()> {
        let layout = state.layout;
        if layout.salt.is_none() {
            let file_bytes = self.file_len()?;
            if file_bytes > end_bytes {
                self.cut_at(end_bytes, layout)?;
            }
            state.file_bytes = self.file_len()?;
            return Ok(());
        }
        let file_bytes = state.file_bytes;
        let mut stale = Vec::new();
        let mut at = end_bytes;
        while let Some(payload) = self.read_frame(at, file_bytes, layout)? {
            stale.push(at);
            at += (FRAME_HEADER_BYTES + payload.len()) as u64;
        }
        // Bytes that are no valid frame of this round (zeros, a torn frame, earlier
        // rounds) fail every read already.
        let Some((&first, later)) = stale.split_first() else {
            return Ok(());
        };
        if end_bytes <= HEADER_BYTES {
            return self.write_header(state, random_salt());
        }
        for &offset in later.iter().rev() {
            self.file
                .write_all_at(&[0u8; FRAME_HEADER_BYTES], offset)
                .map_err(|e| io_error(&self.path, "cut the unpublished tail of", &e))?;
        }
        self.cut_at(first, layout)
    }

    /// The frame at `offset_bytes`, or `None` if it is incomplete or fails its checksum.
    fn read_frame(
        &self,
        offset_bytes: u64,
        file_bytes: u64,
        layout: Layout,
    ) -> Result<Option<Vec<u8>>> {
        if offset_bytes + FRAME_HEADER_BYTES as u64 > file_bytes {
            return Ok(None);
        }
        let mut frame_header = [0u8; FRAME_HEADER_BYTES];
        let read = read_at_most(&self.file, &mut frame_header, offset_bytes)
            .map_err(|e| io_error(&self.path, "read", &e))?;
        if read < FRAME_HEADER_BYTES {
            return Ok(None);
        }
        let word = |at: usize| {
            u32::from_le_bytes([
                frame_header[at],
                frame_header[at + 1],
                frame_header[at + 2],
                frame_header[at + 3],
            ])
        };
        let len_bytes = word(0) as usize;
        let stored_sum = word(4);
        let payload_at = offset_bytes + FRAME_HEADER_BYTES as u64;
        // Zeros past the end of a salted file read as an empty frame: never valid there
        // (the storage layer writes no empty records).
        let blank = len_bytes == 0 && layout.salt.is_some();
        if blank || len_bytes > RECORD_BYTES_MAX || payload_at + len_bytes as u64 > file_bytes {
            return Ok(None);
        }
        let mut payload = vec![0u8; len_bytes];
        let read = read_at_most(&self.file, &mut payload, payload_at)
            .map_err(|e| io_error(&self.path, "read", &e))?;
        if read < len_bytes {
            return Ok(None);
        }
        Ok((frame_sum(&payload, layout.salt) == stored_sum).then_some(payload))
    }

    /// Empties the log (after a checkpoint) durably: a new round with a new salt; the
    /// file keeps its size.
    pub fn reset(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::io(format!(
                "cannot reset read-only log '{}'",
                self.path.display()
            )));
        }
        let mut state = self.state.lock();
        self.write_header(&mut state, random_salt())
    }

    /// Where the next frame goes: the end of the complete frames.
    pub fn size_bytes(&self) -> u64 {
        self.state.lock().end_bytes
    }
}
