//! `kith-bench`: generate graphs, run benchmark suites, compare engines.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use kith_bench::driver::{Dialect, DriverSpawn, EngineKind};
use kith_bench::gen::{self, ErParams, Rmat, RmatParams};
use kith_bench::json;
use kith_bench::nn50::{self, Nn50Params};
use kith_bench::parquet_out::{self, OutFormat};
use kith_bench::social::{self, Social, SocialParams};
use kith_bench::suite::{Dataset, LoadFormat};
use kith_bench::{insert, processes, report, runner, suite, sys, worker};

const USAGE: &str = "\
kith-bench: graph generators and KithDB vs Kùzu benchmarks

USAGE:
  kith-bench gen rmat --scale S [--edge-factor 16] [--seed 42] [--noise 0]
                      [-a 0.57 -b 0.19 -c 0.19] [--gen-threads N] --out DIR
                      [--simple]  (drop self loops and duplicate edges)
  kith-bench gen er --nodes N --degree D [--seed 42] [--gen-threads N] --out DIR
  kith-bench gen social --persons N [--seed 42] [--knows-per-person 10]
                        [--gen-threads N] --out DIR
  kith-bench gen nn50 --nodes N [--k 50] [--gen-threads N] --out DIR
                      (seed 004: node n -> (n+k) mod N for k = 1..K)
  every gen also takes [--format csv|parquet|both] (default csv)
  kith-bench run --suites micro,recursive --data DIR [RUN OPTIONS]
  kith-bench all --suites micro,social [--scale 16] [--persons 10000] [--seed 42]
                 [--nodes 1000000 --k 50] [--er-nodes 65536 --er-degree 8]
                 [--format csv|parquet|both]
                 [--data DIR] [RUN OPTIONS]  (generates the data each suite needs
                                              unless present, then runs)
  kith-bench suites [--data DIR]                 (lists suites and their queries;
                                                  with DIR, bound to its parameters)
  kith-bench run --suites insert [--insert-scale 1] [RUN OPTIONS]
                 (issue 5 write benchmark, no data set needed; see INSERT OPTIONS)
  kith-bench run --suites processes [--proc-nodes 100000] [RUN OPTIONS]
                 (issue 53: several processes on one database file, SQLite WAL
                  as a reference; no data set needed; see PROCESSES OPTIONS)

RUN OPTIONS:
  --suites a,b             suites to run (also --suite; default foundation)
  --timeout 120            per-query limit in seconds (0 = none): the engine is
                           asked to stop; a driver silent for 2x+30 s is killed
                           and restarted, and the run goes on
  --quick                  smoke test: R-MAT scale 10 / 2000 persons / nn50 with
                           10000 nodes (for `all`),
                           0 warm-up, 1 run, --timeout 20 unless given
  --threads 1,2            thread counts (default 1,2)
  --runs 5                 timed runs per query (default 5)
  --warmup 1               warm-up runs per query (default 1)
  --engines kith,kuzu      engines (default kith,kuzu; add duckdb for the SQL
                           reference where a suite has SQL: foundation, micro, sq;
                           networkit for the BFS reference of recursive and
                           recursive-social's sp-count/sp-lengths (pip install
                           networkit; other queries are not run on it);
                           kith:1T1S, kith:nT1S, kith:nTkS, kith:nTkMS pin KithDB's
                           recursive dispatch policy and add a policy table)
  --load-format csv        load from the .csv or the .parquet files (default csv;
                           parquet when `all` is given --format parquet)
  --buffer-pool-mb 4096    buffer pool for every engine (0 = engine default)
  --json FILE              write results as JSON
  --markdown [FILE]        write the Markdown report to FILE (always printed to stdout)
  --python python3         interpreter for bench/kuzu_driver.py
  --kuzu-driver PATH       path of kuzu_driver.py (default bench/kuzu_driver.py)
  --duckdb-driver PATH     path of duckdb_driver.py (default bench/duckdb_driver.py)
  --networkit-driver PATH  path of networkit_driver.py (default bench/networkit_driver.py)
  --tmp-dir DIR            where the databases are created (default: system temp)
  --queries a,b            run only the queries whose name contains a or b
                           (a whole query name picks that query alone)

INSERT OPTIONS (suite `insert`; --timeout defaults to 600 s per statement there):
  --insert-rows 20000      rows of the single-row phases (--quick: 2000)
  --insert-max-s 5         auto-commit phase stops after this long
  --insert-per-tx 1000     rows per BEGIN TRANSACTION .. COMMIT in the batched phase
  --insert-scale 1         bulk size: scale x (1 M nodes + 10 M rels) (--quick: 0.01)
  --insert-rels N          bulk rels instead of scale x 10 M (0: nodes only)
  --insert-chunk 100000    rows per UNWIND statement in the bulk phase
  --insert-phases autocommit,batched,bulk (also rels-batched: bulk nodes, then
                           --insert-rows single-rel CREATEs by id, --insert-per-tx per
                           transaction, stopping after --insert-max-s;
                           rels-autocommit: COPY the bulk nodes and rels, then
                           single-rel CREATEs by id, one per transaction;
                           updates: the same COPY, then single-node SETs,
                           single-rel SETs and DELETEs, one per transaction,
                           and a SET of every rel and of every node)

PROCESSES OPTIONS (suite `processes`; --threads and --engines do not apply:
every process and reading thread runs queries with 1 thread):
  --proc-nodes 100000      graph size: N nodes, about 10 N rels (--quick: 10000)
  --proc-parallel 1,2,4    reads: this many read-only processes vs threads of one
  --proc-read-s 5          reads: timed seconds per configuration (--quick: 1)
  --proc-warmup-s 0.5      untimed reading before the timing starts
  --proc-commits 2000      latency: timed single-row auto-commit CREATEs per
                           configuration (--quick: 300)
  --proc-readers 4         latency: reading processes beside the writer
  --proc-handover 1000     hand-over: commits per process (--quick: 200)
  --proc-writers 3         hand-over: processes committing at once
  --proc-rounds 3          every part's configurations run this many times,
                           interleaved (--quick: 1); reads and hand-over report
                           the median round, latency pools the rounds' commits
  --proc-parts reads,latency,handover
  --sqlite-driver PATH     path of sqlite_driver.py (default bench/sqlite_driver.py;
                           run with --python)
";

struct Args {
    positional: Vec<String>,
    opts: HashMap<String, String>,
}

impl Args {
    fn parse(raw: &[String]) -> Result<Args, String> {
        let mut positional = Vec::new();
        let mut opts = HashMap::new();
        let mut i = 0;
        while i < raw.len() {
            let a = &raw[i];
            let key = a.strip_prefix("--").or_else(|| {
                (a.len() == 2
                    && a.starts_with('-')
                    && !a[1..].starts_with(|c: char| c.is_ascii_digit()))
                .then(|| &a[1..])
            });
            match key {
                Some(k) => {
                    let (k, inline) = match k.split_once('=') {
                        Some((k, v)) => (k, Some(v.to_string())),
                        None => (k, None),
                    };
                    let optional_value = k == "markdown";
                    let flag = k == "quick" || k == "simple";
                    let value = match inline {
                        Some(v) => v,
                        None if flag => String::new(),
                        None => match raw.get(i + 1) {
                            Some(v) if !(optional_value && v.starts_with('-')) => {
                                i += 1;
                                v.clone()
                            }
                            _ if optional_value => String::new(),
                            _ => return Err(format!("--{k} needs a value")),
                        },
                    };
                    opts.insert(k.to_string(), value);
                }
                None => positional.push(a.clone()),
            }
            i += 1;
        }
        Ok(Args { positional, opts })
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.opts.get(k).map(String::as_str)
    }

    fn num<T: std::str::FromStr>(&self, k: &str, default: T) -> Result<T, String> {
        match self.get(k) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("--{k}: bad value {v:?}")),
        }
    }

    fn check_known(&self, known: &[&str]) -> Result<(), String> {
        for k in self.opts.keys() {
            if !known.contains(&k.as_str()) {
                return Err(format!("unknown option --{k}"));
            }
        }
        Ok(())
    }
}

const GEN_RMAT_OPTS: &[&str] = &[
    "scale",
    "simple",
    "edge-factor",
    "seed",
    "noise",
    "a",
    "b",
    "c",
    "gen-threads",
    "out",
    "format",
];
const GEN_ER_OPTS: &[&str] = &["nodes", "degree", "seed", "gen-threads", "out", "format"];
const GEN_SOCIAL_OPTS: &[&str] = &[
    "persons",
    "knows-per-person",
    "seed",
    "gen-threads",
    "out",
    "format",
];
const GEN_NN50_OPTS: &[&str] = &["nodes", "k", "gen-threads", "out", "format"];
const RUN_OPTS: &[&str] = &[
    "proc-nodes",
    "proc-parallel",
    "proc-read-s",
    "proc-warmup-s",
    "proc-commits",
    "proc-readers",
    "proc-handover",
    "proc-writers",
    "proc-rounds",
    "proc-parts",
    "sqlite-driver",
    "insert-rows",
    "insert-max-s",
    "insert-per-tx",
    "insert-scale",
    "insert-chunk",
    "insert-rels",
    "insert-phases",
    "suite",
    "suites",
    "timeout",
    "quick",
    "data",
    "threads",
    "runs",
    "warmup",
    "engines",
    "buffer-pool-mb",
    "json",
    "markdown",
    "python",
    "kuzu-driver",
    "duckdb-driver",
    "networkit-driver",
    "tmp-dir",
    "queries",
    "load-format",
];

fn rmat_params(args: &Args, default_scale: u32) -> Result<RmatParams, String> {
    let scale: u32 = args.num("scale", default_scale)?;
    if !(1..=40).contains(&scale) {
        return Err("--scale must be in 1..=40".into());
    }
    let mut p = RmatParams::graph500(scale, args.num("edge-factor", 16)?, args.num("seed", 42)?);
    p.a = args.num("a", p.a)?;
    p.b = args.num("b", p.b)?;
    p.c = args.num("c", p.c)?;
    p.noise = args.num("noise", 0.0)?;
    let d = 1.0 - p.a - p.b - p.c;
    if p.a < 0.0 || p.b < 0.0 || p.c < 0.0 || d < 0.0 {
        return Err("R-MAT probabilities must be non-negative and sum to at most 1".into());
    }
    if p.noise < 0.0 || p.noise > ((p.a + d) / 2.0).min(p.b).min(p.c) {
        return Err("--noise must be in [0, min((a+d)/2, b, c)]".into());
    }
    Ok(p)
}

fn gen_threads(args: &Args) -> Result<usize, String> {
    args.num("gen-threads", sys::cores())
}

fn out_format(args: &Args) -> Result<OutFormat, String> {
    match args.get("format") {
        None => Ok(OutFormat::Csv),
        Some(f) => OutFormat::parse(f)
            .ok_or_else(|| format!("--format: expected csv, parquet or both, got {f:?}")),
    }
}

/// The Erdős–Rényi graph `all` generates: `--er-nodes` (default 65,536;
/// 4,096 with --quick), `--er-degree` (default 8) and `--seed`.
fn er_params(args: &Args) -> Result<ErParams, String> {
    let default = if args.opts.contains_key("quick") {
        4096
    } else {
        65_536
    };
    let p = ErParams {
        nodes: args.num("er-nodes", default)?,
        degree: args.num("er-degree", 8)?,
        seed: args.num("seed", 42)?,
    };
    if p.nodes == 0 {
        return Err("--er-nodes must be positive".into());
    }
    Ok(p)
}

fn nn50_params(args: &Args) -> Result<Nn50Params, String> {
    let default = if args.opts.contains_key("quick") {
        10_000
    } else {
        1_000_000
    };
    Nn50Params::new(args.num("nodes", default)?, args.num("k", 50)?)
}

/// Writes the Parquet files of `dataset` in `dir` from its CSV files
/// (keeping them when `format` is `both`).
fn write_parquet(
    dir: &std::path::Path,
    dataset: Dataset,
    format: OutFormat,
    threads: usize,
) -> Result<(), String> {
    if !format.has_parquet() {
        return Ok(());
    }
    let t0 = std::time::Instant::now();
    let bytes = parquet_out::convert_dir(dir, dataset.files(), threads, format.has_csv())
        .map_err(|e| format!("writing Parquet: {e}"))?;
    eprintln!(
        "[kith-bench] wrote {:.1} MiB of Parquet in {:.2} s",
        bytes as f64 / (1024.0 * 1024.0),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn cmd_gen(args: &Args) -> Result<(), String> {
    let kind = args.positional.get(1).map(String::as_str);
    let out = PathBuf::from(args.get("out").ok_or("--out DIR is required")?);
    let format = out_format(args)?;
    let dataset = match kind {
        Some("social") => Dataset::Social,
        Some("nn50") => Dataset::Nn50,
        _ => Dataset::PersonKnows,
    };
    let summary = match kind {
        Some("rmat") => {
            args.check_known(GEN_RMAT_OPTS)?;
            let p = rmat_params(args, 0)?;
            let simple = args.opts.contains_key("simple");
            let mut meta = gen::rmat_meta(&p);
            if simple {
                meta.push(("simple".into(), json::Json::Bool(true)));
            }
            eprintln!(
                "[kith-bench] R-MAT scale {} edge factor {}: {} nodes, {} edges -> {}",
                p.scale,
                p.edge_factor,
                p.nodes(),
                p.edges(),
                out.display()
            );
            if simple {
                gen::generate_simple(&out, &Rmat::new(p), meta, gen_threads(args)?)
            } else {
                gen::generate(&out, &Rmat::new(p), meta, gen_threads(args)?)
            }
        }
        Some("er") => {
            args.check_known(GEN_ER_OPTS)?;
            let p = ErParams {
                nodes: args.num("nodes", 0)?,
                degree: args.num("degree", 0)?,
                seed: args.num("seed", 42)?,
            };
            if p.nodes == 0 {
                return Err("--nodes N (> 0) is required".into());
            }
            let meta = gen::er_meta(&p);
            gen::generate(&out, &p, meta, gen_threads(args)?)
        }
        Some("social") => {
            args.check_known(GEN_SOCIAL_OPTS)?;
            let s = Social::new(social_params(args)?);
            eprintln!(
                "[kith-bench] social network: {} persons, {} KNOWS -> {}",
                s.p.persons,
                s.p.knows(),
                out.display()
            );
            social::generate(&out, &s, gen_threads(args)?)
        }
        Some("nn50") => {
            args.check_known(GEN_NN50_OPTS)?;
            let p = nn50_params(args)?;
            eprintln!(
                "[kith-bench] nn50: {} nodes, {} edges (k = 1..{}) -> {}",
                p.nodes,
                p.edges(),
                p.k,
                out.display()
            );
            nn50::generate(&out, &p, gen_threads(args)?)
        }
        _ => return Err("gen: expected `rmat`, `er`, `social` or `nn50`".into()),
    }
    .map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!(
        "[kith-bench] wrote {} nodes, {} edges, {:.1} MiB in {:.2} s",
        summary.nodes,
        summary.edges,
        summary.bytes as f64 / (1024.0 * 1024.0),
        summary.seconds
    );
    write_parquet(&out, dataset, format, gen_threads(args)?)
}

fn social_params(args: &Args) -> Result<SocialParams, String> {
    let default = if args.opts.contains_key("quick") {
        2000
    } else {
        10_000
    };
    let persons: u64 = args.num("persons", default)?;
    if persons < 2 {
        return Err("--persons must be at least 2".into());
    }
    let mut p = SocialParams::new(persons, args.num("seed", 42)?);
    p.knows_per_person = args.num("knows-per-person", p.knows_per_person)?;
    Ok(p)
}

/// Suite names given, `foundation` by default.
fn suite_names(args: &Args) -> Vec<&str> {
    args.get("suites")
        .or(args.get("suite"))
        .unwrap_or("foundation")
        .split(',')
        .map(str::trim)
        .collect()
}

/// The read suites asked for (`insert` and `processes` are run apart: they
/// need no data set).
fn suites(args: &Args) -> Result<Vec<&'static suite::Suite>, String> {
    suite_names(args)
        .into_iter()
        .filter(|n| *n != "insert" && *n != "processes")
        .map(|n| {
            suite::get(n.trim())
                .ok_or_else(|| format!("unknown suite {n:?} (see `kith-bench suites`)"))
        })
        .collect()
}

fn check_data(
    suite: &suite::Suite,
    data: &std::path::Path,
    format: LoadFormat,
) -> Result<(), String> {
    for f in suite.dataset.required_files(format) {
        if !data.join(&f).exists() {
            let how = match suite.dataset {
                Dataset::PersonKnows => "gen rmat --scale 16",
                Dataset::Er => "gen er --nodes 65536 --degree 8",
                Dataset::Social => "gen social --persons 10000",
                Dataset::Nn50 => "gen nn50 --nodes 1000000",
            };
            let how = match format {
                LoadFormat::Csv => how.to_string(),
                LoadFormat::Parquet => format!("{how} --format both"),
            };
            return Err(format!(
                "suite {} needs the {} data set, but {} has no {f}; generate it with `kith-bench {how} --out {}`",
                suite.name,
                suite.dataset.name(),
                data.display(),
                data.display()
            ));
        }
    }
    Ok(())
}

fn run_options(
    args: &Args,
    suite: &'static suite::Suite,
    data: PathBuf,
) -> Result<runner::RunOptions, String> {
    let quick = args.opts.contains_key("quick");
    let threads = args
        .get("threads")
        .unwrap_or("1,2")
        .split(',')
        .map(|t| t.trim().parse::<usize>().ok().filter(|&n| n > 0))
        .collect::<Option<Vec<_>>>()
        .ok_or("--threads: expected a list like 1,2")?;
    let engines = args
        .get("engines")
        .unwrap_or("kith,kuzu")
        .split(',')
        .map(|e| EngineKind::parse(e).ok_or_else(|| format!("unknown engine {e:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    let bp_mb: u64 = args.num("buffer-pool-mb", 4096)?;
    let timeout_s: f64 = args.num("timeout", if quick { 20.0 } else { 120.0 })?;
    let load_format = load_format(args)?;
    check_data(suite, &data, load_format)?;
    Ok(runner::RunOptions {
        suite,
        data_dir: data,
        threads,
        runs: args.num("runs", if quick { 1 } else { 5 })?,
        warmup: args.num("warmup", if quick { 0 } else { 1 })?,
        engines,
        buffer_pool_bytes: (bp_mb > 0).then_some(bp_mb << 20),
        only: args
            .get("queries")
            .map(|q| q.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default(),
        tmp_dir: args
            .get("tmp-dir")
            .map_or_else(std::env::temp_dir, PathBuf::from),
        spawn: DriverSpawn {
            python: args.get("python").unwrap_or("python3").to_string(),
            kuzu_script: args
                .get("kuzu-driver")
                .map_or_else(DriverSpawn::default_kuzu_script, PathBuf::from),
            duckdb_script: args
                .get("duckdb-driver")
                .map_or_else(DriverSpawn::default_duckdb_script, PathBuf::from),
            networkit_script: args
                .get("networkit-driver")
                .map_or_else(DriverSpawn::default_networkit_script, PathBuf::from),
        },
        timeout_ms: (timeout_s > 0.0).then_some((timeout_s * 1000.0) as u64),
        load_format,
    })
}

/// `--load-format`, else Parquet when `--format parquet` made no CSV.
fn load_format(args: &Args) -> Result<LoadFormat, String> {
    match args.get("load-format") {
        Some(f) => LoadFormat::parse(f)
            .ok_or_else(|| format!("--load-format: expected csv or parquet, got {f:?}")),
        None if out_format(args)? == OutFormat::Parquet => Ok(LoadFormat::Parquet),
        None => Ok(LoadFormat::Csv),
    }
}

/// Runs the read suites, prints their reports and writes `--json` /
/// `--markdown` with `side`'s reports (suites run before) first.
fn run_and_report(args: &Args, runs: &[runner::RunOptions], side: Side) -> Result<(), String> {
    let Side { mut mds, mut jsons } = side;
    for opts in runs {
        let rep = runner::run(opts);
        let md = report::markdown(&rep);
        println!("{md}");
        mds.push(md);
        jsons.push(report::to_json(&rep));
    }
    if let Some(path) = args.get("json").filter(|_| !jsons.is_empty()) {
        let j = if jsons.len() == 1 {
            jsons.pop().unwrap_or(json::Json::Null)
        } else {
            json::Json::Arr(jsons)
        };
        std::fs::write(path, json::pretty(&j) + "\n")
            .map_err(|e| format!("writing {path}: {e}"))?;
        eprintln!("[kith-bench] wrote {path}");
    }
    if let Some(path) = args.get("markdown").filter(|p| !p.is_empty()) {
        std::fs::write(path, mds.join("\n")).map_err(|e| format!("writing {path}: {e}"))?;
        eprintln!("[kith-bench] wrote {path}");
    }
    Ok(())
}

/// Options of the `insert` suite from the command line.
fn insert_options(args: &Args) -> Result<insert::InsertOptions, String> {
    let quick = args.opts.contains_key("quick");
    let threads = args
        .get("threads")
        .unwrap_or("1,2")
        .split(',')
        .map(|t| t.trim().parse::<usize>().ok().filter(|&n| n > 0))
        .collect::<Option<Vec<_>>>()
        .ok_or("--threads: expected a list like 1,2")?;
    let engines = args
        .get("engines")
        .unwrap_or("kith,kuzu")
        .split(',')
        .map(|e| EngineKind::parse(e).ok_or_else(|| format!("unknown engine {e:?}")))
        .filter(|e| e.as_ref().map_or(true, |e| e.dialect() == Dialect::Cypher))
        .collect::<Result<Vec<_>, _>>()?;
    let scale: f64 = args.num("insert-scale", if quick { 0.01 } else { 1.0 })?;
    if !(scale > 0.0 && scale <= 100.0) {
        return Err("--insert-scale must be in (0, 100]".into());
    }
    let phases: Vec<String> = args
        .get("insert-phases")
        .unwrap_or("autocommit,batched,bulk")
        .split(',')
        .map(|p| p.trim().to_string())
        .collect();
    if let Some(p) = phases
        .iter()
        .find(|p| !insert::PHASES.contains(&p.as_str()))
    {
        return Err(format!(
            "--insert-phases: unknown phase {p:?} (expected {})",
            insert::PHASES.join(",")
        ));
    }
    let bp_mb: u64 = args.num("buffer-pool-mb", 4096)?;
    let timeout_s: f64 = args.num("timeout", if quick { 60.0 } else { 600.0 })?;
    let max_s: f64 = args.num("insert-max-s", 5.0)?;
    Ok(insert::InsertOptions {
        threads,
        engines,
        single_rows: args.num("insert-rows", if quick { 2000 } else { 20_000 })?,
        single_max_ms: (max_s * 1000.0) as u64,
        per_tx: args.num("insert-per-tx", 1000)?,
        nodes: ((insert::FULL_NODES as f64 * scale) as u64).max(1),
        rels: args.num("insert-rels", (insert::FULL_RELS as f64 * scale) as u64)?,
        chunk: args.num("insert-chunk", 100_000)?,
        phases,
        buffer_pool_bytes: (bp_mb > 0).then_some(bp_mb << 20),
        tmp_dir: args
            .get("tmp-dir")
            .map_or_else(std::env::temp_dir, PathBuf::from),
        spawn: DriverSpawn {
            python: args.get("python").unwrap_or("python3").to_string(),
            kuzu_script: args
                .get("kuzu-driver")
                .map_or_else(DriverSpawn::default_kuzu_script, PathBuf::from),
            duckdb_script: args
                .get("duckdb-driver")
                .map_or_else(DriverSpawn::default_duckdb_script, PathBuf::from),
            networkit_script: args
                .get("networkit-driver")
                .map_or_else(DriverSpawn::default_networkit_script, PathBuf::from),
        },
        timeout_ms: (timeout_s > 0.0).then_some((timeout_s * 1000.0) as u64),
    })
}

/// Reports of the suites that need no data set, in the order they ran:
/// Markdown (all of them) and JSON (those that have one).
#[derive(Default)]
struct Side {
    mds: Vec<String>,
    jsons: Vec<json::Json>,
}

/// Runs the `insert` and `processes` suites when asked for; their reports
/// are printed and kept for `--markdown FILE` and `--json FILE`.
fn run_side(args: &Args) -> Result<Side, String> {
    let mut side = Side::default();
    let names = suite_names(args);
    if names.contains(&"insert") {
        let rep = insert::run(&insert_options(args)?);
        let md = rep.markdown();
        println!("{md}");
        side.mds.push(md);
    }
    if names.contains(&"processes") {
        let rep = processes::run(&processes_options(args)?);
        let md = rep.markdown();
        println!("{md}");
        side.mds.push(md);
        side.jsons.push(rep.to_json());
    }
    Ok(side)
}

/// Options of the `processes` suite from the command line.
fn processes_options(args: &Args) -> Result<processes::ProcessesOptions, String> {
    let quick = args.opts.contains_key("quick");
    let list = |k: &str, default: &str| -> Result<Vec<usize>, String> {
        args.get(k)
            .unwrap_or(default)
            .split(',')
            .map(|t| t.trim().parse::<usize>().ok().filter(|&n| n > 0))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("--{k}: expected a list like {default}"))
    };
    let parts: Vec<String> = args
        .get("proc-parts")
        .unwrap_or("reads,latency,handover")
        .split(',')
        .map(|p| p.trim().to_string())
        .collect();
    if let Some(p) = parts
        .iter()
        .find(|p| !processes::PARTS.contains(&p.as_str()))
    {
        return Err(format!(
            "--proc-parts: unknown part {p:?} (expected {})",
            processes::PARTS.join(",")
        ));
    }
    let nodes: u64 = args.num("proc-nodes", if quick { 10_000 } else { 100_000 })?;
    if nodes == 0 || nodes > 100_000_000 {
        return Err("--proc-nodes must be in 1..=100000000".into());
    }
    let secs = |k: &str, default: f64| -> Result<u64, String> {
        let s: f64 = args.num(k, default)?;
        if !(0.0..=3600.0).contains(&s) {
            return Err(format!("--{k} must be in [0, 3600]"));
        }
        Ok((s * 1000.0) as u64)
    };
    let bp_mb: u64 = args.num("buffer-pool-mb", 4096)?;
    let timeout_s: f64 = args.num("timeout", if quick { 60.0 } else { 600.0 })?;
    Ok(processes::ProcessesOptions {
        nodes,
        read_ms: secs("proc-read-s", if quick { 1.0 } else { 5.0 })?.max(1),
        warmup_ms: secs("proc-warmup-s", 0.5)?,
        parallel: list("proc-parallel", "1,2,4")?,
        commits: args.num("proc-commits", if quick { 300 } else { 2000 })?,
        readers: args.num("proc-readers", 4)?,
        handover_procs: list("proc-writers", "3")?[0],
        handover_commits: args.num("proc-handover", if quick { 200 } else { 1000 })?,
        rounds: args.num("proc-rounds", if quick { 1 } else { 3 })?.max(1),
        parts,
        buffer_pool_bytes: (bp_mb > 0).then_some(bp_mb << 20),
        tmp_dir: args
            .get("tmp-dir")
            .map_or_else(std::env::temp_dir, PathBuf::from),
        spawn: DriverSpawn {
            python: args.get("python").unwrap_or("python3").to_string(),
            kuzu_script: DriverSpawn::default_kuzu_script(),
            duckdb_script: DriverSpawn::default_duckdb_script(),
            networkit_script: DriverSpawn::default_networkit_script(),
        },
        sqlite_script: args
            .get("sqlite-driver")
            .map_or_else(DriverSpawn::default_sqlite_script, PathBuf::from),
        timeout_ms: (timeout_s > 0.0).then_some((timeout_s * 1000.0) as u64),
    })
}

fn cmd_run(args: &Args) -> Result<(), String> {
    args.check_known(RUN_OPTS)?;
    let side = run_side(args)?;
    if suites(args)?.is_empty() {
        return write_side(args, side);
    }
    let data = PathBuf::from(args.get("data").ok_or("--data DIR is required")?);
    let runs = suites(args)?
        .into_iter()
        .map(|s| run_options(args, s, data.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    run_and_report(args, &runs, side)
}

/// Generates (unless already there with the same parameters) the data set
/// `dataset` into `dir` (or a directory named after the parameters).
fn ensure_data(args: &Args, dataset: Dataset) -> Result<PathBuf, String> {
    let quick = args.opts.contains_key("quick");
    let simple = args.opts.contains_key("simple");
    let (name, want): (String, Vec<(String, json::Json)>) = match dataset {
        Dataset::PersonKnows => {
            let p = rmat_params(args, if quick { 10 } else { 16 })?;
            (
                format!(
                    "kith-bench-rmat-s{}-e{}-seed{}{}{}",
                    p.scale,
                    p.edge_factor,
                    p.seed,
                    if p.noise > 0.0 {
                        format!("-noise{}", p.noise)
                    } else {
                        String::new()
                    },
                    if simple { "-simple" } else { "" }
                ),
                {
                    let mut m = gen::rmat_meta(&p);
                    m.push(("simple".into(), json::Json::Bool(simple)));
                    m
                },
            )
        }
        Dataset::Er => {
            let p = er_params(args)?;
            (
                format!("kith-bench-er-n{}-d{}-seed{}", p.nodes, p.degree, p.seed),
                gen::er_meta(&p),
            )
        }
        Dataset::Social => {
            let p = social_params(args)?;
            (
                format!(
                    "kith-bench-social-p{}-k{}-seed{}",
                    p.persons, p.knows_per_person, p.seed
                ),
                Social::new(p).meta(),
            )
        }
        Dataset::Nn50 => {
            let p = nn50_params(args)?;
            (format!("kith-bench-nn50-n{}-k{}", p.nodes, p.k), p.meta())
        }
    };
    let data = match args.get("data") {
        Some(d) => PathBuf::from(d).join(&name),
        None => std::env::temp_dir().join(&name),
    };
    let have = std::fs::read_to_string(data.join("meta.json"))
        .ok()
        .and_then(|t| json::parse(&t).ok());
    let same = have
        .as_ref()
        .is_some_and(|h| want.iter().all(|(k, v)| h.get(k) == Some(v)));
    let has = |f: LoadFormat| {
        dataset
            .required_files(f)
            .iter()
            .all(|x| data.join(x).exists())
    };
    let format = out_format(args)?;
    let need_csv = format.has_csv() || load_format(args)? == LoadFormat::Csv;
    let need_parquet = format.has_parquet() || load_format(args)? == LoadFormat::Parquet;
    if same && (!need_csv || has(LoadFormat::Csv)) && (!need_parquet || has(LoadFormat::Parquet)) {
        eprintln!("[kith-bench] using existing data in {}", data.display());
        return Ok(data);
    }
    if same && has(LoadFormat::Csv) && need_parquet {
        eprintln!("[kith-bench] adding Parquet files to {}", data.display());
        write_parquet(&data, dataset, OutFormat::Both, gen_threads(args)?)?;
        return Ok(data);
    }
    eprintln!(
        "[kith-bench] generating {} into {}",
        dataset.name(),
        data.display()
    );
    let s = match dataset {
        Dataset::PersonKnows => {
            let p = rmat_params(args, if quick { 10 } else { 16 })?;
            if simple {
                gen::generate_simple(&data, &Rmat::new(p), want, gen_threads(args)?)
            } else {
                gen::generate(&data, &Rmat::new(p), want, gen_threads(args)?)
            }
        }
        Dataset::Er => {
            let p = er_params(args)?;
            let meta = gen::er_meta(&p);
            gen::generate(&data, &p, meta, gen_threads(args)?)
        }
        Dataset::Social => social::generate(
            &data,
            &Social::new(social_params(args)?),
            gen_threads(args)?,
        ),
        Dataset::Nn50 => nn50::generate(&data, &nn50_params(args)?, gen_threads(args)?),
    }
    .map_err(|e| format!("writing {}: {e}", data.display()))?;
    eprintln!(
        "[kith-bench] generated {} nodes, {} edges in {:.2} s",
        s.nodes, s.edges, s.seconds
    );
    let format = match (need_csv, need_parquet) {
        (_, false) => OutFormat::Csv,
        (true, true) => OutFormat::Both,
        (false, true) => OutFormat::Parquet,
    };
    write_parquet(&data, dataset, format, gen_threads(args)?)?;
    Ok(data)
}

fn cmd_all(args: &Args) -> Result<(), String> {
    let mut known: Vec<&str> = RUN_OPTS.to_vec();
    known.extend_from_slice(GEN_RMAT_OPTS);
    known.extend_from_slice(GEN_SOCIAL_OPTS);
    known.extend_from_slice(GEN_NN50_OPTS);
    known.extend_from_slice(&["er-nodes", "er-degree"]);
    args.check_known(&known)?;
    let side = run_side(args)?;
    if suites(args)?.is_empty() {
        return write_side(args, side);
    }
    let mut runs = Vec::new();
    for s in suites(args)? {
        let data = ensure_data(args, s.dataset)?;
        runs.push(run_options(args, s, data)?);
    }
    run_and_report(args, &runs, side)
}

/// `--json FILE` and `--markdown FILE` for a run of the suites without a
/// data set alone.
fn write_side(args: &Args, side: Side) -> Result<(), String> {
    run_and_report(args, &[], side)
}

/// Lists the suites; with `--data DIR`, each query as it would run on that
/// data set (placeholders bound to its sources and ids).
fn cmd_suites(args: &Args) -> Result<(), String> {
    args.check_known(&["data"])?;
    let bound = args.get("data").map(|dir| {
        let dir = PathBuf::from(dir);
        let params = runner::DataInfo::load(&dir).params();
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        (dir.to_string_lossy().to_string(), params)
    });
    for s in suite::SUITES {
        println!("{}: {}", s.name, s.description);
        println!("  (data: {})", s.dataset.name());
        for q in s.queries {
            let text = match &bound {
                Some((dir, params)) => {
                    suite::bind(q.cypher, dir, params).unwrap_or_else(|e| format!("({e})"))
                }
                None => q.cypher.to_string(),
            };
            println!("  {}: {}", q.name, text);
            if let Some(n) = q.networkit {
                let form = match &bound {
                    Some((dir, params)) => n.bind(dir, params).unwrap_or_else(|e| format!("({e})")),
                    None => n.describe(),
                };
                println!("    networkit: {form}");
            }
        }
    }
    println!("insert: issue 5 write throughput (no data set): auto-commit and batched single-row CREATE, bulk UNWIND CREATE of nodes and rels");
    println!("  single row: {}", insert::INSERT_ONE);
    println!("  bulk nodes: {}", insert::nodes_stmt(0, 99_999));
    println!(
        "  bulk rels:  {}",
        insert::rels_stmt(0, 99_999, insert::FULL_NODES)
    );
    println!("processes: issue 53, several processes on one database file (no data set): read throughput of processes vs threads, commit latency beside reading processes (and SQLite WAL's), writer hand-over");
    println!("  reads:   {} / {}", processes::LOOKUP, processes::HOP);
    println!("  write:   {}", insert::INSERT_ONE);
    println!(
        "  SQLite:  {} / {} / {}",
        processes::LOOKUP_SQL,
        processes::HOP_SQL,
        processes::INSERT_SQL
    );
    Ok(())
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some("__kith-worker") {
        return ExitCode::from(worker::serve() as u8);
    }
    let args = match Args::parse(&raw) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match args.positional.first().map(String::as_str) {
        Some("gen") => cmd_gen(&args),
        Some("run") => cmd_run(&args),
        Some("all") => cmd_all(&args),
        Some("suites") => cmd_suites(&args),
        Some("help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
