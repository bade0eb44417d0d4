use std::path::PathBuf;

use kith_common::{Chunk, LogicalType, Value};
use kith_io::{plan_parquet, read_parquet_morsel, write_parquet};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kith-io-pq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn chunk(types: &[LogicalType], rows: &[Vec<Value>]) -> Chunk {
    let mut c = Chunk::new(types, 0);
    for r in rows {
        for (i, v) in r.iter().enumerate() {
            c.columns[i].push_value(v);
        }
        c.num_rows += 1;
    }
    c
}

fn row(i: i64) -> Vec<Value> {
    if i % 4 == 3 {
        return vec![Value::Null; 15];
    }
    vec![
        Value::Bool(i % 2 == 0),
        Value::Int8(i as i8),
        Value::Int16(-(i as i16)),
        Value::Int32(i as i32 * 1000),
        Value::Int64(i * 1_000_000_007),
        Value::UInt8(i as u8),
        Value::UInt16(i as u16),
        Value::UInt32(i as u32),
        Value::UInt64(u64::MAX - i as u64),
        Value::Float(i as f32 / 2.0),
        Value::Double(i as f64 / 3.0),
        Value::String(format!("s{i}")),
        Value::Date(kith_common::Date(i as i32 * 100 - 5000)),
        Value::Timestamp(kith_common::Timestamp(i * 86_400_000_123)),
        Value::Interval(kith_common::Interval {
            months: i as i32,
            days: 2,
            micros: 3_000_000,
        }),
    ]
}

#[test]
fn write_plan_read_round_trip_with_row_groups_and_nulls() {
    use LogicalType::*;
    let types = vec![
        Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float, Double, String,
        Date, Timestamp, Interval,
    ];
    let names: Vec<std::string::String> = (0..types.len()).map(|i| format!("c{i}")).collect();
    let groups: Vec<Vec<Vec<Value>>> = vec![
        (0..5).map(row).collect(),
        (5..6).map(row).collect(),
        (6..40).map(row).collect(),
    ];
    let chunks: Vec<Chunk> = groups.iter().map(|g| chunk(&types, g)).collect();
    let path = tmp("all.parquet");
    write_parquet(&path, &names, &chunks).unwrap();
    let plan = plan_parquet(&path).unwrap();
    assert_eq!(plan.num_morsels(), 3);
    assert_eq!(plan.column_names(), names);
    let mut file_types = types.clone();
    file_types[14] = String; // intervals are stored as text
    assert_eq!(plan.column_types(), file_types);
    let mut all = Vec::new();
    let mut lines = Vec::new();
    for m in 0..plan.num_morsels() {
        let p = read_parquet_morsel(&plan, m, &types, &names).unwrap();
        for r in 0..p.chunk.num_rows {
            all.push(p.chunk.row(r));
        }
        lines.extend(p.lines);
    }
    let want: Vec<Vec<Value>> = groups.into_iter().flatten().collect();
    assert_eq!(all, want);
    assert_eq!(lines, (1..=40).collect::<Vec<u64>>());
}

#[test]
fn conversions_and_errors() {
    use LogicalType::*;
    let names = vec!["big".to_string(), "when".to_string()];
    let rows = vec![
        vec![Value::Int64(5), Value::Date(kith_common::Date(3))],
        vec![Value::Int64(300), Value::Null],
    ];
    let path = tmp("conv.parquet");
    write_parquet(&path, &names, &[chunk(&[Int64, Date], &rows)]).unwrap();
    let plan = plan_parquet(&path).unwrap();
    // Widening and date -> timestamp.
    let p = read_parquet_morsel(&plan, 0, &[Double, Timestamp], &names).unwrap();
    assert_eq!(
        p.chunk.row(0),
        vec![
            Value::Double(5.0),
            Value::Timestamp(kith_common::Timestamp(3 * 86_400_000_000))
        ]
    );
    let p = read_parquet_morsel(&plan, 0, &[Int16, Date], &names).unwrap();
    assert_eq!(p.chunk.row(1), vec![Value::Int16(300), Value::Null]);
    // Narrowing out of range names file, row and column.
    let e = read_parquet_morsel(&plan, 0, &[Int8, Date], &names).unwrap_err();
    assert_eq!(
        e.message,
        "conv.parquet:2: column 1 (big): cannot convert '300' to INT8"
    );
    let e = read_parquet_morsel(&plan, 0, &[Int64, Bool], &names).unwrap_err();
    assert_eq!(
        e.message,
        "conv.parquet:1: column 2 (when): cannot convert '1970-01-04' to BOOL"
    );
    let e = read_parquet_morsel(&plan, 0, &[Int64], &names).unwrap_err();
    assert!(
        e.message.contains("expected 1 columns, found 2"),
        "{}",
        e.message
    );
    let e = plan_parquet(std::path::Path::new("nope.parquet")).unwrap_err();
    assert_eq!(
        e.message,
        "cannot open 'nope.parquet': No such file or directory"
    );
}
