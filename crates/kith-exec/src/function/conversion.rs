//! Conversion functions, `coalesce` and `nullIf` (not NULL-propagating).

use kith_common::{LogicalType, Result, Value};

use super::{arity, ScalarFunction};
use crate::expression::cast::try_cast_value;

pub(super) fn lookup(name: &str) -> Option<ScalarFunction> {
    let (func, propagate_nulls): (super::ScalarFn, bool) = match name {
        "tostring" | "to_string" => (|a| convert("tostring", a, &LogicalType::String), true),
        "tointeger" | "toint" | "to_int64" => {
            (|a| convert("tointeger", a, &LogicalType::Int64), true)
        }
        "tofloat" | "todouble" | "to_double" => {
            (|a| convert("tofloat", a, &LogicalType::Double), true)
        }
        "toboolean" | "tobool" => (|a| convert("toboolean", a, &LogicalType::Bool), true),
        "coalesce" => (coalesce, false),
        "nullif" => (null_if, false),
        _ => return None,
    };
    Some(ScalarFunction {
        func,
        propagate_nulls,
    })
}

/// Cypher's `toX()` functions return NULL for text that does not convert.
/// Values of other kinds (lists, maps, nodes, rels, paths; a FLOAT for
/// toBoolean; a BOOL for toFloat) are a type error, as openCypher asks.
fn convert(name: &str, args: &[Value], to: &LogicalType) -> Result<Value> {
    arity(name, args, 1, 1)?;
    let v = &args[0];
    let t = v.logical_type();
    let ok = match to {
        LogicalType::Bool => matches!(v, Value::String(_) | Value::Bool(_)) || t.is_integer(),
        LogicalType::String => !matches!(
            v,
            Value::List(_)
                | Value::Map(_)
                | Value::Struct(_)
                | Value::Node(_)
                | Value::Rel(_)
                | Value::Path(_)
                | Value::InternalId(_)
        ),
        LogicalType::Int64 => matches!(v, Value::String(_) | Value::Bool(_)) || t.is_numeric(),
        // toFloat(true) is an error in openCypher (toInteger(true) is 1).
        _ => matches!(v, Value::String(_)) || t.is_numeric(),
    };
    if !ok {
        return Err(kith_common::Error::type_error(format!(
            "{name}() cannot convert a {t} value (invalid argument value)"
        )));
    }
    Ok(try_cast_value(v, to).unwrap_or(Value::Null))
}

/// `nullIf(a, b)`: NULL when `a = b` is true, else `a`.
fn null_if(args: &[Value]) -> Result<Value> {
    arity("nullif", args, 2, 2)?;
    Ok(
        match crate::expression::kernels::equals(&args[0], &args[1]) {
            Some(true) => Value::Null,
            _ => args[0].clone(),
        },
    )
}

fn coalesce(args: &[Value]) -> Result<Value> {
    Ok(args
        .iter()
        .find(|v| !v.is_null())
        .cloned()
        .unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use crate::function::call;
    use kith_common::Value;

    #[test]
    fn conversion_functions() {
        assert_eq!(
            call("tostring", &[Value::Int64(5)]).unwrap(),
            Value::String("5".into())
        );
        assert_eq!(
            call("tostring", &[Value::Double(2.0)]).unwrap(),
            Value::String("2.0".into())
        );
        assert_eq!(
            call("tointeger", &[Value::String(" 42 ".into())]).unwrap(),
            Value::Int64(42)
        );
        assert_eq!(
            call("tointeger", &[Value::String("x".into())]).unwrap(),
            Value::Null
        );
        assert_eq!(
            call("tointeger", &[Value::Double(2.7)]).unwrap(),
            Value::Int64(2)
        );
        assert_eq!(
            call("tofloat", &[Value::String("1.5".into())]).unwrap(),
            Value::Double(1.5)
        );
        assert_eq!(
            call("toboolean", &[Value::String("TRUE".into())]).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            call("coalesce", &[Value::Null, Value::Int64(2), Value::Int64(3)]).unwrap(),
            Value::Int64(2)
        );
        assert_eq!(call("coalesce", &[Value::Null]).unwrap(), Value::Null);
        let (one, two) = (Value::Int64(1), Value::Int64(2));
        assert_eq!(
            call("nullif", &[one.clone(), Value::Double(1.0)]).unwrap(),
            Value::Null
        );
        assert_eq!(call("nullif", &[one.clone(), two.clone()]).unwrap(), one);
        assert_eq!(call("nullif", &[one.clone(), Value::Null]).unwrap(), one);
        assert_eq!(call("nullif", &[Value::Null, two]).unwrap(), Value::Null);
        assert!(call("nullif", &[one]).is_err());
    }
}
