//! Rel inserts (merged into the CSR groups of both directions), deletes and
//! property updates.

use super::*;

/// Rels to add to one CSR region: `rows` index the parallel slices
/// (`bound` the node of this direction, `other` the neighbour) and the
/// property vectors.
pub(super) struct NewRels<'a> {
    pub(super) rows: &'a [usize],
    pub(super) bound: &'a [u64],
    pub(super) other: &'a [u64],
    pub(super) ids: &'a [u64],
    pub(super) props: &'a [ValueVector],
}

/// One CSR group decoded into memory.
pub(super) struct CsrBuf {
    pub(super) offsets: Vec<u64>,
    pub(super) nbrs: Vec<u64>,
    pub(super) ids: Vec<u64>,
    pub(super) props: Vec<ValueVector>,
}

impl CsrBuf {
    pub(super) fn empty(types: &[LogicalType]) -> CsrBuf {
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
    pub(super) fn read(pager: &Arc<Pager>, g: &CsrGroup, types: &[LogicalType]) -> Result<CsrBuf> {
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

    pub(super) fn num_nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    pub(super) fn range(&self, local: usize) -> std::ops::Range<usize> {
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
pub(super) fn locate_rels(
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

impl WriteTxn<'_> {
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
    pub(super) fn merge_rels(
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
    pub(super) fn append_to_csr(
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
