//! Recursive-descent parser over the token stream of [`crate::lexer`].
//!
//! Split by topic: statements and the shared machinery here, clauses in
//! `clause.rs`, patterns in `pattern.rs`, expressions in `expr.rs` and DDL / COPY in
//! `ddl.rs`. Every error carries the span of the offending token.

mod clause;
mod ddl;
mod expr;
mod pattern;

use std::collections::HashMap;

use kith_common::{Error, Result, Span};

use crate::ast::*;
use crate::lexer::{tokenize, Token, TokenKind};

/// How deeply expressions and patterns may nest before the parser gives up (keeps
/// the recursion far away from the stack limit). One level costs up to ~10 KiB of
/// stack in an optimised build and up to ~55 KiB in a debug build, so debug builds
/// get a lower limit that still fits a 2 MiB thread stack (the test harness's).
const MAX_DEPTH: usize = if cfg!(debug_assertions) { 24 } else { 100 };

/// How tall an expression tree may grow through operator chains (`a + b + c ...`,
/// `a.b.c ...`): bounds the recursion of later passes and of dropping the tree.
const MAX_HEIGHT: usize = 1000;

/// Words that cannot be used as a bare variable name (quote them with backticks).
const RESERVED: &[&str] = &[
    "MATCH",
    "OPTIONAL",
    "RETURN",
    "WITH",
    "WHERE",
    "UNWIND",
    "CREATE",
    "MERGE",
    "SET",
    "DELETE",
    "DETACH",
    "REMOVE",
    "ORDER",
    "SKIP",
    "LIMIT",
    "UNION",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "IN",
    "IS",
    "AS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "DISTINCT",
    "CALL",
    "YIELD",
    "STARTS",
    "ENDS",
    "CONTAINS",
    "ON",
    "ASC",
    "DESC",
    "ASCENDING",
    "DESCENDING",
    "BY",
    "NULL",
    "TRUE",
    "FALSE",
];

pub(crate) const CLAUSE_KEYWORDS: &str =
    "MATCH, OPTIONAL MATCH, UNWIND, WITH, RETURN, CREATE, MERGE, SET, REMOVE, DELETE, CALL";

pub(crate) struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    /// Operator nodes stacked on the current path (see [`MAX_HEIGHT`]).
    height: usize,
    /// Memo of pattern parses attempted at a token position (see `try_pattern`).
    pattern_memo: HashMap<usize, Option<(PathPattern, usize)>>,
}

/// Parse a script: statements separated by `;`, empty statements skipped.
pub fn parse(text: &str) -> Result<Vec<Statement>> {
    let mut p = Parser::new(text)?;
    let mut out = Vec::new();
    loop {
        while p.eat(&TokenKind::Semicolon) {}
        if p.at_eof() {
            return Ok(out);
        }
        out.push(p.statement()?);
        if !p.at_eof() && !p.check(&TokenKind::Semicolon) {
            return Err(p.unexpected("';' or end of input"));
        }
    }
}

/// Parse exactly one statement (a trailing `;` is allowed).
pub fn parse_one(text: &str) -> Result<Statement> {
    let mut p = Parser::new(text)?;
    if p.at_eof() {
        return Err(p.unexpected("a statement"));
    }
    let stmt = p.statement()?;
    while p.eat(&TokenKind::Semicolon) {}
    if !p.at_eof() {
        return Err(p.unexpected("end of input (only one statement is allowed here)"));
    }
    Ok(stmt)
}

/// Parse a type name on its own (`INT64`, `STRING[]`, `MAP(STRING, INT64)`):
/// the text of Kùzu's `CAST(x, 'type')`. Spans are offsets into `text`.
pub fn parse_type(text: &str) -> Result<TypeName> {
    let mut p = Parser::new(text)?;
    let ty = p.type_name()?;
    if !p.at_eof() {
        return Err(p.unexpected("end of the type name"));
    }
    Ok(ty)
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Result<Parser<'a>> {
        Ok(Parser {
            text,
            toks: tokenize(text)?,
            pos: 0,
            depth: 0,
            height: 0,
            pattern_memo: HashMap::new(),
        })
    }

    // ---- token access -------------------------------------------------------

    fn tok(&self) -> &Token {
        self.tok_at(0)
    }

    fn tok_at(&self, n: usize) -> &Token {
        let last = self.toks.len() - 1;
        &self.toks[(self.pos + n).min(last)]
    }

    fn kind(&self) -> &TokenKind {
        &self.tok().kind
    }

    fn kind_at(&self, n: usize) -> &TokenKind {
        &self.tok_at(n).kind
    }

    fn span(&self) -> Span {
        self.tok().span
    }

    /// End of the previous token (start of the text when at the first token).
    fn prev_end(&self) -> u32 {
        if self.pos == 0 {
            0
        } else {
            self.toks[(self.pos - 1).min(self.toks.len() - 1)].span.end
        }
    }

    /// Span from `start` to the end of the previous token.
    fn span_from(&self, start: u32) -> Span {
        Span {
            start,
            end: self.prev_end().max(start),
        }
    }

    fn advance(&mut self) -> Token {
        let t = self.tok().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn at_eof(&self) -> bool {
        matches!(self.kind(), TokenKind::Eof)
    }

    fn check(&self, k: &TokenKind) -> bool {
        self.kind() == k
    }

    fn eat(&mut self, k: &TokenKind) -> bool {
        if self.check(k) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn is_kw_at(&self, n: usize, kw: &str) -> bool {
        matches!(self.kind_at(n), TokenKind::Word(w) if w.eq_ignore_ascii_case(kw))
    }

    fn is_kw(&self, kw: &str) -> bool {
        self.is_kw_at(0, kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, kw: &str, context: &str) -> Result<Span> {
        if self.is_kw(kw) {
            Ok(self.advance().span)
        } else {
            Err(self.unexpected(&format!("{kw}{context}")))
        }
    }

    fn expect(&mut self, k: &TokenKind, context: &str) -> Result<Span> {
        if self.check(k) {
            Ok(self.advance().span)
        } else {
            Err(self.unexpected(&format!("'{}'{context}", describe_kind(k))))
        }
    }

    // ---- errors -------------------------------------------------------------

    /// How the current token is shown in an error message.
    fn found(&self) -> String {
        let t = self.tok();
        if matches!(t.kind, TokenKind::Eof) {
            return "end of input".to_string();
        }
        let s = self
            .text
            .get(t.span.start as usize..t.span.end as usize)
            .unwrap_or("?");
        let mut shown: String = s.chars().take(40).collect();
        if shown.len() < s.len() {
            shown.push_str("...");
        }
        format!("'{shown}'")
    }

    /// `unexpected X, expected Y` at the current token.
    fn unexpected(&self, expected: &str) -> Error {
        Error::syntax(
            self.span(),
            format!("unexpected {}, expected {expected}", self.found()),
        )
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::syntax(
                self.span(),
                format!("the statement is nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    /// One more operator node on the current path of the expression tree.
    fn grow(&mut self) -> Result<()> {
        self.height += 1;
        if self.height > MAX_HEIGHT {
            return Err(Error::syntax(
                self.span(),
                format!("the expression is too long (more than {MAX_HEIGHT} chained operators)"),
            ));
        }
        Ok(())
    }

    /// End of an operator chain that started at height `base`.
    fn done<T>(&mut self, base: usize, value: T) -> T {
        self.height = base;
        value
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ---- identifiers --------------------------------------------------------

    /// Any word or quoted identifier (keywords allowed: labels, property keys,
    /// table names).
    fn ident(&mut self, what: &str) -> Result<Ident> {
        match self.kind().clone() {
            TokenKind::Word(name) | TokenKind::QuotedIdent(name) => {
                let span = self.advance().span;
                Ok(Ident { name, span })
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// Whether the current token can be a variable name.
    fn at_variable(&self) -> bool {
        self.is_variable_at(0)
    }

    fn is_variable_at(&self, n: usize) -> bool {
        match self.kind_at(n) {
            TokenKind::QuotedIdent(_) => true,
            TokenKind::Word(w) => !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(w)),
            _ => false,
        }
    }

    /// A variable name: a quoted identifier or a non-reserved word.
    fn variable(&mut self, what: &str) -> Result<Ident> {
        if self.at_variable() {
            self.ident(what)
        } else {
            Err(self.unexpected(what))
        }
    }

    /// The source text of `span`, trimmed.
    fn source(&self, span: Span) -> String {
        self.text
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
            .trim()
            .to_string()
    }

    // ---- statements ---------------------------------------------------------

    fn statement(&mut self) -> Result<Statement> {
        if self.is_kw("EXPLAIN") || self.is_kw("PROFILE") {
            let profile = self.is_kw("PROFILE");
            self.advance();
            let inner = self.statement()?;
            return Ok(Statement::Explain {
                profile,
                inner: Box::new(inner),
            });
        }
        if self.is_kw("CREATE") && (self.is_kw_at(1, "NODE") || self.is_kw_at(1, "REL")) {
            return self.create_table();
        }
        if self.is_kw("DROP") {
            return self.drop_table();
        }
        if self.is_kw("ALTER") {
            return self.alter_table();
        }
        if self.is_kw("COPY") {
            return self.copy().map(Statement::Copy);
        }
        if self.is_kw("CALL")
            && matches!(
                self.kind_at(1),
                TokenKind::Word(_) | TokenKind::QuotedIdent(_)
            )
            && matches!(self.kind_at(2), TokenKind::Eq)
        {
            self.advance();
            let name = self.ident("an option name")?;
            self.advance();
            let value = self.expr()?;
            return Ok(Statement::SetOption { name, value });
        }
        if self.eat_kw("BEGIN") {
            let mut read_only = false;
            let mut saw_transaction = self.eat_kw("TRANSACTION");
            if self.eat_kw("READ") {
                if self.eat_kw("ONLY") {
                    read_only = true;
                } else {
                    self.expect_kw("WRITE", " or ONLY after READ")?;
                }
            }
            if !saw_transaction {
                saw_transaction = self.eat_kw("TRANSACTION");
            }
            if !saw_transaction {
                return Err(self.unexpected("TRANSACTION after BEGIN"));
            }
            return Ok(Statement::Begin { read_only });
        }
        if self.eat_kw("COMMIT") {
            return Ok(Statement::Commit);
        }
        if self.eat_kw("ROLLBACK") {
            return Ok(Statement::Rollback);
        }
        if self.eat_kw("CHECKPOINT") {
            return Ok(Statement::Checkpoint);
        }
        if self.at_clause_start() {
            return self.query().map(Statement::Query);
        }
        Err(self.unexpected(&format!(
            "a statement: {CLAUSE_KEYWORDS}, CREATE NODE TABLE, CREATE REL TABLE, DROP TABLE, \
             ALTER TABLE, COPY, EXPLAIN, PROFILE, BEGIN TRANSACTION, COMMIT, ROLLBACK or CHECKPOINT"
        )))
    }
}

pub(crate) fn describe_kind(k: &TokenKind) -> &'static str {
    match k {
        TokenKind::LParen => "(",
        TokenKind::RParen => ")",
        TokenKind::LBracket => "[",
        TokenKind::RBracket => "]",
        TokenKind::LBrace => "{",
        TokenKind::RBrace => "}",
        TokenKind::Comma => ",",
        TokenKind::Dot => ".",
        TokenKind::DotDot => "..",
        TokenKind::Colon => ":",
        TokenKind::Semicolon => ";",
        TokenKind::Pipe => "|",
        TokenKind::Plus => "+",
        TokenKind::Minus => "-",
        TokenKind::Star => "*",
        TokenKind::Slash => "/",
        TokenKind::Percent => "%",
        TokenKind::Caret => "^",
        TokenKind::Eq => "=",
        TokenKind::Ne => "<>",
        TokenKind::Lt => "<",
        TokenKind::Le => "<=",
        TokenKind::Gt => ">",
        TokenKind::Ge => ">=",
        TokenKind::RegexMatch => "=~",
        TokenKind::Word(_) | TokenKind::QuotedIdent(_) => "identifier",
        TokenKind::Integer(_) | TokenKind::Float(_) => "number",
        TokenKind::Str(_) => "string",
        TokenKind::Param(_) => "parameter",
        TokenKind::Eof => "end of input",
    }
}
