//! Arrow record batches as COPY input, and the Arrow → column conversion
//! that the Parquet reader shares.
//!
//! An [`ArrowSource`] holds batches that already live in memory (a DataFrame
//! handed over by the Python package through the Arrow C stream interface):
//! nothing is copied until a morsel is converted, and then only into the
//! engine's column builders, exactly as a Parquet row group is. Morsels are
//! zero-copy slices of at most one node group's worth of rows, so a table
//! that arrives as one huge batch still converts in parallel.
//!
//! Rows are numbered from 1 in error messages (`df:3: ...`), as Parquet rows
//! and CSV lines are.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float16Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, IntervalMonthDayNanoType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::temporal::MICROS_PER_DAY;
use kith_common::{Chunk, Error, Interval, LogicalType, Result, Value};

use crate::column::{ColumnBuilder, FieldError};
use crate::csv::{check_types, column_name, ParsedMorsel};

pub use arrow_array::RecordBatch;
pub use arrow_schema::{Schema, SchemaRef};
/// The Arrow crates this module speaks, for callers (and their tests) that
/// build batches without depending on arrow themselves.
pub use {arrow_array, arrow_schema};

/// Rows per morsel of an in-memory source: one node group, so the loader
/// receives chunks of the size it stores.
const MORSEL_ROWS: usize = NODE_GROUP_SIZE as usize;

/// In-memory record batches to COPY from, split into morsels.
#[derive(Debug)]
pub struct ArrowSource {
    source: Arc<str>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    /// (batch, offset in the batch, rows, first row of the source) per morsel.
    morsels: Vec<(usize, usize, usize, u64)>,
    num_rows: u64,
}

impl ArrowSource {
    /// `source` names the input in error messages (the Python variable, say).
    /// Every batch must have `schema`'s columns (names may differ; COPY maps
    /// columns by position).
    pub fn new(source: &str, schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<ArrowSource> {
        Self::with_morsel_rows(source, schema, batches, MORSEL_ROWS)
    }

    fn with_morsel_rows(
        source: &str,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        morsel_rows: usize,
    ) -> Result<ArrowSource> {
        let source: Arc<str> = source.into();
        let morsel_rows = morsel_rows.max(1);
        let mut morsels = Vec::new();
        let mut row = 0u64;
        for (b, batch) in batches.iter().enumerate() {
            let same = batch.num_columns() == schema.fields().len()
                && batch
                    .schema()
                    .fields()
                    .iter()
                    .zip(schema.fields())
                    .all(|(a, b)| a.data_type() == b.data_type());
            if !same {
                return Err(Error::copy(format!(
                    "{source}: record batch {} does not have the schema of the first one",
                    b + 1
                )));
            }
            let mut offset = 0;
            while offset < batch.num_rows() {
                let rows = morsel_rows.min(batch.num_rows() - offset);
                morsels.push((b, offset, rows, row));
                offset += rows;
                row += rows as u64;
            }
        }
        Ok(ArrowSource {
            source,
            schema,
            batches,
            morsels,
            num_rows: row,
        })
    }

    pub fn num_morsels(&self) -> usize {
        self.morsels.len()
    }

    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    pub fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn source(&self) -> &Arc<str> {
        &self.source
    }

    /// Checks that column `c` of the source can load into `types[c]` for every
    /// column: the count must match and each Arrow type must convert to the
    /// target type at all (values are still range-checked one by one).
    pub fn check_columns(
        &self,
        types: &[LogicalType],
        names: &[String],
        table: &str,
    ) -> Result<()> {
        let fields = self.schema.fields();
        if fields.len() != types.len() {
            return Err(Error::copy(format!(
                "{}: has {} columns, table {table} expects {} ({})",
                self.source,
                fields.len(),
                types.len(),
                names.join(", ")
            )));
        }
        check_types(types, names)?;
        for (c, (field, ty)) in fields.iter().zip(types).enumerate() {
            if !convertible(field.data_type(), ty) {
                return Err(Error::copy(format!(
                    "{}: column {} ('{}', Arrow type {}) cannot be loaded into column '{}' of type {ty}",
                    self.source,
                    c + 1,
                    field.name(),
                    field.data_type(),
                    column_name(names, c),
                )));
            }
        }
        Ok(())
    }
}

/// Converts morsel `morsel` of `src` into a chunk of `types` (one per source
/// column, in order); `lines` are 1-based row numbers within the source.
pub fn read_arrow_morsel(
    src: &ArrowSource,
    morsel: usize,
    types: &[LogicalType],
    names: &[String],
) -> Result<ParsedMorsel> {
    check_types(types, names)?;
    let Some(&(b, offset, rows, first)) = src.morsels.get(morsel) else {
        return Err(Error::internal(format!(
            "{}: no morsel {morsel}",
            src.source
        )));
    };
    if types.len() != src.schema.fields().len() {
        return Err(Error::copy(format!(
            "{}: expected {} columns, found {}",
            src.source,
            types.len(),
            src.schema.fields().len()
        )));
    }
    let batch = src.batches[b].slice(offset, rows);
    let mut cols: Vec<ColumnBuilder> = types.iter().map(|t| ColumnBuilder::new(t, rows)).collect();
    append_batch(&mut cols, &batch, first, &src.source, types, names)?;
    Ok(ParsedMorsel {
        chunk: Chunk {
            columns: cols.into_iter().map(ColumnBuilder::finish).collect(),
            num_rows: rows,
        },
        lines: (first + 1..=first + rows as u64).collect(),
    })
}

/// Appends every row of `batch` (whose first row is row `first`, 0-based, of
/// `source`) to `cols`; a value that does not convert fails with its row
/// number, column and a rendering of the value.
pub(crate) fn append_batch(
    cols: &mut [ColumnBuilder],
    batch: &RecordBatch,
    first: u64,
    source: &str,
    types: &[LogicalType],
    names: &[String],
) -> Result<()> {
    for (c, col) in cols.iter_mut().enumerate() {
        convert(col, batch.column(c).as_ref()).map_err(|(i, text)| {
            Error::copy(format!(
                "{source}:{}: column {} ({}): cannot convert {text} to {}",
                first + i as u64 + 1,
                c + 1,
                column_name(names, c),
                types[c]
            ))
        })?;
    }
    Ok(())
}

/// The KithDB type an Arrow column reads as by default (`ANY` when none fits).
pub(crate) fn logical_type(dt: &DataType) -> LogicalType {
    match dt {
        DataType::Boolean => LogicalType::Bool,
        DataType::Int8 => LogicalType::Int8,
        DataType::Int16 => LogicalType::Int16,
        DataType::Int32 => LogicalType::Int32,
        DataType::Int64 => LogicalType::Int64,
        DataType::UInt8 => LogicalType::UInt8,
        DataType::UInt16 => LogicalType::UInt16,
        DataType::UInt32 => LogicalType::UInt32,
        DataType::UInt64 => LogicalType::UInt64,
        DataType::Float16 | DataType::Float32 => LogicalType::Float,
        DataType::Float64 => LogicalType::Double,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => LogicalType::String,
        DataType::Date32 | DataType::Date64 => LogicalType::Date,
        DataType::Timestamp(_, _) => LogicalType::Timestamp,
        DataType::Interval(IntervalUnit::MonthDayNano) | DataType::Duration(_) => {
            LogicalType::Interval
        }
        DataType::Dictionary(_, v) if is_string(v) => LogicalType::String,
        _ => LogicalType::Any,
    }
}

fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// Whether values of Arrow type `dt` can convert to `ty` at all (the same
/// rules [`convert`] applies value by value: integers load into any numeric
/// column, floats into FLOAT/DOUBLE, strings are parsed for any type, dates
/// and timestamps into DATE/TIMESTAMP, durations into INTERVAL).
fn convertible(dt: &DataType, ty: &LogicalType) -> bool {
    use LogicalType as T;
    let numeric = matches!(
        ty,
        T::Int8
            | T::Int16
            | T::Int32
            | T::Int64
            | T::UInt8
            | T::UInt16
            | T::UInt32
            | T::UInt64
            | T::Float
            | T::Double
    );
    match dt {
        DataType::Null => true,
        DataType::Boolean => *ty == T::Bool,
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => numeric,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            matches!(ty, T::Float | T::Double)
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_string(v),
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) => {
            matches!(ty, T::Date | T::Timestamp)
        }
        DataType::Duration(_) | DataType::Interval(IntervalUnit::MonthDayNano) => {
            *ty == T::Interval
        }
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            matches!(ty, T::List(inner) if convertible(f.data_type(), inner))
        }
        // Fields match by name; a declared field the source lacks is NULL.
        DataType::Struct(fields) => matches!(ty, T::Struct(declared) if fields.iter().all(|f| {
            declared
                .iter()
                .any(|(n, t)| n == f.name() && convertible(f.data_type(), t))
        })),
        DataType::Map(entries, _) => match (entries.data_type(), ty) {
            (DataType::Struct(kv), T::Map(k, v)) if kv.len() == 2 => {
                convertible(kv[0].data_type(), k) && convertible(kv[1].data_type(), v)
            }
            _ => false,
        },
        _ => false,
    }
}

/// The values of nested Arrow array `a` (LIST, STRUCT or MAP, or a scalar
/// array for a scalar `ty`) converted to `ty`, one per row; on failure the
/// row and a rendering of the offending element.
fn nested_values(
    a: &dyn Array,
    ty: &LogicalType,
) -> std::result::Result<Vec<Value>, (usize, String)> {
    let n = a.len();
    let null = |i: usize| a.is_null(i);
    match (ty, a.data_type()) {
        (
            LogicalType::List(inner),
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..),
        ) => {
            let (offsets, child): (Vec<usize>, &ArrayRef) = match a.data_type() {
                DataType::List(_) => {
                    let l = a.as_list::<i32>();
                    (
                        l.value_offsets().iter().map(|&o| o as usize).collect(),
                        l.values(),
                    )
                }
                DataType::LargeList(_) => {
                    let l = a.as_list::<i64>();
                    (
                        l.value_offsets().iter().map(|&o| o as usize).collect(),
                        l.values(),
                    )
                }
                _ => {
                    let l = a.as_fixed_size_list();
                    let size = l.value_length() as usize;
                    let start = if n > 0 { l.value_offset_at(0) } else { 0 };
                    ((0..=n).map(|i| start + i * size).collect(), l.values())
                }
            };
            let items = child_values(child, &offsets, inner)?;
            Ok(ranges(&offsets, items, null, Value::list))
        }
        (LogicalType::Map(kt, vt), DataType::Map(..)) => {
            let m = a.as_map();
            let offsets: Vec<usize> = m.value_offsets().iter().map(|&o| o as usize).collect();
            let keys = child_values(m.keys(), &offsets, kt)?;
            let values = child_values(m.values(), &offsets, vt)?;
            let entries: Vec<(Value, Value)> = keys.into_iter().zip(values).collect();
            Ok(ranges(&offsets, entries, null, Value::Map))
        }
        (LogicalType::Struct(fields), DataType::Struct(_)) => {
            let s = a.as_struct();
            let mut columns: Vec<Vec<Value>> = Vec::with_capacity(fields.len());
            for (name, fty) in fields {
                columns.push(match s.column_by_name(name) {
                    Some(c) => nested_values(c.as_ref(), fty)?,
                    None => vec![Value::Null; n],
                });
            }
            Ok((0..n)
                .map(|i| {
                    if null(i) {
                        return Value::Null;
                    }
                    Value::Struct(
                        fields
                            .iter()
                            .zip(columns.iter_mut())
                            .map(|((name, _), col)| {
                                (name.clone(), std::mem::replace(&mut col[i], Value::Null))
                            })
                            .collect(),
                    )
                })
                .collect())
        }
        _ => {
            let mut b = ColumnBuilder::new(ty, n);
            convert(&mut b, a)?;
            Ok(b.into_values())
        }
    }
}

/// The values of `child` between the first and the last of `offsets`,
/// converted to `ty`; an error's index is turned into the row whose range
/// holds it.
fn child_values(
    child: &ArrayRef,
    offsets: &[usize],
    ty: &LogicalType,
) -> std::result::Result<Vec<Value>, (usize, String)> {
    let (first, last) = (offsets[0], offsets[offsets.len() - 1]);
    let part = child.slice(first, last - first);
    nested_values(part.as_ref(), ty).map_err(|(i, text)| {
        let row = offsets
            .partition_point(|&o| o <= first + i)
            .saturating_sub(1);
        (row, text)
    })
}

/// One value per row from the consecutive ranges of `items` that `offsets`
/// delimit; NULL where `null(row)`.
fn ranges<T>(
    offsets: &[usize],
    items: Vec<T>,
    null: impl Fn(usize) -> bool,
    make: impl Fn(Vec<T>) -> Value,
) -> Vec<Value> {
    let mut items = items.into_iter();
    (0..offsets.len() - 1)
        .map(|row| {
            let len = offsets[row + 1] - offsets[row];
            let slice: Vec<T> = items.by_ref().take(len).collect();
            if null(row) {
                Value::Null
            } else {
                make(slice)
            }
        })
        .collect()
}

/// A duration in microseconds as an interval of days and microseconds (as a
/// Python `timedelta` parameter becomes one).
fn duration_interval(micros: i64) -> Interval {
    let days = micros.div_euclid(MICROS_PER_DAY);
    Interval {
        months: 0,
        days: days.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        micros: micros.rem_euclid(MICROS_PER_DAY),
    }
}

/// What [`convert`] returns: on failure the position and a rendering of the
/// offending value.
type ConvertResult = std::result::Result<(), (usize, String)>;

/// Appends every value of `a` to `col`; on failure the position and a rendering
/// of the offending value.
pub(crate) fn convert(col: &mut ColumnBuilder, a: &dyn Array) -> ConvertResult {
    macro_rules! ints {
        ($t:ty) => {{
            let p = a.as_primitive::<$t>();
            each(
                col,
                a,
                |i| p.value(i) as i128,
                |c, v| c.push_int(v),
                |v| format!("'{v}'"),
            )
        }};
    }
    macro_rules! strings {
        ($p:expr) => {{
            let p = $p;
            each(
                col,
                a,
                |i| p.value(i),
                |c, v| c.push_str(v),
                |v| format!("'{v}'"),
            )
        }};
    }
    match a.data_type() {
        DataType::Null => {
            for _ in 0..a.len() {
                col.push_null();
            }
            Ok(())
        }
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => ints!(UInt64Type),
        DataType::Float16 => {
            let p = a.as_primitive::<Float16Type>();
            each(
                col,
                a,
                |i| p.value(i).to_f64(),
                |c, v| c.push_float(v),
                |v| format!("'{v}'"),
            )
        }
        DataType::Float32 => {
            let p = a.as_primitive::<Float32Type>();
            each(
                col,
                a,
                |i| p.value(i) as f64,
                |c, v| c.push_float(v),
                |v| format!("'{v}'"),
            )
        }
        DataType::Float64 => {
            let p = a.as_primitive::<Float64Type>();
            each(
                col,
                a,
                |i| p.value(i),
                |c, v| c.push_float(v),
                |v| format!("'{v}'"),
            )
        }
        DataType::Boolean => {
            let p = a.as_boolean();
            each(
                col,
                a,
                |i| p.value(i),
                |c, v| c.push_bool(v),
                |v| format!("'{v}'"),
            )
        }
        DataType::Utf8 => strings!(a.as_string::<i32>()),
        DataType::LargeUtf8 => strings!(a.as_string::<i64>()),
        DataType::Utf8View => strings!(a.as_string_view()),
        DataType::Dictionary(_, v) if is_string(v) => convert_string_dictionary(col, a),
        DataType::Date32 => convert_date32(col, a),
        DataType::Date64 => convert_date64(col, a),
        DataType::Timestamp(unit, _) => convert_timestamp(col, a, unit),
        DataType::Duration(unit) => convert_duration(col, a, unit),
        DataType::Interval(IntervalUnit::MonthDayNano) => convert_interval(col, a),
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::FixedSizeList(..)
        | DataType::Struct(_)
        | DataType::Map(..)
            if matches!(
                col.ty(),
                LogicalType::List(_) | LogicalType::Struct(_) | LogicalType::Map(..)
            ) =>
        {
            convert_nested(col, a)
        }
        other => {
            if a.is_empty() {
                return Ok(());
            }
            Err((0, format!("a value of Arrow type {other}")))
        }
    }
}

/// Pushes `get(i)` for every row `i` of `a` (NULL where `a` is null) with
/// `push`; a value `push` refuses fails the conversion, rendered by `show`.
fn each<T>(
    col: &mut ColumnBuilder,
    a: &dyn Array,
    get: impl Fn(usize) -> T,
    mut push: impl FnMut(&mut ColumnBuilder, T) -> std::result::Result<(), FieldError>,
    show: impl Fn(&T) -> String,
) -> ConvertResult {
    if a.null_count() == 0 {
        for i in 0..a.len() {
            let v = get(i);
            if push(col, v).is_err() {
                return Err((i, show(&get(i))));
            }
        }
        return Ok(());
    }
    for i in 0..a.len() {
        if a.is_null(i) {
            col.push_null();
            continue;
        }
        let v = get(i);
        if push(col, v).is_err() {
            return Err((i, show(&get(i))));
        }
    }
    Ok(())
}

/// [`convert`] for a dictionary of strings.
fn convert_string_dictionary(col: &mut ColumnBuilder, a: &dyn Array) -> ConvertResult {
    // Categorical columns: each row's key indexes the string values.
    let d = a.as_any_dictionary();
    let keys = d.normalized_keys();
    let values = d.values();
    let value = |k: usize| -> &str {
        match values.data_type() {
            DataType::Utf8 => values.as_string::<i32>().value(k),
            DataType::LargeUtf8 => values.as_string::<i64>().value(k),
            _ => values.as_string_view().value(k),
        }
    };
    each(
        col,
        a,
        |i| value(keys[i]),
        |c, v| c.push_str(v),
        |v| format!("'{v}'"),
    )
}

/// [`convert`] for days since the epoch.
fn convert_date32(col: &mut ColumnBuilder, a: &dyn Array) -> ConvertResult {
    let p = a.as_primitive::<Date32Type>();
    each(
        col,
        a,
        |i| p.value(i) as i64,
        |c, v| c.push_date(v),
        |v| format!("'{}'", kith_common::Date(*v as i32)),
    )
}

/// [`convert`] for milliseconds since the epoch, as dates.
fn convert_date64(col: &mut ColumnBuilder, a: &dyn Array) -> ConvertResult {
    let p = a.as_primitive::<Date64Type>();
    each(
        col,
        a,
        |i| p.value(i).div_euclid(86_400_000),
        |c, v| c.push_date(v),
        |v| format!("date {v}"),
    )
}

/// [`convert`] for timestamps in `unit`, as microseconds (`None` where that
/// overflows).
fn convert_timestamp(col: &mut ColumnBuilder, a: &dyn Array, unit: &TimeUnit) -> ConvertResult {
    let ts = |c: &mut ColumnBuilder, v: Option<i64>| match v {
        Some(v) => c.push_timestamp(v),
        None => Err(FieldError::Convert),
    };
    let get: Box<dyn Fn(usize) -> Option<i64>> = match unit {
        TimeUnit::Second => {
            let p = a.as_primitive::<TimestampSecondType>();
            Box::new(move |i| p.value(i).checked_mul(1_000_000))
        }
        TimeUnit::Millisecond => {
            let p = a.as_primitive::<TimestampMillisecondType>();
            Box::new(move |i| p.value(i).checked_mul(1_000))
        }
        TimeUnit::Microsecond => {
            let p = a.as_primitive::<TimestampMicrosecondType>();
            Box::new(move |i| Some(p.value(i)))
        }
        TimeUnit::Nanosecond => {
            let p = a.as_primitive::<TimestampNanosecondType>();
            Box::new(move |i| Some(p.value(i).div_euclid(1_000)))
        }
    };
    each(col, a, get, ts, |v| match v {
        Some(v) => format!("'{}'", kith_common::Timestamp(*v)),
        None => "an out-of-range timestamp".to_string(),
    })
}

/// [`convert`] for durations in `unit`, as intervals (see [`duration_interval`]).
fn convert_duration(col: &mut ColumnBuilder, a: &dyn Array, unit: &TimeUnit) -> ConvertResult {
    let dur = |c: &mut ColumnBuilder, v: Option<i64>| match v {
        Some(v) => c.push_interval(duration_interval(v)),
        None => Err(FieldError::Convert),
    };
    let show_dur = |v: &Option<i64>| match v {
        Some(v) => format!("'{}'", duration_interval(*v)),
        None => "an out-of-range duration".to_string(),
    };
    let get: Box<dyn Fn(usize) -> Option<i64>> = match unit {
        TimeUnit::Second => {
            let p = a.as_primitive::<DurationSecondType>();
            Box::new(move |i| p.value(i).checked_mul(1_000_000))
        }
        TimeUnit::Millisecond => {
            let p = a.as_primitive::<DurationMillisecondType>();
            Box::new(move |i| p.value(i).checked_mul(1_000))
        }
        TimeUnit::Microsecond => {
            let p = a.as_primitive::<DurationMicrosecondType>();
            Box::new(move |i| Some(p.value(i)))
        }
        TimeUnit::Nanosecond => {
            let p = a.as_primitive::<DurationNanosecondType>();
            Box::new(move |i| Some(p.value(i).div_euclid(1_000)))
        }
    };
    each(col, a, get, dur, show_dur)
}

/// [`convert`] for month-day-nanosecond intervals (nanoseconds truncated to
/// microseconds).
fn convert_interval(col: &mut ColumnBuilder, a: &dyn Array) -> ConvertResult {
    let p = a.as_primitive::<IntervalMonthDayNanoType>();
    each(
        col,
        a,
        |i| {
            let v = p.value(i);
            Interval {
                months: v.months,
                days: v.days,
                micros: v.nanoseconds.div_euclid(1_000),
            }
        },
        |c, v| c.push_interval(v),
        |v| format!("'{v}'"),
    )
}

/// [`convert`] for lists, structs and maps into a nested column.
fn convert_nested(col: &mut ColumnBuilder, a: &dyn Array) -> ConvertResult {
    let ty = col.ty().clone();
    for (i, v) in nested_values(a, &ty)?.into_iter().enumerate() {
        col.push_nested(v)
            .map_err(|_| (i, format!("a value of Arrow type {}", a.data_type())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        ArrayRef, DictionaryArray, DurationNanosecondArray, Float64Array, Int64Array, StringArray,
    };
    use arrow_schema::Field;
    use kith_common::Value;

    fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = cols
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            cols.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap()
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn morsels_slice_batches_and_number_rows() {
        let b1 = batch(vec![(
            "id",
            Arc::new(Int64Array::from_iter_values(0..5)) as ArrayRef,
        )]);
        let b2 = batch(vec![(
            "id",
            Arc::new(Int64Array::from_iter_values(5..7)) as ArrayRef,
        )]);
        let src = ArrowSource::with_morsel_rows("df", b1.schema(), vec![b1, b2], 2).unwrap();
        assert_eq!(src.num_rows(), 7);
        assert_eq!(src.num_morsels(), 4); // 2 + 2 + 1 | 2
        let types = [LogicalType::Int32];
        let n = names(&["id"]);
        let mut all = Vec::new();
        let mut lines = Vec::new();
        for m in 0..src.num_morsels() {
            let p = read_arrow_morsel(&src, m, &types, &n).unwrap();
            for r in 0..p.chunk.num_rows {
                all.push(p.chunk.row(r)[0].clone());
            }
            lines.extend(p.lines);
        }
        assert_eq!(all, (0..7).map(Value::Int32).collect::<Vec<_>>());
        assert_eq!(lines, (1..=7).collect::<Vec<u64>>());
    }

    #[test]
    fn errors_name_the_row_and_column() {
        let b = batch(vec![
            (
                "id",
                Arc::new(Int64Array::from(vec![1, 2, 300])) as ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
            ),
        ]);
        let src = ArrowSource::with_morsel_rows("df", b.schema(), vec![b], 2).unwrap();
        let types = [LogicalType::Int8, LogicalType::String];
        let n = names(&["id", "s"]);
        src.check_columns(&types, &n, "T").unwrap();
        read_arrow_morsel(&src, 0, &types, &n).unwrap();
        let e = read_arrow_morsel(&src, 1, &types, &n)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("df:3: column 1 (id): cannot convert '300' to INT8"),
            "{e}"
        );
        let e = src
            .check_columns(&[LogicalType::Int8], &names(&["id"]), "T")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has 2 columns, table T expects 1 (id)"), "{e}");
        let e = src
            .check_columns(&[LogicalType::Bool, LogicalType::String], &n, "T")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "column 1 ('id', Arrow type Int64) cannot be loaded into column 'id' of type BOOL"
            ),
            "{e}"
        );
    }

    #[test]
    fn dictionary_duration_null_and_float_columns() {
        let dict: DictionaryArray<arrow_array::types::Int8Type> =
            vec![Some("x"), None, Some("y"), Some("x")]
                .into_iter()
                .collect();
        let dur = DurationNanosecondArray::from(vec![
            Some(90_000_000_000_000),
            None,
            Some(-1_000),
            Some(0),
        ]);
        let nulls = arrow_array::NullArray::new(4);
        let f = Float64Array::from(vec![Some(1.5), Some(f64::NAN), None, Some(-0.0)]);
        let b = batch(vec![
            ("d", Arc::new(dict) as ArrayRef),
            ("t", Arc::new(dur) as ArrayRef),
            ("n", Arc::new(nulls) as ArrayRef),
            ("f", Arc::new(f) as ArrayRef),
        ]);
        let src = ArrowSource::new("df", b.schema(), vec![b]).unwrap();
        let types = [
            LogicalType::String,
            LogicalType::Interval,
            LogicalType::Int64,
            LogicalType::Double,
        ];
        let n = names(&["d", "t", "n", "f"]);
        src.check_columns(&types, &n, "T").unwrap();
        let p = read_arrow_morsel(&src, 0, &types, &n).unwrap();
        let rows: Vec<Vec<Value>> = (0..4).map(|r| p.chunk.row(r)).collect();
        assert_eq!(rows[0][0], Value::String("x".into()));
        assert_eq!(rows[1][0], Value::Null);
        assert_eq!(rows[3][0], Value::String("x".into()));
        assert_eq!(
            rows[0][1],
            Value::Interval(Interval {
                months: 0,
                days: 1,
                micros: 3_600_000_000
            })
        );
        assert_eq!(rows[1][1], Value::Null);
        assert_eq!(
            rows[2][1],
            Value::Interval(Interval {
                months: 0,
                days: -1,
                micros: MICROS_PER_DAY - 1
            })
        );
        assert!(rows.iter().all(|r| r[2] == Value::Null));
        assert_eq!(rows[0][3], Value::Double(1.5));
        assert_eq!(rows[2][3], Value::Null);
    }

    #[test]
    fn mismatched_batches_are_rejected() {
        let b1 = batch(vec![(
            "id",
            Arc::new(Int64Array::from(vec![1])) as ArrayRef,
        )]);
        let b2 = batch(vec![(
            "id",
            Arc::new(StringArray::from(vec!["1"])) as ArrayRef,
        )]);
        let e = ArrowSource::new("df", b1.schema(), vec![b1, b2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("record batch 2"), "{e}");
    }
}
