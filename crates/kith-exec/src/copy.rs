//! COPY FROM: plans the input files into morsels, parses them in parallel on
//! the scheduler (kith-io), and hands the chunks in input order to the storage
//! loader inside one write transaction. Nothing is visible until the commit,
//! so any error leaves the database exactly as it was.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kith_catalog::{TableEntry, TableKind};
use kith_common::constants::COPY_MORSEL_BYTES;
use kith_common::{Error, LogicalType, Result, Value};
use kith_io::{CsvOptions, ParsedMorsel};
use kith_planner::bound::BoundCopy;
use kith_sched::{CancelToken, Scheduler};
use kith_storage::{load_nodes, load_rels, LoadChunk, LoadContext, Storage};

/// Progress callback: (bytes or rows done, total).
pub type ProgressFn = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// The columns a file must provide for `table`, in order.
fn input_columns(
    storage_catalog: &kith_catalog::Catalog,
    table: &TableEntry,
) -> Result<(Vec<String>, Vec<LogicalType>)> {
    let mut names = Vec::new();
    let mut types = Vec::new();
    if let TableKind::Rel(info) = &table.kind {
        for (label, end) in [("from", info.src), ("to", info.dst)] {
            let pk = storage_catalog
                .table(end)
                .and_then(|t| t.primary_key())
                .ok_or_else(|| Error::internal("rel endpoint table without a primary key"))?;
            names.push(label.to_string());
            types.push(pk.ty.clone());
        }
    }
    for p in &table.properties {
        names.push(p.name.clone());
        types.push(p.ty.clone());
    }
    Ok((names, types))
}

enum FilePlan {
    Csv(Arc<kith_io::CsvPlan>),
    Parquet(Arc<kith_io::ParquetPlan>),
}

impl FilePlan {
    fn num_morsels(&self) -> usize {
        match self {
            FilePlan::Csv(p) => p.num_morsels(),
            FilePlan::Parquet(p) => p.num_morsels(),
        }
    }
}

fn is_parquet(path: &str) -> bool {
    Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// Runs `COPY table FROM files`; returns the number of rows loaded.
pub fn copy_from(
    storage: &Storage,
    sched: &Scheduler,
    threads: usize,
    cancel: &CancelToken,
    copy: &BoundCopy,
    progress: Option<ProgressFn>,
) -> Result<u64> {
    let mut txn = storage.begin_write()?;
    let table = txn
        .catalog
        .table(copy.table)
        .cloned()
        .ok_or_else(|| Error::catalog("the table of this COPY was dropped"))?;
    let (names, types) = input_columns(&txn.catalog, &table)?;
    let csv_options = CsvOptions::from_options(&copy.options)?;

    let mut plans = Vec::new();
    for file in &copy.files {
        if is_parquet(file) {
            let plan = kith_io::plan_parquet(Path::new(file))?;
            let got = plan.column_names();
            if got.len() != names.len() {
                return Err(Error::copy(format!(
                    "{}: has {} columns, table {} expects {} ({})",
                    plan.source(),
                    got.len(),
                    table.name,
                    names.len(),
                    names.join(", ")
                )));
            }
            plans.push(FilePlan::Parquet(Arc::new(plan)));
        } else {
            let plan = kith_io::plan_csv(Path::new(file), &csv_options, COPY_MORSEL_BYTES)?;
            if let Some(header) = plan.header() {
                if header.len() != names.len() {
                    return Err(Error::copy(format!(
                        "{}:1: the header has {} columns, table {} expects {} ({})",
                        plan.source(),
                        header.len(),
                        table.name,
                        names.len(),
                        names.join(", ")
                    )));
                }
            }
            plans.push(FilePlan::Csv(Arc::new(plan)));
        }
    }

    // Parse every morsel of every file in parallel, keeping input order.
    let mut index: Vec<(usize, usize)> = Vec::new();
    for (f, plan) in plans.iter().enumerate() {
        index.extend((0..plan.num_morsels()).map(|m| (f, m)));
    }
    let total = index.len() as u64;
    let done = Arc::new(AtomicU64::new(0));
    let plans = Arc::new(plans);
    let index = Arc::new(index);
    let names = Arc::new(names);
    let types = Arc::new(types);
    let parsed: Vec<(ParsedMorsel, Arc<str>)> = {
        let (plans, index, names, types) = (
            Arc::clone(&plans),
            Arc::clone(&index),
            Arc::clone(&names),
            Arc::clone(&types),
        );
        let progress = progress.clone();
        let done = Arc::clone(&done);
        sched.parallel_map(threads, cancel, index.len(), move |i| {
            let (f, m) = index[i];
            let out = match &plans[f] {
                FilePlan::Csv(p) => (
                    kith_io::parse_csv_morsel(p, m, &types, &names)?,
                    Arc::clone(p.source()),
                ),
                FilePlan::Parquet(p) => (
                    kith_io::read_parquet_morsel(p, m, &types, &names)?,
                    Arc::clone(p.source()),
                ),
            };
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            if let Some(cb) = &progress {
                cb(d, total);
            }
            Ok(out)
        })?
    };
    let input: Vec<LoadChunk> = parsed
        .into_iter()
        .map(|(m, source)| LoadChunk {
            chunk: m.chunk,
            lines: m.lines,
            source,
        })
        .collect();
    let ctx = LoadContext {
        sched,
        threads,
        cancel,
    };
    let rows = match &table.kind {
        TableKind::Node(_) => load_nodes(&mut txn, &ctx, &table, input)?,
        TableKind::Rel(_) => load_rels(&mut txn, &ctx, &table, input)?,
    };
    cancel.check()?;
    txn.commit()?;
    Ok(rows)
}

/// The message COPY returns, as a one-row result.
pub fn copy_message(rows: u64, table: &str) -> Value {
    Value::String(format!(
        "{rows} tuples have been copied to the {table} table."
    ))
}
