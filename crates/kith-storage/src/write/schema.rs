//! Table storage changes of DDL inside a write transaction: a new table's
//! empty storage, and adding, dropping and widening a column.

use super::*;

impl WriteTxn<'_> {
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
}
