//! Input readers for `COPY FROM`: CSV and Parquet files and in-memory Arrow
//! record batches ([`ArrowSource`]) turned into typed
//! columnar [`Chunk`](kith_common::Chunk)s, one morsel at a time.
//!
//! The executor plans a file ([`plan_csv`], [`plan_parquet`]), parses the
//! morsels in parallel ([`parse_csv_morsel`], [`read_parquet_morsel`]) and hands
//! the chunks to the loader in morsel order. Conversion errors name the file,
//! the line (CSV) or row (Parquet), and the column.

pub mod arrow_source;
mod column;
pub mod csv;
mod nested_literal;
pub mod parquet;

pub use crate::arrow_source::{read_arrow_morsel, ArrowSource};
pub use crate::csv::{parse_csv_morsel, plan_csv, write_csv, CsvOptions, CsvPlan, ParsedMorsel};
pub use crate::parquet::{plan_parquet, read_parquet_morsel, write_parquet, ParquetPlan};
