//! The schema of a database: node tables, rel tables and their properties.
//!
//! A [`Catalog`] is an immutable snapshot value: a writer clones it, changes the
//! clone and publishes it at commit, so readers keep a consistent schema for the
//! whole of their transaction. It holds no data and knows nothing of storage
//! layout; it is persisted through [`Catalog::encode`] / [`Catalog::decode`].

mod table;

pub use table::{
    is_hidden, Multiplicity, NodeTableInfo, Property, PropertyId, RelTableInfo, TableEntry,
    TableKind, HIDDEN_PREFIX, LABELS_KEY, SERIAL_KEY,
};

use kith_common::codec::{Decoder, Encoder};
use kith_common::{Error, LogicalType, Result, TableId};

/// The largest number of tables (node and rel) in one database; table ids must
/// fit the 16 bits an `InternalId` gives them.
pub const MAX_TABLES: u32 = 1 << 16;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// Tables ordered by id; dropped tables leave no gap because ids are never
    /// reused within one catalog (`next_table_id` only grows).
    tables: Vec<TableEntry>,
    next_table_id: u32,
}

impl Catalog {
    pub fn new() -> Catalog {
        Catalog::default()
    }

    pub fn tables(&self) -> &[TableEntry] {
        &self.tables
    }

    pub fn table(&self, id: TableId) -> Option<&TableEntry> {
        self.tables.iter().find(|t| t.id == id)
    }

    pub fn table_by_name(&self, name: &str) -> Option<&TableEntry> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// Like [`Catalog::table_by_name`] but a binder error when missing.
    pub fn expect_table(&self, name: &str) -> Result<&TableEntry> {
        self.table_by_name(name)
            .ok_or_else(|| Error::semantic(format!("table '{name}' does not exist")))
    }

    pub fn node_tables(&self) -> impl Iterator<Item = &TableEntry> {
        self.tables.iter().filter(|t| t.is_node())
    }

    pub fn rel_tables(&self) -> impl Iterator<Item = &TableEntry> {
        self.tables.iter().filter(|t| t.is_rel())
    }

    fn check_new_name(&self, name: &str) -> Result<()> {
        if self.table_by_name(name).is_some() {
            return Err(Error::catalog(format!("table '{name}' already exists")));
        }
        if name.is_empty() {
            return Err(Error::catalog("table name must not be empty"));
        }
        Ok(())
    }

    fn next_id(&mut self) -> Result<TableId> {
        if self.next_table_id >= MAX_TABLES {
            return Err(Error::catalog(format!(
                "a database holds at most {MAX_TABLES} tables"
            )));
        }
        let id = TableId(self.next_table_id);
        self.next_table_id += 1;
        Ok(id)
    }

    fn build_properties(columns: Vec<(String, LogicalType)>) -> Result<Vec<Property>> {
        let mut props: Vec<Property> = Vec::with_capacity(columns.len());
        for (idx, (name, ty)) in columns.into_iter().enumerate() {
            if props.iter().any(|p| p.name == name) {
                return Err(Error::catalog(format!("duplicate property '{name}'")));
            }
            props.push(Property {
                id: PropertyId(idx as u32),
                name,
                ty,
            });
        }
        Ok(props)
    }

    /// Adds a node table; `primary_key` names one of `columns`.
    pub fn create_node_table(
        &mut self,
        name: &str,
        columns: Vec<(String, LogicalType)>,
        primary_key: &str,
    ) -> Result<TableId> {
        self.check_new_name(name)?;
        let properties = Catalog::build_properties(columns)?;
        let pk = properties
            .iter()
            .position(|p| p.name == primary_key)
            .ok_or_else(|| {
                Error::catalog(format!(
                    "primary key '{primary_key}' is not a property of table '{name}'"
                ))
            })?;
        let pk_ty = &properties[pk].ty;
        if !(pk_ty.is_integer() || matches!(pk_ty, LogicalType::String | LogicalType::Date)) {
            return Err(Error::catalog(format!(
                "a primary key must be an integer, STRING or DATE column, but '{primary_key}' is {pk_ty}"
            )));
        }
        let id = self.next_id()?;
        let next_property_id = properties.len() as u32;
        self.tables.push(TableEntry {
            id,
            name: name.to_string(),
            properties,
            next_property_id,
            kind: TableKind::Node(NodeTableInfo { primary_key: pk }),
            label: name.to_string(),
            implicit: false,
            extra_labels: Vec::new(),
        });
        Ok(id)
    }

    /// Adds a rel table from `src` to `dst` (node table names).
    pub fn create_rel_table(
        &mut self,
        name: &str,
        src: &str,
        dst: &str,
        columns: Vec<(String, LogicalType)>,
        multiplicity: Multiplicity,
    ) -> Result<TableId> {
        self.check_new_name(name)?;
        let endpoint = |n: &str| -> Result<TableId> {
            let t = self.table_by_name(n).ok_or_else(|| {
                Error::catalog(format!(
                    "node table '{n}' (endpoint of '{name}') does not exist"
                ))
            })?;
            if !t.is_node() {
                return Err(Error::catalog(format!(
                    "'{n}' is a rel table; rel endpoints must be node tables"
                )));
            }
            Ok(t.id)
        };
        let (src, dst) = (endpoint(src)?, endpoint(dst)?);
        let properties = Catalog::build_properties(columns)?;
        let id = self.next_id()?;
        let next_property_id = properties.len() as u32;
        self.tables.push(TableEntry {
            id,
            name: name.to_string(),
            properties,
            next_property_id,
            kind: TableKind::Rel(RelTableInfo {
                src,
                dst,
                multiplicity,
            }),
            label: name.to_string(),
            implicit: false,
            extra_labels: Vec::new(),
        });
        Ok(id)
    }

    /// Records that nodes of `table` may carry label `label`.
    pub fn add_extra_label(&mut self, table: TableId, label: &str) -> Result<()> {
        let t = self
            .tables
            .iter_mut()
            .find(|t| t.id == table)
            .ok_or_else(|| Error::catalog(format!("no table with id {}", table.0)))?;
        if !t.may_have_label(label) {
            t.extra_labels.push(label.to_string());
        }
        Ok(())
    }

    /// The node tables whose nodes may carry label `label` (their own, or
    /// an extra one).
    pub fn node_tables_with_label<'s>(
        &'s self,
        label: &'s str,
    ) -> impl Iterator<Item = &'s TableEntry> {
        self.node_tables().filter(move |t| t.may_have_label(label))
    }

    /// The node tables Cypher label `label` names ("" for the table of
    /// unlabelled nodes).
    pub fn node_tables_labelled<'s>(
        &'s self,
        label: &'s str,
    ) -> impl Iterator<Item = &'s TableEntry> {
        self.node_tables().filter(move |t| t.label == label)
    }

    /// The rel tables of Cypher rel type `rel_type`.
    pub fn rel_tables_typed<'s>(
        &'s self,
        rel_type: &'s str,
    ) -> impl Iterator<Item = &'s TableEntry> {
        self.rel_tables().filter(move |t| t.label == rel_type)
    }

    /// A name for an implicit table that no table has yet: `base`, else
    /// `base_2`, `base_3`, ...
    fn free_name(&self, base: &str) -> String {
        if self.table_by_name(base).is_none() && !base.is_empty() {
            return base.to_string();
        }
        (2..)
            .map(|i| format!("{base}_{i}"))
            .find(|n| self.table_by_name(n).is_none())
            .unwrap_or_else(|| base.to_string())
    }

    /// Adds the implicit node table of label `label` ("" for unlabelled
    /// nodes, stored as table `_unlabelled`): no properties but the hidden
    /// serial key.
    pub fn create_implicit_node_table(&mut self, label: &str) -> Result<TableId> {
        if let Some(t) = self.node_tables_labelled(label).next() {
            return Err(Error::catalog(format!(
                "label '{label}' already has table '{}'",
                t.name
            )));
        }
        let name = self.free_name(if label.is_empty() {
            "_unlabelled"
        } else {
            label
        });
        let id = self.next_id()?;
        self.tables.push(TableEntry {
            id,
            name,
            properties: vec![Property {
                id: PropertyId(0),
                name: SERIAL_KEY.to_string(),
                ty: LogicalType::Int64,
            }],
            next_property_id: 1,
            kind: TableKind::Node(NodeTableInfo { primary_key: 0 }),
            label: label.to_string(),
            implicit: true,
            extra_labels: Vec::new(),
        });
        Ok(id)
    }

    /// Adds the implicit rel table of type `rel_type` from node table `src`
    /// to `dst`; it is named `rel_type` when that name is free, else
    /// `rel_type_<src>_<dst>` (like a rel table group's members).
    pub fn create_implicit_rel_table(
        &mut self,
        rel_type: &str,
        src: TableId,
        dst: TableId,
    ) -> Result<TableId> {
        let name_of = |t: TableId| {
            self.table(t)
                .map(|e| e.name.clone())
                .ok_or_else(|| Error::catalog(format!("no node table with id {}", t.0)))
        };
        let base = if self.table_by_name(rel_type).is_none() {
            rel_type.to_string()
        } else {
            format!("{rel_type}_{}_{}", name_of(src)?, name_of(dst)?)
        };
        let name = self.free_name(&base);
        let id = self.next_id()?;
        self.tables.push(TableEntry {
            id,
            name,
            properties: Vec::new(),
            next_property_id: 0,
            kind: TableKind::Rel(RelTableInfo {
                src,
                dst,
                multiplicity: Multiplicity::MANY_MANY,
            }),
            label: rel_type.to_string(),
            implicit: true,
            extra_labels: Vec::new(),
        });
        Ok(id)
    }

    /// Removes property `name` of `table` (ALTER TABLE DROP); the primary
    /// key cannot be dropped. Returns its id.
    pub fn drop_property(&mut self, table: TableId, name: &str) -> Result<PropertyId> {
        let t = self
            .tables
            .iter_mut()
            .find(|t| t.id == table)
            .ok_or_else(|| Error::catalog(format!("no table with id {}", table.0)))?;
        let idx = t
            .property_index(name)
            .filter(|_| !is_hidden(name))
            .ok_or_else(|| {
                Error::catalog(format!("table '{}' has no property '{name}'", t.name))
            })?;
        if let TableKind::Node(info) = &mut t.kind {
            if info.primary_key == idx {
                return Err(Error::catalog(format!(
                    "cannot drop the primary key '{name}' of table '{}'",
                    t.name
                )));
            }
            if info.primary_key > idx {
                info.primary_key -= 1;
            }
        }
        Ok(t.properties.remove(idx).id)
    }

    /// Renames property `from` of `table` to `to` (ALTER TABLE RENAME).
    pub fn rename_property(&mut self, table: TableId, from: &str, to: &str) -> Result<()> {
        let t = self
            .tables
            .iter_mut()
            .find(|t| t.id == table)
            .ok_or_else(|| Error::catalog(format!("no table with id {}", table.0)))?;
        if is_hidden(to) || to.is_empty() || t.property(to).is_some() {
            return Err(Error::catalog(format!(
                "table '{}' already has a property '{to}' (or the name is not allowed)",
                t.name
            )));
        }
        let p = t
            .properties
            .iter_mut()
            .find(|p| p.name == from && !is_hidden(from))
            .ok_or_else(|| {
                Error::catalog(format!("table '{}' has no property '{from}'", t.name))
            })?;
        p.name = to.to_string();
        Ok(())
    }

    /// Renames table `table` to `to`; a label or rel type that was the old
    /// name follows it.
    pub fn rename_table(&mut self, table: TableId, to: &str) -> Result<()> {
        self.check_new_name(to)?;
        let t = self
            .tables
            .iter_mut()
            .find(|t| t.id == table)
            .ok_or_else(|| Error::catalog(format!("no table with id {}", table.0)))?;
        if t.label == t.name {
            t.label = to.to_string();
        }
        t.name = to.to_string();
        Ok(())
    }

    /// Changes the type of a property (a schema-less column widened to ANY).
    pub fn set_property_type(
        &mut self,
        table: TableId,
        property: PropertyId,
        ty: LogicalType,
    ) -> Result<()> {
        let p = self
            .tables
            .iter_mut()
            .find(|t| t.id == table)
            .and_then(|t| t.properties.iter_mut().find(|p| p.id == property))
            .ok_or_else(|| {
                Error::catalog(format!("no property {} in table {}", property.0, table.0))
            })?;
        p.ty = ty;
        Ok(())
    }

    /// Adds property `name` of type `ty` to table `table` (schema-less writes,
    /// ALTER TABLE ADD); existing rows read NULL.
    pub fn add_property(
        &mut self,
        table: TableId,
        name: &str,
        ty: LogicalType,
    ) -> Result<PropertyId> {
        let t = self
            .tables
            .iter_mut()
            .find(|t| t.id == table)
            .ok_or_else(|| Error::catalog(format!("no table with id {}", table.0)))?;
        if t.property(name).is_some() {
            return Err(Error::catalog(format!(
                "table '{}' already has a property '{name}'",
                t.name
            )));
        }
        let id = PropertyId(t.next_property_id);
        t.next_property_id += 1;
        t.properties.push(Property {
            id,
            name: name.to_string(),
            ty,
        });
        Ok(id)
    }

    /// Removes a table. A node table that rel tables still connect cannot be
    /// dropped.
    pub fn drop_table(&mut self, name: &str) -> Result<TableId> {
        let table = self
            .table_by_name(name)
            .ok_or_else(|| Error::catalog(format!("table '{name}' does not exist")))?;
        let id = table.id;
        if table.is_node() {
            if let Some(rel) = self.rel_tables().find(|r| {
                let info = r.rel_info();
                info.is_some_and(|i| i.src == id || i.dst == id)
            }) {
                return Err(Error::catalog(format!(
                    "cannot drop node table '{name}': rel table '{}' references it",
                    rel.name
                )));
            }
        }
        self.tables.retain(|t| t.id != id);
        Ok(id)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        e.u32(self.next_table_id);
        e.u64(self.tables.len() as u64);
        for t in &self.tables {
            t.encode(&mut e);
        }
        e.finish()
    }

    pub fn decode(buf: &[u8]) -> Result<Catalog> {
        let mut d = Decoder::new(buf);
        let next_table_id = d.u32()?;
        let n = d.count(8)?;
        let mut tables = Vec::with_capacity(n);
        for _ in 0..n {
            tables.push(TableEntry::decode(&mut d)?);
        }
        Ok(Catalog {
            tables,
            next_table_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Catalog {
        let mut c = Catalog::new();
        c.create_node_table(
            "Person",
            vec![
                ("id".into(), LogicalType::Int64),
                ("name".into(), LogicalType::String),
            ],
            "id",
        )
        .unwrap();
        c.create_rel_table(
            "Knows",
            "Person",
            "Person",
            vec![("since".into(), LogicalType::Int32)],
            Multiplicity::default(),
        )
        .unwrap();
        c
    }

    #[test]
    fn create_lookup_and_round_trip() {
        let c = sample();
        let person = c.expect_table("Person").unwrap();
        assert_eq!(person.primary_key().map(|p| p.name.as_str()), Some("id"));
        let knows = c.expect_table("Knows").unwrap();
        assert_eq!(knows.rel_info().unwrap().src, person.id);
        assert_eq!(Catalog::decode(&c.encode()).unwrap(), c);
    }

    #[test]
    fn errors_name_the_problem() {
        let mut c = sample();
        let e = c
            .create_node_table("Person", vec![("id".into(), LogicalType::Int64)], "id")
            .unwrap_err();
        assert!(e.message.contains("already exists"));
        let e = c
            .create_node_table("X", vec![("id".into(), LogicalType::Int64)], "nope")
            .unwrap_err();
        assert!(e.message.contains("primary key 'nope'"));
        let e = c
            .create_rel_table("R", "Person", "Nope", vec![], Multiplicity::default())
            .unwrap_err();
        assert!(e.message.contains("'Nope'"));
        let e = c.drop_table("Person").unwrap_err();
        assert!(e.message.contains("Knows"));
        c.drop_table("Knows").unwrap();
        c.drop_table("Person").unwrap();
        assert!(c.tables().is_empty());
    }

    #[test]
    fn decode_rejects_garbage() {
        let buf = sample().encode();
        for cut in 0..buf.len() {
            assert!(Catalog::decode(&buf[..cut]).is_err());
        }
    }
}
