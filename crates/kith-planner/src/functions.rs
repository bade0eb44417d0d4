//! What the binder asks about functions and operators' types. Functions
//! are defined once, in `kith-function`'s registry (name, type rule,
//! implementation); this module answers from it for the calls a query may
//! write, and adds the typing of operators on temporal values.

use kith_common::{Error, LogicalType, Result};

pub use kith_function::signature::common_type;

/// Whether `lower_name` names an aggregate function.
pub fn is_aggregate(lower_name: &str) -> bool {
    kith_function::aggregate::aggregate(lower_name).is_some()
}

/// Result type of aggregate `lower_name` over an argument of type `arg`
/// (`None` for `count(*)`).
pub fn aggregate_type(lower_name: &str, arg: Option<&LogicalType>) -> Result<LogicalType> {
    match kith_function::aggregate::aggregate(lower_name) {
        Some(a) => (a.result_type)(lower_name, arg),
        None => Err(Error::semantic(format!(
            "unknown aggregate function '{lower_name}'"
        ))),
    }
}

/// Result type of scalar function `lower_name` applied to `args`, for a
/// call a query wrote (the binder's internal functions are not callable by
/// name).
pub fn scalar_type(lower_name: &str, args: &[LogicalType]) -> Result<LogicalType> {
    match kith_function::scalar(lower_name) {
        Some(f) if !f.internal => (f.result_type)(lower_name, args),
        _ => Err(Error::semantic(format!("unknown function '{lower_name}'"))),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::ErrorKind;

    #[test]
    fn answers_from_the_registry() {
        use LogicalType as T;
        assert!(is_aggregate("count") && !is_aggregate("abs"));
        assert_eq!(aggregate_type("sum", Some(&T::Int32)).unwrap(), T::Int64);
        assert_eq!(scalar_type("abs", &[T::Int32]).unwrap(), T::Int64);
        let e = scalar_type("foo", &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Semantic);
        assert_eq!(e.message, "unknown function 'foo'");
        let e = aggregate_type("foo", None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Semantic);
    }

    /// The binder's internal functions take its own encoding of entities;
    /// a query naming one gets the unknown-function error.
    #[test]
    fn internal_functions_are_not_callable_by_name() {
        for f in kith_function::registry::all().filter(|f| f.internal) {
            let e = scalar_type(f.name(), &[LogicalType::Any]).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Semantic, "{}", f.name());
        }
        assert!(scalar_type("_node", &[LogicalType::InternalId]).is_err());
    }
}
