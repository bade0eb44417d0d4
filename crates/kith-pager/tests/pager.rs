//! Pager and buffer-pool behaviour through the public API.

use std::path::Path;
use std::sync::Arc;

use kith_common::constants::PAGE_SIZE;
use kith_common::ErrorKind;
use kith_pager::{PageIdx, Pager, PagerConfig};

fn config(memory_limit_pages: u64) -> PagerConfig {
    PagerConfig {
        memory_limit_bytes: memory_limit_pages * PAGE_SIZE as u64,
        read_only: false,
        vm_reserve_bytes: 1 << 30,
    }
}

/// Bytes of page `page` in a recognisable pattern.
fn page_bytes(page: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|byte_idx| (page as usize * 31 + byte_idx * 7) as u8)
        .collect()
}

fn open(path: &Path, memory_limit_pages: u64) -> Arc<Pager> {
    Arc::new(Pager::open(path, config(memory_limit_pages)).unwrap())
}

#[test]
fn allocate_write_pin_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let pager = open(&dir.path().join("db"), 64);
    assert_eq!(pager.num_pages(), 2);
    let first = pager.allocate(1).unwrap();
    assert_eq!(first, PageIdx(2));
    pager.write_pages(first, b"hello").unwrap();
    let pin = pager.pin_owned(first, 1).unwrap();
    assert_eq!(pin.len(), PAGE_SIZE);
    assert_eq!(&pin[..5], b"hello");
    assert!(
        pin[5..].iter().all(|&b| b == 0),
        "the last page is zero-padded"
    );
    assert_eq!(pin.as_ptr() as usize % 8, 0);
}

#[test]
fn multi_page_pin_is_contiguous() {
    let dir = tempfile::tempdir().unwrap();
    let pager = open(&dir.path().join("db"), 64);
    let first = pager.allocate(5).unwrap();
    let bytes = page_bytes(first.0, 4 * PAGE_SIZE + 100);
    pager.write_pages(first, &bytes).unwrap();
    assert_eq!(pager.num_pages(), 7);
    let pin = pager.pin_owned(first, 5).unwrap();
    assert_eq!(pin.len(), 5 * PAGE_SIZE);
    assert_eq!(&pin[..bytes.len()], &bytes[..]);
    // A pin of a sub-range of already resident pages sees the same bytes.
    let inner = pager.pin_owned(PageIdx(first.0 + 1), 2).unwrap();
    assert_eq!(&inner[..], &bytes[PAGE_SIZE..3 * PAGE_SIZE]);
}

#[test]
fn eviction_keeps_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let limit_pages = 8;
    let pager = open(&dir.path().join("db"), limit_pages);
    let mut runs = Vec::new();
    for run_idx in 0..50u32 {
        let first = pager.allocate(2).unwrap();
        pager
            .write_pages(first, &page_bytes(first.0 + run_idx, 2 * PAGE_SIZE))
            .unwrap();
        runs.push((first, run_idx));
    }
    for round in 0..3 {
        for &(first, run_idx) in &runs {
            let pin = pager.pin_owned(first, 2).unwrap();
            assert_eq!(
                &pin[..],
                &page_bytes(first.0 + run_idx, 2 * PAGE_SIZE)[..],
                "round {round}"
            );
            assert!(pager.resident_bytes() <= limit_pages * PAGE_SIZE as u64);
        }
    }
}

#[test]
fn everything_pinned_is_out_of_memory() {
    let dir = tempfile::tempdir().unwrap();
    let pager = open(&dir.path().join("db"), 4);
    let first = pager.allocate(8).unwrap();
    pager.write_pages(first, &vec![1u8; 8 * PAGE_SIZE]).unwrap();
    let held = pager.pin_owned(first, 4).unwrap();
    let err = pager.pin_owned(PageIdx(first.0 + 4), 1).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutOfMemory);
    assert!(
        err.message.contains("buffer pool out of memory"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .contains(&format!("limit {} bytes", 4 * PAGE_SIZE)),
        "{}",
        err.message
    );
    let too_big = pager.pin_owned(first, 5).unwrap_err();
    assert_eq!(too_big.kind, ErrorKind::OutOfMemory);
    drop(held);
    // With the pins gone the same request succeeds by evicting.
    let pin = pager.pin_owned(PageIdx(first.0 + 4), 4).unwrap();
    assert!(pin.iter().all(|&b| b == 1));
}

#[test]
fn concurrent_pins_from_many_threads() {
    let dir = tempfile::tempdir().unwrap();
    let pager = open(&dir.path().join("db"), 16);
    let run_pages = 3u32;
    let mut runs = Vec::new();
    for run_idx in 0..40u32 {
        let first = pager.allocate(run_pages).unwrap();
        pager
            .write_pages(first, &page_bytes(run_idx, run_pages as usize * PAGE_SIZE))
            .unwrap();
        runs.push((first, run_idx));
    }
    let runs = Arc::new(runs);
    let workers: Vec<_> = (0..4u32)
        .map(|worker_idx| {
            let pager = Arc::clone(&pager);
            let runs = Arc::clone(&runs);
            std::thread::spawn(move || {
                for step in 0..400usize {
                    let (first, run_idx) = runs[(step * 7 + worker_idx as usize * 13) % runs.len()];
                    let pin = match pager.pin_owned(first, run_pages) {
                        Ok(pin) => pin,
                        // Four threads holding up to 3 pages each may briefly pin 12 of 16.
                        Err(e) if e.kind == ErrorKind::OutOfMemory => continue,
                        Err(e) => panic!("{e:?}"),
                    };
                    assert_eq!(
                        &pin[..],
                        &page_bytes(run_idx, run_pages as usize * PAGE_SIZE)[..]
                    );
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert!(pager.resident_bytes() <= 16 * PAGE_SIZE as u64);
}

#[test]
fn free_list_reuse_and_coalescing() {
    let dir = tempfile::tempdir().unwrap();
    let pager = open(&dir.path().join("db"), 64);
    let a = pager.allocate(2).unwrap();
    let b = pager.allocate(3).unwrap();
    let c = pager.allocate(1).unwrap();
    let _d = pager.allocate(1).unwrap();
    assert_eq!((a, b, c), (PageIdx(2), PageIdx(4), PageIdx(7)));
    pager.free(a, 2);
    pager.free(c, 1);
    pager.free(b, 3);
    assert_eq!(pager.free_runs(), vec![(PageIdx(2), 6)]);
    assert_eq!(pager.allocate(6).unwrap(), PageIdx(2));
    assert_eq!(pager.num_pages(), 9);
    pager.set_free_list(vec![(PageIdx(3), 2), (PageIdx(5), 1)]);
    assert_eq!(pager.free_runs(), vec![(PageIdx(3), 3)]);
    assert_eq!(
        pager.allocate(4).unwrap(),
        PageIdx(9),
        "first fit skips a run that is too small"
    );
}

#[test]
fn rewritten_pages_are_not_served_stale() {
    let dir = tempfile::tempdir().unwrap();
    let pager = open(&dir.path().join("db"), 64);
    let first = pager.allocate(2).unwrap();
    pager.write_pages(first, &[1u8; 2 * PAGE_SIZE]).unwrap();
    drop(pager.pin_owned(first, 2).unwrap());
    pager.free(first, 2);
    let again = pager.allocate(2).unwrap();
    assert_eq!(again, first);
    pager.write_pages(again, &[2u8; PAGE_SIZE + 1]).unwrap();
    let pin = pager.pin_owned(again, 2).unwrap();
    assert!(pin[..=PAGE_SIZE].iter().all(|&b| b == 2));
    assert!(pin[PAGE_SIZE + 1..].iter().all(|&b| b == 0));
    // Writing a pinned page is a bug in the caller and is refused.
    assert_eq!(
        pager.write_pages(again, b"x").unwrap_err().kind,
        ErrorKind::Internal
    );
}

#[test]
fn pins_outside_the_data_pages_are_refused() {
    let pager = Arc::new(Pager::in_memory(config(16)));
    assert!(pager.pin_owned(PageIdx(0), 1).is_err());
    assert!(pager.pin_owned(PageIdx(2), 1).is_err());
    let empty = pager.pin_owned(PageIdx(2), 0).unwrap();
    assert!(empty.is_empty());
}

#[test]
fn header_double_buffer_survives_a_torn_slot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let pager = open(&path, 16);
        assert_eq!(pager.read_header().unwrap(), None);
        pager.write_header(b"first").unwrap();
        pager.write_header(b"second").unwrap();
        assert_eq!(
            pager.read_header().unwrap().as_deref(),
            Some(&b"second"[..])
        );
    }
    // "second" went to slot 1 (generation 2); damage it as a torn write would.
    corrupt(&path, PAGE_SIZE as u64 + 34);
    let pager = open(&path, 16);
    assert_eq!(pager.read_header().unwrap().as_deref(), Some(&b"first"[..]));
    // The next header overwrites the damaged slot, not the good one.
    pager.write_header(b"third").unwrap();
    assert_eq!(pager.read_header().unwrap().as_deref(), Some(&b"third"[..]));
    drop(pager);
    corrupt(&path, PAGE_SIZE as u64 + 34);
    let pager = open(&path, 16);
    assert_eq!(pager.read_header().unwrap().as_deref(), Some(&b"first"[..]));
}

fn corrupt(path: &Path, offset_bytes: u64) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8; 1];
    file.read_exact_at(&mut byte, offset_bytes).unwrap();
    file.write_all_at(&[byte[0] ^ 0xFF], offset_bytes).unwrap();
}

#[test]
fn reopen_keeps_data_and_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let bytes = page_bytes(9, 3 * PAGE_SIZE - 17);
    let first = {
        let pager = open(&path, 16);
        let first = pager.allocate(3).unwrap();
        pager.write_pages(first, &bytes).unwrap();
        pager.sync().unwrap();
        pager.write_header(b"meta").unwrap();
        first
    };
    let pager = open(&path, 16);
    assert_eq!(pager.num_pages(), 5);
    assert_eq!(pager.read_header().unwrap().as_deref(), Some(&b"meta"[..]));
    let pin = pager.pin_owned(first, 3).unwrap();
    assert_eq!(&pin[..bytes.len()], &bytes[..]);
}

#[test]
fn an_exclusive_lock_of_an_older_build_is_refused() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Pager::open(&path, config(16)).unwrap());
    // Builds before the multi-process format locked the file exclusively to write.
    let old = std::fs::File::open(&path).unwrap();
    // SAFETY: a valid descriptor owned by `old`.
    assert_eq!(unsafe { libc::flock(old.as_raw_fd(), libc::LOCK_EX) }, 0);
    let err = Pager::open(&path, config(16)).err().unwrap();
    assert_eq!(err.kind, ErrorKind::Io);
    assert!(
        err.message.contains("is locked by another process"),
        "{}",
        err.message
    );
    drop(old);
    // Several opens of one file coexist (the shared file decides who writes).
    let _a = Pager::open(&path, config(16)).unwrap();
    let _b = Pager::open(&path, config(16)).unwrap();
}

#[test]
fn readers_share_the_file_and_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let pager = open(&path, 16);
        let first = pager.allocate(1).unwrap();
        pager.write_pages(first, b"data").unwrap();
        pager.write_header(b"h").unwrap();
    }
    let read_only = PagerConfig {
        read_only: true,
        ..config(16)
    };
    let reader_a = Arc::new(Pager::open(&path, read_only.clone()).unwrap());
    let reader_b = Pager::open(&path, read_only).unwrap();
    assert_eq!(&reader_a.pin_owned(PageIdx(2), 1).unwrap()[..4], b"data");
    assert!(reader_b.allocate(1).is_err());
    assert!(reader_b.write_header(b"x").is_err());
}

#[test]
fn foreign_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "this is not a database\n".repeat(500)).unwrap();
    let err = Pager::open(&path, config(16)).err().unwrap();
    assert_eq!(err.kind, ErrorKind::Corruption);
    assert!(
        err.message.contains("not a KithDB database file"),
        "{}",
        err.message
    );
    let missing = PagerConfig {
        read_only: true,
        ..config(16)
    };
    assert!(Pager::open(&dir.path().join("missing"), missing).is_err());
}

#[test]
fn in_memory_pages_stay_and_respect_the_limit() {
    let pager = Arc::new(Pager::in_memory(config(4)));
    assert_eq!(pager.read_header().unwrap(), None);
    pager.write_header(b"mem").unwrap();
    assert_eq!(pager.read_header().unwrap().as_deref(), Some(&b"mem"[..]));
    let first = pager.allocate(3).unwrap();
    pager
        .write_pages(first, &page_bytes(1, 3 * PAGE_SIZE))
        .unwrap();
    assert_eq!(pager.resident_bytes(), 3 * PAGE_SIZE as u64);
    let second = pager.allocate(2).unwrap();
    let err = pager
        .write_pages(second, &[5u8; 2 * PAGE_SIZE])
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutOfMemory);
    let pin = pager.pin_owned(first, 3).unwrap();
    assert_eq!(&pin[..], &page_bytes(1, 3 * PAGE_SIZE)[..]);
    drop(pin);
    pager.free(first, 3);
    assert_eq!(
        pager.resident_bytes(),
        0,
        "freeing releases in-memory pages"
    );
    pager.write_pages(second, &[5u8; 2 * PAGE_SIZE]).unwrap();
    assert!(pager.pin_owned(second, 2).unwrap().iter().all(|&b| b == 5));
}

#[test]
fn growing_past_the_reservation_is_an_error() {
    let pager = Pager::in_memory(PagerConfig {
        vm_reserve_bytes: 64 * PAGE_SIZE as u64,
        ..config(16)
    });
    let err = pager.allocate(1000).unwrap_err();
    assert!(err.message.contains("vm_reserve_bytes"), "{}", err.message);
    assert!(pager.allocate(10).is_ok());
}

#[test]
fn writes_go_through_the_cache_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let pager = open(&path, 4);
    let first = pager.allocate(3).unwrap();
    let bytes = page_bytes(first.0, 3 * PAGE_SIZE);
    pager.write_pages(first, &bytes).unwrap();
    // Write-through: resident right away, and the file holds the same bytes.
    assert_eq!(pager.resident_bytes(), 3 * PAGE_SIZE as u64);
    assert_eq!(&pager.pin_owned(first, 3).unwrap()[..], &bytes[..]);
    // Overwriting a resident page keeps it resident with the new bytes.
    let again = page_bytes(first.0 + 9, PAGE_SIZE);
    pager.write_pages(first, &again).unwrap();
    assert_eq!(pager.resident_bytes(), 3 * PAGE_SIZE as u64);
    assert_eq!(&pager.pin_owned(first, 1).unwrap()[..], &again[..]);
    // Past the limit the writes still reach the file; what is not cached is read back.
    let more = pager.allocate(4).unwrap();
    let big = page_bytes(more.0, 4 * PAGE_SIZE);
    pager.write_pages(more, &big).unwrap();
    assert!(pager.resident_bytes() <= 4 * PAGE_SIZE as u64);
    assert_eq!(&pager.pin_owned(more, 4).unwrap()[..], &big[..]);
    assert_eq!(&pager.pin_owned(first, 1).unwrap()[..], &again[..]);
    // A freed page keeps its frame until reused; the reuse overwrites it.
    pager.free(first, 1);
    let reused = pager.allocate(1).unwrap();
    assert_eq!(reused, first);
    let fresh = page_bytes(77, 10);
    pager.write_pages(reused, &fresh).unwrap();
    let pin = pager.pin_owned(reused, 1).unwrap();
    assert_eq!(&pin[..10], &fresh[..]);
    assert!(pin[10..].iter().all(|&b| b == 0));
    drop(pin);
    // And the file agrees after a reopen.
    pager.sync().unwrap();
    drop(pager);
    let reopened = open(&path, 4);
    assert_eq!(&reopened.pin_owned(more, 4).unwrap()[..], &big[..]);
}
