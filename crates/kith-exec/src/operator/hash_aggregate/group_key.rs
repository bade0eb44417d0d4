//! Group keys: values hashed and compared with Cypher equality, their
//! partition, the per-group key storage, and the bits of single integer or
//! id keys that find a group without building a key.

use super::*;

/// A grouping key: values compared with Cypher equality for grouping
/// (NULLs group together, 1 and 1.0 are the same group).
#[derive(Debug, Clone)]
pub struct GroupKey(pub Vec<Value>);

impl PartialEq for GroupKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.total_cmp(b).is_eq())
    }
}
impl Eq for GroupKey {}

pub(super) fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => b.hash(h),
        Value::String(s) => s.hash(h),
        // Equal entities have equal ids (see `Value::total_cmp`).
        Value::Node(n) => n.id.0.hash(h),
        Value::InternalId(id) => id.0.hash(h),
        Value::Rel(r) => r.id.0.hash(h),
        Value::Double(_) | Value::Float(_) => {
            let f = v.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                (f as i64).hash(h)
            } else {
                f.to_bits().hash(h)
            }
        }
        _ => match v.as_i64() {
            Some(i) => i.hash(h),
            None => v.to_string().hash(h),
        },
    }
}

impl Hash for GroupKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        for v in &self.0 {
            hash_value(v, h);
        }
    }
}

/// The hash of a group's key values (as [`GroupKey`] hashes them).
pub(super) fn hash_key(hasher: &DefaultHashBuilder, key: &[Value]) -> u64 {
    let mut h = hasher.build_hasher();
    for v in key {
        hash_value(v, &mut h);
    }
    h.finish()
}

/// [`GroupKey`] equality of two groups' key values.
pub(super) fn keys_equal(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.total_cmp(y).is_eq())
}

/// Node and rel ids go to partitions in runs of this many offsets (log2),
/// so each partition's dense offset map stays a run-squeezed flat array.
pub(super) const PARTITION_RUN_BITS: u32 = 10;

/// The partition (of `1 << log2_parts`) of a group's key: a function of its
/// values alone, equal keys alike, so every worker puts a key in the same
/// partition. One id key goes by its offset's run; anything else by a
/// fixed-seed hash (the tables' own hasher is seeded per table).
pub(super) fn partition_of(key: &[Value], log2_parts: u32) -> usize {
    let mask = (1usize << log2_parts) - 1;
    let id = match key {
        [Value::InternalId(id)] => Some(*id),
        [Value::Node(n)] => Some(n.id),
        [Value::Rel(r)] => Some(r.id),
        _ => None,
    };
    match id {
        Some(id) => (id.offset() >> PARTITION_RUN_BITS) as usize & mask,
        None => {
            let mut h = std::hash::DefaultHasher::new();
            for v in key {
                hash_value(v, &mut h);
            }
            // The high bits: SipHash's low bits are as good, but this keeps
            // the partition independent of any table's bucket bits.
            (h.finish() >> 32) as usize & mask
        }
    }
}

/// [`partition_of`] the one key whose bits of `kind` are `bits` (see
/// [`KeyBits::bits`]), without making its value.
pub(super) fn partition_of_bits(kind: u8, bits: u64, log2_parts: u32) -> usize {
    let mask = (1usize << log2_parts) - 1;
    match kind {
        0 => (InternalId(bits).offset() >> PARTITION_RUN_BITS) as usize & mask,
        _ => {
            // Integers hash as i64, whatever their width (`hash_value`).
            let i = match kind {
                1 => bits as i64,
                _ => i64::from(bits as i32),
            };
            let mut h = std::hash::DefaultHasher::new();
            i.hash(&mut h);
            (h.finish() >> 32) as usize & mask
        }
    }
}

/// Every group's key, in group order.
pub(super) enum GroupKeys {
    /// `keys.len()` values per group.
    Values(Vec<Value>),
    /// One integer or id key (a table whose key type has bits for every
    /// value but NULL): 8 bytes of bits per group (see [`KeyBits`]) instead
    /// of a `Value`, so that a table of many groups splits, merges and
    /// finishes as plain integers. Such groups live only in `by_bits`,
    /// never hashed as values. The NULL key's group, if any, is `null`
    /// (its bits unused).
    Bits {
        kind: u8,
        bits: Vec<u64>,
        null: Option<u32>,
    },
}

impl GroupKeys {
    /// Every group's key values, in group order.
    pub(super) fn values(&self) -> Vec<Value> {
        match self {
            GroupKeys::Values(values) => values.clone(),
            GroupKeys::Bits { kind, bits, null } => bits
                .iter()
                .enumerate()
                .map(|(g, &b)| match *null == Some(g as u32) {
                    true => Value::Null,
                    false => bits_value(*kind, b),
                })
                .collect(),
        }
    }
}

/// The key value of bits of `kind` (see [`KeyBits::bits`]).
pub(super) fn bits_value(kind: u8, bits: u64) -> Value {
    match kind {
        0 => Value::InternalId(InternalId(bits)),
        1 => Value::Int64(bits as i64),
        _ => Value::Int32(bits as i32),
    }
}

/// Groups' key bits of `kind` into `col` (sized to them already), typed
/// when the column's data is of that kind.
pub(super) fn write_bits(col: &mut ValueVector, kind: u8, bits: &[u64]) {
    match (&mut col.data, kind) {
        (VectorData::Id(d), 0) if d.len() == bits.len() => {
            for (d, &b) in d.iter_mut().zip(bits) {
                *d = InternalId(b);
            }
        }
        (VectorData::I64(d), 1) if d.len() == bits.len() => {
            for (d, &b) in d.iter_mut().zip(bits) {
                *d = b as i64;
            }
        }
        (VectorData::I32(d), 2) if d.len() == bits.len() => {
            for (d, &b) in d.iter_mut().zip(bits) {
                *d = b as i32;
            }
        }
        _ => {
            for (g, &b) in bits.iter().enumerate() {
                col.put_value(g, bits_value(kind, b));
            }
        }
    }
}

/// The first key id of a batch's positions (None without positions).
pub(super) fn keys_first_id<'a>(
    keys: &'a ValueVector,
    positions: &[u32],
) -> Option<&'a InternalId> {
    match &keys.data {
        VectorData::Id(ids) => positions.first().and_then(|&p| ids.get(p as usize)),
        _ => None,
    }
}

/// Group numbers of single integer or id keys by the key's bits, so that a
/// tuple of a group seen before costs one probe instead of a key of values
/// built and hashed.
#[derive(Default)]
pub(super) struct KeyBits {
    /// Ids of the first table seen, by offset (`u32::MAX`: no group yet):
    /// one array read per tuple, no hashing.
    pub(super) dense_table: Option<u64>,
    pub(super) dense: Vec<u32>,
    /// Every other key: (kind, bits).
    pub(super) other: HashMap<(u8, u64), u32>,
    /// A partition's table (log2 of the partitions): its ids come in runs
    /// of 2^PARTITION_RUN_BITS offsets, one run in every 2^squeeze, which
    /// the dense index leaves out.
    pub(super) squeeze: u32,
}

/// Offsets below this are mapped densely (16 MiB of group numbers at most
/// per worker); a table beyond it falls back to hashing.
pub(super) const DENSE_KEYS: u64 = 1 << 22;

impl KeyBits {
    /// The bits of position `p` of a single key vector, None for NULL and
    /// for keys that are not integers or ids.
    #[inline]
    pub(super) fn bits(v: &ValueVector, p: usize) -> Option<(u8, u64)> {
        if v.is_null(p) {
            return None;
        }
        match &v.data {
            VectorData::Id(d) => Some((0, d[p].0)),
            VectorData::I64(d) => Some((1, d[p] as u64)),
            VectorData::I32(d) => Some((2, d[p] as u64)),
            _ => None,
        }
    }

    /// [`KeyBits::bits`] of a key read back as a value.
    pub(super) fn value_bits(v: &Value) -> Option<(u8, u64)> {
        match v {
            Value::InternalId(id) => Some((0, id.0)),
            Value::Int64(i) => Some((1, *i as u64)),
            Value::Int32(i) => Some((2, *i as u64)),
            _ => None,
        }
    }

    #[inline]
    pub(super) fn get(&self, bits: (u8, u64)) -> Option<u32> {
        if let Some(i) = self.dense_index(bits) {
            return self.dense.get(i).copied().filter(|&g| g != u32::MAX);
        }
        self.other.get(&bits).copied()
    }

    pub(super) fn insert(&mut self, bits: (u8, u64), g: u32) {
        if bits.0 == 0 && self.dense_table.is_none() {
            self.dense_table = Some(InternalId(bits.1).table().0 as u64);
        }
        match self.dense_index(bits) {
            Some(i) => {
                if i >= self.dense.len() {
                    let len = (i + 1).next_power_of_two().min(DENSE_KEYS as usize);
                    self.dense.resize(len, u32::MAX);
                }
                self.dense[i] = g;
            }
            None => {
                self.other.insert(bits, g);
            }
        }
    }

    #[inline]
    pub(super) fn dense_index(&self, (kind, bits): (u8, u64)) -> Option<usize> {
        let id = InternalId(bits);
        let offset = id.offset();
        // The identity when not squeezed.
        let run = (1u64 << PARTITION_RUN_BITS) - 1;
        let index = ((offset >> (PARTITION_RUN_BITS + self.squeeze)) << PARTITION_RUN_BITS)
            | (offset & run);
        (kind == 0 && Some(id.table().0 as u64) == self.dense_table && index < DENSE_KEYS)
            .then_some(index as usize)
    }

    pub(super) fn bytes(&self) -> usize {
        self.dense.len() * 4 + self.other.capacity() * 24
    }
}
