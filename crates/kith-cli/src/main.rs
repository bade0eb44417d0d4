//! `kith`: the KithDB shell. Runs Cypher statements from `-c`, from piped
//! standard input, from an interactive prompt, or the bundled demo.

mod demo;
mod format;
mod repl;

use std::io::{self, BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kith::{Config, Connection, Database, Error, QueryResult};

use crate::format::{Format, TableStyle};

/// The KithDB shell: run Cypher statements interactively or in batch.
///
/// With -c, runs the given statements; otherwise, when standard input is not a
/// terminal, runs the statements read from it; otherwise starts an interactive
/// prompt. In batch mode the first failing statement stops the run with exit
/// status 1.
#[derive(Parser, Debug)]
#[command(name = "kith", version)]
struct Args {
    /// Database path; ":memory:" for an in-memory database.
    #[arg(value_name = "DB_PATH", default_value = ":memory:")]
    db_path: String,

    /// Statements to run (separated by `;`), then exit.
    #[arg(short = 'c', long = "command", value_name = "STATEMENTS")]
    command: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,

    /// Worker threads (default: available cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    threads: Option<u32>,

    /// Buffer pool size, e.g. 512MB, 1GB, 2GiB, 4G (K/M/G/T and KiB/MiB/GiB/TiB
    /// are powers of 1024; KB/MB/GB/TB powers of 1000; a bare number is bytes).
    #[arg(long = "buffer-pool", value_name = "SIZE", value_parser = parse_size)]
    buffer_pool: Option<u64>,

    /// Open the database read-only.
    #[arg(long)]
    read_only: bool,

    /// How long a write waits for another process's or connection's write
    /// transaction before failing, in milliseconds (default 60000).
    #[arg(long = "writer-wait-ms", value_name = "MS")]
    writer_wait_ms: Option<u64>,

    /// Load the bundled demo graph and run sample queries (then any -c
    /// statements).
    #[arg(long)]
    demo: bool,
}

/// Parses a size such as `1GB`, `512 MiB`, `4G` or `1048576` into bytes.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("'{text}' is not a size (try e.g. 1GB or 512MiB)"));
    }
    let number: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (try e.g. 1GB or 512MiB)"))?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
            "unknown size unit '{other}' in '{text}' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
        ))
        }
    };
    let bytes = number * multiplier as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("size '{text}' is too large"));
    }
    let bytes = bytes.round() as u64;
    if bytes == 0 {
        return Err("the buffer pool size must be greater than zero".into());
    }
    Ok(bytes)
}

/// Runs one statement; implemented by [`Connection`] and by test doubles.
pub trait Execute {
    fn execute(&self, statement: &str) -> kith::Result<QueryResult>;
}

impl Execute for Connection {
    fn execute(&self, statement: &str) -> kith::Result<QueryResult> {
        self.query(statement)
    }
}

/// Byte offset of `inner` within `outer` when `inner` is a slice of it.
fn offset_in(outer: &str, inner: &str) -> Option<usize> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (start + inner.len() <= outer.len()).then_some(start)
}

/// Renders an error against the script it came from: the statement was
/// `statement` (a slice of `script`), so its span is shifted to point into the
/// script and lines/columns count from the start of the script.
pub fn render_error(err: Error, script: &str, statement: &str) -> String {
    let shifted = offset_in(script, statement).and_then(|off| {
        let off = u32::try_from(off).ok()?;
        let mut e = err.clone();
        if let Some(span) = e.span.as_mut() {
            span.start = span.start.checked_add(off)?;
            span.end = span.end.checked_add(off)?;
            // Re-render the context (the engine renders it against the
            // statement alone) against the whole script.
            e.context = None;
        }
        Some(e)
    });
    match shifted {
        Some(e) => e.with_source(script).to_string(),
        None => err.with_source(statement).to_string(),
    }
}

/// How a run of statements ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every statement succeeded.
    Ok,
    /// A statement failed; the rest were not run.
    Failed,
    /// Standard output went away (a closed pipe); stop quietly.
    OutputClosed,
}

/// Runs the statements of `script` one at a time, printing each result and
/// flushing right after it (so whoever reads the output knows exactly which
/// statements have finished, and committed); stops at the first error, which
/// goes to `err` with its position in the script.
pub fn run_script(
    exec: &dyn Execute,
    script: &str,
    format: Format,
    style: TableStyle,
    out: &mut dyn Write,
    err: &mut dyn Write,
    after_each: impl FnMut(),
) -> Outcome {
    run_region(exec, script, script, format, style, out, err, after_each)
}

/// [`run_script`] for the statements of `region`, a slice of `script` (error
/// positions count from the start of `script`).
#[allow(clippy::too_many_arguments)]
fn run_region(
    exec: &dyn Execute,
    script: &str,
    region: &str,
    format: Format,
    style: TableStyle,
    out: &mut dyn Write,
    err: &mut dyn Write,
    mut after_each: impl FnMut(),
) -> Outcome {
    for stmt in kith::split_statements(region) {
        let stmt = stmt.trim();
        let result = exec.execute(stmt);
        after_each();
        match result {
            Ok(result) => {
                let written =
                    format::write_result(out, format, style, &result).and_then(|()| out.flush());
                if let Err(e) = written {
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        return Outcome::OutputClosed;
                    }
                    let _ = writeln!(err, "Error writing output: {e}");
                    return Outcome::Failed;
                }
            }
            Err(e) => {
                let _ = writeln!(err, "{}", render_error(e, script, stmt));
                let _ = err.flush();
                return Outcome::Failed;
            }
        }
    }
    Outcome::Ok
}

/// Ctrl-C handling shared with the signal handler: while a statement runs,
/// the first Ctrl-C interrupts it and a second one exits the process (so an
/// engine that does not notice the interrupt can still be stopped).
pub struct Interrupter {
    conn: Arc<Connection>,
    running: AtomicBool,
    presses: AtomicU32,
}

impl Interrupter {
    fn new(conn: Arc<Connection>) -> Arc<Interrupter> {
        let this = Arc::new(Interrupter {
            conn,
            running: AtomicBool::new(false),
            presses: AtomicU32::new(0),
        });
        let handler = Arc::clone(&this);
        // Without a handler Ctrl-C simply ends the process, which is an
        // acceptable fallback, so a failure to install one is not fatal.
        let _ = ctrlc::set_handler(move || handler.on_ctrl_c());
        this
    }

    fn on_ctrl_c(&self) {
        if self.running.load(Ordering::SeqCst) {
            if self.presses.fetch_add(1, Ordering::SeqCst) == 0 {
                eprintln!("\nInterrupting... (press Ctrl-C again to exit)");
                self.conn.interrupt();
            } else {
                std::process::exit(130);
            }
        } else {
            // Not at a readline prompt (which gets Ctrl-C as a key) and not
            // running: e.g. reading piped input. Behave like the default.
            std::process::exit(130);
        }
    }

    fn start(&self) {
        self.presses.store(0, Ordering::SeqCst);
        self.running.store(true, Ordering::SeqCst);
    }

    fn stop(&self) {
        self.running.store(false, Ordering::SeqCst);
    }
}

/// The connection plus what wraps each statement: interrupt handling and a
/// progress bar.
pub struct Shell {
    conn: Arc<Connection>,
    interrupter: Arc<Interrupter>,
    progress: Option<ProgressReporter>,
}

impl Shell {
    fn new(db: &Database) -> Shell {
        let mut conn = Connection::new(db);
        let progress = io::stderr().is_terminal().then(ProgressReporter::new);
        if let Some(p) = &progress {
            conn.set_progress_callback(Some(p.callback()));
        }
        let conn = Arc::new(conn);
        let interrupter = Interrupter::new(Arc::clone(&conn));
        Shell {
            conn,
            interrupter,
            progress,
        }
    }

    /// True while an explicit transaction is open (the prompt shows it).
    pub fn in_transaction(&self) -> bool {
        self.conn.in_transaction()
    }

    fn finish_progress(&self) {
        if let Some(p) = &self.progress {
            p.finish();
        }
    }
}

impl Execute for Shell {
    fn execute(&self, statement: &str) -> kith::Result<QueryResult> {
        self.interrupter.start();
        let result = self.conn.query(statement);
        self.interrupter.stop();
        self.finish_progress();
        result
    }
}

/// Drives an indicatif bar from the connection's progress callback.
struct ProgressReporter {
    bar: Arc<Mutex<Option<ProgressBar>>>,
}

impl ProgressReporter {
    fn new() -> ProgressReporter {
        ProgressReporter {
            bar: Arc::new(Mutex::new(None)),
        }
    }

    fn callback(&self) -> Arc<dyn Fn(kith::Progress) + Send + Sync> {
        let slot = Arc::clone(&self.bar);
        Arc::new(move |p: kith::Progress| {
            if p.total == 0 {
                return;
            }
            let mut guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
            let bar = guard.get_or_insert_with(|| {
                let bar =
                    ProgressBar::with_draw_target(Some(p.total), ProgressDrawTarget::stderr());
                if let Ok(style) = ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% (eta {eta})",
                ) {
                    bar.set_style(style);
                }
                bar
            });
            bar.set_length(p.total);
            bar.set_position(p.done.min(p.total));
        })
    }

    fn finish(&self) {
        let mut guard = self.bar.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(bar) = guard.take() {
            bar.finish_and_clear();
        }
    }
}

fn exit_for(outcome: Outcome) -> ExitCode {
    match outcome {
        Outcome::Ok | Outcome::OutputClosed => ExitCode::SUCCESS,
        Outcome::Failed => ExitCode::FAILURE,
    }
}

fn run_batch(shell: &Shell, script: &str, format: Format) -> Outcome {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut err = io::stderr();
    run_script(
        shell,
        script,
        format,
        TableStyle::Ascii,
        &mut out,
        &mut err,
        || {},
    )
}

/// Batch mode on standard input: runs the statements read so far as soon as
/// the input ends with a terminating `;`, not at the end of the input, so a
/// caller writing statements into a pipe reads each result (flushed) before it
/// sends the next one, and knows which commits were acknowledged.
fn run_stdin(shell: &Shell, input: &mut dyn BufRead, format: Format) -> Outcome {
    let stdout = io::stdout();
    let mut err = io::stderr();
    let mut script = String::new();
    // Start of the statements not run yet.
    let mut start = 0;
    loop {
        let before = script.len();
        match input.read_line(&mut script) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                script.truncate(before);
                let _ = writeln!(err, "Error reading standard input: {e}");
                return Outcome::Failed;
            }
        }
        if kith::is_complete_script(&script[start..]) {
            let mut out = stdout.lock();
            let region = &script[start..];
            let outcome = run_region(
                shell,
                &script,
                region,
                format,
                TableStyle::Ascii,
                &mut out,
                &mut err,
                || {},
            );
            if outcome != Outcome::Ok {
                return outcome;
            }
            start = script.len();
        }
    }
    let mut out = stdout.lock();
    run_region(
        shell,
        &script,
        &script[start..],
        format,
        TableStyle::Ascii,
        &mut out,
        &mut err,
        || {},
    )
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = Config {
        buffer_pool_bytes: args.buffer_pool,
        max_threads: args.threads.map(|t| t as usize),
        read_only: args.read_only,
        writer_wait: args.writer_wait_ms.map(std::time::Duration::from_millis),
    };
    let db = match Database::open(&args.db_path, config) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("Cannot open database '{}': {e}", args.db_path);
            return ExitCode::FAILURE;
        }
    };
    if let Some(note) = db.open_note() {
        eprintln!("Note: {note}");
    }
    let shell = Shell::new(&db);

    if args.demo {
        let outcome = demo::run(&shell, args.format);
        if outcome != Outcome::Ok {
            return exit_for(outcome);
        }
        return match &args.command {
            Some(cmd) => exit_for(run_batch(&shell, cmd, args.format)),
            None => ExitCode::SUCCESS,
        };
    }
    if let Some(cmd) = &args.command {
        return exit_for(run_batch(&shell, cmd, args.format));
    }
    if !io::stdin().is_terminal() {
        return exit_for(run_stdin(&shell, &mut io::stdin().lock(), args.format));
    }
    repl::run(&shell, args.format);
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::{ErrorKind, Span};
    use std::cell::RefCell;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4g"), Ok(4 << 30));
        assert_eq!(parse_size("512 MB"), Ok(512_000_000));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("GB").is_err());
        assert!(parse_size("1XB").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("1.2.3GB").is_err());
        assert!(parse_size("99999999999TB").is_err());
        assert!(parse_size("-1GB").is_err());
    }

    #[test]
    fn args_parse() {
        let a = Args::try_parse_from(["kith"]).unwrap();
        assert_eq!(a.db_path, ":memory:");
        assert_eq!(a.format, Format::Table);
        assert!(a.command.is_none() && !a.demo && !a.read_only);

        let a = Args::try_parse_from([
            "kith",
            "/tmp/db",
            "-c",
            "RETURN 1",
            "--format",
            "jsonl",
            "--threads",
            "4",
            "--buffer-pool",
            "1GB",
            "--read-only",
        ])
        .unwrap();
        assert_eq!(a.db_path, "/tmp/db");
        assert_eq!(a.command.as_deref(), Some("RETURN 1"));
        assert_eq!(a.format, Format::Jsonl);
        assert_eq!(a.threads, Some(4));
        assert_eq!(a.buffer_pool, Some(1_000_000_000));
        assert!(a.read_only);

        assert!(Args::try_parse_from(["kith", "--format", "xml"]).is_err());
        assert!(Args::try_parse_from(["kith", "--threads", "0"]).is_err());
        assert!(Args::try_parse_from(["kith", "--threads", "x"]).is_err());
        assert!(Args::try_parse_from(["kith", "--buffer-pool", "lots"]).is_err());
        assert!(Args::try_parse_from(["kith", "a", "b"]).is_err());
    }

    /// Records statements; fails the ones containing "BAD" with a syntax error
    /// on the word.
    struct Fake {
        seen: RefCell<Vec<String>>,
    }

    impl Execute for Fake {
        fn execute(&self, statement: &str) -> kith::Result<QueryResult> {
            self.seen.borrow_mut().push(statement.to_string());
            match statement.find("BAD") {
                Some(pos) => Err(Error::syntax(Span::new(pos, pos + 3), "unexpected 'BAD'")),
                None => Ok(QueryResult::default()),
            }
        }
    }

    fn run(script: &str) -> (Outcome, Vec<String>, String, String) {
        let fake = Fake {
            seen: RefCell::new(Vec::new()),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut calls = 0;
        let outcome = run_script(
            &fake,
            script,
            Format::Csv,
            TableStyle::Ascii,
            &mut out,
            &mut err,
            || calls += 1,
        );
        let seen = fake.seen.into_inner();
        assert_eq!(calls, seen.len());
        (
            outcome,
            seen,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn runs_statements_one_at_a_time() {
        let (outcome, seen, out, err) = run("RETURN 1;\n  RETURN ';';\n\n");
        assert_eq!(outcome, Outcome::Ok);
        assert_eq!(seen, ["RETURN 1", "RETURN ';'"]);
        // Results without columns print nothing.
        assert_eq!(out, "");
        assert_eq!(err, "");
    }

    #[test]
    fn stops_at_first_error_with_caret_relative_to_script() {
        let (outcome, seen, _, err) = run("RETURN 1;\nRETURN BAD;\nRETURN 3;");
        assert_eq!(outcome, Outcome::Failed);
        assert_eq!(seen, ["RETURN 1", "RETURN BAD"]);
        assert!(err.starts_with("Syntax error: unexpected 'BAD'"), "{err}");
        assert!(err.contains("line 2, column 8"), "{err}");
        assert!(err.contains("\n  RETURN BAD;\n         ^^^"), "{err:?}");
    }

    #[test]
    fn engine_rendered_context_is_redone_against_the_script() {
        let script = "RETURN 1;\nRETURN BAD";
        let stmt = &script[10..];
        let e = Error::syntax(Span::new(7, 10), "unexpected 'BAD'").with_source(stmt);
        let s = render_error(e, script, stmt);
        assert!(s.contains("line 2, column 8"), "{s}");
        assert!(s.ends_with("\n  RETURN BAD\n         ^^^"), "{s:?}");
    }

    #[test]
    fn errors_without_span_print_plainly() {
        let e = Error::new(ErrorKind::NotSupported, "nope");
        assert_eq!(
            render_error(e, "RETURN 1", "RETURN 1"),
            "Not supported: nope"
        );
    }

    #[test]
    fn render_error_falls_back_to_statement_text() {
        let e = Error::syntax(Span::new(0, 1), "bad");
        let other = String::from("X");
        let s = render_error(e, "unrelated script", &other);
        assert!(s.contains("line 1, column 1"), "{s}");
        assert!(s.ends_with("  X\n  ^"), "{s:?}");
    }

    #[test]
    fn empty_script_runs_nothing() {
        let (outcome, seen, out, _) = run("  \n ; ;\n");
        assert_eq!(outcome, Outcome::Ok);
        assert!(seen.is_empty());
        assert_eq!(out, "");
    }
}
