//! The hash-join index: the build side's rows by join key. The pipeline
//! runner builds it once, on the query's scheduler workers, from the key
//! column of the materialized build rows; every worker of the probe
//! pipeline then shares it read-only (an `Arc`) and looks up one key per
//! flat tuple (`CrossProduct` with a `Probe`, in `cross_product.rs`).
//!
//! # Layout
//!
//! Data-oriented: no allocation per key or per row. The rows of a key are
//! one range of a flat array, found through a hash table of entry numbers:
//!
//! ```text
//!  hash(key) ──bits 40..──> partition p          (one partition for small builds)
//!
//!  partition p   table:   hash ──> e            hashbrown HashTable<u32>
//!                entries: [(key, start, len)]   entry e: its key and its range of rows
//!                rows:    [r r r | r | r r ...] build row numbers, ascending per key
//! ```
//!
//! # Keys
//!
//! Which rows a key finds is decided by Cypher equality as [`EqKey`] defines
//! it: `1 = 1.0`, `0.0 = -0.0`, and NULL and NaN equal nothing. (The planner
//! keeps the join's equality as a filter after the join, but the index is
//! exact: it returns exactly the rows whose key is equal.)
//! - Keys of internal ids and of integer types (joins on node ids and on
//!   integer properties, the common case) are a `u64` in a domain fixed by
//!   the build key's type (`IntDomain`): reading one is a typed load,
//!   hashing one a multiply, and no `Value` is built. A probe value of
//!   another type (a DOUBLE against an INT64 build key) is mapped into the
//!   domain when an equal integer exists, else it finds nothing.
//! - Integer and id keys spanning at most four slots per build row (ids
//!   of one node table, keys numbered from 0) are indexed by position
//!   instead (`DirectIndex`): a counting sort by `key - min` on the calling
//!   thread, no hash table, 4 to 5 times faster than numbering the keys.
//! - Other build key types (strings, floats, booleans, dates, variants)
//!   take the general path: one [`EqKey`] per row, hashed with foldhash.
//!
//! # Build: local, combine, finalize (STYLE.md rule 5)
//!
//! 1. Local, in parallel over morsels of build rows: read each row's key
//!    and append (key, row) to one buffer per partition, chosen by the key's
//!    hash. NULL keys are left out.
//! 2. Combine: partition p takes its buffer from every morsel, in morsel
//!    order, so its rows stay in ascending order.
//! 3. Finalize, in parallel over partitions: number the partition's
//!    distinct keys in its hash table while counting their rows, turn the
//!    counts into prefix sums, and place each row at its key's range
//!    (a counting sort, walking the rows backwards so that each range comes
//!    out ascending). A partition frees its phase-1 buffers as it goes.
//!
//! No lock or atomic is shared in the hot loops: each morsel and each
//! partition is one task of [`Scheduler::parallel_map`]. Builds under
//! [`PARALLEL_BUILD_MIN_ROWS`] rows run on the calling thread; one-thread
//! queries too, partitioned from `PARTITIONED_BUILD_MIN_ROWS` rows (so
//! that each partition's table stays in cache), else as one partition
//! read straight from the key column, with no phase 1.
//!
//! # Memory
//!
//! The phase-1 buffers and the partitions are charged against the query's
//! memory limit (`memory.rs`) as they grow, so a build that does not fit
//! fails with the out-of-memory error; each partition gives back its phase-1
//! buffers' charge once it has used them up. (The build rows themselves were
//! charged by the result collectors that gathered them.)

use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};
use parking_lot::Mutex;

use kith_common::{Error, LogicalType, Result, Value, ValueVector, VectorData};
use kith_sched::{CancelToken, Scheduler};

use crate::expression::kernels::EqKey;
use crate::memory::{MemoryCharge, QueryMemory};

/// Builds with fewer rows run on one thread with one partition. Measured
/// on R-MAT 16 (2 cores; internal-id keys of the rels' end nodes, 15 rows
/// per key; build times from PROFILE): the two-thread build breaks even
/// between 12 Ki and 18 Ki rows, and takes 0.88x the time of the one-thread
/// build at 25 Ki rows, 0.67x at 160 Ki and 0.55x at 955 Ki.
#[cfg(not(kith_tiny))]
pub const PARALLEL_BUILD_MIN_ROWS: usize = 1 << 14;
/// Tiny, so that the small logic tests take the parallel path.
#[cfg(kith_tiny)]
pub const PARALLEL_BUILD_MIN_ROWS: usize = 8;

/// One-thread builds from this many rows are partitioned too, so that each
/// partition's table stays in cache while it is built. Measured on R-MAT 16
/// (one thread): with distinct keys (one per rel) 16 partitions take 0.85x
/// the time of one table at 160 Ki rows and 0.54x at 955 Ki; with 40 Ki
/// distinct keys, which fit in cache either way, 1.06x at 955 Ki rows.
#[cfg(not(kith_tiny))]
const PARTITIONED_BUILD_MIN_ROWS: usize = 1 << 18;
#[cfg(kith_tiny)]
const PARTITIONED_BUILD_MIN_ROWS: usize = 16;

/// Build rows per phase-1 task.
#[cfg(not(kith_tiny))]
const BUILD_MORSEL_ROWS: usize = 1 << 14;
#[cfg(kith_tiny)]
const BUILD_MORSEL_ROWS: usize = 4;

/// Partitions per worker of a parallel build: enough that a partition made
/// large by a frequent key does not leave the other workers idle for long,
/// few enough that each morsel's per-partition buffers stay large.
const PARTITIONS_PER_THREAD: usize = 8;
/// At least this many partitions when partitioned (a one-thread build
/// partitions for cache locality alone; 16 to 64 measured best).
const MIN_PARTITIONS: usize = 16;
const MAX_PARTITIONS: usize = 1024;

/// A key's partition is taken from its hash's bits from here up: hashbrown
/// uses the low bits for the bucket and the top 7 for its control bytes, so
/// the keys of one partition still differ in both.
const PARTITION_SHIFT: u32 = 40;

/// Rows a partition's build places between two memory charges.
const CHARGE_EVERY_ROWS: usize = 1 << 14;

/// Rows a partition's build numbers before it judges whether its keys are
/// unique (see `Numbering::presize`).
const PRESIZE_SAMPLE: usize = 1 << 10;

/// The key space of an integer or id build key. Keys are stored as `u64`;
/// the domain says how a value maps to one (exactly: two values have the
/// same key iff their [`EqKey`]s are equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IntDomain {
    /// Signed integer types and unsigned ones below 64 bits: the value as
    /// an i64 (its two's complement bits).
    Signed,
    /// UINT64: the value.
    Unsigned,
    /// Internal ids (node and rel variables).
    Id,
}

impl IntDomain {
    fn of(ty: &LogicalType) -> Option<IntDomain> {
        use LogicalType as T;
        match ty {
            T::Int8 | T::Int16 | T::Int32 | T::Int64 | T::UInt8 | T::UInt16 | T::UInt32 => {
                Some(IntDomain::Signed)
            }
            T::UInt64 => Some(IntDomain::Unsigned),
            T::InternalId => Some(IntDomain::Id),
            _ => None,
        }
    }

    /// The key of the integer `x`; None when no key of the domain equals it.
    #[inline]
    fn of_integer(self, x: i128) -> Option<u64> {
        match self {
            IntDomain::Signed => i64::try_from(x).ok().map(|i| i as u64),
            IntDomain::Unsigned => u64::try_from(x).ok(),
            IntDomain::Id => None,
        }
    }

    /// The key of `v[pos]`: None for NULL, and for a value no key of the
    /// domain equals (NaN, 1.5, a string, an id against integers).
    #[inline]
    fn key_at(self, v: &ValueVector, pos: usize) -> Option<u64> {
        if v.is_null(pos) {
            return None;
        }
        match (&v.data, self) {
            (VectorData::Id(d), IntDomain::Id) => Some(d[pos].0),
            (_, IntDomain::Id) => match eq_key_at(v, pos)? {
                EqKey::Id(id) => Some(id),
                _ => None,
            },
            _ => integer_at(v, pos).and_then(|x| self.of_integer(x)),
        }
    }
}

/// `v[pos]` under Cypher equality, the slow and general way (a `Value` per
/// call, not cloned for variant vectors).
fn eq_key_at(v: &ValueVector, pos: usize) -> Option<EqKey> {
    match &v.data {
        VectorData::Value(d) => EqKey::of(&d[pos]),
        _ => EqKey::of(&v.get_value(pos)),
    }
}

/// `v[pos]` (not NULL) as an integer when its [`EqKey`] is one (`Int` or
/// `UInt`): a value of an integer type, an integral float in
/// [-2^63, 2^64), a variant holding either. None otherwise.
#[inline]
fn integer_at(v: &ValueVector, pos: usize) -> Option<i128> {
    use LogicalType as T;
    let key = match (&v.data, &v.ty) {
        (VectorData::I8(d), T::Int8) => return Some(d[pos] as i128),
        (VectorData::I16(d), T::Int16) => return Some(d[pos] as i128),
        (VectorData::I32(d), T::Int32) => return Some(d[pos] as i128),
        (VectorData::I64(d), T::Int64) => return Some(d[pos] as i128),
        (VectorData::U8(d), T::UInt8) => return Some(d[pos] as i128),
        (VectorData::U16(d), T::UInt16) => return Some(d[pos] as i128),
        (VectorData::U32(d), T::UInt32) => return Some(d[pos] as i128),
        (VectorData::U64(d), T::UInt64) => return Some(d[pos] as i128),
        // The float rules live in EqKey; a Value::Double allocates nothing.
        (VectorData::F32(d), T::Float) => EqKey::of(&Value::Float(d[pos])),
        (VectorData::F64(d), T::Double) => EqKey::of(&Value::Double(d[pos])),
        _ => eq_key_at(v, pos),
    };
    match key? {
        EqKey::Int(i) => Some(i as i128),
        EqKey::UInt(u) => Some(u as i128),
        _ => None,
    }
}

/// Hash of an integer key: foldhash's folded multiply (the 128-bit product's
/// halves xored), which spreads dense ids over every bit.
#[inline]
fn hash_u64(x: u64) -> u64 {
    const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
    const SEED: u64 = 0x243f_6a88_85a3_08d3;
    let product = ((x ^ SEED) as u128) * (MULTIPLIER as u128);
    (product as u64) ^ ((product >> 64) as u64)
}

#[inline]
fn partition_of(hash: u64, mask: usize) -> usize {
    (hash >> PARTITION_SHIFT) as usize & mask
}

/// How keys are read from vectors and hashed: one implementation per path.
trait KeyReader: Clone + Send + Sync + 'static {
    type Key: Clone + Eq + Send + Sync + 'static;

    /// Reading a key again costs less than keeping it in scratch memory
    /// (a typed load and a multiply, no allocation): phase 1 then reads a
    /// morsel twice, to count each partition's rows and then to place them.
    const READ_TWICE: bool;

    fn hash(&self, key: &Self::Key) -> u64;

    /// The key of `v[pos]`; None when it can equal no key (NULL, NaN).
    fn key_at(&self, v: &ValueVector, pos: usize) -> Option<Self::Key>;

    /// Calls `f(row, key)` for each row of `rows` that has a key, in order.
    fn for_each_key(&self, v: &ValueVector, rows: Range<usize>, mut f: impl FnMut(u32, Self::Key)) {
        for row in rows {
            if let Some(key) = self.key_at(v, row) {
                f(row as u32, key);
            }
        }
    }
}

/// Integer and id keys.
#[derive(Clone)]
struct IntReader(IntDomain);

/// Calls `f(row, key(data[row]))` for each non-NULL row of `rows`.
#[inline]
fn typed_keys<T: Copy>(
    data: &[T],
    v: &ValueVector,
    rows: Range<usize>,
    key: impl Fn(T) -> u64,
    mut f: impl FnMut(u32, u64),
) {
    if !v.nulls.may_have_nulls() {
        for (row, &x) in data[rows.clone()].iter().enumerate() {
            f((rows.start + row) as u32, key(x));
        }
        return;
    }
    for row in rows {
        if !v.is_null(row) {
            f(row as u32, key(data[row]));
        }
    }
}

impl KeyReader for IntReader {
    type Key = u64;
    const READ_TWICE: bool = true;

    #[inline]
    fn hash(&self, key: &u64) -> u64 {
        hash_u64(*key)
    }

    #[inline]
    fn key_at(&self, v: &ValueVector, pos: usize) -> Option<u64> {
        self.0.key_at(v, pos)
    }

    /// The build key's own type has one typed loop each.
    fn for_each_key(&self, v: &ValueVector, rows: Range<usize>, f: impl FnMut(u32, u64)) {
        use IntDomain::{Id, Signed, Unsigned};
        use LogicalType as T;
        match (&v.data, &v.ty, self.0) {
            (VectorData::I64(d), T::Int64, Signed) => typed_keys(d, v, rows, |x| x as u64, f),
            (VectorData::I32(d), T::Int32, Signed) => {
                typed_keys(d, v, rows, |x| x as i64 as u64, f)
            }
            (VectorData::I16(d), T::Int16, Signed) => {
                typed_keys(d, v, rows, |x| x as i64 as u64, f)
            }
            (VectorData::I8(d), T::Int8, Signed) => typed_keys(d, v, rows, |x| x as i64 as u64, f),
            (VectorData::U32(d), T::UInt32, Signed) => typed_keys(d, v, rows, |x| x as u64, f),
            (VectorData::U16(d), T::UInt16, Signed) => typed_keys(d, v, rows, |x| x as u64, f),
            (VectorData::U8(d), T::UInt8, Signed) => typed_keys(d, v, rows, |x| x as u64, f),
            (VectorData::U64(d), T::UInt64, Unsigned) => typed_keys(d, v, rows, |x| x, f),
            (VectorData::Id(d), _, Id) => typed_keys(d, v, rows, |x| x.0, f),
            _ => {
                let mut f = f;
                for row in rows {
                    if let Some(key) = self.key_at(v, row) {
                        f(row as u32, key);
                    }
                }
            }
        }
    }
}

/// Any other key: its [`EqKey`].
#[derive(Clone)]
struct GeneralReader(DefaultHashBuilder);

impl KeyReader for GeneralReader {
    type Key = EqKey;
    const READ_TWICE: bool = false;

    fn hash(&self, key: &EqKey) -> u64 {
        self.0.hash_one(key)
    }

    fn key_at(&self, v: &ValueVector, pos: usize) -> Option<EqKey> {
        eq_key_at(v, pos)
    }
}

/// One partition of the index (see the module documentation).
struct Partition<K> {
    /// Entry number of each distinct key, found by the key's hash.
    table: HashTable<u32>,
    entries: Vec<KeyEntry<K>>,
    /// Build row numbers, one range per entry.
    rows: Vec<u32>,
}

/// A distinct key and its range of its partition's rows (16 bytes for an
/// integer key: the table holds 4-byte entry numbers, not keys).
struct KeyEntry<K> {
    key: K,
    start: u32,
    len: u32,
}

impl<K> Partition<K> {
    fn memory_bytes(&self) -> usize {
        self.table.allocation_size()
            + self.entries.capacity() * std::mem::size_of::<KeyEntry<K>>()
            + self.rows.capacity() * 4
    }
}

/// Phase 1's output for one morsel and one partition: keys and their rows,
/// in row order.
struct Scattered<K> {
    keys: Vec<K>,
    rows: Vec<u32>,
}

impl<K> Scattered<K> {
    fn memory_bytes(&self) -> usize {
        self.keys.capacity() * std::mem::size_of::<K>() + self.rows.capacity() * 4
    }
}

/// Phase 1 (local): the keys of `rows`, scattered into `mask + 1`
/// partitions. Each partition's buffers are allocated at their exact size,
/// so the charge is what is held, and nothing else is allocated for integer
/// keys (fresh memory costs a page fault per page touched, which showed as
/// much as the scatter itself).
fn scatter<R: KeyReader>(
    reader: &R,
    keys: &ValueVector,
    rows: Range<usize>,
    mask: usize,
) -> Vec<Scattered<R::Key>> {
    let with_capacity = |n: usize| Scattered {
        keys: Vec::with_capacity(n),
        rows: Vec::with_capacity(n),
    };
    let mut counts = vec![0usize; mask + 1];
    if R::READ_TWICE {
        reader.for_each_key(keys, rows.clone(), |_, key| {
            counts[partition_of(reader.hash(&key), mask)] += 1;
        });
        let mut out: Vec<Scattered<R::Key>> = counts.iter().map(|&n| with_capacity(n)).collect();
        reader.for_each_key(keys, rows, |row, key| {
            let p = &mut out[partition_of(reader.hash(&key), mask)];
            p.keys.push(key);
            p.rows.push(row);
        });
        return out;
    }
    // Keys read once into scratch, with their partitions.
    let mut found = with_capacity(rows.len());
    let mut partition: Vec<u32> = Vec::with_capacity(rows.len());
    reader.for_each_key(keys, rows, |row, key| {
        let p = partition_of(reader.hash(&key), mask);
        counts[p] += 1;
        partition.push(p as u32);
        found.keys.push(key);
        found.rows.push(row);
    });
    let mut out: Vec<Scattered<R::Key>> = counts.iter().map(|&n| with_capacity(n)).collect();
    for ((p, key), row) in partition.iter().zip(found.keys).zip(found.rows) {
        let p = &mut out[*p as usize];
        p.keys.push(key);
        p.rows.push(row);
    }
    out
}

/// The memory of one build, charged by all of its tasks through one lock.
/// Step rounding ([`MemoryCharge`] charges in 64 KiB steps) then happens once
/// for the build, not once per morsel and partition (with tiny morsels, or
/// a thousand partitions, per-task rounding would charge far more than is
/// held). Tasks update it once per morsel and every [`CHARGE_EVERY_ROWS`]
/// rows of a partition, so the lock is never in a hot loop.
struct BuildMemory {
    memory: Arc<QueryMemory>,
    /// The charge and the bytes the build's tasks hold.
    held: Mutex<(MemoryCharge, u64)>,
}

impl BuildMemory {
    fn new(memory: Arc<QueryMemory>) -> BuildMemory {
        BuildMemory {
            memory,
            held: Mutex::new((MemoryCharge::default(), 0)),
        }
    }

    /// A task's buffers went from `*reported` bytes to `bytes`: charges the
    /// growth (the out-of-memory error when it does not fit) or gives back
    /// the shrinkage.
    fn update(&self, reported: &mut u64, bytes: u64) -> Result<()> {
        let mut held = self.held.lock();
        let (charge, total) = &mut *held;
        if bytes >= *reported {
            let grown = *total + (bytes - *reported);
            charge.grow_to(&self.memory, grown)?;
            *total = grown;
        } else {
            *total -= *reported - bytes;
            charge.shrink_to(&self.memory, *total);
        }
        *reported = bytes;
        Ok(())
    }
}

/// What a partition is built from.
enum PartitionInput<'a, K> {
    /// Every row of the build keys, read in place: a sequential build has
    /// one partition and no phase 1 (its buffers would only copy the keys).
    Whole(&'a ValueVector),
    /// Phase 1's buffers of every morsel, in morsel order (already
    /// charged; given back as they are used up).
    Scattered(Vec<Scattered<K>>),
}

/// A row without a key (NULL, NaN) in a [`PartitionInput::Whole`] build.
/// Never an entry number: there are fewer entries than rows, and rows fit
/// in u32.
const NO_ENTRY: u32 = u32::MAX;

/// Pass 1 of a partition's build: its distinct keys numbered in order of
/// their first row, with their row counts.
struct Numbering<K> {
    table: HashTable<u32>,
    entries: Vec<KeyEntry<K>>,
}

impl<K: Eq> Numbering<K> {
    /// The entry number of `key`, whose row count goes up by one.
    #[inline]
    fn count<R: KeyReader<Key = K>>(&mut self, reader: &R, key: K) -> u32 {
        let Numbering { table, entries } = self;
        let hash = reader.hash(&key);
        let found = table.entry(
            hash,
            |&e| entries[e as usize].key == key,
            |&e| reader.hash(&entries[e as usize].key),
        );
        let entry = match found {
            Entry::Occupied(o) => *o.get(),
            Entry::Vacant(slot) => {
                let entry = entries.len() as u32;
                slot.insert(entry);
                entries.push(KeyEntry {
                    key,
                    start: 0,
                    len: 0,
                });
                entry
            }
        };
        entries[entry as usize].len += 1;
        entry
    }

    fn memory_bytes(&self) -> usize {
        self.table.allocation_size() + self.entries.capacity() * std::mem::size_of::<KeyEntry<K>>()
    }

    /// After the first `seen` of `total` rows: when every one had a key of
    /// its own, room for the rest at once (a unique-key build would
    /// otherwise rehash its table at every doubling: a third of
    /// `optional-value-join`'s build).
    fn presize<R: KeyReader<Key = K>>(&mut self, reader: &R, seen: usize, total: usize) {
        if seen > 0 && self.entries.len() == seen && total > seen {
            let Numbering { table, entries } = self;
            let more = total - seen;
            table.reserve(more, |&e| reader.hash(&entries[e as usize].key));
            entries.reserve(more);
        }
    }
}

/// Phases 2 and 3 (combine, finalize): one partition from its input (see
/// the module documentation). Charges what it holds as it grows and checks
/// for cancellation every [`CHARGE_EVERY_ROWS`] rows.
fn build_partition<R: KeyReader>(
    reader: &R,
    input: PartitionInput<R::Key>,
    memory: &BuildMemory,
    cancel: &CancelToken,
) -> Result<Partition<R::Key>> {
    // What this partition holds: its phase-1 buffers (charged by phase 1)
    // plus what it builds.
    let mut reported = match &input {
        PartitionInput::Whole(_) => 0,
        PartitionInput::Scattered(inputs) => {
            inputs.iter().map(Scattered::memory_bytes).sum::<usize>() as u64
        }
    };
    let mut input_bytes = reported;
    let mut numbering = Numbering {
        table: HashTable::new(),
        entries: Vec::new(),
    };
    let progress = |reported: &mut u64,
                    numbering: &Numbering<R::Key>,
                    entry_of: &Vec<u32>,
                    input_bytes: u64|
     -> Result<()> {
        cancel.check()?;
        let bytes = (entry_of.capacity() * 4 + numbering.memory_bytes()) as u64;
        memory.update(reported, input_bytes + bytes)
    };
    // Pass 1: number the keys and remember each row's entry number (by
    // row for a whole vector, else in input order).
    let (entry_of, scattered_rows) = match input {
        PartitionInput::Whole(keys) => {
            let n = keys.len();
            memory.update(&mut reported, n as u64 * 4)?;
            let mut entry_of = vec![NO_ENTRY; n];
            let mut from = 0;
            while from < n {
                // A short first block: the sample `presize` judges by.
                let step = if from == 0 {
                    PRESIZE_SAMPLE
                } else {
                    CHARGE_EVERY_ROWS
                };
                let rows = from..(from + step).min(n);
                from = rows.end;
                reader.for_each_key(keys, rows, |row, key| {
                    entry_of[row as usize] = numbering.count(reader, key);
                });
                if from <= PRESIZE_SAMPLE {
                    numbering.presize(reader, from, n);
                }
                progress(&mut reported, &numbering, &entry_of, 0)?;
            }
            (entry_of, None)
        }
        PartitionInput::Scattered(inputs) => {
            let total: usize = inputs.iter().map(|s| s.rows.len()).sum();
            memory.update(&mut reported, input_bytes + total as u64 * 4)?;
            let mut entry_of: Vec<u32> = Vec::with_capacity(total);
            let mut rows = Vec::with_capacity(inputs.len());
            for Scattered {
                keys,
                rows: input_rows,
            } in inputs
            {
                for key in keys {
                    entry_of.push(numbering.count(reader, key));
                    if entry_of.len() == PRESIZE_SAMPLE {
                        numbering.presize(reader, PRESIZE_SAMPLE, total);
                    }
                    if entry_of.len().is_multiple_of(CHARGE_EVERY_ROWS) {
                        progress(&mut reported, &numbering, &entry_of, input_bytes)?;
                    }
                }
                rows.push(input_rows);
            }
            // The keys are consumed (moved into entries or dropped).
            input_bytes = total as u64 * 4;
            (entry_of, Some(rows))
        }
    };
    let Numbering { table, mut entries } = numbering;
    entries.shrink_to_fit();
    // Pass 2: ranges by prefix sums. Each start is first set to its range's
    // end, then moved down as rows are placed backwards, so that every
    // range comes out in ascending row order.
    let mut total = 0u32;
    for e in entries.iter_mut() {
        total += e.len;
        e.start = total;
    }
    let bytes = (entry_of.capacity() + total as usize) * 4
        + table.allocation_size()
        + entries.capacity() * std::mem::size_of::<KeyEntry<R::Key>>();
    memory.update(&mut reported, input_bytes + bytes as u64)?;
    let mut rows = vec![0u32; total as usize];
    let mut place = |entry: u32, row: u32| {
        let e = &mut entries[entry as usize];
        e.start -= 1;
        rows[e.start as usize] = row;
    };
    match scattered_rows {
        None => {
            for (row, &entry) in entry_of.iter().enumerate().rev() {
                if entry != NO_ENTRY {
                    place(entry, row as u32);
                }
            }
        }
        Some(lists) => {
            let mut item = entry_of.len();
            for list in lists.iter().rev() {
                for &row in list.iter().rev() {
                    item -= 1;
                    place(entry_of[item], row);
                }
            }
            debug_assert_eq!(item, 0, "every row of the partition placed");
        }
    }
    drop(entry_of);
    let partition = Partition {
        table,
        entries,
        rows,
    };
    memory.update(&mut reported, partition.memory_bytes() as u64)?;
    Ok(partition)
}

/// Where the build runs and what it charges.
pub struct BuildContext<'a> {
    pub sched: &'a Scheduler,
    /// The query's thread count.
    pub threads: usize,
    pub cancel: &'a CancelToken,
    pub memory: &'a Arc<QueryMemory>,
}

/// How one build is split (chosen by [`JoinIndex::build`]; tests pick their
/// own).
#[derive(Debug, Clone, Copy)]
struct BuildShape {
    /// A power of two.
    partitions: usize,
    morsel_rows: usize,
    threads: usize,
    /// Whether integer keys of a narrow range are indexed by position
    /// ([`DirectIndex`], built on one thread) instead.
    direct: bool,
}

/// Runs `f(i)` for `i` in `0..n`: on the pool with several threads, else on
/// the calling thread (checking for cancellation between items).
fn run_tasks<T, F>(cx: &BuildContext, threads: usize, n: usize, f: F) -> Result<Vec<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Result<T> + Send + Sync + 'static,
{
    if threads > 1 && n > 1 {
        return cx.sched.parallel_map(threads, cx.cancel, n, f);
    }
    (0..n)
        .map(|i| {
            cx.cancel.check()?;
            f(i)
        })
        .collect()
}

/// The partitions of one key path.
struct Partitioned<R: KeyReader> {
    reader: R,
    /// `partitions.len() - 1` (a power of two less one).
    mask: usize,
    partitions: Vec<Partition<R::Key>>,
}

impl<R: KeyReader> Partitioned<R> {
    /// The index, and what charges it (for anything built beside it).
    fn build(
        reader: R,
        keys: Arc<ValueVector>,
        shape: BuildShape,
        cx: &BuildContext,
    ) -> Result<(Partitioned<R>, Arc<BuildMemory>)> {
        assert!(shape.partitions.is_power_of_two() && shape.morsel_rows > 0);
        let memory = Arc::new(BuildMemory::new(Arc::clone(cx.memory)));
        if shape.partitions == 1 {
            cx.cancel.check()?;
            let only = build_partition(&reader, PartitionInput::Whole(&keys), &memory, cx.cancel)?;
            let index = Partitioned {
                reader,
                mask: 0,
                partitions: vec![only],
            };
            return Ok((index, memory));
        }
        let mask = shape.partitions - 1;
        let morsel_rows = shape.morsel_rows;
        let morsels = keys.len().div_ceil(morsel_rows);
        let local = {
            let (reader, memory) = (reader.clone(), Arc::clone(&memory));
            move |m: usize| -> Result<Vec<Scattered<R::Key>>> {
                let rows = m * morsel_rows..((m + 1) * morsel_rows).min(keys.len());
                let out = scatter(&reader, &keys, rows, mask);
                let bytes: usize = out.iter().map(Scattered::memory_bytes).sum();
                // Handed on to the partitions with the buffers.
                memory.update(&mut 0, bytes as u64)?;
                Ok(out)
            }
        };
        let scattered = run_tasks(cx, shape.threads, morsels, local)?;
        // Combine: each partition's buffers from every morsel, in morsel
        // order.
        let mut inputs: Vec<Vec<Scattered<R::Key>>> = (0..shape.partitions)
            .map(|_| Vec::with_capacity(morsels))
            .collect();
        for out in scattered {
            for (p, s) in out.into_iter().enumerate() {
                inputs[p].push(s);
            }
        }
        let inputs: Vec<Mutex<Option<PartitionInput<R::Key>>>> = inputs
            .into_iter()
            .map(|list| Mutex::new(Some(PartitionInput::Scattered(list))))
            .collect();
        let inputs = Arc::new(inputs);
        let finalize = {
            let (reader, memory) = (reader.clone(), Arc::clone(&memory));
            let inputs = Arc::clone(&inputs);
            let cancel = cx.cancel.clone();
            move |p: usize| {
                let input = inputs[p]
                    .lock()
                    .take()
                    .ok_or_else(|| Error::internal("hash join partition built twice"))?;
                build_partition(&reader, input, &memory, &cancel)
            }
        };
        let partitions = run_tasks(cx, shape.threads, shape.partitions, finalize)?;
        let index = Partitioned {
            reader,
            mask,
            partitions,
        };
        Ok((index, memory))
    }

    #[inline]
    fn lookup(&self, v: &ValueVector, pos: usize) -> Hit {
        let Some(key) = self.reader.key_at(v, pos) else {
            return Hit::default();
        };
        let hash = self.reader.hash(&key);
        let p = partition_of(hash, self.mask);
        let part = &self.partitions[p];
        match part
            .table
            .find(hash, |&e| part.entries[e as usize].key == key)
        {
            Some(&e) => {
                let entry = &part.entries[e as usize];
                Hit {
                    partition: p as u32,
                    start: entry.start,
                    end: entry.start + entry.len,
                }
            }
            None => Hit::default(),
        }
    }
}

enum Keys {
    /// Integer and id keys.
    Int(Partitioned<IntReader>),
    /// Integer and id keys of a narrow range, by position.
    Direct(DirectIndex),
    General(Partitioned<GeneralReader>),
}

/// At most this many slots per build row for a [`DirectIndex`]: its
/// array (4 bytes a slot) then costs about what a hash table and its
/// entries do (4 to 10 and 16 bytes a key).
const DIRECT_SLOTS_PER_ROW: u64 = 4;

/// Most slots of a [`DirectIndex`] (64 MiB of bounds).
const DIRECT_MAX_SLOTS: u64 = 1 << 24;

/// Integer keys of a narrow range indexed by position, with no hash at
/// all (a perfect hash): the rows of key `k` are `rows[bounds[k - min] ..
/// bounds[k - min + 1]]`. Ids of one node table and keys numbered from
/// 0 or 1 are such keys. The build is a counting sort (a pass for the
/// range, one to count, one to place), where numbering the keys in a
/// hash table took a third of `optional-value-join`; a probe is a
/// subtraction and two loads.
struct DirectIndex {
    reader: IntReader,
    min: u64,
    /// One more than the slots, then a copy of the last (every key out
    /// of the range reads that empty range).
    bounds: Vec<u32>,
    /// Build row numbers, ascending per key.
    rows: Vec<u32>,
    num_keys: usize,
}

impl DirectIndex {
    /// The index of `keys` when they span at most [`DIRECT_SLOTS_PER_ROW`]
    /// slots per row (NULL keys left out), charged to `memory`.
    fn build(
        reader: &IntReader,
        keys: &ValueVector,
        memory: &QueryMemory,
        cancel: &CancelToken,
    ) -> Result<Option<DirectIndex>> {
        let mut charge = MemoryCharge::default();
        let all = 0..keys.len();
        let (mut min, mut max, mut n) = (u64::MAX, 0u64, 0u64);
        reader.for_each_key(keys, all.clone(), |_, k| {
            min = min.min(k);
            max = max.max(k);
            n += 1;
        });
        let Some(slots) = max.checked_sub(min).and_then(|d| d.checked_add(1)) else {
            return Ok(None);
        };
        if slots > n.saturating_mul(DIRECT_SLOTS_PER_ROW) || slots > DIRECT_MAX_SLOTS {
            return Ok(None);
        }
        cancel.check()?;
        let slots = slots as usize;
        charge.grow_to(memory, (slots as u64 + 2) * 4 + n * 4)?;
        // Counts at `k + 2`, so that after the prefix sums `bounds[k + 1]`
        // is where key k's rows start: placing a row moves it up, and it
        // ends where key k + 1's rows start.
        let mut bounds = vec![0u32; slots + 2];
        reader.for_each_key(keys, all.clone(), |_, k| {
            bounds[(k - min) as usize + 2] += 1;
        });
        let mut num_keys = 0;
        let mut total = 0u32;
        for b in &mut bounds {
            num_keys += usize::from(*b > 0);
            total += *b;
            *b = total;
        }
        let mut rows = vec![0u32; n as usize];
        reader.for_each_key(keys, all, |row, k| {
            let at = &mut bounds[(k - min) as usize + 1];
            rows[*at as usize] = row;
            *at += 1;
        });
        Ok(Some(DirectIndex {
            reader: reader.clone(),
            min,
            bounds,
            rows,
            num_keys,
        }))
    }

    /// Where `key`'s rows are (an empty range when it has none).
    #[inline]
    fn range(&self, key: u64) -> (u32, u32) {
        // A key below `min` wraps past the end; every key past it reads
        // the last, empty, range.
        let last = self.bounds.len() - 2;
        let at = (key.wrapping_sub(self.min) as usize).min(last);
        (self.bounds[at], self.bounds[at + 1])
    }

    #[inline]
    fn get(&self, key: u64) -> Hit {
        let (start, end) = self.range(key);
        Hit {
            partition: 0,
            start,
            end,
        }
    }

    /// The first row of `key`, `u32::MAX` when none: only branches that
    /// go one way nearly always (hits and misses mixed at random would
    /// mispredict every other probe).
    #[inline]
    fn first_row(&self, key: u64) -> u32 {
        let (start, end) = self.range(key);
        let row = self.rows.get(start as usize).copied().unwrap_or(u32::MAX);
        if start < end {
            row
        } else {
            u32::MAX
        }
    }

    fn memory_bytes(&self) -> usize {
        (self.bounds.capacity() + self.rows.capacity()) * 4
    }
}

/// The build rows of a hash join by key (row numbers of the build chunk).
pub struct JoinIndex {
    keys: Keys,
    num_rows: usize,
    /// Threads the build ran on.
    threads: usize,
}

/// Where a probe's rows are: a range of one partition's rows (empty when
/// the key matched nothing). Plain numbers, so a probing operator can keep
/// it beside the `Arc` of its index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hit {
    partition: u32,
    start: u32,
    end: u32,
}

impl Hit {
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl JoinIndex {
    /// Indexes `keys` (the build key of each build row), in parallel when
    /// the query has several threads and the build is large.
    pub fn build(keys: ValueVector, cx: &BuildContext) -> Result<JoinIndex> {
        let rows = keys.len();
        let threads = if rows < PARALLEL_BUILD_MIN_ROWS {
            1
        } else {
            cx.threads.max(1)
        };
        let partitioned = threads > 1 || rows >= PARTITIONED_BUILD_MIN_ROWS;
        let shape = BuildShape {
            partitions: match partitioned {
                true => (threads * PARTITIONS_PER_THREAD)
                    .next_power_of_two()
                    .clamp(MIN_PARTITIONS, MAX_PARTITIONS),
                false => 1,
            },
            morsel_rows: BUILD_MORSEL_ROWS,
            threads,
            direct: true,
        };
        JoinIndex::build_with(keys, shape, cx)
    }

    fn build_with(keys: ValueVector, shape: BuildShape, cx: &BuildContext) -> Result<JoinIndex> {
        let num_rows = keys.len();
        if u32::try_from(num_rows).is_err() {
            return Err(Error::runtime(format!(
                "the build side of a hash join has {num_rows} rows, more than the 2^32 it can index"
            )));
        }
        let keys = Arc::new(keys);
        let keys = match IntDomain::of(&keys.ty) {
            Some(domain) => {
                let reader = IntReader(domain);
                let direct = match shape.direct {
                    true => DirectIndex::build(&reader, &keys, cx.memory, cx.cancel)?,
                    false => None,
                };
                match direct {
                    Some(d) => Keys::Direct(d),
                    None => Keys::Int(Partitioned::build(reader, keys, shape, cx)?.0),
                }
            }
            None => Keys::General(
                Partitioned::build(
                    GeneralReader(DefaultHashBuilder::default()),
                    keys,
                    shape,
                    cx,
                )?
                .0,
            ),
        };
        let threads = match keys {
            Keys::Direct(_) => 1,
            _ => shape.threads,
        };
        Ok(JoinIndex {
            keys,
            num_rows,
            threads,
        })
    }

    /// The build rows whose key equals `v[pos]` (see [`JoinIndex::rows`]).
    #[inline]
    pub fn lookup(&self, v: &ValueVector, pos: usize) -> Hit {
        match &self.keys {
            Keys::Direct(d) => d
                .reader
                .key_at(v, pos)
                .map_or_else(Hit::default, |k| d.get(k)),
            Keys::Int(p) => p.lookup(v, pos),
            Keys::General(p) => p.lookup(v, pos),
        }
    }

    /// The first build row whose key equals `v[p]` (`u32::MAX` for none),
    /// for each `p` of `positions`, appended to `out`: one typed loop for
    /// INT64 probes of a direct index, else [`JoinIndex::lookup`] per
    /// position.
    pub fn first_rows(&self, v: &ValueVector, positions: &[u32], out: &mut Vec<u32>) {
        if let (Keys::Direct(index), VectorData::I64(d), LogicalType::Int64) =
            (&self.keys, &v.data, &v.ty)
        {
            if index.reader.0 == IntDomain::Signed && !v.nulls.may_have_nulls() {
                out.extend(
                    positions
                        .iter()
                        .map(|&p| index.first_row(d[p as usize] as u64)),
                );
                return;
            }
        }
        out.extend(positions.iter().map(|&p| self.first_row(v, p as usize)));
    }

    /// The first build row whose key equals `v[pos]`, `u32::MAX` for none.
    #[inline]
    pub fn first_row(&self, v: &ValueVector, pos: usize) -> u32 {
        let hit = self.lookup(v, pos);
        self.rows(hit).first().copied().unwrap_or(u32::MAX)
    }

    /// The row numbers of a [`Hit`] of this index, ascending.
    #[inline]
    pub fn rows(&self, hit: Hit) -> &[u32] {
        if hit.is_empty() {
            return &[];
        }
        let rows = match &self.keys {
            Keys::Int(p) => &p.partitions[hit.partition as usize].rows,
            Keys::Direct(d) => &d.rows,
            Keys::General(p) => &p.partitions[hit.partition as usize].rows,
        };
        &rows[hit.start as usize..hit.end as usize]
    }

    /// Build rows indexed, NULL keys included.
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// Distinct keys.
    pub fn num_keys(&self) -> usize {
        match &self.keys {
            Keys::Int(p) => p.partitions.iter().map(|q| q.entries.len()).sum(),
            Keys::Direct(d) => d.num_keys,
            Keys::General(p) => p.partitions.iter().map(|q| q.entries.len()).sum(),
        }
    }

    /// Whether every key has one row (a join on a unique key: each probe
    /// finds at most one row, so it can fill a whole batch in place).
    pub fn unique(&self) -> bool {
        let rows: usize = match &self.keys {
            Keys::Int(p) => p.partitions.iter().map(|q| q.rows.len()).sum(),
            Keys::Direct(d) => d.rows.len(),
            Keys::General(p) => p.partitions.iter().map(|q| q.rows.len()).sum(),
        };
        rows == self.num_keys()
    }

    /// Threads the build ran on.
    pub fn build_threads(&self) -> usize {
        self.threads
    }

    pub fn num_partitions(&self) -> usize {
        match &self.keys {
            Keys::Int(p) => p.partitions.len(),
            Keys::Direct(_) => 1,
            Keys::General(p) => p.partitions.len(),
        }
    }

    /// Whether keys take the typed integer path (for PROFILE and tests).
    pub fn is_integer(&self) -> bool {
        matches!(self.keys, Keys::Int(_) | Keys::Direct(_))
    }

    /// Bytes the index holds (what it has charged).
    pub fn memory_bytes(&self) -> usize {
        match &self.keys {
            Keys::Int(p) => p.partitions.iter().map(Partition::memory_bytes).sum(),
            Keys::Direct(d) => d.memory_bytes(),
            Keys::General(p) => p.partitions.iter().map(Partition::memory_bytes).sum(),
        }
    }
}

#[cfg(test)]
mod tests;
