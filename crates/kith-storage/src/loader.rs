//! Bulk loading (COPY FROM): turns parsed input chunks into node groups, CSR
//! regions and a primary-key index inside a write transaction.
//!
//! Parsing happens above (kith-exec drives kith-io readers on the scheduler);
//! this module receives the chunks in input order and does the validation that
//! needs the whole input (primary-key uniqueness, endpoint resolution,
//! multiplicity), then writes column chunks group by group in parallel. Nothing
//! is published until the transaction commits, so a failed load leaves the
//! database exactly as it was.

use std::collections::HashMap;
use std::sync::Arc;

use kith_catalog::{RelTableInfo, TableEntry};
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{Chunk, Error, LogicalType, Result, StringData, Value, ValueVector, VectorData};
use kith_pager::Pager;
use kith_sched::{CancelToken, Scheduler};

use crate::column::ColumnChunk;
use crate::node_table::{NodeGroupData, NodeTableData};
use crate::pk_index::{IndexKey, KeyKind, PkIndex};
use crate::rel_table::{count_self_loops, CsrGroup, CsrIndex, RelTableData, DELETED_POSITION};
use crate::storage::WriteTxn;
use crate::version::TableData;

/// One parsed piece of input, with where each row came from (for errors).
pub struct LoadChunk {
    pub chunk: Chunk,
    /// 1-based source line of each row.
    pub lines: Vec<u64>,
    /// File name shown in errors.
    pub source: Arc<str>,
}

/// Where row `row` of the concatenated input came from.
struct RowOrigins {
    /// (first row, source, lines) per input chunk.
    chunks: Vec<(u64, Arc<str>, Vec<u64>)>,
}

impl RowOrigins {
    fn describe(&self, row: u64) -> String {
        let idx = self
            .chunks
            .partition_point(|(first, _, _)| *first <= row)
            .saturating_sub(1);
        match self.chunks.get(idx) {
            Some((first, source, lines)) => match lines.get((row - first) as usize) {
                Some(line) => format!("{source}:{line}"),
                None => format!("{source}"),
            },
            None => format!("row {}", row + 1),
        }
    }
}

/// Concatenates the input chunks column by column.
fn concat(input: Vec<LoadChunk>, types: &[LogicalType]) -> Result<(Vec<ValueVector>, RowOrigins)> {
    let mut columns: Vec<ValueVector> = types
        .iter()
        .map(|t| ValueVector::new(t.clone(), 0))
        .collect();
    let mut origins = RowOrigins { chunks: Vec::new() };
    let mut row = 0u64;
    for piece in input {
        if piece.chunk.columns.len() != columns.len() {
            return Err(Error::internal(format!(
                "load chunk has {} columns, expected {}",
                piece.chunk.columns.len(),
                columns.len()
            )));
        }
        for (dst, src) in columns.iter_mut().zip(&piece.chunk.columns) {
            dst.append(src);
        }
        origins.chunks.push((row, piece.source, piece.lines));
        row += piece.chunk.num_rows as u64;
    }
    Ok((columns, origins))
}

fn parallel_map<T: Send + 'static>(
    sched: &Scheduler,
    threads: usize,
    cancel: &CancelToken,
    n: usize,
    f: impl Fn(usize) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    sched.parallel_map(threads, cancel, n, f)
}

/// Settings for one bulk load.
pub struct LoadContext<'s> {
    pub sched: &'s Scheduler,
    pub threads: usize,
    pub cancel: &'s CancelToken,
}

fn key_kind(ty: &LogicalType) -> KeyKind {
    if *ty == LogicalType::String {
        KeyKind::StrHash
    } else {
        KeyKind::Int
    }
}

/// The index key of slot `pos` of a primary-key column (not null).
fn slot_key(col: &ValueVector, pos: usize) -> IndexKey {
    match &col.data {
        VectorData::Str(s) => IndexKey::of_str(s.get(pos)),
        VectorData::I8(v) => IndexKey(v[pos] as i64 as u64),
        VectorData::I16(v) => IndexKey(v[pos] as i64 as u64),
        VectorData::I32(v) => IndexKey(v[pos] as i64 as u64),
        VectorData::I64(v) => IndexKey(v[pos] as u64),
        VectorData::U8(v) => IndexKey(v[pos] as u64),
        VectorData::U16(v) => IndexKey(v[pos] as u64),
        VectorData::U32(v) => IndexKey(v[pos] as u64),
        VectorData::U64(v) => IndexKey(v[pos]),
        _ => IndexKey(0),
    }
}

/// Reads every row of `columns` of an existing node table from `first_row` on.
fn read_node_rows(
    pager: &Arc<Pager>,
    data: &NodeTableData,
    types: &[LogicalType],
    first_row: u64,
) -> Result<Vec<ValueVector>> {
    let mut out: Vec<ValueVector> = types
        .iter()
        .map(|t| ValueVector::new(t.clone(), 0))
        .collect();
    for (gidx, group) in data.groups.iter().enumerate() {
        let group_start = gidx as u64 * NODE_GROUP_SIZE;
        if group_start + group.num_rows <= first_row {
            continue;
        }
        let from = first_row.saturating_sub(group_start);
        let count = (group.num_rows - from) as usize;
        for (cidx, col) in out.iter_mut().enumerate() {
            let mut tmp = ValueVector::new(types[cidx].clone(), count);
            data.pin_column(pager, gidx, cidx)?
                .read(from, count, &mut tmp, 0)?;
            col.append(&tmp);
        }
    }
    Ok(out)
}

/// Appends `input` (columns in catalog property order) to node table `table`.
pub fn load_nodes(
    txn: &mut WriteTxn<'_>,
    ctx: &LoadContext<'_>,
    table: &TableEntry,
    input: Vec<LoadChunk>,
) -> Result<u64> {
    // Rows buffered by `WriteTxn::insert_nodes` first.
    txn.flush_pending()?;
    let types: Vec<LogicalType> = table.properties.iter().map(|p| p.ty.clone()).collect();
    let pk_col = match &table.kind {
        kith_catalog::TableKind::Node(info) => info.primary_key,
        _ => return Err(Error::internal("load_nodes on a rel table")),
    };
    let pager = Arc::clone(txn.pager());
    let existing = match txn.tables.get(&table.id).map(|t| t.as_ref()) {
        Some(TableData::Node(n)) => n.clone(),
        _ => NodeTableData::empty(table.properties.iter().map(|p| p.id).collect(), pk_col),
    };
    let (new_cols, origins) = concat(input, &types)?;
    let new_rows = new_cols.first().map_or(0, |c| c.len()) as u64;
    if new_rows == 0 {
        return Ok(0);
    }
    let total_rows = existing.num_rows + new_rows;
    if total_rows > kith_common::ids::MAX_TABLE_ROWS {
        return Err(Error::copy(format!(
            "table '{}' would exceed {} rows",
            table.name,
            kith_common::ids::MAX_TABLE_ROWS
        )));
    }

    // Primary keys: no NULLs, no duplicates (against existing rows too).
    let existing_keys = read_node_rows(&pager, &existing, std::slice::from_ref(&types[pk_col]), 0)?;
    let check = PkCheck {
        table,
        pk_name: &table.properties[pk_col].name,
        existing: &existing,
        origins: &origins,
    };
    let entries = check.index_entries(&existing_keys[0], &new_cols[pk_col], total_rows)?;

    let groups = write_node_groups(ctx, &pager, &existing, &types, &new_cols, total_rows)?;
    let pk_index = PkIndex::build(&pager, key_kind(&types[pk_col]), entries.into_iter())?;
    txn.tables.insert(
        table.id,
        Arc::new(TableData::Node(NodeTableData {
            num_rows: total_rows,
            column_ids: table.properties.iter().map(|p| p.id).collect(),
            pk_column: pk_col,
            groups,
            pk_index: Some(pk_index),
            pk_delta: Default::default(),
        })),
    );
    Ok(new_rows)
}

/// Primary-key validation of a node load: what the checks and their error
/// messages need to know about the table and the input.
struct PkCheck<'a> {
    table: &'a TableEntry,
    pk_name: &'a str,
    existing: &'a NodeTableData,
    origins: &'a RowOrigins,
}

impl PkCheck<'_> {
    /// The primary-key index entries of the live existing rows and the new
    /// rows; fails on a NULL or duplicate key among them.
    fn index_entries(
        &self,
        pk_old: &ValueVector,
        pk_new: &ValueVector,
        total_rows: u64,
    ) -> Result<Vec<(IndexKey, u64)>> {
        let mut entries: Vec<(IndexKey, u64)> = Vec::with_capacity(total_rows as usize);
        match (&pk_old.data, &pk_new.data) {
            (VectorData::Str(old), VectorData::Str(new)) => {
                self.string_entries(old, new, pk_new, total_rows, &mut entries)?
            }
            _ => self.scalar_entries(pk_old, pk_new, total_rows, &mut entries)?,
        }
        Ok(entries)
    }

    /// [`Self::index_entries`] for string keys, compared by value.
    fn string_entries(
        &self,
        old: &StringData,
        new: &StringData,
        pk_new: &ValueVector,
        total_rows: u64,
        entries: &mut Vec<(IndexKey, u64)>,
    ) -> Result<()> {
        let existing = self.existing;
        let mut seen: HashMap<&str, u64> = HashMap::with_capacity(total_rows as usize);
        for pos in 0..old.len() {
            if existing.is_deleted(pos as u64) {
                continue;
            }
            seen.insert(old.get(pos), pos as u64);
            entries.push((IndexKey::of_str(old.get(pos)), pos as u64));
        }
        for pos in 0..new.len() {
            if pk_new.is_null(pos) {
                return Err(self.null_error(pos));
            }
            let offset = existing.num_rows + pos as u64;
            if let Some(prev) = seen.insert(new.get(pos), offset) {
                return Err(duplicate_error(
                    self.table,
                    self.pk_name,
                    &Value::String(new.get(pos).to_string()),
                    self.origins,
                    pos as u64,
                    prev,
                    existing.num_rows,
                ));
            }
            entries.push((IndexKey::of_str(new.get(pos)), offset));
        }
        Ok(())
    }

    /// [`Self::index_entries`] for integer keys, compared by their index key.
    fn scalar_entries(
        &self,
        pk_old: &ValueVector,
        pk_new: &ValueVector,
        total_rows: u64,
        entries: &mut Vec<(IndexKey, u64)>,
    ) -> Result<()> {
        let existing = self.existing;
        let mut seen: HashMap<u64, u64> = HashMap::with_capacity(total_rows as usize);
        for pos in 0..pk_old.len() {
            if existing.is_deleted(pos as u64) {
                continue;
            }
            let k = slot_key(pk_old, pos);
            seen.insert(k.0, pos as u64);
            entries.push((k, pos as u64));
        }
        for pos in 0..pk_new.len() {
            if pk_new.is_null(pos) {
                return Err(self.null_error(pos));
            }
            let offset = existing.num_rows + pos as u64;
            let k = slot_key(pk_new, pos);
            if let Some(prev) = seen.insert(k.0, offset) {
                return Err(duplicate_error(
                    self.table,
                    self.pk_name,
                    &pk_new.get_value(pos),
                    self.origins,
                    pos as u64,
                    prev,
                    existing.num_rows,
                ));
            }
            entries.push((k, offset));
        }
        Ok(())
    }

    /// The error for a NULL primary key at new row `pos`.
    fn null_error(&self, pos: usize) -> Error {
        Error::copy(format!(
            "{}: the primary key '{}' is NULL",
            self.origins.describe(pos as u64),
            self.pk_name
        ))
    }
}

/// Writes the node groups of the table after the load: the existing full
/// groups are kept, the last partial group is rewritten together with the new
/// rows.
fn write_node_groups(
    ctx: &LoadContext<'_>,
    pager: &Arc<Pager>,
    existing: &NodeTableData,
    types: &[LogicalType],
    new_cols: &[ValueVector],
    total_rows: u64,
) -> Result<Vec<NodeGroupData>> {
    // Rewrite the last partial group together with the new rows.
    let full_groups = existing.num_rows / NODE_GROUP_SIZE;
    let rewrite_from = full_groups * NODE_GROUP_SIZE;
    let mut columns = read_node_rows(pager, existing, types, rewrite_from)?;
    for (dst, src) in columns.iter_mut().zip(new_cols) {
        dst.append(src);
    }
    let rows_to_write = total_rows - rewrite_from;
    let num_new_groups = rows_to_write.div_ceil(NODE_GROUP_SIZE) as usize;
    let columns = Arc::new(columns);
    let write_pager = Arc::clone(pager);
    let cols = Arc::clone(&columns);
    let new_groups = parallel_map(
        ctx.sched,
        ctx.threads,
        ctx.cancel,
        num_new_groups,
        move |g| {
            let start = g as u64 * NODE_GROUP_SIZE;
            let count = NODE_GROUP_SIZE.min(rows_to_write - start) as usize;
            let chunks = cols
                .iter()
                .map(|c| ColumnChunk::write(&write_pager, c, start as usize, count))
                .collect::<Result<Vec<_>>>()?;
            Ok(NodeGroupData {
                num_rows: count as u64,
                columns: chunks,
                deleted: None,
                free: None,
            })
        },
    )?;
    let mut groups: Vec<NodeGroupData> = existing.groups[..full_groups as usize].to_vec();
    groups.extend(new_groups);
    // The rewritten partial group keeps its deleted (and free) rows.
    if let (Some(old), Some(new)) = (
        existing.groups.get(full_groups as usize),
        groups.get_mut(full_groups as usize),
    ) {
        new.deleted = old.deleted.clone();
        new.free = old.free.clone();
    }
    Ok(groups)
}

fn duplicate_error(
    table: &TableEntry,
    pk_name: &str,
    key: &Value,
    origins: &RowOrigins,
    pos: u64,
    prev: u64,
    existing_rows: u64,
) -> Error {
    let first = if prev < existing_rows {
        "an existing node".to_string()
    } else {
        origins.describe(prev - existing_rows)
    };
    Error::copy(format!(
        "{}: duplicate primary key {key} in column '{pk_name}' of table '{}' (first seen at {first})",
        origins.describe(pos),
        table.name
    ))
}

/// Every rel of an existing table as (src, dst, property columns), in fwd order.
fn read_rels(
    pager: &Arc<Pager>,
    data: &RelTableData,
    types: &[LogicalType],
) -> Result<(Vec<u64>, Vec<u64>, Vec<ValueVector>)> {
    let mut src = Vec::with_capacity(data.num_rels as usize);
    let mut dst = Vec::with_capacity(data.num_rels as usize);
    let mut props: Vec<ValueVector> = types
        .iter()
        .map(|t| ValueVector::new(t.clone(), 0))
        .collect();
    let all_columns: Vec<usize> = (0..types.len()).collect();
    for (gidx, group) in data.fwd.groups.iter().enumerate() {
        let pinned = group.pin(pager, &all_columns)?;
        let first = gidx as u64 * NODE_GROUP_SIZE;
        let bound = pinned.bound_nodes();
        let live: Vec<u64> = (0..bound.len() as u64)
            .filter(|&p| bound[p as usize] != DELETED_POSITION)
            .collect();
        src.extend(live.iter().map(|&p| first + bound[p as usize]));
        let mut nbrs = vec![0u64; group.num_rels as usize];
        pinned.neighbors()?.read_u64s(0, nbrs.len(), &mut nbrs);
        dst.extend(live.iter().map(|&p| nbrs[p as usize]));
        for (cidx, col) in props.iter_mut().enumerate() {
            let mut tmp = ValueVector::new(types[cidx].clone(), group.num_rels as usize);
            pinned.properties[cidx].read(0, group.num_rels as usize, &mut tmp, 0)?;
            col.append(&tmp.gather(&live));
        }
    }
    Ok((src, dst, props))
}

/// Counting sort of rows by bound node: CSR offsets (`num_nodes + 1`) and the
/// input row at each CSR position.
fn sort_by_node(keys: &[u64], num_nodes: u64) -> (Vec<u64>, Vec<u64>) {
    let mut offsets = vec![0u64; num_nodes as usize + 1];
    for &k in keys {
        offsets[k as usize + 1] += 1;
    }
    for i in 0..num_nodes as usize {
        offsets[i + 1] += offsets[i];
    }
    let mut cursor = offsets.clone();
    let mut perm = vec![0u64; keys.len()];
    for (row, &k) in keys.iter().enumerate() {
        let slot = &mut cursor[k as usize];
        perm[*slot as usize] = row as u64;
        *slot += 1;
    }
    (offsets, perm)
}

/// Writes one CSR direction group by group: `offsets`/`perm` from
/// [`sort_by_node`], `others[row]` the neighbour and `rel_ids[row]` the id of
/// input row `row`.
fn write_csr(
    ctx: &LoadContext<'_>,
    pager: &Arc<Pager>,
    num_nodes: u64,
    sorted: (Vec<u64>, Vec<u64>),
    others: Arc<Vec<u64>>,
    rel_ids: Arc<Vec<u64>>,
    props: &Arc<Vec<ValueVector>>,
) -> Result<CsrIndex> {
    let num_groups = num_nodes.div_ceil(NODE_GROUP_SIZE) as usize;
    let sorted = Arc::new(sorted);
    let task_props = Arc::clone(props);
    let write_pager = Arc::clone(pager);
    let groups = parallel_map(ctx.sched, ctx.threads, ctx.cancel, num_groups, move |g| {
        let (offsets, perm) = &*sorted;
        let first_node = g as u64 * NODE_GROUP_SIZE;
        let n = NODE_GROUP_SIZE.min(num_nodes - first_node) as usize;
        let base = offsets[first_node as usize];
        let end = offsets[first_node as usize + n];
        let local: Vec<u64> = offsets[first_node as usize..=first_node as usize + n]
            .iter()
            .map(|o| o - base)
            .collect();
        let rows = &perm[base as usize..end as usize];
        let nbr: Vec<u64> = rows.iter().map(|&r| others[r as usize]).collect();
        let ids: Vec<u64> = rows.iter().map(|&r| rel_ids[r as usize]).collect();
        let count = rows.len();
        Ok(CsrGroup {
            num_nodes: n as u64,
            num_rels: count as u64,
            offsets: ColumnChunk::write(&write_pager, &u64_vector(local), 0, n + 1)?,
            neighbors: ColumnChunk::write(&write_pager, &u64_vector(nbr), 0, count)?,
            rel_ids: ColumnChunk::write(&write_pager, &u64_vector(ids), 0, count)?,
            properties: task_props
                .iter()
                .map(|p| ColumnChunk::write(&write_pager, &p.gather(rows), 0, count))
                .collect::<Result<Vec<_>>>()?,
            appended: None,
            deleted: None,
        })
    })?;
    Ok(CsrIndex { groups })
}

fn u64_vector(values: Vec<u64>) -> ValueVector {
    let len = values.len();
    ValueVector {
        ty: LogicalType::UInt64,
        data: VectorData::U64(values),
        nulls: kith_common::NullMask::with_len(len),
    }
}

/// Appends rels to rel table `table`. `input` columns: source key, destination
/// key, then the rel properties in catalog order.
pub fn load_rels(
    txn: &mut WriteTxn<'_>,
    ctx: &LoadContext<'_>,
    table: &TableEntry,
    input: Vec<LoadChunk>,
) -> Result<u64> {
    // Rows buffered by `WriteTxn::insert_nodes` first.
    txn.flush_pending()?;
    let info = table
        .rel_info()
        .ok_or_else(|| Error::internal("load_rels on a node table"))?
        .clone();
    let pager = Arc::clone(txn.pager());
    let node_data = |id| -> Result<NodeTableData> {
        match txn.tables.get(&id).map(|t| t.as_ref()) {
            Some(TableData::Node(n)) => Ok(n.clone()),
            _ => Err(Error::internal("rel endpoint has no node storage")),
        }
    };
    let src_data = node_data(info.src)?;
    let dst_data = node_data(info.dst)?;
    let src_entry = txn
        .catalog
        .table(info.src)
        .cloned()
        .ok_or_else(|| Error::internal("missing src table"))?;
    let dst_entry = txn
        .catalog
        .table(info.dst)
        .cloned()
        .ok_or_else(|| Error::internal("missing dst table"))?;
    let src_pk_ty = src_entry
        .primary_key()
        .map(|p| p.ty.clone())
        .unwrap_or(LogicalType::Int64);
    let dst_pk_ty = dst_entry
        .primary_key()
        .map(|p| p.ty.clone())
        .unwrap_or(LogicalType::Int64);
    let prop_types: Vec<LogicalType> = table.properties.iter().map(|p| p.ty.clone()).collect();
    let mut types = vec![src_pk_ty, dst_pk_ty];
    types.extend(prop_types.iter().cloned());
    let (mut cols, origins) = concat(input, &types)?;
    let new_props: Vec<ValueVector> = cols.split_off(2);
    let n_new = cols[0].len();
    if n_new == 0 {
        return Ok(0);
    }

    let src_end = Endpoint {
        data: src_data,
        name: src_entry.name,
    };
    let dst_end = Endpoint {
        data: dst_data,
        name: dst_entry.name,
    };
    let origins = Arc::new(origins);
    let (src, dst) = resolve_endpoints(ctx, &pager, cols, &origins, &src_end, &dst_end)?;

    // Existing rels are rebuilt together with the new ones.
    let existing = match txn.tables.get(&table.id).map(|t| t.as_ref()) {
        Some(TableData::Rel(r)) => r.clone(),
        _ => RelTableData::empty(table.properties.iter().map(|p| p.id).collect()),
    };
    let (old_src, old_dst, old_props) = read_rels(&pager, &existing, &prop_types)?;
    let n_old = old_src.len();
    let rels = RelRows {
        src: old_src,
        dst: old_dst,
        props: old_props,
    }
    .append(RelRows {
        src,
        dst,
        props: new_props,
    });
    let total = rels.src.len();

    check_multiplicity(table, &info, &rels, n_old, &origins)?;

    let (fwd, bwd, self_loops) = build_csrs(ctx, &pager, &info, &src_end, &dst_end, rels)?;
    txn.tables.insert(
        table.id,
        Arc::new(TableData::Rel(RelTableData {
            num_rels: total as u64,
            next_rel_id: total as u64,
            column_ids: table.properties.iter().map(|p| p.id).collect(),
            fwd,
            bwd,
            self_loops: Some(self_loops),
        })),
    );
    // The rels were renumbered: ids this transaction deleted now name others.
    txn.forget_deleted_rels(table.id);
    Ok(n_new as u64)
}

/// One end of the rel table being loaded: its node storage and table name.
struct Endpoint {
    data: NodeTableData,
    name: String,
}

/// Rels as parallel columns: source and destination node offsets and the
/// property columns, one row per rel.
struct RelRows {
    src: Vec<u64>,
    dst: Vec<u64>,
    props: Vec<ValueVector>,
}

impl RelRows {
    /// `self` followed by `new`.
    fn append(self, new: RelRows) -> RelRows {
        let RelRows {
            src: mut all_src,
            dst: mut all_dst,
            mut props,
        } = self;
        let RelRows {
            src,
            dst,
            props: new_props,
        } = new;
        // Move rather than copy when the table was empty (the common bulk load).
        if all_src.is_empty() {
            all_src = src;
            all_dst = dst;
            props = new_props;
        } else {
            all_src.extend_from_slice(&src);
            all_dst.extend_from_slice(&dst);
            drop((src, dst));
            for (p, n) in props.iter_mut().zip(&new_props) {
                p.append(n);
            }
            drop(new_props);
        }
        RelRows {
            src: all_src,
            dst: all_dst,
            props,
        }
    }
}

/// Resolves the source and destination keys (`keys[0]`, `keys[1]`) of the new
/// rels to node offsets through the primary-key indexes, in parallel.
fn resolve_endpoints(
    ctx: &LoadContext<'_>,
    pager: &Arc<Pager>,
    keys: Vec<ValueVector>,
    origins: &Arc<RowOrigins>,
    src_end: &Endpoint,
    dst_end: &Endpoint,
) -> Result<(Vec<u64>, Vec<u64>)> {
    let n_new = keys[0].len();
    let keys = Arc::new(keys);
    const RESOLVE_MORSEL: usize = 1 << 16;
    let num_morsels = n_new.div_ceil(RESOLVE_MORSEL);
    let (k2, o2, p2) = (Arc::clone(&keys), Arc::clone(origins), Arc::clone(pager));
    let (sd, dd) = (
        Arc::new(src_end.data.clone()),
        Arc::new(dst_end.data.clone()),
    );
    let (sname, dname) = (src_end.name.clone(), dst_end.name.clone());
    let resolved = parallel_map(ctx.sched, ctx.threads, ctx.cancel, num_morsels, move |m| {
        let start = m * RESOLVE_MORSEL;
        let end = (start + RESOLVE_MORSEL).min(k2[0].len());
        let mut src_lookup = sd.pk_lookup(&p2)?;
        let mut dst_lookup = dd.pk_lookup(&p2)?;
        let mut out = (
            Vec::with_capacity(end - start),
            Vec::with_capacity(end - start),
        );
        for row in start..end {
            for (side, lookup, name, dst) in [
                (0usize, &mut src_lookup, &sname, &mut out.0),
                (1, &mut dst_lookup, &dname, &mut out.1),
            ] {
                let key = k2[side].get_value(row);
                let which = if side == 0 { "source" } else { "destination" };
                if key.is_null() {
                    return Err(Error::copy(format!(
                        "{}: the {which} key is NULL",
                        o2.describe(row as u64)
                    )));
                }
                match lookup.lookup(&key)? {
                    Some(off) => dst.push(off),
                    None => {
                        return Err(Error::copy(format!(
                        "{}: {which} node with primary key {key} does not exist in table '{name}'",
                        o2.describe(row as u64)
                    )))
                    }
                }
            }
        }
        Ok(out)
    })?;
    // The key columns are no longer needed; free them before the CSR build
    // (which is where the load peaks in memory).
    drop(keys);
    let mut src: Vec<u64> = Vec::with_capacity(n_new);
    let mut dst: Vec<u64> = Vec::with_capacity(n_new);
    for (s, d) in resolved {
        src.extend(s);
        dst.extend(d);
    }
    Ok((src, dst))
}

/// Multiplicity: a `ONE` side allows one rel per node. `n_old` rows of `rels`
/// were in the table before the load.
fn check_multiplicity(
    table: &TableEntry,
    info: &RelTableInfo,
    rels: &RelRows,
    n_old: usize,
    origins: &RowOrigins,
) -> Result<()> {
    let total = rels.src.len();
    for (many, bound, side) in [
        (info.multiplicity.dst_many, &rels.src, "source"),
        (info.multiplicity.src_many, &rels.dst, "destination"),
    ] {
        if many {
            continue;
        }
        let mut seen = std::collections::HashSet::with_capacity(total);
        for (row, node) in bound.iter().enumerate() {
            if !seen.insert(*node) {
                let at = if row >= n_old {
                    origins.describe((row - n_old) as u64)
                } else {
                    "existing data".into()
                };
                return Err(Error::copy(format!(
                    "{at}: table '{}' is {} but a {side} node has more than one rel",
                    table.name,
                    info.multiplicity.name()
                )));
            }
        }
    }
    Ok(())
}

/// Builds both CSR directions of `rels` and counts the self-loops.
fn build_csrs(
    ctx: &LoadContext<'_>,
    pager: &Arc<Pager>,
    info: &RelTableInfo,
    src_end: &Endpoint,
    dst_end: &Endpoint,
    rels: RelRows,
) -> Result<(CsrIndex, CsrIndex, u64)> {
    let RelRows {
        src: all_src,
        dst: all_dst,
        props,
    } = rels;
    let total = all_src.len();
    let props = Arc::new(props);
    let fwd_sorted = sort_by_node(&all_src, src_end.data.num_rows);
    // A rel's id is its position in forward order; both directions store it.
    let mut rel_id_of_row = vec![0u64; total];
    for (pos, &row) in fwd_sorted.1.iter().enumerate() {
        rel_id_of_row[row as usize] = pos as u64;
    }
    let rel_ids = Arc::new(rel_id_of_row);
    let bwd_sorted = sort_by_node(&all_dst, dst_end.data.num_rows);
    let self_loops = count_self_loops(info.src == info.dst, &all_src, &all_dst);
    let (all_src, all_dst) = (Arc::new(all_src), Arc::new(all_dst));
    let fwd = write_csr(
        ctx,
        pager,
        src_end.data.num_rows,
        fwd_sorted,
        Arc::clone(&all_dst),
        Arc::clone(&rel_ids),
        &props,
    )?;
    let bwd = write_csr(
        ctx,
        pager,
        dst_end.data.num_rows,
        bwd_sorted,
        all_src,
        rel_ids,
        &props,
    )?;
    Ok((fwd, bwd, self_loops))
}
