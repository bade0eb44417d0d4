//! The `kith-fuzz` command line: runs a campaign (or one case) and exits
//! non-zero when it found something.

use std::path::PathBuf;
use std::process::ExitCode;

use kith_fuzz::campaign::{self, Config, Limit};
use kith_fuzz::oracle::Oracle;
use kith_fuzz::query::{Construct, Features};

const USAGE: &str = "usage: kith-fuzz [options]
  --seed N              master seed (default: from the clock; printed first)
  --seconds S           run for about S seconds (default 60)
  --queries N           run about N generated read queries instead
  --threads N           fuzzing workers, each with its own databases (default 1)
  --findings DIR        write finding scripts here (default target/fuzz-findings)
  --oracle LIST         comma list of tlp,norec,diff,write,crash (the default)
                        and kuzu (against Kùzu 0.11 through bench/kuzu_driver.py:
                        pip install kuzu==0.11.3; KITH_PYTHON picks the python)
  --skip LIST           constructs not to generate (see --list-constructs)
  --case SEED           rerun one case by its case seed (printed with each finding)
  --queries-per-case N  read queries per graph (default 10)
  --no-minimize         write findings as found, without shrinking them
  --minimize-per-oracle N  shrink at most N findings per oracle (default 3)
  --list-constructs     print the construct names --skip takes
  --script FILE         run a finding script statement by statement, printing
                        each outcome and its time (for triage)
  --verbose             print every case, query and verdict
  --dump FILE           write each generated query's outcome (--seed, --queries N,
                        --queries-per-case; no oracles), to compare two builds
  --compare-dumps A B   the queries whose outcomes differ between two dumps";

fn parse_num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: cannot parse '{v}'"))
}

fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    kith_fuzz::rng::mix(nanos ^ std::process::id() as u64)
}

struct Args {
    config: Config,
    case: Option<u64>,
    script: Option<PathBuf>,
    dump: Option<PathBuf>,
    compare: Option<(PathBuf, PathBuf)>,
}

/// `--dump`: one line per generated query (see `kith_fuzz::dump`).
fn run_dump(config: &Config, path: &std::path::Path) -> ExitCode {
    let queries = match config.limit {
        Limit::Queries(n) => n,
        Limit::Seconds(_) => {
            eprintln!("kith-fuzz: --dump needs --queries N");
            return ExitCode::from(2);
        }
    };
    let per_case = config.queries_per_case.max(1);
    let cases = queries.div_ceil(per_case as u64);
    let written = std::fs::File::create(path)
        .map_err(|e| format!("{}: {e}", path.display()))
        .and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            kith_fuzz::dump::write(config.seed, cases, per_case, &config.features, &mut w)
        });
    match written {
        Ok(n) => {
            println!(
                "kith-fuzz: seed {}, {n} queries dumped to {}",
                config.seed,
                path.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kith-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

/// `--compare-dumps`: exit 1 when two dumps disagree.
fn run_compare(a: &std::path::Path, b: &std::path::Path) -> ExitCode {
    match kith_fuzz::dump::compare_files(a, b) {
        Ok(d) if d.is_empty() => {
            println!("kith-fuzz: the dumps agree");
            ExitCode::SUCCESS
        }
        Ok(d) => {
            for line in d.iter().take(50) {
                println!("{line}");
            }
            println!("kith-fuzz: {} queries differ", d.len());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("kith-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs a script's statements on a fresh in-memory database, printing
/// each outcome.
fn run_script(path: &std::path::Path) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("kith-fuzz: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let mut session = match kith_fuzz::exec::Session::open(None, 0) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kith-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    for stmt in kith::split_statements(&text) {
        let stmt = stmt
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let stmt = stmt.trim();
        if stmt.is_empty() {
            continue;
        }
        let started = std::time::Instant::now();
        let out = session.run(stmt);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        match out {
            kith_fuzz::exec::Outcome::Ok(rows) if !rows.columns.is_empty() => {
                println!("{stmt}\n  -> {} rows in {ms:.1} ms", rows.rows.len());
                println!("{}", kith_fuzz::results::render(&rows.rows, 20));
            }
            kith_fuzz::exec::Outcome::Ok(_) => {}
            other => println!("{stmt}\n  -> {} ({ms:.1} ms)", other.describe()),
        }
    }
    ExitCode::SUCCESS
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut config = Config::new(clock_seed(), Limit::Seconds(60.0));
    config.findings_dir = Some(PathBuf::from("target/fuzz-findings"));
    let mut case = None;
    let mut script = None;
    let mut dump = None;
    let mut compare = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seed" => config.seed = parse_num("--seed", args.next())?,
            "--seconds" => config.limit = Limit::Seconds(parse_num("--seconds", args.next())?),
            "--queries" => config.limit = Limit::Queries(parse_num("--queries", args.next())?),
            "--threads" => config.workers = parse_num("--threads", args.next())?,
            "--findings" => {
                config.findings_dir = Some(PathBuf::from(
                    args.next().ok_or("--findings needs a directory")?,
                ))
            }
            "--oracle" => {
                let list = args.next().ok_or("--oracle needs a list")?;
                config.oracles = list
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| Oracle::parse(s).ok_or_else(|| format!("unknown oracle '{s}'")))
                    .collect::<Result<_, _>>()?;
            }
            "--skip" => {
                config.features = Features::parse_skip(&args.next().ok_or("--skip needs a list")?)?
            }
            "--script" => script = Some(PathBuf::from(args.next().ok_or("--script needs a file")?)),
            "--case" => case = Some(parse_num("--case", args.next())?),
            "--dump" => dump = Some(PathBuf::from(args.next().ok_or("--dump needs a file")?)),
            "--compare-dumps" => {
                let a = args.next().ok_or("--compare-dumps needs two files")?;
                let b = args.next().ok_or("--compare-dumps needs two files")?;
                compare = Some((PathBuf::from(a), PathBuf::from(b)));
            }
            "--queries-per-case" => {
                config.queries_per_case = parse_num("--queries-per-case", args.next())?
            }
            "--no-minimize" => config.minimize_per_oracle = 0,
            "--minimize-per-oracle" => {
                config.minimize_per_oracle = parse_num("--minimize-per-oracle", args.next())?
            }
            "--verbose" | "-v" => config.verbose = true,
            "--list-constructs" => {
                for c in Construct::ALL {
                    println!("{}", c.name());
                }
                return Ok(None);
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(Some(Args {
        config,
        case,
        script,
        dump,
        compare,
    }))
}

/// `KITH_FUZZ_SHOW_ERRORS=1` prints sample query errors without `--verbose`.
fn args_show_errors() -> bool {
    std::env::var("KITH_FUZZ_SHOW_ERRORS").is_ok_and(|v| v == "1")
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kith-fuzz: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The engine turns panics into internal errors; print one line for
    // each instead of a backtrace in the middle of the campaign's output.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        eprintln!("kith-fuzz: a panic{at}: {msg}");
    }));
    if let Some(path) = &args.script {
        return run_script(path);
    }
    if let Some((a, b)) = &args.compare {
        return run_compare(a, b);
    }
    if let Some(path) = &args.dump {
        return run_dump(&args.config, path);
    }
    let mut config = args.config;
    if let Some(seed) = args.case {
        // The finding scripts name the case seed as the master seed too.
        config.seed = seed;
    }
    let report = match args.case {
        Some(seed) => {
            println!("kith-fuzz: case {seed}");
            let started = std::time::Instant::now();
            let mut r = campaign::run_case(seed, &config, None);
            r.elapsed = started.elapsed();
            r
        }
        None => {
            println!("kith-fuzz: seed {}", config.seed);
            if !config.features.skip.is_empty() {
                let names: Vec<&str> = config.features.skip.iter().map(|c| c.name()).collect();
                println!("kith-fuzz: skipping {}", names.join(", "));
            }
            campaign::run(&config)
        }
    };
    for (o, s) in &report.checks {
        println!(
            "  {:<6} {} checks: {} passed, {} skipped, {} failed",
            o.name(),
            s.run,
            s.passed,
            s.skipped,
            s.failed
        );
    }
    if config.verbose || args_show_errors() {
        for (kind, samples) in &report.error_samples {
            println!("  {kind} errors, e.g.:");
            for x in samples {
                println!("    {x}");
            }
        }
    }
    for f in &report.findings {
        println!("{}", f.brief());
    }
    println!("{}", report.summary_line());
    if report.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
