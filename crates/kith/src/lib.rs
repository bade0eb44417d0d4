//! KithDB's embedded facade: [`Database`], [`Connection`] and [`QueryResult`].
//!
//! This crate wires the layers together (parser → planner → executor on the
//! database's scheduler, over storage) and owns nothing the layers below own.
//! It is the API boundary: a panic inside the engine becomes an internal error here.
//!
//! Statements auto-commit unless a connection opened a transaction with
//! `BEGIN TRANSACTION [READ ONLY]` (see `database.rs`); the shell and the
//! Python package get transactions through [`Connection`].

/// Query results of nested values (paths, lists, nodes) allocate and free
/// many small objects: with glibc's allocator a shortest-paths query spent
/// a quarter of its time in malloc, free and consolidation; mimalloc
/// halved the query (BENCHMARKS.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod copy_arrow;
mod database;
mod plan_cache;
mod result;
mod statement;
mod write;

pub use copy_arrow::{copy_source_names, ArrowSource, RecordBatch, Schema, SchemaRef};
pub use database::{Config, Connection, Database, Progress};
pub use kith_common::{Chunk, Error, ErrorKind, LogicalType, Result, Value};
pub use kith_planner::procedure::{Procedure, ProcedureColumn, ProcedureType};
pub use result::QueryResult;

/// Runs `f`, turning a panic into an internal error: no input may take the
/// embedding process down.
pub(crate) fn guard<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(Error::internal(format!(
                "internal error (please report): {what}"
            )))
        }
    }
}

/// One pass over a script: where its statements are and whether it ends
/// with a terminating `;` (outside strings, backtick names and comments).
struct ScriptScan<'a> {
    statements: Vec<&'a str>,
    /// A `;` followed only by whitespace and comments ends the text, and no
    /// string or comment is left open.
    complete: bool,
}

fn scan_script(text: &str) -> ScriptScan<'_> {
    let bytes = text.as_bytes();
    let mut statements = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    let mut terminated = false;
    let mut open = false;
    // The current piece has more than whitespace and comments (a piece with
    // only a comment, e.g. after the last `;`, is no statement).
    let mut code = false;
    while pos < bytes.len() {
        match bytes[pos] {
            q @ (b'\'' | b'"' | b'`') => {
                terminated = false;
                code = true;
                pos += 1;
                while pos < bytes.len() && bytes[pos] != q {
                    if bytes[pos] == b'\\' && q != b'`' {
                        pos += 1;
                    }
                    pos += 1;
                }
                open |= pos >= bytes.len();
            }
            b'/' if bytes.get(pos + 1) == Some(&b'/') => {
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
            }
            b'/' if bytes.get(pos + 1) == Some(&b'*') => {
                pos += 2;
                while pos + 1 < bytes.len() && !(bytes[pos] == b'*' && bytes[pos + 1] == b'/') {
                    pos += 1;
                }
                open |= pos + 1 >= bytes.len();
                pos += 1;
            }
            b';' => {
                if code {
                    statements.push(&text[start..pos]);
                }
                start = pos + 1;
                terminated = true;
                code = false;
            }
            b if b.is_ascii_whitespace() => {}
            _ => {
                terminated = false;
                code = true;
            }
        }
        pos += 1;
    }
    if code {
        statements.push(&text[start.min(text.len())..]);
    }
    ScriptScan {
        statements,
        complete: terminated && !open,
    }
}

/// The statements of a script (split at `;` outside strings, backticks and
/// comments), so callers can run and report them one at a time.
pub fn split_statements(text: &str) -> Vec<&str> {
    scan_script(text).statements
}

/// True when `text` ends with a `;` that terminates a statement (followed only
/// by whitespace and comments, with no string or comment left open): what an
/// interactive shell waits for before running multi-line input.
pub fn is_complete_script(text: &str) -> bool {
    scan_script(text).complete
}

#[cfg(test)]
mod tests {
    #[test]
    fn split_respects_quotes_and_comments() {
        let parts = super::split_statements("RETURN ';'; // a;b\nRETURN 2 /* ; */;\n");
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert_eq!(parts[0], "RETURN ';'");
    }

    #[test]
    fn comment_only_pieces_are_no_statements() {
        let parts = super::split_statements("RETURN 1; // done\n/* c */ ;; RETURN 2 // x\n");
        assert_eq!(parts, ["RETURN 1", " RETURN 2 // x\n"], "{parts:?}");
        assert!(super::split_statements("// only a comment\n").is_empty());
        assert!(super::is_complete_script("RETURN 1; // done\n"));
    }
}
