//! `kith-bench`: generate graphs, run benchmark suites, compare engines.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use kith_bench::driver::{DriverSpawn, EngineKind};
use kith_bench::gen::{self, ErParams, Rmat, RmatParams};
use kith_bench::json;
use kith_bench::{report, runner, suite, sys, worker};

const USAGE: &str = "\
kith-bench: graph generators and KithDB vs Kùzu benchmarks

USAGE:
  kith-bench gen rmat --scale S [--edge-factor 16] [--seed 42] [--noise 0]
                      [-a 0.57 -b 0.19 -c 0.19] [--gen-threads N] --out DIR
  kith-bench gen er --nodes N --degree D [--seed 42] [--gen-threads N] --out DIR
  kith-bench run --suite foundation --data DIR [RUN OPTIONS]
  kith-bench all --suite foundation --scale S [--edge-factor 16] [--seed 42]
                 [--data DIR] [RUN OPTIONS]     (generates DIR if missing, then runs)
  kith-bench suites                              (lists suites and their queries)

RUN OPTIONS:
  --threads 1,2            thread counts (default 1,2)
  --runs 5                 timed runs per query (default 5)
  --warmup 1               warm-up runs per query (default 1)
  --engines kith,kuzu      engines (default kith,kuzu)
  --buffer-pool-mb 4096    buffer pool for every engine (0 = engine default)
  --json FILE              write results as JSON
  --markdown [FILE]        write the Markdown report to FILE (always printed to stdout)
  --python python3         interpreter for bench/kuzu_driver.py
  --kuzu-driver PATH       path of kuzu_driver.py (default bench/kuzu_driver.py)
  --tmp-dir DIR            where the databases are created (default: system temp)
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
                    let value = match inline {
                        Some(v) => v,
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
    "edge-factor",
    "seed",
    "noise",
    "a",
    "b",
    "c",
    "gen-threads",
    "out",
];
const GEN_ER_OPTS: &[&str] = &["nodes", "degree", "seed", "gen-threads", "out"];
const RUN_OPTS: &[&str] = &[
    "suite",
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
    "tmp-dir",
];

fn rmat_params(args: &Args) -> Result<RmatParams, String> {
    let scale: u32 = args.num("scale", 0)?;
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

fn cmd_gen(args: &Args) -> Result<(), String> {
    let kind = args.positional.get(1).map(String::as_str);
    let out = PathBuf::from(args.get("out").ok_or("--out DIR is required")?);
    let summary = match kind {
        Some("rmat") => {
            args.check_known(GEN_RMAT_OPTS)?;
            let p = rmat_params(args)?;
            let meta = gen::rmat_meta(&p);
            eprintln!(
                "[kith-bench] R-MAT scale {} edge factor {}: {} nodes, {} edges -> {}",
                p.scale,
                p.edge_factor,
                p.nodes(),
                p.edges(),
                out.display()
            );
            gen::generate(&out, &Rmat::new(p), meta, gen_threads(args)?)
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
        _ => return Err("gen: expected `rmat` or `er`".into()),
    }
    .map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!(
        "[kith-bench] wrote {} nodes, {} edges, {:.1} MiB in {:.2} s",
        summary.nodes,
        summary.edges,
        summary.bytes as f64 / (1024.0 * 1024.0),
        summary.seconds
    );
    Ok(())
}

fn run_options(args: &Args, data: PathBuf) -> Result<runner::RunOptions, String> {
    let suite_name = args.get("suite").unwrap_or("foundation");
    let suite = suite::get(suite_name)
        .ok_or_else(|| format!("unknown suite {suite_name:?} (see `kith-bench suites`)"))?;
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
    if !data.join("persons.csv").exists() || !data.join("knows.csv").exists() {
        return Err(format!(
            "{} has no persons.csv/knows.csv; generate it with `kith-bench gen rmat --scale 20 --out {}`",
            data.display(),
            data.display()
        ));
    }
    Ok(runner::RunOptions {
        suite,
        data_dir: data,
        threads,
        runs: args.num("runs", 5)?,
        warmup: args.num("warmup", 1)?,
        engines,
        buffer_pool_bytes: (bp_mb > 0).then_some(bp_mb << 20),
        tmp_dir: args
            .get("tmp-dir")
            .map_or_else(std::env::temp_dir, PathBuf::from),
        spawn: DriverSpawn {
            python: args.get("python").unwrap_or("python3").to_string(),
            kuzu_script: args
                .get("kuzu-driver")
                .map_or_else(DriverSpawn::default_kuzu_script, PathBuf::from),
        },
    })
}

fn run_and_report(args: &Args, opts: &runner::RunOptions) -> Result<(), String> {
    let rep = runner::run(opts);
    let md = report::markdown(&rep);
    println!("{md}");
    if let Some(path) = args.get("json") {
        std::fs::write(path, json::pretty(&report::to_json(&rep)) + "\n")
            .map_err(|e| format!("writing {path}: {e}"))?;
        eprintln!("[kith-bench] wrote {path}");
    }
    if let Some(path) = args.get("markdown").filter(|p| !p.is_empty()) {
        std::fs::write(path, &md).map_err(|e| format!("writing {path}: {e}"))?;
        eprintln!("[kith-bench] wrote {path}");
    }
    Ok(())
}

fn cmd_run(args: &Args) -> Result<(), String> {
    args.check_known(RUN_OPTS)?;
    let data = PathBuf::from(args.get("data").ok_or("--data DIR is required")?);
    run_and_report(args, &run_options(args, data)?)
}

fn cmd_all(args: &Args) -> Result<(), String> {
    let mut known: Vec<&str> = RUN_OPTS.to_vec();
    known.extend_from_slice(GEN_RMAT_OPTS);
    args.check_known(&known)?;
    let p = rmat_params(args)?;
    let data = args.get("data").map_or_else(
        || {
            std::env::temp_dir().join(format!(
                "kith-bench-rmat-s{}-e{}-seed{}{}",
                p.scale,
                p.edge_factor,
                p.seed,
                if p.noise > 0.0 {
                    format!("-noise{}", p.noise)
                } else {
                    String::new()
                }
            ))
        },
        PathBuf::from,
    );
    let want = gen::rmat_meta(&p);
    let have = std::fs::read_to_string(data.join("meta.json"))
        .ok()
        .and_then(|t| json::parse(&t).ok());
    let matches = have
        .as_ref()
        .is_some_and(|h| want.iter().all(|(k, v)| h.get(k) == Some(v)))
        && data.join("persons.csv").exists()
        && data.join("knows.csv").exists();
    if matches {
        eprintln!("[kith-bench] using existing data in {}", data.display());
    } else {
        eprintln!(
            "[kith-bench] generating R-MAT scale {} into {}",
            p.scale,
            data.display()
        );
        let s = gen::generate(&data, &Rmat::new(p), want, gen_threads(args)?)
            .map_err(|e| format!("writing {}: {e}", data.display()))?;
        eprintln!(
            "[kith-bench] generated {} edges in {:.2} s",
            s.edges, s.seconds
        );
    }
    run_and_report(args, &run_options(args, data)?)
}

fn cmd_suites() {
    for s in suite::SUITES {
        println!("{}: {}", s.name, s.description);
        for q in s.queries {
            println!("  {}: {}", q.name, q.cypher);
        }
    }
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
        Some("suites") => {
            cmd_suites();
            Ok(())
        }
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
