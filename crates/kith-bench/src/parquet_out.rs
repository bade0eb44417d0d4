//! Parquet copies of the generated CSV files (`gen ... --format parquet|both`).
//!
//! Every generator writes CSV first (its chunked, thread-count-independent
//! writer); each file is then re-read and written as Snappy-compressed
//! Parquet with the column types of the suites' DDL, in row groups of
//! [`ROW_GROUP`] rows (KithDB and Kùzu both read one row group per morsel,
//! so loads can run in parallel). The generated CSV has no quoting, so a
//! line is split on commas; an empty field is NULL.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::builder::{
    Date32Builder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

/// Rows per Parquet row group.
pub const ROW_GROUP: usize = 1 << 17;
/// Rows per record batch handed to the writer.
const BATCH: usize = 1 << 16;

/// Column type of a generated file, as declared in the suite's DDL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    I64,
    I32,
    F64,
    Str,
    /// `YYYY-MM-DD`, written as Parquet DATE (days since 1970-01-01).
    Date,
    /// `YYYY-MM-DD HH:MM:SS[.ffffff]`, written as TIMESTAMP(MICROS).
    Timestamp,
}

impl Col {
    fn arrow(self) -> DataType {
        match self {
            Col::I64 => DataType::Int64,
            Col::I32 => DataType::Int32,
            Col::F64 => DataType::Float64,
            Col::Str => DataType::Utf8,
            Col::Date => DataType::Date32,
            Col::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        }
    }
}

/// One generated file: its name without extension and its columns.
#[derive(Clone, Copy, Debug)]
pub struct FileSpec {
    pub stem: &'static str,
    pub columns: &'static [(&'static str, Col)],
}

/// Which files `gen` leaves in the output directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    Csv,
    Parquet,
    Both,
}

impl OutFormat {
    pub fn parse(s: &str) -> Option<OutFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "csv" => Some(OutFormat::Csv),
            "parquet" => Some(OutFormat::Parquet),
            "both" => Some(OutFormat::Both),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            OutFormat::Csv => "csv",
            OutFormat::Parquet => "parquet",
            OutFormat::Both => "both",
        }
    }
    pub fn has_csv(self) -> bool {
        self != OutFormat::Parquet
    }
    pub fn has_parquet(self) -> bool {
        self != OutFormat::Csv
    }
}

enum Builder {
    I64(Int64Builder),
    I32(Int32Builder),
    F64(Float64Builder),
    Str(StringBuilder),
    Date(Date32Builder),
    Ts(TimestampMicrosecondBuilder),
}

impl Builder {
    fn new(c: Col) -> Builder {
        match c {
            Col::I64 => Builder::I64(Int64Builder::with_capacity(BATCH)),
            Col::I32 => Builder::I32(Int32Builder::with_capacity(BATCH)),
            Col::F64 => Builder::F64(Float64Builder::with_capacity(BATCH)),
            Col::Str => Builder::Str(StringBuilder::with_capacity(BATCH, BATCH * 16)),
            Col::Date => Builder::Date(Date32Builder::with_capacity(BATCH)),
            Col::Timestamp => Builder::Ts(TimestampMicrosecondBuilder::with_capacity(BATCH)),
        }
    }

    /// Appends `text` (NULL when empty); `Err` says why it does not parse.
    fn push(&mut self, text: &str) -> Result<(), String> {
        let bad = |what: &str| format!("{text:?} is not {what}");
        if text.is_empty() {
            match self {
                Builder::I64(b) => b.append_null(),
                Builder::I32(b) => b.append_null(),
                Builder::F64(b) => b.append_null(),
                Builder::Str(b) => b.append_null(),
                Builder::Date(b) => b.append_null(),
                Builder::Ts(b) => b.append_null(),
            }
            return Ok(());
        }
        match self {
            Builder::I64(b) => b.append_value(text.parse().map_err(|_| bad("an INT64"))?),
            Builder::I32(b) => b.append_value(text.parse().map_err(|_| bad("an INT32"))?),
            Builder::F64(b) => b.append_value(text.parse().map_err(|_| bad("a DOUBLE"))?),
            Builder::Str(b) => b.append_value(text),
            Builder::Date(b) => b.append_value(
                parse_date(text)
                    .and_then(|d| i32::try_from(d).ok())
                    .ok_or_else(|| bad("a date YYYY-MM-DD"))?,
            ),
            Builder::Ts(b) => b.append_value(
                parse_timestamp(text).ok_or_else(|| bad("a timestamp YYYY-MM-DD HH:MM:SS"))?,
            ),
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::Date(b) => Arc::new(b.finish()),
            Builder::Ts(b) => Arc::new(b.finish()),
        }
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d`.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // 0..=399
    let mp = (m as i64 + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn num<T: std::str::FromStr>(s: Option<&str>) -> Option<T> {
    s.filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
}

/// `YYYY-MM-DD` → days since 1970-01-01.
pub fn parse_date(s: &str) -> Option<i64> {
    let mut it = s.splitn(3, '-');
    let y: i64 = num(it.next())?;
    let m: u32 = num(it.next())?;
    let d: u32 = num(it.next())?;
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| days_from_civil(y, m, d))
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (or with `T`) → microseconds since the epoch.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let (date, time) = s.split_once([' ', 'T'])?;
    let days = parse_date(date)?;
    let (hms, frac) = match time.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (time, None),
    };
    let mut it = hms.splitn(3, ':');
    let h: i64 = num(it.next())?;
    let mi: i64 = num(it.next())?;
    let sec: i64 = num(it.next())?;
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let micros = match frac {
        None => 0,
        Some(f) if !f.is_empty() && f.len() <= 6 && f.bytes().all(|b| b.is_ascii_digit()) => {
            f.parse::<i64>().ok()? * 10i64.pow(6 - f.len() as u32)
        }
        Some(_) => return None,
    };
    Some(((days * 24 + h) * 60 + mi) * 60_000_000 + sec * 1_000_000 + micros)
}

fn err(path: &Path, msg: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{}: {msg}", path.display()))
}

fn flush_batch(
    w: &mut ArrowWriter<File>,
    schema: &SchemaRef,
    builders: &mut [Builder],
    out: &Path,
) -> io::Result<()> {
    let cols: Vec<ArrayRef> = builders.iter_mut().map(Builder::finish).collect();
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|e| err(out, e))?;
    w.write(&batch).map_err(|e| err(out, e))
}

/// Converts the CSV file `csv` (header line first) to the Parquet file
/// `out` with the columns of `spec`. Returns the number of data rows.
pub fn csv_to_parquet(csv: &Path, out: &Path, spec: &FileSpec) -> io::Result<u64> {
    let mut r = BufReader::with_capacity(1 << 20, File::open(csv).map_err(|e| err(csv, e))?);
    let fields: Vec<Field> = spec
        .columns
        .iter()
        .map(|(n, c)| Field::new(*n, c.arrow(), true))
        .collect();
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_dictionary_enabled(false);
    for (n, c) in spec.columns {
        if *c == Col::Str {
            props = props.set_column_dictionary_enabled(ColumnPath::from(*n), true);
        }
    }
    let file = File::create(out).map_err(|e| err(out, e))?;
    let mut w =
        ArrowWriter::try_new(file, schema.clone(), Some(props.build())).map_err(|e| err(out, e))?;
    let mut builders: Vec<Builder> = spec.columns.iter().map(|(_, c)| Builder::new(*c)).collect();
    let mut line = String::new();
    let mut line_no = 0u64;
    let mut rows = 0u64;
    let mut in_batch = 0usize;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(|e| err(csv, e))? == 0 {
            break;
        }
        line_no += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        let n_fields = text.split(',').count();
        if n_fields != spec.columns.len() {
            return Err(err(
                csv,
                format!(
                    "line {line_no}: {n_fields} fields, expected {} ({})",
                    spec.columns.len(),
                    spec.columns
                        .iter()
                        .map(|c| c.0)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            ));
        }
        if line_no == 1 {
            continue; // header
        }
        for ((b, f), (name, _)) in builders.iter_mut().zip(text.split(',')).zip(spec.columns) {
            b.push(f)
                .map_err(|m| err(csv, format!("line {line_no}, column {name}: {m}")))?;
        }
        rows += 1;
        in_batch += 1;
        if in_batch == BATCH {
            flush_batch(&mut w, &schema, &mut builders, out)?;
            in_batch = 0;
        }
    }
    if line_no == 0 {
        return Err(err(csv, "empty file (no header line)"));
    }
    if in_batch > 0 || rows == 0 {
        flush_batch(&mut w, &schema, &mut builders, out)?;
    }
    w.close().map_err(|e| err(out, e))?;
    Ok(rows)
}

/// Writes `<stem>.parquet` next to `<stem>.csv` for every file of `files`
/// in `dir`, on up to `threads` threads (one file each); removes the CSV
/// files unless `keep_csv`. Returns the bytes of Parquet written.
pub fn convert_dir(
    dir: &Path,
    files: &[FileSpec],
    threads: usize,
    keep_csv: bool,
) -> io::Result<u64> {
    let next = AtomicUsize::new(0);
    let result: Mutex<io::Result<u64>> = Mutex::new(Ok(0));
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, files.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = files.get(i) else { break };
                let csv = dir.join(format!("{}.csv", spec.stem));
                let pq: PathBuf = dir.join(format!("{}.parquet", spec.stem));
                let r = csv_to_parquet(&csv, &pq, spec)
                    .and_then(|_| std::fs::metadata(&pq).map(|m| m.len()))
                    .and_then(|len| {
                        if !keep_csv {
                            std::fs::remove_file(&csv).map_err(|e| err(&csv, e))?;
                        }
                        Ok(len)
                    });
                let mut acc = result.lock().unwrap_or_else(|p| p.into_inner());
                match (&mut *acc, r) {
                    (Ok(total), Ok(len)) => *total += len,
                    (Ok(_), Err(e)) => *acc = Err(e),
                    (Err(_), _) => {}
                }
            });
        }
    });
    result.into_inner().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Date32Array, Float64Array, Int32Array, Int64Array, StringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    #[test]
    fn dates_and_timestamps() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2000-03-01"), Some(11_017));
        assert_eq!(parse_date("1969-12-31"), Some(-1));
        assert_eq!(parse_date("2024-13-01"), None);
        assert_eq!(parse_date("x"), None);
        assert_eq!(parse_timestamp("1970-01-02 00:00:01"), Some(86_401_000_000));
        assert_eq!(parse_timestamp("1970-01-01 00:00:00.5"), Some(500_000));
        assert_eq!(parse_timestamp("1970-01-01"), None);
        // Inverse of the social generator's date formatting.
        for z in [-7_000i64, -1, 0, 1, 59, 60, 11_016, 20_000] {
            let (y, m, d) = crate::social::civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z, "{y}-{m}-{d}");
        }
    }

    #[test]
    fn round_trip_and_errors() {
        let dir = std::env::temp_dir().join(format!("kith-bench-pq-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        const COLS: &[(&str, Col)] = &[
            ("id", Col::I64),
            ("age", Col::I32),
            ("w", Col::F64),
            ("name", Col::Str),
            ("born", Col::Date),
            ("at", Col::Timestamp),
        ];
        let spec = FileSpec {
            stem: "t",
            columns: COLS,
        };
        let mut text = String::from("id,age,w,name,born,at\n");
        let n = 200_000u64; // more than one batch and one row group
        for i in 0..n {
            text.push_str(&format!(
                "{i},{},0.{:06},n{i},2001-02-03,2010-01-01 00:00:{:02}\n",
                i % 90,
                i % 1_000_000,
                i % 60
            ));
        }
        text.push_str("-5,,,,,\n");
        std::fs::write(dir.join("t.csv"), &text).unwrap();
        let bytes = convert_dir(&dir, &[spec], 2, false).unwrap();
        assert!(bytes > 0);
        let f = File::open(dir.join("t.parquet")).unwrap();
        let b = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
        assert_eq!(b.metadata().num_row_groups(), 2);
        let mut row = 0u64;
        for batch in b.build().unwrap() {
            let batch = batch.unwrap();
            let c = |i: usize| batch.column(i).clone();
            let id = c(0).as_any().downcast_ref::<Int64Array>().unwrap().clone();
            let age = c(1).as_any().downcast_ref::<Int32Array>().unwrap().clone();
            let w = c(2)
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone();
            let name = c(3).as_any().downcast_ref::<StringArray>().unwrap().clone();
            let born = c(4).as_any().downcast_ref::<Date32Array>().unwrap().clone();
            for j in 0..batch.num_rows() {
                if row == n {
                    assert_eq!(id.value(j), -5);
                    assert!(age.is_null(j) && w.is_null(j) && name.is_null(j));
                } else {
                    assert_eq!(id.value(j), row as i64);
                    assert_eq!(age.value(j), (row % 90) as i32);
                    let want: f64 = format!("0.{:06}", row % 1_000_000).parse().unwrap();
                    assert_eq!(w.value(j), want);
                    assert_eq!(name.value(j), format!("n{row}"));
                    assert_eq!(born.value(j), 11_356);
                }
                row += 1;
            }
        }
        assert_eq!(row, n + 1);
        assert!(!dir.join("t.csv").exists(), "CSV kept");

        std::fs::write(
            dir.join("t.csv"),
            "id,age,w,name,born,at\n1,2,x,a,2001-01-01,\n",
        )
        .unwrap();
        let e = convert_dir(&dir, &[spec], 1, true).unwrap_err().to_string();
        assert!(
            e.contains("line 2, column w") && e.contains("DOUBLE"),
            "{e}"
        );
        std::fs::write(dir.join("t.csv"), "id,age\n").unwrap();
        let e = convert_dir(&dir, &[spec], 1, true).unwrap_err().to_string();
        assert!(e.contains("line 1: 2 fields, expected 6"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
