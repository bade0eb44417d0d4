//! Opening and locking files, and positioned reads that tolerate a short file.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind as IoErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use kith_common::{Error, Result};

/// Opens (creating it when `create`) and `flock`s a file: exclusive when writable, shared
/// when read-only. The lock belongs to the open file description, so a second open of
/// the same file conflicts even inside one process; it is released when the file closes.
pub fn open_locked(path: &Path, read_only: bool, create: bool) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(!read_only)
        .create(create && !read_only)
        .truncate(false)
        .open(path)
        .map_err(|e| io_error(path, "open", &e))?;
    let mode = if read_only {
        libc::LOCK_SH
    } else {
        libc::LOCK_EX
    };
    // SAFETY: the descriptor is owned by `file` and stays open for the call; flock has no
    // memory-safety preconditions.
    let rc = unsafe { libc::flock(file.as_raw_fd(), mode | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == IoErrorKind::WouldBlock {
            return Err(Error::io(format!(
                "database file '{}' is locked by another process",
                path.display()
            )));
        }
        return Err(io_error(path, "lock", &err));
    }
    Ok(file)
}

/// fsyncs the directory holding `path`, so a file just created there survives a power
/// loss (an fsync of the file itself does not cover its directory entry). File systems
/// that cannot sync a directory (EINVAL) are not an error.
pub fn sync_parent_dir(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let synced = File::open(parent).and_then(|dir| dir.sync_all());
    match synced {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                IoErrorKind::InvalidInput | IoErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(io_error(parent, "fsync the directory", &e)),
    }
}

pub fn io_error(path: &Path, action: &str, err: &std::io::Error) -> Error {
    Error::io(format!("cannot {action} '{}': {err}", path.display()))
}

/// Reads into `buf` from `offset_bytes`, stopping early at end of file; returns the bytes read.
pub fn read_at_most(file: &File, buf: &mut [u8], offset_bytes: u64) -> std::io::Result<usize> {
    let mut done_bytes = 0;
    while done_bytes < buf.len() {
        match file.read_at(&mut buf[done_bytes..], offset_bytes + done_bytes as u64) {
            Ok(0) => break,
            Ok(n) => done_bytes += n,
            Err(e) if e.kind() == IoErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done_bytes)
}
