//! kith-bench: deterministic graph generators and a benchmark runner that
//! drives KithDB (in-process, through the `kith` facade, in a child process)
//! and Kùzu (through `bench/kuzu_driver.py`) with the same Cypher, and the
//! optional references DuckDB (SQL forms) and NetworKit (BFS forms of the
//! shortest-path queries, `networkit.rs`); and two suites that generate
//! their own data: `insert` (writes, `insert.rs`) and `processes` (several
//! processes on one database file, SQLite as a reference, `processes.rs`).

pub mod driver;
pub mod fastfmt;
pub mod gen;
pub mod insert;
pub mod json;
pub mod networkit;
pub mod nn50;
pub mod parquet_out;
pub mod processes;
pub mod report;
pub mod rng;
pub mod runner;
pub mod social;
pub mod suite;
pub mod sys;
pub mod worker;
