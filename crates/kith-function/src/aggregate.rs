//! The aggregate functions: names, type rules and the [`AggregateKind`] the
//! executor keeps per-group states for (its `aggregate_function` module
//! matches on the kind exhaustively, so a kind cannot lack a state).

use kith_common::{Error, LogicalType, Result};

/// What an aggregate computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateKind {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
    Collect,
    /// The sample standard deviation (n - 1 degrees of freedom).
    Stdev,
    /// The population standard deviation (`stDevP`: n).
    StdevPop,
}

/// An aggregate's type rule: the result type for the argument's type
/// (`None` for `count(*)`).
pub type AggregateRule = fn(&str, Option<&LogicalType>) -> Result<LogicalType>;

/// One built-in aggregate function.
#[derive(Debug)]
pub struct AggregateFunction {
    /// Lower-case names it is called by; the first is its own.
    pub names: &'static [&'static str],
    pub kind: AggregateKind,
    pub result_type: AggregateRule,
}

const AGGREGATES: &[AggregateFunction] = &[
    AggregateFunction {
        names: &["count"],
        kind: AggregateKind::Count,
        result_type: |_, _| Ok(LogicalType::Int64),
    },
    AggregateFunction {
        names: &["count_star"],
        kind: AggregateKind::CountStar,
        result_type: |_, _| Ok(LogicalType::Int64),
    },
    AggregateFunction {
        names: &["sum"],
        kind: AggregateKind::Sum,
        result_type: |n, arg| {
            use LogicalType as T;
            Ok(match need_arg(n, arg)? {
                t if t.is_integer() => T::Int64,
                T::Float | T::Double => T::Double,
                T::Any => T::Any,
                t => {
                    return Err(Error::type_error(format!(
                        "sum() expects a numeric argument, got {t}"
                    )))
                }
            })
        },
    },
    AggregateFunction {
        names: &["min"],
        kind: AggregateKind::Min,
        result_type: |n, arg| Ok(need_arg(n, arg)?.clone()),
    },
    AggregateFunction {
        names: &["max"],
        kind: AggregateKind::Max,
        result_type: |n, arg| Ok(need_arg(n, arg)?.clone()),
    },
    AggregateFunction {
        names: &["avg"],
        kind: AggregateKind::Avg,
        result_type: numeric_to_double,
    },
    AggregateFunction {
        names: &["collect"],
        kind: AggregateKind::Collect,
        result_type: |n, arg| Ok(LogicalType::List(Box::new(need_arg(n, arg)?.clone()))),
    },
    AggregateFunction {
        names: &["stdev", "stddev", "stddev_samp"],
        kind: AggregateKind::Stdev,
        result_type: numeric_to_double,
    },
    AggregateFunction {
        names: &["stdevp", "stddev_pop"],
        kind: AggregateKind::StdevPop,
        result_type: numeric_to_double,
    },
];

fn need_arg<'a>(name: &str, arg: Option<&'a LogicalType>) -> Result<&'a LogicalType> {
    arg.ok_or_else(|| Error::semantic(format!("{name}() takes exactly one argument")))
}

fn numeric_to_double(name: &str, arg: Option<&LogicalType>) -> Result<LogicalType> {
    match need_arg(name, arg)? {
        t if t.is_numeric() || *t == LogicalType::Any => Ok(LogicalType::Double),
        t => Err(Error::type_error(format!(
            "{name}() expects a numeric argument, got {t}"
        ))),
    }
}

/// Every aggregate function.
pub fn all() -> impl Iterator<Item = &'static AggregateFunction> {
    AGGREGATES.iter()
}

/// The aggregate called `lower_name`.
pub fn aggregate(lower_name: &str) -> Option<&'static AggregateFunction> {
    all().find(|a| a.names.contains(&lower_name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::ErrorKind;

    fn rule(name: &str, arg: Option<&LogicalType>) -> Result<LogicalType> {
        (aggregate(name).unwrap().result_type)(name, arg)
    }

    #[test]
    fn aggregate_types() {
        use LogicalType as T;
        assert!(aggregate("count").is_some() && aggregate("abs").is_none());
        assert_eq!(rule("sum", Some(&T::Int32)).unwrap(), T::Int64);
        assert_eq!(rule("sum", Some(&T::Float)).unwrap(), T::Double);
        assert_eq!(rule("avg", Some(&T::Int8)).unwrap(), T::Double);
        assert_eq!(rule("count", None).unwrap(), T::Int64);
        assert_eq!(
            rule("collect", Some(&T::String)).unwrap(),
            T::List(Box::new(T::String))
        );
        let e = rule("sum", Some(&T::String)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Type);
        assert!(
            e.message.contains("sum") && e.message.contains("STRING"),
            "{}",
            e.message
        );
        assert!(rule("min", None).is_err());
    }

    #[test]
    fn every_kind_has_a_name() {
        use AggregateKind::*;
        for kind in [
            CountStar, Count, Sum, Min, Max, Avg, Collect, Stdev, StdevPop,
        ] {
            assert!(all().any(|a| a.kind == kind), "{kind:?} has no name");
        }
    }
}
