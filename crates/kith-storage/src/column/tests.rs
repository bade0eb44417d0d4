use super::*;
use kith_common::Value;
use kith_pager::PagerConfig;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// `gather` of rows in a scrambled order with repeats, into scattered
/// positions over stale values, reads what `read` of the whole column
/// (`whole`) read.
fn check_gather(pinned: &PinnedColumn, whole: &ValueVector) {
    let n = whole.len();
    if n == 0 {
        return;
    }
    let rows: Vec<u64> = (0..2 * n as u64)
        .map(|i| (i * 7919 + 3) % n as u64)
        .collect();
    let at: Vec<usize> = (0..rows.len()).rev().collect();
    let mut out = ValueVector::new(whole.ty.clone(), rows.len());
    // Stale values and nulls where the gather writes.
    for p in 0..rows.len() {
        out.copy_from(p, whole, (p * 13) % n);
    }
    pinned.gather(&rows, &mut out, &at).unwrap();
    for (&r, &p) in rows.iter().zip(&at) {
        assert_eq!(out.get_value(p), whole.get_value(r as usize), "row {r}");
    }
    assert!(pinned.gather(&[n as u64 + 4], &mut out, &[0]).is_err());
}

fn round_trip(ty: LogicalType, values: &[Option<Value>], start: usize) {
    let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
    let mut v = ValueVector::new(ty.clone(), values.len());
    for (i, x) in values.iter().enumerate() {
        v.set_value(i, x.as_ref().unwrap_or(&Value::Null));
    }
    let start = start.min(values.len());
    let count = values.len() - start;
    let chunk = ColumnChunk::write(&pager, &v, start, count).unwrap();
    // Through the metadata codec too.
    let mut e = Encoder::new();
    chunk.encode(&mut e);
    let bytes = e.finish();
    let chunk = ColumnChunk::decode(&mut Decoder::new(&bytes)).unwrap();
    let pinned = chunk.pin(&pager).unwrap();
    let mut out = ValueVector::new(ty, count);
    pinned.read(0, count, &mut out, 0).unwrap();
    for i in 0..count {
        let want = values[start + i].clone().unwrap_or(Value::Null);
        assert_eq!(out.get_value(i), want, "position {i}");
        assert_eq!(pinned.is_null(i as u64), want.is_null());
    }
    check_gather(&pinned, &out);
    // Partial reads at an offset.
    if count > 2 {
        let mut part = ValueVector::new(out.ty.clone(), 2);
        pinned.read(1, 2, &mut part, 0).unwrap();
        assert_eq!(
            part.get_value(1),
            values[start + 2].clone().unwrap_or(Value::Null)
        );
    }
}

proptest! {
    #[test]
    fn int64_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, any::<i64>()), 0..300), s in 0usize..10) {
        let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Int64)).collect();
        round_trip(LogicalType::Int64, &vals, s);
    }

    #[test]
    fn small_int32_round_trip(v in prop::collection::vec(prop::option::weighted(0.9, -5i32..5), 0..300), s in 0usize..10) {
        let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Int32)).collect();
        round_trip(LogicalType::Int32, &vals, s);
    }

    #[test]
    fn double_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, -1e9f64..1e9), 0..300), s in 0usize..10) {
        let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Double)).collect();
        round_trip(LogicalType::Double, &vals, s);
    }

    #[test]
    fn string_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, "[a-zé]{0,12}"), 0..200), s in 0usize..10) {
        let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::String)).collect();
        round_trip(LogicalType::String, &vals, s);
    }

    #[test]
    fn variant_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, prop_oneof![
        any::<i64>().prop_map(Value::Int64),
        "[a-z]{0,6}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
        prop::collection::vec(any::<i32>().prop_map(|x| Value::Int64(x.into())), 0..4).prop_map(Value::list),
    ]), 0..200), s in 0usize..10) {
        round_trip(LogicalType::Any, &v, s);
    }

    #[test]
    fn bool_round_trip(v in prop::collection::vec(prop::option::of(any::<bool>()), 0..200), s in 0usize..10) {
        let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Bool)).collect();
        round_trip(LogicalType::Bool, &vals, s);
    }
}

/// One step of a chunk's life.
#[derive(Debug, Clone)]
enum ChunkOp {
    /// Append these values (as auto-commit inserts do).
    Append(Vec<Option<Value>>),
    /// Set these positions (modulo the length; a position may repeat,
    /// the last value wins) to these values, as a SET does.
    Set(Vec<(usize, Option<Value>)>),
    /// Fold the patch in, as a checkpoint does.
    Fold,
}

/// Applies `ops` one at a time: the chunk (main part, tails folded when
/// they fill, patch folded when it fills) always reads back as the
/// reference values, whole and from any offset, through the metadata
/// codec, and the runs each step reports as written and retired
/// account for the old and new chunks' pages.
fn chunk_sequence(ty: LogicalType, ops: &[ChunkOp]) {
    let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
    let empty = ValueVector::new(ty.clone(), 0);
    let mut chunk = ColumnChunk::write(&pager, &empty, 0, 0).unwrap();
    let mut all: Vec<Option<Value>> = Vec::new();
    let mut saw_tail = false;
    let vector = |values: &[Option<Value>]| {
        let mut v = ValueVector::new(ty.clone(), values.len());
        for (i, x) in values.iter().enumerate() {
            v.set_value(i, x.as_ref().unwrap_or(&Value::Null));
        }
        v
    };
    for op in ops {
        let a = match op {
            ChunkOp::Append(b) => {
                all.extend(b.iter().cloned());
                chunk.append(&pager, &ty, &vector(b), 0, b.len()).unwrap()
            }
            ChunkOp::Set(_) if all.is_empty() => continue,
            ChunkOp::Set(sets) => {
                let mut last = BTreeMap::new();
                for (p, v) in sets {
                    last.insert((p % all.len()) as u64, v.clone());
                }
                for (&p, v) in &last {
                    all[p as usize] = v.clone();
                }
                let positions: Vec<u64> = last.keys().copied().collect();
                let values: Vec<Option<Value>> = last.into_values().collect();
                chunk
                    .set_values(&pager, &ty, &positions, &vector(&values))
                    .unwrap()
            }
            ChunkOp::Fold => match chunk.fold_patch(&pager, &ty).unwrap() {
                Some(a) => {
                    assert!(a.chunk.patch.is_none());
                    a
                }
                None => continue,
            },
        };
        let (mut old, mut new) = (Vec::new(), Vec::new());
        chunk.pages(&mut old);
        a.chunk.pages(&mut new);
        for r in &a.written {
            assert!(new.contains(r) && !old.contains(r), "written run {r:?}");
        }
        for r in &a.retired {
            assert!(old.contains(r) && !new.contains(r), "retired run {r:?}");
        }
        for r in &new {
            assert!(
                old.contains(r) || a.written.contains(r),
                "unaccounted {r:?}"
            );
        }
        chunk = a.chunk;
        assert!(chunk.num_patched() <= PATCH_MAX);
        saw_tail |= chunk.tail.as_ref().is_some_and(|t| t.tail.is_some());
        let mut e = Encoder::new();
        chunk.encode(&mut e);
        let bytes = e.finish();
        let chunk = ColumnChunk::decode(&mut Decoder::new(&bytes)).unwrap();
        assert_eq!(chunk.len(), all.len() as u64);
        let pinned = chunk.pin(&pager).unwrap();
        assert_eq!(pinned.num_values(), all.len() as u64);
        let mut whole = ValueVector::new(ty.clone(), all.len());
        pinned.read(0, all.len(), &mut whole, 0).unwrap();
        check_gather(&pinned, &whole);
        for from in [0, all.len() / 3, all.len().saturating_sub(1)] {
            let n = all.len() - from;
            let mut out = ValueVector::new(ty.clone(), n);
            pinned.read(from as u64, n, &mut out, 0).unwrap();
            for i in 0..n {
                let want = all[from + i].clone().unwrap_or(Value::Null);
                assert_eq!(
                    out.get_value(i),
                    want,
                    "value {} of {}",
                    from + i,
                    all.len()
                );
                assert_eq!(pinned.is_null((from + i) as u64), want.is_null());
            }
        }
        if ty == LogicalType::UInt64 {
            let mut out = vec![0u64; all.len()];
            pinned.read_u64s(0, all.len(), &mut out);
            for (i, want) in all.iter().enumerate() {
                if let Some(Value::UInt64(w)) = want {
                    assert_eq!(out[i], *w, "u64 {i}");
                    assert_eq!(pinned.get_u64(i as u64), *w);
                }
            }
        }
    }
    let appends_of_one = ops
        .iter()
        .all(|o| matches!(o, ChunkOp::Append(b) if b.len() == 1));
    if all.len() as u64 > 2 * TAIL_MAX && appends_of_one {
        assert!(
            saw_tail,
            "one-row appends past TAIL_MAX never used a nested tail"
        );
    }
}

fn append_sequence(ty: LogicalType, batches: &[Vec<Option<Value>>]) {
    let ops: Vec<ChunkOp> = batches.iter().cloned().map(ChunkOp::Append).collect();
    chunk_sequence(ty, &ops);
}

fn chunk_op<V: Strategy<Value = Value> + Clone>(value: V) -> impl Strategy<Value = ChunkOp> {
    let v = prop::option::weighted(0.9, value);
    prop_oneof![
        3 => prop::collection::vec(v.clone(), 1..4).prop_map(ChunkOp::Append),
        3 => prop::collection::vec((any::<usize>(), v), 1..4).prop_map(ChunkOp::Set),
        1 => Just(ChunkOp::Fold),
    ]
}

proptest! {
    #[test]
    fn updates_read_back_int64(ops in prop::collection::vec(chunk_op((-1000i64..1000).prop_map(Value::Int64)), 0..60)) {
        chunk_sequence(LogicalType::Int64, &ops);
    }

    #[test]
    fn updates_read_back_strings(ops in prop::collection::vec(chunk_op("[a-c]{0,3}".prop_map(Value::String)), 0..60)) {
        chunk_sequence(LogicalType::String, &ops);
    }

    #[test]
    fn updates_read_back_u64(ops in prop::collection::vec(chunk_op((0u64..5000).prop_map(Value::UInt64)), 0..60)) {
        chunk_sequence(LogicalType::UInt64, &ops);
    }
}

proptest! {
    #[test]
    fn appends_read_back_int64(batches in prop::collection::vec(
        prop::collection::vec(prop::option::weighted(0.9, -1000i64..1000), 1..4), 0..40)) {
        let b: Vec<Vec<Option<Value>>> = batches.into_iter()
            .map(|b| b.into_iter().map(|x| x.map(Value::Int64)).collect()).collect();
        append_sequence(LogicalType::Int64, &b);
    }

    #[test]
    fn appends_read_back_strings(batches in prop::collection::vec(
        prop::collection::vec(prop::option::weighted(0.9, "[a-c]{0,3}"), 1..4), 0..40)) {
        let b: Vec<Vec<Option<Value>>> = batches.into_iter()
            .map(|b| b.into_iter().map(|x| x.map(Value::String)).collect()).collect();
        append_sequence(LogicalType::String, &b);
    }
}

/// Where [`PinnedColumn::packed_u64s`] gives a view, it reads what
/// `read_u64s` reads at every position.
fn check_packed(pinned: &PinnedColumn, n: usize) {
    let Some(p) = pinned.packed_u64s() else {
        return;
    };
    let mut out = vec![0u64; n];
    pinned.read_u64s(0, n, &mut out);
    for (i, &x) in out.iter().enumerate() {
        assert_eq!(p.get(i as u64), x, "position {i}");
    }
}

proptest! {
    #[test]
    fn packed_view_reads_every_width(
        raw in prop::collection::vec(any::<u64>(), 0..300),
        bits in 0u32..=64,
        base in any::<u64>(),
    ) {
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let vals: Vec<u64> = raw.iter().map(|&x| base.wrapping_add(x & mask)).collect();
        let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
        let mut v = ValueVector::new(LogicalType::UInt64, vals.len());
        for (i, &x) in vals.iter().enumerate() {
            v.set_value(i, &Value::UInt64(x));
        }
        let chunk = ColumnChunk::write(&pager, &v, 0, vals.len()).unwrap();
        let pinned = chunk.pin(&pager).unwrap();
        prop_assert!(vals.is_empty() || pinned.packed_u64s().is_some());
        check_packed(&pinned, vals.len());
    }
}

#[test]
fn one_row_appends_use_and_fold_tails() {
    let n = (3 * TAIL_MAX + 5) as usize;
    let batches: Vec<Vec<Option<Value>>> = (0..n)
        .map(|i| vec![Some(Value::Int64(i as i64 * 7 - 3))])
        .collect();
    append_sequence(LogicalType::Int64, &batches);
    let u: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
    let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
    let mut chunk =
        ColumnChunk::write(&pager, &ValueVector::new(LogicalType::UInt64, 0), 0, 0).unwrap();
    for x in &u {
        let mut v = ValueVector::new(LogicalType::UInt64, 1);
        v.set_value(0, &Value::UInt64(*x));
        chunk = chunk
            .append(&pager, &LogicalType::UInt64, &v, 0, 1)
            .unwrap()
            .chunk;
    }
    let pinned = chunk.pin(&pager).unwrap();
    let mut out = vec![0u64; n];
    pinned.read_u64s(0, n, &mut out);
    assert_eq!(out, u);
    assert_eq!(pinned.get_u64(n as u64 - 1), u[n - 1]);
    check_packed(&pinned, n);
}

#[test]
fn one_value_sets_patch_then_fold() {
    let mut ops = vec![ChunkOp::Append(
        (0..100).map(|i| Some(Value::Int64(i))).collect(),
    )];
    for i in 0..PATCH_MAX as usize + 3 {
        ops.push(ChunkOp::Set(vec![(i * 7, Some(Value::Int64(-(i as i64))))]));
    }
    chunk_sequence(LogicalType::Int64, &ops);
}

#[test]
fn constant_and_all_null_columns() {
    round_trip(LogicalType::Int64, &vec![Some(Value::Int64(7)); 100], 0);
    round_trip(
        LogicalType::String,
        &vec![Some(Value::String("x".into())); 100],
        3,
    );
    round_trip(LogicalType::Double, &vec![None; 50], 0);
    round_trip(
        LogicalType::Int64,
        &[Some(Value::Int64(i64::MIN)), Some(Value::Int64(i64::MAX))],
        0,
    );
}
