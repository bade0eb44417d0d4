//! Hash aggregation: each worker aggregates into its own table (factorized
//! input counted with multiplicities, never flattened for count/sum), then the
//! tables are merged once at the end. A worker with many groups splits its
//! table into partitions by key ([`HashAggregate::split`]); each partition
//! then merges every worker's piece and finishes on its own, in parallel.

// foldhash (hashbrown's default) instead of SipHash: a group key is hashed per
// input tuple.
use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use std::hash::BuildHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use kith_common::{Chunk, InternalId, LogicalType, Result, Value, ValueVector, VectorData};
use kith_planner::bound::BoundAggregate;
use kith_planner::expr::{BoundExprKind, SlotId};
use kith_storage::TableData;

use super::offset_counts::{ByOffset, OffsetTable};
use super::{LocalSink, QueryContext};
use crate::aggregate_function::{AggregateKind, AggregateSpec, AggregateState, RepeatRule};
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::result_set::{ResultSet, SlotLayout};

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

fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
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
fn hash_key(hasher: &DefaultHashBuilder, key: &[Value]) -> u64 {
    let mut h = hasher.build_hasher();
    for v in key {
        hash_value(v, &mut h);
    }
    h.finish()
}

/// [`GroupKey`] equality of two groups' key values.
fn keys_equal(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.total_cmp(y).is_eq())
}

/// A worker's table with at least this many groups is split into
/// partitions that merge and finish in parallel; smaller ones merge into
/// one table as they finish.
#[cfg(not(kith_tiny))]
pub const PARTITION_MIN_GROUPS: usize = 4096;
#[cfg(kith_tiny)]
pub const PARTITION_MIN_GROUPS: usize = 2;

/// Node and rel ids go to partitions in runs of this many offsets (log2),
/// so each partition's dense offset map stays a run-squeezed flat array.
const PARTITION_RUN_BITS: u32 = 10;

/// The partition (of `1 << log2_parts`) of a group's key: a function of its
/// values alone, equal keys alike, so every worker puts a key in the same
/// partition. One id key goes by its offset's run; anything else by a
/// fixed-seed hash (the tables' own hasher is seeded per table).
fn partition_of(key: &[Value], log2_parts: u32) -> usize {
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
fn partition_of_bits(kind: u8, bits: u64, log2_parts: u32) -> usize {
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

pub struct AggregateDef {
    pub spec: AggregateSpec,
    pub arg: Option<kith_planner::expr::BoundExpr>,
}

impl AggregateDef {
    pub fn new(a: &BoundAggregate) -> Result<AggregateDef> {
        let input = a.arg.as_ref().map(|e| e.ty.clone());
        let func = if a.arg.is_none() && a.function == "count" {
            "count_star"
        } else {
            a.function.as_str()
        };
        Ok(AggregateDef {
            spec: AggregateSpec::from_name(func, a.distinct, input, a.ty.clone())?,
            arg: a.arg.clone(),
        })
    }
}

pub struct HashAggregate {
    ctx: Arc<QueryContext>,
    keys: Vec<Evaluator>,
    key_scratch: Vec<ValueVector>,
    specs: Arc<Vec<AggregateDef>>,
    args: Vec<Option<Evaluator>>,
    arg_scratch: Vec<ValueVector>,
    /// Each group's number in `key_values` / `columns`, found by its
    /// key's hash (the key is kept once, in `key_values`).
    groups: HashTable<usize>,
    hasher: DefaultHashBuilder,
    /// Every group's key, in group order: no allocation per group.
    key_values: GroupKeys,
    /// How many groups there are.
    num_groups: usize,
    /// Scratch: a key being looked up by its values.
    key_buf: Vec<Value>,
    /// Per aggregate, its state in every group.
    columns: Vec<StateColumn>,
    /// One integer or id key per group: its group number by the key's bits.
    by_bits: KeyBits,
    /// A grouped count(*) by one id key, held by offset while it can be
    /// (see [`ByOffset`]); the groups above are empty then.
    by_offset: Option<ByOffset>,
    /// Whether only a key's presence is read of its count (see
    /// [`HashAggregate::count_presence`]).
    presence: bool,
    /// The group of each position of the batch (one key per tuple).
    batch_groups: Vec<u32>,
    /// The single group of an aggregate without keys.
    global: Option<Vec<AggregateState>>,
    key_kinds: Vec<Evaluated>,
    arg_kinds: Vec<Option<Evaluated>>,
    /// Arguments that are plain slots are read in place (no copy into a
    /// scratch vector): their slot, and once resolved, (chunk, vector).
    direct_slots: Vec<Option<SlotId>>,
    direct_pos: Option<Vec<Option<(usize, usize)>>>,
    /// Keys that are plain slots, read in place like such arguments.
    key_slots: Vec<Option<SlotId>>,
    key_pos: Option<Vec<Option<(usize, usize)>>>,
    /// Per key of this batch: (chunk, vector, flat position) when read in place.
    key_direct: Vec<Option<(usize, usize, usize)>>,
    memory: crate::memory::MemoryCharge,
    /// Per argument of this batch: (chunk, vector, flat position) when read in place.
    arg_direct: Vec<Option<(usize, usize, usize)>>,
    positions: Vec<u32>,
    /// The unflat group of the last batch without keys, and each
    /// aggregate's state over that batch alone (multiplicity 1), for an
    /// extend that hands the same batch on again (`ChunkState::generation`;
    /// `MATCH (a)-[]->(b)-[]->(c) RETURN min(a.x)` extends `b` to the same
    /// `a`s for every `c`): see [`RepeatRule`].
    last_unflat: Option<(usize, crate::result_set::ChunkState)>,
    batch_states: Vec<Option<AggregateState>>,
}

impl HashAggregate {
    /// `key_slots`: per key, its slot when the key is a plain slot.
    pub fn new(
        ctx: Arc<QueryContext>,
        keys: Vec<Evaluator>,
        key_slots: Vec<Option<SlotId>>,
        specs: Arc<Vec<AggregateDef>>,
    ) -> Result<HashAggregate> {
        let args = specs
            .iter()
            .map(|d| d.arg.as_ref().map(Evaluator::new).transpose())
            .collect::<Result<Vec<_>>>()?;
        let key_scratch = keys
            .iter()
            .map(|k| ValueVector::new(k.result_type().clone(), 0))
            .collect();
        let arg_scratch = args
            .iter()
            .map(|a| {
                ValueVector::new(
                    a.as_ref()
                        .map_or(LogicalType::Int64, |e| e.result_type().clone()),
                    0,
                )
            })
            .collect();
        let direct_slots = specs
            .iter()
            .map(|d| match d.arg.as_ref().map(|e| &e.kind) {
                Some(BoundExprKind::Slot(s)) => Some(*s),
                _ => None,
            })
            .collect();
        // A global aggregate has one group even over no input.
        let global = keys
            .is_empty()
            .then(|| specs.iter().map(|d| d.spec.new_state()).collect());
        let columns = specs.iter().map(|d| StateColumn::new(&d.spec)).collect();
        let bits_kind = match keys.as_slice() {
            [k] => match k.result_type() {
                LogicalType::InternalId | LogicalType::Node | LogicalType::Rel => Some(0),
                LogicalType::Int64 => Some(1),
                LogicalType::Int32 => Some(2),
                _ => None,
            },
            _ => None,
        };
        Ok(HashAggregate {
            ctx,
            keys,
            key_scratch,
            specs,
            args,
            arg_scratch,
            groups: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            key_values: match bits_kind {
                Some(kind) => GroupKeys::Bits {
                    kind,
                    bits: Vec::new(),
                    null: None,
                },
                None => GroupKeys::Values(Vec::new()),
            },
            num_groups: 0,
            key_buf: Vec::new(),
            columns,
            by_bits: KeyBits::default(),
            by_offset: None,
            presence: false,
            batch_groups: Vec::new(),
            global,
            key_kinds: Vec::new(),
            arg_kinds: Vec::new(),
            direct_slots,
            direct_pos: None,
            key_slots,
            key_pos: None,
            key_direct: Vec::new(),
            memory: crate::memory::MemoryCharge::default(),
            arg_direct: Vec::new(),
            positions: Vec::new(),
            last_unflat: None,
            batch_states: Vec::new(),
        })
    }

    /// Merges another worker's groups into this one.
    pub fn merge(&mut self, mut other: HashAggregate) -> Result<()> {
        if let (Some(mine), Some(theirs)) = (self.by_offset.as_mut(), other.by_offset.as_mut()) {
            if mine.add(theirs) {
                return Ok(());
            }
        }
        self.groups_by_number();
        other.groups_by_number();
        match (self.global.as_mut(), other.global) {
            (Some(mine), Some(theirs)) => {
                for (m, s) in mine.iter_mut().zip(theirs) {
                    m.combine(s)?;
                }
            }
            (None, Some(theirs)) => self.global = Some(theirs),
            _ => {}
        }
        // Their groups' numbers here, then each aggregate's states combined.
        let k = self.keys.len();
        let mut target = Vec::with_capacity(other.num_groups);
        match other.key_values {
            GroupKeys::Bits { kind, bits, null } => {
                for (j, b) in bits.into_iter().enumerate() {
                    let bits = (null != Some(j as u32)).then_some((kind, b));
                    target.push(self.group_by_bits(bits, |buf| {
                        buf.push(match bits {
                            Some(_) => bits_value(kind, b),
                            None => Value::Null,
                        })
                    }));
                }
            }
            GroupKeys::Values(values) => {
                let mut theirs = values.into_iter();
                let mut key = Vec::with_capacity(k);
                for _ in 0..other.num_groups {
                    key.clear();
                    key.extend(theirs.by_ref().take(k));
                    let bits = match key.as_slice() {
                        [v] => KeyBits::value_bits(v),
                        _ => None,
                    };
                    target.push(self.group_by_bits(bits, |buf| buf.append(&mut key)));
                }
            }
        }
        for (mine, theirs) in self.columns.iter_mut().zip(other.columns) {
            mine.combine(theirs, &target)?;
        }
        Ok(())
    }

    /// How many groups this table holds (0 for an aggregate without keys).
    pub fn num_groups(&self) -> usize {
        match &self.by_offset {
            Some(d) => d.groups(),
            None => self.num_groups,
        }
    }

    /// Whether the table is counts by offset ([`ByOffset`]): workers'
    /// such tables merge by adding their arrays, cheaper than splitting.
    pub fn counts_by_offset(&self) -> bool {
        self.by_offset.is_some()
    }

    /// Turns counts by offset into numbered groups (in offset order), as
    /// every operation but counting and merging such tables needs.
    fn groups_by_number(&mut self) {
        let Some(d) = self.by_offset.take() else {
            return;
        };
        let (bits, counts) = d.into_groups();
        for (g, &b) in bits.iter().enumerate() {
            self.by_bits.insert((0, b), g as u32);
        }
        self.set_count_groups(bits, counts);
    }

    /// Numbered groups of one id key (`bits`) and one count(*) (`counts`),
    /// from [`ByOffset::into_groups`].
    fn set_count_groups(&mut self, bits: Vec<u64>, counts: Vec<u64>) {
        self.num_groups = bits.len();
        self.key_values = GroupKeys::Bits {
            kind: 0,
            bits,
            null: None,
        };
        self.columns = vec![StateColumn::Count(counts)];
    }

    /// A table to merge partition `part` of `1 << log2_parts` into: its
    /// dense id map squeezes out the other partitions' offset runs.
    pub fn for_partition(mut self, log2_parts: u32) -> HashAggregate {
        self.by_bits.squeeze = log2_parts;
        self
    }

    /// Indexes an unindexed piece's groups (see [`HashAggregate::split`]),
    /// so that other pieces merge into it: cheaper than merging it into an
    /// empty table, which would copy every group's key and states.
    pub fn index(&mut self) {
        self.groups_by_number();
        let k = self.keys.len();
        let values = match &self.key_values {
            GroupKeys::Bits { kind, bits, null } => {
                for (g, &b) in bits.iter().enumerate() {
                    if *null != Some(g as u32) {
                        self.by_bits.insert((*kind, b), g as u32);
                    }
                }
                return;
            }
            GroupKeys::Values(values) => values,
        };
        for g in 0..self.num_groups {
            let key = Self::group_key(values, k, g);
            let bits = match key {
                [v] => KeyBits::value_bits(v),
                _ => None,
            };
            if let Some(b) = bits {
                self.by_bits.insert(b, g as u32);
            }
            // Found by value too: an equal key of another type (1.0 for 1)
            // may come without bits.
            let hash = hash_key(&self.hasher, key);
            let hasher = &self.hasher;
            self.groups.insert_unique(hash, g, |&g| {
                hash_key(hasher, Self::group_key(values, k, g))
            });
        }
    }

    /// This table's groups split by [`partition_of`] into `1 << log2_parts`
    /// pieces, each in this table's group order, unindexed: a piece is only
    /// merged from. `empty` makes a table like this one. The memory charge
    /// stays with the first piece.
    pub fn split(
        mut self,
        log2_parts: u32,
        empty: impl Fn() -> Result<HashAggregate>,
    ) -> Result<Vec<HashAggregate>> {
        self.groups_by_number();
        let k = self.keys.len();
        if k == 0 || self.global.is_some() {
            return Err(kith_common::Error::internal(
                "an aggregate without keys is not split",
            ));
        }
        let parts = 1usize << log2_parts;
        let part_of: Vec<u32> = match &self.key_values {
            GroupKeys::Bits { kind, bits, null } => {
                let mut part_of: Vec<u32> = bits
                    .iter()
                    .map(|&b| partition_of_bits(*kind, b, log2_parts) as u32)
                    .collect();
                if let Some(g) = *null {
                    part_of[g as usize] = partition_of(&[Value::Null], log2_parts) as u32;
                }
                part_of
            }
            GroupKeys::Values(values) => values
                .chunks_exact(k)
                .map(|key| partition_of(key, log2_parts) as u32)
                .collect(),
        };
        let mut counts = vec![0usize; parts];
        for &p in &part_of {
            counts[p as usize] += 1;
        }
        let mut pieces = (0..parts).map(|_| empty()).collect::<Result<Vec<_>>>()?;
        for (piece, &n) in pieces.iter_mut().zip(&counts) {
            piece.num_groups = n;
            match &mut piece.key_values {
                GroupKeys::Bits { bits, .. } => bits.reserve(n),
                GroupKeys::Values(values) => values.reserve(n * k),
            }
        }
        match std::mem::replace(&mut self.key_values, GroupKeys::Values(Vec::new())) {
            GroupKeys::Bits { bits, null, .. } => {
                for (g, b) in bits.into_iter().enumerate() {
                    // A piece of a table like this one has bits too.
                    let GroupKeys::Bits {
                        bits: to,
                        null: to_null,
                        ..
                    } = &mut pieces[part_of[g] as usize].key_values
                    else {
                        return Err(kith_common::Error::internal("aggregate pieces differ"));
                    };
                    if null == Some(g as u32) {
                        *to_null = Some(to.len() as u32);
                    }
                    to.push(b);
                }
            }
            GroupKeys::Values(values) => {
                // Found by value, as this table's groups are.
                for piece in &mut pieces {
                    piece.keys_as_values();
                }
                for (i, v) in values.into_iter().enumerate() {
                    if let GroupKeys::Values(to) = &mut pieces[part_of[i / k] as usize].key_values {
                        to.push(v);
                    }
                }
            }
        }
        for (c, column) in std::mem::take(&mut self.columns).into_iter().enumerate() {
            for (piece, split) in pieces.iter_mut().zip(column.split(&part_of, &counts)) {
                piece.columns[c] = split;
            }
        }
        pieces[0].memory = std::mem::take(&mut self.memory);
        Ok(pieces)
    }

    /// The group of a key with `bits` (see [`KeyBits::bits`]; None for
    /// keys without), its values pushed by `key` onto the vector it is given
    /// only when they are needed: to look the group up by value, or to
    /// create it.
    fn group_by_bits(&mut self, bits: Option<(u8, u64)>, key: impl FnOnce(&mut Vec<Value>)) -> u32 {
        let Some(b) = bits else {
            return self.group_of(key) as u32;
        };
        if let Some(g) = self.by_bits.get(b) {
            return g;
        }
        let g = match &mut self.key_values {
            GroupKeys::Bits { kind, bits, .. } if *kind == b.0 => {
                bits.push(b.1);
                self.push_group() as u32
            }
            _ => self.group_of(key) as u32,
        };
        self.by_bits.insert(b, g);
        g
    }

    /// Adds a group whose key values were just pushed onto `key_values`.
    fn push_group(&mut self) -> usize {
        for (column, d) in self.columns.iter_mut().zip(self.specs.iter()) {
            column.push(&d.spec);
        }
        self.num_groups += 1;
        self.num_groups - 1
    }

    /// Group `g`'s key values.
    fn group_key(key_values: &[Value], k: usize, g: usize) -> &[Value] {
        &key_values[g * k..(g + 1) * k]
    }

    /// The number of the group of the key `key` pushes, created (with
    /// fresh states) when new.
    fn group_of(&mut self, key: impl FnOnce(&mut Vec<Value>)) -> usize {
        let mut buf = std::mem::take(&mut self.key_buf);
        buf.clear();
        key(&mut buf);
        if let GroupKeys::Bits { null, bits, .. } = &mut self.key_values {
            if let [Value::Null] = buf.as_slice() {
                self.key_buf = buf;
                if let Some(g) = *null {
                    return g as usize;
                }
                *null = Some(bits.len() as u32);
                bits.push(0);
                return self.push_group();
            }
            // A key without bits of the table's kind (not one its type
            // makes): the groups become values from here on.
            self.keys_as_values();
        }
        let k = self.keys.len();
        let hash = hash_key(&self.hasher, &buf);
        let GroupKeys::Values(values) = &mut self.key_values else {
            unreachable!("keys_as_values leaves values");
        };
        let found = self
            .groups
            .find(hash, |&g| keys_equal(Self::group_key(values, k, g), &buf))
            .copied();
        let g = match found {
            Some(g) => g,
            None => {
                let g = self.num_groups;
                let hasher = &self.hasher;
                self.groups.insert_unique(hash, g, |&g| {
                    hash_key(hasher, Self::group_key(values, k, g))
                });
                values.append(&mut buf);
                self.push_group()
            }
        };
        self.key_buf = buf;
        g
    }

    /// Turns a table of [`GroupKeys::Bits`] into one of values, every
    /// group found by value from then on (as a table whose key type has
    /// values without bits).
    fn keys_as_values(&mut self) {
        if let GroupKeys::Values(_) = self.key_values {
            return;
        }
        let values = self.key_values.values();
        let hasher = &self.hasher;
        self.groups.clear();
        for g in 0..values.len() {
            let hash = hash_key(hasher, Self::group_key(&values, 1, g));
            self.groups.insert_unique(hash, g, |&g| {
                hash_key(hasher, Self::group_key(&values, 1, g))
            });
        }
        self.key_values = GroupKeys::Values(values);
    }

    /// Makes a grouped count(*) by one id key read only as whether each
    /// key counted (an EXISTS subquery's, `KeyCounts::Presence`): a table
    /// by offset is then a bit per node, and its groups count 1 each.
    pub fn count_presence(&mut self) {
        self.presence = true;
    }

    /// The table's counts by offset as arrays, for a subquery's table
    /// ([`OffsetTable`]); None (the table unchanged) when it holds numbered
    /// groups, or counts whose array would reach past `max_offsets`.
    pub fn take_offset_table(&mut self, max_offsets: u64) -> Option<OffsetTable> {
        match self.by_offset.take()?.into_table(max_offsets) {
            Ok(t) => Some(t),
            Err(d) => {
                self.by_offset = Some(d);
                None
            }
        }
    }

    /// The groups as rows: key columns then aggregate columns.
    pub fn finish(mut self, key_types: &[LogicalType], agg_types: &[LogicalType]) -> Chunk {
        let types: Vec<LogicalType> = key_types.iter().chain(agg_types).cloned().collect();
        let mut out = Chunk::new(&types, 0);
        if let Some(states) = self.global.take() {
            for (col, state) in out.columns.iter_mut().zip(states) {
                col.push_owned(state.into_value());
            }
            out.num_rows = 1;
            return out;
        }
        if let Some(d) = self.by_offset.take() {
            let (bits, counts) = d.into_groups();
            // The id and INT64 columns take the vectors as they are.
            if let [keys @ ValueVector {
                data: VectorData::Id(_),
                ..
            }, n @ ValueVector {
                data: VectorData::I64(_),
                ..
            }] = out.columns.as_mut_slice()
            {
                out.num_rows = bits.len();
                keys.data = VectorData::Id(bits.into_iter().map(InternalId).collect());
                n.data = VectorData::I64(counts.into_iter().map(|c| c as i64).collect());
                return out;
            }
            self.set_count_groups(bits, counts);
        }
        let n = self.num_groups;
        out.num_rows = n;
        // Sized once, then each group's values stored in place.
        for col in &mut out.columns {
            col.resize(n);
        }
        let (key_cols, agg_cols) = out.columns.split_at_mut(key_types.len());
        let k = key_cols.len().max(1);
        match std::mem::replace(&mut self.key_values, GroupKeys::Values(Vec::new())) {
            GroupKeys::Bits { kind, bits, null } => {
                if let [col] = key_cols {
                    write_bits(col, kind, &bits);
                    if let Some(g) = null {
                        col.set_null(g as usize, true);
                    }
                }
            }
            GroupKeys::Values(values) => {
                for (i, v) in values.into_iter().enumerate() {
                    if let Some(col) = key_cols.get_mut(i % k) {
                        col.put_value(i / k, v);
                    }
                }
            }
        }
        for (col, states) in agg_cols.iter_mut().zip(std::mem::take(&mut self.columns)) {
            states.into_column(col);
        }
        out
    }
}

/// Every group's key, in group order.
enum GroupKeys {
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
    fn values(&self) -> Vec<Value> {
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
fn bits_value(kind: u8, bits: u64) -> Value {
    match kind {
        0 => Value::InternalId(InternalId(bits)),
        1 => Value::Int64(bits as i64),
        _ => Value::Int32(bits as i32),
    }
}

/// Groups' key bits of `kind` into `col` (sized to them already), typed
/// when the column's data is of that kind.
fn write_bits(col: &mut ValueVector, kind: u8, bits: &[u64]) {
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

/// The states of one aggregate, one per group.
enum StateColumn {
    /// count(*) and count(x) without DISTINCT: a counter per group, so a
    /// grouped count touches one word per tuple instead of a whole state.
    Count(Vec<u64>),
    /// collect(x) without DISTINCT: the list per group, pushed to directly
    /// (24 bytes per group to reach instead of a whole state), and how
    /// many values the lists hold (for the memory charge).
    Collect(Vec<Vec<Value>>, usize),
    /// collect(x) of INT64 values: the lists as integers (8 bytes an
    /// element), output as integer lists (`Value::int_list`). Becomes
    /// `Collect` if an input is not an integer vector.
    CollectInts(Vec<Vec<i64>>, usize),
    States(Vec<AggregateState>),
}

impl StateColumn {
    fn new(spec: &AggregateSpec) -> StateColumn {
        match spec.func {
            AggregateKind::CountStar | AggregateKind::Count if !spec.distinct => {
                StateColumn::Count(Vec::new())
            }
            AggregateKind::Collect if !spec.distinct => match spec.input_type {
                Some(LogicalType::Int64) => StateColumn::CollectInts(Vec::new(), 0),
                _ => StateColumn::Collect(Vec::new(), 0),
            },
            _ => StateColumn::States(Vec::new()),
        }
    }

    /// A `CollectInts` column as `Collect` (an input of another type).
    fn collect_values(&mut self) {
        if let StateColumn::CollectInts(lists, items) = self {
            let lists = std::mem::take(lists)
                .into_iter()
                .map(|l| l.into_iter().map(Value::Int64).collect())
                .collect();
            *self = StateColumn::Collect(lists, *items);
        }
    }

    fn push(&mut self, spec: &AggregateSpec) {
        match self {
            StateColumn::Count(c) => c.push(0),
            StateColumn::Collect(l, _) => l.push(Vec::new()),
            StateColumn::CollectInts(l, _) => l.push(Vec::new()),
            StateColumn::States(s) => s.push(spec.new_state()),
        }
    }

    /// Group `g` sees `positions` of `input` (`None`: count(*)), each
    /// standing for `multiplicity` tuples.
    fn update(
        &mut self,
        g: usize,
        input: Option<&ValueVector>,
        positions: &[u32],
        multiplicity: u64,
    ) -> Result<()> {
        match self {
            StateColumn::Count(c) => {
                c[g] += live_count(input, positions) * multiplicity;
                Ok(())
            }
            StateColumn::Collect(l, items) => {
                if let Some(input) = input {
                    // One group's batch (a flat key over unflat values):
                    // grown once, not doubling per push.
                    l[g].reserve(positions.len() * multiplicity as usize);
                    for &p in positions {
                        *items += collect_into(&mut l[g], input, p, multiplicity);
                    }
                }
                Ok(())
            }
            StateColumn::CollectInts(l, items) => {
                let Some(input) = input else {
                    return Ok(());
                };
                let VectorData::I64(d) = &input.data else {
                    self.collect_values();
                    return self.update(g, Some(input), positions, multiplicity);
                };
                l[g].reserve(positions.len() * multiplicity as usize);
                if multiplicity == 1 && !input.nulls.may_have_nulls() {
                    // The common batch: one copy per position, no tests.
                    l[g].extend(positions.iter().map(|&p| d[p as usize]));
                    *items += positions.len();
                    return Ok(());
                }
                for &p in positions {
                    if !input.is_null(p as usize) {
                        *items += push_times(&mut l[g], d[p as usize], multiplicity);
                    }
                }
                Ok(())
            }
            StateColumn::States(s) => s[g].update(input, positions, multiplicity),
        }
    }

    /// Position `positions[i]` belongs to group `group(i)` and stands for
    /// its weight in `rs`; it is read at `flat` when the input is flat.
    fn update_weighted(
        &mut self,
        group: impl Fn(usize) -> usize,
        input: Option<&ValueVector>,
        positions: &[u32],
        flat: Option<usize>,
        rs: &ResultSet,
    ) -> Result<()> {
        for (i, &p) in positions.iter().enumerate() {
            let at = flat.map_or(p, |f| f as u32);
            self.update(group(i), input, &[at], rs.weight_of(p as usize, 0))?;
        }
        Ok(())
    }

    /// Position `positions[i]` belongs to group `groups[i]`; each stands for
    /// `multiplicity` tuples.
    fn update_each(
        &mut self,
        groups: &[u32],
        input: Option<&ValueVector>,
        positions: &[u32],
        multiplicity: u64,
    ) -> Result<()> {
        match (self, input) {
            (StateColumn::Count(c), None) => {
                for &g in groups {
                    c[g as usize] += multiplicity;
                }
            }
            (StateColumn::Count(c), Some(input)) => {
                for (&g, &p) in groups.iter().zip(positions) {
                    c[g as usize] += u64::from(!input.is_null(p as usize)) * multiplicity;
                }
            }
            (StateColumn::Collect(l, items), Some(input)) => {
                for (&g, &p) in groups.iter().zip(positions) {
                    *items += collect_into(&mut l[g as usize], input, p, multiplicity);
                }
            }
            (StateColumn::Collect(..) | StateColumn::CollectInts(..), None) => {}
            (column @ StateColumn::CollectInts(..), Some(input)) => {
                let StateColumn::CollectInts(l, items) = &mut *column else {
                    return Ok(());
                };
                let VectorData::I64(d) = &input.data else {
                    column.collect_values();
                    return column.update_each(groups, Some(input), positions, multiplicity);
                };
                if multiplicity == 1 && !input.nulls.may_have_nulls() {
                    // A run of positions of one group (a source's rels, see
                    // `Extend::replicas`) extends its list once.
                    let mut i = 0;
                    while i < groups.len() {
                        let g = groups[i];
                        let run = groups[i..].iter().take_while(|&&h| h == g).count();
                        let list = &mut l[g as usize];
                        list.extend(positions[i..i + run].iter().map(|&p| d[p as usize]));
                        *items += run;
                        i += run;
                    }
                    return Ok(());
                }
                for (&g, &p) in groups.iter().zip(positions) {
                    if !input.is_null(p as usize) {
                        *items += push_times(&mut l[g as usize], d[p as usize], multiplicity);
                    }
                }
            }
            (StateColumn::States(s), input) => {
                for (&g, &p) in groups.iter().zip(positions) {
                    s[g as usize].update(input, &[p], multiplicity)?;
                }
            }
        }
        Ok(())
    }

    /// Adds `other`'s group `j` into this column's group `target[j]`.
    fn combine(&mut self, mut other: StateColumn, target: &[u32]) -> Result<()> {
        // One worker's collected integers may have met another input type.
        if matches!(self, StateColumn::Collect(..)) {
            other.collect_values();
        }
        if matches!(other, StateColumn::Collect(..)) {
            self.collect_values();
        }
        match (self, other) {
            (StateColumn::Count(mine), StateColumn::Count(theirs)) => {
                for (&t, c) in target.iter().zip(theirs) {
                    mine[t as usize] += c;
                }
            }
            (StateColumn::Collect(mine, items), StateColumn::Collect(theirs, more)) => {
                *items += more;
                append_lists(mine, theirs, target);
            }
            (StateColumn::CollectInts(mine, items), StateColumn::CollectInts(theirs, more)) => {
                *items += more;
                append_lists(mine, theirs, target);
            }
            (StateColumn::States(mine), StateColumn::States(theirs)) => {
                for (&t, s) in target.iter().zip(theirs) {
                    mine[t as usize].combine(s)?;
                }
            }
            _ => return Err(kith_common::Error::internal("aggregate states differ")),
        }
        Ok(())
    }

    /// Group `g`'s state moved to piece `part_of[g]` (of `counts.len()`,
    /// `counts[p]` groups each), in group order.
    fn split(self, part_of: &[u32], counts: &[usize]) -> Vec<StateColumn> {
        fn spread<T>(v: Vec<T>, part_of: &[u32], counts: &[usize]) -> Vec<Vec<T>> {
            let mut out: Vec<Vec<T>> = counts.iter().map(|&n| Vec::with_capacity(n)).collect();
            for (x, &p) in v.into_iter().zip(part_of) {
                out[p as usize].push(x);
            }
            out
        }
        // A list column's pieces, each with its count of values.
        fn lists<T>(
            l: Vec<Vec<T>>,
            part_of: &[u32],
            counts: &[usize],
            column: fn(Vec<Vec<T>>, usize) -> StateColumn,
        ) -> Vec<StateColumn> {
            spread(l, part_of, counts)
                .into_iter()
                .map(|l| {
                    let n = l.iter().map(Vec::len).sum();
                    column(l, n)
                })
                .collect()
        }
        match self {
            StateColumn::Count(c) => spread(c, part_of, counts)
                .into_iter()
                .map(StateColumn::Count)
                .collect(),
            StateColumn::Collect(l, _) => lists(l, part_of, counts, StateColumn::Collect),
            StateColumn::CollectInts(l, _) => lists(l, part_of, counts, StateColumn::CollectInts),
            StateColumn::States(s) => spread(s, part_of, counts)
                .into_iter()
                .map(StateColumn::States)
                .collect(),
        }
    }

    /// The values into `col`, sized to the groups already: a count column
    /// becomes its integers as they are.
    fn into_column(self, col: &mut ValueVector) {
        match (self, &mut col.data) {
            (StateColumn::Count(c), VectorData::I64(d)) if d.len() == c.len() => {
                for (d, n) in d.iter_mut().zip(c) {
                    *d = n as i64;
                }
            }
            (other, _) => {
                let mut g = 0;
                other.into_values(|v| {
                    col.put_value(g, v);
                    g += 1;
                });
            }
        }
    }

    fn into_values(self, mut push: impl FnMut(Value)) {
        match self {
            StateColumn::Count(c) => c.into_iter().for_each(|n| push(Value::Int64(n as i64))),
            StateColumn::Collect(l, _) => l.into_iter().for_each(|l| push(Value::list(l))),
            StateColumn::CollectInts(l, _) => l.into_iter().for_each(|l| push(Value::int_list(l))),
            StateColumn::States(s) => s.into_iter().for_each(|s| push(s.into_value())),
        }
    }
}

/// Appends each of `theirs` to `mine[target[j]]` (moved when that is
/// empty).
fn append_lists<T>(mine: &mut [Vec<T>], theirs: Vec<Vec<T>>, target: &[u32]) {
    for (&t, l) in target.iter().zip(theirs) {
        let into = &mut mine[t as usize];
        if into.is_empty() {
            *into = l;
        } else {
            into.extend(l);
        }
    }
}

/// collect(): position `p` of `input`, `multiplicity` times (NULLs are
/// left out); how many values it added.
#[inline]
fn collect_into(list: &mut Vec<Value>, input: &ValueVector, p: u32, multiplicity: u64) -> usize {
    if input.is_null(p as usize) {
        return 0;
    }
    push_times(list, input.get_value(p as usize), multiplicity)
}

/// Pushes `v` onto `list` `multiplicity` times (at least once); how many.
#[inline]
fn push_times<T: Clone>(list: &mut Vec<T>, v: T, multiplicity: u64) -> usize {
    for _ in 1..multiplicity {
        list.push(v.clone());
    }
    list.push(v);
    multiplicity.max(1) as usize
}

/// How many of `positions` of `input` are not NULL (all of them for count(*)).
fn live_count(input: Option<&ValueVector>, positions: &[u32]) -> u64 {
    match input {
        Some(v) if v.nulls.may_have_nulls() => positions
            .iter()
            .filter(|&&p| !v.is_null(p as usize))
            .count() as u64,
        _ => positions.len() as u64,
    }
}

/// The first key id of a batch's positions (None without positions).
fn keys_first_id<'a>(keys: &'a ValueVector, positions: &[u32]) -> Option<&'a InternalId> {
    match &keys.data {
        VectorData::Id(ids) => positions.first().and_then(|&p| ids.get(p as usize)),
        _ => None,
    }
}

/// Group numbers of single integer or id keys by the key's bits, so that a
/// tuple of a group seen before costs one probe instead of a key of values
/// built and hashed.
#[derive(Default)]
struct KeyBits {
    /// Ids of the first table seen, by offset (`u32::MAX`: no group yet):
    /// one array read per tuple, no hashing.
    dense_table: Option<u64>,
    dense: Vec<u32>,
    /// Every other key: (kind, bits).
    other: HashMap<(u8, u64), u32>,
    /// A partition's table (log2 of the partitions): its ids come in runs
    /// of 2^PARTITION_RUN_BITS offsets, one run in every 2^squeeze, which
    /// the dense index leaves out.
    squeeze: u32,
}

/// Offsets below this are mapped densely (16 MiB of group numbers at most
/// per worker); a table beyond it falls back to hashing.
const DENSE_KEYS: u64 = 1 << 22;

impl KeyBits {
    /// The bits of position `p` of a single key vector, None for NULL and
    /// for keys that are not integers or ids.
    #[inline]
    fn bits(v: &ValueVector, p: usize) -> Option<(u8, u64)> {
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
    fn value_bits(v: &Value) -> Option<(u8, u64)> {
        match v {
            Value::InternalId(id) => Some((0, id.0)),
            Value::Int64(i) => Some((1, *i as u64)),
            Value::Int32(i) => Some((2, *i as u64)),
            _ => None,
        }
    }

    #[inline]
    fn get(&self, bits: (u8, u64)) -> Option<u32> {
        if let Some(i) = self.dense_index(bits) {
            return self.dense.get(i).copied().filter(|&g| g != u32::MAX);
        }
        self.other.get(&bits).copied()
    }

    fn insert(&mut self, bits: (u8, u64), g: u32) {
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
    fn dense_index(&self, (kind, bits): (u8, u64)) -> Option<usize> {
        let id = InternalId(bits);
        let offset = id.offset();
        // The identity when not squeezed.
        let run = (1u64 << PARTITION_RUN_BITS) - 1;
        let index = ((offset >> (PARTITION_RUN_BITS + self.squeeze)) << PARTITION_RUN_BITS)
            | (offset & run);
        (kind == 0 && Some(id.table().0 as u64) == self.dense_table && index < DENSE_KEYS)
            .then_some(index as usize)
    }

    fn bytes(&self) -> usize {
        self.dense.len() * 4 + self.other.capacity() * 24
    }
}

impl LocalSink for HashAggregate {
    fn consume(&mut self, rs: &ResultSet, layout: &SlotLayout) -> Result<()> {
        let total = rs.num_tuples();
        if total == 0 {
            return Ok(());
        }
        let ectx = EvalContext {
            rs,
            layout,
            params: &self.ctx.params,
            subqueries: &self.ctx.subqueries,
        };
        // Reused across calls: consume runs once per extended node.
        let mut key_kinds = std::mem::take(&mut self.key_kinds);
        let mut arg_kinds = std::mem::take(&mut self.arg_kinds);
        key_kinds.clear();
        arg_kinds.clear();
        if self.key_pos.is_none() {
            self.key_pos = Some(resolve_slots(&self.key_slots, layout));
        }
        self.key_direct.clear();
        for (i, (k, out)) in self
            .keys
            .iter_mut()
            .zip(self.key_scratch.iter_mut())
            .enumerate()
        {
            let direct = self
                .key_pos
                .as_ref()
                .and_then(|d| d.get(i).copied().flatten());
            // In place only when the vector has the key's own type.
            let direct = direct.filter(|&(c, v)| rs.chunks[c].vectors[v].ty == *k.result_type());
            if let Some(pos) = direct {
                let (kind, at) = in_place(rs, pos);
                key_kinds.push(kind);
                self.key_direct.push(Some(at));
                continue;
            }
            self.key_direct.push(None);
            key_kinds.push(k.evaluate(&ectx, out)?);
        }
        if self.direct_pos.is_none() {
            self.direct_pos = Some(resolve_slots(&self.direct_slots, layout));
        }
        self.arg_direct.clear();
        for (i, (a, out)) in self
            .args
            .iter_mut()
            .zip(self.arg_scratch.iter_mut())
            .enumerate()
        {
            let direct = self
                .direct_pos
                .as_ref()
                .and_then(|d| d.get(i).copied().flatten());
            if let Some(pos) = direct {
                let (kind, at) = in_place(rs, pos);
                arg_kinds.push(Some(kind));
                self.arg_direct.push(Some(at));
                continue;
            }
            self.arg_direct.push(None);
            arg_kinds.push(match a {
                Some(e) => Some(e.evaluate(&ectx, out)?),
                None => None,
            });
        }
        let result = self.consume_evaluated(rs, &key_kinds, &arg_kinds);
        self.key_kinds = key_kinds;
        self.arg_kinds = arg_kinds;
        result?;
        // Each group: its key values, its states and the table's slot, and
        // the values collected (what values point to, strings and nested
        // lists, is not counted).
        let mut collected = 0;
        let state_bytes: usize = self
            .columns
            .iter()
            .map(|c| match c {
                StateColumn::Count(_) => 8,
                StateColumn::Collect(_, items) => {
                    collected += items * std::mem::size_of::<Value>();
                    std::mem::size_of::<Vec<Value>>()
                }
                StateColumn::CollectInts(_, items) => {
                    collected += items * 8;
                    std::mem::size_of::<Vec<i64>>()
                }
                StateColumn::States(_) => std::mem::size_of::<AggregateState>(),
            })
            .sum();
        let key_bytes = match &self.key_values {
            GroupKeys::Bits { .. } => 8,
            GroupKeys::Values(_) => self.keys.len() * std::mem::size_of::<Value>(),
        };
        let per_group = key_bytes + state_bytes + 8;
        self.memory.grow_to(
            &self.ctx.memory,
            (self.groups.capacity().max(self.num_groups) * per_group
                + self.by_bits.bytes()
                + self.by_offset.as_ref().map_or(0, ByOffset::bytes)
                + collected) as u64,
        )
    }
}

/// Where each slot (of the ones given) sits in the layout.
fn resolve_slots(slots: &[Option<SlotId>], layout: &SlotLayout) -> Vec<Option<(usize, usize)>> {
    slots
        .iter()
        .map(|s| s.and_then(|s| layout.get(s)))
        .collect()
}

/// A slot read in place at (chunk, vector): whether it is flat, and
/// (chunk, vector, flat position).
fn in_place(rs: &ResultSet, (c, v): (usize, usize)) -> (Evaluated, (usize, usize, usize)) {
    let state = &rs.chunks[c].state;
    let kind = if state.is_flat() {
        Evaluated::Flat
    } else {
        Evaluated::Unflat(c)
    };
    (kind, (c, v, state.flat_position().unwrap_or(0)))
}

/// Key `i`'s vector for a batch and where a flat value sits in it.
fn key_input<'a>(
    direct: Option<(usize, usize, usize)>,
    scratch: &'a ValueVector,
    rs: &'a ResultSet,
) -> (&'a ValueVector, usize) {
    match direct {
        Some((c, v, p)) => (&rs.chunks[c].vectors[v], p),
        None => (scratch, 0),
    }
}

/// Aggregate `i`'s input for a batch: the vector (None for count(*)) and
/// the position of a flat argument.
fn arg_input<'a>(
    direct: Option<(usize, usize, usize)>,
    scratch: &'a ValueVector,
    rs: &'a ResultSet,
    kind: Option<Evaluated>,
) -> (Option<&'a ValueVector>, u32) {
    match (kind, direct) {
        (None, _) => (None, 0),
        (Some(_), Some((c, v, p))) => (Some(&rs.chunks[c].vectors[v]), p as u32),
        (Some(_), None) => (Some(scratch), 0),
    }
}

impl HashAggregate {
    /// A grouped count(*) by one id key (`WITH b, count(*)`): each
    /// position's group found by its id's bits (`KeyBits`: the dense
    /// offset map) and its counters bumped in one loop, no group list
    /// built. False (nothing done) for any other batch: NULL keys, other
    /// keys or aggregates.
    fn count_by_ids(
        &mut self,
        rs: &ResultSet,
        arg_kinds: &[Option<Evaluated>],
        per_position: u64,
    ) -> bool {
        let counts_only = matches!(self.key_values, GroupKeys::Bits { .. })
            && arg_kinds.iter().all(Option::is_none)
            && self
                .columns
                .iter()
                .all(|c| matches!(c, StateColumn::Count(_)));
        if !counts_only || self.key_direct.len() != 1 {
            self.groups_by_number();
            return false;
        }
        // Taken out while groups are added (`group_by_bits` borrows all of
        // self).
        let scratch = std::mem::take(&mut self.key_scratch);
        let positions = std::mem::take(&mut self.positions);
        let keys = key_input(self.key_direct[0], &scratch[0], rs).0;
        // A fresh table of one count(*) starts as counts by offset.
        if self.num_groups == 0
            && self.by_offset.is_none()
            && matches!(self.columns.as_slice(), [StateColumn::Count(_)])
            && matches!(self.key_values, GroupKeys::Bits { kind: 0, .. })
        {
            if let Some(&id) = keys_first_id(keys, &positions) {
                let rows = match self.ctx.version.table(id.table()).map(|t| t.as_ref()) {
                    Ok(TableData::Node(n)) => n.num_rows,
                    _ => 0,
                };
                self.by_offset = Some(ByOffset::new(id.table(), rows, self.presence));
            }
        }
        if let (Some(d), VectorData::Id(ids)) = (self.by_offset.as_mut(), &keys.data) {
            let counted = !keys.nulls.may_have_nulls()
                && d.count(ids, &positions, |p| rs.weight_of(p, per_position));
            if counted {
                self.key_scratch = scratch;
                self.positions = positions;
                return true;
            }
        }
        // Not countable by offset (another table, a NULL key, a zero
        // weight, too sparse): numbered groups from here on.
        self.groups_by_number();
        let done = match &keys.data {
            VectorData::Id(ids) if !keys.nulls.may_have_nulls() => {
                for &p in &positions {
                    let g = self.group_by_bits(Some((0, ids[p as usize].0)), |buf| {
                        buf.push(keys.get_value(p as usize))
                    }) as usize;
                    let n = rs.weight_of(p as usize, per_position);
                    for column in &mut self.columns {
                        if let StateColumn::Count(c) = column {
                            c[g] += n;
                        }
                    }
                }
                true
            }
            _ => false,
        };
        self.key_scratch = scratch;
        self.positions = positions;
        done
    }

    fn consume_evaluated(
        &mut self,
        rs: &ResultSet,
        key_kinds: &[Evaluated],
        arg_kinds: &[Option<Evaluated>],
    ) -> Result<()> {
        let total = rs.num_tuples();
        let unflat = rs.unflat_chunk();
        let unflat_tuples = unflat.map_or(1, |u| rs.chunks[u].state.num_tuples() as u64);
        // Each position of the unflat group stands for this many tuples.
        let per_position = total / unflat_tuples.max(1);
        let keys_unflat = key_kinds.iter().any(|k| matches!(k, Evaluated::Unflat(_)));
        if !keys_unflat {
            self.groups_by_number();
        }
        // Positions with weights of their own (`Extend::degrees`): each
        // updates the states alone, with its weight.
        let weighted = rs.weights.is_some();
        self.positions.clear();
        if !keys_unflat {
            if weighted
                || arg_kinds
                    .iter()
                    .any(|k| matches!(k, Some(Evaluated::Unflat(_))))
            {
                if let Some(u) = unflat {
                    rs.chunks[u].state.extend_positions(&mut self.positions);
                }
            }
            // A global aggregate (no keys) skips hashing: this runs once per
            // extended node, so it must stay cheap.
            if self.keys.is_empty() {
                // The same unflat batch as last time (its values untouched):
                // see `RepeatRule`.
                let repeated = match (unflat, &self.last_unflat) {
                    (Some(u), Some((lu, seen))) => u == *lu && rs.chunks[u].state.repeats(seen),
                    _ => false,
                };
                if let Some(u) = unflat {
                    match &mut self.last_unflat {
                        Some((lu, seen)) => {
                            *lu = u;
                            seen.clone_from(&rs.chunks[u].state);
                        }
                        None => self.last_unflat = Some((u, rs.chunks[u].state.clone())),
                    }
                }
                let specs = &self.specs;
                let states = match self.global {
                    Some(ref mut g) => g,
                    None => self
                        .global
                        .insert(specs.iter().map(|d| d.spec.new_state()).collect()),
                };
                self.batch_states.resize_with(states.len(), || None);
                for (i, state) in states.iter_mut().enumerate() {
                    let (input, p) =
                        arg_input(self.arg_direct[i], &self.arg_scratch[i], rs, arg_kinds[i]);
                    // Only an argument read in place is known to be the same.
                    let same = repeated && self.arg_direct[i].is_some();
                    match (arg_kinds[i], input) {
                        (None, _) | (_, None) => state.update_count(total),
                        (Some(Evaluated::Flat), _) => state.update(input, &[p], total)?,
                        // Weights do not change a DISTINCT, min or max:
                        // the batch in one update.
                        (Some(Evaluated::Unflat(_)), _)
                            if weighted && state.repeat_rule() == RepeatRule::Skip =>
                        {
                            state.update(input, &self.positions, 1)?
                        }
                        (Some(Evaluated::Unflat(_)), _) if weighted => {
                            for &q in &self.positions {
                                state.update(input, &[q], rs.weight_of(q as usize, 0))?;
                            }
                        }
                        (Some(Evaluated::Unflat(_)), _) => match state.repeat_rule() {
                            RepeatRule::Skip if same => {}
                            RepeatRule::Scale => {
                                let batch = &mut self.batch_states[i];
                                if !same || batch.is_none() {
                                    let mut b = specs[i].spec.new_state();
                                    b.update(input, &self.positions, 1)?;
                                    *batch = Some(b);
                                }
                                if let Some(b) = batch {
                                    state.add_scaled(b, per_position)?;
                                }
                            }
                            _ => state.update(input, &self.positions, per_position)?,
                        },
                    }
                }
                return Ok(());
            }
            // One flat key per batch: found by its bits when it has them,
            // the key of values built only for a new group.
            let scratch = std::mem::take(&mut self.key_scratch);
            let key_direct = std::mem::take(&mut self.key_direct);
            let bits = match (key_direct.as_slice(), scratch.as_slice()) {
                ([d], [s]) => {
                    let (v, p) = key_input(*d, s, rs);
                    KeyBits::bits(v, p)
                }
                _ => None,
            };
            let g = self.group_by_bits(bits, |buf| {
                buf.extend(key_direct.iter().zip(&scratch).map(|(&d, scratch)| {
                    let (v, p) = key_input(d, scratch, rs);
                    v.get_value(p)
                }))
            }) as usize;
            self.key_scratch = scratch;
            self.key_direct = key_direct;
            for (i, column) in self.columns.iter_mut().enumerate() {
                let (input, p) =
                    arg_input(self.arg_direct[i], &self.arg_scratch[i], rs, arg_kinds[i]);
                match arg_kinds[i] {
                    None => column.update(g, None, &[0], total)?,
                    Some(Evaluated::Flat) => column.update(g, input, &[p], total)?,
                    Some(Evaluated::Unflat(_)) if weighted => {
                        column.update_weighted(|_| g, input, &self.positions, None, rs)?
                    }
                    Some(Evaluated::Unflat(_)) => {
                        column.update(g, input, &self.positions, per_position)?
                    }
                }
            }
            return Ok(());
        }
        let Some(u) = unflat else {
            return Err(kith_common::Error::internal(
                "unflat key without an unflat group",
            ));
        };
        let positions = &mut self.positions;
        rs.chunks[u].state.extend_positions(positions);
        if self.count_by_ids(rs, arg_kinds, per_position) {
            return Ok(());
        }
        // Each position's group first (one unflat integer or id key finds
        // it by its bits), then each aggregate's states in one pass.
        let single = self.keys.len() == 1;
        let mut batch_groups = std::mem::take(&mut self.batch_groups);
        batch_groups.clear();
        // Taken out while groups are added (`group_of` borrows all of self).
        let scratch = std::mem::take(&mut self.key_scratch);
        let key_direct = std::mem::take(&mut self.key_direct);
        let positions = std::mem::take(&mut self.positions);
        let id_keys = match key_input(key_direct[0], &scratch[0], rs).0 {
            v if single && !v.nulls.may_have_nulls() => match &v.data {
                VectorData::Id(ids) => Some((v, ids)),
                _ => None,
            },
            _ => None,
        };
        if let Some((keys, ids)) = id_keys {
            // One id key without NULLs: typed, and a run of positions with
            // one key (an extend's copies of its source, `Extend::replicas`)
            // finds its group once.
            let mut last: Option<(InternalId, u32)> = None;
            for &p in &positions {
                let id = ids[p as usize];
                let g = match last {
                    Some((l, g)) if l == id => g,
                    _ => self
                        .group_by_bits(Some((0, id.0)), |buf| buf.push(keys.get_value(p as usize))),
                };
                last = Some((id, g));
                batch_groups.push(g);
            }
        } else {
            for &p in &positions {
                let p = p as usize;
                let bits = if single {
                    KeyBits::bits(key_input(key_direct[0], &scratch[0], rs).0, p)
                } else {
                    None
                };
                let g = self.group_by_bits(bits, |buf| {
                    buf.extend((key_direct.iter().zip(&scratch).zip(key_kinds)).map(
                        |((&d, scratch), k)| {
                            let (v, flat) = key_input(d, scratch, rs);
                            v.get_value(if matches!(k, Evaluated::Flat) {
                                flat
                            } else {
                                p
                            })
                        },
                    ))
                });
                batch_groups.push(g);
            }
        }
        self.positions = positions;
        self.key_scratch = scratch;
        self.key_direct = key_direct;
        let mut result = Ok(());
        for (i, column) in self.columns.iter_mut().enumerate() {
            let (input, p) = arg_input(self.arg_direct[i], &self.arg_scratch[i], rs, arg_kinds[i]);
            let group = |j: usize| batch_groups[j] as usize;
            result = match arg_kinds[i] {
                _ if weighted => {
                    let flat = matches!(arg_kinds[i], Some(Evaluated::Flat)).then_some(p as usize);
                    column.update_weighted(group, input, &self.positions, flat, rs)
                }
                None => column.update_each(&batch_groups, None, &self.positions, per_position),
                Some(Evaluated::Flat) => batch_groups
                    .iter()
                    .try_for_each(|&g| column.update(g as usize, input, &[p], per_position)),
                Some(Evaluated::Unflat(_)) => {
                    column.update_each(&batch_groups, input, &self.positions, per_position)
                }
            };
            if result.is_err() {
                break;
            }
        }
        self.batch_groups = batch_groups;
        result
    }
}

#[cfg(test)]
mod tests {
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
}
