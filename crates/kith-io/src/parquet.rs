//! Parquet reading (one morsel per row group) and writing.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, RecordBatch, StringArray, TimestampMicrosecondArray, UInt16Array,
    UInt32Array, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use kith_common::{Chunk, Error, LogicalType, Result, VectorData};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::arrow_source::{append_batch, logical_type};
use crate::column::ColumnBuilder;
use crate::csv::{check_types, display_name, open_error, ParsedMorsel};

/// A Parquet file: its schema and row groups.
#[derive(Debug)]
pub struct ParquetPlan {
    path: PathBuf,
    source: Arc<str>,
    schema: SchemaRef,
    /// First row (0-based) of each row group, plus the total at the end.
    row_starts: Vec<u64>,
}

fn parquet_error(source: &str, e: impl std::fmt::Display) -> Error {
    Error::copy(format!("{source}: cannot read Parquet file: {e}"))
}

fn open(path: &Path, source: &str) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let file = File::open(path).map_err(|e| open_error(path, &e))?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| parquet_error(source, e))
}

/// Reads the footer of `path`.
pub fn plan_parquet(path: &Path) -> Result<ParquetPlan> {
    let source = display_name(path);
    let builder = open(path, &source)?;
    let mut row_starts = vec![0u64];
    for rg in builder.metadata().row_groups() {
        let last = *row_starts.last().unwrap_or(&0);
        row_starts.push(last + rg.num_rows().max(0) as u64);
    }
    Ok(ParquetPlan {
        path: path.to_path_buf(),
        schema: builder.schema().clone(),
        source,
        row_starts,
    })
}

impl ParquetPlan {
    pub fn num_morsels(&self) -> usize {
        self.row_starts.len() - 1
    }

    pub fn num_rows(&self) -> u64 {
        *self.row_starts.last().unwrap_or(&0)
    }

    pub fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// Default KithDB type of each column (`ANY` for types that cannot be read).
    pub fn column_types(&self) -> Vec<LogicalType> {
        self.schema
            .fields()
            .iter()
            .map(|f| logical_type(f.data_type()))
            .collect()
    }

    pub fn source(&self) -> &Arc<str> {
        &self.source
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads row group `morsel` into a chunk of `types` (one per Parquet column, in
/// order); `lines` are 1-based row numbers within the file.
pub fn read_parquet_morsel(
    plan: &ParquetPlan,
    morsel: usize,
    types: &[LogicalType],
    names: &[String],
) -> Result<ParsedMorsel> {
    check_types(types, names)?;
    let source: &str = &plan.source;
    let ncols = plan.schema.fields().len();
    if types.len() != ncols {
        return Err(Error::copy(format!(
            "{source}: expected {} columns, found {ncols}",
            types.len()
        )));
    }
    let first = plan.row_starts[morsel];
    let rows = (plan.row_starts[morsel + 1] - first) as usize;
    let reader = open(&plan.path, source)?
        .with_row_groups(vec![morsel])
        .with_batch_size(rows.clamp(1, 1 << 16))
        .build()
        .map_err(|e| parquet_error(source, e))?;
    let mut cols: Vec<ColumnBuilder> = types.iter().map(|t| ColumnBuilder::new(t, rows)).collect();
    let mut row = first;
    for batch in reader {
        let batch = batch.map_err(|e| parquet_error(source, e))?;
        append_batch(&mut cols, &batch, row, source, types, names)?;
        row += batch.num_rows() as u64;
    }
    let num_rows = (row - first) as usize;
    Ok(ParsedMorsel {
        chunk: Chunk {
            columns: cols.into_iter().map(ColumnBuilder::finish).collect(),
            num_rows,
        },
        lines: (first + 1..=row).collect(),
    })
}

fn arrow_type(ty: &LogicalType) -> Result<DataType> {
    Ok(match ty {
        LogicalType::Bool => DataType::Boolean,
        LogicalType::Int8 => DataType::Int8,
        LogicalType::Int16 => DataType::Int16,
        LogicalType::Int32 => DataType::Int32,
        LogicalType::Int64 => DataType::Int64,
        LogicalType::UInt8 => DataType::UInt8,
        LogicalType::UInt16 => DataType::UInt16,
        LogicalType::UInt32 => DataType::UInt32,
        LogicalType::UInt64 => DataType::UInt64,
        LogicalType::Float => DataType::Float32,
        LogicalType::Double => DataType::Float64,
        // Intervals are written as text (read back with `Interval::parse`).
        LogicalType::String | LogicalType::Interval => DataType::Utf8,
        LogicalType::Date => DataType::Date32,
        LogicalType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        other => {
            return Err(Error::not_supported(format!(
                "cannot write a {other} column to Parquet"
            )))
        }
    })
}

fn to_arrow(col: &kith_common::ValueVector, n: usize) -> Result<ArrayRef> {
    macro_rules! prim {
        ($arr:ty, $v:expr) => {
            Arc::new(<$arr>::from_iter(
                (0..n).map(|i| (!col.is_null(i)).then(|| $v[i])),
            )) as ArrayRef
        };
    }
    Ok(match (&col.data, &col.ty) {
        (VectorData::Bool(v), _) => prim!(BooleanArray, v),
        (VectorData::I8(v), _) => prim!(Int8Array, v),
        (VectorData::I16(v), _) => prim!(Int16Array, v),
        (VectorData::I32(v), LogicalType::Date) => prim!(Date32Array, v),
        (VectorData::I32(v), _) => prim!(Int32Array, v),
        (VectorData::I64(v), LogicalType::Timestamp) => prim!(TimestampMicrosecondArray, v),
        (VectorData::I64(v), _) => prim!(Int64Array, v),
        (VectorData::U8(v), _) => prim!(UInt8Array, v),
        (VectorData::U16(v), _) => prim!(UInt16Array, v),
        (VectorData::U32(v), _) => prim!(UInt32Array, v),
        (VectorData::U64(v), _) => prim!(UInt64Array, v),
        (VectorData::F32(v), _) => prim!(Float32Array, v),
        (VectorData::F64(v), _) => prim!(Float64Array, v),
        (VectorData::Str(s), _) => Arc::new(StringArray::from_iter(
            (0..n).map(|i| (!col.is_null(i)).then(|| s.get(i))),
        )),
        (VectorData::Interval(v), _) => Arc::new(StringArray::from_iter(
            (0..n).map(|i| (!col.is_null(i)).then(|| v[i].to_string())),
        )),
        _ => {
            return Err(Error::not_supported(format!(
                "cannot write a {} column to Parquet",
                col.ty
            )))
        }
    })
}

/// Writes `chunks` to a Snappy-compressed Parquet file, one row group per
/// chunk; column types come from the chunks' vectors.
pub fn write_parquet(path: &Path, names: &[String], chunks: &[Chunk]) -> Result<()> {
    let Some(first) = chunks.first() else {
        return Err(Error::copy("write_parquet needs at least one chunk"));
    };
    if first.columns.len() != names.len() {
        return Err(Error::copy(format!(
            "write_parquet: {} names for {} columns",
            names.len(),
            first.columns.len()
        )));
    }
    let fields = names
        .iter()
        .zip(&first.columns)
        .map(|(n, c)| Ok(Field::new(n, arrow_type(&c.ty)?, true)))
        .collect::<Result<Vec<_>>>()?;
    let schema = Arc::new(Schema::new(fields));
    let source = display_name(path);
    let file = File::create(path).map_err(|e| open_error(path, &e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(usize::MAX))
        .build();
    let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props))
        .map_err(|e| parquet_error(&source, e))?;
    for chunk in chunks {
        let arrays = chunk
            .columns
            .iter()
            .map(|c| to_arrow(c, chunk.num_rows))
            .collect::<Result<Vec<_>>>()?;
        let batch =
            RecordBatch::try_new(schema.clone(), arrays).map_err(|e| parquet_error(&source, e))?;
        w.write(&batch).map_err(|e| parquet_error(&source, e))?;
        w.flush().map_err(|e| parquet_error(&source, e))?;
    }
    w.close().map_err(|e| parquet_error(&source, e))?;
    Ok(())
}
