//! The owned write transaction: it outlives the borrow it came from, moves
//! between threads, holds the writer slot until dropped or committed, reads
//! its own writes through `read_version`, and excludes checkpoints.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kith_common::{LogicalType, Value};
use kith_storage::{NodeTableData, Storage, StorageConfig, TableData, WriteTxn};

fn assert_send<T: Send + 'static>(_: &T) {}

fn create_table(txn: &mut WriteTxn<'_>) -> kith_common::TableId {
    let id = txn
        .catalog
        .create_node_table("P", vec![("id".into(), LogicalType::Int64)], "id")
        .unwrap();
    let entry = txn.catalog.table(id).unwrap().clone();
    txn.tables.insert(
        id,
        Arc::new(TableData::Node(NodeTableData::empty(
            entry.properties.iter().map(|p| p.id).collect(),
            0,
        ))),
    );
    id
}

#[test]
fn owned_txn_moves_across_threads_and_reads_its_writes() {
    let storage = Storage::open(None, StorageConfig::default()).unwrap();
    let mut txn = {
        // The transaction does not borrow this handle.
        let s = Arc::clone(&storage);
        s.begin_write().unwrap()
    };
    assert_send(&txn);
    let id = create_table(&mut txn);
    txn.insert_nodes(id, &[vec![Value::Int64(7)], vec![Value::Int64(8)]])
        .unwrap();
    let v = txn.read_version().unwrap();
    assert!(v.catalog.table_by_name("P").is_some());
    assert_eq!(v.node_table(id).unwrap().num_live_rows(), 2);
    assert!(storage
        .snapshot()
        .unwrap()
        .catalog
        .table_by_name("P")
        .is_none());
    let seq = storage.snapshot().unwrap().seq;
    std::thread::spawn(move || txn.commit().unwrap())
        .join()
        .unwrap();
    let now = storage.snapshot().unwrap();
    assert_eq!(now.seq, seq + 1);
    assert_eq!(now.node_table(id).unwrap().num_live_rows(), 2);
}

#[test]
fn writer_slot_is_held_until_the_txn_ends() {
    let dir = tempfile::tempdir().unwrap();
    let storage =
        Storage::open(Some(&dir.path().join("g.kith")), StorageConfig::default()).unwrap();
    let txn = storage.begin_write().unwrap();
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        drop(txn); // rollback
    });
    let start = Instant::now();
    // Both wait for the slot (well under WRITER_WAIT here).
    storage.checkpoint().unwrap();
    assert!(start.elapsed() >= Duration::from_millis(100));
    let txn = storage.begin_write().unwrap();
    txn.commit().unwrap();
    holder.join().unwrap();
}
