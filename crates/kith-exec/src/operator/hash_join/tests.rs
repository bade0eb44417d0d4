use super::*;
use kith_common::{ErrorKind, InternalId};
use proptest::prelude::*;

use crate::memory::test_memory as memory;

fn vector(ty: LogicalType, values: &[Value]) -> ValueVector {
    let mut v = ValueVector::new(ty, 0);
    for x in values {
        v.push_value(x);
    }
    v
}

/// Every shape a build can take: one partition, several on one thread,
/// and parallel, with morsels that split the rows unevenly, then by
/// position where the keys allow.
fn shapes() -> [BuildShape; 5] {
    let shape = |partitions, morsel_rows, threads, direct| BuildShape {
        partitions,
        morsel_rows,
        threads,
        direct,
    };
    [
        shape(1, BUILD_MORSEL_ROWS, 1, false),
        shape(8, 5, 1, false),
        shape(4, 3, 3, false),
        shape(16, 1, 2, false),
        shape(1, BUILD_MORSEL_ROWS, 1, true),
    ]
}

fn build(keys: &ValueVector, shape: BuildShape, sched: &Scheduler) -> JoinIndex {
    let memory = memory(1 << 30);
    let cancel = CancelToken::new();
    let cx = BuildContext {
        sched,
        threads: shape.threads,
        cancel: &cancel,
        memory: &memory,
    };
    JoinIndex::build_with(keys.clone(), shape, &cx).unwrap()
}

/// What a nested loop over the build rows finds for `probe[pos]`.
fn nested_loop(build: &ValueVector, probe: &ValueVector, pos: usize) -> Vec<u32> {
    let Some(want) = EqKey::of(&probe.get_value(pos)) else {
        return Vec::new();
    };
    (0..build.len())
        .filter(|&r| EqKey::of(&build.get_value(r)).as_ref() == Some(&want))
        .map(|r| r as u32)
        .collect()
}

fn check(build_keys: &ValueVector, probes: &ValueVector, sched: &Scheduler) {
    for shape in shapes() {
        let index = build(build_keys, shape, sched);
        assert_eq!(
            index.is_integer(),
            IntDomain::of(&build_keys.ty).is_some(),
            "{:?}",
            build_keys.ty
        );
        let positions: Vec<u32> = (0..probes.len() as u32).rev().collect();
        let mut firsts = Vec::new();
        index.first_rows(probes, &positions, &mut firsts);
        for (&pos, first) in positions.iter().zip(firsts) {
            let pos = pos as usize;
            let got = index.rows(index.lookup(probes, pos));
            let want = nested_loop(build_keys, probes, pos);
            assert_eq!(
                got,
                want,
                "{:?} probe {} ({:?}) in {:?} build, {shape:?}",
                probes.ty,
                probes.get_value(pos),
                pos,
                build_keys.ty
            );
            assert_eq!(
                first,
                want.first().copied().unwrap_or(u32::MAX),
                "first row of probe {pos}"
            );
        }
    }
}

/// Keys of a narrow range (every third of 0..3000, twice some) are
/// indexed by position where the shape allows it; keys five times as
/// spread out are hashed; probes inside, between and outside the
/// keys find what a nested loop finds either way.
#[test]
fn dense_keys_are_found_by_position() {
    let sched = Scheduler::new(3);
    for (step, dense) in [(3i64, true), (5, false)] {
        let keys: Vec<Value> = (0..1000)
            .map(|i| Value::Int64(7 + step * i))
            .chain((0..100).map(|i| Value::Int64(7 + step * 2 * i)))
            .collect();
        let build_keys = vector(LogicalType::Int64, &keys);
        let probes: Vec<Value> = (-5..5200).map(Value::Int64).collect();
        let probes = vector(LogicalType::Int64, &probes);
        for shape in shapes() {
            let index = build(&build_keys, shape, &sched);
            assert_eq!(
                matches!(index.keys, Keys::Direct(_)),
                dense && shape.direct,
                "{step} {shape:?}"
            );
            assert!(index.is_integer());
        }
        check(&build_keys, &probes, &sched);
    }
}

#[test]
fn equal_values_of_other_types_match() {
    let sched = Scheduler::new(3);
    let ints = vector(
        LogicalType::Int64,
        &[
            Value::Int64(1),
            Value::Null,
            Value::Int64(-1),
            Value::Int64(1),
            Value::Int64(i64::MIN),
            Value::Int64(i64::MAX),
        ],
    );
    let probes = vector(
        LogicalType::Double,
        &[
            Value::Double(1.0),
            Value::Double(-1.0),
            Value::Double(1.5),
            Value::Double(f64::NAN),
            Value::Null,
            Value::Double(-9_223_372_036_854_775_808.0),
            Value::Double(9_223_372_036_854_775_808.0),
        ],
    );
    check(&ints, &probes, &sched);
    let index = build(&ints, shapes()[1], &sched);
    assert_eq!(index.rows(index.lookup(&probes, 0)), &[0, 3]);
    assert_eq!(index.num_keys(), 4);
    // UINT64 keys beyond i64, against doubles and INT64s.
    let big = vector(
        LogicalType::UInt64,
        &[
            Value::UInt64(1 << 63),
            Value::UInt64(3),
            Value::UInt64(u64::MAX),
        ],
    );
    check(&big, &probes, &sched);
    check(&big, &ints, &sched);
    check(&ints, &big, &sched);
    // Ids match ids only.
    let ids = vector(
        LogicalType::InternalId,
        &[
            Value::InternalId(InternalId(1)),
            Value::Null,
            Value::InternalId(InternalId(1)),
        ],
    );
    check(&ids, &ints, &sched);
    check(&ints, &ids, &sched);
    check(&ids, &ids, &sched);
    // Floats on the build side take the general path.
    check(&probes, &ints, &sched);
    check(&probes, &big, &sched);
    // Dates are not integers.
    let dates = vector(LogicalType::Date, &[Value::Date(kith_common::Date(1))]);
    check(&ints, &dates, &sched);
    check(&dates, &ints, &sched);
    check(&dates, &dates, &sched);
}

/// A build of 1 Mi distinct keys fails with the out-of-memory error
/// under a 4 MiB limit; under 64 MiB it runs, and what stays charged is
/// what the index holds.
#[test]
fn a_build_beyond_the_memory_limit_fails() {
    let sched = Scheduler::new(2);
    let n = 1 << 20;
    // Keys five apart are hashed into partitions, keys one apart
    // indexed by position.
    for (step, partitions) in [(5, 16), (1, 1)] {
        let mut keys = ValueVector::new(LogicalType::Int64, n);
        if let VectorData::I64(d) = &mut keys.data {
            for (i, x) in d.iter_mut().enumerate() {
                *x = i as i64 * step;
            }
        }
        let cancel = CancelToken::new();
        for limit_mib in [64, 4] {
            let memory = memory(limit_mib << 20);
            let cx = BuildContext {
                sched: &sched,
                threads: 2,
                cancel: &cancel,
                memory: &memory,
            };
            match JoinIndex::build(keys.clone(), &cx) {
                Ok(index) => {
                    assert_eq!(limit_mib, 64);
                    assert_eq!(index.num_keys(), n);
                    assert_eq!(index.num_partitions(), partitions);
                    // What stays charged is the index, and it is charged.
                    let held = index.memory_bytes() as u64;
                    assert!(memory.charged() >= held, "{} < {held}", memory.charged());
                    assert!(memory.charged() < held + (64 << 10), "{}", memory.charged());
                }
                Err(e) => {
                    assert_eq!(limit_mib, 4, "{e}");
                    assert_eq!(e.kind, ErrorKind::OutOfMemory);
                }
            }
        }
    }
}

/// Where a parallel build starts to pay: times the sequential and the
/// two-thread build of internal-id keys (15 rows per key on average, as
/// the rels per node of R-MAT 16) at growing sizes. Run by hand:
/// `cargo test --release -p kith-exec --lib build_crossover -- --ignored --nocapture`.
#[test]
#[ignore]
fn build_crossover() {
    let sched = Scheduler::new(2);
    for rows_log2 in [12, 14, 15, 16, 17, 18, 20] {
        let n = 1usize << rows_log2;
        let mut keys = ValueVector::new(LogicalType::InternalId, n);
        if let VectorData::Id(d) = &mut keys.data {
            for (i, x) in d.iter_mut().enumerate() {
                *x = InternalId(hash_u64(i as u64) % (n as u64 / 15 + 1));
            }
        }
        let memory = memory(1 << 30);
        let cancel = CancelToken::new();
        let time = |shape: BuildShape| {
            let cx = BuildContext {
                sched: &sched,
                threads: shape.threads,
                cancel: &cancel,
                memory: &memory,
            };
            let mut best = f64::MAX;
            for _ in 0..7 {
                let keys = keys.clone();
                let started = std::time::Instant::now();
                let index = JoinIndex::build_with(keys, shape, &cx).unwrap();
                best = best.min(started.elapsed().as_secs_f64() * 1e3);
                assert_eq!(index.num_rows(), n);
            }
            best
        };
        let shape = |partitions, threads| BuildShape {
            direct: false,
            partitions,
            morsel_rows: BUILD_MORSEL_ROWS,
            threads,
        };
        let one = time(shape(1, 1));
        let one_16 = time(shape(16, 1));
        let one_64 = time(shape(64, 1));
        let two = time(shape(2 * PARTITIONS_PER_THREAD, 2));
        let two_64 = time(shape(64, 2));
        let direct = time(BuildShape {
            direct: true,
            ..shape(1, 1)
        });
        println!(
            "{n:>8} rows: 1 thread {one:.3} ms (16 parts {one_16:.3}, 64 parts {one_64:.3}), \
             2 threads {two:.3} ms ({:.2}x; 64 parts {two_64:.3}), by position {direct:.3} ms",
            two / one
        );
    }
}

/// What stays charged is what the index holds, whatever the shape: the
/// build's tasks share one charge, so neither a thousand tiny morsels
/// nor many partitions round it up.
#[test]
fn charges_what_the_index_holds() {
    let sched = Scheduler::new(2);
    let cancel = CancelToken::new();
    let values: Vec<Value> = (0..3000).map(|i| Value::Int64(i % 700)).collect();
    let keys = vector(LogicalType::Int64, &values);
    for shape in shapes() {
        let memory = memory(1 << 30);
        let cx = BuildContext {
            sched: &sched,
            threads: shape.threads,
            cancel: &cancel,
            memory: &memory,
        };
        let index = JoinIndex::build_with(keys.clone(), shape, &cx).unwrap();
        let held = index.memory_bytes() as u64;
        assert_eq!(index.num_keys(), 700);
        assert!(
            memory.charged() >= held,
            "{shape:?}: {} < {held}",
            memory.charged()
        );
        assert!(
            memory.charged() < held + (64 << 10),
            "{shape:?}: {} for {held}",
            memory.charged()
        );
    }
}

/// A value of one of the hashable kinds, from a small pool so that keys
/// repeat, with integers and floats of equal value, NULLs and NaN.
fn pool_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(Value::Double(f64::NAN)),
        (-3i64..4).prop_map(Value::Int64),
        (-3i64..4).prop_map(|i| Value::Double(i as f64)),
        (-3i32..4).prop_map(|i| Value::Double(i as f64 + 0.5)),
        (0u64..4).prop_map(Value::UInt64),
        Just(Value::UInt64(u64::MAX)),
        Just(Value::Double(-0.0)),
        (0u64..3).prop_map(|i| Value::InternalId(InternalId(i))),
        (0u8..3).prop_map(|i| Value::String(i.to_string())),
        any::<bool>().prop_map(Value::Bool),
    ]
}

/// A vector of `values` of one type: each of the typed kinds keeps the
/// values of its kind (the rest become NULL); `Any` keeps them all.
fn typed_vector(ty: &LogicalType, values: &[Value]) -> ValueVector {
    let fits = |v: &Value| match ty {
        LogicalType::Int64 => matches!(v, Value::Int64(_)),
        LogicalType::Int32 => matches!(v, Value::Int64(i) if i32::try_from(*i).is_ok()),
        LogicalType::UInt64 => matches!(v, Value::UInt64(_)),
        LogicalType::Double => matches!(v, Value::Double(_)),
        LogicalType::InternalId => matches!(v, Value::InternalId(_)),
        LogicalType::String => matches!(v, Value::String(_)),
        _ => true,
    };
    let cast = |v: &Value| match (ty, v) {
        (LogicalType::Int32, Value::Int64(i)) => Value::Int32(*i as i32),
        _ => v.clone(),
    };
    let values: Vec<Value> = values
        .iter()
        .map(|v| if fits(v) { cast(v) } else { Value::Null })
        .collect();
    vector(ty.clone(), &values)
}

fn key_type() -> impl Strategy<Value = LogicalType> {
    prop_oneof![
        Just(LogicalType::Int64),
        Just(LogicalType::Int32),
        Just(LogicalType::UInt64),
        Just(LogicalType::Double),
        Just(LogicalType::InternalId),
        Just(LogicalType::String),
        Just(LogicalType::Any),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every probe finds exactly the rows a nested loop with the same
    /// equality finds, for every build shape.
    #[test]
    fn probes_find_what_a_nested_loop_finds(
        build_ty in key_type(),
        probe_ty in key_type(),
        build_values in prop::collection::vec(pool_value(), 0..60),
        probe_values in prop::collection::vec(pool_value(), 1..20),
    ) {
        let sched = Scheduler::new(3);
        let build_keys = typed_vector(&build_ty, &build_values);
        let probes = typed_vector(&probe_ty, &probe_values);
        check(&build_keys, &probes, &sched);
    }

    /// The typed reads agree with the slow path through `Value`.
    #[test]
    fn typed_key_reads_agree_with_eq_key(
        ty in key_type(),
        values in prop::collection::vec(pool_value(), 1..20),
    ) {
        let v = typed_vector(&ty, &values);
        for pos in 0..v.len() {
            let want = EqKey::of(&v.get_value(pos));
            for domain in [IntDomain::Signed, IntDomain::Unsigned, IntDomain::Id] {
                let got = domain.key_at(&v, pos);
                let expected = match (&want, domain) {
                    (Some(EqKey::Id(id)), IntDomain::Id) => Some(*id),
                    (Some(EqKey::Int(i)), IntDomain::Signed) => Some(*i as u64),
                    (Some(EqKey::Int(i)), IntDomain::Unsigned) => u64::try_from(*i).ok(),
                    (Some(EqKey::UInt(u)), IntDomain::Unsigned) => Some(*u),
                    _ => None,
                };
                prop_assert_eq!(got, expected, "{:?} {:?}", v.get_value(pos), domain);
            }
        }
    }
}
