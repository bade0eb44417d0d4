//! Hash aggregation: each worker aggregates into its own table (factorized
//! input counted with multiplicities, never flattened for count/sum), then the
//! tables are merged once at the end.

// foldhash (hashbrown's default) instead of SipHash: a group key is hashed per
// input tuple.
use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use std::hash::BuildHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use kith_common::{Chunk, LogicalType, Result, Value, ValueVector, VectorData};
use kith_planner::bound::BoundAggregate;
use kith_planner::expr::{BoundExprKind, SlotId};

use super::{LocalSink, QueryContext};
use crate::aggregate_function::{AggregateSpec, AggregateState};
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
    /// Each group's number in `group_keys` / `group_states`, found by its
    /// key's hash (the key is kept once, in `group_keys`).
    groups: HashTable<usize>,
    hasher: DefaultHashBuilder,
    group_keys: Vec<GroupKey>,
    group_states: Vec<Vec<AggregateState>>,
    /// One integer or id key per group: its group number by the key's bits
    /// (and storage layout), so a tuple of a group seen before costs one
    /// integer probe instead of a key of values built and hashed.
    by_int: HashMap<(u8, u64), usize>,
    /// The single group of an aggregate without keys.
    global: Option<Vec<AggregateState>>,
    key_kinds: Vec<Evaluated>,
    arg_kinds: Vec<Option<Evaluated>>,
    /// Arguments that are plain slots are read in place (no copy into a
    /// scratch vector): their slot, and once resolved, (chunk, vector).
    direct_slots: Vec<Option<SlotId>>,
    direct_pos: Option<Vec<Option<(usize, usize)>>>,
    memory: crate::memory::MemoryCharge,
    /// Per argument of this batch: (chunk, vector, flat position) when read in place.
    arg_direct: Vec<Option<(usize, usize, usize)>>,
    positions: Vec<u32>,
}

impl HashAggregate {
    pub fn new(
        ctx: Arc<QueryContext>,
        keys: Vec<Evaluator>,
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
        Ok(HashAggregate {
            ctx,
            keys,
            key_scratch,
            specs,
            args,
            arg_scratch,
            groups: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            group_keys: Vec::new(),
            group_states: Vec::new(),
            by_int: HashMap::new(),
            global,
            key_kinds: Vec::new(),
            arg_kinds: Vec::new(),
            direct_slots,
            direct_pos: None,
            memory: crate::memory::MemoryCharge::default(),
            arg_direct: Vec::new(),
            positions: Vec::new(),
        })
    }

    /// Merges another worker's groups into this one.
    pub fn merge(&mut self, other: HashAggregate) -> Result<()> {
        match (self.global.as_mut(), other.global) {
            (Some(mine), Some(theirs)) => {
                for (m, s) in mine.iter_mut().zip(theirs) {
                    m.combine(s)?;
                }
            }
            (None, Some(theirs)) => self.global = Some(theirs),
            _ => {}
        }
        for (key, states) in other.group_keys.into_iter().zip(other.group_states) {
            let hash = self.hasher.hash_one(&key);
            match self.find_group(hash, &key) {
                Some(g) => {
                    for (m, s) in self.group_states[g].iter_mut().zip(states) {
                        m.combine(s)?;
                    }
                }
                None => {
                    self.add_group(hash, key, states);
                }
            }
        }
        Ok(())
    }

    fn find_group(&self, hash: u64, key: &GroupKey) -> Option<usize> {
        let keys = &self.group_keys;
        self.groups.find(hash, |&g| keys[g] == *key).copied()
    }

    fn add_group(&mut self, hash: u64, key: GroupKey, states: Vec<AggregateState>) -> usize {
        let g = self.group_keys.len();
        let (keys, hasher) = (&self.group_keys, &self.hasher);
        self.groups
            .insert_unique(hash, g, |&g| hasher.hash_one(&keys[g]));
        self.group_keys.push(key);
        self.group_states.push(states);
        g
    }

    /// The number of `key`'s group, created (with fresh states) when new.
    fn group_of(&mut self, key: GroupKey) -> usize {
        let hash = self.hasher.hash_one(&key);
        match self.find_group(hash, &key) {
            Some(g) => g,
            None => {
                let states = self.specs.iter().map(|d| d.spec.new_state()).collect();
                self.add_group(hash, key, states)
            }
        }
    }

    /// The groups as rows: key columns then aggregate columns.
    pub fn finish(mut self, key_types: &[LogicalType], agg_types: &[LogicalType]) -> Chunk {
        let types: Vec<LogicalType> = key_types.iter().chain(agg_types).cloned().collect();
        let mut out = Chunk::new(&types, 0);
        if let Some(states) = self.global.take() {
            self.group_keys.push(GroupKey(Vec::new()));
            self.group_states.push(states);
        }
        let groups = std::mem::take(&mut self.group_keys);
        let states = std::mem::take(&mut self.group_states);
        for (key, states) in groups.into_iter().zip(states) {
            for (col, v) in out.columns.iter_mut().zip(
                key.0
                    .into_iter()
                    .chain(states.into_iter().map(AggregateState::into_value)),
            ) {
                col.push_owned(v);
            }
            out.num_rows += 1;
        }
        out
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
        for (k, out) in self.keys.iter_mut().zip(self.key_scratch.iter_mut()) {
            key_kinds.push(k.evaluate(&ectx, out)?);
        }
        if self.direct_pos.is_none() {
            self.direct_pos = Some(
                self.direct_slots
                    .iter()
                    .map(|s| s.and_then(|s| layout.get(s)))
                    .collect(),
            );
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
            if let Some((c, v)) = direct {
                let state = &rs.chunks[c].state;
                arg_kinds.push(Some(if state.is_flat() {
                    Evaluated::Flat
                } else {
                    Evaluated::Unflat(c)
                }));
                self.arg_direct
                    .push(Some((c, v, state.flat_position().unwrap_or(0))));
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
        // Each group: its key values, its states and the table's slot (what
        // the values point to, strings and lists, is not counted).
        let per_group = std::mem::size_of::<(GroupKey, Vec<AggregateState>)>()
            + self.keys.len() * std::mem::size_of::<Value>()
            + self.specs.len() * std::mem::size_of::<AggregateState>()
            + 8;
        self.memory.grow_to(
            &self.ctx.memory,
            (self.groups.capacity() * per_group) as u64,
        )
    }
}

impl HashAggregate {
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
        let specs = &self.specs;
        if !keys_unflat {
            self.positions.clear();
            if arg_kinds
                .iter()
                .any(|k| matches!(k, Some(Evaluated::Unflat(_))))
            {
                if let Some(u) = unflat {
                    let state = &rs.chunks[u].state;
                    let positions = &mut self.positions;
                    match &state.sel {
                        // All of the group: 0..len, in one go.
                        None if !state.is_flat() => positions.extend(0..state.len as u32),
                        _ => state.for_each_position(|p| positions.push(p as u32)),
                    }
                }
            }
            // A global aggregate (no keys) skips hashing: this runs once per
            // extended node, so it must stay cheap.
            let states = if self.keys.is_empty() {
                match self.global {
                    Some(ref mut g) => g,
                    None => self
                        .global
                        .insert(specs.iter().map(|d| d.spec.new_state()).collect()),
                }
            } else {
                let key = GroupKey(self.key_scratch.iter().map(|v| v.get_value(0)).collect());
                let g = self.group_of(key);
                &mut self.group_states[g]
            };
            for (i, state) in states.iter_mut().enumerate() {
                let (input, flat_pos) = match self.arg_direct[i] {
                    Some((c, v, p)) => (&rs.chunks[c].vectors[v], p as u32),
                    None => (&self.arg_scratch[i], 0),
                };
                match arg_kinds[i] {
                    None => state.update_count(total),
                    Some(Evaluated::Flat) => state.update(Some(input), &[flat_pos], total)?,
                    Some(Evaluated::Unflat(_)) => {
                        state.update(Some(input), &self.positions, per_position)?
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
        self.positions.clear();
        let positions = &mut self.positions;
        rs.chunks[u]
            .state
            .for_each_position(|p| positions.push(p as u32));
        // One unflat integer or id key: its bits find the group.
        let int_key = |v: &ValueVector, p: usize| -> Option<(u8, u64)> {
            if v.is_null(p) {
                return None;
            }
            match &v.data {
                VectorData::Id(d) => Some((0, d[p].0)),
                VectorData::I64(d) => Some((1, d[p] as u64)),
                VectorData::I32(d) => Some((2, d[p] as u64)),
                _ => None,
            }
        };
        let single = self.keys.len() == 1;
        for pi in 0..self.positions.len() {
            let p = self.positions[pi] as usize;
            let bits = single.then(|| int_key(&self.key_scratch[0], p)).flatten();
            let cached = bits.and_then(|b| self.by_int.get(&b).copied());
            let g = match cached {
                Some(g) => g,
                None => {
                    let key = GroupKey(
                        self.key_scratch
                            .iter()
                            .zip(key_kinds)
                            .map(|(v, k)| {
                                v.get_value(if matches!(k, Evaluated::Flat) { 0 } else { p })
                            })
                            .collect(),
                    );
                    let g = self.group_of(key);
                    if let Some(b) = bits {
                        self.by_int.insert(b, g);
                    }
                    g
                }
            };
            for (i, state) in self.group_states[g].iter_mut().enumerate() {
                let (input, flat_pos) = match self.arg_direct[i] {
                    Some((c, v, fp)) => (&rs.chunks[c].vectors[v], fp as u32),
                    None => (&self.arg_scratch[i], 0),
                };
                match arg_kinds[i] {
                    None => state.update_count(per_position),
                    Some(Evaluated::Flat) => {
                        state.update(Some(input), &[flat_pos], per_position)?
                    }
                    Some(Evaluated::Unflat(_)) => {
                        state.update(Some(input), &[p as u32], per_position)?
                    }
                }
            }
        }
        Ok(())
    }
}
