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

mod consume;
mod group_key;
mod state_column;
pub use group_key::GroupKey;
use group_key::*;
use state_column::*;

/// A worker's table with at least this many groups is split into
/// partitions that merge and finish in parallel; smaller ones merge into
/// one table as they finish.
#[cfg(not(kith_tiny))]
pub const PARTITION_MIN_GROUPS: usize = 4096;
#[cfg(kith_tiny)]
pub const PARTITION_MIN_GROUPS: usize = 2;

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

#[cfg(test)]
mod tests;
