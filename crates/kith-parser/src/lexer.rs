//! The lexer: statement text → tokens with byte spans.
//!
//! Words (keywords and identifiers alike) lex as [`TokenKind::Word`]; the parser
//! classifies them in context, case-insensitively. Backtick-quoted identifiers lex
//! as [`TokenKind::QuotedIdent`] and never match a keyword.

use kith_common::{Error, Result, Span};

#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    /// An unquoted word: keyword or identifier.
    Word(String),
    /// A `backtick quoted` identifier (backticks removed, doubled backticks unescaped).
    QuotedIdent(String),
    /// An integer literal as written (decimal digits, `0x` hex or `0o` octal); range-checked by
    /// the parser so that `-9223372036854775808` can be accepted.
    Integer(String),
    Float(f64),
    /// A string literal with escapes resolved.
    Str(String),
    /// `$name` / `$1` (without the `$`).
    Param(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Dot,
    DotDot,
    Colon,
    Semicolon,
    Pipe,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Eq,
    /// `<>` or `!=`
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `=~`
    RegexMatch,
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
}

/// Split `text` into tokens; the last token is always [`TokenKind::Eof`] with the
/// empty span at `text.len()`.
pub fn tokenize(text: &str) -> Result<Vec<Token>> {
    let mut lx = Lexer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
    };
    lx.run()?;
    Ok(lx.tokens)
}

impl<'a> Lexer<'a> {
    fn peek_byte(&self, off: usize) -> Option<u8> {
        self.bytes.get(self.pos + off).copied()
    }

    fn peek_char(&self) -> Option<char> {
        self.text.get(self.pos..).and_then(|s| s.chars().next())
    }

    fn push(&mut self, kind: TokenKind, start: usize) {
        self.tokens.push(Token {
            kind,
            span: Span::new(start, self.pos),
        });
    }

    fn run(&mut self) -> Result<()> {
        loop {
            self.skip_trivia()?;
            let start = self.pos;
            let Some(c) = self.peek_char() else {
                self.push(TokenKind::Eof, start);
                return Ok(());
            };
            let single = |k: TokenKind| (k, 1usize);
            let two = |k: TokenKind| (k, 2usize);
            let next = self.peek_byte(1);
            let (kind, len) = match c {
                '(' => single(TokenKind::LParen),
                ')' => single(TokenKind::RParen),
                '[' => single(TokenKind::LBracket),
                ']' => single(TokenKind::RBracket),
                '{' => single(TokenKind::LBrace),
                '}' => single(TokenKind::RBrace),
                ',' => single(TokenKind::Comma),
                ';' => single(TokenKind::Semicolon),
                ':' => single(TokenKind::Colon),
                '|' => single(TokenKind::Pipe),
                '+' => single(TokenKind::Plus),
                '-' => single(TokenKind::Minus),
                '*' => single(TokenKind::Star),
                '/' => single(TokenKind::Slash),
                '%' => single(TokenKind::Percent),
                '^' => single(TokenKind::Caret),
                '=' if next == Some(b'~') => two(TokenKind::RegexMatch),
                '=' => single(TokenKind::Eq),
                '<' if next == Some(b'>') => two(TokenKind::Ne),
                '<' if next == Some(b'=') => two(TokenKind::Le),
                '<' => single(TokenKind::Lt),
                '>' if next == Some(b'=') => two(TokenKind::Ge),
                '>' => single(TokenKind::Gt),
                '!' if next == Some(b'=') => two(TokenKind::Ne),
                '.' if next == Some(b'.') => two(TokenKind::DotDot),
                '.' if next.is_some_and(|b| b.is_ascii_digit()) => {
                    self.number()?;
                    continue;
                }
                '.' => single(TokenKind::Dot),
                '0'..='9' => {
                    self.number()?;
                    continue;
                }
                '\'' | '"' => {
                    self.string(c)?;
                    continue;
                }
                '`' => {
                    self.quoted_ident()?;
                    continue;
                }
                '$' => {
                    self.pos += 1;
                    let name_start = self.pos;
                    while let Some(ch) = self.peek_char() {
                        if is_ident_continue(ch) {
                            self.pos += ch.len_utf8();
                        } else {
                            break;
                        }
                    }
                    if self.pos == name_start {
                        if self.peek_byte(0) == Some(b'`') {
                            self.quoted_ident()?;
                            if let Some(Token {
                                kind: TokenKind::QuotedIdent(name),
                                ..
                            }) = self.tokens.pop()
                            {
                                self.push(TokenKind::Param(name), start);
                            }
                            continue;
                        }
                        return Err(Error::syntax(
                            Span::new(start, self.pos),
                            "expected a parameter name after '$'",
                        ));
                    }
                    let name = self.text[name_start..self.pos].to_string();
                    self.push(TokenKind::Param(name), start);
                    continue;
                }
                c if is_ident_start(c) => {
                    while let Some(ch) = self.peek_char() {
                        if is_ident_continue(ch) {
                            self.pos += ch.len_utf8();
                        } else {
                            break;
                        }
                    }
                    let word = self.text[start..self.pos].to_string();
                    self.push(TokenKind::Word(word), start);
                    continue;
                }
                other => {
                    return Err(Error::syntax(
                        Span::new(start, start + other.len_utf8()),
                        format!("unexpected character '{other}'"),
                    ));
                }
            };
            self.pos += len;
            self.push(kind, start);
        }
    }

    fn skip_trivia(&mut self) -> Result<()> {
        loop {
            match self.peek_char() {
                Some(c) if c.is_whitespace() => self.pos += c.len_utf8(),
                Some('/') if self.peek_byte(1) == Some(b'/') => {
                    while let Some(b) = self.peek_byte(0) {
                        if b == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                Some('/') if self.peek_byte(1) == Some(b'*') => {
                    let start = self.pos;
                    match self.text[self.pos + 2..].find("*/") {
                        Some(end) => self.pos += 2 + end + 2,
                        None => {
                            return Err(Error::syntax(
                                Span::new(start, self.text.len()),
                                "unterminated comment: expected '*/'",
                            ))
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn digits(&mut self) {
        while self.peek_byte(0).is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    fn number(&mut self) -> Result<()> {
        let start = self.pos;
        // Hexadecimal (`0x1F`) and octal (`0o17`) integers.
        let radix_digit: Option<fn(&u8) -> bool> = match self.peek_byte(1) {
            Some(b'x') | Some(b'X') => Some(u8::is_ascii_hexdigit),
            Some(b'o') | Some(b'O') => Some(|b: &u8| (b'0'..=b'7').contains(b)),
            _ => None,
        };
        if let (Some(b'0'), Some(is_digit)) = (self.peek_byte(0), radix_digit) {
            if !self.peek_byte(2).is_some_and(|b| is_digit(&b)) {
                // `0x` / `0o` without digits (or with invalid ones).
                self.pos += 2;
                return self.check_number_end(start).and_then(|()| {
                    Err(Error::syntax(
                        Span::new(start, self.pos),
                        format!("invalid number '{}'", &self.text[start..self.pos]),
                    ))
                });
            }
            self.pos += 2;
            while self.peek_byte(0).is_some_and(|b| is_digit(&b)) {
                self.pos += 1;
            }
            let text = self.text[start..self.pos].to_string();
            self.push(TokenKind::Integer(text), start);
            return self.check_number_end(start);
        }
        let mut is_float = false;
        self.digits();
        // A fraction: `.` followed by a digit (so `1..3` stays a range).
        if self.peek_byte(0) == Some(b'.') && self.peek_byte(1).is_some_and(|b| b.is_ascii_digit())
        {
            is_float = true;
            self.pos += 1;
            self.digits();
        }
        // An exponent.
        if matches!(self.peek_byte(0), Some(b'e') | Some(b'E')) {
            let sign = usize::from(matches!(self.peek_byte(1), Some(b'+') | Some(b'-')));
            if self.peek_byte(1 + sign).is_some_and(|b| b.is_ascii_digit()) {
                is_float = true;
                self.pos += 1 + sign;
                self.digits();
            }
        }
        let text = &self.text[start..self.pos];
        if is_float {
            let v: f64 = text.parse().map_err(|_| {
                Error::syntax(
                    Span::new(start, self.pos),
                    format!("invalid number '{text}'"),
                )
            })?;
            if !v.is_finite() {
                return Err(Error::syntax(
                    Span::new(start, self.pos),
                    "float literal out of range",
                ));
            }
            self.push(TokenKind::Float(v), start);
        } else {
            self.push(TokenKind::Integer(text.to_string()), start);
        }
        self.check_number_end(start)
    }

    /// `123abc` is not a number followed by a word.
    fn check_number_end(&self, start: usize) -> Result<()> {
        match self.peek_char() {
            Some(c) if is_ident_continue(c) => {
                let mut end = self.pos;
                for ch in self.text[self.pos..].chars() {
                    if !is_ident_continue(ch) {
                        break;
                    }
                    end += ch.len_utf8();
                }
                Err(Error::syntax(
                    Span::new(start, end),
                    format!("invalid number '{}'", &self.text[start..end]),
                ))
            }
            _ => Ok(()),
        }
    }

    fn string(&mut self, quote: char) -> Result<()> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek_char() else {
                return Err(Error::syntax(
                    Span::new(start, self.text.len()),
                    format!("unterminated string literal: expected closing {quote}"),
                ));
            };
            if c == quote {
                self.pos += 1;
                break;
            }
            if c != '\\' {
                out.push(c);
                self.pos += c.len_utf8();
                continue;
            }
            let esc_start = self.pos;
            self.pos += 1;
            let Some(e) = self.peek_char() else {
                return Err(Error::syntax(
                    Span::new(start, self.text.len()),
                    format!("unterminated string literal: expected closing {quote}"),
                ));
            };
            self.pos += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                '0' => out.push('\0'),
                '\\' => out.push('\\'),
                '\'' => out.push('\''),
                '"' => out.push('"'),
                '`' => out.push('`'),
                'u' | 'U' => {
                    let n = if e == 'u' { 4 } else { 8 };
                    let hex = self.text.get(self.pos..self.pos + n);
                    let ch = hex
                        .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32);
                    match ch {
                        Some(ch) => {
                            out.push(ch);
                            self.pos += n;
                        }
                        None => {
                            let end = (self.pos + n).min(self.text.len());
                            let end = if self.text.is_char_boundary(end) {
                                end
                            } else {
                                self.pos
                            };
                            return Err(Error::syntax(
                                Span::new(esc_start, end),
                                format!(
                                    "invalid unicode escape: expected \\{e} and {n} hex digits"
                                ),
                            ));
                        }
                    }
                }
                other => {
                    return Err(Error::syntax(
                        Span::new(esc_start, self.pos),
                        format!("invalid escape sequence '\\{other}'"),
                    ))
                }
            }
        }
        self.push(TokenKind::Str(out), start);
        Ok(())
    }

    fn quoted_ident(&mut self) -> Result<()> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek_char() else {
                return Err(Error::syntax(
                    Span::new(start, self.text.len()),
                    "unterminated quoted identifier: expected closing `",
                ));
            };
            self.pos += c.len_utf8();
            if c == '`' {
                if self.peek_byte(0) == Some(b'`') {
                    out.push('`');
                    self.pos += 1;
                    continue;
                }
                break;
            }
            out.push(c);
        }
        if out.is_empty() {
            return Err(Error::syntax(
                Span::new(start, self.pos),
                "empty quoted identifier",
            ));
        }
        self.push(TokenKind::QuotedIdent(out), start);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind> {
        tokenize(text)
            .unwrap()
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn ranges_and_floats() {
        use TokenKind::*;
        assert_eq!(
            kinds("*1..3"),
            vec![Star, Integer("1".into()), DotDot, Integer("3".into()), Eof]
        );
        assert_eq!(
            kinds(".5 1e3 1.5E-2"),
            vec![Float(0.5), Float(1000.0), Float(0.015), Eof]
        );
        assert_eq!(kinds("0x1F"), vec![Integer("0x1F".into()), Eof]);
    }

    #[test]
    fn strings_and_escapes() {
        use TokenKind::*;
        assert_eq!(
            kinds(r#"'a\'b' "c\"d\n" '\u00e9'"#),
            vec![
                Str("a'b".into()),
                Str("c\"d\n".into()),
                Str("é".into()),
                Eof
            ]
        );
        let e = tokenize("RETURN 'abc").unwrap_err();
        assert_eq!(e.span, Some(Span::new(7, 11)));
        assert!(e.message.contains("unterminated string"));
    }

    #[test]
    fn comments_words_and_operators() {
        use TokenKind::*;
        assert_eq!(
            kinds("a // x\n /* y */ `b c` <> != <= >= =~ $p"),
            vec![
                Word("a".into()),
                QuotedIdent("b c".into()),
                Ne,
                Ne,
                Le,
                Ge,
                RegexMatch,
                Param("p".into()),
                Eof
            ]
        );
        let toks = tokenize("ab  cd").unwrap();
        assert_eq!(toks[1].span, Span::new(4, 6));
        assert_eq!(toks[2].span, Span::new(6, 6));
    }
}
