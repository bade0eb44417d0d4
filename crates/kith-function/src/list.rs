//! List functions: range, head, last, tail, keys.

use kith_common::{Error, Result, Value};

use kith_common::LogicalType as T;

use crate::arguments::{arg_i64, arity};
use crate::registry::ScalarFunction;
use crate::signature::{check, Class::*};

/// Longest list `range()` builds.
const MAX_RANGE: i64 = 1 << 26;

/// The element type of a list type (ANY when unknown).
fn element(t: &T) -> T {
    match t {
        T::List(e) => (**e).clone(),
        _ => T::Any,
    }
}

pub(crate) const FUNCTIONS: &[ScalarFunction] = &[
    ScalarFunction::strict(
        &["range"],
        |n, a| {
            check(n, a, &[Int, Int, Int], 1)?;
            Ok(T::List(Box::new(T::Int64)))
        },
        range,
    ),
    ScalarFunction::strict(
        &["keys"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            if !matches!(a[0], T::Struct(_) | T::Map(..) | T::Node | T::Rel | T::Any) {
                return Err(Error::type_error(format!(
                    "keys() expects a MAP, NODE or REL, got {}",
                    a[0]
                )));
            }
            Ok(T::List(Box::new(T::String)))
        },
        keys,
    ),
    // percentileDisc/percentileCont: the binder collects the group and
    // calls these on the list.
    ScalarFunction::strict(
        &["_percentile_disc"],
        |n, a| {
            check(n, a, &[List, Num], 0)?;
            Ok(element(&a[0]))
        },
        percentile_disc,
    )
    .internal(),
    ScalarFunction::strict(
        &["_percentile_cont"],
        |n, a| {
            check(n, a, &[List, Num], 0)?;
            Ok(T::Double)
        },
        percentile_cont,
    )
    .internal(),
    ScalarFunction::strict(
        &["head"],
        |n, a| {
            check(n, a, &[List], 0)?;
            Ok(element(&a[0]))
        },
        |a| Ok(list_arg("head", a)?.first().cloned().unwrap_or(Value::Null)),
    ),
    ScalarFunction::strict(
        &["last"],
        |n, a| {
            check(n, a, &[List], 0)?;
            Ok(element(&a[0]))
        },
        |a| Ok(list_arg("last", a)?.last().cloned().unwrap_or(Value::Null)),
    ),
    ScalarFunction::strict(
        &["tail"],
        |n, a| {
            check(n, a, &[List], 0)?;
            Ok(match &a[0] {
                T::Any => T::List(Box::new(T::Any)),
                t => t.clone(),
            })
        },
        |a| {
            Ok(Value::list(
                list_arg("tail", a)?.iter().skip(1).cloned().collect(),
            ))
        },
    ),
];

fn list_arg<'a>(name: &str, args: &'a [Value]) -> Result<&'a [Value]> {
    arity(name, args, 1, 1)?;
    match &args[0] {
        Value::List(l) => Ok(l),
        v => Err(Error::runtime(format!(
            "{name}() expects a LIST, got {}",
            v.logical_type()
        ))),
    }
}

/// `keys(map)`: the keys of a map (all of them, also those holding NULL) or
/// the names of a node's or rel's non-NULL properties.
/// The sorted numbers of a collected group and the percentile `p` (which
/// must lie in 0..=1).
fn percentile_input(name: &str, args: &[Value]) -> Result<(Vec<Value>, f64)> {
    arity(name, args, 2, 2)?;
    let p = args[1]
        .as_f64()
        .filter(|p| (0.0..=1.0).contains(p))
        .ok_or_else(|| {
            Error::runtime(format!(
                "{name}() expects a percentile between 0.0 and 1.0, got {} (number out of range)",
                args[1]
            ))
        })?;
    let Value::List(items) = &args[0] else {
        return Err(Error::internal(format!("{name}() of a non-list")));
    };
    let mut v: Vec<Value> = items.iter().filter(|x| !x.is_null()).cloned().collect();
    for x in &v {
        if x.as_f64().is_none() {
            return Err(Error::type_error(format!(
                "{name}() expects numbers, got {}",
                x.logical_type()
            )));
        }
    }
    v.sort_by(|a, b| {
        a.as_f64()
            .unwrap_or(0.0)
            .total_cmp(&b.as_f64().unwrap_or(0.0))
    });
    Ok((v, p))
}

/// `percentileDisc`: the value at nearest rank `ceil(p * n)` (the first for
/// p = 0); NULL for no values.
fn percentile_disc(args: &[Value]) -> Result<Value> {
    let (v, p) = percentile_input("percentileDisc", args)?;
    if v.is_empty() {
        return Ok(Value::Null);
    }
    let rank = ((p * v.len() as f64).ceil() as usize).max(1);
    Ok(v[rank.min(v.len()) - 1].clone())
}

/// `percentileCont`: linear interpolation between the closest ranks.
fn percentile_cont(args: &[Value]) -> Result<Value> {
    let (v, p) = percentile_input("percentileCont", args)?;
    if v.is_empty() {
        return Ok(Value::Null);
    }
    let pos = p * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let (a, b) = (v[lo].as_f64().unwrap_or(0.0), v[hi].as_f64().unwrap_or(0.0));
    Ok(Value::Double(a + (pos - lo as f64) * (b - a)))
}

fn keys(args: &[Value]) -> Result<Value> {
    arity("keys", args, 1, 1)?;
    let text = |k: &String| Value::String(k.clone());
    Ok(Value::list(match &args[0] {
        Value::Struct(fields) => fields.iter().map(|(k, _)| text(k)).collect(),
        Value::Map(entries) => entries.iter().map(|(k, _)| k.clone()).collect(),
        Value::Node(n) => n
            .properties
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, _)| text(k))
            .collect(),
        Value::Rel(r) => r
            .properties
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, _)| text(k))
            .collect(),
        v => {
            return Err(Error::type_error(format!(
                "keys() expects a MAP, NODE or REL, got {}",
                v.logical_type()
            )))
        }
    }))
}

/// `range(start, end[, step])`: inclusive of `end`, like Cypher.
fn range(args: &[Value]) -> Result<Value> {
    arity("range", args, 2, 3)?;
    let start = arg_i64("range", &args[0])?;
    let end = arg_i64("range", &args[1])?;
    let step = match args.get(2) {
        Some(s) => arg_i64("range", s)?,
        None => 1,
    };
    if step == 0 {
        return Err(Error::runtime("range() step must not be zero"));
    }
    let count = if (step > 0 && end < start) || (step < 0 && end > start) {
        0
    } else {
        ((end as i128 - start as i128) / step as i128 + 1) as i64
    };
    if count > MAX_RANGE {
        return Err(Error::runtime(format!(
            "range() would produce {count} elements"
        )));
    }
    // Kept as integers (`ListValue::ints`): UNWIND, size() and the
    // comparisons read them without a value per element.
    Ok(Value::int_list(
        (0..count).map(|i| start + i * step).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use crate::call;
    use kith_common::Value;

    fn ints(v: &[i64]) -> Value {
        Value::list(v.iter().map(|&i| Value::Int64(i)).collect())
    }

    #[test]
    fn list_functions() {
        assert_eq!(
            call("range", &[Value::Int64(1), Value::Int64(4)]).unwrap(),
            ints(&[1, 2, 3, 4])
        );
        assert_eq!(
            call(
                "range",
                &[Value::Int64(10), Value::Int64(0), Value::Int64(-5)]
            )
            .unwrap(),
            ints(&[10, 5, 0])
        );
        assert_eq!(
            call("range", &[Value::Int64(3), Value::Int64(1)]).unwrap(),
            ints(&[])
        );
        assert!(call(
            "range",
            &[Value::Int64(0), Value::Int64(1), Value::Int64(0)]
        )
        .is_err());
        assert_eq!(call("head", &[ints(&[7, 8])]).unwrap(), Value::Int64(7));
        assert_eq!(call("last", &[ints(&[7, 8])]).unwrap(), Value::Int64(8));
        assert_eq!(call("head", &[ints(&[])]).unwrap(), Value::Null);
        assert_eq!(call("tail", &[ints(&[7, 8])]).unwrap(), ints(&[8]));
        assert_eq!(call("size", &[ints(&[7, 8])]).unwrap(), Value::Int64(2));
        assert_eq!(call("reverse", &[ints(&[7, 8])]).unwrap(), ints(&[8, 7]));
    }
}
