//! Conversion functions, `coalesce` and `nullIf` (not NULL-propagating).

use kith_common::{Error, LogicalType, LogicalType as T, Result, Value};

use crate::arguments::arity;
use crate::cast::try_cast_value;
use crate::comparison::equals;
use crate::registry::{ScalarFunction, TypeRule};
use crate::signature::{check, common_type, Class::*};

const TO_STRING: TypeRule = |n, a| {
    check(n, a, &[AnyT], 0)?;
    Ok(T::String)
};

pub(crate) const FUNCTIONS: &[ScalarFunction] = &[
    ScalarFunction::strict(&["tostring", "to_string"], TO_STRING, |a| {
        convert("tostring", a, &T::String)
    }),
    ScalarFunction::strict(
        &["tointeger", "toint", "to_int64"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            Ok(T::Int64)
        },
        |a| convert("tointeger", a, &T::Int64),
    ),
    ScalarFunction::strict(
        &["tofloat", "todouble", "to_double"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            // Only text and numbers convert (openCypher: a BOOL, list, map
            // or entity is an invalid argument); known at compile time when
            // the argument's type is.
            if let Some(t) = a
                .first()
                .filter(|t| !(t.is_numeric() || matches!(t, T::String | T::Any)))
            {
                return Err(Error::type_error(format!(
                    "tofloat() cannot convert a {t} value (invalid argument value)"
                )));
            }
            Ok(T::Double)
        },
        |a| convert("tofloat", a, &T::Double),
    ),
    ScalarFunction::strict(
        &["toboolean", "tobool"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            Ok(T::Bool)
        },
        |a| convert("toboolean", a, &T::Bool),
    ),
    ScalarFunction::null_aware(
        &["coalesce"],
        |_, a| {
            if a.is_empty() {
                return Err(Error::type_error(
                    "coalesce() takes at least 1 argument, got 0",
                ));
            }
            let mut t = T::Any;
            for x in a {
                t = common_type(&t, x).ok_or_else(|| {
                    Error::type_error(format!(
                        "coalesce() arguments have incompatible types {t} and {x}"
                    ))
                })?;
            }
            Ok(t)
        },
        coalesce,
    ),
    ScalarFunction::null_aware(
        &["nullif"],
        |n, a| {
            check(n, a, &[AnyT, AnyT], 0)?;
            Ok(a[0].clone())
        },
        null_if,
    ),
];

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
        return Err(Error::type_error(format!(
            "{name}() cannot convert a {t} value (invalid argument value)"
        )));
    }
    Ok(try_cast_value(v, to).unwrap_or(Value::Null))
}

/// `nullIf(a, b)`: NULL when `a = b` is true, else `a`.
fn null_if(args: &[Value]) -> Result<Value> {
    arity("nullif", args, 2, 2)?;
    Ok(match equals(&args[0], &args[1]) {
        Some(true) => Value::Null,
        _ => args[0].clone(),
    })
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
    use crate::call;
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
