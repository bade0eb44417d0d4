//! [`Wal`]: the append-only write-ahead-log file.
//!
//! ```text
//!  frame:  +-------------+-------------+------------------+
//!          | len u32 LE  | sum u32 LE  | payload[len]     |
//!          +-------------+-------------+------------------+
//!  sum: the low 32 bits of XXH3-64 of the payload seeded with the length, so a
//!  damaged length is caught too. (Not CRC-32: commit records carry page images,
//!  tens of KiB each, and a byte-table CRC cost 3 instructions per byte there.)
//! ```
//!
//! Frames are only appended; a frame counts once `sync` returns after it. A crash can
//! leave a torn or garbage tail: [`Wal::read_records`] returns the longest prefix of
//! complete, checksum-valid frames and cuts the rest off, so the next append starts on a
//! clean boundary. What the payloads mean is the storage layer's business.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind as IoErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use kith_common::{Error, Result};
use parking_lot::Mutex;

use crate::data_file::{io_error, read_at_most, sync_parent_dir};

pub const FRAME_HEADER_BYTES: usize = 8;

/// The checksum of a frame: covers the payload and, through the seed, its length.
fn frame_sum(payload: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64_with_seed(payload, payload.len() as u64) as u32
}
/// Largest payload one frame may carry; bigger lengths read back are treated as garbage.
pub const RECORD_BYTES_MAX: usize = 1 << 30;

pub struct Wal {
    file: File,
    path: PathBuf,
    /// The file could only be opened read-only: records are readable, nothing is written.
    read_only: bool,
    /// End of the last complete frame; appends go here. The mutex also orders appends.
    end_bytes: Mutex<u64>,
}

impl Wal {
    /// Opens the log, creating it if missing. Falls back to read-only when the file
    /// exists but cannot be opened for writing (a read-only database directory).
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
        if !existed && !read_only {
            // A commit is durable once its frame is synced; the file's directory entry
            // must be durable before that, or a power loss could lose the whole log.
            sync_parent_dir(path)?;
        }
        let len_bytes = file
            .metadata()
            .map_err(|e| io_error(path, "stat", &e))?
            .len();
        Ok(Wal {
            file,
            path: path.to_path_buf(),
            read_only,
            end_bytes: Mutex::new(len_bytes),
        })
    }

    /// Appends one frame (not durable until [`Wal::sync`]).
    pub fn append(&self, payload: &[u8]) -> Result<()> {
        if self.read_only {
            return Err(Error::io(format!(
                "cannot append to read-only log '{}'",
                self.path.display()
            )));
        }
        if payload.len() > RECORD_BYTES_MAX {
            return Err(Error::internal(format!(
                "log record of {} bytes exceeds the maximum of {RECORD_BYTES_MAX}",
                payload.len()
            )));
        }
        let len_le = (payload.len() as u32).to_le_bytes();
        let mut frame = Vec::with_capacity(FRAME_HEADER_BYTES + payload.len());
        frame.extend_from_slice(&len_le);
        frame.extend_from_slice(&frame_sum(payload).to_le_bytes());
        frame.extend_from_slice(payload);
        let mut end = self.end_bytes.lock();
        // A failed write leaves `end` alone, so the next append overwrites the partial frame.
        self.file
            .write_all_at(&frame, *end)
            .map_err(|e| io_error(&self.path, "append to", &e))?;
        *end += frame.len() as u64;
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

    /// Every complete, checksum-valid frame from the start. Stops without error at the
    /// first torn or corrupt frame and truncates the file there.
    pub fn read_records(&self) -> Result<Vec<Vec<u8>>> {
        self.read_valid_prefix(true)
    }

    /// [`Wal::read_records`] for a reader that may not write: the torn tail stays.
    pub fn read_records_untouched(&self) -> Result<Vec<Vec<u8>>> {
        self.read_valid_prefix(false)
    }

    fn read_valid_prefix(&self, truncate: bool) -> Result<Vec<Vec<u8>>> {
        let mut end = self.end_bytes.lock();
        let file_bytes = self
            .file
            .metadata()
            .map_err(|e| io_error(&self.path, "stat", &e))?
            .len();
        let mut records = Vec::new();
        let mut offset_bytes = 0u64;
        while let Some(payload) = self.read_frame(offset_bytes, file_bytes)? {
            offset_bytes += (FRAME_HEADER_BYTES + payload.len()) as u64;
            records.push(payload);
        }
        if offset_bytes < file_bytes && truncate && !self.read_only {
            self.file
                .set_len(offset_bytes)
                .and_then(|()| self.file.sync_data())
                .map_err(|e| io_error(&self.path, "truncate", &e))?;
        }
        *end = offset_bytes;
        Ok(records)
    }

    /// The frames in `[from_bytes, to_bytes)`, as another process published them: never
    /// truncates. `None` when the range does not hold whole valid frames (the log was
    /// emptied or rewritten meanwhile: the caller looks at the commit point again).
    pub fn read_range(&self, from_bytes: u64, to_bytes: u64) -> Result<Option<Vec<Vec<u8>>>> {
        let file_bytes = self
            .file
            .metadata()
            .map_err(|e| io_error(&self.path, "stat", &e))?
            .len();
        if to_bytes > file_bytes || from_bytes > to_bytes {
            return Ok(None);
        }
        let mut records = Vec::new();
        let mut offset_bytes = from_bytes;
        while offset_bytes < to_bytes {
            let Some(payload) = self.read_frame(offset_bytes, to_bytes)? else {
                return Ok(None);
            };
            offset_bytes += (FRAME_HEADER_BYTES + payload.len()) as u64;
            records.push(payload);
        }
        Ok(Some(records))
    }

    /// Makes `end_bytes` the end of the log, cutting off what lies past it (a record a
    /// writer that died appended but never published). For the writer only.
    pub fn set_end(&self, end_bytes: u64) -> Result<()> {
        let mut end = self.end_bytes.lock();
        let file_bytes = self
            .file
            .metadata()
            .map_err(|e| io_error(&self.path, "stat", &e))?
            .len();
        if file_bytes > end_bytes && !self.read_only {
            self.file
                .set_len(end_bytes)
                .map_err(|e| io_error(&self.path, "truncate", &e))?;
        }
        *end = end_bytes;
        Ok(())
    }

    /// The frame at `offset_bytes`, or `None` if it is incomplete or fails its checksum.
    fn read_frame(&self, offset_bytes: u64, file_bytes: u64) -> Result<Option<Vec<u8>>> {
        if offset_bytes + FRAME_HEADER_BYTES as u64 > file_bytes {
            return Ok(None);
        }
        let mut frame_header = [0u8; FRAME_HEADER_BYTES];
        let read = read_at_most(&self.file, &mut frame_header, offset_bytes)
            .map_err(|e| io_error(&self.path, "read", &e))?;
        if read < FRAME_HEADER_BYTES {
            return Ok(None);
        }
        let len_le: [u8; 4] = frame_header[0..4].try_into().expect("4 bytes");
        let len_bytes = u32::from_le_bytes(len_le) as usize;
        let stored_crc = u32::from_le_bytes(frame_header[4..8].try_into().expect("4 bytes"));
        let payload_at = offset_bytes + FRAME_HEADER_BYTES as u64;
        if len_bytes > RECORD_BYTES_MAX || payload_at + len_bytes as u64 > file_bytes {
            return Ok(None);
        }
        let mut payload = vec![0u8; len_bytes];
        let read = read_at_most(&self.file, &mut payload, payload_at)
            .map_err(|e| io_error(&self.path, "read", &e))?;
        if read < len_bytes {
            return Ok(None);
        }
        Ok((frame_sum(&payload) == stored_crc).then_some(payload))
    }

    /// Empties the log (after a checkpoint) durably.
    pub fn reset(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::io(format!(
                "cannot reset read-only log '{}'",
                self.path.display()
            )));
        }
        let mut end = self.end_bytes.lock();
        self.file
            .set_len(0)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| io_error(&self.path, "truncate", &e))?;
        *end = 0;
        Ok(())
    }

    /// Bytes of complete frames (plus, before the first `read_records`, any tail).
    pub fn size_bytes(&self) -> u64 {
        *self.end_bytes.lock()
    }
}
