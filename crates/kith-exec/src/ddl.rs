//! DDL statements applied inside a write transaction: table creation,
//! removal and ALTER TABLE, in the catalog and in storage. Each returns the
//! status message the statement reports; the caller (the `kith` facade)
//! opens and commits the transaction and checks IF [NOT] EXISTS against
//! its snapshot first.

use std::sync::Arc;

use kith_catalog::{Multiplicity, TableKind};
use kith_common::{Error, LogicalType, Result, TableId};
use kith_planner::bound::BoundAlter;
use kith_storage::{NodeTableData, RelTableData, TableData, WriteTxn};

/// `CREATE NODE TABLE`: the catalog entry and its empty storage.
pub fn create_node_table(
    txn: &mut WriteTxn<'_>,
    name: &str,
    columns: Vec<(String, LogicalType)>,
    primary_key: &str,
) -> Result<String> {
    let id = txn.catalog.create_node_table(name, columns, primary_key)?;
    let entry = txn
        .catalog
        .table(id)
        .cloned()
        .ok_or_else(|| Error::internal("new table missing"))?;
    let pk = match &entry.kind {
        TableKind::Node(info) => info.primary_key,
        TableKind::Rel(_) => return Err(Error::internal("node table created as rel")),
    };
    let data = NodeTableData::empty(entry.properties.iter().map(|p| p.id).collect(), pk);
    txn.tables.insert(id, Arc::new(TableData::Node(data)));
    Ok(format!("Table {name} has been created."))
}

/// `CREATE REL TABLE` from `ends` (source and destination table names):
/// the catalog entry and its empty storage.
pub fn create_rel_table(
    txn: &mut WriteTxn<'_>,
    name: &str,
    ends: (&str, &str),
    columns: Vec<(String, LogicalType)>,
    multiplicity: Multiplicity,
) -> Result<String> {
    let (src, dst) = ends;
    let id = txn
        .catalog
        .create_rel_table(name, src, dst, columns, multiplicity)?;
    let entry = txn
        .catalog
        .table(id)
        .cloned()
        .ok_or_else(|| Error::internal("new table missing"))?;
    let data = RelTableData::empty(entry.properties.iter().map(|p| p.id).collect());
    txn.tables.insert(id, Arc::new(TableData::Rel(data)));
    Ok(format!("Table {name} has been created."))
}

/// `DROP TABLE`: the catalog entry and the table's storage.
pub fn drop_table(txn: &mut WriteTxn<'_>, name: &str) -> Result<String> {
    let id = txn.catalog.drop_table(name)?;
    txn.tables.remove(&id);
    Ok(format!("Table {name} has been dropped."))
}

/// `ALTER TABLE`: adds, drops or renames a column, or renames the table.
pub fn alter_table(txn: &mut WriteTxn<'_>, table: TableId, action: BoundAlter) -> Result<String> {
    let name = txn
        .catalog
        .table(table)
        .map(|t| t.name.clone())
        .ok_or_else(|| Error::internal("altered table vanished"))?;
    match action {
        BoundAlter::AddColumn {
            name: column,
            ty,
            default,
            if_not_exists,
        } => {
            if txn
                .catalog
                .table(table)
                .and_then(|t| t.property(&column))
                .is_some()
            {
                if if_not_exists {
                    return Ok(format!("Property {column} already exists in table {name}."));
                }
                return Err(Error::catalog(format!(
                    "table '{name}' already has a property '{column}'"
                )));
            }
            let id = txn.catalog.add_property(table, &column, ty)?;
            txn.add_column_with(table, id, &default)?;
            Ok(format!("Table {name} altered."))
        }
        BoundAlter::DropColumn {
            name: column,
            if_exists,
        } => {
            if if_exists
                && txn
                    .catalog
                    .table(table)
                    .and_then(|t| t.property(&column))
                    .is_none()
            {
                return Ok(format!("Property {column} does not exist in table {name}."));
            }
            let id = txn.catalog.drop_property(table, &column)?;
            txn.drop_column(table, id)?;
            Ok(format!("Table {name} altered."))
        }
        BoundAlter::RenameColumn { from, to } => {
            txn.catalog.rename_property(table, &from, &to)?;
            Ok(format!("Table {name} altered."))
        }
        BoundAlter::RenameTable { to } => {
            txn.catalog.rename_table(table, &to)?;
            Ok(format!("Table {name} altered."))
        }
    }
}
