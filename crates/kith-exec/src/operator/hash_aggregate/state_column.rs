//! The states of one aggregate, one per group: plain counters for counts,
//! typed sums, lists for collect, general states for the rest; combined
//! across workers and split across partitions.

use super::*;

/// The states of one aggregate, one per group.
pub(super) enum StateColumn {
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
    pub(super) fn new(spec: &AggregateSpec) -> StateColumn {
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
    pub(super) fn collect_values(&mut self) {
        if let StateColumn::CollectInts(lists, items) = self {
            let lists = std::mem::take(lists)
                .into_iter()
                .map(|l| l.into_iter().map(Value::Int64).collect())
                .collect();
            *self = StateColumn::Collect(lists, *items);
        }
    }

    pub(super) fn push(&mut self, spec: &AggregateSpec) {
        match self {
            StateColumn::Count(c) => c.push(0),
            StateColumn::Collect(l, _) => l.push(Vec::new()),
            StateColumn::CollectInts(l, _) => l.push(Vec::new()),
            StateColumn::States(s) => s.push(spec.new_state()),
        }
    }

    /// Group `g` sees `positions` of `input` (`None`: count(*)), each
    /// standing for `multiplicity` tuples.
    pub(super) fn update(
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
    pub(super) fn update_weighted(
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
    pub(super) fn update_each(
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
    pub(super) fn combine(&mut self, mut other: StateColumn, target: &[u32]) -> Result<()> {
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
    pub(super) fn split(self, part_of: &[u32], counts: &[usize]) -> Vec<StateColumn> {
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
    pub(super) fn into_column(self, col: &mut ValueVector) {
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

    pub(super) fn into_values(self, mut push: impl FnMut(Value)) {
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
pub(super) fn append_lists<T>(mine: &mut [Vec<T>], theirs: Vec<Vec<T>>, target: &[u32]) {
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
pub(super) fn collect_into(
    list: &mut Vec<Value>,
    input: &ValueVector,
    p: u32,
    multiplicity: u64,
) -> usize {
    if input.is_null(p as usize) {
        return 0;
    }
    push_times(list, input.get_value(p as usize), multiplicity)
}

/// Pushes `v` onto `list` `multiplicity` times (at least once); how many.
#[inline]
pub(super) fn push_times<T: Clone>(list: &mut Vec<T>, v: T, multiplicity: u64) -> usize {
    for _ in 1..multiplicity {
        list.push(v.clone());
    }
    list.push(v);
    multiplicity.max(1) as usize
}

/// How many of `positions` of `input` are not NULL (all of them for count(*)).
pub(super) fn live_count(input: Option<&ValueVector>, positions: &[u32]) -> u64 {
    match input {
        Some(v) if v.nulls.may_have_nulls() => positions
            .iter()
            .filter(|&&p| !v.is_null(p as usize))
            .count() as u64,
        _ => positions.len() as u64,
    }
}
