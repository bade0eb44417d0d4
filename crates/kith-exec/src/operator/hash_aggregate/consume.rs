//! Feeding batches into the table: the sink side, resolving key and
//! argument vectors, the grouped count by ids, and the general path.

use super::*;

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
pub(super) fn resolve_slots(
    slots: &[Option<SlotId>],
    layout: &SlotLayout,
) -> Vec<Option<(usize, usize)>> {
    slots
        .iter()
        .map(|s| s.and_then(|s| layout.get(s)))
        .collect()
}

/// A slot read in place at (chunk, vector): whether it is flat, and
/// (chunk, vector, flat position).
pub(super) fn in_place(
    rs: &ResultSet,
    (c, v): (usize, usize),
) -> (Evaluated, (usize, usize, usize)) {
    let state = &rs.chunks[c].state;
    let kind = if state.is_flat() {
        Evaluated::Flat
    } else {
        Evaluated::Unflat(c)
    };
    (kind, (c, v, state.flat_position().unwrap_or(0)))
}

/// Key `i`'s vector for a batch and where a flat value sits in it.
pub(super) fn key_input<'a>(
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
pub(super) fn arg_input<'a>(
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
    pub(super) fn count_by_ids(
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

    /// Updates the states with a batch whose keys and arguments are
    /// evaluated (`key_kinds`, `arg_kinds`): one group per batch when the
    /// keys are flat (none for a global aggregate), else one per position.
    pub(super) fn consume_evaluated(
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
        // Positions with weights of their own (`CountMode::Degrees`): each
        // updates the states alone, with its weight.
        let weighted = rs.weights.is_some();
        let batch = Batch {
            total,
            unflat,
            per_position,
            weighted,
        };
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
                return self.update_global(rs, batch, arg_kinds);
            }
            return self.update_flat_key(rs, batch, arg_kinds);
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
        let mut batch_groups = std::mem::take(&mut self.batch_groups);
        batch_groups.clear();
        self.group_positions(rs, key_kinds, &mut batch_groups);
        let result = self.update_groups(rs, batch, arg_kinds, &batch_groups);
        self.batch_groups = batch_groups;
        result
    }

    /// The batch into the global aggregate's states (no keys, no hashing);
    /// an unflat batch seen last time (its values untouched) may be skipped
    /// or scaled as each aggregate's [`RepeatRule`] allows.
    fn update_global(
        &mut self,
        rs: &ResultSet,
        batch: Batch,
        arg_kinds: &[Option<Evaluated>],
    ) -> Result<()> {
        let Batch {
            total,
            unflat,
            per_position,
            weighted,
        } = batch;
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
            let (input, p) = arg_input(self.arg_direct[i], &self.arg_scratch[i], rs, arg_kinds[i]);
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
        Ok(())
    }

    /// The batch into the states of its one group (the keys are flat).
    fn update_flat_key(
        &mut self,
        rs: &ResultSet,
        batch: Batch,
        arg_kinds: &[Option<Evaluated>],
    ) -> Result<()> {
        let Batch {
            total,
            per_position,
            weighted,
            ..
        } = batch;
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
            let (input, p) = arg_input(self.arg_direct[i], &self.arg_scratch[i], rs, arg_kinds[i]);
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
        Ok(())
    }

    /// Each position's group, in order, into `batch_groups`: typed for one
    /// id key without NULLs, by its bits for one integer key, else by the
    /// key's values.
    fn group_positions(
        &mut self,
        rs: &ResultSet,
        key_kinds: &[Evaluated],
        batch_groups: &mut Vec<u32>,
    ) {
        let single = self.keys.len() == 1;
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
    }

    /// Each aggregate's states updated in one pass over the positions,
    /// each position's group as `batch_groups` has it; stops at the first
    /// error.
    fn update_groups(
        &mut self,
        rs: &ResultSet,
        batch: Batch,
        arg_kinds: &[Option<Evaluated>],
        batch_groups: &[u32],
    ) -> Result<()> {
        let Batch {
            per_position,
            weighted,
            ..
        } = batch;
        let mut result = Ok(());
        for (i, column) in self.columns.iter_mut().enumerate() {
            let (input, p) = arg_input(self.arg_direct[i], &self.arg_scratch[i], rs, arg_kinds[i]);
            let group = |j: usize| batch_groups[j] as usize;
            result = match arg_kinds[i] {
                _ if weighted => {
                    let flat = matches!(arg_kinds[i], Some(Evaluated::Flat)).then_some(p as usize);
                    column.update_weighted(group, input, &self.positions, flat, rs)
                }
                None => column.update_each(batch_groups, None, &self.positions, per_position),
                Some(Evaluated::Flat) => batch_groups
                    .iter()
                    .try_for_each(|&g| column.update(g as usize, input, &[p], per_position)),
                Some(Evaluated::Unflat(_)) => {
                    column.update_each(batch_groups, input, &self.positions, per_position)
                }
            };
            if result.is_err() {
                break;
            }
        }
        result
    }
}

/// What a batch's tuples are, for [`HashAggregate::consume_evaluated`]'s
/// phases.
#[derive(Clone, Copy)]
struct Batch {
    /// Tuples in the batch.
    total: u64,
    /// Its unflat chunk, if any.
    unflat: Option<usize>,
    /// Tuples each position of the unflat chunk stands for.
    per_position: u64,
    /// Whether positions carry weights of their own (`CountMode::Degrees`).
    weighted: bool,
}
