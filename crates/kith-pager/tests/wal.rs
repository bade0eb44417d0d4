//! WAL framing, crash tails and reset.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use kith_pager::Wal;

#[test]
fn append_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap(), Vec::<Vec<u8>>::new());
    wal.append(b"one").unwrap();
    wal.append(b"").unwrap();
    wal.append(&[7u8; 10_000]).unwrap();
    wal.sync().unwrap();
    assert_eq!(wal.size_bytes(), 3 * 8 + 3 + 10_000);
    drop(wal);
    let wal = Wal::open(&path).unwrap();
    let records = wal.read_records().unwrap();
    assert_eq!(
        records,
        vec![b"one".to_vec(), Vec::new(), vec![7u8; 10_000]]
    );
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
    for cut in [whole - 1, whole - 11, whole - 15, 12 + 1] {
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(cut).unwrap();
        drop(file);
        let wal = Wal::open(&path).unwrap();
        assert_eq!(
            wal.read_records().unwrap(),
            vec![b"kept".to_vec()],
            "cut at {cut}"
        );
        assert_eq!(wal.size_bytes(), 12);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            12,
            "the torn tail is truncated"
        );
        // Appends continue on a clean frame boundary.
        wal.append(b"torn record").unwrap();
        drop(wal);
    }
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
    file.write_all_at(b"X", 13 + 8).unwrap();
    drop(file);
    let wal = Wal::open(&path).unwrap();
    assert_eq!(wal.read_records().unwrap(), vec![b"first".to_vec()]);
    assert_eq!(wal.size_bytes(), 13);
}

#[test]
fn garbage_length_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    std::fs::write(&path, [0xFFu8; 64]).unwrap();
    let wal = Wal::open(&path).unwrap();
    assert!(wal.read_records().unwrap().is_empty());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn reset_empties_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.wal");
    let wal = Wal::open(&path).unwrap();
    wal.append(b"a").unwrap();
    wal.append(b"b").unwrap();
    wal.reset().unwrap();
    assert_eq!(wal.size_bytes(), 0);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    wal.append(b"c").unwrap();
    wal.sync().unwrap();
    assert_eq!(wal.read_records().unwrap(), vec![b"c".to_vec()]);
}
