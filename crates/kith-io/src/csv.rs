//! Parallel CSV reading.
//!
//! [`plan_csv`] memory-maps the file and scans it once, quote-aware (memchr over
//! quotes and newlines, so quoted fields may hold newlines), to cut it into
//! morsels of about `morsel_bytes` that start on record boundaries, remembering
//! the physical line number at each morsel start. [`parse_csv_morsel`] then
//! parses one morsel independently into a typed [`Chunk`]; morsels can be parsed
//! in any order and on any thread.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kith_common::{Chunk, Error, LogicalType, Result, Value, VectorData};
use memmap2::Mmap;

use crate::column::{check_supported, ColumnBuilder, FieldError};

/// Dialect of a CSV file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// The first record holds column names.
    pub header: bool,
    pub delimiter: u8,
    pub quote: u8,
    /// Escapes the next character inside a quoted field. Equal to `quote` means
    /// RFC 4180 doubled quotes.
    pub escape: u8,
    /// Data records skipped after the header.
    pub skip: u64,
}

impl Default for CsvOptions {
    fn default() -> CsvOptions {
        CsvOptions {
            header: false,
            delimiter: b',',
            quote: b'"',
            escape: b'"',
            skip: 0,
        }
    }
}

fn option_char(key: &str, v: &Value) -> Result<u8> {
    let s = match v {
        Value::String(s) => s.as_str(),
        _ => {
            return Err(Error::copy(format!(
                "option {key} must be a one-character string, got {v}"
            )))
        }
    };
    let s = match s {
        "\\t" => "\t",
        other => other,
    };
    match s.as_bytes() {
        [b] if b.is_ascii() && *b != b'\n' && *b != b'\r' => Ok(*b),
        _ => Err(Error::copy(format!(
            "option {key} must be a single ASCII character other than a newline, got '{s}'"
        ))),
    }
}

impl CsvOptions {
    /// Options of `COPY ... FROM ... (KEY value, ...)`; keys are case-insensitive.
    pub fn from_options(opts: &[(String, Value)]) -> Result<CsvOptions> {
        let mut o = CsvOptions::default();
        for (key, v) in opts {
            let k = key.to_ascii_uppercase();
            match k.as_str() {
                "HEADER" => {
                    o.header = match v {
                        Value::Bool(b) => *b,
                        Value::String(s) if s.eq_ignore_ascii_case("true") => true,
                        Value::String(s) if s.eq_ignore_ascii_case("false") => false,
                        _ => {
                            return Err(Error::copy(format!(
                                "option HEADER must be true or false, got {v}"
                            )))
                        }
                    }
                }
                "DELIM" | "DELIMITER" => o.delimiter = option_char(&k, v)?,
                "QUOTE" => o.quote = option_char(&k, v)?,
                "ESCAPE" => o.escape = option_char(&k, v)?,
                "SKIP" => {
                    o.skip = match v.as_i64() {
                        Some(n) if n >= 0 => n as u64,
                        _ => {
                            return Err(Error::copy(format!(
                                "option SKIP must be a non-negative integer, got {v}"
                            )))
                        }
                    }
                }
                _ => {
                    return Err(Error::copy(format!(
                        "unknown CSV option '{key}' (expected HEADER, DELIM, QUOTE, ESCAPE or SKIP)"
                    )))
                }
            }
        }
        if o.delimiter == o.quote {
            return Err(Error::copy("the CSV delimiter and quote must differ"));
        }
        Ok(o)
    }
}

#[derive(Debug, Clone, Copy)]
struct Morsel {
    start: usize,
    end: usize,
    /// 1-based physical line of the byte at `start`.
    line: u64,
}

/// A CSV file cut into morsels that start on record boundaries.
pub struct CsvPlan {
    path: PathBuf,
    source: Arc<str>,
    opts: CsvOptions,
    /// `None` for an empty file.
    map: Option<Arc<Mmap>>,
    header: Option<Vec<String>>,
    morsels: Vec<Morsel>,
}

impl std::fmt::Debug for CsvPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvPlan")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("morsels", &self.morsels)
            .finish()
    }
}

impl CsvPlan {
    pub fn num_morsels(&self) -> usize {
        self.morsels.len()
    }

    /// Column names from the header row, when the file has one.
    pub fn header(&self) -> Option<&[String]> {
        self.header.as_deref()
    }

    /// Bytes of data records (after header and skipped records).
    pub fn total_bytes(&self) -> u64 {
        self.morsels.iter().map(|m| (m.end - m.start) as u64).sum()
    }

    pub fn morsel_bytes(&self, i: usize) -> u64 {
        let m = &self.morsels[i];
        (m.end - m.start) as u64
    }

    /// The file name used in error messages.
    pub fn source(&self) -> &Arc<str> {
        &self.source
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn options(&self) -> &CsvOptions {
        &self.opts
    }

    fn bytes(&self) -> &[u8] {
        match &self.map {
            Some(m) => m,
            None => &[],
        }
    }
}

/// The name used in messages: the file name without directories.
pub(crate) fn display_name(path: &Path) -> Arc<str> {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
        .into()
}

/// `cannot open 'x.csv': No such file or directory`.
pub(crate) fn open_error(path: &Path, e: &std::io::Error) -> Error {
    let mut msg = e.to_string();
    if let Some(p) = msg.find(" (os error") {
        msg.truncate(p);
    }
    Error::copy(format!("cannot open '{}': {msg}", path.display()))
}

/// Scans `path` once and cuts it into morsels of about `morsel_bytes` that start
/// on record boundaries (never inside a quoted field).
pub fn plan_csv(path: &Path, opts: &CsvOptions, morsel_bytes: usize) -> Result<CsvPlan> {
    let source = display_name(path);
    let file = File::open(path).map_err(|e| open_error(path, &e))?;
    let len = file.metadata().map_err(|e| open_error(path, &e))?.len();
    let map = if len == 0 {
        None
    } else {
        // SAFETY: the map is read-only; COPY requires that the input file is not
        // modified while it is being loaded (as every mmap-based reader does).
        Some(Arc::new(
            unsafe { Mmap::map(&file) }.map_err(|e| open_error(path, &e))?,
        ))
    };
    let mut plan = CsvPlan {
        path: path.to_path_buf(),
        source,
        opts: opts.clone(),
        map,
        header: None,
        morsels: Vec::new(),
    };
    let buf = plan.bytes();
    // Header and skipped records are read with the record tokenizer.
    let mut tok = Tokenizer::new(buf, 0, 1, opts, &plan.source);
    let mut header = None;
    if opts.header && tok.skip_blank_lines() {
        let line = tok.line;
        let mut names = Vec::new();
        loop {
            let (f, last) = tok.next_field()?;
            let text = std::str::from_utf8(tok.field_bytes(f)).map_err(|_| {
                Error::copy(format!(
                    "{}:{line}: column {}: invalid UTF-8 in header",
                    plan.source,
                    names.len() + 1
                ))
            })?;
            names.push(text.trim().to_string());
            if last {
                break;
            }
        }
        header = Some(names);
    }
    let mut skipped = 0;
    while skipped < opts.skip && tok.skip_blank_lines() {
        while !tok.next_field()?.1 {}
        skipped += 1;
    }
    let (start, line) = (tok.pos, tok.line);
    let morsels = split(buf, start, line, opts, morsel_bytes.max(1), &plan.source)?;
    plan.header = header.or(if opts.header { Some(Vec::new()) } else { None });
    plan.morsels = morsels;
    Ok(plan)
}

#[inline]
fn count_newlines(b: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', b).count() as u64
}

/// End (exclusive, after the closing quote) of the quoted field opened at `q`.
#[inline]
fn closing_quote(buf: &[u8], q: usize, opts: &CsvOptions) -> Option<usize> {
    let mut i = q + 1;
    loop {
        let j = if opts.escape == opts.quote {
            i + memchr::memchr(opts.quote, &buf[i..])?
        } else {
            i + memchr::memchr2(opts.quote, opts.escape, &buf[i..])?
        };
        if buf[j] == opts.quote {
            if opts.escape == opts.quote && buf.get(j + 1) == Some(&opts.quote) {
                i = j + 2;
                continue;
            }
            return Some(j + 1);
        }
        // An escape: skip the escaped byte.
        i = j + 2;
        if i > buf.len() {
            return None;
        }
    }
}

fn split(
    buf: &[u8],
    start: usize,
    start_line: u64,
    opts: &CsvOptions,
    morsel_bytes: usize,
    source: &str,
) -> Result<Vec<Morsel>> {
    let len = buf.len();
    let mut morsels = Vec::new();
    let (mut p, mut line) = (start, start_line);
    let (mut m_start, mut m_line) = (p, line);
    let mut target = p.saturating_add(morsel_bytes);
    let find_quote = |from: usize| memchr::memchr(opts.quote, &buf[from..]).map(|i| i + from);
    let mut nq = find_quote(p);
    while p < len {
        let q = match nq {
            Some(q) if q < target => Some(q),
            _ => {
                let from = target.saturating_sub(1).max(p);
                if from >= len {
                    break;
                }
                match memchr::memchr(b'\n', &buf[from..]) {
                    None => break,
                    Some(i) => {
                        let nl = from + i;
                        match nq {
                            Some(q) if q < nl => Some(q),
                            _ => {
                                let b = nl + 1;
                                line += count_newlines(&buf[p..b]);
                                morsels.push(Morsel {
                                    start: m_start,
                                    end: b,
                                    line: m_line,
                                });
                                (m_start, m_line, p) = (b, line, b);
                                target = b.saturating_add(morsel_bytes);
                                None
                            }
                        }
                    }
                }
            }
        };
        let Some(q) = q else { continue };
        line += count_newlines(&buf[p..q]);
        let at_field_start = q == 0 || buf[q - 1] == opts.delimiter || buf[q - 1] == b'\n';
        if at_field_start {
            match closing_quote(buf, q, opts) {
                Some(end) => {
                    line += count_newlines(&buf[q..end]);
                    p = end;
                }
                None => {
                    return Err(Error::copy(format!(
                        "{source}:{line}: unterminated quoted field"
                    )))
                }
            }
        } else {
            p = q + 1;
        }
        nq = if p < len { find_quote(p) } else { None };
    }
    if m_start < len {
        morsels.push(Morsel {
            start: m_start,
            end: len,
            line: m_line,
        });
    }
    Ok(morsels)
}

/// Where the bytes of one field are.
#[derive(Clone, Copy)]
struct Field {
    start: usize,
    end: usize,
    /// The bytes are in the tokenizer's scratch buffer (unescaped), not in `buf`.
    scratch: bool,
    quoted: bool,
}

/// Splits records into fields; the hot loop of the parser.
struct Tokenizer<'a> {
    buf: &'a [u8],
    pos: usize,
    line: u64,
    delim: u8,
    quote: u8,
    escape: u8,
    scratch: Vec<u8>,
    source: &'a str,
}

impl<'a> Tokenizer<'a> {
    fn new(buf: &'a [u8], pos: usize, line: u64, opts: &CsvOptions, source: &'a str) -> Self {
        Tokenizer {
            buf,
            pos,
            line,
            delim: opts.delimiter,
            quote: opts.quote,
            escape: opts.escape,
            scratch: Vec::new(),
            source,
        }
    }

    /// Skips empty lines; false at the end of the input.
    #[inline]
    fn skip_blank_lines(&mut self) -> bool {
        loop {
            match self.buf.get(self.pos..) {
                Some([b'\n', ..]) => self.pos += 1,
                Some([b'\r', b'\n', ..]) => self.pos += 2,
                Some([b'\r']) => self.pos += 1,
                Some([_, ..]) => return true,
                _ => return false,
            }
            self.line += 1;
        }
    }

    #[inline]
    fn field_bytes(&self, f: Field) -> &[u8] {
        if f.scratch {
            &self.scratch[f.start..f.end]
        } else {
            &self.buf[f.start..f.end]
        }
    }

    /// Consumes the end of a record (`\n`, `\r\n` or end of input) if it is next;
    /// true when the record ended.
    #[inline]
    fn end_of_field(&mut self) -> Result<bool> {
        match self.buf.get(self.pos) {
            Some(&b) if b == self.delim => {
                self.pos += 1;
                Ok(false)
            }
            Some(b'\n') => {
                self.pos += 1;
                self.line += 1;
                Ok(true)
            }
            Some(b'\r') if matches!(self.buf.get(self.pos + 1), Some(b'\n') | None) => {
                self.pos = (self.pos + 2).min(self.buf.len());
                self.line += 1;
                Ok(true)
            }
            None => Ok(true),
            Some(_) => Err(Error::copy(format!(
                "{}:{}: unexpected character after a closing quote",
                self.source, self.line
            ))),
        }
    }

    /// The next field and whether it ends its record. The caller has checked
    /// that input remains (a record never starts at the end of the input).
    #[inline]
    fn next_field(&mut self) -> Result<(Field, bool)> {
        let buf = self.buf;
        let start = self.pos;
        if buf.get(start) == Some(&self.quote) {
            return self.quoted_field();
        }
        let mut i = start;
        while i < buf.len() {
            let b = buf[i];
            if b == self.delim {
                self.pos = i + 1;
                let f = Field {
                    start,
                    end: i,
                    scratch: false,
                    quoted: false,
                };
                return Ok((f, false));
            }
            if b == b'\n' {
                self.pos = i + 1;
                self.line += 1;
                let end = if i > start && buf[i - 1] == b'\r' {
                    i - 1
                } else {
                    i
                };
                let f = Field {
                    start,
                    end,
                    scratch: false,
                    quoted: false,
                };
                return Ok((f, true));
            }
            i += 1;
        }
        self.pos = i;
        let end = if i > start && buf[i - 1] == b'\r' {
            i - 1
        } else {
            i
        };
        Ok((
            Field {
                start,
                end,
                scratch: false,
                quoted: false,
            },
            true,
        ))
    }

    #[cold]
    fn unterminated(&self, line: u64) -> Error {
        Error::copy(format!("{}:{line}: unterminated quoted field", self.source))
    }

    fn quoted_field(&mut self) -> Result<(Field, bool)> {
        let buf = self.buf;
        let first_line = self.line;
        let start = self.pos + 1;
        let mut i = start;
        // Fast path: no escapes, the field is a slice of the input.
        let j = match memchr::memchr2(self.quote, self.escape, &buf[i..]) {
            Some(j) => i + j,
            None => return Err(self.unterminated(first_line)),
        };
        if buf[j] == self.quote
            && (self.escape != self.quote || buf.get(j + 1) != Some(&self.quote))
        {
            self.line += count_newlines(&buf[start..j]);
            self.pos = j + 1;
            let f = Field {
                start,
                end: j,
                scratch: false,
                quoted: true,
            };
            let last = self.end_of_field()?;
            return Ok((f, last));
        }
        // An escape sequence: fall back to copying.
        i = j;
        self.scratch.clear();
        self.scratch.extend_from_slice(&buf[start..i]);
        loop {
            let j = match memchr::memchr2(self.quote, self.escape, &buf[i..]) {
                Some(j) => i + j,
                None => return Err(self.unterminated(first_line)),
            };
            self.scratch.extend_from_slice(&buf[i..j]);
            if buf[j] == self.escape
                && (self.escape != self.quote || buf.get(j + 1) == Some(&self.quote))
            {
                match buf.get(j + 1) {
                    Some(&c) => self.scratch.push(c),
                    None => return Err(self.unterminated(first_line)),
                }
                i = j + 2;
                continue;
            }
            self.line += count_newlines(&buf[start..j]);
            self.pos = j + 1;
            let f = Field {
                start: 0,
                end: self.scratch.len(),
                scratch: true,
                quoted: true,
            };
            let last = self.end_of_field()?;
            return Ok((f, last));
        }
    }
}

/// One parsed morsel: the rows plus the source line of each row.
#[derive(Debug, Clone)]
pub struct ParsedMorsel {
    pub chunk: Chunk,
    /// 1-based source line (CSV) or row number (Parquet) of each row.
    pub lines: Vec<u64>,
}

pub(crate) fn column_name(names: &[String], c: usize) -> &str {
    names.get(c).map(|s| s.as_str()).unwrap_or("?")
}

pub(crate) fn check_types(types: &[LogicalType], names: &[String]) -> Result<()> {
    for (c, t) in types.iter().enumerate() {
        if !check_supported(t) {
            return Err(Error::not_supported(format!(
                "COPY FROM does not support column {} ({}) of type {t}",
                c + 1,
                column_name(names, c)
            )));
        }
    }
    Ok(())
}

/// Parses morsel `morsel` of `plan` into a chunk of `types` (one per field);
/// `names` only serve error messages.
pub fn parse_csv_morsel(
    plan: &CsvPlan,
    morsel: usize,
    types: &[LogicalType],
    names: &[String],
) -> Result<ParsedMorsel> {
    check_types(types, names)?;
    let m = plan.morsels[morsel];
    let source: &str = &plan.source;
    let buf = &plan.bytes()[..m.end];
    let mut tok = Tokenizer::new(buf, m.start, m.line, &plan.opts, source);
    // A rough guess at the row count keeps reallocation low.
    let guess = (m.end - m.start) / (8 * types.len().max(1)) + 1;
    let mut cols: Vec<ColumnBuilder> = types.iter().map(|t| ColumnBuilder::new(t, guess)).collect();
    let mut lines = Vec::with_capacity(guess);
    let ncols = types.len();
    while tok.skip_blank_lines() {
        let line = tok.line;
        lines.push(line);
        let mut c = 0;
        loop {
            let (f, last) = tok.next_field()?;
            if c < ncols {
                let bytes = if f.scratch {
                    &tok.scratch[f.start..f.end]
                } else {
                    &buf[f.start..f.end]
                };
                if let Err(e) = cols[c].push_text(bytes, f.quoted) {
                    return Err(field_error(source, line, c, names, &types[c], bytes, e));
                }
            }
            c += 1;
            if last {
                break;
            }
        }
        if c != ncols {
            return Err(Error::copy(format!(
                "{source}:{line}: expected {ncols} fields, found {c}"
            )));
        }
    }
    let num_rows = lines.len();
    debug_assert!(cols.iter().all(|c| c.len() == num_rows));
    Ok(ParsedMorsel {
        chunk: Chunk {
            columns: cols.into_iter().map(ColumnBuilder::finish).collect(),
            num_rows,
        },
        lines,
    })
}

#[cold]
fn field_error(
    source: &str,
    line: u64,
    c: usize,
    names: &[String],
    ty: &LogicalType,
    bytes: &[u8],
    e: FieldError,
) -> Error {
    let name = column_name(names, c);
    match e {
        FieldError::Utf8 => Error::copy(format!(
            "{source}:{line}: column {} ({name}): invalid UTF-8",
            c + 1
        )),
        FieldError::Convert => {
            let text = String::from_utf8_lossy(bytes);
            Error::copy(format!(
                "{source}:{line}: column {} ({name}): cannot convert '{text}' to {ty}",
                c + 1
            ))
        }
    }
}

/// Writes `chunks` as CSV (with a header row when `opts.header`), quoting
/// strings that need it and writing NULL as an empty field (an empty string as
/// `""`).
pub fn write_csv(path: &Path, names: &[String], chunks: &[Chunk], opts: &CsvOptions) -> Result<()> {
    let file = File::create(path).map_err(|e| open_error(path, &e))?;
    let mut w = BufWriter::with_capacity(1 << 16, file);
    let d = opts.delimiter;
    let mut field = String::new();
    if opts.header {
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                w.write_all(&[d])?;
            }
            write_quoted(&mut w, n, opts)?;
        }
        w.write_all(b"\n")?;
    }
    for chunk in chunks {
        for r in 0..chunk.num_rows {
            for (c, col) in chunk.columns.iter().enumerate() {
                if c > 0 {
                    w.write_all(&[d])?;
                }
                if col.is_null(r) {
                    continue;
                }
                use std::fmt::Write as _;
                field.clear();
                let _ = match (&col.data, &col.ty) {
                    (VectorData::Str(s), _) => {
                        write_quoted(&mut w, s.get(r), opts)?;
                        continue;
                    }
                    (VectorData::I32(v), LogicalType::Date) => {
                        write!(field, "{}", kith_common::Date(v[r]))
                    }
                    (VectorData::I64(v), LogicalType::Timestamp) => {
                        write!(field, "{}", kith_common::Timestamp(v[r]))
                    }
                    (VectorData::Bool(v), _) => write!(field, "{}", v[r]),
                    (VectorData::I8(v), _) => write!(field, "{}", v[r]),
                    (VectorData::I16(v), _) => write!(field, "{}", v[r]),
                    (VectorData::I32(v), _) => write!(field, "{}", v[r]),
                    (VectorData::I64(v), _) => write!(field, "{}", v[r]),
                    (VectorData::U8(v), _) => write!(field, "{}", v[r]),
                    (VectorData::U16(v), _) => write!(field, "{}", v[r]),
                    (VectorData::U32(v), _) => write!(field, "{}", v[r]),
                    (VectorData::U64(v), _) => write!(field, "{}", v[r]),
                    (VectorData::F32(v), _) => write!(field, "{}", v[r]),
                    (VectorData::F64(v), _) => write!(field, "{}", v[r]),
                    (VectorData::Interval(v), _) => write!(field, "{}", v[r]),
                    _ => write!(field, "{}", col.get_value(r)),
                };
                write_quoted(&mut w, &field, opts)?;
            }
            w.write_all(b"\n")?;
        }
    }
    w.flush()?;
    Ok(())
}

fn write_quoted(w: &mut impl Write, s: &str, opts: &CsvOptions) -> Result<()> {
    let b = s.as_bytes();
    let needs = b.is_empty()
        || b.iter().any(|&c| {
            c == opts.delimiter || c == opts.quote || c == opts.escape || c == b'\n' || c == b'\r'
        });
    if !needs {
        w.write_all(b)?;
        return Ok(());
    }
    w.write_all(&[opts.quote])?;
    for &c in b {
        if c == opts.quote || c == opts.escape {
            w.write_all(&[opts.escape])?;
        }
        w.write_all(&[c])?;
    }
    w.write_all(&[opts.quote])?;
    Ok(())
}
