//! The interactive prompt: multi-line statements, history, shell commands.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use crate::format::{Format, TableStyle};
use crate::{run_script, Outcome, Shell};

const PROMPT: &str = "kith> ";
/// The prompt while an explicit transaction is open.
const TXN_PROMPT: &str = "kith*> ";
const CONTINUATION: &str = "  ...> ";

const HELP: &str = "\
Enter Cypher statements ending with ';' (they may span several lines).
Shell commands:
  :help              show this help
  :format NAME       print results as table, csv, json or jsonl
  :quit              leave the shell (also :exit, or Ctrl-D)
Ctrl-C interrupts a running statement, or clears the line at the prompt.";

/// True when `text` ends with a `;` that terminates a statement (the rules
/// of `kith::split_statements`).
pub fn is_complete(text: &str) -> bool {
    kith::is_complete_script(text)
}

/// What a line starting with `:` asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Quit,
    SetFormat(Format),
    Unknown(String),
}

pub fn parse_command(line: &str) -> Command {
    let mut words = line.trim().trim_end_matches(';').split_whitespace();
    let name = words.next().unwrap_or(":");
    match name {
        ":help" | ":h" | ":?" => Command::Help,
        ":quit" | ":q" | ":exit" => Command::Quit,
        ":format" | ":mode" => {
            let fmt = words.next().unwrap_or("");
            match <Format as clap::ValueEnum>::from_str(fmt, true) {
                Ok(f) => Command::SetFormat(f),
                Err(_) => Command::Unknown(format!(
                    "unknown format '{fmt}': use table, csv, json or jsonl"
                )),
            }
        }
        other => Command::Unknown(format!("unknown command '{other}': try :help")),
    }
}

fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(PathBuf::from(home).join(".kith_history"))
}

/// Runs the prompt until `:quit` or Ctrl-D.
pub fn run(shell: &Shell, mut format: Format) {
    let mut editor = match DefaultEditor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("Cannot start the line editor: {e}");
            return;
        }
    };
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    let style = if io::stdout().is_terminal() {
        TableStyle::Terminal
    } else {
        TableStyle::Ascii
    };
    println!(
        "KithDB shell {}. Type :help for help.",
        env!("CARGO_PKG_VERSION")
    );

    let mut buffer = String::new();
    loop {
        let prompt = if !buffer.is_empty() {
            CONTINUATION
        } else if shell.in_transaction() {
            TXN_PROMPT
        } else {
            PROMPT
        };
        match editor.readline(prompt) {
            Ok(line) => {
                if buffer.is_empty() {
                    let trimmed = line.trim();
                    if trimmed.is_empty() {
                        continue;
                    }
                    if trimmed.starts_with(':') {
                        let _ = editor.add_history_entry(trimmed);
                        match parse_command(trimmed) {
                            Command::Help => println!("{HELP}"),
                            Command::Quit => break,
                            Command::SetFormat(f) => format = f,
                            Command::Unknown(msg) => eprintln!("{msg}"),
                        }
                        continue;
                    }
                }
                buffer.push_str(&line);
                buffer.push('\n');
                if !is_complete(&buffer) {
                    continue;
                }
                let _ = editor.add_history_entry(buffer.trim_end());
                if let Some(path) = &history {
                    let _ = editor.save_history(path);
                }
                run_entry(shell, &buffer, format, style);
                buffer.clear();
            }
            Err(ReadlineError::Interrupted) => buffer.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("Error reading input: {e}");
                break;
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    if shell.in_transaction() {
        eprintln!("The open transaction was rolled back.");
    }
}

fn run_entry(shell: &Shell, text: &str, format: Format, style: TableStyle) {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut err = io::stderr();
    // Errors are printed by run_script; the shell carries on either way.
    let outcome = run_script(shell, text, format, style, &mut out, &mut err, || {});
    if outcome == Outcome::OutputClosed {
        std::process::exit(0);
    }
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completeness_follows_split_rules() {
        assert!(is_complete("RETURN 1;"));
        assert!(is_complete("RETURN 1;\n"));
        assert!(is_complete("MATCH (a)\nRETURN a;  \n"));
        assert!(is_complete("RETURN 1; // trailing comment\n"));
        assert!(is_complete("RETURN 1; /* c */"));
        assert!(is_complete("RETURN 1; RETURN 2;"));
        assert!(!is_complete(""));
        assert!(!is_complete("RETURN 1"));
        assert!(!is_complete("RETURN ';"));
        assert!(!is_complete("RETURN 'a\\';"));
        assert!(is_complete("RETURN 'a\\'';"));
        assert!(!is_complete("RETURN `x;"));
        assert!(!is_complete("RETURN 1 // ;\n"));
        assert!(!is_complete("RETURN 1 /* ; "));
        assert!(!is_complete("RETURN 1; RETURN 2"));
        assert!(!is_complete("RETURN 1;'"));
    }

    #[test]
    fn complete_entries_split_into_whole_statements() {
        let text = "MATCH (a:Person)\nWHERE a.name = 'x;y'\nRETURN a; RETURN 2;\n";
        assert!(is_complete(text));
        let parts = kith::split_statements(text);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].contains("'x;y'"));
    }

    #[test]
    fn commands_parse() {
        assert_eq!(parse_command(":help"), Command::Help);
        assert_eq!(parse_command("  :quit  "), Command::Quit);
        assert_eq!(parse_command(":exit;"), Command::Quit);
        assert_eq!(
            parse_command(":format CSV"),
            Command::SetFormat(Format::Csv)
        );
        assert!(matches!(parse_command(":format"), Command::Unknown(_)));
        assert!(matches!(parse_command(":format xml"), Command::Unknown(_)));
        assert!(matches!(parse_command(":"), Command::Unknown(_)));
        assert!(matches!(parse_command(":frobnicate"), Command::Unknown(_)));
    }
}
