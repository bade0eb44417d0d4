//! Cypher's ordering and equality of single values: what `<`, `=`, `min`,
//! `max`, `nullIf` and ORDER BY's comparisons agree on. NULL handling is the
//! caller's (these return `None` for "unknown").

use std::cmp::Ordering;

use kith_common::temporal::MICROS_PER_DAY;
use kith_common::Value;

/// Whether `v` is a value of one of the integer types.
pub fn is_int(v: &Value) -> bool {
    matches!(
        v,
        Value::Int8(_)
            | Value::Int16(_)
            | Value::Int32(_)
            | Value::Int64(_)
            | Value::UInt8(_)
            | Value::UInt16(_)
            | Value::UInt32(_)
            | Value::UInt64(_)
    )
}

/// Whether `v` is a value of one of the integer or floating point types.
pub fn is_num(v: &Value) -> bool {
    is_int(v) || matches!(v, Value::Float(_) | Value::Double(_))
}

/// Orders two non-NULL values of comparable kinds; `None` when the kinds are
/// not comparable (or a NaN is involved).
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    use Value::*;
    match (a, b) {
        (Bool(x), Bool(y)) => Some(x.cmp(y)),
        (String(x), String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Date(x), Date(y)) => Some(x.cmp(y)),
        (Timestamp(x), Timestamp(y)) => Some(x.cmp(y)),
        (Date(x), Timestamp(y)) => Some((x.0 as i64 * MICROS_PER_DAY).cmp(&y.0)),
        (Timestamp(x), Date(y)) => Some(x.0.cmp(&(y.0 as i64 * MICROS_PER_DAY))),
        (Interval(x), Interval(y)) => Some(x.sort_key().cmp(&y.sort_key())),
        (LocalTime(x), LocalTime(y)) => Some(x.cmp(y)),
        (Time(x), Time(y)) => Some((x.utc_nanos(), x.offset).cmp(&(y.utc_nanos(), y.offset))),
        (LocalDateTime(x), LocalDateTime(y)) => Some(x.cmp(y)),
        (DateTime(x), DateTime(y)) => Some(x.cmp_key().cmp(&y.cmp_key())),
        // Durations are equal component by component but not ordered.
        (Duration(x), Duration(y)) => (x == y).then_some(Ordering::Equal),
        (InternalId(x), InternalId(y)) => Some(x.cmp(y)),
        (Node(x), Node(y)) => Some(x.id.cmp(&y.id)),
        (Rel(x), Rel(y)) => Some(x.id.cmp(&y.id)),
        // Inside a query a node or rel variable is its id; the same entity
        // as a value (`WITH startNode(r) AS s`, `nodes(p)[0]`) is equal to it.
        (Node(x), InternalId(y)) => Some(x.id.cmp(y)),
        (InternalId(x), Node(y)) => Some(x.cmp(&y.id)),
        (Rel(x), InternalId(y)) => Some(x.id.cmp(y)),
        (InternalId(x), Rel(y)) => Some(x.cmp(&y.id)),
        (List(x), List(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                if p.is_null() || q.is_null() {
                    return None;
                }
                match compare(p, q)? {
                    Ordering::Equal => {}
                    o => return Some(o),
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ if is_num(a) && is_num(b) => {
            if is_int(a) && is_int(b) {
                if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                    return Some(x.cmp(&y));
                }
                // A UInt64 beyond i64: compare as i128.
                let w = |v: &Value| match v {
                    UInt64(u) => *u as i128,
                    _ => v.as_i64().unwrap_or(0) as i128,
                };
                return Some(w(a).cmp(&w(b)));
            }
            a.as_f64()?.partial_cmp(&b.as_f64()?)
        }
        _ => None,
    }
}

/// Cypher equality: NULL if either side is NULL (or a list holds a NULL that
/// decides the outcome); values of incomparable kinds are unequal.
pub fn equals(a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            let mut unknown = false;
            for (p, q) in x.iter().zip(y.iter()) {
                match equals(p, q) {
                    Some(false) => return Some(false),
                    None => unknown = true,
                    Some(true) => {}
                }
            }
            if unknown {
                None
            } else {
                Some(true)
            }
        }
        // Paths are equal when they pass the same nodes and rels in the
        // same order; the direction each rel was traversed in does not
        // count (a self loop read forwards and backwards is one path).
        (Value::Path(x), Value::Path(y)) => Some(
            x.node_count() == y.node_count()
                && x.nodes().zip(y.nodes()).all(|(p, q)| p.id == q.id)
                && x.rels().zip(y.rels()).all(|(p, q)| p.id == q.id),
        ),
        (Value::Struct(x), Value::Struct(y)) => {
            // Maps are equal when they have the same keys (in any order)
            // with equal values.
            if x.len() != y.len() {
                return Some(false);
            }
            let mut unknown = false;
            for (k, p) in x {
                let Some((_, q)) = y.iter().find(|(l, _)| l == k) else {
                    return Some(false);
                };
                match equals(p, q) {
                    Some(false) => return Some(false),
                    None => unknown = true,
                    Some(true) => {}
                }
            }
            if unknown {
                None
            } else {
                Some(true)
            }
        }
        _ => match compare(a, b) {
            Some(o) => Some(o == Ordering::Equal),
            None => Some(false),
        },
    }
}
