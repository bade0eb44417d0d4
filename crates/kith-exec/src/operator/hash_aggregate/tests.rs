use super::*;
use kith_common::TableId;

/// collect() of INT64 keeps integers, and turns into lists of values
/// when an input is not an integer vector, in a group's batch, per
/// position and when merging another worker's lists.
#[test]
fn collected_integers_become_values_on_another_input() {
    let spec = AggregateSpec::from_name(
        "collect",
        false,
        Some(LogicalType::Int64),
        LogicalType::List(Box::new(LogicalType::Int64)),
    )
    .unwrap();
    let ints = |xs: &[Option<i64>]| {
        let mut v = ValueVector::new(LogicalType::Int64, 0);
        for x in xs {
            v.push_value(&x.map_or(Value::Null, Value::Int64));
        }
        v
    };
    let mut values = ValueVector::new(LogicalType::Any, 0);
    values.push_value(&Value::String("x".into()));
    values.push_value(&Value::Int64(9));
    let lists = |column: StateColumn| {
        let mut out = Vec::new();
        column.into_values(|v| out.push(v));
        out
    };
    let list = |xs: Vec<Value>| Value::list(xs);
    let mut a = StateColumn::new(&spec);
    let mut b = StateColumn::new(&spec);
    for column in [&mut a, &mut b] {
        column.push(&spec);
        column.push(&spec);
    }
    a.update(0, Some(&ints(&[Some(1), None, Some(2)])), &[0, 1, 2], 2)
        .unwrap();
    a.update_each(&[1, 0], Some(&ints(&[Some(3), Some(4)])), &[0, 1], 1)
        .unwrap();
    b.update(1, Some(&ints(&[Some(5)])), &[0], 1).unwrap();
    assert!(matches!(a, StateColumn::CollectInts(..)));
    let mut c = StateColumn::new(&spec);
    c.push(&spec);
    c.push(&spec);
    c.update_each(&[0, 1], Some(&values), &[0, 1], 1).unwrap();
    assert!(matches!(c, StateColumn::Collect(..)));
    // Integers merged into values, then values into integers.
    a.combine(b, &[0, 1]).unwrap();
    c.combine(a, &[1, 0]).unwrap();
    let i = Value::Int64;
    assert_eq!(
        lists(c),
        [
            list(vec![Value::String("x".into()), i(3), i(5)]),
            list(vec![i(9), i(1), i(1), i(2), i(2), i(4)]),
        ]
    );
}

/// Keys kept as bits read back as the values they stand for, typed
/// into a column or value by value, the NULL key's group as NULL.
#[test]
fn group_key_bits_read_back_as_their_values() {
    let id = InternalId::new(TableId(3), 77);
    for (kind, bits, ty, want) in [
        (
            0,
            vec![id.0, 0],
            LogicalType::InternalId,
            Value::InternalId(id),
        ),
        (
            1,
            vec![(-5i64) as u64, 0],
            LogicalType::Int64,
            Value::Int64(-5),
        ),
        (
            2,
            vec![(-7i32) as u64, 0],
            LogicalType::Int32,
            Value::Int32(-7),
        ),
        // A column of another type gets the values one by one.
        (1, vec![9, 0], LogicalType::Any, Value::Int64(9)),
    ] {
        let keys = GroupKeys::Bits {
            kind,
            bits: bits.clone(),
            null: Some(1),
        };
        assert_eq!(keys.values(), [want.clone(), Value::Null]);
        let mut col = ValueVector::new(ty, 2);
        write_bits(&mut col, kind, &bits);
        col.set_null(1, true);
        assert_eq!(col.get_value(0), want);
        assert!(col.is_null(1));
    }
}

#[test]
fn key_bits_map_one_table_densely_and_the_rest_by_hash() {
    let mut k = KeyBits::default();
    let id = |t: u32, o: u64| (0u8, InternalId::new(TableId(t), o).0);
    k.insert(id(3, 5), 0);
    k.insert(id(3, 70_000), 1);
    // Another table, an offset beyond the dense range and integers
    // that share the ids' bits all go to the hash map.
    k.insert(id(4, 5), 2);
    k.insert(id(3, DENSE_KEYS + 1), 3);
    k.insert((1, id(3, 5).1), 4);
    assert_eq!(k.dense_table, Some(3));
    assert_eq!(k.other.len(), 3);
    assert!(k.dense.len() > 70_000 && k.dense.len() <= DENSE_KEYS as usize);
    for (bits, g) in [
        (id(3, 5), 0),
        (id(3, 70_000), 1),
        (id(4, 5), 2),
        (id(3, DENSE_KEYS + 1), 3),
        ((1, id(3, 5).1), 4),
    ] {
        assert_eq!(k.get(bits), Some(g), "{bits:?}");
    }
    assert_eq!(k.get(id(3, 6)), None);
    assert_eq!(k.get(id(3, 1 << 40)), None);
    assert_eq!(k.get(id(5, 5)), None);
    // A key read back as a value finds the same bits.
    let v = Value::InternalId(InternalId::new(TableId(3), 5));
    assert_eq!(KeyBits::value_bits(&v), Some(id(3, 5)));
    assert_eq!(
        KeyBits::value_bits(&Value::Int32(-2)),
        Some((2, -2i32 as u64))
    );
    assert_eq!(KeyBits::value_bits(&Value::Double(1.0)), None);
}

#[test]
fn partitions_put_equal_keys_together_and_squeeze_their_offsets() {
    // Equal keys of different types share a partition.
    for log2 in [1, 3, 6] {
        for i in [-3i64, 0, 5, 1 << 40] {
            assert_eq!(
                partition_of(&[Value::Int64(i)], log2),
                partition_of(&[Value::Double(i as f64)], log2),
                "{i}"
            );
            if let Ok(small) = i32::try_from(i) {
                assert_eq!(
                    partition_of(&[Value::Int64(i), Value::Null], log2),
                    partition_of(&[Value::Int32(small), Value::Null], log2),
                    "{i}"
                );
            }
        }
    }
    // A key's bits go where its value goes.
    for log2 in [1, 3, 6] {
        for i in [-3i64, 0, 5, 1 << 40, i64::MIN] {
            assert_eq!(
                partition_of_bits(1, i as u64, log2),
                partition_of(&[Value::Int64(i)], log2)
            );
            let small = i as i32;
            assert_eq!(
                partition_of_bits(2, small as u64, log2),
                partition_of(&[Value::Int32(small)], log2)
            );
            let id = InternalId::new(TableId(2), i.unsigned_abs() & 0xffff_ffff);
            assert_eq!(
                partition_of_bits(0, id.0, log2),
                partition_of(&[Value::InternalId(id)], log2)
            );
        }
    }
    // Ids go by runs of offsets; every partition gets some.
    let log2 = 3;
    let ids: Vec<InternalId> = (0..20_000)
        .map(|o| InternalId::new(TableId(7), o))
        .collect();
    let mut seen = [0usize; 8];
    for id in &ids {
        let p = partition_of(&[Value::InternalId(*id)], log2);
        assert_eq!(p, (id.offset() >> PARTITION_RUN_BITS) as usize % 8);
        seen[p] += 1;
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    // A partition's squeezed dense map: its ids get distinct indices,
    // about a partition's share of the offsets.
    for p in 0..8 {
        let mut k = KeyBits {
            squeeze: log2,
            ..KeyBits::default()
        };
        let mine: Vec<&InternalId> = ids
            .iter()
            .filter(|id| partition_of(&[Value::InternalId(**id)], log2) == p)
            .collect();
        for (g, id) in mine.iter().enumerate() {
            k.insert((0, id.0), g as u32);
        }
        assert!(k.other.is_empty());
        assert!(k.dense.len() <= (20_000 / 8 + 1024usize).next_power_of_two());
        for (g, id) in mine.iter().enumerate() {
            assert_eq!(k.get((0, id.0)), Some(g as u32));
        }
    }
}
