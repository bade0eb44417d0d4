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

mod compact;
mod flush;
mod nodes;
mod read;
mod rels;
mod schema;
use rels::*;

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
}
