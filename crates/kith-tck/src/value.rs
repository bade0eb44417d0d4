//! Expected values as the TCK writes them in result tables, and their
//! structural comparison with KithDB values.

use kith::Value;
use kith_common::{NodeValue, RelValue};

#[derive(Debug, Clone, PartialEq)]
pub struct TckNode {
    pub labels: Vec<String>,
    pub props: Vec<(String, TckValue)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TckRel {
    pub rel_type: String,
    pub props: Vec<(String, TckValue)>,
}

/// One hop of a path: the relationship, whether it points forward (`-[]->`),
/// and the node it leads to.
#[derive(Debug, Clone, PartialEq)]
pub struct TckHop {
    pub rel: TckRel,
    pub forward: bool,
    pub node: TckNode,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TckValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    List(Vec<TckValue>),
    Map(Vec<(String, TckValue)>),
    Node(TckNode),
    Rel(TckRel),
    Path(TckNode, Vec<TckHop>),
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

/// Parses one result cell (or parameter value).
pub fn parse_value(text: &str) -> Result<TckValue, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        pos: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(format!("trailing input at {} in {text:?}", p.pos));
    }
    Ok(v)
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at {} in {:?}",
                c as char, self.pos, self.text
            ))
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn keyword(&mut self, kw: &str) -> bool {
        self.ws();
        let rest = self.rest();
        if rest.starts_with(kw)
            && !rest[kw.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<TckValue, String> {
        match self.peek() {
            None => Err(format!("empty value in {:?}", self.text)),
            Some(b'\'') | Some(b'"') => Ok(TckValue::String(self.string()?)),
            Some(b'[') => {
                let save = self.pos;
                self.pos += 1;
                if self.peek() == Some(b':') {
                    self.pos = save;
                    return Ok(TckValue::Rel(self.rel()?));
                }
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
                Ok(TckValue::List(items))
            }
            Some(b'{') => Ok(TckValue::Map(self.map()?)),
            Some(b'(') => Ok(TckValue::Node(self.node()?)),
            Some(b'<') => self.path(),
            _ => {
                if self.keyword("null") {
                    return Ok(TckValue::Null);
                }
                if self.keyword("true") {
                    return Ok(TckValue::Bool(true));
                }
                if self.keyword("false") {
                    return Ok(TckValue::Bool(false));
                }
                self.number()
            }
        }
    }

    fn number(&mut self) -> Result<TckValue, String> {
        self.ws();
        let start = self.pos;
        let mut neg = false;
        if self.s.get(self.pos) == Some(&b'-') || self.s.get(self.pos) == Some(&b'+') {
            neg = self.s[self.pos] == b'-';
            self.pos += 1;
        }
        if self.keyword("NaN") {
            return Ok(TckValue::Float(f64::NAN));
        }
        if self.keyword("Infinity") || self.keyword("Inf") {
            return Ok(TckValue::Float(if neg {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }));
        }
        let digits_start = self.pos;
        if self.rest().starts_with("0x") || self.rest().starts_with("0X") {
            self.pos += 2;
            let h = self.pos;
            while self.pos < self.s.len() && self.s[self.pos].is_ascii_hexdigit() {
                self.pos += 1;
            }
            let v = i64::from_str_radix(&self.text[h..self.pos], 16)
                .map_err(|e| format!("bad hex in {:?}: {e}", self.text))?;
            return Ok(TckValue::Int(if neg { -v } else { v }));
        }
        let mut float = false;
        while self.pos < self.s.len() {
            let c = self.s[self.pos];
            if c.is_ascii_digit() {
                self.pos += 1;
            } else if c == b'.' && self.s.get(self.pos + 1).is_some_and(|d| d.is_ascii_digit()) {
                float = true;
                self.pos += 1;
            } else if c == b'e' || c == b'E' {
                float = true;
                self.pos += 1;
                if matches!(self.s.get(self.pos), Some(b'-') | Some(b'+')) {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
        if self.pos == digits_start {
            return Err(format!("unexpected input at {} in {:?}", start, self.text));
        }
        let lit = &self.text[start..self.pos];
        if float {
            lit.parse::<f64>()
                .map(TckValue::Float)
                .map_err(|e| format!("bad float {lit:?}: {e}"))
        } else {
            match lit.parse::<i64>() {
                Ok(v) => Ok(TckValue::Int(v)),
                Err(e) => Err(format!("bad integer {lit:?}: {e}")),
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let quote = self.s[self.pos];
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.text[self.pos..].char_indices();
        while let Some((i, c)) = chars.next() {
            if c == quote as char {
                self.pos += i + 1;
                return Ok(out);
            }
            if c == '\\' {
                match chars.next().map(|(_, c)| c) {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('u') => {
                        let hex: String =
                            (0..4).filter_map(|_| chars.next().map(|x| x.1)).collect();
                        let cp = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("bad \\u escape in {:?}", self.text))?;
                        out.push(cp);
                    }
                    Some(o) => out.push(o),
                    None => break,
                }
            } else {
                out.push(c);
            }
        }
        Err(format!("unterminated string in {:?}", self.text))
    }

    fn name(&mut self) -> Result<String, String> {
        self.ws();
        if self.s.get(self.pos) == Some(&b'`') {
            let end = self.text[self.pos + 1..]
                .find('`')
                .ok_or_else(|| format!("unterminated `name` in {:?}", self.text))?;
            let n = self.text[self.pos + 1..self.pos + 1 + end].to_string();
            self.pos += end + 2;
            return Ok(n);
        }
        let start = self.pos;
        for c in self.text[self.pos..].chars() {
            if c.is_alphanumeric() || c == '_' || c == '$' {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        if start == self.pos {
            return Err(format!("expected a name at {start} in {:?}", self.text));
        }
        Ok(self.text[start..self.pos].to_string())
    }

    fn map(&mut self) -> Result<Vec<(String, TckValue)>, String> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        if self.eat(b'}') {
            return Ok(entries);
        }
        loop {
            let k = if matches!(self.peek(), Some(b'\'') | Some(b'"')) {
                self.string()?
            } else {
                self.name()?
            };
            self.expect(b':')?;
            entries.push((k, self.value()?));
            if self.eat(b'}') {
                return Ok(entries);
            }
            self.expect(b',')?;
        }
    }

    fn node(&mut self) -> Result<TckNode, String> {
        self.expect(b'(')?;
        let mut labels = Vec::new();
        while self.eat(b':') {
            labels.push(self.name()?);
        }
        let props = if self.peek() == Some(b'{') {
            self.map()?
        } else {
            Vec::new()
        };
        self.expect(b')')?;
        Ok(TckNode { labels, props })
    }

    fn rel(&mut self) -> Result<TckRel, String> {
        self.expect(b'[')?;
        let rel_type = if self.eat(b':') {
            self.name()?
        } else {
            String::new()
        };
        let props = if self.peek() == Some(b'{') {
            self.map()?
        } else {
            Vec::new()
        };
        self.expect(b']')?;
        Ok(TckRel { rel_type, props })
    }

    fn path(&mut self) -> Result<TckValue, String> {
        self.expect(b'<')?;
        let start = self.node()?;
        let mut hops = Vec::new();
        loop {
            if self.eat(b'>') {
                return Ok(TckValue::Path(start, hops));
            }
            let backward = self.eat(b'<');
            self.expect(b'-')?;
            let rel = self.rel()?;
            self.expect(b'-')?;
            let forward = if backward { false } else { self.eat(b'>') };
            if !backward && !forward {
                return Err(format!("undirected path hop in {:?}", self.text));
            }
            let node = self.node()?;
            hops.push(TckHop { rel, forward, node });
        }
    }
}

/// How to compare.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompareOpts {
    /// Lists compare as multisets (TCK "ignoring element order for lists").
    pub ignore_list_order: bool,
}

fn float_eq(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn props_match(
    actual: &[(String, Value)],
    expected: &[(String, TckValue)],
    o: CompareOpts,
) -> bool {
    // KithDB node tables have a schema: a property the entity lacks reads as NULL,
    // which Cypher treats as absent.
    let present: Vec<&(String, Value)> = actual.iter().filter(|(_, v)| !v.is_null()).collect();
    let expected: Vec<&(String, TckValue)> = expected
        .iter()
        .filter(|(_, v)| *v != TckValue::Null)
        .collect();
    present.len() == expected.len()
        && expected.iter().all(|(k, ev)| {
            present
                .iter()
                .any(|(ak, av)| ak == k && values_match(av, ev, o))
        })
}

fn node_match(actual: &NodeValue, expected: &TckNode, o: CompareOpts) -> bool {
    // Several labels print joined by ':' (see `_label_text`); compare as sets.
    let mut have: Vec<&str> = actual.label.split(':').filter(|l| !l.is_empty()).collect();
    let mut want: Vec<&str> = expected.labels.iter().map(String::as_str).collect();
    have.sort_unstable();
    want.sort_unstable();
    want.dedup();
    let labels_ok = have == want;
    labels_ok && props_match(&actual.properties, &expected.props, o)
}

fn rel_match(actual: &RelValue, expected: &TckRel, o: CompareOpts) -> bool {
    *actual.label == *expected.rel_type && props_match(&actual.properties, &expected.props, o)
}

fn as_i128(v: &Value) -> Option<i128> {
    Some(match v {
        Value::Int8(x) => *x as i128,
        Value::Int16(x) => *x as i128,
        Value::Int32(x) => *x as i128,
        Value::Int64(x) => *x as i128,
        Value::UInt8(x) => *x as i128,
        Value::UInt16(x) => *x as i128,
        Value::UInt32(x) => *x as i128,
        Value::UInt64(x) => *x as i128,
        _ => return None,
    })
}

fn multiset_match<A, E>(actual: &[A], expected: &[E], eq: impl Fn(&A, &E) -> bool) -> bool {
    if actual.len() != expected.len() {
        return false;
    }
    let mut used = vec![false; expected.len()];
    'outer: for a in actual {
        for (i, e) in expected.iter().enumerate() {
            if !used[i] && eq(a, e) {
                used[i] = true;
                continue 'outer;
            }
        }
        return false;
    }
    true
}

/// Whether an engine value equals an expected TCK value.
pub fn values_match(actual: &Value, expected: &TckValue, o: CompareOpts) -> bool {
    match (actual, expected) {
        (Value::Null, TckValue::Null) => true,
        (Value::Bool(a), TckValue::Bool(b)) => a == b,
        (Value::Float(a), TckValue::Float(b)) => float_eq(*a as f64, *b),
        (Value::Double(a), TckValue::Float(b)) => float_eq(*a, *b),
        (Value::String(a), TckValue::String(b)) => a == b,
        (
            Value::Date(_)
            | Value::Timestamp(_)
            | Value::Interval(_)
            | Value::LocalTime(_)
            | Value::Time(_)
            | Value::LocalDateTime(_)
            | Value::DateTime(_)
            | Value::Duration(_),
            TckValue::String(b),
        ) => actual.to_string() == *b,
        (Value::List(a), TckValue::List(b)) => {
            if o.ignore_list_order {
                multiset_match(a, b, |x, y| values_match(x, y, o))
            } else {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| values_match(x, y, o))
            }
        }
        (Value::Struct(a), TckValue::Map(b)) => {
            a.len() == b.len()
                && b.iter()
                    .all(|(k, ev)| a.iter().any(|(ak, av)| ak == k && values_match(av, ev, o)))
        }
        (Value::Map(a), TckValue::Map(b)) => {
            a.len() == b.len()
                && b.iter().all(|(k, ev)| {
                    a.iter().any(|(ak, av)| {
                        matches!(ak, Value::String(s) if s == k) && values_match(av, ev, o)
                    })
                })
        }
        (Value::Node(a), TckValue::Node(b)) => node_match(a, b, o),
        (Value::Rel(a), TckValue::Rel(b)) => rel_match(a, b, o),
        (Value::Path(p), TckValue::Path(start, hops)) => {
            if p.rel_count() != hops.len() {
                return false;
            }
            if !p.first_node().is_some_and(|n| node_match(n, start, o)) {
                return false;
            }
            hops.iter().enumerate().all(|(i, h)| {
                let (Some(r), Some(from), Some(to)) = (p.rel(i), p.node(i), p.node(i + 1)) else {
                    return false;
                };
                let dir_ok = if h.forward {
                    r.src == from.id && r.dst == to.id
                } else {
                    r.src == to.id && r.dst == from.id
                };
                dir_ok && rel_match(r, &h.rel, o) && node_match(to, &h.node, o)
            })
        }
        (a, TckValue::Int(b)) => as_i128(a) == Some(*b as i128),
        _ => false,
    }
}

/// Whether a row of engine values equals an expected row.
pub fn rows_match(actual: &[Value], expected: &[TckValue], o: CompareOpts) -> bool {
    actual.len() == expected.len()
        && actual
            .iter()
            .zip(expected)
            .all(|(a, e)| values_match(a, e, o))
}

/// Compares result rows: as a list when `ordered`, else as a multiset.
pub fn results_match(
    actual: &[Vec<Value>],
    expected: &[Vec<TckValue>],
    ordered: bool,
    o: CompareOpts,
) -> bool {
    if ordered {
        actual.len() == expected.len()
            && actual
                .iter()
                .zip(expected)
                .all(|(a, e)| rows_match(a, e, o))
    } else {
        multiset_match(actual, expected, |a, e| rows_match(a, e, o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::InternalId;

    fn node(id: u64, label: &str, props: Vec<(&str, Value)>) -> NodeValue {
        NodeValue {
            id: InternalId(id),
            label: label.into(),
            properties: props.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        }
    }

    #[test]
    fn parses_scalars() {
        assert_eq!(parse_value("null").unwrap(), TckValue::Null);
        assert_eq!(parse_value(" true ").unwrap(), TckValue::Bool(true));
        assert_eq!(parse_value("-12").unwrap(), TckValue::Int(-12));
        assert_eq!(parse_value("0x1F").unwrap(), TckValue::Int(31));
        assert_eq!(parse_value("1.5").unwrap(), TckValue::Float(1.5));
        assert_eq!(parse_value("1.0e10").unwrap(), TckValue::Float(1.0e10));
        assert_eq!(
            parse_value("-Inf").unwrap(),
            TckValue::Float(f64::NEG_INFINITY)
        );
        assert!(matches!(parse_value("NaN").unwrap(), TckValue::Float(f) if f.is_nan()));
        assert_eq!(
            parse_value(r"'it\'s \u0041\n'").unwrap(),
            TckValue::String("it's A\n".into())
        );
        assert!(parse_value("1 2").is_err());
        assert!(parse_value("'open").is_err());
    }

    #[test]
    fn parses_structures() {
        assert_eq!(
            parse_value("[1, [], {a: 'x', `b c`: null}]").unwrap(),
            TckValue::List(vec![
                TckValue::Int(1),
                TckValue::List(vec![]),
                TckValue::Map(vec![
                    ("a".into(), TckValue::String("x".into())),
                    ("b c".into(), TckValue::Null)
                ])
            ])
        );
        assert_eq!(
            parse_value("(:A:B {p: 1})").unwrap(),
            TckValue::Node(TckNode {
                labels: vec!["A".into(), "B".into()],
                props: vec![("p".into(), TckValue::Int(1))]
            })
        );
        assert_eq!(
            parse_value("[:T {p: 1}]").unwrap(),
            TckValue::Rel(TckRel {
                rel_type: "T".into(),
                props: vec![("p".into(), TckValue::Int(1))]
            })
        );
        let TckValue::Path(start, hops) = parse_value("<(:A)-[:T]->(:B)<-[:U]-()>").unwrap() else {
            panic!("not a path")
        };
        assert_eq!(start.labels, vec!["A"]);
        assert_eq!(hops.len(), 2);
        assert!(hops[0].forward && !hops[1].forward);
        assert_eq!(hops[1].rel.rel_type, "U");
    }

    #[test]
    fn compares_values() {
        let o = CompareOpts::default();
        let p = |s| parse_value(s).unwrap();
        assert!(values_match(&Value::Int64(3), &p("3"), o));
        assert!(values_match(&Value::Int32(3), &p("3"), o));
        assert!(
            !values_match(&Value::Double(3.0), &p("3"), o),
            "int vs float"
        );
        assert!(values_match(&Value::Double(0.1 + 0.2), &p("0.3"), o));
        assert!(values_match(&Value::Double(f64::NAN), &p("NaN"), o));
        assert!(!values_match(&Value::String("a".into()), &p("'b'"), o));
        let list = Value::list(vec![Value::Int64(1), Value::Int64(2)]);
        assert!(!values_match(&list, &p("[2, 1]"), o));
        let unordered = CompareOpts {
            ignore_list_order: true,
        };
        assert!(values_match(&list, &p("[2, 1]"), unordered));
        let st = Value::Struct(vec![("a".into(), Value::Int64(1))]);
        assert!(values_match(&st, &p("{a: 1}"), o));
        let n = node(1, "A", vec![("p", Value::Int64(1)), ("q", Value::Null)]);
        assert!(values_match(
            &Value::Node(std::sync::Arc::new(n.clone())),
            &p("(:A {p: 1})"),
            o
        ));
        assert!(!values_match(
            &Value::Node(std::sync::Arc::new(n.clone())),
            &p("(:B {p: 1})"),
            o
        ));
        assert!(!values_match(
            &Value::Node(std::sync::Arc::new(n.clone())),
            &p("(:A)"),
            o
        ));
        let m = node(2, "B", vec![]);
        let r = RelValue {
            id: InternalId(9),
            label: "T".into(),
            src: InternalId(2),
            dst: InternalId(1),
            properties: Vec::new().into(),
        };
        let path = kith_common::PathValue::new(vec![n.into(), m.into()], vec![r.into()]);
        let path = Value::Path(std::sync::Arc::new(path.unwrap()));
        assert!(values_match(&path, &p("<(:A {p: 1})<-[:T]-(:B)>"), o));
        assert!(!values_match(&path, &p("<(:A {p: 1})-[:T]->(:B)>"), o));
    }

    #[test]
    fn compares_results() {
        let o = CompareOpts::default();
        let actual = vec![
            vec![Value::Int64(1)],
            vec![Value::Int64(2)],
            vec![Value::Int64(2)],
        ];
        let exp = |v: &[i64]| -> Vec<Vec<TckValue>> {
            v.iter().map(|x| vec![TckValue::Int(*x)]).collect()
        };
        assert!(results_match(&actual, &exp(&[2, 1, 2]), false, o));
        assert!(!results_match(&actual, &exp(&[2, 1, 2]), true, o));
        assert!(results_match(&actual, &exp(&[1, 2, 2]), true, o));
        assert!(
            !results_match(&actual, &exp(&[1, 1, 2]), false, o),
            "multiset"
        );
        assert!(!results_match(&actual, &exp(&[1, 2]), false, o));
    }
}
