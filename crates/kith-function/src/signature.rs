//! Helpers for type rules: the coarse argument classes a function accepts,
//! the arity and class check with its error message, and the common type of
//! two types. A rule runs when a query is compiled, on the argument types
//! the binder inferred (ANY when unknown: a check passes on ANY and the
//! body checks the value at run time).

use kith_common::{Error, LogicalType, Result};

/// Coarse argument classes.
#[derive(Clone, Copy, Debug)]
pub enum Class {
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
pub fn check(name: &str, args: &[LogicalType], classes: &[Class], optional: usize) -> Result<()> {
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
