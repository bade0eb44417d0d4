//! Opening and locking files, and positioned reads that tolerate a short file.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind as IoErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use kith_common::{Error, Result};

/// Opens (creating it when `create`) and `flock`s a file shared. Every KithDB process
/// that opens the database holds this shared lock (who may write is decided by the
/// shared file's writer lock); it keeps out builds older than the multi-process
/// format, which took it exclusively to write. A network file system is refused: its
/// page cache and locks are not coherent between machines.
pub fn open_locked(path: &Path, read_only: bool, create: bool) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(!read_only)
        .create(create && !read_only)
        .truncate(false)
        .open(path)
        .map_err(|e| io_error(path, "open", &e))?;
    refuse_network_fs(&file, path)?;
    // SAFETY: the descriptor is owned by `file` and stays open for the call; flock has no
    // memory-safety preconditions.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == IoErrorKind::WouldBlock {
            return Err(Error::io(format!(
                "database file '{}' is locked by another process (an older KithDB build, which opens a database in one process only)",
                path.display()
            )));
        }
        return Err(io_error(path, "lock", &err));
    }
    Ok(file)
}

/// File systems whose caches are not coherent between machines (statfs magic numbers).
const NETWORK_FS: [(i64, &str); 4] = [
    (0x6969, "NFS"),
    (0x517B, "SMB"),
    (0xFF53_4D42, "CIFS"),
    (0xFE53_4D42, "SMB2"),
];

fn refuse_network_fs(file: &File, path: &Path) -> Result<()> {
    // SAFETY: all-zero is a valid statfs; fstatfs fills it for a valid descriptor.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `file` owns the descriptor; `st` outlives the call.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
        return Ok(());
    }
    let kind = st.f_type as i64;
    if let Some((_, name)) = NETWORK_FS.iter().find(|(magic, _)| *magic == kind) {
        return Err(Error::io(format!(
            "database file '{}' is on a network file system ({name}); KithDB shares a database between processes through memory-mapped state and file locks that such file systems do not keep coherent, so it refuses to open it there",
            path.display()
        )));
    }
    Ok(())
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
