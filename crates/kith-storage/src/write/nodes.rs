//! Node inserts, property updates and deletes, and the PK delta's folding
//! into a rebuilt index (the design is in the parent module's doc).

use super::*;

impl WriteTxn<'_> {
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
    pub(super) fn rel_tables_of(&self, table: TableId) -> Vec<(TableId, RelDirection)> {
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
    pub(super) fn rels_of_nodes(
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

    pub(super) fn rebuild_pk_index(
        &mut self,
        table: TableId,
        data: &mut NodeTableData,
    ) -> Result<()> {
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
}
