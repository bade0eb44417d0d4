//! Type rules of the built-in functions: which names are aggregates, and the
//! result type of an aggregate or scalar call given its argument types. The
//! executor's function library (`kith-exec::function`) implements exactly the
//! names accepted here.

use kith_common::{Error, LogicalType, Result};

/// Whether `lower_name` names an aggregate function.
pub fn is_aggregate(lower_name: &str) -> bool {
    matches!(
        lower_name,
        "count"
            | "count_star"
            | "sum"
            | "min"
            | "max"
            | "avg"
            | "collect"
            | "stdev"
            | "stddev"
            | "stddev_samp"
            | "stdevp"
            | "stddev_pop"
    )
}

/// Result type of aggregate `lower_name` over an argument of type `arg`
/// (`None` for `count(*)`).
pub fn aggregate_type(lower_name: &str, arg: Option<&LogicalType>) -> Result<LogicalType> {
    use LogicalType as T;
    let need_arg =
        || arg.ok_or_else(|| Error::semantic(format!("{lower_name}() takes exactly one argument")));
    Ok(match lower_name {
        "count" | "count_star" => T::Int64,
        "sum" => match need_arg()? {
            t if t.is_integer() => T::Int64,
            T::Float | T::Double => T::Double,
            T::Any => T::Any,
            t => {
                return Err(Error::type_error(format!(
                    "sum() expects a numeric argument, got {t}"
                )))
            }
        },
        "avg" | "stdev" | "stddev" | "stddev_samp" | "stdevp" | "stddev_pop" => match need_arg()? {
            t if t.is_numeric() || *t == T::Any => T::Double,
            t => {
                return Err(Error::type_error(format!(
                    "{lower_name}() expects a numeric argument, got {t}"
                )))
            }
        },
        "min" | "max" => need_arg()?.clone(),
        "collect" => T::List(Box::new(need_arg()?.clone())),
        _ => {
            return Err(Error::semantic(format!(
                "unknown aggregate function '{lower_name}'"
            )))
        }
    })
}

/// Coarse argument classes used by the checks below.
#[derive(Clone, Copy)]
enum Class {
    Num,
    Int,
    Str,
    List,
    Temporal,
    AnyT,
}

fn fits(class: Class, t: &LogicalType) -> bool {
    use LogicalType as T;
    if *t == T::Any {
        return true;
    }
    match class {
        Class::Num => t.is_numeric(),
        Class::Int => t.is_integer(),
        Class::Str => *t == T::String,
        Class::List => matches!(t, T::List(_)),
        Class::Temporal => matches!(
            t,
            T::Date | T::Timestamp | T::LocalTime | T::Time | T::LocalDateTime | T::DateTime
        ),
        Class::AnyT => true,
    }
}

fn class_name(c: Class) -> &'static str {
    match c {
        Class::Num => "a numeric value",
        Class::Int => "an integer",
        Class::Str => "a STRING",
        Class::List => "a LIST",
        Class::Temporal => "a temporal value",
        Class::AnyT => "any value",
    }
}

/// Checks arity (`classes.len() - optional ..= classes.len()`) and classes.
fn check(name: &str, args: &[LogicalType], classes: &[Class], optional: usize) -> Result<()> {
    let max = classes.len();
    let min = max - optional;
    if args.len() < min || args.len() > max {
        let expected = if min == max {
            format!("{max}")
        } else {
            format!("{min} to {max}")
        };
        return Err(Error::type_error(format!(
            "{name}() takes {expected} argument{}, got {}",
            if min == 1 && max == 1 { "" } else { "s" },
            args.len()
        )));
    }
    for (i, (t, c)) in args.iter().zip(classes).enumerate() {
        if !fits(*c, t) {
            return Err(Error::type_error(format!(
                "argument {} of {name}() must be {}, got {t}",
                i + 1,
                class_name(*c)
            )));
        }
    }
    Ok(())
}

/// The common type of two types (numeric widening; ANY yields the other).
pub fn common_type(a: &LogicalType, b: &LogicalType) -> Option<LogicalType> {
    use LogicalType as T;
    if a == b || *b == T::Any {
        return Some(a.clone());
    }
    if *a == T::Any {
        return Some(b.clone());
    }
    if a.is_integer() && b.is_integer() {
        return Some(T::Int64);
    }
    if a.is_numeric() && b.is_numeric() {
        return Some(T::Double);
    }
    match (a, b) {
        (T::List(x), T::List(y)) => common_type(x, y).map(|t| T::List(Box::new(t))),
        _ => None,
    }
}

/// The type an openCypher temporal constructor (`date`, `localtime`, `time`,
/// `localdatetime`, `datetime`, also as `X.truncate`, `X.statement`,
/// `X.transaction`, `X.realtime`) returns.
fn temporal_kind(lower_name: &str) -> Option<LogicalType> {
    use LogicalType as T;
    let (base, suffix) = lower_name.split_once('.').unwrap_or((lower_name, ""));
    if !matches!(
        suffix,
        "" | "truncate" | "statement" | "transaction" | "realtime"
    ) {
        return None;
    }
    Some(match base {
        "date" => T::Date,
        "localtime" => T::LocalTime,
        "time" => T::Time,
        "localdatetime" => T::LocalDateTime,
        "datetime" => T::DateTime,
        _ => return None,
    })
}

/// Whether values of type `t` have components read as `value.field`
/// (temporal values and durations).
pub fn is_temporal(t: &LogicalType) -> bool {
    use LogicalType as T;
    matches!(
        t,
        T::Date
            | T::Timestamp
            | T::LocalTime
            | T::Time
            | T::LocalDateTime
            | T::DateTime
            | T::Duration
    )
}

/// The type of component `key` of a temporal value or duration of type
/// `t` (`d.year`, `t.timezone`, `dur.days`); `None` when `t` has no such
/// component.
pub fn temporal_field_type(t: &LogicalType, key: &str) -> Option<LogicalType> {
    if !is_temporal(t) {
        return None;
    }
    Some(match key.to_ascii_lowercase().as_str() {
        "timezone" | "offset" => LogicalType::String,
        _ => LogicalType::Int64,
    })
}

/// The result type of `l op r` when a side is a DURATION: temporal ±
/// duration keeps the temporal's type, duration ± duration, duration ×
/// number and duration ÷ number are durations; `None` for other operands.
/// (The binder's `binary_type` asks this before giving up.)
pub fn temporal_arith_type(
    op: crate::expr::BinaryOp,
    l: &LogicalType,
    r: &LogicalType,
) -> Option<LogicalType> {
    use crate::expr::BinaryOp as B;
    use LogicalType as T;
    let instant = |t: &T| {
        matches!(
            t,
            T::Date | T::LocalTime | T::Time | T::LocalDateTime | T::DateTime | T::Duration
        )
    };
    let number = |t: &T| t.is_numeric() || *t == T::Any;
    Some(match (op, l, r) {
        (B::Add | B::Sub, t, T::Duration) if instant(t) => t.clone(),
        (B::Add, T::Duration, t) if instant(t) => t.clone(),
        (B::Add | B::Sub, T::Any, T::Duration) | (B::Add, T::Duration, T::Any) => T::Any,
        (B::Mul, T::Duration, n) | (B::Mul, n, T::Duration) if number(n) => T::Duration,
        (B::Div, T::Duration, n) if number(n) => T::Duration,
        _ => return None,
    })
}

/// Result type of scalar function `lower_name` applied to `args`.
pub fn scalar_type(lower_name: &str, args: &[LogicalType]) -> Result<LogicalType> {
    use Class::*;
    use LogicalType as T;
    let n = lower_name;
    let elem = |t: &T| match t {
        T::List(e) => (**e).clone(),
        _ => T::Any,
    };
    Ok(match n {
        "abs" => {
            check(n, args, &[Num], 0)?;
            match &args[0] {
                t if t.is_integer() => T::Int64,
                T::Any => T::Any,
                _ => T::Double,
            }
        }
        "sign" => {
            check(n, args, &[Num], 0)?;
            T::Int64
        }
        "ceil" | "floor" | "sqrt" | "ln" | "log" | "log10" | "exp" | "sin" | "cos" | "tan"
        | "asin" | "acos" | "atan" | "degrees" | "radians" => {
            check(n, args, &[Num], 0)?;
            T::Double
        }
        "round" => {
            check(n, args, &[Num, Int], 1)?;
            T::Double
        }
        "pow" | "power" | "atan2" => {
            check(n, args, &[Num, Num], 0)?;
            T::Double
        }
        "pi" | "e" | "rand" => {
            check(n, args, &[], 0)?;
            T::Double
        }
        "lower" | "upper" | "tolower" | "toupper" | "trim" | "ltrim" | "rtrim" => {
            check(n, args, &[Str], 0)?;
            T::String
        }
        "reverse" => {
            check(n, args, &[AnyT], 0)?;
            match &args[0] {
                T::String | T::Any => T::String,
                T::List(_) => args[0].clone(),
                t => {
                    return Err(Error::type_error(format!(
                        "reverse() expects a STRING or LIST, got {t}"
                    )))
                }
            }
        }
        "substring" | "substr" => {
            check(n, args, &[Str, Int, Int], 1)?;
            T::String
        }
        "left" | "right" => {
            check(n, args, &[Str, Int], 0)?;
            T::String
        }
        "replace" => {
            check(n, args, &[Str, Str, Str], 0)?;
            T::String
        }
        "size" | "length" => {
            check(n, args, &[AnyT], 0)?;
            // openCypher: the length of a path is length(p); size(p) is a
            // type error.
            let path_length = n == "length" && args[0] == T::Path;
            if !(path_length || matches!(args[0], T::String | T::List(_) | T::Any)) {
                return Err(Error::type_error(format!(
                    "{n}() expects a STRING or LIST, got {}",
                    args[0]
                )));
            }
            T::Int64
        }
        "concat" => {
            if args.is_empty() {
                return Err(Error::type_error(
                    "concat() takes at least 1 argument, got 0",
                ));
            }
            T::String
        }
        "starts_with" | "ends_with" | "contains" | "prefix" | "suffix" => {
            check(n, args, &[Str, Str], 0)?;
            T::Bool
        }
        "split" | "string_split" => {
            check(n, args, &[Str, Str], 0)?;
            T::List(Box::new(T::String))
        }
        "tostring" | "to_string" => {
            check(n, args, &[AnyT], 0)?;
            T::String
        }
        "tointeger" | "toint" | "to_int64" => {
            check(n, args, &[AnyT], 0)?;
            T::Int64
        }
        "tofloat" | "todouble" | "to_double" => {
            check(n, args, &[AnyT], 0)?;
            // Only text and numbers convert (openCypher: a BOOL, list, map
            // or entity is an invalid argument); known at compile time when
            // the argument's type is.
            if let Some(t) = args
                .first()
                .filter(|t| !(t.is_numeric() || matches!(t, T::String | T::Any)))
            {
                return Err(Error::type_error(format!(
                    "tofloat() cannot convert a {t} value (invalid argument value)"
                )));
            }
            T::Double
        }
        "toboolean" | "tobool" => {
            check(n, args, &[AnyT], 0)?;
            T::Bool
        }
        "coalesce" => {
            if args.is_empty() {
                return Err(Error::type_error(
                    "coalesce() takes at least 1 argument, got 0",
                ));
            }
            let mut t = T::Any;
            for a in args {
                t = common_type(&t, a).ok_or_else(|| {
                    Error::type_error(format!(
                        "coalesce() arguments have incompatible types {t} and {a}"
                    ))
                })?;
            }
            t
        }
        "nullif" => {
            check(n, args, &[AnyT, AnyT], 0)?;
            args[0].clone()
        }
        // Neo4j's `timestamp()`: the current instant in epoch milliseconds;
        // with an argument, Kùzu's TIMESTAMP constructor.
        "timestamp" => {
            check(n, args, &[AnyT], 1)?;
            match args.len() {
                0 => T::Int64,
                _ => T::Timestamp,
            }
        }
        "interval" => {
            check(n, args, &[Str], 0)?;
            T::Interval
        }
        "duration" => {
            check(n, args, &[AnyT], 0)?;
            T::Duration
        }
        "datetime.fromepoch" => {
            check(n, args, &[Int, Int], 0)?;
            T::DateTime
        }
        "datetime.fromepochmillis" => {
            check(n, args, &[Int], 0)?;
            T::DateTime
        }
        "duration.between" | "duration.inmonths" | "duration.indays" | "duration.inseconds" => {
            check(n, args, &[AnyT, AnyT], 0)?;
            T::Duration
        }
        _ if temporal_kind(n).is_some() => {
            let (base, suffix) = n.split_once('.').unwrap_or((n, ""));
            match suffix {
                "truncate" => check(n, args, &[Str, AnyT, AnyT], 1)?,
                _ => check(n, args, &[AnyT], 1)?,
            }
            temporal_kind(base).unwrap_or(T::Any)
        }
        "year" | "month" | "day" | "hour" | "minute" | "second" => {
            check(n, args, &[Temporal], 0)?;
            T::Int64
        }
        "date_part" | "datepart" => {
            check(n, args, &[Str, Temporal], 0)?;
            T::Int64
        }
        "range" => {
            check(n, args, &[Int, Int, Int], 1)?;
            T::List(Box::new(T::Int64))
        }
        "properties" => {
            check(n, args, &[AnyT], 0)?;
            match &args[0] {
                t @ (T::Struct(_) | T::Map(..)) => t.clone(),
                T::Node | T::Rel | T::Any => T::Any,
                t => {
                    return Err(Error::type_error(format!(
                        "properties() expects a MAP, NODE or REL, got {t}"
                    )))
                }
            }
        }
        // On values (a node or rel carried as a value, a path); pattern
        // variables are rewritten by the binder before they get here.
        "type" => {
            check(n, args, &[AnyT], 0)?;
            if !matches!(args[0], T::Rel | T::Any) {
                return Err(Error::type_error(format!(
                    "type() expects a REL, got {}",
                    args[0]
                )));
            }
            T::String
        }
        "id" => {
            check(n, args, &[AnyT], 0)?;
            if !matches!(args[0], T::Node | T::Rel | T::InternalId | T::Any) {
                return Err(Error::type_error(format!(
                    "id() expects a NODE or REL, got {}",
                    args[0]
                )));
            }
            T::InternalId
        }
        "labels" => {
            check(n, args, &[AnyT], 0)?;
            if !matches!(args[0], T::Node | T::Any) {
                return Err(Error::type_error(format!(
                    "labels() expects a NODE, got {}",
                    args[0]
                )));
            }
            T::List(Box::new(T::String))
        }
        "nodes" | "relationships" | "rels" => {
            check(n, args, &[AnyT], 0)?;
            if !matches!(args[0], T::Path | T::Any) {
                return Err(Error::type_error(format!(
                    "{n}() expects a PATH, got {}",
                    args[0]
                )));
            }
            T::List(Box::new(if n == "nodes" { T::Node } else { T::Rel }))
        }
        "keys" => {
            check(n, args, &[AnyT], 0)?;
            if !matches!(
                args[0],
                T::Struct(_) | T::Map(..) | T::Node | T::Rel | T::Any
            ) {
                return Err(Error::type_error(format!(
                    "keys() expects a MAP, NODE or REL, got {}",
                    args[0]
                )));
            }
            T::List(Box::new(T::String))
        }
        "head" | "last" => {
            check(n, args, &[List], 0)?;
            elem(&args[0])
        }
        "tail" => {
            check(n, args, &[List], 0)?;
            if args[0] == T::Any {
                T::List(Box::new(T::Any))
            } else {
                args[0].clone()
            }
        }
        _ => return Err(Error::semantic(format!("unknown function '{lower_name}'"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::ErrorKind;

    #[test]
    fn aggregate_types() {
        assert!(is_aggregate("count") && !is_aggregate("abs"));
        assert_eq!(
            aggregate_type("sum", Some(&LogicalType::Int32)).unwrap(),
            LogicalType::Int64
        );
        assert_eq!(
            aggregate_type("sum", Some(&LogicalType::Float)).unwrap(),
            LogicalType::Double
        );
        assert_eq!(
            aggregate_type("avg", Some(&LogicalType::Int8)).unwrap(),
            LogicalType::Double
        );
        assert_eq!(aggregate_type("count", None).unwrap(), LogicalType::Int64);
        assert_eq!(
            aggregate_type("collect", Some(&LogicalType::String)).unwrap(),
            LogicalType::List(Box::new(LogicalType::String))
        );
        let e = aggregate_type("sum", Some(&LogicalType::String)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Type);
        assert!(
            e.message.contains("sum") && e.message.contains("STRING"),
            "{}",
            e.message
        );
    }

    #[test]
    fn scalar_types() {
        use LogicalType as T;
        assert_eq!(scalar_type("abs", &[T::Int32]).unwrap(), T::Int64);
        assert_eq!(scalar_type("round", &[T::Double]).unwrap(), T::Double);
        assert_eq!(
            scalar_type("substring", &[T::String, T::Int64, T::Int64]).unwrap(),
            T::String
        );
        assert_eq!(
            scalar_type("coalesce", &[T::Any, T::Int32, T::Double]).unwrap(),
            T::Double
        );
        assert_eq!(
            scalar_type("head", &[T::List(Box::new(T::String))]).unwrap(),
            T::String
        );
        let e = scalar_type("foo", &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Semantic);
        assert_eq!(e.message, "unknown function 'foo'");
        let e = scalar_type("lower", &[T::Int64]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Type);
        let e = scalar_type("lower", &[]).unwrap_err();
        assert!(e.message.contains("takes 1 argument"), "{}", e.message);
    }
}
