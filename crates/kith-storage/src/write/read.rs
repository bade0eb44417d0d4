//! What the writing clauses read through the transaction: property
//! values, rels between nodes, nodes by property values and by primary key,
//! all seeing the transaction's own writes.

use super::*;

impl WriteTxn<'_> {
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
}
