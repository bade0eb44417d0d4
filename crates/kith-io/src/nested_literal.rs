//! Text literals of LIST, STRUCT and MAP values in CSV fields, in the forms
//! Kùzu's CSV reader takes: lists `[1,2,3]`, structs `{x: 1, y: 'a'}`, maps
//! `{k1=v1, k2=v2}` (`:` accepted too), nested to any depth.
//!
//! Scalar elements are parsed for the element type as a whole CSV field of
//! that type would be; they may be quoted (`'a,b'` or `"a,b"`, with `\`
//! escapes) to hold separators. An empty or `NULL` element is NULL.

use kith_common::{LogicalType, Value};

use crate::column::ColumnBuilder;

/// `text` as a value of `ty` (a LIST, STRUCT or MAP type), or `None` when it
/// is not a literal of that type. The whole text must be consumed.
pub(crate) fn parse(text: &str, ty: &LogicalType) -> Option<Value> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    let v = p.value(ty, &[])?;
    p.skip_ws();
    (p.pos == p.s.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self
            .s
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A value of `ty`; a scalar ends at one of `stops` (or a closing
    /// bracket) outside quotes.
    fn value(&mut self, ty: &LogicalType, stops: &[u8]) -> Option<Value> {
        self.skip_ws();
        match ty {
            LogicalType::List(inner) => {
                if self.null_word() {
                    return Some(Value::Null);
                }
                if !self.eat(b'[') {
                    return None;
                }
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Value::list(items));
                }
                loop {
                    items.push(self.value(inner, b",]")?);
                    if self.eat(b']') {
                        return Some(Value::list(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            LogicalType::Struct(fields) => {
                if self.null_word() {
                    return Some(Value::Null);
                }
                if !self.eat(b'{') {
                    return None;
                }
                let mut given: Vec<(String, Value)> = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        let name = self.scalar_text(b":")?.0;
                        if !self.eat(b':') {
                            return None;
                        }
                        let (_, fty) = fields.iter().find(|(f, _)| *f == name)?;
                        let v = self.value(fty, b",}")?;
                        if given.iter().any(|(n, _)| *n == name) {
                            return None;
                        }
                        given.push((name, v));
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Value::Struct(given).to_column_type(ty)
            }
            LogicalType::Map(kt, vt) => {
                if self.null_word() {
                    return Some(Value::Null);
                }
                if !self.eat(b'{') {
                    return None;
                }
                let mut entries = Vec::new();
                if self.eat(b'}') {
                    return Some(Value::Map(entries));
                }
                loop {
                    let k = self.value(kt, b"=:")?;
                    if !(self.eat(b'=') || self.eat(b':')) {
                        return None;
                    }
                    let v = self.value(vt, b",}")?;
                    entries.push((k, v));
                    if self.eat(b'}') {
                        return Some(Value::Map(entries));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            _ => {
                let (text, quoted) = self.scalar_text(stops)?;
                if !quoted && (text.is_empty() || text.eq_ignore_ascii_case("null")) {
                    return Some(Value::Null);
                }
                let mut b = ColumnBuilder::new(ty, 1);
                b.push_text(text.as_bytes(), quoted).ok()?;
                b.into_values().pop()
            }
        }
    }

    /// Consumes an unquoted `NULL` standing for a whole nested value.
    fn null_word(&mut self) -> bool {
        let rest = &self.s[self.pos..];
        let is_null = rest.len() >= 4
            && rest[..4].eq_ignore_ascii_case(b"null")
            && rest
                .get(4)
                .is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'_');
        if is_null {
            self.pos += 4;
        }
        is_null
    }

    /// A scalar's text: a quoted string (unescaped) or the raw bytes up to the
    /// next stop byte or closing bracket, trimmed. Returns whether it was quoted.
    fn scalar_text(&mut self, stops: &[u8]) -> Option<(String, bool)> {
        self.skip_ws();
        match self.s.get(self.pos) {
            Some(&q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let mut out = Vec::new();
                loop {
                    let b = *self.s.get(self.pos)?;
                    self.pos += 1;
                    match b {
                        b'\\' => {
                            out.push(*self.s.get(self.pos)?);
                            self.pos += 1;
                        }
                        _ if b == q => {
                            // A doubled quote stands for itself.
                            if self.s.get(self.pos) == Some(&q) {
                                out.push(q);
                                self.pos += 1;
                            } else {
                                break;
                            }
                        }
                        _ => out.push(b),
                    }
                }
                Some((String::from_utf8(out).ok()?, true))
            }
            _ => {
                let start = self.pos;
                while let Some(&b) = self.s.get(self.pos) {
                    if stops.contains(&b) || matches!(b, b']' | b'}' | b'[' | b'{') {
                        break;
                    }
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.pos]).ok()?;
                Some((text.trim().to_string(), false))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(t: LogicalType) -> LogicalType {
        LogicalType::List(Box::new(t))
    }

    #[test]
    fn lists_of_scalars_and_lists() {
        let ints = list(LogicalType::Int64);
        assert_eq!(
            parse(" [1, 2 ,3] ", &ints),
            Some(Value::list(vec![
                Value::Int64(1),
                Value::Int64(2),
                Value::Int64(3)
            ]))
        );
        assert_eq!(parse("[]", &ints), Some(Value::list(vec![])));
        assert_eq!(
            parse("[1,,NULL]", &ints),
            Some(Value::list(vec![Value::Int64(1), Value::Null, Value::Null]))
        );
        assert_eq!(parse("NULL", &ints), Some(Value::Null));
        assert_eq!(parse("[1,x]", &ints), None);
        assert_eq!(parse("[1,2", &ints), None);
        assert_eq!(parse("[1] 2", &ints), None);
        assert_eq!(parse("[99999999999999999999]", &ints), None);
        let strs = list(LogicalType::String);
        assert_eq!(
            parse(r#"[a b, 'c,d', "e\"f", 'it''s', '']"#, &strs),
            Some(Value::list(vec![
                Value::String("a b".into()),
                Value::String("c,d".into()),
                Value::String("e\"f".into()),
                Value::String("it's".into()),
                Value::String(String::new()),
            ]))
        );
        let nested = list(list(LogicalType::Double));
        assert_eq!(
            parse("[[1.5],[], [2,3]]", &nested),
            Some(Value::list(vec![
                Value::list(vec![Value::Double(1.5)]),
                Value::list(vec![]),
                Value::list(vec![Value::Double(2.0), Value::Double(3.0)]),
            ]))
        );
        let dates = list(LogicalType::Date);
        assert!(parse("[2024-01-02]", &dates).is_some());
        assert_eq!(parse("[2024-13-02]", &dates), None);
    }

    #[test]
    fn structs_and_maps() {
        let point = LogicalType::Struct(vec![
            ("x".into(), LogicalType::Int64),
            ("tag".into(), LogicalType::String),
        ]);
        assert_eq!(
            parse("{tag: 'a,b', x: 3}", &point),
            Some(Value::Struct(vec![
                ("x".into(), Value::Int64(3)),
                ("tag".into(), Value::String("a,b".into())),
            ]))
        );
        // A field left out is NULL; an unknown or repeated one is an error.
        assert_eq!(
            parse("{x: 3}", &point),
            Some(Value::Struct(vec![
                ("x".into(), Value::Int64(3)),
                ("tag".into(), Value::Null),
            ]))
        );
        assert_eq!(parse("{y: 3}", &point), None);
        assert_eq!(parse("{x: 3, x: 4}", &point), None);
        let map = LogicalType::Map(
            Box::new(LogicalType::String),
            Box::new(list(LogicalType::Int32)),
        );
        assert_eq!(
            parse("{a=[1], 'b c': [2, 3]}", &map),
            Some(Value::Map(vec![
                (
                    Value::String("a".into()),
                    Value::list(vec![Value::Int32(1)])
                ),
                (
                    Value::String("b c".into()),
                    Value::list(vec![Value::Int32(2), Value::Int32(3)])
                ),
            ]))
        );
        assert_eq!(parse("{}", &map), Some(Value::Map(vec![])));
        assert_eq!(parse("{a [1]}", &map), None);
    }
}
