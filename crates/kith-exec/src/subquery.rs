//! The tables of decorrelated subqueries (`EXISTS { ... }`, `COUNT { ... }`,
//! pattern predicates and comprehensions). Each subquery of a plan runs
//! once, before the plan's first part; its rows (the ids of the outer
//! variables it uses, then its value) become a hash table that expressions
//! probe with their row's ids (`BoundExprKind::Subquery`).
//!
//! A subquery that only counts one node's rels in one table
//! (`EXISTS { MATCH (a)-[:R]->() }`, `COUNT { (a)<-[:R]-(:T) }`, a pattern
//! predicate `WHERE (a)-[:R]->()`, recognized by the planner as
//! `SubqueryPlan::degree`) does not run: its table is the CSR itself, and
//! each worker's probe reads the degrees of the keys of its batches
//! ([`CountProbe`]), so nothing is built before the query and the degrees
//! are read in parallel. A one-key EXISTS or COUNT that does run hands its
//! table the aggregate's arrays by offset as they are ([`OffsetTable`]):
//! an EXISTS's a bit per node, a COUNT's a count per node.

use std::sync::Arc;

use hashbrown::HashMap;

use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{Chunk, Error, InternalId, Result, TableId, Value, VectorData};
use kith_pager::Pager;
use kith_planner::bound::SubqueryKind;
use kith_planner::plan::{DegreeCount, ExtendDirection};
use kith_storage::{RelDirection, RelTableData, TableData};

use crate::operator::csr_pins::CsrPins;
use crate::operator::offset_counts::OffsetTable;
use crate::operator::QueryContext;

/// One subquery's results: key ids → value.
#[derive(Debug)]
pub struct SubqueryTable {
    kind: SubqueryKind,
    num_keys: usize,
    rows: Rows,
}

#[derive(Debug)]
enum Rows {
    /// The subquery's rows by their key ids.
    Hashed(HashMap<Box<[u64]>, Value>),
    /// Per node of `table` (by offset), its count: the number of rels of a
    /// one-key subquery answered by degrees, or the matches of a one-key
    /// EXISTS or COUNT whose keys are all nodes of one table (a probe is
    /// then an array read, not a hash of the key).
    Counts { table: TableId, counts: Vec<u64> },
    /// Per node of `table` (by offset), whether a one-key EXISTS matched:
    /// bit `o % 64` of word `o / 64`.
    Presence { table: TableId, words: Vec<u64> },
    /// Per node of `table`, its rels in one direction of a rel table, read
    /// from the CSR of the query's snapshot when probed.
    Degrees { table: TableId, csr: DegreeSource },
}

/// The CSR a [`Rows::Degrees`] table reads.
struct DegreeSource {
    rels: Arc<RelTableData>,
    dir: RelDirection,
    pager: Arc<Pager>,
}

impl std::fmt::Debug for DegreeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DegreeSource")
            .field("dir", &self.dir)
            .finish()
    }
}

impl DegreeSource {
    /// The rels of node `offset` (one lookup: the generic probe's path).
    fn degree(&self, offset: u64) -> Result<u64> {
        let group = (offset / NODE_GROUP_SIZE) as usize;
        match self.rels.csr(self.dir).groups.get(group) {
            Some(g) => Ok(g.pin(&self.pager, &[])?.degree(offset % NODE_GROUP_SIZE)),
            None => Ok(0),
        }
    }
}

/// A worker's probe of a one-key EXISTS or COUNT table held by offset
/// ([`Rows::Counts`], [`Rows::Degrees`]): the count of each position's id
/// into a buffer by position, for a typed write of the whole batch. A
/// degree table keeps its CSR regions pinned from batch to batch and
/// reads a morsel's offsets at once ([`CsrPins::degrees_into`]).
pub struct CountProbe {
    pins: Option<CsrPins>,
    counts: Vec<u64>,
    /// The positions of a batch's ids of the table, when some are not.
    positions: Vec<usize>,
}

/// The count of node `id` in [`Rows::Counts`] of `table` (0 for a node of
/// another table or past the array).
fn count_at(table: TableId, counts: &[u64], id: InternalId) -> u64 {
    match id.table() == table {
        true => counts.get(id.offset() as usize).copied().unwrap_or(0),
        false => 0,
    }
}

/// Whether node `id` of `table` is set in [`Rows::Presence`] (0 or 1).
fn bit_at(table: TableId, words: &[u64], id: InternalId) -> u64 {
    let o = id.offset();
    match (id.table() == table, words.get((o / 64) as usize)) {
        (true, Some(w)) => (w >> (o % 64)) & 1,
        _ => 0,
    }
}

/// `count(ids[p])` at `out[p]` for each of `positions` (below `len`): when
/// they are every position (ascending, so as many as `len`), one loop over
/// the slices with no position read.
#[inline]
fn fill_by_position(
    out: &mut [u64],
    ids: &[InternalId],
    positions: &[usize],
    len: usize,
    count: impl Fn(InternalId) -> u64,
) {
    match (positions.len() == len, ids.get(..len)) {
        (true, Some(ids)) => {
            for (n, &id) in out[..len].iter_mut().zip(ids) {
                *n = count(id);
            }
        }
        _ => {
            for &p in positions {
                out[p] = count(ids[p]);
            }
        }
    }
}

/// Most offsets a one-key table holds as an array.
pub(crate) const DENSE_OFFSETS: u64 = 1 << 26;

impl SubqueryTable {
    /// Builds the table from the subquery's rows (`num_keys` id columns,
    /// then the count or list for `Count` / `Collect`).
    pub fn from_rows(
        kind: SubqueryKind,
        num_keys: usize,
        mut chunks: Vec<Chunk>,
    ) -> Result<SubqueryTable> {
        if let Some(t) = Self::counts_by_offset(kind, num_keys, &mut chunks) {
            return Ok(t);
        }
        let mut rows = HashMap::new();
        let mut key = Vec::with_capacity(num_keys);
        for c in &chunks {
            for r in 0..c.num_rows {
                key.clear();
                for col in &c.columns[..num_keys] {
                    match col.get_value(r) {
                        Value::InternalId(id) => key.push(id.0),
                        other => {
                            return Err(Error::internal(format!(
                                "subquery key is not an id: {other:?}"
                            )))
                        }
                    }
                }
                let value = match kind {
                    // The row's match count (no keys: one row, maybe 0).
                    SubqueryKind::Exists => {
                        let count = c.columns.get(num_keys).map(|col| col.get_value(r));
                        if count.and_then(|v| v.as_i64()) == Some(0) {
                            continue;
                        }
                        Value::Bool(true)
                    }
                    SubqueryKind::Count | SubqueryKind::Collect => c
                        .columns
                        .get(num_keys)
                        .map(|col| col.get_value(r))
                        .ok_or_else(|| Error::internal("subquery row without its value"))?,
                };
                rows.insert(key.clone().into_boxed_slice(), value);
            }
        }
        Ok(SubqueryTable {
            kind,
            num_keys,
            rows: Rows::Hashed(rows),
        })
    }

    /// The table of a one-key EXISTS or COUNT from its aggregate's arrays
    /// by offset (`PartPlan::key_counts`).
    pub fn from_offsets(kind: SubqueryKind, offsets: OffsetTable) -> Result<SubqueryTable> {
        let rows = match (kind, offsets) {
            (SubqueryKind::Exists | SubqueryKind::Count, OffsetTable::Counts { table, counts }) => {
                Rows::Counts { table, counts }
            }
            (SubqueryKind::Exists, OffsetTable::Presence { table, words }) => {
                Rows::Presence { table, words }
            }
            (kind, _) => {
                return Err(Error::internal(format!(
                    "a {kind:?} subquery's table from presence bits"
                )))
            }
        };
        Ok(SubqueryTable {
            kind,
            num_keys: 1,
            rows,
        })
    }

    /// [`Rows::Counts`] from the rows of a one-key EXISTS or COUNT whose
    /// keys are ids of one table at offsets below [`DENSE_OFFSETS`]; None
    /// for any other table.
    fn counts_by_offset(
        kind: SubqueryKind,
        num_keys: usize,
        chunks: &mut [Chunk],
    ) -> Option<SubqueryTable> {
        if num_keys != 1 || kind == SubqueryKind::Collect {
            return None;
        }
        let mut table = None;
        let mut counts: Vec<u64> = Vec::new();
        let mut put = |id: InternalId, count: u64| {
            if *table.get_or_insert(id.table()) != id.table() || id.offset() >= DENSE_OFFSETS {
                return false;
            }
            let o = id.offset() as usize;
            if o >= counts.len() {
                counts.resize((o + 1).next_power_of_two(), 0);
            }
            counts[o] = count;
            true
        };
        for c in chunks.iter() {
            let keys = &c.columns[0];
            let values = c.columns.get(1);
            // Typed columns without NULLs (an aggregate's output): read as
            // slices, no value per row.
            let typed_values = match values {
                None if kind == SubqueryKind::Exists => Some(None),
                Some(v) if !v.nulls.may_have_nulls() => match &v.data {
                    VectorData::I64(n) => n.get(..c.num_rows).map(Some),
                    _ => None,
                },
                _ => None,
            };
            let typed_keys = match &keys.data {
                VectorData::Id(ids) if !keys.nulls.may_have_nulls() => ids.get(..c.num_rows),
                _ => None,
            };
            if let (Some(ids), Some(values)) = (typed_keys, typed_values) {
                for (r, &id) in ids.iter().enumerate() {
                    let count = match values.map(|n| u64::try_from(n[r])) {
                        Some(Ok(n)) => n,
                        Some(Err(_)) => return None,
                        None => 1,
                    };
                    if !put(id, count) {
                        return None;
                    }
                }
                continue;
            }
            for r in 0..c.num_rows {
                let Value::InternalId(id) = keys.get_value(r) else {
                    return None;
                };
                // EXISTS rows hold their match count when they have one
                // (one row, maybe 0, without keys); COUNT rows their count.
                let count = match values.map(|v| v.get_value(r).as_i64()) {
                    Some(Some(n)) if n >= 0 => n as u64,
                    Some(_) => return None,
                    None if kind == SubqueryKind::Exists => 1,
                    None => return None,
                };
                if !put(id, count) {
                    return None;
                }
            }
        }
        Some(SubqueryTable {
            kind,
            num_keys,
            rows: Rows::Counts {
                table: table.unwrap_or(TableId(0)),
                counts,
            },
        })
    }

    /// The table of a subquery answered by degrees: the degree of every
    /// node of the key's table in the rel table's CSR in that direction,
    /// as of the query's snapshot, read when probed.
    pub fn from_degrees(
        kind: SubqueryKind,
        degree: &DegreeCount,
        ctx: &QueryContext,
    ) -> Result<SubqueryTable> {
        let DegreeCount {
            node_table,
            rel_table,
            direction,
        } = *degree;
        let TableData::Rel(rd) = ctx.version.table(rel_table)?.as_ref() else {
            return Err(Error::internal("expected rel table storage"));
        };
        let TableData::Node(_) = ctx.version.table(node_table)?.as_ref() else {
            return Err(Error::internal("expected node table storage"));
        };
        let csr = DegreeSource {
            rels: Arc::new(rd.clone()),
            dir: match direction {
                ExtendDirection::Fwd => RelDirection::Fwd,
                ExtendDirection::Bwd => RelDirection::Bwd,
            },
            pager: Arc::clone(&ctx.pager),
        };
        Ok(SubqueryTable {
            kind,
            num_keys: 1,
            rows: Rows::Degrees {
                table: node_table,
                csr,
            },
        })
    }

    /// A probe of a one-key table held by offset, for a worker; whether
    /// the table is an EXISTS (else a COUNT). None for other tables.
    pub fn count_probe(&self) -> Option<(bool, CountProbe)> {
        let pins = match &self.rows {
            Rows::Hashed(_) => return None,
            Rows::Counts { .. } | Rows::Presence { .. } => None,
            // The probe's own groups: it reads one table's offsets.
            Rows::Degrees { csr, .. } => Some(CsrPins::new(
                Arc::clone(&csr.rels),
                csr.dir == RelDirection::Fwd,
                Vec::new(),
                Arc::default(),
            )),
        };
        let probe = CountProbe {
            pins,
            counts: Vec::new(),
            positions: Vec::new(),
        };
        match self.kind {
            SubqueryKind::Exists => Some((true, probe)),
            SubqueryKind::Count => Some((false, probe)),
            SubqueryKind::Collect => None,
        }
    }

    /// The value for the ids in `keys` (node or rel ids); NULL when one of
    /// them is NULL (an unmatched OPTIONAL MATCH variable).
    pub fn lookup(&self, keys: &[Value], scratch: &mut Vec<u64>) -> Result<Value> {
        if keys.len() != self.num_keys {
            return Err(Error::internal(
                "subquery probed with the wrong number of keys",
            ));
        }
        scratch.clear();
        for k in keys {
            match k {
                Value::InternalId(id) => scratch.push(id.0),
                Value::Null => return Ok(Value::Null),
                other => {
                    return Err(Error::internal(format!(
                        "subquery probed with a non-id key: {other:?}"
                    )))
                }
            }
        }
        let found = match &self.rows {
            Rows::Hashed(rows) => rows.get(scratch.as_slice()).cloned(),
            Rows::Counts { .. } | Rows::Presence { .. } | Rows::Degrees { .. } => {
                let count = self.count_of(InternalId(scratch[0]))?;
                match self.kind {
                    _ if count == 0 => None,
                    SubqueryKind::Exists => Some(Value::Bool(true)),
                    _ => Some(Value::Int64(count as i64)),
                }
            }
        };
        Ok(match found {
            Some(v) => v,
            None => match self.kind {
                SubqueryKind::Exists => Value::Bool(false),
                SubqueryKind::Count => Value::Int64(0),
                SubqueryKind::Collect => Value::list(Vec::new()),
            },
        })
    }

    /// The count of `id` in a one-key table held by offset (0 for a node
    /// of another table or past the table's nodes).
    fn count_of(&self, id: InternalId) -> Result<u64> {
        match &self.rows {
            Rows::Counts { table, counts } => Ok(count_at(*table, counts, id)),
            Rows::Presence { table, words } => Ok(bit_at(*table, words, id)),
            Rows::Degrees { table, csr } if id.table() == *table => csr.degree(id.offset()),
            Rows::Degrees { .. } => Ok(0),
            Rows::Hashed(_) => Err(Error::internal("count of a hashed subquery table")),
        }
    }
}

impl CountProbe {
    /// The count of `ids[p]` at `counts[p]` for each `p` of `positions`
    /// (distinct positions of non-NULL ids, below `len`), from `table` (the table
    /// this probe was made for). Other positions below `len` hold anything
    /// (the caller writes NULL or nothing there).
    pub fn counts(
        &mut self,
        table: &SubqueryTable,
        ids: &[InternalId],
        positions: &[usize],
        len: usize,
    ) -> Result<&[u64]> {
        let counts = &mut self.counts;
        if counts.len() < len {
            counts.resize(len, 0);
        }
        match (&table.rows, &mut self.pins) {
            (Rows::Counts { table, counts: c }, _) => {
                fill_by_position(counts, ids, positions, len, |id| count_at(*table, c, id))
            }
            (Rows::Presence { table, words }, _) => {
                fill_by_position(counts, ids, positions, len, |id| bit_at(*table, words, id))
            }
            (Rows::Degrees { table, csr }, Some(pins)) => {
                // Ids of another table have no rels here.
                let t = *table;
                let mut positions = positions;
                if positions.iter().any(|&p| ids[p].table() != t) {
                    let mine = &mut self.positions;
                    mine.clear();
                    for &p in positions {
                        match ids[p].table() == t {
                            true => mine.push(p),
                            false => counts[p] = 0,
                        }
                    }
                    positions = mine;
                }
                pins.degrees_into(&csr.pager, ids, positions.iter().copied(), counts)?;
            }
            _ => return Err(Error::internal("subquery probe of another table")),
        }
        Ok(&self.counts[..len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::{InternalId, LogicalType, TableId};

    fn id(t: u32, o: u64) -> Value {
        Value::InternalId(InternalId::new(TableId(t), o))
    }

    fn chunk(rows: &[(Value, Value)]) -> Chunk {
        let mut c = Chunk::new(&[LogicalType::InternalId, LogicalType::Int64], 0);
        for (k, v) in rows {
            c.columns[0].push_value(k);
            c.columns[1].push_value(v);
            c.num_rows += 1;
        }
        c
    }

    /// An EXISTS table holds the keys counting a match: a subquery without
    /// keys has one row, whose count 0 means no match.
    #[test]
    fn exists_keeps_rows_with_a_match() {
        let mut s = Vec::new();
        let count = |n: i64| {
            let mut c = Chunk::new(&[LogicalType::Int64], 0);
            c.columns[0].push_value(&Value::Int64(n));
            c.num_rows = 1;
            c
        };
        for (n, want) in [(0, false), (3, true)] {
            let t = SubqueryTable::from_rows(SubqueryKind::Exists, 0, vec![count(n)]).unwrap();
            assert_eq!(t.lookup(&[], &mut s).unwrap(), Value::Bool(want));
        }
    }

    #[test]
    fn lookups_hit_miss_and_null() {
        let rows = chunk(&[(id(1, 5), Value::Int64(3)), (id(2, 5), Value::Int64(7))]);
        let mut s = Vec::new();
        let count = SubqueryTable::from_rows(SubqueryKind::Count, 1, vec![rows]).unwrap();
        assert_eq!(count.lookup(&[id(1, 5)], &mut s).unwrap(), Value::Int64(3));
        assert_eq!(count.lookup(&[id(2, 5)], &mut s).unwrap(), Value::Int64(7));
        // Same offset, other table: a different entity.
        assert_eq!(count.lookup(&[id(3, 5)], &mut s).unwrap(), Value::Int64(0));
        assert_eq!(count.lookup(&[Value::Null], &mut s).unwrap(), Value::Null);
        let exists = SubqueryTable::from_rows(
            SubqueryKind::Exists,
            1,
            vec![chunk(&[(id(1, 1), Value::Int64(1))])],
        )
        .unwrap();
        assert_eq!(
            exists.lookup(&[id(1, 1)], &mut s).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            exists.lookup(&[id(1, 2)], &mut s).unwrap(),
            Value::Bool(false)
        );
        assert!(exists.lookup(&[], &mut s).is_err());
    }

    /// Every count a [`CountProbe`] of `t` reads for `ids` (probed in one
    /// batch, the positions in reverse); None for a table not held by
    /// offset. Checks that the probe says COUNT.
    fn probe_counts(t: &SubqueryTable, ids: &[InternalId]) -> Option<Vec<u64>> {
        let (exists, mut probe) = t.count_probe()?;
        assert!(!exists);
        let positions: Vec<usize> = (0..ids.len()).rev().collect();
        let all = probe
            .counts(t, ids, &positions, ids.len())
            .unwrap()
            .to_vec();
        // Every other position alone (a batch with a selection) reads the
        // same counts there.
        let some: Vec<usize> = (0..ids.len()).step_by(2).collect();
        let counts = probe.counts(t, ids, &some, ids.len()).unwrap();
        for &p in &some {
            assert_eq!(counts[p], all[p], "position {p}");
        }
        Some(all)
    }

    /// One table's keys are held by offset and probed by id; keys of two
    /// tables, or an offset past the array's limit, keep the hash table.
    #[test]
    fn one_table_keys_are_counts_by_offset() {
        let mut s = Vec::new();
        let rows = chunk(&[(id(4, 9), Value::Int64(2)), (id(4, 700), Value::Int64(5))]);
        let count = SubqueryTable::from_rows(SubqueryKind::Count, 1, vec![rows]).unwrap();
        let ids = [(4, 9), (4, 700), (4, 10), (5, 9), (4, 1 << 40)]
            .map(|(t, o)| InternalId::new(TableId(t), o));
        assert_eq!(probe_counts(&count, &ids), Some(vec![2, 5, 0, 0, 0]));
        assert_eq!(
            count.lookup(&[id(4, 700)], &mut s).unwrap(),
            Value::Int64(5)
        );
        assert_eq!(
            count.lookup(&[id(5, 700)], &mut s).unwrap(),
            Value::Int64(0)
        );
        // Typed chunks are read as slices, others a value per row: both
        // fill one array (the count column of the second is INT32).
        let mut int32 = Chunk::new(&[LogicalType::InternalId, LogicalType::Int32], 0);
        int32.columns[0].push_value(&id(4, 3));
        int32.columns[1].push_value(&Value::Int32(6));
        int32.num_rows = 1;
        let rows = chunk(&[(id(4, 9), Value::Int64(2))]);
        let count = SubqueryTable::from_rows(SubqueryKind::Count, 1, vec![rows, int32]).unwrap();
        let ids = [9, 3, 4].map(|o| InternalId::new(TableId(4), o));
        assert_eq!(probe_counts(&count, &ids), Some(vec![2, 6, 0]));
        for rows in [
            chunk(&[(id(1, 5), Value::Int64(3)), (id(2, 5), Value::Int64(7))]),
            chunk(&[(id(1, DENSE_OFFSETS), Value::Int64(3))]),
            // A negative count is no count of matches.
            chunk(&[(id(1, 5), Value::Int64(-1))]),
        ] {
            let t = SubqueryTable::from_rows(SubqueryKind::Exists, 1, vec![rows]).unwrap();
            assert!(t.count_probe().is_none());
        }
    }

    /// An aggregate's arrays by offset become the table as they are: an
    /// EXISTS's bits or counts, a COUNT's counts; offsets past them and
    /// ids of other tables count 0. A COUNT is never given bits.
    #[test]
    fn offset_tables_are_probed_in_place() {
        let t = TableId(4);
        let ids = [(4, 4), (4, 6), (4, 3), (4, 70), (4, 900), (5, 4)]
            .map(|(t, o)| InternalId::new(TableId(t), o));
        let counts = vec![0, 0, 0, 0, 2, 0, 5];
        let count = SubqueryTable::from_offsets(
            SubqueryKind::Count,
            OffsetTable::Counts { table: t, counts },
        )
        .unwrap();
        assert_eq!(probe_counts(&count, &ids), Some(vec![2, 5, 0, 0, 0, 0]));
        let mut s = Vec::new();
        assert_eq!(count.lookup(&[id(4, 6)], &mut s).unwrap(), Value::Int64(5));
        // Offsets 4, 6 and 70 set.
        let words = vec![(1 << 4) | (1 << 6), 1 << 6];
        let exists = SubqueryTable::from_offsets(
            SubqueryKind::Exists,
            OffsetTable::Presence {
                table: t,
                words: words.clone(),
            },
        )
        .unwrap();
        let (is_exists, mut probe) = exists.count_probe().unwrap();
        assert!(is_exists);
        let positions: Vec<usize> = (0..ids.len()).collect();
        let got = probe.counts(&exists, &ids, &positions, ids.len()).unwrap();
        assert_eq!(got, [1, 1, 0, 1, 0, 0]);
        let some = [5, 3, 0];
        let got = probe.counts(&exists, &ids, &some, ids.len()).unwrap();
        assert_eq!((got[5], got[3], got[0]), (0, 1, 1));
        for (key, want) in [(id(4, 70), true), (id(4, 5), false), (id(5, 4), false)] {
            assert_eq!(exists.lookup(&[key], &mut s).unwrap(), Value::Bool(want));
        }
        assert_eq!(exists.lookup(&[Value::Null], &mut s).unwrap(), Value::Null);
        let bits = OffsetTable::Presence { table: t, words };
        assert!(SubqueryTable::from_offsets(SubqueryKind::Count, bits).is_err());
    }
}
