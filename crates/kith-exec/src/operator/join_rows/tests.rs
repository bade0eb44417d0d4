use super::*;

fn row(src: u64, dst: u64, len: u32, count: u64) -> LenRow {
    LenRow {
        src,
        dst,
        len,
        count,
    }
}

/// (input row, destination offset, length, count) of every row.
fn rows_of(j: &JoinRows) -> Vec<(u32, u64, u64, u64)> {
    (0..j.num_rows())
        .map(|r| (j.input_row[r], j.dst[r].offset(), j.len[r], j.count(r)))
        .collect()
}

#[test]
fn sink_builds_the_rows_emit_would() {
    // Input rows 0..4: sources 10, 20, 10 and NULL; source 30 has no row.
    let row_src = [Some(10), Some(20), Some(10), None];
    let index_of: HashMap<u64, usize> = [(10, 0), (20, 1), (30, 2)].into();
    let input = Arc::new(Chunk::new(&[LogicalType::Int64], 4));
    let table = TableId(3);
    let build = |mask: Option<Arc<[u64]>>, table: Option<TableId>| {
        let by_src = SourceRows::new(4, &row_src, &index_of, 3);
        let ids = table.map(DstIds::Table);
        JoinRowsSink::new(by_src, &index_of, mask, ids, true, 0, memory(64 << 20))
    };
    let sink = build(None, Some(table));
    // Counts of 1 first (kept implied), then one of 3, then 1 again.
    sink.consume(&mut vec![row(10, 5, 1, 1), row(20, 6, 2, 1)])
        .unwrap();
    sink.consume(&mut vec![row(20, 7, 3, 3), row(20, 8, 1, 0)])
        .unwrap();
    sink.consume(&mut vec![row(30, 9, 1, 1), row(10, 4, 2, 1)])
        .unwrap();
    let j = sink.finish(&input, true).unwrap();
    assert_eq!(
        rows_of(&j),
        vec![
            (0, 5, 1, 1),
            (2, 5, 1, 1),
            (1, 6, 2, 1),
            (1, 7, 3, 3),
            (0, 4, 2, 1),
            (2, 4, 2, 1),
            // Padded: the NULL source's row (source 30 has no row).
            (3, 0, 0, 1),
        ]
    );
    assert_eq!(j.padded_from, 6);
    assert_eq!(j.dst[0], InternalId::new(table, 5));
    // A first batch with a count of 2 keeps counts from its first row.
    let sink = build(None, Some(table));
    sink.consume(&mut vec![row(20, 1, 1, 2), row(20, 2, 1, 1)])
        .unwrap();
    let j = sink.finish(&input, false).unwrap();
    assert_eq!(rows_of(&j), vec![(1, 1, 1, 2), (1, 2, 1, 1)]);
    assert_eq!(j.padded_from, 2);
    // A destination mask drops rows; a source left without rows pads.
    let mask: Arc<[u64]> = vec![1u64 << 6].into();
    let sink = build(Some(mask), Some(table));
    sink.consume(&mut vec![row(10, 5, 1, 1), row(20, 6, 2, 1)])
        .unwrap();
    let j = sink.finish(&input, true).unwrap();
    assert_eq!(
        rows_of(&j),
        vec![(1, 6, 2, 1), (0, 0, 0, 1), (2, 0, 0, 1), (3, 0, 0, 1)]
    );
    // No destination table: no rows, every input row padded.
    let sink = build(None, None);
    sink.consume(&mut vec![row(10, 5, 1, 1)]).unwrap();
    assert_eq!(sink.finish(&input, true).unwrap().padded_from, 0);
    // A row from a source the join does not know is an internal error.
    let sink = build(None, Some(table));
    sink.consume(&mut vec![row(99, 5, 1, 1)]).unwrap();
    assert!(sink.finish(&input, false).is_err());
}

use crate::memory::test_memory as memory;

/// A sink over one-column input rows whose sources are `row_src`
/// (sources 10, 20 and 30 are known), destinations in table 3, with
/// lengths, and its input.
fn sink_over(
    row_src: &[Option<u64>],
    mask: Option<Arc<[u64]>>,
    memory: Arc<QueryMemory>,
) -> (Arc<Chunk>, JoinRowsSink) {
    let index_of: HashMap<u64, usize> = [(10, 0), (20, 1), (30, 2)].into();
    let input = Arc::new(Chunk::new(&[LogicalType::Int64], row_src.len()));
    let by_src = SourceRows::new(row_src.len(), row_src, &index_of, 3);
    let ids = Some(DstIds::Table(TableId(3)));
    let sink = JoinRowsSink::new(by_src, &index_of, mask, ids, true, 0, memory);
    (input, sink)
}

/// Keeps the batches handed to it.
#[derive(Default)]
struct Batches(Mutex<Vec<JoinRows>>);

impl JoinRowsConsumer for Batches {
    fn consume(&self, rows: JoinRows) -> Result<()> {
        self.0.lock().push(rows);
        Ok(())
    }
}

/// A forwarding sink hands each batch on with the rows the kept ones
/// would have (counts only in a batch that has one not 1), keeps none,
/// and counts what it handed on.
#[test]
fn forwarded_batches_hold_the_rows() {
    let memory = memory(64 << 20);
    let (input, sink) = sink_over(&[Some(10), Some(20), Some(10)], None, memory.clone());
    let to = Arc::new(Batches::default());
    let sink = sink.forward_to(Arc::clone(&input), to.clone(), false);
    // Sources alternate, as a lane morsel's rows do.
    sink.consume(&mut vec![
        row(10, 5, 1, 1),
        row(20, 5, 1, 1),
        row(10, 6, 2, 1),
    ])
    .unwrap();
    sink.consume(&mut vec![
        row(20, 7, 3, 1),
        row(20, 8, 1, 4),
        row(10, 9, 1, 0),
    ])
    .unwrap();
    sink.consume(&mut vec![row(10, 9, 1, 0)]).unwrap();
    let batches = std::mem::take(&mut *to.0.lock());
    assert_eq!(batches.len(), 2, "an empty batch is not handed on");
    assert_eq!(
        rows_of(&batches[0]),
        vec![
            (0, 5, 1, 1),
            (2, 5, 1, 1),
            (1, 5, 1, 1),
            (0, 6, 2, 1),
            (2, 6, 2, 1)
        ]
    );
    assert!(batches[0].count.is_empty());
    assert_eq!(rows_of(&batches[1]), vec![(1, 7, 3, 1), (1, 8, 1, 4)]);
    assert_eq!(batches[1].count, vec![1, 4]);
    assert!(Arc::ptr_eq(&batches[0].input, &input));
    assert_eq!(sink.forwarded_rows(), Some(7));
    assert_eq!(memory.charged(), 0, "forwarded rows are not kept");
    assert_eq!(sink.finish(&input, false).unwrap().num_rows(), 0);
    // A row from a source the join does not know fails the batch.
    assert!(sink.consume(&mut vec![row(99, 1, 1, 1)]).is_err());
}

/// A forwarding left outer join hands on, after the found rows, one
/// padded row per input row whose source found nothing (a NULL source
/// included), as the last batch.
#[test]
fn forwarded_left_outer_join_pads_last() {
    let row_src = [Some(10), Some(20), None, Some(30), Some(10)];
    let (input, sink) = sink_over(&row_src, None, memory(64 << 20));
    let to = Arc::new(Batches::default());
    let sink = sink.forward_to(Arc::clone(&input), to.clone(), true);
    // Source 30's only row counts no path: it found nothing.
    sink.consume(&mut vec![row(10, 5, 1, 1), row(30, 6, 1, 0)])
        .unwrap();
    assert_eq!(sink.finish(&input, true).unwrap().num_rows(), 0);
    let batches = std::mem::take(&mut *to.0.lock());
    assert_eq!(batches.len(), 2);
    assert_eq!(rows_of(&batches[0]), vec![(0, 5, 1, 1), (4, 5, 1, 1)]);
    let padded = &batches[1];
    assert_eq!(padded.padded_from, 0);
    assert_eq!(padded.input_row, vec![1, 2, 3]);
    assert_eq!(sink.forwarded_rows(), Some(5));
}

/// A merging sink sums the counts of each (source, length) in a batch
/// into one row per input row of the source, whatever the
/// destinations; masked and zero-count rows still count nothing.
#[test]
fn merged_rows_sum_counts_by_source_and_length() {
    // Destination 9 is masked out.
    let mask: Arc<[u64]> = Arc::from(vec![!(1u64 << 9)]);
    let row_src = [Some(10), Some(20), Some(10)];
    let (input, sink) = sink_over(&row_src, Some(mask), memory(64 << 20));
    let sink = sink.merged(true);
    sink.consume(&mut vec![
        row(10, 5, 1, 1),
        row(20, 5, 1, 2),
        row(10, 6, 1, 3),
        row(10, 7, 2, 1),
        row(10, 9, 1, 5),
        row(20, 8, 1, 0),
    ])
    .unwrap();
    let j = sink.finish(&input, false).unwrap();
    let mut got: Vec<(u32, u64, u64)> = (0..j.num_rows())
        .map(|r| (j.input_row[r], j.len[r], j.count(r)))
        .collect();
    got.sort_unstable();
    assert_eq!(
        got,
        vec![(0, 1, 4), (0, 2, 1), (1, 1, 2), (2, 1, 4), (2, 2, 1)]
    );
}

/// Union offsets map to each table's own offsets; a table the
/// destination's label rules out drops its rows.
#[test]
fn union_destinations_map_to_their_tables() {
    let ids = DstIds::Union {
        starts: vec![0, 10, 25],
        tables: vec![Some(TableId(4)), None, Some(TableId(6))],
    };
    assert_eq!(ids.id(0), Some(InternalId::new(TableId(4), 0)));
    assert_eq!(ids.id(9), Some(InternalId::new(TableId(4), 9)));
    assert_eq!(ids.id(10), None);
    assert_eq!(ids.id(24), None);
    assert_eq!(ids.id(25), Some(InternalId::new(TableId(6), 0)));
    assert_eq!(ids.id(40), Some(InternalId::new(TableId(6), 15)));
}

/// Sources whose entries of the index cache collide still find their
/// own rows (every one of 2,000 sources, in turn, twice).
#[test]
fn colliding_sources_find_their_rows() {
    let n = 2000u64;
    let row_src: Vec<Option<u64>> = (0..n).map(|s| Some(s * 64)).collect();
    let index_of: HashMap<u64, usize> = (0..n).map(|s| (s * 64, s as usize)).collect();
    let input = Arc::new(Chunk::new(&[LogicalType::Int64], n as usize));
    let by_src = SourceRows::new(n as usize, &row_src, &index_of, n as usize);
    let sink = JoinRowsSink::new(
        by_src,
        &index_of,
        None,
        Some(DstIds::Table(TableId(1))),
        true,
        0,
        memory(64 << 20),
    );
    let mut batch: Vec<LenRow> = (0..2 * n).map(|i| row((i % n) * 64, i, 1, 1)).collect();
    sink.consume(&mut batch).unwrap();
    let j = sink.finish(&input, false).unwrap();
    let got: Vec<u32> = j.input_row.clone();
    let want: Vec<u32> = (0..2 * n).map(|i| (i % n) as u32).collect();
    assert_eq!(got, want);
}

/// The rows are charged as they grow: past the limit, a batch fails
/// with the out-of-memory error, and what was charged is counted.
#[test]
fn rows_beyond_the_memory_limit_fail() {
    let row_src = [Some(10)];
    let index_of: HashMap<u64, usize> = [(10, 0)].into();
    let memory = memory(4 << 20);
    let by_src = SourceRows::new(1, &row_src, &index_of, 1);
    let sink = JoinRowsSink::new(
        by_src,
        &index_of,
        None,
        Some(DstIds::Table(TableId(3))),
        true,
        0,
        memory.clone(),
    );
    // 20 bytes a row: 100k rows (2 MB) fit in 4 MiB, 300k do not.
    let batch = |from: u64| {
        (from..from + 100_000)
            .map(|d| row(10, d, 1, 1))
            .collect::<Vec<_>>()
    };
    sink.consume(&mut batch(0)).unwrap();
    assert!(memory.charged() >= 2_000_000, "{}", memory.charged());
    let err = sink
        .consume(&mut batch(100_000))
        .and_then(|()| sink.consume(&mut batch(200_000)))
        .unwrap_err();
    assert_eq!(err.kind, kith_common::ErrorKind::OutOfMemory, "{err}");
}
