//! String functions. Positions are 0-based and counted in characters.

use kith_common::{Error, Result, Value};

use kith_common::LogicalType as T;

use crate::arguments::{arg_i64, arg_str, arity};
use crate::registry::{ScalarFunction, TypeRule};
use crate::signature::{check, Class::*};

const STR_TO_STR: TypeRule = |n, a| {
    check(n, a, &[Str], 0)?;
    Ok(T::String)
};

const STR_PREDICATE: TypeRule = |n, a| {
    check(n, a, &[Str, Str], 0)?;
    Ok(T::Bool)
};

pub(crate) const FUNCTIONS: &[ScalarFunction] = &[
    ScalarFunction::strict(&["lower", "tolower"], STR_TO_STR, |a| {
        map("lower", a, |s| s.to_lowercase())
    }),
    ScalarFunction::strict(&["upper", "toupper"], STR_TO_STR, |a| {
        map("upper", a, |s| s.to_uppercase())
    }),
    ScalarFunction::strict(&["trim"], STR_TO_STR, |a| {
        map("trim", a, |s| s.trim().to_string())
    }),
    ScalarFunction::strict(&["ltrim"], STR_TO_STR, |a| {
        map("ltrim", a, |s| s.trim_start().to_string())
    }),
    ScalarFunction::strict(&["rtrim"], STR_TO_STR, |a| {
        map("rtrim", a, |s| s.trim_end().to_string())
    }),
    ScalarFunction::strict(
        &["reverse"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            match &a[0] {
                T::String | T::Any => Ok(T::String),
                T::List(_) => Ok(a[0].clone()),
                t => Err(Error::type_error(format!(
                    "reverse() expects a STRING or LIST, got {t}"
                ))),
            }
        },
        reverse,
    ),
    ScalarFunction::strict(
        &["substring", "substr"],
        |n, a| {
            check(n, a, &[Str, Int, Int], 1)?;
            Ok(T::String)
        },
        substring,
    ),
    ScalarFunction::strict(&["left"], STR_INT_TO_STR, left),
    ScalarFunction::strict(&["right"], STR_INT_TO_STR, right),
    ScalarFunction::strict(
        &["replace"],
        |n, a| {
            check(n, a, &[Str, Str, Str], 0)?;
            Ok(T::String)
        },
        replace,
    ),
    ScalarFunction::strict(
        &["concat"],
        |_, a| {
            if a.is_empty() {
                return Err(Error::type_error(
                    "concat() takes at least 1 argument, got 0",
                ));
            }
            Ok(T::String)
        },
        concat,
    ),
    ScalarFunction::strict(&["starts_with", "prefix"], STR_PREDICATE, |a| {
        pred("starts_with", a, |s, p| s.starts_with(p))
    }),
    ScalarFunction::strict(&["ends_with", "suffix"], STR_PREDICATE, |a| {
        pred("ends_with", a, |s, p| s.ends_with(p))
    }),
    ScalarFunction::strict(&["contains"], STR_PREDICATE, |a| {
        pred("contains", a, |s, p| s.contains(p))
    }),
    ScalarFunction::strict(
        &["split", "string_split"],
        |n, a| {
            check(n, a, &[Str, Str], 0)?;
            Ok(T::List(Box::new(T::String)))
        },
        split,
    ),
    ScalarFunction::strict(
        &["size", "length"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            // openCypher: the length of a path is length(p); size(p) is a
            // type error.
            let path_length = n == "length" && a[0] == T::Path;
            if !(path_length || matches!(a[0], T::String | T::List(_) | T::Any)) {
                return Err(Error::type_error(format!(
                    "{n}() expects a STRING or LIST, got {}",
                    a[0]
                )));
            }
            Ok(T::Int64)
        },
        size,
    ),
];

const STR_INT_TO_STR: TypeRule = |n, a| {
    check(n, a, &[Str, Int], 0)?;
    Ok(T::String)
};

fn map(name: &str, args: &[Value], f: fn(&str) -> String) -> Result<Value> {
    arity(name, args, 1, 1)?;
    Ok(Value::String(f(arg_str(name, &args[0])?)))
}

fn pred(name: &str, args: &[Value], f: fn(&str, &str) -> bool) -> Result<Value> {
    arity(name, args, 2, 2)?;
    Ok(Value::Bool(f(
        arg_str(name, &args[0])?,
        arg_str(name, &args[1])?,
    )))
}

fn reverse(args: &[Value]) -> Result<Value> {
    arity("reverse", args, 1, 1)?;
    match &args[0] {
        Value::String(s) => Ok(Value::String(s.chars().rev().collect())),
        Value::List(l) => Ok(Value::list(l.iter().rev().cloned().collect())),
        v => Err(Error::runtime(format!(
            "reverse() expects a STRING or LIST, got {}",
            v.logical_type()
        ))),
    }
}

fn non_negative(name: &str, v: &Value) -> Result<usize> {
    let i = arg_i64(name, v)?;
    usize::try_from(i)
        .map_err(|_| Error::runtime(format!("{name}() expects a non-negative integer, got {i}")))
}

/// `substring(s, start[, len])`: characters from 0-based `start`.
fn substring(args: &[Value]) -> Result<Value> {
    arity("substring", args, 2, 3)?;
    let s = arg_str("substring", &args[0])?;
    let start = non_negative("substring", &args[1])?;
    let it = s.chars().skip(start);
    Ok(Value::String(match args.get(2) {
        Some(l) => it.take(non_negative("substring", l)?).collect(),
        None => it.collect(),
    }))
}

fn left(args: &[Value]) -> Result<Value> {
    arity("left", args, 2, 2)?;
    let s = arg_str("left", &args[0])?;
    Ok(Value::String(
        s.chars().take(non_negative("left", &args[1])?).collect(),
    ))
}

fn right(args: &[Value]) -> Result<Value> {
    arity("right", args, 2, 2)?;
    let s = arg_str("right", &args[0])?;
    let n = non_negative("right", &args[1])?;
    let count = s.chars().count();
    Ok(Value::String(
        s.chars().skip(count.saturating_sub(n)).collect(),
    ))
}

fn replace(args: &[Value]) -> Result<Value> {
    arity("replace", args, 3, 3)?;
    let s = arg_str("replace", &args[0])?;
    let from = arg_str("replace", &args[1])?;
    let to = arg_str("replace", &args[2])?;
    if from.is_empty() {
        return Ok(Value::String(s.to_string()));
    }
    Ok(Value::String(s.replace(from, to)))
}

/// Concatenates the text of all arguments (NULL when any is NULL).
fn concat(args: &[Value]) -> Result<Value> {
    let mut out = String::new();
    for a in args {
        match a {
            Value::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(Value::String(out))
}

fn split(args: &[Value]) -> Result<Value> {
    arity("split", args, 2, 2)?;
    let s = arg_str("split", &args[0])?;
    let sep = arg_str("split", &args[1])?;
    let parts: Vec<Value> = if sep.is_empty() {
        s.chars().map(|c| Value::String(c.to_string())).collect()
    } else {
        s.split(sep).map(|p| Value::String(p.to_string())).collect()
    };
    Ok(Value::list(parts))
}

fn size(args: &[Value]) -> Result<Value> {
    arity("size", args, 1, 1)?;
    match &args[0] {
        Value::String(s) => Ok(Value::Int64(s.chars().count() as i64)),
        Value::List(l) => Ok(Value::Int64(l.len() as i64)),
        Value::Path(p) => Ok(Value::Int64(p.rel_count() as i64)),
        v => Err(Error::runtime(format!(
            "size() expects a STRING or LIST, got {}",
            v.logical_type()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use crate::call;
    use kith_common::Value;

    fn s(x: &str) -> Value {
        Value::String(x.into())
    }

    #[test]
    fn string_functions() {
        assert_eq!(call("lower", &[s("AbC")]).unwrap(), s("abc"));
        assert_eq!(call("toupper", &[s("AbC")]).unwrap(), s("ABC"));
        assert_eq!(call("trim", &[s("  x ")]).unwrap(), s("x"));
        assert_eq!(call("ltrim", &[s("  x ")]).unwrap(), s("x "));
        assert_eq!(call("rtrim", &[s("  x ")]).unwrap(), s("  x"));
        assert_eq!(
            call("substring", &[s("héllo"), Value::Int64(1), Value::Int64(3)]).unwrap(),
            s("éll")
        );
        assert_eq!(
            call("substring", &[s("hello"), Value::Int64(3)]).unwrap(),
            s("lo")
        );
        assert!(call("substring", &[s("hello"), Value::Int64(-1)]).is_err());
        assert_eq!(
            call("left", &[s("hello"), Value::Int64(2)]).unwrap(),
            s("he")
        );
        assert_eq!(
            call("right", &[s("hello"), Value::Int64(2)]).unwrap(),
            s("lo")
        );
        assert_eq!(call("right", &[s("hi"), Value::Int64(5)]).unwrap(), s("hi"));
        assert_eq!(
            call("replace", &[s("aXbX"), s("X"), s("-")]).unwrap(),
            s("a-b-")
        );
        assert_eq!(call("reverse", &[s("abc")]).unwrap(), s("cba"));
        assert_eq!(call("size", &[s("héllo")]).unwrap(), Value::Int64(5));
        assert_eq!(call("concat", &[s("a"), Value::Int64(1)]).unwrap(), s("a1"));
        assert_eq!(call("concat", &[s("a"), Value::Null]).unwrap(), Value::Null);
        assert_eq!(
            call("starts_with", &[s("abc"), s("ab")]).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            call("ends_with", &[s("abc"), s("ab")]).unwrap(),
            Value::Bool(false)
        );
        assert_eq!(
            call("contains", &[s("abc"), s("b")]).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            call("split", &[s("a,b"), s(",")]).unwrap(),
            Value::list(vec![s("a"), s("b")])
        );
    }
}
