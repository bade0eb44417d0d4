//! One value of any logical type: what the API returns and what constants and
//! parameters are made of. Hot paths use vectors (see `vector.rs`), not `Value`s.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::ids::InternalId;
use crate::list::ListValue;
use crate::path::PathValue;
use crate::temporal::{
    Date, DateTime, Duration, Interval, LocalDateTime, LocalTime, Time, Timestamp,
};
use crate::types::LogicalType;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    UInt8(u8),
    UInt16(u16),
    UInt32(u32),
    UInt64(u64),
    Float(f32),
    Double(f64),
    String(String),
    Date(Date),
    Timestamp(Timestamp),
    Interval(Interval),
    LocalTime(LocalTime),
    Time(Time),
    LocalDateTime(LocalDateTime),
    DateTime(DateTime),
    Duration(Duration),
    InternalId(InternalId),
    /// Shared like entities: a list is cloned every time an operator reads
    /// it from a vector or a part's rows, and a collected list can hold
    /// thousands of elements. Build one with [`Value::list`] or
    /// [`Value::int_list`]; change one with `Arc::make_mut` and
    /// [`ListValue::values_mut`] (copies only while shared).
    List(Arc<ListValue>),
    /// Named fields in declaration order.
    Struct(Vec<(String, Value)>),
    Map(Vec<(Value, Value)>),
    /// Entities and paths are shared, not copied: a value is cloned every
    /// time an operator reads it from a vector, and a path repeats the
    /// nodes of the paths it shares a prefix with.
    Node(Arc<NodeValue>),
    Rel(Arc<RelValue>),
    Path(Arc<PathValue>),
}

/// A node as a value. The label and properties are shared (`Arc`): the
/// same node appears in many rows and paths, and a clone must not copy
/// every property.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeValue {
    pub id: InternalId,
    pub label: Arc<str>,
    pub properties: Arc<[(String, Value)]>,
}

/// A rel as a value; shared like [`NodeValue`].
#[derive(Debug, Clone, PartialEq)]
pub struct RelValue {
    pub id: InternalId,
    pub label: Arc<str>,
    pub src: InternalId,
    pub dst: InternalId,
    pub properties: Arc<[(String, Value)]>,
}

/// Two maps by their entries in key order (key, then value), then by
/// their number of entries.
fn cmp_maps<K>(
    a: &[(K, Value)],
    b: &[(K, Value)],
    key_cmp: impl Fn(&K, &K) -> Ordering,
) -> Ordering {
    let mut x: Vec<&(K, Value)> = a.iter().collect();
    let mut y: Vec<&(K, Value)> = b.iter().collect();
    x.sort_by(|p, q| key_cmp(&p.0, &q.0));
    y.sort_by(|p, q| key_cmp(&p.0, &q.0));
    for (p, q) in x.iter().zip(&y) {
        let o = key_cmp(&p.0, &q.0).then_with(|| p.1.total_cmp(&q.1));
        if o != Ordering::Equal {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

impl Value {
    /// A list value of `items`.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(ListValue::from_values(items)))
    }

    /// A list value of non-NULL integers, kept as integers (see `list.rs`).
    pub fn int_list(items: Vec<i64>) -> Value {
        Value::List(Arc::new(ListValue::from_ints(items)))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The logical type of this value (`Any` for NULL; element type of an empty
    /// list is `Any`).
    pub fn logical_type(&self) -> LogicalType {
        match self {
            Value::Null => LogicalType::Any,
            Value::Bool(_) => LogicalType::Bool,
            Value::Int8(_) => LogicalType::Int8,
            Value::Int16(_) => LogicalType::Int16,
            Value::Int32(_) => LogicalType::Int32,
            Value::Int64(_) => LogicalType::Int64,
            Value::UInt8(_) => LogicalType::UInt8,
            Value::UInt16(_) => LogicalType::UInt16,
            Value::UInt32(_) => LogicalType::UInt32,
            Value::UInt64(_) => LogicalType::UInt64,
            Value::Float(_) => LogicalType::Float,
            Value::Double(_) => LogicalType::Double,
            Value::String(_) => LogicalType::String,
            Value::Date(_) => LogicalType::Date,
            Value::Timestamp(_) => LogicalType::Timestamp,
            Value::Interval(_) => LogicalType::Interval,
            Value::LocalTime(_) => LogicalType::LocalTime,
            Value::Time(_) => LogicalType::Time,
            Value::LocalDateTime(_) => LogicalType::LocalDateTime,
            Value::DateTime(_) => LogicalType::DateTime,
            Value::Duration(_) => LogicalType::Duration,
            Value::InternalId(_) => LogicalType::InternalId,
            Value::List(items) if items.ints().is_some_and(|i| !i.is_empty()) => {
                LogicalType::List(Box::new(LogicalType::Int64))
            }
            Value::List(items) => LogicalType::List(Box::new(
                items
                    .iter()
                    .map(Value::logical_type)
                    .find(|t| *t != LogicalType::Any)
                    .unwrap_or(LogicalType::Any),
            )),
            Value::Struct(fields) => LogicalType::Struct(
                fields
                    .iter()
                    .map(|(n, v)| (n.clone(), v.logical_type()))
                    .collect(),
            ),
            Value::Map(entries) => {
                let (k, v) = entries
                    .first()
                    .map(|(k, v)| (k.logical_type(), v.logical_type()))
                    .unwrap_or((LogicalType::Any, LogicalType::Any));
                LogicalType::Map(Box::new(k), Box::new(v))
            }
            Value::Node(_) => LogicalType::Node,
            Value::Rel(_) => LogicalType::Rel,
            Value::Path(_) => LogicalType::Path,
        }
    }

    /// The value converted to a column of type `ty`, or None if it does not fit.
    /// NULL fits every type; integers convert between widths when in range and
    /// to FLOAT/DOUBLE; lists, structs and maps convert element by element
    /// (a struct may leave out fields, which are NULL; a map literal fills a MAP
    /// with STRING keys); other values must have exactly the column's type.
    pub fn to_column_type(&self, ty: &LogicalType) -> Option<Value> {
        let v = self;
        if v.is_null() {
            return Some(Value::Null);
        }
        if *ty == LogicalType::Any {
            // A variant column takes every property value (entities are not
            // property values).
            return match v {
                Value::InternalId(_) | Value::Node(_) | Value::Rel(_) | Value::Path(_) => None,
                _ => Some(v.clone()),
            };
        }
        match (ty, v) {
            // Nested values are checked (and converted) element by element: a
            // list's logical type names only its first non-NULL element's type.
            (LogicalType::List(inner), Value::List(items)) => {
                return items
                    .iter()
                    .map(|item| item.to_column_type(inner))
                    .collect::<Option<Vec<_>>>()
                    .map(Value::list);
            }
            (LogicalType::Struct(fields), Value::Struct(given)) => {
                // A field the column does not declare is an error; one the value
                // leaves out is NULL.
                if given
                    .iter()
                    .any(|(name, _)| !fields.iter().any(|(f, _)| f == name))
                {
                    return None;
                }
                return fields
                    .iter()
                    .map(|(name, fty)| {
                        let field = given.iter().find(|(n, _)| n == name);
                        let value =
                            field.map_or(Some(Value::Null), |(_, fv)| fv.to_column_type(fty))?;
                        Some((name.clone(), value))
                    })
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Struct);
            }
            (LogicalType::Map(kt, vt), Value::Map(entries)) => {
                return entries
                    .iter()
                    .map(|(k, x)| Some((k.to_column_type(kt)?, x.to_column_type(vt)?)))
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Map);
            }
            // A map literal `{k: v}` fills a MAP with STRING keys.
            (LogicalType::Map(kt, vt), Value::Struct(given)) if **kt == LogicalType::String => {
                return given
                    .iter()
                    .map(|(k, x)| Some((Value::String(k.clone()), x.to_column_type(vt)?)))
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Map);
            }
            (LogicalType::List(_) | LogicalType::Struct(_) | LogicalType::Map(..), _) => {
                return None
            }
            _ => {}
        }
        if v.logical_type() == *ty {
            return Some(v.clone());
        }
        let int = || -> Option<i128> {
            match v {
                Value::UInt64(u) => Some(*u as i128),
                _ => v.as_i64().map(|i| i as i128),
            }
        };
        Some(match ty {
            LogicalType::Int8 => Value::Int8(i8::try_from(int()?).ok()?),
            LogicalType::Int16 => Value::Int16(i16::try_from(int()?).ok()?),
            LogicalType::Int32 => Value::Int32(i32::try_from(int()?).ok()?),
            LogicalType::Int64 => Value::Int64(i64::try_from(int()?).ok()?),
            LogicalType::UInt8 => Value::UInt8(u8::try_from(int()?).ok()?),
            LogicalType::UInt16 => Value::UInt16(u16::try_from(int()?).ok()?),
            LogicalType::UInt32 => Value::UInt32(u32::try_from(int()?).ok()?),
            LogicalType::UInt64 => Value::UInt64(u64::try_from(int()?).ok()?),
            LogicalType::Double => match v {
                Value::Float(f) => Value::Double(*f as f64),
                _ => Value::Double(int()? as f64),
            },
            LogicalType::Float => Value::Float(int()? as f32),
            _ => return None,
        })
    }

    /// The value as i64 if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        Some(match *self {
            Value::Int8(v) => v as i64,
            Value::Int16(v) => v as i64,
            Value::Int32(v) => v as i64,
            Value::Int64(v) => v,
            Value::UInt8(v) => v as i64,
            Value::UInt16(v) => v as i64,
            Value::UInt32(v) => v as i64,
            Value::UInt64(v) => i64::try_from(v).ok()?,
            _ => return None,
        })
    }

    /// The value as f64 if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        Some(match *self {
            Value::Float(v) => v as f64,
            Value::Double(v) => v,
            Value::UInt64(v) => v as f64,
            _ => self.as_i64()? as f64,
        })
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// A total order for sorting: NULLs last; numbers compare by value across
    /// widths; values of different kinds order by kind.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Greater,
            (_, Null) => Ordering::Less,
            (Bool(a), Bool(b)) => a.cmp(b),
            (String(a), String(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Interval(a), Interval(b)) => a.sort_key().cmp(&b.sort_key()),
            (LocalTime(a), LocalTime(b)) => a.cmp(b),
            (Time(a), Time(b)) => (a.utc_nanos(), a.offset).cmp(&(b.utc_nanos(), b.offset)),
            (LocalDateTime(a), LocalDateTime(b)) => a.cmp(b),
            (DateTime(a), DateTime(b)) => a.cmp_key().cmp(&b.cmp_key()),
            (Duration(a), Duration(b)) => {
                (a.sort_key(), a.months, a.days).cmp(&(b.sort_key(), b.months, b.days))
            }
            (InternalId(a), InternalId(b)) => a.cmp(b),
            (List(a), List(b)) => {
                for (x, y) in a.iter().zip(b.iter()) {
                    let o = x.total_cmp(y);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.len().cmp(&b.len())
            }
            (Node(a), Node(b)) => a.id.cmp(&b.id),
            (Rel(a), Rel(b)) => a.id.cmp(&b.id),
            // Paths by their nodes, then their rels (ids, in order): equal
            // exactly when they pass the same elements.
            (Path(a), Path(b)) => a
                .nodes()
                .map(|n| n.id)
                .cmp(b.nodes().map(|n| n.id))
                .then_with(|| a.rels().map(|r| r.id).cmp(b.rels().map(|r| r.id))),
            // Maps by their entries in key order: equal when they have the
            // same keys (in any order) with equal values.
            (Struct(a), Struct(b)) => cmp_maps(a, b, |x, y| x.cmp(y)),
            (Map(a), Map(b)) => cmp_maps(a, b, |x, y| x.total_cmp(y)),
            _ => {
                if let (Some(a), Some(b)) = (self.as_i64(), other.as_i64()) {
                    return a.cmp(&b);
                }
                if let (Some(a), Some(b)) = (self.as_f64(), other.as_f64()) {
                    // NaN sorts after every number whatever its sign bit
                    // (0.0 / 0.0 is a negative NaN on x86).
                    return match (a.is_nan(), b.is_nan()) {
                        (true, true) => Ordering::Equal,
                        (true, false) => Ordering::Greater,
                        (false, true) => Ordering::Less,
                        // -0.0 = 0.0 (f64::total_cmp would part them, and
                        // grouping and DISTINCT with them, issue 51).
                        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
                    };
                }
                self.kind_rank().cmp(&other.kind_rank())
            }
        }
    }

    fn kind_rank(&self) -> u8 {
        match self {
            Value::Map(_) | Value::Struct(_) => 0,
            Value::Node(_) => 1,
            Value::Rel(_) => 2,
            Value::List(_) => 3,
            Value::Path(_) => 4,
            Value::String(_) => 5,
            Value::Bool(_) => 6,
            Value::Int8(_)
            | Value::Int16(_)
            | Value::Int32(_)
            | Value::Int64(_)
            | Value::UInt8(_)
            | Value::UInt16(_)
            | Value::UInt32(_)
            | Value::UInt64(_)
            | Value::Float(_)
            | Value::Double(_) => 7,
            Value::Date(_) => 8,
            Value::Timestamp(_) => 9,
            Value::Interval(_) => 10,
            Value::InternalId(_) => 11,
            Value::Null => 17,
            Value::LocalTime(_) => 12,
            Value::Time(_) => 13,
            Value::LocalDateTime(_) => 14,
            Value::DateTime(_) => 15,
            Value::Duration(_) => 16,
        }
    }
}

/// `, key: value` for each non-NULL property (NULL means "not set").
fn write_props(f: &mut fmt::Formatter<'_>, props: &[(String, Value)]) -> fmt::Result {
    for (k, v) in props.iter().filter(|(_, v)| !v.is_null()) {
        write!(f, ", {k}: ")?;
        v.fmt_nested(f)?;
    }
    Ok(())
}

impl Value {
    /// Strings inside lists/structs are quoted; at top level they are not.
    fn fmt_nested(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) => write!(f, "'{s}'"),
            other => write!(f, "{other}"),
        }
    }
}

/// Formats a double like Cypher shells do: integral values keep one
/// decimal; magnitudes from 1e16 up and below 1e-4 are written with an
/// exponent as Neo4j writes them (`1.0E16`, `1.5E-9`), since their plain
/// digits (`2.0 ^ 1000` has 302) read as an integer or a zero.
pub fn format_double(v: f64) -> String {
    let magnitude = v.abs();
    if v.is_finite() && v != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        let sci = format!("{v:e}");
        let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
        let point = if mantissa.contains('.') { "" } else { ".0" };
        format!("{mantissa}{point}E{exponent}")
    } else if v.is_finite() && v == v.trunc() {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => Ok(()),
            Value::Bool(v) => write!(f, "{}", if *v { "True" } else { "False" }),
            Value::Int8(v) => write!(f, "{v}"),
            Value::Int16(v) => write!(f, "{v}"),
            Value::Int32(v) => write!(f, "{v}"),
            Value::Int64(v) => write!(f, "{v}"),
            Value::UInt8(v) => write!(f, "{v}"),
            Value::UInt16(v) => write!(f, "{v}"),
            Value::UInt32(v) => write!(f, "{v}"),
            Value::UInt64(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{}", format_double(*v as f64)),
            Value::Double(v) => write!(f, "{}", format_double(*v)),
            Value::String(v) => write!(f, "{v}"),
            Value::Date(v) => write!(f, "{v}"),
            Value::Timestamp(v) => write!(f, "{v}"),
            Value::Interval(v) => write!(f, "{v}"),
            Value::LocalTime(v) => write!(f, "{v}"),
            Value::Time(v) => write!(f, "{v}"),
            Value::LocalDateTime(v) => write!(f, "{v}"),
            Value::DateTime(v) => write!(f, "{v}"),
            Value::Duration(v) => write!(f, "{v}"),
            Value::InternalId(v) => write!(f, "{v}"),
            Value::List(items) => {
                write!(f, "[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    v.fmt_nested(f)?;
                }
                write!(f, "]")
            }
            Value::Struct(fields) => {
                write!(f, "{{")?;
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{k}: ")?;
                    v.fmt_nested(f)?;
                }
                write!(f, "}}")
            }
            Value::Map(entries) => {
                write!(f, "{{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    k.fmt_nested(f)?;
                    write!(f, "=")?;
                    v.fmt_nested(f)?;
                }
                write!(f, "}}")
            }
            Value::Node(n) => {
                write!(f, "{{_ID: {}, _LABEL: {}", n.id, n.label)?;
                write_props(f, &n.properties)?;
                write!(f, "}}")
            }
            Value::Rel(r) => {
                write!(f, "({})-{{_LABEL: {}, _ID: {}", r.src, r.label, r.id)?;
                write_props(f, &r.properties)?;
                write!(f, "}}->({})", r.dst)
            }
            Value::Path(p) => {
                for (i, n) in p.nodes().enumerate() {
                    if i > 0 {
                        if let Some(r) = p.rel(i - 1) {
                            write!(f, "-[{}:{}]-", r.id, r.label)?;
                        }
                    }
                    write!(f, "({}:{})", n.id, n.label)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Doubles keep one decimal when integral and take an exponent at the
    /// extremes, where plain digits would read as an integer or zero; the
    /// text parses back to the same double.
    #[test]
    fn doubles_format_like_cypher_shells() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.5, "0.5"),
            (0.0001, "0.0001"),
            (0.00001, "1.0E-5"),
            (-1.5e-9, "-1.5E-9"),
            (123456789012345.0, "123456789012345.0"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e16, "1.0E16"),
            (2f64.powi(70), "1.1805916207174113E21"),
            (f64::MAX, "1.7976931348623157E308"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::INFINITY, "inf"),
        ];
        for (v, want) in cases {
            let text = format_double(v);
            assert_eq!(text, want);
            if v.is_finite() {
                assert_eq!(text.parse::<f64>().ok(), Some(v), "{text}");
            }
        }
        assert_eq!(format_double(f64::NAN), "NaN");
    }

    /// Paths and maps are ordered by their contents: before, every path
    /// (and every map) compared equal to every other, so grouping or
    /// DISTINCT merged distinct ones whenever their hashes met.
    #[test]
    fn paths_and_maps_compare_by_contents() {
        use crate::path::test_elements::{node, rel};
        use crate::PathValue;
        let path = |nodes: &[u64], rels: &[(u64, u64, u64)]| {
            let p = PathValue::new(
                nodes.iter().map(|&n| node(n)).collect(),
                rels.iter().map(|&(r, s, d)| rel(r, s, d)).collect(),
            );
            Value::Path(Arc::new(p.expect("a path")))
        };
        let p12 = path(&[1, 2], &[(7, 1, 2)]);
        let p34 = path(&[3, 4], &[(8, 3, 4)]);
        assert_eq!(p12.total_cmp(&path(&[1, 2], &[(7, 1, 2)])), Ordering::Equal);
        assert_eq!(p12.total_cmp(&p34), Ordering::Less);
        assert_eq!(p34.total_cmp(&p12), Ordering::Greater);
        // The same nodes over another rel, and a longer path.
        assert_ne!(p12.total_cmp(&path(&[1, 2], &[(9, 1, 2)])), Ordering::Equal);
        let p123 = path(&[1, 2, 3], &[(7, 1, 2), (9, 2, 3)]);
        assert_eq!(p12.total_cmp(&p123), Ordering::Less);
        let map = |e: &[(&str, i64)]| {
            Value::Struct(
                e.iter()
                    .map(|&(k, v)| (k.to_string(), Value::Int64(v)))
                    .collect(),
            )
        };
        let ab = map(&[("a", 1), ("b", 2)]);
        assert_eq!(ab.total_cmp(&map(&[("b", 2), ("a", 1)])), Ordering::Equal);
        assert_eq!(ab.total_cmp(&map(&[("a", 1), ("b", 3)])), Ordering::Less);
        assert_eq!(ab.total_cmp(&map(&[("a", 1)])), Ordering::Greater);
        let m = |k: i64, v: i64| Value::Map(vec![(Value::Int64(k), Value::Int64(v))]);
        assert_eq!(m(1, 2).total_cmp(&m(1, 2)), Ordering::Equal);
        assert_eq!(m(1, 2).total_cmp(&m(1, 3)), Ordering::Less);
    }

    #[test]
    fn nulls_sort_last_and_numbers_compare_across_widths() {
        assert_eq!(Value::Null.total_cmp(&Value::Int64(1)), Ordering::Greater);
        assert_eq!(Value::Int32(3).total_cmp(&Value::Int64(3)), Ordering::Equal);
        assert_eq!(
            Value::Int32(3).total_cmp(&Value::Double(3.5)),
            Ordering::Less
        );
    }

    #[test]
    fn nan_sorts_after_numbers_whatever_its_sign() {
        let neg_nan = Value::Double(-f64::NAN);
        for nan in [Value::Double(f64::NAN), neg_nan.clone()] {
            assert_eq!(nan.total_cmp(&Value::Double(1e300)), Ordering::Greater);
            assert_eq!(Value::Int64(i64::MAX).total_cmp(&nan), Ordering::Less);
            assert_eq!(nan.total_cmp(&Value::Null), Ordering::Less);
            assert_eq!(nan.total_cmp(&neg_nan), Ordering::Equal);
        }
    }

    #[test]
    fn display_formats() {
        assert_eq!(Value::Double(2.0).to_string(), "2.0");
        assert_eq!(Value::Double(2.5).to_string(), "2.5");
        let l = Value::list(vec![Value::Int64(1), Value::String("a".into())]);
        assert_eq!(l.to_string(), "[1,'a']");
    }
}
