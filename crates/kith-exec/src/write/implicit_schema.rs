//! Schema-less writes: the implicit tables and columns a CREATE, MERGE or SET
//! needs are added to the write transaction's catalog (and storage) just
//! before the write, so the write itself goes through the ordinary typed path.
//!
//! - A node label (or no label) without a declared table gets an implicit
//!   node table with a hidden serial key; a rel type gets one implicit rel
//!   table per pair of endpoint tables.
//! - A property an implicit table lacks is added with the type of the values
//!   written (lists, maps and values of mixed types: the variant type ANY);
//!   a later value that does not fit widens the column to ANY.
//! - Declared tables stay strict: the binder rejects unknown properties and
//!   storage rejects wrong types.

use kith_catalog::TableEntry;
use kith_common::{Error, LogicalType, Result, TableId, Value};
use kith_planner::bound::WriteTable;
use kith_storage::WriteTxn;

/// The node table `t` refers to, created when it is implicit and missing.
pub(crate) fn node_table(txn: &mut WriteTxn<'_>, t: &WriteTable) -> Result<TableId> {
    match t {
        WriteTable::Declared(id) => Ok(*id),
        WriteTable::Implicit(label) => {
            if let Some(e) = txn.catalog.node_tables_labelled(label).next() {
                return Ok(e.id);
            }
            let id = txn.catalog.create_implicit_node_table(label)?;
            txn.create_table_storage(id)?;
            Ok(id)
        }
    }
}

/// The rel table `t` refers to for a rel from a `src` node to a `dst` node,
/// created when it is implicit and missing.
pub(crate) fn rel_table(
    txn: &mut WriteTxn<'_>,
    t: &WriteTable,
    src: TableId,
    dst: TableId,
) -> Result<TableId> {
    match t {
        WriteTable::Declared(id) => Ok(*id),
        WriteTable::Implicit(rel_type) => {
            let existing = txn
                .catalog
                .rel_tables_typed(rel_type)
                .find(|e| e.rel_info().is_some_and(|i| i.src == src && i.dst == dst));
            if let Some(e) = existing {
                return Ok(e.id);
            }
            let id = txn.catalog.create_implicit_rel_table(rel_type, src, dst)?;
            txn.create_table_storage(id)?;
            Ok(id)
        }
    }
}

/// The column type a schema-less property gets for value `v`.
fn stored_type(v: &Value) -> LogicalType {
    match v.logical_type() {
        LogicalType::List(_) | LogicalType::Map(..) | LogicalType::Struct(_) => LogicalType::Any,
        t => t,
    }
}

/// Makes sure implicit table `table` can store `values` under property
/// `name`: adds the column (typed after the values) or widens it to ANY.
/// Declared tables are left alone (their checks come later).
pub(crate) fn ensure_property<'v>(
    txn: &mut WriteTxn<'_>,
    table: TableId,
    name: &str,
    values: impl Iterator<Item = &'v Value>,
) -> Result<()> {
    let entry = entry(txn, table)?;
    if !entry.implicit {
        return Ok(());
    }
    if kith_catalog::is_hidden(name) {
        return Err(Error::semantic(format!(
            "property name '{}' is reserved",
            name.escape_debug()
        )));
    }
    let existing = entry.property(name).cloned();
    let mut ty: Option<LogicalType> = existing.as_ref().map(|p| p.ty.clone());
    let mut widen = false;
    for v in values {
        if v.is_null() {
            continue;
        }
        // openCypher property values: scalars and lists of scalars
        // (InvalidPropertyType otherwise).
        let entity_or_map = |v: &Value| {
            matches!(
                v,
                Value::Node(_)
                    | Value::Rel(_)
                    | Value::Path(_)
                    | Value::InternalId(_)
                    | Value::Map(_)
                    | Value::Struct(_)
            )
        };
        let bad = match v {
            Value::List(items) => items
                .iter()
                .find(|i| entity_or_map(i) || matches!(i, Value::List(_))),
            other => entity_or_map(other).then_some(other),
        };
        if let Some(b) = bad {
            let what = if std::ptr::eq(b, v) {
                format!("a {}", v.logical_type())
            } else {
                format!("a list holding a {}", b.logical_type())
            };
            return Err(Error::type_error(format!(
                "{what} cannot be stored as property '{name}' (invalid property type)"
            )));
        }
        match &ty {
            None => ty = Some(stored_type(v)),
            Some(LogicalType::Any) => {}
            Some(t) => {
                if v.to_column_type(t).is_none() || v.logical_type() != *t {
                    widen = true;
                    ty = Some(LogicalType::Any);
                }
            }
        }
    }
    match (existing, ty) {
        (None, Some(ty)) => {
            let id = txn.catalog.add_property(table, name, ty)?;
            txn.add_column(table, id)
        }
        (Some(p), Some(_)) if widen => txn.widen_to_any(table, p.id),
        _ => Ok(()),
    }
}

/// The hidden label-list column of node table `table` (added when missing,
/// also to declared tables: it is not a user property), after recording
/// `labels` as labels the table's nodes may carry.
pub(crate) fn label_column(
    txn: &mut WriteTxn<'_>,
    table: TableId,
    labels: &[String],
) -> Result<kith_catalog::PropertyId> {
    for l in labels {
        txn.catalog.add_extra_label(table, l)?;
    }
    if let Some(p) = entry(txn, table)?.property(kith_catalog::LABELS_KEY) {
        return Ok(p.id);
    }
    let id = txn
        .catalog
        .add_property(table, kith_catalog::LABELS_KEY, LogicalType::Any)?;
    txn.add_column(table, id)?;
    Ok(id)
}

pub fn entry(txn: &WriteTxn<'_>, table: TableId) -> Result<TableEntry> {
    txn.catalog
        .table(table)
        .cloned()
        .ok_or_else(|| Error::internal(format!("no table with id {}", table.0)))
}
