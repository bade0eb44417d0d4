//! Storage-level writes inside a [`WriteTxn`]: insert, update and delete of
//! nodes and rels, below Cypher.
//!
//! Design (nothing committed is changed in place; every write goes to pages
//! of the transaction):
//! - **Insert nodes**: the values are type-checked against the catalog, primary
//!   keys checked (not NULL, unique against live rows through the PK index and
//!   within the batch); the rows are buffered in the transaction (keys go to
//!   the PK delta at once, so lookups see them) and written at commit, before
//!   any other write operation or bulk load, or when a group's worth is
//!   buffered ([`WriteTxn::flush_pending`]): appended to the last node group,
//!   each column chunk re-encoding only its last tail
//!   ([`ColumnChunk::append`]: levels of 4096 and 64 values, folded upwards
//!   when full), and to new groups. Cost: a few dozen values per column per
//!   flush, plus amortised folds.
//! - **PK index**: new keys go to the table's `pk_delta` (exact key → offset,
//!   in the metadata; two levels, see `pk_delta.rs`) instead of rebuilding the
//!   index; [`PkLookup`](crate::node_table::PkLookup) consults it
//!   first. At commit, a delta larger than [`pk_delta_limit`] is folded into a
//!   rebuilt index ([`WriteTxn::merge_pk_deltas`] forces it, e.g. at CHECKPOINT).
//!   Deleted rows are removed from the delta; base-index entries of deleted rows
//!   are masked by the deletion bitmaps and dropped at the next rebuild.
//! - **Insert rels**: endpoints must be live nodes; multiplicity (`MANY_ONE`,
//!   ...) is checked against existing rels and the batch. Each touched CSR
//!   group of both directions is decoded, merged with the new rels and
//!   rewritten (offsets, neighbours, rel ids and every parallel property
//!   column). New rel ids continue from `next_rel_id`. Cost: O(rels of the
//!   touched groups) per merge and direction. Rels of many-to-many tables are
//!   buffered in the transaction (ids assigned at once) and merged by
//!   [`WriteTxn::flush_pending`], which every operation that reads rels and
//!   every full read version call first.
//! - **Update**: new values are patches of the column chunk they belong to
//!   ([`ColumnChunk::set_values`]: positions and values beside the chunk,
//!   folded in when they grow), for a node property in its group and for a
//!   rel property in the parallel chunks of both directions. Primary keys
//!   cannot be updated.
//! - **Delete nodes**: sets bits in the group's deletion mask (metadata only; no
//!   chunk is rewritten). Offsets a checkpoint has cleared are reused by later
//!   inserts (`take_free`). Without `detach`, a node with rels in any rel
//!   table is an error; with it, its rels are deleted.
//! - **Delete rels**: a CSR region losing a few rels gets tombstones (see the
//!   `rel_table` module); one losing more than its change index holds is
//!   rewritten without them.
//!
//! Everything goes to fresh pages of the transaction's private table metadata:
//! nothing is visible to snapshots before commit, and dropping the transaction
//! rolls back. Pages this module wrote and then replaced within the same
//! transaction, or that a rollback leaves unreferenced, are freed at once.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use kith_catalog::{PropertyId, TableEntry, TableKind};
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{Error, ErrorKind, LogicalType, Result, TableId, Value, ValueVector, VectorData};
use kith_pager::{PageIdx, Pager};

use crate::column::{ColumnChunk, PageRun};
use crate::node_table::{DeletedMask, NodeGroupData, NodeTableData, PkKey};
use crate::pk_index::{IndexKey, KeyKind, PkIndex};
use crate::rel_table::{
    CsrGroup, CsrIndex, PinnedCsrGroup, RelDirection, RelTableData, APPENDED_MAX,
};
use crate::storage::WriteTxn;
use crate::version::TableData;

/// Smallest PK delta that is folded into the index at commit.
#[cfg(not(kith_tiny))]
pub const PK_DELTA_MIN: u64 = 512;
#[cfg(kith_tiny)]
pub const PK_DELTA_MIN: u64 = 8;

/// Largest PK delta kept: the delta lives in the metadata blob, which every
/// commit appends to the WAL, so it must stay small.
pub const PK_DELTA_MAX: u64 = 1 << 16;

/// Size above which a table's PK delta is merged into a rebuilt index at
/// commit: 4·sqrt(indexed keys), clamped to
/// [`PK_DELTA_MIN`]..=[`PK_DELTA_MAX`]. Every commit encodes the whole delta
/// into its metadata (O(delta)), and a rebuild reads every key (O(indexed)
/// per `limit` inserts), so an insert costs O(limit + indexed / limit),
/// least near sqrt(indexed). (An eighth of the indexed keys, as before,
/// made a commit into a 1M-row table encode up to 65,536 delta entries.)
pub fn pk_delta_limit(indexed_keys: u64) -> u64 {
    (4 * (indexed_keys as f64).sqrt() as u64).clamp(PK_DELTA_MIN, PK_DELTA_MAX)
}

/// Per-transaction state of the write operations.
#[derive(Debug, Default)]
pub(crate) struct TxnLocal {
    /// Page runs written in this transaction (first page -> count) that the
    /// transaction's metadata may still reference.
    fresh: HashMap<u32, u32>,
    /// Rows inserted by `insert_nodes` not yet written to node groups, per
    /// table (storage column order). Their offsets follow the table's
    /// `num_rows`; their keys are already in the table's PK delta.
    pending: BTreeMap<TableId, Vec<ValueVector>>,
    /// Rels inserted by `insert_rels` into a many-to-many rel table and not
    /// yet merged into its CSR, per table: a transaction of many one-rel
    /// CREATEs rewrites each CSR group once, at the first statement that
    /// reads rels (or at commit), not once per statement. Their ids are
    /// assigned (the table's `next_rel_id` counts them).
    pending_rels: BTreeMap<TableId, PendingRels>,
    /// SETs not yet written, by (node table, property): node offset ->
    /// value (of the column's type). A clause that sets many nodes writes
    /// each column chunk once (a patch append, or one rewrite when the
    /// patch would fill) instead of once per node.
    node_sets: BTreeMap<(TableId, PropertyId), BTreeMap<u64, Value>>,
    /// The same for rels, by (rel table, property): rel id -> (src, dst,
    /// value); positions are found at flush, one scan per bound node.
    rel_sets: BTreeMap<(TableId, PropertyId), BTreeMap<u64, RelSet>>,
    /// Ids of the rels this transaction deleted, by rel table (ids are not
    /// reused, so a matched rel exists unless it is here).
    deleted_rels: HashMap<TableId, HashSet<u64>>,
}

/// A buffered rel SET: (src, dst, value).
type RelSet = (u64, u64, Value);

/// Buffered rel inserts of one table, in insertion order.
#[derive(Debug, Default)]
struct PendingRels {
    src: Vec<u64>,
    dst: Vec<u64>,
    ids: Vec<u64>,
    /// One vector per storage column, already coerced to its type.
    props: Vec<ValueVector>,
}

impl TxnLocal {
    fn pending_rows(&self, table: TableId) -> u64 {
        self.pending
            .get(&table)
            .and_then(|c| c.first())
            .map_or(0, |c| c.len() as u64)
    }

    /// Records a chunk this transaction wrote (all of its pages are new).
    fn track(&mut self, chunk: &ColumnChunk) {
        let mut runs = Vec::new();
        chunk.pages(&mut runs);
        self.track_runs(&runs);
    }

    fn track_runs(&mut self, runs: &[PageRun]) {
        for r in runs {
            self.fresh.insert(r.first, r.count);
        }
    }

    /// `runs` are no longer referenced by the transaction: those written by it
    /// are freed now (no snapshot can see them); older ones are freed by commit.
    fn retire(&mut self, pager: &Pager, runs: &[PageRun]) {
        for r in runs {
            if let Some(count) = self.fresh.remove(&r.first) {
                pager.free(PageIdx(r.first), count);
            }
        }
    }

    /// Rollback: frees every page written by this transaction's write operations.
    pub(crate) fn release(&mut self, pager: &Pager) {
        for (first, count) in self.fresh.drain() {
            pager.free(PageIdx(first), count);
        }
    }

    /// The pages now belong to the committed version.
    pub(crate) fn committed(&mut self) {
        self.fresh.clear();
    }
}

fn chunk_pages(chunks: &[ColumnChunk]) -> Vec<PageRun> {
    let mut out = Vec::new();
    for c in chunks {
        c.pages(&mut out);
    }
    out
}

fn csr_pages(g: &CsrGroup) -> Vec<PageRun> {
    let mut out = Vec::new();
    g.offsets.pages(&mut out);
    g.neighbors.pages(&mut out);
    g.rel_ids.pages(&mut out);
    for p in &g.properties {
        p.pages(&mut out);
    }
    out
}

fn write_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, message)
}

/// (storage column, type) of each property of a MERGE probe.
fn probe_columns(
    entry: &TableEntry,
    props: &[(PropertyId, Value)],
    column_of: impl Fn(PropertyId) -> Option<usize>,
) -> Result<Vec<(usize, LogicalType)>> {
    props
        .iter()
        .map(|(p, _)| {
            let c =
                column_of(*p).ok_or_else(|| Error::internal("merged property has no column"))?;
            let ty = entry
                .properties
                .iter()
                .find(|q| q.id == *p)
                .map(|q| q.ty.clone())
                .ok_or_else(|| Error::internal("merged property missing"))?;
            Ok((c, ty))
        })
        .collect()
}

/// Cypher equality of two non-NULL property values for MERGE: numbers compare
/// by value across types (1 = 1.0), lists element-wise, others exactly.
fn property_equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| property_equals(a, b))
        }
        _ if a.is_null() || b.is_null() => false,
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y))
                if a.logical_type().is_numeric() && b.logical_type().is_numeric() =>
            {
                match (a.as_i64(), b.as_i64()) {
                    (Some(i), Some(j)) => i == j,
                    _ => x == y,
                }
            }
            _ => a == b,
        },
    }
}

fn key_kind(ty: &LogicalType) -> KeyKind {
    if *ty == LogicalType::String {
        KeyKind::StrHash
    } else {
        KeyKind::Int
    }
}

/// Types of a table's storage columns (in `column_ids` order).
/// Checks `rows` (one value per catalog property, in catalog order) against
/// the table's types and writes them into new vectors in storage column order.
fn coerce_rows(
    entry: &TableEntry,
    rows: &[Vec<Value>],
    types: &[LogicalType],
    column_of: impl Fn(PropertyId) -> Option<usize>,
    what: &str,
) -> Result<Vec<ValueVector>> {
    let col_of: Vec<usize> = entry
        .properties
        .iter()
        .map(|p| {
            column_of(p.id).ok_or_else(|| {
                Error::internal(format!(
                    "property '{}' of '{}' has no storage column",
                    p.name, entry.name
                ))
            })
        })
        .collect::<Result<_>>()?;
    let mut cols: Vec<ValueVector> = types
        .iter()
        .map(|t| ValueVector::new(t.clone(), rows.len()))
        .collect();
    for (r, row) in rows.iter().enumerate() {
        if row.len() != entry.properties.len() {
            return Err(write_error(format!(
                "a row for {what} '{}' has {} values but the table has {} properties",
                entry.name,
                row.len(),
                entry.properties.len()
            )));
        }
        for (pi, prop) in entry.properties.iter().enumerate() {
            let v = row[pi].to_column_type(&prop.ty).ok_or_else(|| {
                Error::type_error(format!(
                    "cannot store {} value {} in column '{}' ({}) of table '{}'",
                    row[pi].logical_type(),
                    row[pi],
                    prop.name,
                    prop.ty,
                    entry.name
                ))
            })?;
            cols[col_of[pi]].set_value(r, &v);
        }
    }
    Ok(cols)
}

fn column_types(entry: &TableEntry, column_ids: &[PropertyId]) -> Result<Vec<LogicalType>> {
    column_ids
        .iter()
        .map(|id| {
            entry
                .properties
                .iter()
                .find(|p| p.id == *id)
                .map(|p| p.ty.clone())
                .ok_or_else(|| {
                    Error::internal(format!(
                        "storage column {} of table '{}' is not in the catalog",
                        id.0, entry.name
                    ))
                })
        })
        .collect()
}

/// Reads one value of a node table (cold path: tests, checks).
pub fn read_node_value(
    pager: &Arc<Pager>,
    data: &NodeTableData,
    column: usize,
    ty: &LogicalType,
    offset: u64,
) -> Result<Value> {
    let mut v = ValueVector::new(ty.clone(), 1);
    data.read_column(pager, column, offset, 1, &mut v, 0)?;
    Ok(v.get_value(0))
}

/// Rels to add to one CSR region: `rows` index the parallel slices
/// (`bound` the node of this direction, `other` the neighbour) and the
/// property vectors.
struct NewRels<'a> {
    rows: &'a [usize],
    bound: &'a [u64],
    other: &'a [u64],
    ids: &'a [u64],
    props: &'a [ValueVector],
}

/// One CSR group decoded into memory.
struct CsrBuf {
    offsets: Vec<u64>,
    nbrs: Vec<u64>,
    ids: Vec<u64>,
    props: Vec<ValueVector>,
}

impl CsrBuf {
    fn empty(types: &[LogicalType]) -> CsrBuf {
        CsrBuf {
            offsets: vec![0],
            nbrs: Vec::new(),
            ids: Vec::new(),
            props: types
                .iter()
                .map(|t| ValueVector::new(t.clone(), 0))
                .collect(),
        }
    }

    /// Group `g` in node order: its appended rels sorted in after each
    /// node's main range, its deleted rels left out, its updated values in
    /// (the buffer describes the region written whole).
    fn read(pager: &Arc<Pager>, g: &CsrGroup, types: &[LogicalType]) -> Result<CsrBuf> {
        let all: Vec<usize> = (0..types.len()).collect();
        let pinned = g.pin(pager, &all)?;
        let n = g.num_rels as usize;
        let mut nbrs = vec![0u64; n];
        pinned.neighbors()?.read_u64s(0, n, &mut nbrs);
        let mut ids = vec![0u64; n];
        pinned.rel_ids()?.read_u64s(0, n, &mut ids);
        let mut props = Vec::with_capacity(types.len());
        for (c, ty) in types.iter().enumerate() {
            let mut v = ValueVector::new(ty.clone(), n);
            pinned.properties[c].read(0, n, &mut v, 0)?;
            props.push(v);
        }
        let mut offsets = vec![0u64; g.num_nodes as usize + 1];
        pinned.offsets.read_u64s(0, offsets.len(), &mut offsets);
        if !pinned.has_changes() {
            return Ok(CsrBuf {
                offsets,
                nbrs,
                ids,
                props,
            });
        }
        let span = pinned.node_span();
        let mut order = Vec::with_capacity(n);
        offsets = Vec::with_capacity(span as usize + 1);
        offsets.push(0);
        for local in 0..span {
            for (s, e) in pinned.ranges(local) {
                order.extend(s..e);
            }
            offsets.push(order.len() as u64);
        }
        if order.len() as u64 != g.live_rels() {
            return Err(Error::corruption(format!(
                "a CSR region of {} live rels indexes {} of them",
                g.live_rels(),
                order.len()
            )));
        }
        Ok(CsrBuf {
            offsets,
            nbrs: order.iter().map(|&p| nbrs[p as usize]).collect(),
            ids: order.iter().map(|&p| ids[p as usize]).collect(),
            props: props.iter().map(|v| v.gather(&order)).collect(),
        })
    }

    fn num_nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    fn range(&self, local: usize) -> std::ops::Range<usize> {
        if local >= self.num_nodes() {
            return 0..0;
        }
        self.offsets[local] as usize..self.offsets[local + 1] as usize
    }
}

/// The CSR positions of rels `(src, dst, id)` in direction `dir` of `csr`,
/// by region, as (position, id) in position order: each bound node's rels
/// are scanned once, however many of them are wanted. Rels not found are
/// left out.
fn locate_rels(
    pager: &Arc<Pager>,
    csr: &CsrIndex,
    dir: RelDirection,
    rels: &[(u64, u64, u64)],
) -> Result<BTreeMap<usize, Vec<(u64, u64)>>> {
    let mut wanted: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for &(s, d, id) in rels {
        let bound = if dir == RelDirection::Fwd { s } else { d };
        wanted.entry(bound).or_default().push(id);
    }
    let mut out: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
    let mut pinned: Option<(usize, PinnedCsrGroup)> = None;
    let mut ids = Vec::new();
    for (bound, mut want) in wanted {
        want.sort_unstable();
        let g = (bound / NODE_GROUP_SIZE) as usize;
        let Some(group) = csr.groups.get(g) else {
            continue;
        };
        if pinned.as_ref().map(|p| p.0) != Some(g) {
            pinned = Some((g, group.pin(pager, &[])?));
        }
        let Some((_, p)) = &pinned else {
            continue;
        };
        let hits = out.entry(g).or_default();
        for (s, e) in p.ranges(bound % NODE_GROUP_SIZE) {
            ids.resize((e - s) as usize, 0);
            p.rel_ids()?.read_u64s(s, ids.len(), &mut ids);
            for (i, id) in ids.iter().enumerate() {
                if want.binary_search(id).is_ok() {
                    hits.push((s + i as u64, *id));
                }
            }
        }
    }
    for hits in out.values_mut() {
        hits.sort_unstable();
    }
    Ok(out)
}

/// Property `property` of `entry`.
fn catalog_property(entry: &TableEntry, property: PropertyId) -> Result<&kith_catalog::Property> {
    entry
        .properties
        .iter()
        .find(|p| p.id == property)
        .ok_or_else(|| {
            write_error(format!(
                "table '{}' has no property with id {}",
                entry.name, property.0
            ))
        })
}

/// `value` converted to the column type of `property` of `entry` (a clear
/// error when it does not fit).
fn column_value(entry: &TableEntry, property: PropertyId, value: &Value) -> Result<Value> {
    let prop = catalog_property(entry, property)?;
    value.to_column_type(&prop.ty).ok_or_else(|| {
        Error::type_error(format!(
            "cannot store {} value {} in column '{}' ({}) of table '{}'",
            value.logical_type(),
            value,
            prop.name,
            prop.ty,
            entry.name
        ))
    })
}

fn u64_vector(values: &[u64]) -> ValueVector {
    ValueVector {
        ty: LogicalType::UInt64,
        data: VectorData::U64(values.to_vec()),
        nulls: kith_common::NullMask::with_len(values.len()),
    }
}

impl WriteTxn<'_> {
    fn write_chunk(&mut self, v: &ValueVector) -> Result<ColumnChunk> {
        let pager = Arc::clone(self.pager());
        let c = ColumnChunk::write(&pager, v, 0, v.len())?;
        self.local.track(&c);
        Ok(c)
    }

    fn retire(&mut self, runs: &[PageRun]) {
        let pager = Arc::clone(self.pager());
        self.local.retire(&pager, runs);
    }

    fn write_csr(&mut self, buf: &CsrBuf) -> Result<CsrGroup> {
        let mut properties = Vec::with_capacity(buf.props.len());
        for p in &buf.props {
            properties.push(self.write_chunk(p)?);
        }
        Ok(CsrGroup {
            num_nodes: buf.num_nodes() as u64,
            num_rels: buf.nbrs.len() as u64,
            offsets: self.write_chunk(&u64_vector(&buf.offsets))?,
            neighbors: self.write_chunk(&u64_vector(&buf.nbrs))?,
            rel_ids: self.write_chunk(&u64_vector(&buf.ids))?,
            properties,
            appended: None,
            deleted: None,
        })
    }

    fn entry(&self, table: TableId) -> Result<TableEntry> {
        self.catalog
            .table(table)
            .cloned()
            .ok_or_else(|| Error::internal(format!("no table with id {}", table.0)))
    }

    fn node_data(&self, table: TableId) -> Result<NodeTableData> {
        match self.tables.get(&table).map(|t| t.as_ref()) {
            Some(TableData::Node(n)) => Ok(n.clone()),
            _ => Err(Error::internal(format!(
                "table {} has no node storage",
                table.0
            ))),
        }
    }

    fn rel_data(&self, table: TableId) -> Result<RelTableData> {
        match self.tables.get(&table).map(|t| t.as_ref()) {
            Some(TableData::Rel(r)) => Ok(r.clone()),
            _ => Err(Error::internal(format!(
                "table {} has no rel storage",
                table.0
            ))),
        }
    }

    /// Creates the empty storage of `table`, which this transaction's
    /// catalog has just gained (DDL or an implicit table of a schema-less
    /// write).
    pub fn create_table_storage(&mut self, table: TableId) -> Result<()> {
        let entry = self.entry(table)?;
        let ids: Vec<PropertyId> = entry.properties.iter().map(|p| p.id).collect();
        let data = match &entry.kind {
            TableKind::Node(info) => TableData::Node(NodeTableData::empty(ids, info.primary_key)),
            TableKind::Rel(_) => TableData::Rel(RelTableData::empty(ids)),
        };
        self.tables.insert(table, Arc::new(data));
        Ok(())
    }

    /// Adds the storage of `property`, which this transaction's catalog entry
    /// of `table` has just gained: an all-NULL chunk in every node group (or
    /// both CSR directions' groups), so existing rows read NULL.
    /// Cost: one chunk write per group.
    pub fn add_column(&mut self, table: TableId, property: PropertyId) -> Result<()> {
        self.add_column_with(table, property, &Value::Null)
    }

    /// [`WriteTxn::add_column`] where existing rows read `fill` (ALTER TABLE
    /// ADD ... DEFAULT).
    pub fn add_column_with(
        &mut self,
        table: TableId,
        property: PropertyId,
        fill: &Value,
    ) -> Result<()> {
        self.flush_pending()?;
        let entry = self.entry(table)?;
        let ty = entry
            .properties
            .iter()
            .find(|p| p.id == property)
            .map(|p| p.ty.clone())
            .ok_or_else(|| Error::internal("added property missing from the catalog"))?;
        let fill = fill.to_column_type(&ty).ok_or_else(|| {
            Error::type_error(format!("the default {fill} does not fit type {ty}"))
        })?;
        let nulls = |n: u64| {
            let mut v = ValueVector::new(ty.clone(), n as usize);
            for i in 0..n as usize {
                v.set_value(i, &fill);
            }
            v
        };
        if entry.is_node() {
            let mut data = self.node_data(table)?;
            for g in 0..data.groups.len() {
                let chunk = self.write_chunk(&nulls(data.groups[g].num_rows))?;
                data.groups[g].columns.push(chunk);
            }
            data.column_ids.push(property);
            self.tables.insert(table, Arc::new(TableData::Node(data)));
        } else {
            let mut data = self.rel_data(table)?;
            for csr in [&mut data.fwd, &mut data.bwd] {
                for g in csr.groups.iter_mut() {
                    let c = ColumnChunk::write(
                        self.pager(),
                        &nulls(g.num_rels),
                        0,
                        g.num_rels as usize,
                    )?;
                    self.local.track(&c);
                    g.properties.push(c);
                }
            }
            data.column_ids.push(property);
            self.tables.insert(table, Arc::new(TableData::Rel(data)));
        }
        Ok(())
    }

    /// Removes the storage of `property`, which this transaction's catalog
    /// entry of `table` no longer has (ALTER TABLE DROP); its pages are
    /// freed once no snapshot needs them.
    pub fn drop_column(&mut self, table: TableId, property: PropertyId) -> Result<()> {
        self.flush_pending()?;
        let is_node = self.entry(table)?.is_node();
        let mut retired = Vec::new();
        if is_node {
            let mut data = self.node_data(table)?;
            let Some(c) = data.column_of(property) else {
                return Err(Error::internal("dropped property has no column"));
            };
            data.column_ids.remove(c);
            if data.pk_column > c {
                data.pk_column -= 1;
            }
            for g in &mut data.groups {
                retired.push(g.columns.remove(c));
            }
            self.tables.insert(table, Arc::new(TableData::Node(data)));
        } else {
            let mut data = self.rel_data(table)?;
            let Some(c) = data.column_of(property) else {
                return Err(Error::internal("dropped property has no column"));
            };
            data.column_ids.remove(c);
            for csr in [&mut data.fwd, &mut data.bwd] {
                for g in csr.groups.iter_mut() {
                    retired.push(g.properties.remove(c));
                }
            }
            self.tables.insert(table, Arc::new(TableData::Rel(data)));
        }
        self.retire(&chunk_pages(&retired));
        Ok(())
    }

    /// Turns the column of `property` into a variant (ANY) column, keeping
    /// every value with its own type: a schema-less property that has been
    /// written with values of different types. Cost: every chunk of the
    /// column is rewritten.
    pub fn widen_to_any(&mut self, table: TableId, property: PropertyId) -> Result<()> {
        self.flush_pending()?;
        let entry = self.entry(table)?;
        let Some(pos) = entry.properties.iter().position(|p| p.id == property) else {
            return Err(Error::internal("widened property missing from the catalog"));
        };
        let old_ty = entry.properties[pos].ty.clone();
        let pager = Arc::clone(self.pager());
        let widen = |old: &ColumnChunk, n: u64| -> Result<ValueVector> {
            let mut v = ValueVector::new(old_ty.clone(), n as usize);
            old.pin(&pager)?.read(0, n as usize, &mut v, 0)?;
            let mut any = ValueVector::new(LogicalType::Any, n as usize);
            for i in 0..n as usize {
                any.set_value(i, &v.get_value(i));
            }
            Ok(any)
        };
        if entry.is_node() {
            let mut data = self.node_data(table)?;
            let c = data
                .column_of(property)
                .ok_or_else(|| Error::internal("widened property has no column"))?;
            for g in 0..data.groups.len() {
                let any = widen(&data.groups[g].columns[c], data.groups[g].num_rows)?;
                let chunk = self.write_chunk(&any)?;
                let old = std::mem::replace(&mut data.groups[g].columns[c], chunk);
                self.retire(&chunk_pages(&[old]));
            }
            self.tables.insert(table, Arc::new(TableData::Node(data)));
        } else {
            let mut data = self.rel_data(table)?;
            let c = data
                .column_of(property)
                .ok_or_else(|| Error::internal("widened property has no column"))?;
            let mut retired = Vec::new();
            for csr in [&mut data.fwd, &mut data.bwd] {
                for g in csr.groups.iter_mut() {
                    let any = widen(&g.properties[c], g.num_rels)?;
                    let chunk = ColumnChunk::write(&pager, &any, 0, any.len())?;
                    self.local.track(&chunk);
                    retired.push(std::mem::replace(&mut g.properties[c], chunk));
                }
            }
            self.retire(&chunk_pages(&retired));
            self.tables.insert(table, Arc::new(TableData::Rel(data)));
        }
        self.catalog
            .set_property_type(table, property, LogicalType::Any)
    }

    /// One property of node `offset` of `table`, as this transaction sees it.
    pub fn read_node_property(
        &mut self,
        table: TableId,
        offset: u64,
        property: PropertyId,
    ) -> Result<Value> {
        self.flush_pending()?;
        let entry = self.entry(table)?;
        let data = self.node_data(table)?;
        let ty = entry
            .properties
            .iter()
            .find(|p| p.id == property)
            .map(|p| p.ty.clone())
            .ok_or_else(|| Error::internal("read of a property not in the catalog"))?;
        let column = data
            .column_of(property)
            .ok_or_else(|| Error::internal("property without storage column"))?;
        read_node_value(self.pager(), &data, column, &ty, offset)
    }

    /// The properties (catalog order) of rel `rel_id` of `table` from node
    /// `src`, as this transaction sees it (RETURN after writes); None when
    /// the rel does not exist (deleted). Cost: a scan of `src`'s forward CSR
    /// range.
    pub fn read_rel_properties(
        &mut self,
        table: TableId,
        src: u64,
        rel_id: u64,
    ) -> Result<Option<Vec<Value>>> {
        self.flush_pending()?;
        let entry = self.entry(table)?;
        let data = self.rel_data(table)?;
        let pager = Arc::clone(self.pager());
        let cols: Vec<usize> = entry
            .properties
            .iter()
            .map(|p| {
                data.column_of(p.id)
                    .ok_or_else(|| Error::internal("rel property without storage column"))
            })
            .collect::<Result<_>>()?;
        let g = (src / NODE_GROUP_SIZE) as usize;
        let Some(group) = data.fwd.groups.get(g) else {
            return Ok(None);
        };
        let pinned = group.pin(&pager, &cols)?;
        let rel_ids = pinned.rel_ids()?;
        let Some(pos) = pinned
            .ranges(src % NODE_GROUP_SIZE)
            .flat_map(|(s, e)| s..e)
            .find(|&p| rel_ids.get_u64(p) == rel_id)
        else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(cols.len());
        for (p, col) in entry.properties.iter().zip(&pinned.properties) {
            let mut v = ValueVector::new(p.ty.clone(), 1);
            col.read(pos, 1, &mut v, 0)?;
            out.push(v.get_value(0));
        }
        Ok(Some(out))
    }

    /// The rels of `table` at node `from` in direction `dir` (to `to`, when
    /// given) whose properties equal `props`, as (neighbour, rel id) (MERGE
    /// of a rel or a path). Cost: a scan of `from`'s range in `dir`.
    pub fn find_rels(
        &mut self,
        table: TableId,
        dir: RelDirection,
        from: u64,
        to: Option<u64>,
        props: &[(PropertyId, Value)],
    ) -> Result<Vec<(u64, u64)>> {
        self.flush_pending()?;
        if props.iter().any(|(_, v)| v.is_null()) {
            return Ok(Vec::new());
        }
        let entry = self.entry(table)?;
        let data = self.rel_data(table)?;
        let pager = Arc::clone(self.pager());
        let (cols, types): (Vec<usize>, Vec<LogicalType>) =
            probe_columns(&entry, props, |p| data.column_of(p))?
                .into_iter()
                .unzip();
        let g = (from / NODE_GROUP_SIZE) as usize;
        let Some(group) = data.csr(dir).groups.get(g) else {
            return Ok(Vec::new());
        };
        let pinned = group.pin(&pager, &cols)?;
        let (neighbors, rel_ids) = (pinned.neighbors()?, pinned.rel_ids()?);
        let mut out = Vec::new();
        for pos in pinned
            .ranges(from % NODE_GROUP_SIZE)
            .flat_map(|(s, e)| s..e)
        {
            let nbr = neighbors.get_u64(pos);
            if to.is_some_and(|t| t != nbr) {
                continue;
            }
            let mut all = true;
            for ((col, ty), (_, want)) in pinned.properties.iter().zip(&types).zip(props) {
                let mut v = ValueVector::new(ty.clone(), 1);
                col.read(pos, 1, &mut v, 0)?;
                all &= property_equals(&v.get_value(0), want);
            }
            if all {
                out.push((nbr, rel_ids.get_u64(pos)));
            }
        }
        Ok(out)
    }

    /// Whether live node `offset` of `table` has properties equal to `props`
    /// (MERGE checking a node a path reached). A NULL in `props` matches
    /// nothing.
    pub fn node_has_properties(
        &mut self,
        table: TableId,
        offset: u64,
        props: &[(PropertyId, Value)],
    ) -> Result<bool> {
        for (p, want) in props {
            if want.is_null()
                || !property_equals(&self.read_node_property(table, offset, *p)?, want)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Offsets of the live nodes of `table` whose properties equal `props`
    /// (MERGE on an implicit table, which has no key to look up). A NULL in
    /// `props` matches nothing. Cost: a scan of the given columns.
    pub fn find_nodes(
        &mut self,
        table: TableId,
        props: &[(PropertyId, Value)],
    ) -> Result<Vec<u64>> {
        self.flush_pending()?;
        if props.iter().any(|(_, v)| v.is_null()) {
            return Ok(Vec::new());
        }
        let entry = self.entry(table)?;
        let data = self.node_data(table)?;
        let pager = Arc::clone(self.pager());
        let cols: Vec<(usize, LogicalType, &Value)> =
            probe_columns(&entry, props, |p| data.column_of(p))?
                .into_iter()
                .zip(props)
                .map(|((c, ty), (_, v))| (c, ty, v))
                .collect();
        let mut out = Vec::new();
        let mut first = 0u64;
        for (g, group) in data.groups.iter().enumerate() {
            let n = group.num_rows as usize;
            let mut keep: Vec<bool> = (0..n as u64)
                .map(|l| !group.deleted.as_ref().is_some_and(|d| d.contains(l)))
                .collect();
            for (c, ty, want) in &cols {
                let mut v = ValueVector::new(ty.clone(), n);
                data.pin_column(&pager, g, *c)?.read(0, n, &mut v, 0)?;
                for (i, k) in keep.iter_mut().enumerate() {
                    *k = *k && property_equals(&v.get_value(i), want);
                }
            }
            out.extend(
                keep.iter()
                    .enumerate()
                    .filter(|(_, k)| **k)
                    .map(|(i, _)| first + i as u64),
            );
            first += group.num_rows;
        }
        Ok(out)
    }

    /// The live node of `table` whose primary key is `key`, as this
    /// transaction sees it (for MERGE and for resolving rel endpoints).
    pub fn lookup_pk(&self, table: TableId, key: &Value) -> Result<Option<u64>> {
        let data = self.node_data(table)?;
        data.pk_lookup(self.pager())?.lookup(key)
    }

    /// Inserts nodes into node table `table`; each row holds one value per
    /// catalog property, in catalog order. Returns the new offsets.
    pub fn insert_nodes(&mut self, table: TableId, rows: &[Vec<Value>]) -> Result<Vec<u64>> {
        let entry = self.entry(table)?;
        let pk_prop = match &entry.kind {
            TableKind::Node(info) => info.primary_key,
            TableKind::Rel(_) => {
                return Err(write_error(format!(
                    "'{}' is a rel table, not a node table",
                    entry.name
                )))
            }
        };
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let pager = Arc::clone(self.pager());
        let mut data = self.node_data(table)?;
        let types = column_types(&entry, &data.column_ids)?;
        let n = rows.len();
        if data.num_rows + self.local.pending_rows(table) + n as u64
            > kith_common::ids::MAX_TABLE_ROWS
        {
            return Err(write_error(format!(
                "table '{}' would exceed {} rows",
                entry.name,
                kith_common::ids::MAX_TABLE_ROWS
            )));
        }
        // Offsets: free ones (deleted rows a checkpoint cleared) first, then
        // new ones after the buffered rows. The free ones are taken from
        // `data`, which is stored back only once every check has passed.
        let reused = data.take_free(n);
        let first = data.num_rows + self.local.pending_rows(table);
        let offsets: Vec<u64> = reused
            .iter()
            .copied()
            .chain(first..first + (n - reused.len()) as u64)
            .collect();
        // An implicit table's hidden serial key: the row's offset.
        let serial_rows;
        let rows = if entry.implicit {
            let mut owned = rows.to_vec();
            for (row, &o) in owned.iter_mut().zip(&offsets) {
                if let Some(k) = row.get_mut(pk_prop) {
                    *k = Value::Int64(o as i64);
                }
            }
            serial_rows = owned;
            &serial_rows[..]
        } else {
            rows
        };
        let new_cols = coerce_rows(&entry, rows, &types, |p| data.column_of(p), "table")?;

        // Primary keys.
        let pk_name = &entry.properties[pk_prop].name;
        let kind = key_kind(&entry.properties[pk_prop].ty);
        let mut lookup = data.pk_lookup(&pager)?;
        let mut batch: HashSet<PkKey> = HashSet::with_capacity(n);
        let mut keys = Vec::with_capacity(n);
        for row in rows {
            let v = row[pk_prop]
                .to_column_type(&entry.properties[pk_prop].ty)
                .unwrap_or(Value::Null);
            if v.is_null() {
                return Err(write_error(format!(
                    "the primary key '{pk_name}' of table '{}' cannot be NULL",
                    entry.name
                )));
            }
            let key = PkKey::of_value(&v, kind)
                .ok_or_else(|| Error::internal(format!("unindexable key {v}")))?;
            if !batch.insert(key.clone()) || lookup.lookup(&v)?.is_some() {
                return Err(write_error(format!(
                    "duplicate primary key {v} in column '{pk_name}' of table '{}'",
                    entry.name
                )));
            }
            keys.push(key);
        }
        drop(lookup);

        // Buffered in the transaction; written by `flush_pending` (a reused
        // row's values as SETs of every column, a new row's as an append).
        if data.pk_index.is_none() {
            data.pk_index = Some(PkIndex::build(
                &pager,
                kind,
                std::iter::empty::<(IndexKey, u64)>(),
            )?);
            if let Some(idx) = &data.pk_index {
                self.local.fresh.insert(idx.slots.first, idx.slots.count);
            }
        }
        for (k, &o) in keys.into_iter().zip(&offsets) {
            data.pk_delta.insert(k, o);
        }
        let column_ids = (!reused.is_empty()).then(|| data.column_ids.clone());
        self.tables.insert(table, Arc::new(TableData::Node(data)));
        let r = reused.len();
        for (c, property) in column_ids.into_iter().flatten().enumerate() {
            // Every column, NULLs too: an ADD COLUMN default may have
            // filled the cleared row.
            let sets = self.local.node_sets.entry((table, property)).or_default();
            for (i, &o) in reused.iter().enumerate() {
                sets.insert(o, new_cols[c].get_value(i));
            }
        }
        if r < n {
            let pending = self.local.pending.entry(table).or_insert_with(|| {
                types
                    .iter()
                    .map(|t| ValueVector::new(t.clone(), 0))
                    .collect()
            });
            let appended: Vec<u64> = (r as u64..n as u64).collect();
            for (p, c) in pending.iter_mut().zip(&new_cols) {
                if r == 0 {
                    p.append(c);
                } else {
                    p.append(&c.gather(&appended));
                }
            }
            if self.local.pending_rows(table) >= NODE_GROUP_SIZE {
                self.flush_table(table)?;
            }
        }
        Ok(offsets)
    }

    /// [`WriteTxn::insert_nodes`] with the rows of `chunk` (columns in catalog
    /// property order).
    pub fn insert_nodes_chunk(
        &mut self,
        table: TableId,
        chunk: &kith_common::Chunk,
    ) -> Result<Vec<u64>> {
        let rows: Vec<Vec<Value>> = (0..chunk.num_rows).map(|r| chunk.row(r)).collect();
        self.insert_nodes(table, &rows)
    }

    /// Writes the rows `insert_nodes` buffered in this transaction into the
    /// node groups of `txn.tables`. Every other write operation, the bulk
    /// loader and commit call it first; **call it before reading
    /// `txn.tables` inside the transaction** (read-your-writes).
    pub fn flush_pending(&mut self) -> Result<()> {
        self.flush_inserts()?;
        self.flush_sets()
    }

    /// Writes the buffered node and rel inserts, not the buffered SETs: for
    /// write operations that change rows and rels but read no property
    /// value, so a clause setting many entities keeps its SETs buffered.
    fn flush_inserts(&mut self) -> Result<()> {
        self.flush_node_inserts()?;
        let tables: Vec<TableId> = self.local.pending_rels.keys().copied().collect();
        for t in tables {
            self.flush_rels(t)?;
        }
        Ok(())
    }

    /// Writes the buffered SETs: per column chunk, one patch append (or one
    /// rewrite when the patch would pass its limit).
    pub(crate) fn flush_sets(&mut self) -> Result<()> {
        for ((table, property), sets) in std::mem::take(&mut self.local.node_sets) {
            self.write_node_sets(table, property, &sets)?;
        }
        for ((table, property), sets) in std::mem::take(&mut self.local.rel_sets) {
            self.write_rel_sets(table, property, &sets)?;
        }
        Ok(())
    }

    /// Replaces the values at `positions` (ascending, each once) of `chunk`
    /// by `values` (see [`ColumnChunk::set_values`]).
    fn set_chunk_values(
        &mut self,
        chunk: &ColumnChunk,
        ty: &LogicalType,
        positions: &[u64],
        values: &[&Value],
    ) -> Result<ColumnChunk> {
        let mut v = ValueVector::new(ty.clone(), values.len());
        for (i, x) in values.iter().enumerate() {
            v.set_value(i, x);
        }
        let pager = Arc::clone(self.pager());
        let a = chunk.set_values(&pager, ty, positions, &v)?;
        self.local.track_runs(&a.written);
        self.retire(&a.retired);
        Ok(a.chunk)
    }

    fn write_node_sets(
        &mut self,
        table: TableId,
        property: PropertyId,
        sets: &BTreeMap<u64, Value>,
    ) -> Result<()> {
        if sets.is_empty() {
            return Ok(());
        }
        // A table dropped since the SET takes its SETs with it.
        let Some(TableData::Node(data)) = self.tables.get(&table).map(|t| &**t) else {
            return Ok(());
        };
        let mut data = data.clone();
        let entry = self.entry(table)?;
        let ty = catalog_property(&entry, property)?.ty.clone();
        let col = data
            .column_of(property)
            .ok_or_else(|| Error::internal("property without storage column"))?;
        let mut by_group: BTreeMap<usize, (Vec<u64>, Vec<&Value>)> = BTreeMap::new();
        for (&offset, v) in sets {
            // A node deleted since keeps no value.
            if offset < data.num_rows && !data.is_deleted(offset) {
                let e = by_group
                    .entry((offset / NODE_GROUP_SIZE) as usize)
                    .or_default();
                e.0.push(offset % NODE_GROUP_SIZE);
                e.1.push(v);
            }
        }
        for (g, (positions, values)) in by_group {
            let chunk =
                self.set_chunk_values(&data.groups[g].columns[col], &ty, &positions, &values)?;
            data.groups[g].columns[col] = chunk;
        }
        self.tables.insert(table, Arc::new(TableData::Node(data)));
        Ok(())
    }

    fn write_rel_sets(
        &mut self,
        table: TableId,
        property: PropertyId,
        sets: &BTreeMap<u64, RelSet>,
    ) -> Result<()> {
        let Some(TableData::Rel(data)) = self.tables.get(&table).map(|t| &**t) else {
            return Ok(());
        };
        let mut data = data.clone();
        let entry = self.entry(table)?;
        let ty = catalog_property(&entry, property)?.ty.clone();
        let col = data
            .column_of(property)
            .ok_or_else(|| Error::internal("rel property without storage column"))?;
        let deleted = self.local.deleted_rels.get(&table);
        // A rel deleted since keeps no value.
        let live: Vec<(u64, u64, u64)> = sets
            .iter()
            .filter(|(id, _)| !deleted.is_some_and(|d| d.contains(id)))
            .map(|(&id, &(s, d, _))| (s, d, id))
            .collect();
        for dir in [RelDirection::Fwd, RelDirection::Bwd] {
            let found = locate_rels(self.pager(), data.csr(dir), dir, &live)?;
            let n: usize = found.values().map(|h| h.len()).sum();
            if n != live.len() {
                return Err(Error::internal(format!(
                    "SET of {} rels of '{}' found {n} of them",
                    live.len(),
                    entry.name
                )));
            }
            for (g, hits) in found {
                let positions: Vec<u64> = hits.iter().map(|h| h.0).collect();
                let values: Vec<&Value> = hits.iter().map(|h| &sets[&h.1].2).collect();
                let old = &data.csr(dir).groups[g].properties[col];
                let chunk = self.set_chunk_values(old, &ty, &positions, &values)?;
                data.csr_mut(dir).groups[g].properties[col] = chunk;
            }
        }
        self.tables.insert(table, Arc::new(TableData::Rel(data)));
        Ok(())
    }

    /// Writes the buffered node inserts (not the buffered rels).
    pub(crate) fn flush_node_inserts(&mut self) -> Result<()> {
        let tables: Vec<TableId> = self.local.pending.keys().copied().collect();
        for t in tables {
            self.flush_table(t)?;
        }
        Ok(())
    }

    /// Merges the buffered rels of `table` into its CSR (both directions).
    fn flush_rels(&mut self, table: TableId) -> Result<()> {
        let Some(p) = self.local.pending_rels.remove(&table) else {
            return Ok(());
        };
        if p.src.is_empty() {
            return Ok(());
        }
        let entry = self.entry(table)?;
        let info = entry
            .rel_info()
            .ok_or_else(|| Error::internal("buffered rels of a node table"))?
            .clone();
        let mut data = self.rel_data(table)?;
        let types = column_types(&entry, &data.column_ids)?;
        self.merge_rels(&mut data, &info, &types, &p.src, &p.dst, &p.ids, &p.props)?;
        data.num_rels += p.src.len() as u64;
        data.count_changed_self_loops(info.src == info.dst, &p.src, &p.dst, true);
        self.tables.insert(table, Arc::new(TableData::Rel(data)));
        Ok(())
    }

    fn flush_table(&mut self, table: TableId) -> Result<()> {
        let Some(new_cols) = self.local.pending.remove(&table) else {
            return Ok(());
        };
        let n = new_cols.first().map_or(0, |c| c.len());
        if n == 0 {
            return Ok(());
        }
        let entry = self.entry(table)?;
        let pager = Arc::clone(self.pager());
        let mut data = self.node_data(table)?;
        let types = column_types(&entry, &data.column_ids)?;
        // Append: fill the last group (each column chunk re-encodes only
        // its tail, see `ColumnChunk::append`), then new groups.
        let mut taken = 0usize;
        if let Some(last) = data.groups.len().checked_sub(1) {
            let have = data.groups[last].num_rows;
            if have < NODE_GROUP_SIZE {
                let take = ((NODE_GROUP_SIZE - have) as usize).min(n);
                let mut chunks = Vec::with_capacity(new_cols.len());
                let mut retired = Vec::new();
                for ((chunk, nc), ty) in data.groups[last].columns.iter().zip(&new_cols).zip(&types)
                {
                    let a = chunk.append(&pager, ty, nc, 0, take)?;
                    self.local.track_runs(&a.written);
                    retired.extend(a.retired);
                    chunks.push(a.chunk);
                }
                if chunks.len() != new_cols.len() {
                    return Err(Error::internal("node group without every column"));
                }
                data.groups[last].columns = chunks;
                self.retire(&retired);
                data.groups[last].num_rows = have + take as u64;
                taken = take;
            }
        }
        while taken < n {
            let take = (NODE_GROUP_SIZE as usize).min(n - taken);
            let idx: Vec<u64> = (taken as u64..(taken + take) as u64).collect();
            let mut chunks = Vec::with_capacity(new_cols.len());
            for c in &new_cols {
                chunks.push(self.write_chunk(&c.gather(&idx))?);
            }
            data.groups.push(NodeGroupData {
                num_rows: take as u64,
                columns: chunks,
                deleted: None,
                free: None,
            });
            taken += take;
        }
        data.num_rows += n as u64;
        self.tables.insert(table, Arc::new(TableData::Node(data)));
        Ok(())
    }

    /// Folds PK deltas into rebuilt indexes: every table's when `force`, else
    /// those past [`pk_delta_limit`]. Called at commit; call with `force` at
    /// CHECKPOINT.
    pub fn merge_pk_deltas(&mut self, force: bool) -> Result<()> {
        // The rebuild reads the key column, where a reused row's key is a
        // buffered SET.
        self.flush_pending()?;
        let ids: Vec<TableId> = self.tables.keys().copied().collect();
        for id in ids {
            let Some(TableData::Node(data)) = self.tables.get(&id).map(|t| t.as_ref()) else {
                continue;
            };
            let indexed = data.pk_index.as_ref().map_or(0, |i| i.num_keys);
            let delta = data.pk_delta.len() as u64;
            if delta == 0 || (!force && delta <= pk_delta_limit(indexed)) {
                continue;
            }
            let mut data = data.clone();
            self.rebuild_pk_index(id, &mut data)?;
            self.tables.insert(id, Arc::new(TableData::Node(data)));
        }
        Ok(())
    }

    fn rebuild_pk_index(&mut self, table: TableId, data: &mut NodeTableData) -> Result<()> {
        let entry = self.entry(table)?;
        let pager = Arc::clone(self.pager());
        let types = column_types(&entry, &data.column_ids)?;
        let ty = types[data.pk_column].clone();
        let mut entries = Vec::with_capacity(data.num_rows as usize);
        for (g, group) in data.groups.iter().enumerate() {
            let rows = group.num_rows as usize;
            let mut v = ValueVector::new(ty.clone(), rows);
            data.pin_column(&pager, g, data.pk_column)?
                .read(0, rows, &mut v, 0)?;
            for r in 0..rows {
                let off = g as u64 * NODE_GROUP_SIZE + r as u64;
                if data.is_deleted(off) || v.is_null(r) {
                    continue;
                }
                let val = v.get_value(r);
                let k = IndexKey::of_value(&val, key_kind(&ty))
                    .ok_or_else(|| Error::internal(format!("unindexable key {val}")))?;
                entries.push((k, off));
            }
        }
        let idx = PkIndex::build(&pager, key_kind(&ty), entries.into_iter())?;
        self.local.fresh.insert(idx.slots.first, idx.slots.count);
        if let Some(old) = data.pk_index.replace(idx) {
            self.retire(&[old.slots]);
        }
        data.pk_delta = Default::default();
        Ok(())
    }

    /// Work done once before commit: oversized PK deltas are merged; when
    /// the commit will checkpoint, the data is compacted first
    /// ([`WriteTxn::compact`]).
    pub(crate) fn prepare_commit(&mut self) -> Result<()> {
        self.flush_pending()?;
        if self.checkpoint_due() {
            self.compact()?;
        }
        self.merge_pk_deltas(false)
    }

    /// Sets property `property` of node `offset` of node table `table`. The
    /// value is checked now and written at the next flush
    /// ([`WriteTxn::flush_pending`]), with the transaction's other SETs.
    pub fn update_node_property(
        &mut self,
        table: TableId,
        offset: u64,
        property: PropertyId,
        value: &Value,
    ) -> Result<()> {
        self.flush_inserts()?;
        let entry = self.entry(table)?;
        let data = self.node_data(table)?;
        if let Some(pk) = entry.primary_key().filter(|pk| pk.id == property) {
            return Err(write_error(format!(
                "cannot change the primary key '{}' of table '{}'",
                pk.name, entry.name
            )));
        }
        if offset >= data.num_rows || data.is_deleted(offset) {
            return Err(write_error(format!(
                "node {offset} of table '{}' does not exist",
                entry.name
            )));
        }
        let v = column_value(&entry, property, value)?;
        data.column_of(property)
            .ok_or_else(|| Error::internal("property without storage column"))?;
        self.local
            .node_sets
            .entry((table, property))
            .or_default()
            .insert(offset, v);
        Ok(())
    }

    /// Rel tables with an end in node table `table`: (rel table, direction
    /// whose bound node is in `table`).
    fn rel_tables_of(&self, table: TableId) -> Vec<(TableId, RelDirection)> {
        let mut out = Vec::new();
        for t in self.catalog.rel_tables() {
            if let Some(info) = t.rel_info() {
                if info.src == table {
                    out.push((t.id, RelDirection::Fwd));
                }
                if info.dst == table {
                    out.push((t.id, RelDirection::Bwd));
                }
            }
        }
        out
    }

    /// Every rel of `nodes` (offsets, by CSR group) in direction `dir` of rel
    /// table `data`, as (src, dst, rel id).
    fn rels_of_nodes(
        &self,
        data: &RelTableData,
        dir: RelDirection,
        nodes: &BTreeSet<u64>,
    ) -> Result<Vec<(u64, u64, u64)>> {
        let pager = self.pager();
        let csr = data.csr(dir);
        let mut out = Vec::new();
        let mut by_group: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for &o in nodes {
            by_group
                .entry((o / NODE_GROUP_SIZE) as usize)
                .or_default()
                .push(o);
        }
        for (g, offs) in by_group {
            let Some(group) = csr.groups.get(g) else {
                continue;
            };
            let pinned = group.pin(pager, &[])?;
            let (neighbors, rel_ids) = (pinned.neighbors()?, pinned.rel_ids()?);
            for o in offs {
                for pos in pinned.ranges(o % NODE_GROUP_SIZE).flat_map(|(s, e)| s..e) {
                    let nbr = neighbors.get_u64(pos);
                    let id = rel_ids.get_u64(pos);
                    out.push(match dir {
                        RelDirection::Fwd => (o, nbr, id),
                        RelDirection::Bwd => (nbr, o, id),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Deletes nodes of `table`. Without `detach` a node that still has rels is
    /// an error; with it, those rels are deleted too. Nodes already deleted are
    /// skipped. Returns how many nodes were deleted.
    pub fn delete_nodes(&mut self, table: TableId, offsets: &[u64], detach: bool) -> Result<u64> {
        self.flush_inserts()?;
        let entry = self.entry(table)?;
        let data = self.node_data(table)?;
        let mut nodes = BTreeSet::new();
        for &o in offsets {
            if o >= data.num_rows {
                return Err(write_error(format!(
                    "node {o} of table '{}' does not exist",
                    entry.name
                )));
            }
            if !data.is_deleted(o) {
                nodes.insert(o);
            }
        }
        if nodes.is_empty() {
            return Ok(0);
        }
        for (rel, dir) in self.rel_tables_of(table) {
            let rdata = self.rel_data(rel)?;
            let rels = self.rels_of_nodes(&rdata, dir, &nodes)?;
            if rels.is_empty() {
                continue;
            }
            if !detach {
                let (s, d, _) = rels[0];
                let node = if dir == RelDirection::Fwd { s } else { d };
                let rel_name = self.entry(rel)?.name;
                return Err(write_error(format!(
                    "cannot delete node {node} of table '{}' because it still has rels in '{rel_name}'; use DETACH DELETE",
                    entry.name
                )));
            }
            let ids: BTreeMap<u64, (u64, u64)> =
                rels.into_iter().map(|(s, d, id)| (id, (s, d))).collect();
            let list: Vec<(u64, u64, u64)> =
                ids.into_iter().map(|(id, (s, d))| (s, d, id)).collect();
            self.delete_rels(rel, &list)?;
        }
        // Re-read: deleting rels does not change node data, but be exact.
        let mut data = self.node_data(table)?;
        let pager = Arc::clone(self.pager());
        let types = column_types(&entry, &data.column_ids)?;
        let pk_ty = types[data.pk_column].clone();
        let kind = key_kind(&pk_ty);
        let pk_property = data.column_ids[data.pk_column];
        for &o in &nodes {
            if !data.pk_delta.is_empty() {
                // A reused row's key is still a buffered SET.
                let buffered = self
                    .local
                    .node_sets
                    .get(&(table, pk_property))
                    .and_then(|sets| sets.get(&o));
                let key = match buffered {
                    Some(v) => v.clone(),
                    None => read_node_value(&pager, &data, data.pk_column, &pk_ty, o)?,
                };
                if let Some(k) = PkKey::of_value(&key, kind) {
                    if data.pk_delta.get(&k) == Some(o) {
                        data.pk_delta.remove(&k);
                    }
                }
            }
            let g = &mut data.groups[(o / NODE_GROUP_SIZE) as usize];
            g.deleted
                .get_or_insert_with(DeletedMask::default)
                .insert(o % NODE_GROUP_SIZE);
        }
        self.tables.insert(table, Arc::new(TableData::Node(data)));
        Ok(nodes.len() as u64)
    }

    /// Inserts rels `src[i] -> dst[i]` (node offsets) into rel table `table`;
    /// `props` is empty (all properties NULL) or one row per rel with one value
    /// per catalog property. Returns the new rel ids.
    pub fn insert_rels(
        &mut self,
        table: TableId,
        src: &[u64],
        dst: &[u64],
        props: &[Vec<Value>],
    ) -> Result<Vec<u64>> {
        // The endpoints may be nodes inserted earlier in this transaction.
        self.flush_node_inserts()?;
        let entry = self.entry(table)?;
        let info = entry
            .rel_info()
            .ok_or_else(|| {
                write_error(format!("'{}' is a node table, not a rel table", entry.name))
            })?
            .clone();
        let many_to_many = info.multiplicity.src_many && info.multiplicity.dst_many;
        if !many_to_many {
            // The multiplicity check below reads the CSR.
            self.flush_rels(table)?;
        }
        let n = src.len();
        if dst.len() != n || !(props.is_empty() || props.len() == n) {
            return Err(Error::internal("insert_rels: argument lengths differ"));
        }
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut data = self.rel_data(table)?;
        let types = column_types(&entry, &data.column_ids)?;
        for (side, offs, node_table) in [("source", src, info.src), ("destination", dst, info.dst)]
        {
            let nd = self.node_data(node_table)?;
            let name = self.entry(node_table)?.name;
            for &o in offs {
                if o >= nd.num_rows || nd.is_deleted(o) {
                    return Err(write_error(format!(
                        "cannot create a rel in '{}': its {side} node {o} does not exist in table '{name}'",
                        entry.name
                    )));
                }
            }
        }
        let mut new_props = coerce_rows(&entry, props, &types, |p| data.column_of(p), "rel table")?;
        if props.is_empty() {
            // No property values given: every property is NULL.
            for p in &mut new_props {
                p.resize(n);
                for r in 0..n {
                    p.set_null(r, true);
                }
            }
        }
        // Multiplicity: a ONE side allows one rel per bound node.
        for (many, bound, dir, side) in [
            (info.multiplicity.dst_many, src, RelDirection::Fwd, "source"),
            (
                info.multiplicity.src_many,
                dst,
                RelDirection::Bwd,
                "destination",
            ),
        ] {
            if many {
                continue;
            }
            let mut seen = HashSet::with_capacity(n);
            for &o in bound {
                let existing = self.rels_of_nodes(&data, dir, &BTreeSet::from([o]))?;
                if !seen.insert(o) || !existing.is_empty() {
                    return Err(write_error(format!(
                        "table '{}' is {} but {side} node {o} would have more than one rel",
                        entry.name,
                        info.multiplicity.name()
                    )));
                }
            }
        }
        let first_id = data.next_rel_id;
        let ids: Vec<u64> = (first_id..first_id + n as u64).collect();
        data.next_rel_id += n as u64;
        if many_to_many {
            let p = self.local.pending_rels.entry(table).or_default();
            if p.props.len() != new_props.len() {
                if !p.src.is_empty() {
                    return Err(Error::internal("buffered rels with another column set"));
                }
                p.props = new_props
                    .iter()
                    .map(|v| ValueVector::new(v.ty.clone(), 0))
                    .collect();
            }
            p.src.extend_from_slice(src);
            p.dst.extend_from_slice(dst);
            p.ids.extend_from_slice(&ids);
            for (buf, v) in p.props.iter_mut().zip(&new_props) {
                buf.append(v);
            }
            self.tables.insert(table, Arc::new(TableData::Rel(data)));
            return Ok(ids);
        }
        self.merge_rels(&mut data, &info, &types, src, dst, &ids, &new_props)?;
        data.num_rels += n as u64;
        data.count_changed_self_loops(info.src == info.dst, src, dst, true);
        self.tables.insert(table, Arc::new(TableData::Rel(data)));
        Ok(ids)
    }

    /// Adds rels `ids` (`src[i]` -> `dst[i]`, properties `new_props`, one
    /// vector per storage column) to both CSR directions of `data`,
    /// rewriting each CSR group they touch once.
    #[allow(clippy::too_many_arguments)]
    fn merge_rels(
        &mut self,
        data: &mut RelTableData,
        info: &kith_catalog::RelTableInfo,
        types: &[LogicalType],
        src: &[u64],
        dst: &[u64],
        ids: &[u64],
        new_props: &[ValueVector],
    ) -> Result<()> {
        let n = src.len();
        for dir in [RelDirection::Fwd, RelDirection::Bwd] {
            let (bound, other, node_table) = match dir {
                RelDirection::Fwd => (src, dst, info.src),
                RelDirection::Bwd => (dst, src, info.dst),
            };
            let nd = self.node_data(node_table)?;
            let mut by_group: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for (i, &o) in bound.iter().enumerate() {
                by_group
                    .entry((o / NODE_GROUP_SIZE) as usize)
                    .or_default()
                    .push(i);
            }
            let mut csr = std::mem::take(data.csr_mut(dir));
            for (g, rows) in by_group {
                if let Some(group) = csr.groups.get(g) {
                    let room = group.num_appended() + group.num_deleted() + rows.len() as u64
                        <= APPENDED_MAX;
                    if room && group.properties.len() == new_props.len() {
                        let rels = NewRels {
                            rows: &rows,
                            bound,
                            other,
                            ids,
                            props: new_props,
                        };
                        csr.groups[g] = self.append_to_csr(group, &rels, types)?;
                        continue;
                    }
                }
                let old = self.load_csr(&csr, g, types)?;
                let num_nodes = (nd.groups[g].num_rows as usize).max(old.num_nodes());
                let mut per_node: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
                for i in rows {
                    per_node
                        .entry((bound[i] % NODE_GROUP_SIZE) as usize)
                        .or_default()
                        .push(i);
                }
                let old_n = old.nbrs.len();
                let mut buf = CsrBuf::empty(types);
                buf.offsets = Vec::with_capacity(num_nodes + 1);
                buf.offsets.push(0);
                let mut order: Vec<u64> = Vec::with_capacity(old_n + n);
                for local in 0..num_nodes {
                    for pos in old.range(local) {
                        buf.nbrs.push(old.nbrs[pos]);
                        buf.ids.push(old.ids[pos]);
                        order.push(pos as u64);
                    }
                    if let Some(news) = per_node.get(&local) {
                        for &i in news {
                            buf.nbrs.push(other[i]);
                            buf.ids.push(ids[i]);
                            order.push((old_n + i) as u64);
                        }
                    }
                    buf.offsets.push(buf.nbrs.len() as u64);
                }
                buf.props = old
                    .props
                    .into_iter()
                    .zip(new_props)
                    .map(|(mut o, nw)| {
                        o.append(nw);
                        o.gather(&order)
                    })
                    .collect();
                self.store_csr(&mut csr, g, &buf)?;
            }
            *data.csr_mut(dir) = csr;
        }
        Ok(())
    }

    /// `group` with `rels` appended after its rels (see the `rel_table`
    /// module): each column re-encodes only its tail.
    fn append_to_csr(
        &mut self,
        group: &CsrGroup,
        rels: &NewRels<'_>,
        types: &[LogicalType],
    ) -> Result<CsrGroup> {
        let pager = Arc::clone(self.pager());
        let rows: Vec<u64> = rels.rows.iter().map(|&i| i as u64).collect();
        let pick = |values: &[u64]| -> ValueVector {
            u64_vector(&rels.rows.iter().map(|&i| values[i]).collect::<Vec<_>>())
        };
        let locals: Vec<u64> = rels
            .rows
            .iter()
            .map(|&i| rels.bound[i] % NODE_GROUP_SIZE)
            .collect();
        let mut written = Vec::new();
        let mut retired = Vec::new();
        let mut append = |chunk: &ColumnChunk, ty: &LogicalType, v: &ValueVector| {
            chunk.append(&pager, ty, v, 0, v.len()).map(|a| {
                written.extend(a.written);
                retired.extend(a.retired);
                a.chunk
            })
        };
        let mut out = group.clone();
        out.neighbors = append(&group.neighbors, &LogicalType::UInt64, &pick(rels.other))?;
        out.rel_ids = append(&group.rel_ids, &LogicalType::UInt64, &pick(rels.ids))?;
        for (c, ty) in types.iter().enumerate() {
            out.properties[c] = append(&group.properties[c], ty, &rels.props[c].gather(&rows))?;
        }
        let locals = u64_vector(&locals);
        out.appended = Some(match &group.appended {
            Some(a) => append(a, &LogicalType::UInt64, &locals)?,
            None => {
                let c = ColumnChunk::write(&pager, &locals, 0, locals.len())?;
                c.pages(&mut written);
                c
            }
        });
        out.num_rels += rows.len() as u64;
        self.local.track_runs(&written);
        self.retire(&retired);
        Ok(out)
    }

    /// What a checkpoint does to the data first: CSR regions with appended
    /// or deleted rels are written whole ([`WriteTxn::fold_rel_changes`]),
    /// the values of deleted nodes are cleared
    /// ([`WriteTxn::clear_deleted_rows`]) and the remaining column patches
    /// folded in ([`WriteTxn::fold_patches`]). Returns whether anything
    /// changed.
    pub fn compact(&mut self) -> Result<bool> {
        let folded = self.fold_rel_changes()?;
        let cleared = self.clear_deleted_rows()?;
        let patched = self.fold_patches()?;
        Ok(folded || cleared || patched)
    }

    /// Writes every column chunk that has a patch (node columns and rel
    /// properties) as one part with its updates in. Returns whether there
    /// were any.
    pub fn fold_patches(&mut self) -> Result<bool> {
        self.flush_pending()?;
        let pager = Arc::clone(self.pager());
        let mut any = false;
        let tables: Vec<TableId> = self.tables.keys().copied().collect();
        for table in tables {
            let Some(data) = self.tables.get(&table).map(|t| &**t) else {
                continue;
            };
            let patched = match data {
                TableData::Node(n) => n
                    .groups
                    .iter()
                    .flat_map(|g| &g.columns)
                    .any(|c| c.patch.is_some()),
                TableData::Rel(r) => r
                    .fwd
                    .groups
                    .iter()
                    .chain(&r.bwd.groups)
                    .flat_map(|g| &g.properties)
                    .any(|c| c.patch.is_some()),
            };
            if !patched {
                continue;
            }
            let mut data = data.clone();
            let types = match &data {
                TableData::Node(n) => column_types(&self.entry(table)?, &n.column_ids)?,
                TableData::Rel(r) => column_types(&self.entry(table)?, &r.column_ids)?,
            };
            let chunks: Vec<(&mut ColumnChunk, &LogicalType)> = match &mut data {
                TableData::Node(n) => n
                    .groups
                    .iter_mut()
                    .flat_map(|g| g.columns.iter_mut().zip(&types))
                    .collect(),
                TableData::Rel(r) => r
                    .fwd
                    .groups
                    .iter_mut()
                    .chain(r.bwd.groups.iter_mut())
                    .flat_map(|g| g.properties.iter_mut().zip(&types))
                    .collect(),
            };
            let mut changed = false;
            for (chunk, ty) in chunks {
                if let Some(a) = chunk.fold_patch(&pager, ty)? {
                    self.local.track_runs(&a.written);
                    self.local.retire(&pager, &a.retired);
                    *chunk = a.chunk;
                    changed = true;
                }
            }
            if changed {
                any = true;
                self.tables.insert(table, Arc::new(data));
            }
        }
        Ok(any)
    }

    /// Frees the offsets of deleted nodes for reuse: in every node group
    /// with rows deleted since its last clearing, their column values, the
    /// primary key included, are set to NULL (so their strings, lists and
    /// variant values stop taking pages; a group whose rows are all deleted
    /// keeps nothing but NULL bitmaps), they join the group's `free` rows,
    /// and the table's PK index is rebuilt without them, so no stale entry
    /// can point at a reused offset. Runs after
    /// [`WriteTxn::fold_rel_changes`], which removes the tombstones of their
    /// rels, the last references to them. Returns whether any group was
    /// cleared.
    fn clear_deleted_rows(&mut self) -> Result<bool> {
        self.flush_pending()?;
        let pager = Arc::clone(self.pager());
        let mut any = false;
        let tables: Vec<TableId> = self.tables.keys().copied().collect();
        for table in tables {
            let Some(TableData::Node(data)) = self.tables.get(&table).map(|t| &**t) else {
                continue;
            };
            if !data.groups.iter().any(|g| g.uncleared() > 0) {
                continue;
            }
            let mut data = data.clone();
            let types = column_types(&self.entry(table)?, &data.column_ids)?;
            for g in 0..data.groups.len() {
                if data.groups[g].uncleared() == 0 {
                    continue;
                }
                let rows = data.groups[g].num_rows as usize;
                let mut retired = Vec::new();
                for (c, ty) in types.iter().enumerate() {
                    let mut v = ValueVector::new(ty.clone(), rows);
                    data.pin_column(&pager, g, c)?.read(0, rows, &mut v, 0)?;
                    let group = &data.groups[g];
                    let mut changed = false;
                    for r in 0..rows {
                        let deleted = group.deleted.as_ref().is_some_and(|m| m.contains(r as u64));
                        if deleted && !v.is_null(r) {
                            v.set_null(r, true);
                            changed = true;
                        }
                    }
                    if changed {
                        let chunk = self.write_chunk(&v)?;
                        let old = std::mem::replace(&mut data.groups[g].columns[c], chunk);
                        old.pages(&mut retired);
                    }
                }
                self.retire(&retired);
                let group = &mut data.groups[g];
                group.free = group.deleted.clone();
            }
            self.rebuild_pk_index(table, &mut data)?;
            any = true;
            self.tables.insert(table, Arc::new(TableData::Node(data)));
        }
        Ok(any)
    }

    /// Writes every CSR region with appended or deleted rels whole again
    /// (appended rels sorted in, deleted ones left out), so a checkpoint
    /// leaves plain regions. Returns whether there were any.
    pub fn fold_rel_changes(&mut self) -> Result<bool> {
        self.flush_pending()?;
        let mut folded = false;
        let tables: Vec<TableId> = self.tables.keys().copied().collect();
        for table in tables {
            let Some(TableData::Rel(data)) = self.tables.get(&table).map(|t| &**t) else {
                continue;
            };
            let has = |csr: &CsrIndex| csr.groups.iter().any(|g| g.has_changes());
            if !has(&data.fwd) && !has(&data.bwd) {
                continue;
            }
            folded = true;
            let mut data = data.clone();
            let types = column_types(&self.entry(table)?, &data.column_ids)?;
            for dir in [RelDirection::Fwd, RelDirection::Bwd] {
                let mut csr = std::mem::take(data.csr_mut(dir));
                for g in 0..csr.groups.len() {
                    if csr.groups[g].has_changes() {
                        let buf = self.load_csr(&csr, g, &types)?;
                        self.store_csr(&mut csr, g, &buf)?;
                    }
                }
                *data.csr_mut(dir) = csr;
            }
            self.tables.insert(table, Arc::new(TableData::Rel(data)));
        }
        Ok(folded)
    }

    fn load_csr(&self, csr: &CsrIndex, g: usize, types: &[LogicalType]) -> Result<CsrBuf> {
        match csr.groups.get(g) {
            Some(group) => CsrBuf::read(self.pager(), group, types),
            None => Ok(CsrBuf::empty(types)),
        }
    }

    /// Writes `buf` as CSR group `g` (adding empty groups before it as needed).
    fn store_csr(&mut self, csr: &mut CsrIndex, g: usize, buf: &CsrBuf) -> Result<()> {
        while csr.groups.len() < g {
            let empty = CsrBuf::empty(&[]);
            let mut group = self.write_csr(&empty)?;
            group.properties = Vec::new();
            // Empty groups still need one (empty) chunk per property.
            for p in &buf.props {
                group
                    .properties
                    .push(self.write_chunk(&ValueVector::new(p.ty.clone(), 0))?);
            }
            csr.groups.push(group);
        }
        let group = self.write_csr(buf)?;
        if g == csr.groups.len() {
            csr.groups.push(group);
        } else {
            let old = std::mem::replace(&mut csr.groups[g], group);
            self.retire(&csr_pages(&old));
        }
        Ok(())
    }

    /// Deletes rels `(src, dst, rel id)` of rel table `table` from both CSR
    /// directions. Every rel must exist. Returns how many were deleted. A
    /// region losing a few rels gets tombstones (see the `rel_table`
    /// module); one losing more than its change index holds is written whole
    /// without them.
    pub fn delete_rels(&mut self, table: TableId, rels: &[(u64, u64, u64)]) -> Result<u64> {
        self.flush_inserts()?;
        let entry = self.entry(table)?;
        let mut data = self.rel_data(table)?;
        let types = column_types(&entry, &data.column_ids)?;
        let mut uniq: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for &(s, d, id) in rels {
            uniq.insert(id, (s, d));
        }
        if uniq.is_empty() {
            return Ok(0);
        }
        let list: Vec<(u64, u64, u64)> = uniq.iter().map(|(&id, &(s, d))| (s, d, id)).collect();
        let pager = Arc::clone(self.pager());
        for dir in [RelDirection::Fwd, RelDirection::Bwd] {
            let found = locate_rels(&pager, data.csr(dir), dir, &list)?;
            let removed: usize = found.values().map(|h| h.len()).sum();
            if removed != uniq.len() {
                return Err(write_error(format!(
                    "cannot delete {} rels of '{}': only {removed} of them exist",
                    uniq.len(),
                    entry.name
                )));
            }
            let mut csr = std::mem::take(data.csr_mut(dir));
            for (g, hits) in found {
                let group = &csr.groups[g];
                if group.num_appended() + group.num_deleted() + hits.len() as u64 <= APPENDED_MAX {
                    let pairs: Vec<u64> = hits
                        .iter()
                        .flat_map(|&(pos, id)| {
                            let (s, d) = uniq[&id];
                            let bound = if dir == RelDirection::Fwd { s } else { d };
                            [bound % NODE_GROUP_SIZE, pos]
                        })
                        .collect();
                    let pairs = u64_vector(&pairs);
                    let chunk = match &group.deleted {
                        Some(c) => {
                            let a =
                                c.append(&pager, &LogicalType::UInt64, &pairs, 0, pairs.len())?;
                            self.local.track_runs(&a.written);
                            self.retire(&a.retired);
                            a.chunk
                        }
                        None => self.write_chunk(&pairs)?,
                    };
                    csr.groups[g].deleted = Some(chunk);
                    continue;
                }
                let old = self.load_csr(&csr, g, &types)?;
                let mut buf = CsrBuf::empty(&types);
                buf.offsets = Vec::with_capacity(old.offsets.len());
                buf.offsets.push(0);
                let mut keep = Vec::with_capacity(old.nbrs.len());
                // `old` is in node order: its positions are not the stored ones.
                let ids: HashSet<u64> = hits.iter().map(|h| h.1).collect();
                for local in 0..old.num_nodes() {
                    for pos in old.range(local) {
                        if ids.contains(&old.ids[pos]) {
                            continue;
                        }
                        buf.nbrs.push(old.nbrs[pos]);
                        buf.ids.push(old.ids[pos]);
                        keep.push(pos as u64);
                    }
                    buf.offsets.push(buf.nbrs.len() as u64);
                }
                buf.props = old.props.iter().map(|p| p.gather(&keep)).collect();
                self.store_csr(&mut csr, g, &buf)?;
            }
            *data.csr_mut(dir) = csr;
        }
        data.num_rels -= uniq.len() as u64;
        let (src, dst): (Vec<u64>, Vec<u64>) = uniq.values().copied().unzip();
        let same_table = entry.rel_info().is_some_and(|i| i.src == i.dst);
        data.count_changed_self_loops(same_table, &src, &dst, false);
        self.local
            .deleted_rels
            .entry(table)
            .or_default()
            .extend(uniq.keys().copied());
        self.tables.insert(table, Arc::new(TableData::Rel(data)));
        Ok(uniq.len() as u64)
    }

    /// Sets property `property` of rel `rel_id` (from node `src` to node
    /// `dst`) of rel table `table`, in both directions' parallel columns. The
    /// rel must exist (be one the caller matched in this transaction); one
    /// this transaction deleted is an error. The value is checked now and
    /// written at the next flush, with the transaction's other SETs.
    pub fn update_rel_property(
        &mut self,
        table: TableId,
        src: u64,
        dst: u64,
        rel_id: u64,
        property: PropertyId,
        value: &Value,
    ) -> Result<()> {
        self.flush_inserts()?;
        let entry = self.entry(table)?;
        let data = self.rel_data(table)?;
        let v = column_value(&entry, property, value)?;
        if self.rel_deleted(table, rel_id) || rel_id >= data.next_rel_id {
            return Err(write_error(format!(
                "rel {rel_id} ({src} -> {dst}) of table '{}' does not exist",
                entry.name
            )));
        }
        data.column_of(property)
            .ok_or_else(|| Error::internal("rel property without storage column"))?;
        self.local
            .rel_sets
            .entry((table, property))
            .or_default()
            .insert(rel_id, (src, dst, v));
        Ok(())
    }

    /// After a COPY renumbered the rels of `table`.
    pub(crate) fn forget_deleted_rels(&mut self, table: TableId) {
        self.local.deleted_rels.remove(&table);
    }

    /// Whether node `offset` of `table` is deleted as this transaction sees
    /// it (false for a table without node storage).
    pub fn node_deleted(&self, table: TableId, offset: u64) -> bool {
        matches!(
            self.tables.get(&table).map(|t| t.as_ref()),
            Some(TableData::Node(n)) if n.is_deleted(offset)
        )
    }

    /// Whether this transaction deleted rel `rel_id` of `table`.
    pub fn rel_deleted(&self, table: TableId, rel_id: u64) -> bool {
        self.local
            .deleted_rels
            .get(&table)
            .is_some_and(|d| d.contains(&rel_id))
    }

    /// Whether rel `rel_id` of rel table `table` leaves node `src`, as this
    /// transaction sees it (false once deleted): orients a rel matched
    /// without a direction. Cost: a scan of `src`'s forward CSR range.
    pub fn rel_leaves(&mut self, table: TableId, src: u64, rel_id: u64) -> Result<bool> {
        self.flush_inserts()?;
        let data = self.rel_data(table)?;
        let pager = Arc::clone(self.pager());
        let Some(group) = data.fwd.groups.get((src / NODE_GROUP_SIZE) as usize) else {
            return Ok(false);
        };
        let pinned = group.pin(&pager, &[])?;
        let rel_ids = pinned.rel_ids()?;
        let found = pinned
            .ranges(src % NODE_GROUP_SIZE)
            .flat_map(|(s, e)| s..e)
            .any(|p| rel_ids.get_u64(p) == rel_id);
        Ok(found)
    }
}
