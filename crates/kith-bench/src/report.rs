//! Markdown and JSON renderings of a [`Report`].

use std::fmt::Write as _;

use crate::driver::{EngineKind, KITH_POLICIES};
use crate::json::Json;
use crate::runner::{compare_rows, ConfigResult, Report, Summary};
use crate::suite::Scans;

const MIB: f64 = 1024.0 * 1024.0;

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| {
        if x >= 100.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.2}")
        }
    })
}

fn mib_kb(kb: Option<u64>) -> String {
    kb.map_or("–".into(), |k| format!("{:.0}", k as f64 / 1024.0))
}

fn mib_bytes(b: Option<u64>) -> String {
    b.map_or("–".into(), |x| format!("{:.1}", x as f64 / MIB))
}

fn short_err(e: &str) -> String {
    let one_line = e.replace(['\n', '|'], " ");
    if one_line.chars().count() > 90 {
        format!("{}…", one_line.chars().take(90).collect::<String>())
    } else {
        one_line
    }
}

/// One engine's cell for a query: `median (min–max)` or `error: ...`.
fn cell(c: Option<&ConfigResult>, query: &str) -> (String, Option<Summary>) {
    let Some(c) = c else {
        return ("not run".into(), None);
    };
    if let Some(e) = &c.error {
        return (format!("not run: {}", short_err(e)), None);
    }
    match c.query(query) {
        None => ("–".into(), None),
        Some(q) => match (&q.error, q.summary()) {
            (Some(e), _) => (format!("error: {}", short_err(e)), None),
            (None, Some(s)) => (
                format!(
                    "{} ({}–{})",
                    ms(Some(s.median)),
                    ms(Some(s.min)),
                    ms(Some(s.max))
                ),
                Some(s),
            ),
            (None, None) => ("–".into(), None),
        },
    }
}

/// "yes", "**NO: ...**" or "n/a" for a query at a thread count.
pub fn equality(report: &Report, query: &str, threads: usize) -> String {
    let rows: Vec<(&EngineKind, &Json)> = report
        .configs
        .iter()
        .filter(|c| c.threads == threads)
        .filter_map(|c| {
            c.query(query)
                .and_then(|q| q.rows.as_ref())
                .map(|r| (&c.engine, r))
        })
        .collect();
    if rows.len() < 2 {
        return "n/a".into();
    }
    for (e, r) in &rows[1..] {
        if let Err(msg) = compare_rows(rows[0].1, r) {
            // With a third engine, say which side it takes.
            let agree: Vec<&str> = rows[1..]
                .iter()
                .filter(|(x, y)| x != e && compare_rows(rows[0].1, y).is_ok())
                .map(|(x, _)| x.name())
                .collect();
            return format!(
                "**NO ({} vs {}): {}{}**",
                rows[0].0.name(),
                e.name(),
                short_err(&msg),
                if agree.is_empty() {
                    String::new()
                } else {
                    format!("; {} = {}", agree.join(", "), rows[0].0.name())
                }
            );
        }
    }
    "yes".into()
}

/// Seed 000's policy table (its Tables 3 and 4): each query's median under
/// every dispatch policy that ran (`--engines kith:1T1S,...`), beside the
/// automatic choice, and how far nTkS (the default) is from the best.
fn policy_table(r: &Report, ran: &[&crate::suite::Query], o: &mut String) {
    let policies: Vec<EngineKind> = (0..KITH_POLICIES.len())
        .map(EngineKind::KithPolicy)
        .filter(|e| r.engines.contains(e))
        .collect();
    if policies.is_empty() {
        return;
    }
    let ntks = EngineKind::parse("kith:nTkS");
    let _ = writeln!(o, "\n### Dispatch policies\n");
    let mut head = "| query | threads | kith (automatic) |".to_string();
    let mut rule = "|---|---:|---:|".to_string();
    for e in &policies {
        let _ = write!(head, " {} |", e.name());
        rule.push_str("---:|");
    }
    let _ = writeln!(o, "{head} nTkS ÷ best policy |");
    let _ = writeln!(o, "{rule}---:|");
    for q in ran {
        for &t in &r.threads {
            let (auto, _) = cell(r.config(&EngineKind::Kith, t), q.name);
            let mut line = format!("| {} | {t} | {auto} |", q.name);
            let mut best: Option<f64> = None;
            for e in &policies {
                let (c, s) = cell(r.config(e, t), q.name);
                if let Some(s) = s {
                    best = Some(best.map_or(s.median, |b: f64| b.min(s.median)));
                }
                let _ = write!(line, " {c} |");
            }
            let ntks_median = ntks
                .as_ref()
                .and_then(|e| cell(r.config(e, t), q.name).1)
                .map(|s| s.median);
            let vs = match (ntks_median, best) {
                (Some(n), Some(b)) if b > 0.0 => format!("{:.2}", n / b),
                _ => "–".into(),
            };
            let _ = writeln!(o, "{line} {vs} |");
        }
    }
}

fn edges_per_core(edges: Option<u64>, s: Option<Summary>, threads: usize) -> Option<f64> {
    let (e, s) = (edges?, s?);
    (s.median > 0.0).then(|| e as f64 / (s.median / 1e3 * threads as f64))
}

/// The report as Markdown: how it was run, then the query, policy and load
/// tables, and last any result mismatches.
pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    setup(r, &mut o);
    // Queries left out by `--queries` have no row.
    let ran: Vec<_> = r
        .suite
        .queries
        .iter()
        .filter(|q| r.configs.iter().any(|c| c.query(q.name).is_some()))
        .collect();
    let mut mismatches = queries_table(r, &ran, &mut o);
    policy_table(r, &ran, &mut o);
    // Each engine must also agree with itself across thread counts.
    thread_mismatches(r, &mut mismatches);
    query_texts(r, &ran, &mut o);
    load_table(r, &mut o);
    if !mismatches.is_empty() {
        let _ = writeln!(
            o,
            "\n### ⚠ RESULT MISMATCHES — timings of these rows are not comparable\n"
        );
        for m in mismatches {
            let _ = writeln!(o, "- {m}");
        }
    }
    o
}

/// The report's heading and the list that says what ran where and how.
fn setup(r: &Report, o: &mut String) {
    let m = &r.meta;
    let _ = writeln!(o, "## Suite `{}`\n", r.suite.name);
    let _ = writeln!(o, "{}\n", r.suite.description);
    let _ = writeln!(o, "- date: {}", m.date);
    let _ = writeln!(o, "- git revision: `{}`", m.git_rev);
    let _ = writeln!(
        o,
        "- machine: {} cores{}, {} memory",
        m.cores,
        m.cpu.as_ref().map_or(String::new(), |c| format!(" ({c})")),
        m.mem_bytes.map_or("?".into(), |b| format!(
            "{:.1} GiB",
            b as f64 / (MIB * 1024.0)
        ))
    );
    let _ = writeln!(o, "- command: `{}`", m.command);
    let _ = writeln!(o, "- data: {}", r.data.describe());
    let versions: Vec<String> = r
        .engines
        .iter()
        .map(|e| {
            let v = r
                .configs
                .iter()
                .find(|c| &c.engine == e)
                .and_then(|c| c.version.clone())
                .unwrap_or_else(|| "?".into());
            format!("{} {v}", e.name())
        })
        .collect();
    let _ = writeln!(o, "- engines: {}", versions.join(", "));
    let _ = writeln!(
        o,
        "- method: fresh database per engine and thread count; {} warm-up + {} timed runs per query; times in ms as median (min–max), measured inside the driver process (execute + fetch all rows); loads from {}; buffer pool {}",
        r.warmup,
        r.runs,
        r.load_format.ext(),
        r.buffer_pool_bytes.map_or("engine default".into(), |b| format!("{:.0} MiB for every engine", b as f64 / MIB))
    );
    for c in r.configs.iter().filter(|c| c.error.is_some()) {
        let _ = writeln!(
            o,
            "- **{} ({} threads) did not run: {}**",
            c.engine.name(),
            c.threads,
            short_err(c.error.as_deref().unwrap_or(""))
        );
    }
    if r.engines.contains(&EngineKind::Networkit) {
        let _ = writeln!(
            o,
            "- networkit: the loads read the CSV files into one in-memory `nk.Graph` (dense node ids; directed, or undirected for `-[]-` walks); a query is `nk.distance.SPSP` from its sources (one BFS each, in parallel over the sources on the thread count), and its time is that run only; the driver then keeps the distances in 1..max hops and adds them up (untimed). Queries without a NetworKit form are not run on it."
        );
    }
}

/// The queries table: one row per query that ran and thread count. Returns
/// the rows whose engines disagree on the results.
fn queries_table(r: &Report, ran: &[&crate::suite::Query], o: &mut String) -> Vec<String> {
    // The references (DuckDB's SQL, NetworKit's BFS) get their own columns
    // only when they ran.
    let refs: Vec<EngineKind> = [EngineKind::Duckdb, EngineKind::Networkit]
        .into_iter()
        .filter(|e| r.engines.contains(e))
        .collect();
    let _ = writeln!(o, "\n### Queries\n");
    let mut head = String::new();
    let mut rule = String::new();
    for e in &refs {
        let _ = write!(head, " {0} median ms | {0}/kith ratio |", e.name());
        rule.push_str("---:|---:|");
    }
    let _ = writeln!(
        o,
        "| query | threads | kith median ms | kuzu median ms | kuzu/kith ratio |{head} results equal | kith Medges/s/core | kuzu Medges/s/core |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|{rule}---|---:|---:|");
    let mut mismatches = Vec::new();
    for q in ran {
        for &t in &r.threads {
            if let Some(mismatch) = query_row(r, q, t, &refs, o) {
                mismatches.push(mismatch);
            }
        }
    }
    mismatches
}

/// One row of the queries table: `q` at `t` threads on kith, kuzu and the
/// `refs`. Returns the mismatch line when the engines' results differ.
fn query_row(
    r: &Report,
    q: &crate::suite::Query,
    t: usize,
    refs: &[EngineKind],
    o: &mut String,
) -> Option<String> {
    let kith = EngineKind::Kith;
    let kuzu = EngineKind::Kuzu;
    let (kc, ks) = cell(r.config(&kith, t), q.name);
    let (zc, zs) = cell(r.config(&kuzu, t), q.name);
    let ratio_of = |k: Option<Summary>, z: Option<Summary>| match (k, z) {
        (Some(k), Some(z)) if k.median > 0.0 => format!("{:.2}", z.median / k.median),
        _ => "–".into(),
    };
    let ratio = ratio_of(ks, zs);
    let mut ref_cells = String::new();
    for e in refs {
        let (dc, ds) = cell(r.config(e, t), q.name);
        let _ = write!(ref_cells, " {dc} | {} |", ratio_of(ks, ds));
    }
    let eq = equality(r, q.name, t);
    let mismatch = eq
        .starts_with("**NO")
        .then(|| format!("{} at {t} threads: {eq}", q.name));
    let (ke, ze) = if q.scans == Scans::AllEdges {
        (
            edges_per_core(r.data.edges, ks, t),
            edges_per_core(r.data.edges, zs, t),
        )
    } else {
        (None, None)
    };
    let f = |x: Option<f64>| x.map_or("–".into(), |v| format!("{:.1}", v / 1e6));
    let _ = writeln!(
        o,
        "| {} | {t} | {kc} | {zc} | {ratio} |{ref_cells} {eq} | {} | {} |",
        q.name,
        f(ke),
        f(ze)
    );
    mismatch
}

/// Adds to `mismatches` every query whose results on one engine differ
/// between thread counts.
fn thread_mismatches(r: &Report, mismatches: &mut Vec<String>) {
    for q in r.suite.queries {
        for e in &r.engines {
            let rows: Vec<(usize, &Json)> = r
                .configs
                .iter()
                .filter(|c| &c.engine == e)
                .filter_map(|c| {
                    c.query(q.name)
                        .and_then(|x| x.rows.as_ref())
                        .map(|rows| (c.threads, rows))
                })
                .collect();
            for (t, other) in rows.iter().skip(1) {
                if let Err(msg) = compare_rows(rows[0].1, other) {
                    mismatches.push(format!(
                        "{} on {}: {} threads vs {} threads: {}",
                        q.name,
                        e.name(),
                        rows[0].0,
                        t,
                        short_err(&msg)
                    ));
                }
            }
        }
    }
}

/// The Cypher text of each query that ran, and each query's results from the
/// first engine that answered it.
fn query_texts(r: &Report, ran: &[&crate::suite::Query], o: &mut String) {
    let _ = writeln!(o, "\nQueries:\n");
    for q in ran {
        let _ = writeln!(o, "- `{}`: `{}`", q.name, q.cypher);
    }
    let _ = writeln!(o, "\nResults (first engine that answered):\n");
    for q in r.suite.queries {
        let rows = r.configs.iter().find_map(|c| {
            c.query(q.name)
                .and_then(|x| x.rows.as_ref())
                .map(|rows| (c, rows))
        });
        if let Some((c, rows)) = rows {
            let _ = writeln!(
                o,
                "- `{}`: `{}` ({} {}t)",
                q.name,
                rows,
                c.engine.name(),
                c.threads
            );
        }
    }
}

/// The load, memory and size table: one row per engine and thread count.
fn load_table(r: &Report, o: &mut String) {
    let _ = writeln!(o, "\n### Load, memory, size\n");
    let mut head = String::from("| engine | threads |");
    let mut sep = String::from("|---|---:|");
    for l in r.suite.loads {
        let _ = write!(head, " {} ms |", l.name());
        sep.push_str("---:|");
    }
    head.push_str(" peak RSS MiB | start RSS MiB | DB size MiB |");
    sep.push_str("---:|---:|---:|");
    let _ = writeln!(o, "{head}\n{sep}");
    for c in &r.configs {
        let mut line = format!("| {} | {} |", c.engine.name(), c.threads);
        for l in r.suite.loads {
            let s = c.loads.iter().find(|x| x.name == l.name());
            let v = match s {
                None => "–".into(),
                Some(s) => match &s.error {
                    Some(e) => format!("error: {}", short_err(e)),
                    None => ms(s.ms),
                },
            };
            let _ = write!(line, " {v} |");
        }
        let _ = write!(
            line,
            " {} | {} | {} |",
            mib_kb(c.peak_rss_kb),
            mib_kb(c.start_rss_kb),
            mib_bytes(c.db_bytes)
        );
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(
        o,
        "\nPeak RSS is the driver process's VmHWM over load and queries (the Python engines' include the interpreter: see start RSS). DB size is every file under the database directory after close. Medges/s/core = edges in the data set / (median time × threads)."
    );
}

fn step_json(s: &crate::runner::StepResult) -> Json {
    Json::Obj(vec![
        ("name".into(), Json::str(s.name.as_str())),
        ("ms".into(), Json::opt_f64(s.ms)),
        ("error".into(), Json::opt_str(s.error.as_deref())),
    ])
}

pub fn to_json(r: &Report) -> Json {
    let m = &r.meta;
    let configs = r
        .configs
        .iter()
        .map(|c| {
            let queries = c
                .queries
                .iter()
                .map(|q| {
                    let s = q.summary();
                    Json::Obj(vec![
                        ("name".into(), Json::str(q.name.as_str())),
                        ("cypher".into(), Json::str(q.cypher.as_str())),
                        (
                            "times_ms".into(),
                            Json::Arr(q.times_ms.iter().map(|&x| Json::Float(x)).collect()),
                        ),
                        ("median_ms".into(), Json::opt_f64(s.map(|s| s.median))),
                        ("min_ms".into(), Json::opt_f64(s.map(|s| s.min))),
                        ("max_ms".into(), Json::opt_f64(s.map(|s| s.max))),
                        ("rows".into(), q.rows.clone().unwrap_or(Json::Null)),
                        ("error".into(), Json::opt_str(q.error.as_deref())),
                    ])
                })
                .collect();
            Json::Obj(vec![
                ("engine".into(), Json::str(c.engine.name())),
                ("version".into(), Json::opt_str(c.version.as_deref())),
                ("threads".into(), Json::Int(c.threads as i64)),
                ("error".into(), Json::opt_str(c.error.as_deref())),
                (
                    "ddl".into(),
                    Json::Arr(c.ddl.iter().map(step_json).collect()),
                ),
                (
                    "loads".into(),
                    Json::Arr(c.loads.iter().map(step_json).collect()),
                ),
                ("queries".into(), Json::Arr(queries)),
                ("start_rss_kb".into(), Json::opt_u64(c.start_rss_kb)),
                ("peak_rss_kb".into(), Json::opt_u64(c.peak_rss_kb)),
                ("db_bytes".into(), Json::opt_u64(c.db_bytes)),
            ])
        })
        .collect();
    let equal = r
        .suite
        .queries
        .iter()
        .flat_map(|q| {
            r.threads.iter().map(move |&t| {
                Json::Obj(vec![
                    ("query".into(), Json::str(q.name)),
                    ("threads".into(), Json::Int(t as i64)),
                    (
                        "equal".into(),
                        Json::str(equality(r, q.name, t).replace("**", "")),
                    ),
                ])
            })
        })
        .collect();
    Json::Obj(vec![
        ("suite".into(), Json::str(r.suite.name)),
        ("date".into(), Json::str(m.date.as_str())),
        ("git_rev".into(), Json::str(m.git_rev.as_str())),
        ("cores".into(), Json::Int(m.cores as i64)),
        ("mem_bytes".into(), Json::opt_u64(m.mem_bytes)),
        ("cpu".into(), Json::opt_str(m.cpu.as_deref())),
        ("command".into(), Json::str(m.command.as_str())),
        ("data_dir".into(), Json::str(r.data.dir.to_string_lossy())),
        ("data".into(), r.data.meta.clone()),
        ("nodes".into(), Json::opt_u64(r.data.nodes)),
        ("edges".into(), Json::opt_u64(r.data.edges)),
        ("warmup".into(), Json::Int(r.warmup as i64)),
        ("runs".into(), Json::Int(r.runs as i64)),
        ("load_format".into(), Json::str(r.load_format.ext())),
        (
            "buffer_pool_bytes".into(),
            Json::opt_u64(r.buffer_pool_bytes),
        ),
        ("configs".into(), Json::Arr(configs)),
        ("results_equal".into(), Json::Arr(equal)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;
    use crate::runner::{DataInfo, QueryRun, RunMeta, StepResult};
    use crate::suite;

    fn config(
        engine: EngineKind,
        threads: usize,
        rows: &str,
        times: &[f64],
        err: Option<&str>,
    ) -> ConfigResult {
        let s = suite::get("foundation").unwrap();
        ConfigResult {
            engine,
            version: Some("x".into()),
            threads,
            error: None,
            ddl: vec![],
            loads: vec![StepResult {
                name: "COPY Person".into(),
                ms: Some(10.0),
                error: None,
            }],
            queries: s
                .queries
                .iter()
                .map(|q| QueryRun {
                    name: q.name.into(),
                    cypher: q.cypher.into(),
                    times_ms: if err.is_some() {
                        vec![]
                    } else {
                        times.to_vec()
                    },
                    rows: if err.is_some() {
                        None
                    } else {
                        Some(json::parse(rows).unwrap())
                    },
                    error: err.map(String::from),
                })
                .collect(),
            start_rss_kb: Some(1024),
            peak_rss_kb: Some(4096),
            db_bytes: Some(1 << 20),
        }
    }

    fn report(configs: Vec<ConfigResult>) -> Report {
        Report {
            suite: suite::get("foundation").unwrap(),
            meta: RunMeta {
                date: "d".into(),
                git_rev: "r".into(),
                cores: 2,
                mem_bytes: None,
                cpu: None,
                command: "kith-bench run".into(),
            },
            data: DataInfo {
                dir: "/tmp/x".into(),
                meta: Json::Null,
                nodes: Some(10),
                edges: Some(1_000_000),
            },
            runs: 3,
            warmup: 1,
            buffer_pool_bytes: None,
            engines: vec![EngineKind::Kith, EngineKind::Kuzu],
            threads: vec![1, 2],
            configs,
            load_format: crate::suite::LoadFormat::Csv,
        }
    }

    #[test]
    fn ratios_equality_and_mismatch_flags() {
        let r = report(vec![
            config(EngineKind::Kith, 1, "[[5, 1.5]]", &[10.0, 12.0, 11.0], None),
            config(EngineKind::Kith, 2, "[[5, 1.5]]", &[6.0], None),
            config(
                EngineKind::Kuzu,
                1,
                "[[5, 1.5000000000001]]",
                &[20.0, 25.0, 22.0],
                None,
            ),
            config(EngineKind::Kuzu, 2, "[[6, 1.5]]", &[9.0], None),
        ]);
        let md = markdown(&r);
        assert!(
            md.contains(
                "| one-hop-count | 1 | 11.00 (10.00–12.00) | 22.00 (20.00–25.00) | 2.00 | yes |"
            ),
            "{md}"
        );
        assert!(md.contains("**NO (kith vs kuzu)"), "{md}");
        assert!(md.contains("RESULT MISMATCHES"), "{md}");
        assert!(md.contains("on kuzu: 1 threads vs 2 threads"), "{md}");
        assert!(!md.contains("on kith: 1 threads"), "{md}");
        // 1e6 edges / (11 ms × 1 thread) = 90.9 Medges/s/core.
        assert!(md.contains("| 90.9 |"), "{md}");
        let j = to_json(&r);
        assert_eq!(json::parse(&j.to_string()).unwrap(), j);
    }

    #[test]
    fn policy_table_compares_nt_ks_with_the_best_policy() {
        let nt1s = EngineKind::parse("kith:nt1s").unwrap();
        let ntks = EngineKind::parse("KITH:nTkS").unwrap();
        assert_eq!((nt1s.name(), ntks.policy()), ("kith-nT1S", Some("nTkS")));
        assert_eq!(EngineKind::parse("kith:nTkX"), None);
        let mut r = report(vec![
            config(EngineKind::Kith, 1, "[[5, 1.5]]", &[10.0], None),
            config(nt1s.clone(), 1, "[[5, 1.5]]", &[8.0], None),
            config(ntks.clone(), 1, "[[5, 1.5]]", &[12.0], None),
        ]);
        r.engines = vec![EngineKind::Kith, nt1s, ntks];
        r.threads = vec![1];
        let md = markdown(&r);
        assert!(
            md.contains("| query | threads | kith (automatic) | kith-nT1S | kith-nTkS | nTkS ÷ best policy |"),
            "{md}"
        );
        assert!(
            md.contains("| one-hop-count | 1 | 10.00 (10.00–10.00) | 8.00 (8.00–8.00) | 12.00 (12.00–12.00) | 1.50 |"),
            "{md}"
        );
        // Without pinned policies there is no such table.
        let plain = markdown(&report(vec![config(
            EngineKind::Kith,
            1,
            "[[5]]",
            &[1.0],
            None,
        )]));
        assert!(!plain.contains("Dispatch policies"), "{plain}");
    }

    /// NetworKit (like DuckDB) gets a median and a ratio column beside
    /// KithDB's only when it ran, and a line saying what its time covers.
    #[test]
    fn networkit_columns_only_when_it_ran() {
        let mut r = report(vec![
            config(EngineKind::Kith, 1, "[[5, 1.5]]", &[10.0], None),
            config(EngineKind::Networkit, 1, "[[5, 1.5]]", &[4.0], None),
        ]);
        r.engines = vec![EngineKind::Kith, EngineKind::Networkit];
        r.threads = vec![1];
        let md = markdown(&r);
        assert!(
            md.contains(
                "| kuzu/kith ratio | networkit median ms | networkit/kith ratio | results equal |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| one-hop-count | 1 | 10.00 (10.00–10.00) | not run | – | 4.00 (4.00–4.00) | 0.40 | yes |"),
            "{md}"
        );
        assert!(md.contains("- networkit: the loads read"), "{md}");
        r.engines.push(EngineKind::Duckdb);
        let md = markdown(&r);
        assert!(
            md.contains("| duckdb median ms | duckdb/kith ratio | networkit median ms | networkit/kith ratio |"),
            "{md}"
        );
        let plain = markdown(&report(vec![config(
            EngineKind::Kith,
            1,
            "[[5]]",
            &[1.0],
            None,
        )]));
        assert!(!plain.contains("networkit"), "{plain}");
    }

    #[test]
    fn engine_errors_are_cells_not_failures() {
        let r = report(vec![
            config(
                EngineKind::Kith,
                1,
                "",
                &[],
                Some("Not supported: no executor"),
            ),
            config(EngineKind::Kuzu, 1, "[[5]]", &[2.0], None),
        ]);
        let md = markdown(&r);
        assert!(md.contains("error: Not supported: no executor"), "{md}");
        assert!(!md.contains("MISMATCHES"), "{md}");
    }
}
