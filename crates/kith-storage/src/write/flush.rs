//! Writing out what the transaction buffers: pending node rows, pending
//! rels of many-to-many tables and buffered SETs, before any read that must
//! see them and at commit.

use super::*;

impl WriteTxn<'_> {
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
    pub(super) fn flush_inserts(&mut self) -> Result<()> {
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
    pub(super) fn set_chunk_values(
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

    pub(super) fn write_node_sets(
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

    pub(super) fn write_rel_sets(
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
    pub(super) fn flush_rels(&mut self, table: TableId) -> Result<()> {
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

    pub(super) fn flush_table(&mut self, table: TableId) -> Result<()> {
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
}
