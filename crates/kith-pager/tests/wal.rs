//! WAL framing, crash tails, reset, and files of the old format.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use kith_pager::{Wal, WAL_HEADER_BYTES as H};

#[test]
fn append_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap(), Vec::<Vec<u8>>::new());
    wal.append(b"one").unwrap();
    wal.append(b"x").unwrap();
    wal.append(&[7u8; 10_000]).unwrap();
    wal.sync().unwrap();
    assert_eq!(wal.size_bytes(), H + 3 * 8 + 3 + 1 + 10_000);
    // Empty records are refused (zeros past the end read as one).
    assert!(wal.append(b"").is_err());
    drop(wal);
    let wal = Wal::open(&path).unwrap();
    let records = wal.read_records().unwrap();
    assert_eq!(
        records,
        vec![b"one".to_vec(), b"x".to_vec(), vec![7u8; 10_000]]
    );
}

#[test]
fn appends_overwrite_a_preallocated_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    wal.append(b"first").unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len >= 1 << 20, "grown ahead: {len}");
    for _ in 0..100 {
        wal.append(&[1u8; 1000]).unwrap();
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
}

#[test]
fn torn_tail_is_ignored_and_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    wal.append(b"kept").unwrap();
    wal.append(b"torn record").unwrap();
    wal.sync().unwrap();
    let whole = wal.size_bytes();
    drop(wal);
    let kept_end = H + 12;
    for cut in [whole - 1, whole - 11, whole - 15, kept_end + 1] {
        // Tear the second frame: zero its bytes from `cut` on.
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&vec![0u8; (whole - cut) as usize], cut)
            .unwrap();
        drop(file);
        let wal = Wal::open(&path).unwrap();
        assert_eq!(
            wal.read_records().unwrap(),
            vec![b"kept".to_vec()],
            "cut at {cut}"
        );
        assert_eq!(wal.size_bytes(), kept_end);
        // Appends continue on a clean frame boundary.
        wal.append(b"torn record").unwrap();
        wal.sync().unwrap();
        drop(wal);
        let wal = Wal::open(&path).unwrap();
        assert_eq!(wal.read_records().unwrap().len(), 2);
    }
}

#[test]
fn read_only_reader_leaves_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    wal.append(b"kept").unwrap();
    wal.sync().unwrap();
    let end = wal.size_bytes();
    drop(wal);
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(b"garbage!", end).unwrap();
    drop(file);
    let before = std::fs::read(&path).unwrap();
    let wal = Wal::open(&path).unwrap();
    assert_eq!(
        wal.read_records_untouched().unwrap(),
        vec![b"kept".to_vec()]
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn corrupt_checksum_stops_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    wal.append(b"first").unwrap();
    wal.append(b"second").unwrap();
    wal.append(b"third").unwrap();
    drop(wal);
    // Flip a payload byte of "second".
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    file.write_all_at(b"X", H + 13 + 8).unwrap();
    drop(file);
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap(), vec![b"first".to_vec()]);
    assert_eq!(wal.size_bytes(), H + 13);
}

#[test]
fn garbage_file_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    std::fs::write(&path, [0xFFu8; 64]).unwrap();
    let wal = Wal::open(&path).unwrap();
    assert!(wal.read_records().unwrap().is_empty());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn reset_starts_a_new_round_whose_reader_ignores_the_old_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    wal.append(b"a").unwrap();
    wal.append(b"b").unwrap();
    wal.append(b"c").unwrap();
    wal.sync().unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    wal.reset().unwrap();
    assert_eq!(wal.size_bytes(), H);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        len,
        "no truncation"
    );
    wal.append(b"d").unwrap();
    wal.sync().unwrap();
    drop(wal);
    // "b" and "c" are still in the file after "d", with the old salt.
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap(), vec![b"d".to_vec()]);
    assert_eq!(
        wal.read_range(0, wal.size_bytes()).unwrap(),
        Some(vec![b"d".to_vec()])
    );
}

/// Builds before the salted format wrote frames from byte 0, sums seeded with
/// the length only, and truncated on reset.
#[test]
fn old_format_file_is_read_then_converted_by_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let mut bytes = Vec::new();
    for payload in [&b"old one"[..], &b"old two"[..]] {
        let sum = xxhash_rust::xxh3::xxh3_64_with_seed(payload, payload.len() as u64) as u32;
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&sum.to_le_bytes());
        bytes.extend_from_slice(payload);
    }
    std::fs::write(&path, &bytes).unwrap();
    let wal = Wal::open(&path).unwrap();
    assert_eq!(
        wal.read_records().unwrap(),
        vec![b"old one".to_vec(), b"old two".to_vec()]
    );
    wal.append(b"three").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap().len(), 3);
    wal.reset().unwrap();
    wal.append(b"new").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap(), vec![b"new".to_vec()]);
}

/// A writer that died left frames past the published end; the next writer
/// cuts them all, so none lines up behind its own frames and comes back
/// in a recovery.
#[test]
fn next_writer_cuts_every_unpublished_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let dead = Wal::open(&path).unwrap();
    dead.append(b"published!").unwrap();
    let published = dead.size_bytes();
    dead.append(b"unpublish1").unwrap();
    dead.append(b"unpublish2").unwrap();
    dead.sync().unwrap();
    drop(dead);
    let next = Wal::open(&path).unwrap();
    next.set_end(published, true).unwrap();
    next.append(b"next write").unwrap();
    next.sync().unwrap();
    drop(next);
    let wal = Wal::open(&path).unwrap();
    assert_eq!(
        wal.read_records().unwrap(),
        vec![b"published!".to_vec(), b"next write".to_vec()]
    );
}

/// A checkpoint that published an empty log and died before emptying it:
/// the next writer starts a new round, and the old frames stay dead.
#[test]
fn next_writer_of_an_empty_round_starts_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let old = Wal::open(&path).unwrap();
    for _ in 0..3 {
        old.append(b"old record").unwrap();
    }
    old.sync().unwrap();
    drop(old);
    let next = Wal::open(&path).unwrap();
    next.set_end(0, true).unwrap();
    next.append(b"new record").unwrap();
    next.sync().unwrap();
    drop(next);
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap(), vec![b"new record".to_vec()]);
}
