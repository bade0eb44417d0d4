//! Value conversions: the `Cast` expression node, the `toX()` functions and
//! the coercion of computed values to a node's declared result type.

use kith_common::temporal::MICROS_PER_DAY;
use kith_common::value::format_double;
use kith_common::{Date, Error, Interval, LogicalType, Result, Timestamp, Value};

/// Converts `v` to `to`; `None` when the value does not convert (bad text,
/// out of range, unsupported pair).
pub fn try_cast_value(v: &Value, to: &LogicalType) -> Option<Value> {
    use LogicalType as T;
    if v.is_null() {
        return Some(Value::Null);
    }
    if *to == T::Any || v.logical_type() == *to {
        return Some(v.clone());
    }
    Some(match to {
        T::Bool => match v {
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return None,
            },
            _ => Value::Bool(v.as_i64()? != 0),
        },
        t if t.is_integer() => {
            let i: i64 = match v {
                Value::Bool(b) => *b as i64,
                Value::Float(_) | Value::Double(_) => {
                    let f = v.as_f64()?.trunc();
                    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                        return None;
                    }
                    f as i64
                }
                Value::String(s) => {
                    let s = s.trim();
                    match s.parse::<i64>() {
                        Ok(i) => i,
                        Err(_) => {
                            if *t == T::UInt64 {
                                return s.parse::<u64>().ok().map(Value::UInt64);
                            }
                            let f: f64 = s.parse().ok()?;
                            return try_cast_value(&Value::Double(f), to);
                        }
                    }
                }
                Value::UInt64(u) if *t == T::UInt64 => return Some(Value::UInt64(*u)),
                _ => v.as_i64()?,
            };
            int_to(i, t)?
        }
        T::Float => Value::Float(to_f64(v)? as f32),
        T::Double => Value::Double(to_f64(v)?),
        T::String => Value::String(match v {
            Value::Bool(b) => b.to_string(),
            Value::Float(f) => format_double(*f as f64),
            other => other.to_string(),
        }),
        T::Date => match v {
            Value::String(s) => Value::Date(Date::parse(s.trim())?),
            Value::Timestamp(t) => Value::Date(Date(t.0.div_euclid(MICROS_PER_DAY) as i32)),
            _ => return None,
        },
        T::Timestamp => match v {
            Value::String(s) => Value::Timestamp(Timestamp::parse(s.trim())?),
            Value::Date(d) => Value::Timestamp(Timestamp(d.0 as i64 * MICROS_PER_DAY)),
            _ => return None,
        },
        T::Interval => match v {
            Value::String(s) => Value::Interval(Interval::parse(s)?),
            _ => return None,
        },
        T::List(elem) => match v {
            Value::List(items) => Value::list(
                items
                    .iter()
                    .map(|x| try_cast_value(x, elem))
                    .collect::<Option<Vec<_>>>()?,
            ),
            _ => return None,
        },
        _ => return None,
    })
}

fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(b) => Some(*b as i64 as f64),
        _ => v.as_f64(),
    }
}

/// An i64 as a value of integer type `t`, `None` when out of range.
pub fn int_to(i: i64, t: &LogicalType) -> Option<Value> {
    use LogicalType as T;
    Some(match t {
        T::Int8 => Value::Int8(i.try_into().ok()?),
        T::Int16 => Value::Int16(i.try_into().ok()?),
        T::Int32 => Value::Int32(i.try_into().ok()?),
        T::Int64 => Value::Int64(i),
        T::UInt8 => Value::UInt8(i.try_into().ok()?),
        T::UInt16 => Value::UInt16(i.try_into().ok()?),
        T::UInt32 => Value::UInt32(i.try_into().ok()?),
        T::UInt64 => Value::UInt64(i.try_into().ok()?),
        _ => return None,
    })
}

/// Converts `v` to `to` or fails with a runtime error naming both.
pub fn cast_value(v: &Value, to: &LogicalType) -> Result<Value> {
    try_cast_value(v, to).ok_or_else(|| {
        Error::runtime(format!(
            "cannot convert {} '{}' to {to}",
            v.logical_type(),
            v
        ))
    })
}

/// Brings a computed value to the vector type `to` (numeric widening etc.);
/// values that already fit, and any value for ANY/nested targets, pass through.
#[inline]
pub fn coerce(v: Value, to: &LogicalType) -> Result<Value> {
    if v.is_null() || matches!(to, LogicalType::Any) {
        return Ok(v);
    }
    let same = match (&v, to) {
        (Value::Int64(_), LogicalType::Int64)
        | (Value::Double(_), LogicalType::Double)
        | (Value::Bool(_), LogicalType::Bool)
        | (Value::String(_), LogicalType::String)
        | (Value::List(_), LogicalType::List(_)) => true,
        _ => to.physical() == kith_common::PhysicalType::Value,
    };
    if same {
        return Ok(v);
    }
    cast_value(&v, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts() {
        use LogicalType as T;
        assert_eq!(
            cast_value(&Value::String("12".into()), &T::Int32).unwrap(),
            Value::Int32(12)
        );
        assert!(cast_value(&Value::String("12x".into()), &T::Int64).is_err());
        assert!(cast_value(&Value::Int64(300), &T::Int8).is_err());
        assert_eq!(
            cast_value(&Value::Int32(3), &T::Double).unwrap(),
            Value::Double(3.0)
        );
        assert_eq!(
            cast_value(&Value::Bool(true), &T::String).unwrap(),
            Value::String("true".into())
        );
        assert_eq!(
            cast_value(&Value::String("2020-01-02".into()), &T::Date).unwrap(),
            Value::Date(Date::from_ymd(2020, 1, 2).unwrap())
        );
        assert_eq!(cast_value(&Value::Null, &T::Int64).unwrap(), Value::Null);
        assert_eq!(
            cast_value(
                &Value::list(vec![Value::Int32(1)]),
                &T::List(Box::new(T::Int64))
            )
            .unwrap(),
            Value::list(vec![Value::Int64(1)])
        );
    }
}
