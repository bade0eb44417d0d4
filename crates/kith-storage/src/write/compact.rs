//! Compaction at checkpoint: folding update patches into their chunks,
//! clearing deleted rows for reuse and folding rel changes into the CSR.

use super::*;

impl WriteTxn<'_> {
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
    pub(super) fn clear_deleted_rows(&mut self) -> Result<bool> {
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

    pub(super) fn load_csr(
        &self,
        csr: &CsrIndex,
        g: usize,
        types: &[LogicalType],
    ) -> Result<CsrBuf> {
        match csr.groups.get(g) {
            Some(group) => CsrBuf::read(self.pager(), group, types),
            None => Ok(CsrBuf::empty(types)),
        }
    }

    /// Writes `buf` as CSR group `g` (adding empty groups before it as needed).
    pub(super) fn store_csr(&mut self, csr: &mut CsrIndex, g: usize, buf: &CsrBuf) -> Result<()> {
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
}
