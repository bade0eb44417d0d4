//! Errors that cross layer boundaries.
//!
//! Every user-facing error has a kind (what class of mistake), a message (what and
//! why), and optionally a span into the query text or a location in an input file.
//! Internal invariant violations are `assert!`s; a panic that escapes an operator is
//! turned into an [`ErrorKind::Internal`] error at the API boundary.

use std::fmt;

/// Byte range `[start, end)` into the text of one statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// 1-based line and column (in characters) of the span start within `text`.
    pub fn line_col(&self, text: &str) -> (usize, usize) {
        let start = (self.start as usize).min(text.len());
        let before = text.get(..start).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|p| p + 1).unwrap_or(0);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }
}

/// What class of error this is; stable across releases (the codes are in `code()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The statement text does not parse.
    Syntax,
    /// The statement parses but refers to unknown tables/properties/variables or is
    /// otherwise meaningless (binder errors).
    Semantic,
    /// A value or expression has the wrong type.
    Type,
    /// Catalog operations: duplicate table, drop of a referenced table, ...
    Catalog,
    /// Bad input data during COPY (malformed CSV, bad value, duplicate key, ...).
    Copy,
    /// A runtime error while evaluating a query (division by zero, overflow, ...).
    Runtime,
    /// Operating-system I/O.
    Io,
    /// A database file that is not a KithDB file or is damaged.
    Corruption,
    /// Transaction misuse or conflicts.
    Transaction,
    /// The query was interrupted or timed out.
    Interrupted,
    /// An operator could not stay within the memory limit.
    OutOfMemory,
    /// A valid request that KithDB does not (yet) support.
    NotSupported,
    /// A bug in KithDB (including a caught panic).
    Internal,
}

impl ErrorKind {
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "KITH-P001",
            ErrorKind::Semantic => "KITH-B001",
            ErrorKind::Type => "KITH-B002",
            ErrorKind::Catalog => "KITH-C001",
            ErrorKind::Copy => "KITH-L001",
            ErrorKind::Runtime => "KITH-E001",
            ErrorKind::Io => "KITH-S001",
            ErrorKind::Corruption => "KITH-S002",
            ErrorKind::Transaction => "KITH-T001",
            ErrorKind::Interrupted => "KITH-E002",
            ErrorKind::OutOfMemory => "KITH-E003",
            ErrorKind::NotSupported => "KITH-N001",
            ErrorKind::Internal => "KITH-X001",
        }
    }

    /// The prefix used when the error is shown to a user.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "Syntax error",
            ErrorKind::Semantic => "Binder error",
            ErrorKind::Type => "Type error",
            ErrorKind::Catalog => "Catalog error",
            ErrorKind::Copy => "Copy error",
            ErrorKind::Runtime => "Runtime error",
            ErrorKind::Io => "IO error",
            ErrorKind::Corruption => "Corruption",
            ErrorKind::Transaction => "Transaction error",
            ErrorKind::Interrupted => "Interrupted",
            ErrorKind::OutOfMemory => "Out of memory",
            ErrorKind::NotSupported => "Not supported",
            ErrorKind::Internal => "Internal error",
        }
    }
}

/// An error with its kind, message and where it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Where in the statement text, when the error is about the query.
    pub span: Option<Span>,
    /// Rendered context (`line:col` plus the line and a caret), filled in by
    /// [`Error::with_source`] once the statement text is known.
    pub context: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            span: None,
            context: None,
        }
    }

    pub fn at(kind: ErrorKind, span: Span, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            span: Some(span),
            context: None,
        }
    }

    pub fn syntax(span: Span, message: impl Into<String>) -> Error {
        Error::at(ErrorKind::Syntax, span, message)
    }
    pub fn semantic(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Semantic, message)
    }
    pub fn type_error(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Type, message)
    }
    pub fn catalog(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Catalog, message)
    }
    pub fn copy(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Copy, message)
    }
    pub fn runtime(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Runtime, message)
    }
    pub fn io(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Io, message)
    }
    pub fn corruption(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Corruption, message)
    }
    pub fn not_supported(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::NotSupported, message)
    }
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, message)
    }
    pub fn interrupted() -> Error {
        Error::new(ErrorKind::Interrupted, "the query was interrupted")
    }

    /// Attach a span if the error has none yet.
    pub fn or_span(mut self, span: Span) -> Error {
        if self.span.is_none() {
            self.span = Some(span);
        }
        self
    }

    /// Render the span against the statement text: `line L, column C` plus the
    /// offending line with a caret under the spot.
    pub fn with_source(mut self, text: &str) -> Error {
        if let (Some(span), None) = (self.span, &self.context) {
            let (line, col) = span.line_col(text);
            let line_text = text.lines().nth(line - 1).unwrap_or("");
            let width = span.end.saturating_sub(span.start).clamp(
                1,
                (line_text.chars().count() + 1)
                    .saturating_sub(col - 1)
                    .max(1) as u32,
            );
            let caret = format!("{}{}", " ".repeat(col - 1), "^".repeat(width as usize));
            self.context = Some(format!(
                "at line {line}, column {col}:\n  {line_text}\n  {caret}"
            ));
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.label(), self.message)?;
        if let Some(ctx) = &self.context {
            write!(f, " {ctx}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::io(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let text = "MATCH (a)\nRETURN b";
        assert_eq!(Span::new(0, 1).line_col(text), (1, 1));
        assert_eq!(Span::new(17, 18).line_col(text), (2, 8));
    }

    #[test]
    fn render_puts_caret_under_span() {
        let e = Error::syntax(Span::new(7, 10), "unexpected 'FOO'").with_source("MATCH (FOO");
        let s = e.to_string();
        assert!(s.contains("line 1, column 8"), "{s}");
        assert!(s.ends_with("  MATCH (FOO\n         ^^^"), "{s:?}");
    }
}
