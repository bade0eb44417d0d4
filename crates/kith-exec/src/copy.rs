//! COPY FROM: plans the input files (or in-memory Arrow batches, for
//! `COPY T FROM df` from Python) into morsels, parses them in parallel on the
//! scheduler (kith-io), and hands the chunks in input order to the storage
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
    Arrow(Arc<ArrowSource>),
}

impl FilePlan {
    fn num_morsels(&self) -> usize {
        match self {
            FilePlan::Csv(p) => p.num_morsels(),
            FilePlan::Parquet(p) => p.num_morsels(),
            FilePlan::Arrow(p) => p.num_morsels(),
        }
    }
}

// Re-exported so that the facade can hand Arrow batches to COPY without a
// direct arrow dependency of its own.
pub use kith_io::arrow_source::{RecordBatch, Schema, SchemaRef};
pub use kith_io::ArrowSource;

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
    let csv_options = CsvOptions::from_options(&copy.options)?;
    copy_inputs(
        storage,
        sched,
        threads,
        cancel,
        copy,
        progress,
        |table, names, _types| {
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
            Ok(plans)
        },
    )
}

/// Runs `COPY table FROM <in-memory Arrow batches>` (`copy.files` is ignored):
/// the same column mapping (by position; `from`, `to` first for rel tables),
/// conversions, key checks and all-or-nothing commit as a file COPY. Returns
/// the number of rows loaded.
pub fn copy_from_arrow(
    storage: &Storage,
    sched: &Scheduler,
    threads: usize,
    cancel: &CancelToken,
    copy: &BoundCopy,
    source: Arc<ArrowSource>,
    progress: Option<ProgressFn>,
) -> Result<u64> {
    if let Some((key, _)) = copy.options.first() {
        return Err(Error::copy(format!(
            "COPY from {} takes no options (got {key})",
            source.source()
        )));
    }
    copy_inputs(
        storage,
        sched,
        threads,
        cancel,
        copy,
        progress,
        |table, names, types| {
            source.check_columns(types, names, &table.name)?;
            Ok(vec![FilePlan::Arrow(source)])
        },
    )
}

/// Plans the inputs with `plan` (given the table and the columns it expects),
/// converts their morsels in parallel and loads them in one write transaction.
fn copy_inputs(
    storage: &Storage,
    sched: &Scheduler,
    threads: usize,
    cancel: &CancelToken,
    copy: &BoundCopy,
    progress: Option<ProgressFn>,
    plan: impl FnOnce(&TableEntry, &[String], &[LogicalType]) -> Result<Vec<FilePlan>>,
) -> Result<u64> {
    let mut txn = storage.begin_write()?;
    let table = txn
        .catalog
        .table(copy.table)
        .cloned()
        .ok_or_else(|| Error::catalog("the table of this COPY was dropped"))?;
    let (names, types) = input_columns(&txn.catalog, &table)?;
    let plans = plan(&table, &names, &types)?;

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
        // The workers see the inputs through a weak reference that they
        // upgrade per morsel, so that once the map returns this thread holds
        // the only strong one and the inputs are dropped here, on the
        // caller's thread, even if a worker drops its copy of the job later
        // (in-memory Arrow batches may belong to a Python object whose
        // release wants the caller's interpreter lock).
        let (plans, index, names, types) = (
            Arc::downgrade(&plans),
            Arc::clone(&index),
            Arc::clone(&names),
            Arc::clone(&types),
        );
        let progress = progress.clone();
        let done = Arc::clone(&done);
        sched.parallel_map(threads, cancel, index.len(), move |i| {
            let (f, m) = index[i];
            let plans = plans
                .upgrade()
                .ok_or_else(|| Error::internal("COPY inputs dropped while in use"))?;
            let out = match &plans[f] {
                FilePlan::Csv(p) => (
                    kith_io::parse_csv_morsel(p, m, &types, &names)?,
                    Arc::clone(p.source()),
                ),
                FilePlan::Parquet(p) => (
                    kith_io::read_parquet_morsel(p, m, &types, &names)?,
                    Arc::clone(p.source()),
                ),
                FilePlan::Arrow(p) => (
                    kith_io::read_arrow_morsel(p, m, &types, &names)?,
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
    // Release the inputs (file maps, Arrow batches) before loading.
    drop(plans);
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
