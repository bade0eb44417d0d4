//! Query results to pyarrow, column by column, without per-value Python objects.
//!
//! Fixed-width and string columns are copied from the engine's typed vectors
//! into Arrow buffers (with the GIL released) and handed to pyarrow through the
//! Arrow C data interface (`pyarrow.Array._import_from_c`). LIST, STRUCT and
//! MAP columns of such types become Arrow's nested arrays the same way, and
//! so do nodes, rels and paths, as structs shaped like the row API's dicts.
//! Variant (ANY) columns, and graph columns whose property types disagree
//! across labels, go through Python objects and `pyarrow.array`, which infers
//! their type: the slow path.

use std::sync::Arc;

use arrow_array::types::{
    Date32Type, DurationMicrosecondType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, LargeStringArray, ListArray, MapArray,
    NullArray, PrimitiveArray, StringArray, StructArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};
use kith_common::{Chunk, LogicalType, Value, ValueVector, VectorData};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::convert::Ctx;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// One pyarrow Array per column of `result`.
pub(crate) fn columns_to_pyarrow(
    py: Python<'_>,
    result: &kith::QueryResult,
) -> PyResult<Vec<PyObject>> {
    let pa = py.import("pyarrow")?;
    let import = pa.getattr("Array")?.getattr("_import_from_c")?;
    let chunks = result.chunks();
    let types = result.column_types();
    // Build every typed column without the GIL.
    let built: Vec<Option<ArrayRef>> = py.allow_threads(|| {
        (0..types.len())
            .map(|col| typed_column(chunks, col, &types[col]))
            .collect()
    });
    let mut out = Vec::with_capacity(types.len());
    for (col, array) in built.into_iter().enumerate() {
        match array {
            Some(array) => out.push(export(&import, array.as_ref())?),
            None => {
                // Slow path: Python objects, then pyarrow infers the type.
                let ctx = Ctx::new(py)?;
                let list = PyList::empty(py);
                for chunk in chunks {
                    let v = &chunk.columns[col];
                    for pos in 0..chunk.num_rows {
                        list.append(ctx.value(py, &v.get_value(pos))?)?;
                    }
                }
                out.push(pa.call_method1("array", (list,))?.unbind());
            }
        }
    }
    Ok(out)
}

/// Moves `array` into pyarrow through the C data interface.
fn export(import: &Bound<'_, PyAny>, array: &dyn Array) -> PyResult<PyObject> {
    let (ffi_array, ffi_schema) = arrow_array::ffi::to_ffi(&array.to_data())
        .map_err(|e| crate::RuntimeError::new_err(format!("Arrow export failed: {e}")))?;
    let array_ptr = Box::into_raw(Box::new(ffi_array));
    let schema_ptr = Box::into_raw(Box::new(ffi_schema));
    let imported = import.call1((array_ptr as usize, schema_ptr as usize));
    // SAFETY: both pointers come from `Box::into_raw` above and are not used
    // elsewhere. pyarrow moved the array out (its `release` is now null) and
    // released the schema; dropping the boxes frees only the shells (or, if
    // the import failed before moving, releases what is left).
    unsafe {
        drop(Box::from_raw(array_ptr));
        drop(Box::from_raw(schema_ptr));
    }
    Ok(imported?.unbind())
}

/// The validity bitmap of column `col` over all chunks, `None` when nothing is NULL.
fn validity(chunks: &[Chunk], col: usize, total: usize) -> Option<NullBuffer> {
    if !chunks.iter().any(|c| c.columns[col].nulls.may_have_nulls()) {
        return None;
    }
    let mut bits = BooleanBufferBuilder::new(total);
    for c in chunks {
        let v = &c.columns[col];
        if v.nulls.may_have_nulls() {
            for pos in 0..c.num_rows {
                bits.append(!v.is_null(pos));
            }
        } else {
            bits.append_n(c.num_rows, true);
        }
    }
    Some(NullBuffer::new(bits.finish()))
}

fn primitive<T: ArrowPrimitiveType>(
    chunks: &[Chunk],
    col: usize,
    total: usize,
    slice: impl Fn(&VectorData) -> Option<&[T::Native]>,
) -> Option<ArrayRef> {
    let mut values: Vec<T::Native> = Vec::with_capacity(total);
    for c in chunks {
        let s = slice(&c.columns[col].data)?;
        values.extend_from_slice(s.get(..c.num_rows)?);
    }
    Some(Arc::new(PrimitiveArray::<T>::new(
        ScalarBuffer::from(values),
        validity(chunks, col, total),
    )))
}

/// Column `col` as an Arrow array, or `None` for types without a typed vector.
fn typed_column(chunks: &[Chunk], col: usize, ty: &LogicalType) -> Option<ArrayRef> {
    let total: usize = chunks.iter().map(|c| c.num_rows).sum();
    macro_rules! prim {
        ($arrow:ty, $variant:ident) => {
            primitive::<$arrow>(chunks, col, total, |d| match d {
                VectorData::$variant(v) => Some(v.as_slice()),
                _ => None,
            })
        };
    }
    match ty {
        LogicalType::Int8 => prim!(Int8Type, I8),
        LogicalType::Int16 => prim!(Int16Type, I16),
        LogicalType::Int32 => prim!(Int32Type, I32),
        LogicalType::Int64 => prim!(Int64Type, I64),
        LogicalType::UInt8 => prim!(UInt8Type, U8),
        LogicalType::UInt16 => prim!(UInt16Type, U16),
        LogicalType::UInt32 => prim!(UInt32Type, U32),
        LogicalType::UInt64 => prim!(UInt64Type, U64),
        LogicalType::Float => prim!(Float32Type, F32),
        LogicalType::Double => prim!(Float64Type, F64),
        LogicalType::Date => prim!(Date32Type, I32),
        LogicalType::Timestamp => prim!(TimestampMicrosecondType, I64),
        LogicalType::Interval => {
            // Python's timedelta has no months: a month counts 30 days, as in the row path.
            let mut values = Vec::with_capacity(total);
            for c in chunks {
                let VectorData::Interval(v) = &c.columns[col].data else {
                    return None;
                };
                values.extend(v.get(..c.num_rows)?.iter().map(|iv| {
                    (iv.months as i64 * 30 + iv.days as i64) * MICROS_PER_DAY + iv.micros
                }));
            }
            Some(Arc::new(PrimitiveArray::<DurationMicrosecondType>::new(
                ScalarBuffer::from(values),
                validity(chunks, col, total),
            )))
        }
        LogicalType::Bool => {
            let mut bits = BooleanBufferBuilder::new(total);
            for c in chunks {
                let VectorData::Bool(v) = &c.columns[col].data else {
                    return None;
                };
                for b in v.get(..c.num_rows)? {
                    bits.append(*b);
                }
            }
            Some(Arc::new(BooleanArray::new(
                bits.finish(),
                validity(chunks, col, total),
            )))
        }
        LogicalType::String => {
            let mut heap_bytes = 0usize;
            for c in chunks {
                let VectorData::Str(s) = &c.columns[col].data else {
                    return None;
                };
                if s.len() < c.num_rows {
                    return None;
                }
                heap_bytes += s.heap_bytes();
            }
            let nulls = validity(chunks, col, total);
            // The heap holds at most every string the chunks hold.
            if heap_bytes <= i32::MAX as usize {
                let (offsets, values) = string_buffers::<i32>(chunks, col, total, heap_bytes);
                // SAFETY: offsets are monotonic, start at 0 and end at the heap
                // length, and every slot holds the bytes of one `&str`.
                Some(Arc::new(unsafe {
                    StringArray::new_unchecked(offsets, values, nulls)
                }))
            } else {
                let (offsets, values) = string_buffers::<i64>(chunks, col, total, heap_bytes);
                // SAFETY: as above.
                Some(Arc::new(unsafe {
                    LargeStringArray::new_unchecked(offsets, values, nulls)
                }))
            }
        }
        LogicalType::List(_) | LogicalType::Struct(_) | LogicalType::Map(..) => {
            nested_array(&column_values(chunks, col, total), ty)
        }
        LogicalType::Node | LogicalType::Rel | LogicalType::Path => {
            let (values, ty) = graph_structs(&column_values(chunks, col, total))?;
            nested_array(&values, &ty)
        }
        _ => None,
    }
}

/// Every value of column `col`.
fn column_values(chunks: &[Chunk], col: usize, total: usize) -> Vec<Value> {
    let mut values = Vec::with_capacity(total);
    for c in chunks {
        let v = &c.columns[col];
        values.extend((0..c.num_rows).map(|pos| v.get_value(pos)));
    }
    values
}

/// The property columns of the nodes (or rels) of a result column: each
/// property name once, in first-seen order, with its type (`ANY` while only
/// NULLs were seen).
#[derive(Default)]
struct PropertyColumns(Vec<(String, LogicalType)>);

impl PropertyColumns {
    /// Adds `props`; `None` when a property's values disagree in type.
    fn add(&mut self, props: &[(String, Value)]) -> Option<()> {
        for (name, v) in props {
            let t = v.logical_type();
            match self.0.iter_mut().find(|(n, _)| n == name) {
                Some((_, known)) if v.is_null() || *known == t => {}
                Some((_, known)) if *known == LogicalType::Any => *known = t,
                Some(_) => return None,
                None => self.0.push((name.clone(), t)),
            }
        }
        Some(())
    }

    /// One field per property column, NULL where `props` lacks it.
    fn fields<'s>(
        &'s self,
        props: &'s [(String, Value)],
    ) -> impl Iterator<Item = (String, Value)> + 's {
        self.0.iter().map(move |(name, _)| {
            let v = props.iter().find(|(n, _)| n == name);
            (name.clone(), v.map_or(Value::Null, |(_, v)| v.clone()))
        })
    }
}

/// Node, rel and path values as structs in the shape of the row API's dicts
/// (`_id` {offset, table}, `_label` and one field per property; rels also
/// `_src` and `_dst`; paths `_nodes` and `_rels`), with their struct type.
/// `None` when a property's values disagree in type across the column.
fn graph_structs(values: &[Value]) -> Option<(Vec<Value>, LogicalType)> {
    let (mut node_props, mut rel_props) = (PropertyColumns::default(), PropertyColumns::default());
    let mut kind = None;
    for v in values {
        match v {
            Value::Node(n) => node_props.add(&n.properties)?,
            Value::Rel(r) => rel_props.add(&r.properties)?,
            Value::Path(p) => {
                for n in p.nodes() {
                    node_props.add(&n.properties)?;
                }
                for r in p.rels() {
                    rel_props.add(&r.properties)?;
                }
            }
            Value::Null => continue,
            _ => return None,
        }
        let k = std::mem::discriminant(v);
        if kind.replace(k).is_some_and(|old| old != k) {
            return None;
        }
    }
    let id_type = || {
        LogicalType::Struct(vec![
            ("offset".into(), LogicalType::Int64),
            ("table".into(), LogicalType::Int64),
        ])
    };
    let id = |id: kith_common::InternalId| {
        Value::Struct(vec![
            ("offset".into(), Value::Int64(id.offset() as i64)),
            ("table".into(), Value::Int64(id.table().0 as i64)),
        ])
    };
    let node_type = LogicalType::Struct(
        [
            ("_id".to_string(), id_type()),
            ("_label".into(), LogicalType::String),
        ]
        .into_iter()
        .chain(node_props.0.iter().cloned())
        .collect(),
    );
    let rel_type = LogicalType::Struct(
        [
            ("_id".to_string(), id_type()),
            ("_label".into(), LogicalType::String),
            ("_src".into(), id_type()),
            ("_dst".into(), id_type()),
        ]
        .into_iter()
        .chain(rel_props.0.iter().cloned())
        .collect(),
    );
    let node = |n: &kith_common::NodeValue| {
        Value::Struct(
            [
                ("_id".to_string(), id(n.id)),
                ("_label".into(), Value::String(n.label.to_string())),
            ]
            .into_iter()
            .chain(node_props.fields(&n.properties))
            .collect(),
        )
    };
    let rel = |r: &kith_common::RelValue| {
        Value::Struct(
            [
                ("_id".to_string(), id(r.id)),
                ("_label".into(), Value::String(r.label.to_string())),
                ("_src".into(), id(r.src)),
                ("_dst".into(), id(r.dst)),
            ]
            .into_iter()
            .chain(rel_props.fields(&r.properties))
            .collect(),
        )
    };
    let structs = values
        .iter()
        .map(|v| match v {
            Value::Node(n) => node(n),
            Value::Rel(r) => rel(r),
            Value::Path(p) => Value::Struct(vec![
                (
                    "_nodes".into(),
                    Value::list(p.nodes().map(|n| node(n)).collect()),
                ),
                (
                    "_rels".into(),
                    Value::list(p.rels().map(|r| rel(r)).collect()),
                ),
            ]),
            _ => Value::Null,
        })
        .collect();
    let ty = match values.iter().find(|v| !v.is_null()) {
        Some(Value::Rel(_)) => rel_type,
        Some(Value::Path(_)) => LogicalType::Struct(vec![
            ("_nodes".into(), LogicalType::List(Box::new(node_type))),
            ("_rels".into(), LogicalType::List(Box::new(rel_type))),
        ]),
        _ => node_type,
    };
    Some((structs, ty))
}

/// Whether every value is NULL or a list kept as integers.
fn ints_only(values: &[Value]) -> bool {
    values.iter().all(|v| match v {
        Value::List(list) => list.ints().is_some(),
        v => v.is_null(),
    })
}

/// `values` (each NULL or of type `ty`) as one Arrow array: lists, structs
/// and maps as Arrow's nested arrays around typed leaf arrays. `None` when a
/// leaf type has no typed Arrow form (nodes, rels, variant values) or a value
/// is not of `ty`.
fn nested_array(values: &[Value], ty: &LogicalType) -> Option<ArrayRef> {
    let nulls = || {
        values
            .iter()
            .any(Value::is_null)
            .then(|| NullBuffer::from_iter(values.iter().map(|v| !v.is_null())))
    };
    match ty {
        LogicalType::List(inner) if **inner == LogicalType::Int64 && ints_only(values) => {
            // Collected integers kept as integers (`ListValue::ints`): the
            // child array straight from their slices, no value per element.
            let mut items: Vec<i64> = Vec::new();
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            for v in values {
                if let Value::List(list) = v {
                    items.extend_from_slice(list.ints()?);
                }
                offsets.push(i32::try_from(items.len()).ok()?);
            }
            let child: ArrayRef = Arc::new(PrimitiveArray::<Int64Type>::from(items));
            let field = Arc::new(Field::new("item", DataType::Int64, true));
            let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
            Some(Arc::new(
                ListArray::try_new(field, offsets, child, nulls()).ok()?,
            ))
        }
        LogicalType::List(inner) => {
            let mut items = Vec::new();
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            for v in values {
                match v {
                    Value::List(list) => items.extend(list.iter().cloned()),
                    Value::Null => {}
                    _ => return None,
                }
                offsets.push(i32::try_from(items.len()).ok()?);
            }
            let child = nested_array(&items, inner)?;
            let field = Arc::new(Field::new("item", child.data_type().clone(), true));
            let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
            Some(Arc::new(
                ListArray::try_new(field, offsets, child, nulls()).ok()?,
            ))
        }
        LogicalType::Struct(fields) => {
            let mut columns: Vec<Vec<Value>> = vec![Vec::with_capacity(values.len()); fields.len()];
            for v in values {
                match v {
                    Value::Struct(given) => {
                        for ((name, _), column) in fields.iter().zip(columns.iter_mut()) {
                            let field = given.iter().find(|(n, _)| n == name);
                            column.push(field.map_or(Value::Null, |(_, x)| x.clone()));
                        }
                    }
                    Value::Null => columns.iter_mut().for_each(|c| c.push(Value::Null)),
                    _ => return None,
                }
            }
            let arrays = fields
                .iter()
                .zip(&columns)
                .map(|((_, fty), column)| nested_array(column, fty))
                .collect::<Option<Vec<ArrayRef>>>()?;
            let arrow_fields: Fields = fields
                .iter()
                .zip(&arrays)
                .map(|((name, _), a)| Field::new(name, a.data_type().clone(), true))
                .collect();
            if fields.is_empty() {
                return Some(Arc::new(StructArray::new_empty_fields(
                    values.len(),
                    nulls(),
                )));
            }
            Some(Arc::new(
                StructArray::try_new(arrow_fields, arrays, nulls()).ok()?,
            ))
        }
        LogicalType::Map(kt, vt) => {
            let (mut keys, mut items) = (Vec::new(), Vec::new());
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            for v in values {
                match v {
                    Value::Map(entries) => {
                        for (k, x) in entries {
                            keys.push(k.clone());
                            items.push(x.clone());
                        }
                    }
                    Value::Null => {}
                    _ => return None,
                }
                offsets.push(i32::try_from(keys.len()).ok()?);
            }
            // Arrow map keys are never NULL.
            if keys.iter().any(Value::is_null) {
                return None;
            }
            let keys = nested_array(&keys, kt)?;
            let items = nested_array(&items, vt)?;
            let entry_fields = Fields::from(vec![
                Field::new("key", keys.data_type().clone(), false),
                Field::new("value", items.data_type().clone(), true),
            ]);
            let entries =
                StructArray::try_new(entry_fields.clone(), vec![keys, items], None).ok()?;
            let field = Arc::new(Field::new("entries", DataType::Struct(entry_fields), false));
            let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
            Some(Arc::new(
                MapArray::try_new(field, offsets, entries, nulls(), false).ok()?,
            ))
        }
        // A property that is NULL wherever it appears.
        LogicalType::Any if values.iter().all(Value::is_null) => {
            Some(Arc::new(NullArray::new(values.len())))
        }
        _ => {
            // A leaf: through a typed vector, as a top-level column is built.
            let mut vector = ValueVector::new(ty.clone(), 0);
            for v in values {
                if !v.is_null() && v.logical_type() != *ty {
                    return None;
                }
                vector.push_value(v);
            }
            let chunk = Chunk {
                columns: vec![vector],
                num_rows: values.len(),
            };
            typed_column(std::slice::from_ref(&chunk), 0, ty)
        }
    }
}

/// The offsets and bytes of string column `col` (every chunk's data is `Str`
/// with at least `num_rows` slots; `heap_bytes` bounds the bytes).
fn string_buffers<O: arrow_array::OffsetSizeTrait>(
    chunks: &[Chunk],
    col: usize,
    total: usize,
    heap_bytes: usize,
) -> (OffsetBuffer<O>, Buffer) {
    let mut heap: Vec<u8> = Vec::with_capacity(heap_bytes);
    let mut offsets: Vec<O> = Vec::with_capacity(total + 1);
    offsets.push(O::usize_as(0));
    for c in chunks {
        let v = &c.columns[col];
        let VectorData::Str(s) = &v.data else {
            continue;
        };
        for pos in 0..c.num_rows {
            if !v.is_null(pos) {
                heap.extend_from_slice(s.get(pos).as_bytes());
            }
            offsets.push(O::usize_as(heap.len()));
        }
    }
    // SAFETY: the offsets start at 0 and never decrease (each is the heap's
    // length after an append).
    let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
    (offsets, Buffer::from_vec(heap))
}
