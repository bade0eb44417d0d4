//! List functions: range, head, last, tail, keys.

use kith_common::{Error, Result, Value};

use super::{arg_i64, arity, ScalarFn};

/// Longest list `range()` builds.
const MAX_RANGE: i64 = 1 << 26;

pub(super) fn lookup(name: &str) -> Option<ScalarFn> {
    Some(match name {
        "range" => range,
        "keys" => keys,
        "head" => |a| Ok(list_arg("head", a)?.first().cloned().unwrap_or(Value::Null)),
        "last" => |a| Ok(list_arg("last", a)?.last().cloned().unwrap_or(Value::Null)),
        "tail" => |a| {
            Ok(Value::List(
                list_arg("tail", a)?.iter().skip(1).cloned().collect(),
            ))
        },
        _ => return None,
    })
}

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
fn keys(args: &[Value]) -> Result<Value> {
    arity("keys", args, 1, 1)?;
    let text = |k: &String| Value::String(k.clone());
    Ok(Value::List(match &args[0] {
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
    Ok(Value::List(
        (0..count).map(|i| Value::Int64(start + i * step)).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use crate::function::call;
    use kith_common::Value;

    fn ints(v: &[i64]) -> Value {
        Value::List(v.iter().map(|&i| Value::Int64(i)).collect())
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
