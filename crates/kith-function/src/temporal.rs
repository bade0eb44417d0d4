//! Temporal functions: constructors from strings, maps and other temporal
//! values, truncation, durations between values and field extraction. The
//! openCypher part lives in `temporal/cypher.rs`.

use kith_common::temporal::{civil_from_days, MICROS_PER_DAY, MICROS_PER_SEC};
use kith_common::{Error, Interval, Result, Timestamp, Value};

use kith_common::LogicalType as T;

use crate::arguments::{arg_str, arity};
use crate::registry::{ScalarFunction, TypeRule};
use crate::signature::{check, Class::*};

mod cypher;
pub use cypher::{arith, component, DurationOp};
use cypher::{
    between, construct, duration, from_epoch_fn, now, now_nanos, truncate, Between, Kind,
};

const TWO_TO_DURATION: TypeRule = |n, a| {
    check(n, a, &[AnyT, AnyT], 0)?;
    Ok(T::Duration)
};

const PART: TypeRule = |n, a| {
    check(n, a, &[Temporal], 0)?;
    Ok(T::Int64)
};

pub(crate) const FUNCTIONS: &[ScalarFunction] = &[
    ScalarFunction::strict(
        &["date"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::Date)
        },
        |a| construct(Kind::Date, a),
    ),
    ScalarFunction::strict(
        &["date.truncate"],
        |n, a| {
            check(n, a, &[Str, AnyT, AnyT], 1)?;
            Ok(T::Date)
        },
        |a| truncate(Kind::Date, a),
    ),
    ScalarFunction::strict(
        &["date.statement", "date.transaction", "date.realtime"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::Date)
        },
        |a| now(Kind::Date, a),
    ),
    ScalarFunction::strict(
        &["localtime"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::LocalTime)
        },
        |a| construct(Kind::LocalTime, a),
    ),
    ScalarFunction::strict(
        &["localtime.truncate"],
        |n, a| {
            check(n, a, &[Str, AnyT, AnyT], 1)?;
            Ok(T::LocalTime)
        },
        |a| truncate(Kind::LocalTime, a),
    ),
    ScalarFunction::strict(
        &[
            "localtime.statement",
            "localtime.transaction",
            "localtime.realtime",
        ],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::LocalTime)
        },
        |a| now(Kind::LocalTime, a),
    ),
    ScalarFunction::strict(
        &["time"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::Time)
        },
        |a| construct(Kind::Time, a),
    ),
    ScalarFunction::strict(
        &["time.truncate"],
        |n, a| {
            check(n, a, &[Str, AnyT, AnyT], 1)?;
            Ok(T::Time)
        },
        |a| truncate(Kind::Time, a),
    ),
    ScalarFunction::strict(
        &["time.statement", "time.transaction", "time.realtime"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::Time)
        },
        |a| now(Kind::Time, a),
    ),
    ScalarFunction::strict(
        &["localdatetime"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::LocalDateTime)
        },
        |a| construct(Kind::LocalDateTime, a),
    ),
    ScalarFunction::strict(
        &["localdatetime.truncate"],
        |n, a| {
            check(n, a, &[Str, AnyT, AnyT], 1)?;
            Ok(T::LocalDateTime)
        },
        |a| truncate(Kind::LocalDateTime, a),
    ),
    ScalarFunction::strict(
        &[
            "localdatetime.statement",
            "localdatetime.transaction",
            "localdatetime.realtime",
        ],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::LocalDateTime)
        },
        |a| now(Kind::LocalDateTime, a),
    ),
    ScalarFunction::strict(
        &["datetime"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::DateTime)
        },
        |a| construct(Kind::DateTime, a),
    ),
    ScalarFunction::strict(
        &["datetime.truncate"],
        |n, a| {
            check(n, a, &[Str, AnyT, AnyT], 1)?;
            Ok(T::DateTime)
        },
        |a| truncate(Kind::DateTime, a),
    ),
    ScalarFunction::strict(
        &[
            "datetime.statement",
            "datetime.transaction",
            "datetime.realtime",
        ],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(T::DateTime)
        },
        |a| now(Kind::DateTime, a),
    ),
    ScalarFunction::strict(
        &["datetime.fromepoch"],
        |n, a| {
            check(n, a, &[Int, Int], 0)?;
            Ok(T::DateTime)
        },
        |a| from_epoch_fn(false, a),
    ),
    ScalarFunction::strict(
        &["datetime.fromepochmillis"],
        |n, a| {
            check(n, a, &[Int], 0)?;
            Ok(T::DateTime)
        },
        |a| from_epoch_fn(true, a),
    ),
    ScalarFunction::strict(
        &["duration"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            Ok(T::Duration)
        },
        duration,
    ),
    ScalarFunction::strict(&["duration.between"], TWO_TO_DURATION, |a| {
        between(Between::Full, a)
    }),
    ScalarFunction::strict(&["duration.inmonths"], TWO_TO_DURATION, |a| {
        between(Between::Months, a)
    }),
    ScalarFunction::strict(&["duration.indays"], TWO_TO_DURATION, |a| {
        between(Between::Days, a)
    }),
    ScalarFunction::strict(&["duration.inseconds"], TWO_TO_DURATION, |a| {
        between(Between::Seconds, a)
    }),
    // Neo4j's `timestamp()`: the current instant in epoch milliseconds;
    // with an argument, Kùzu's TIMESTAMP constructor.
    ScalarFunction::strict(
        &["timestamp"],
        |n, a| {
            check(n, a, &[AnyT], 1)?;
            Ok(if a.is_empty() { T::Int64 } else { T::Timestamp })
        },
        timestamp,
    ),
    ScalarFunction::strict(
        &["interval"],
        |n, a| {
            check(n, a, &[Str], 0)?;
            Ok(T::Interval)
        },
        interval,
    ),
    ScalarFunction::strict(&["year"], PART, |a| part_fn("year", a)),
    ScalarFunction::strict(&["month"], PART, |a| part_fn("month", a)),
    ScalarFunction::strict(&["day"], PART, |a| part_fn("day", a)),
    ScalarFunction::strict(&["hour"], PART, |a| part_fn("hour", a)),
    ScalarFunction::strict(&["minute"], PART, |a| part_fn("minute", a)),
    ScalarFunction::strict(&["second"], PART, |a| part_fn("second", a)),
    ScalarFunction::strict(
        &["date_part", "datepart"],
        |n, a| {
            check(n, a, &[Str, Temporal], 0)?;
            Ok(T::Int64)
        },
        date_part,
    ),
];

pub(crate) fn parse_timestamp(s: &str) -> Result<Timestamp> {
    Timestamp::parse(s.trim()).ok_or_else(|| Error::runtime(format!("invalid TIMESTAMP '{s}'")))
}

pub(crate) fn parse_interval(s: &str) -> Result<Interval> {
    Interval::parse(s).ok_or_else(|| Error::runtime(format!("invalid INTERVAL '{s}'")))
}

/// `timestamp()`: epoch milliseconds (Neo4j); `timestamp(x)`: a TIMESTAMP
/// from a string, date or timestamp (Kùzu).
fn timestamp(args: &[Value]) -> Result<Value> {
    arity("timestamp", args, 0, 1)?;
    let Some(arg) = args.first() else {
        return Ok(Value::Int64((now_nanos() / 1_000_000) as i64));
    };
    Ok(match arg {
        Value::Timestamp(t) => Value::Timestamp(*t),
        Value::Date(d) => Value::Timestamp(Timestamp(d.0 as i64 * MICROS_PER_DAY)),
        v => Value::Timestamp(parse_timestamp(arg_str("timestamp", v)?)?),
    })
}

fn interval(args: &[Value]) -> Result<Value> {
    arity("interval", args, 1, 1)?;
    Ok(Value::Interval(parse_interval(arg_str(
        "interval", &args[0],
    )?)?))
}

/// A field of a DATE or TIMESTAMP (`date_part`, `year()`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatePart {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl DatePart {
    /// The part named `name` (singular or plural, any case).
    pub fn of(name: &str) -> Option<DatePart> {
        let is = |a: &str, b: &str| name.eq_ignore_ascii_case(a) || name.eq_ignore_ascii_case(b);
        Some(if is("year", "years") {
            DatePart::Year
        } else if is("month", "months") {
            DatePart::Month
        } else if is("day", "days") {
            DatePart::Day
        } else if is("hour", "hours") {
            DatePart::Hour
        } else if is("minute", "minutes") {
            DatePart::Minute
        } else if is("second", "seconds") {
            DatePart::Second
        } else {
            return None;
        })
    }

    /// This part of a DATE (days since the epoch).
    #[inline]
    pub fn of_date(self, days: i32) -> i64 {
        self.of_time(days as i64, 0)
    }

    /// This part of a TIMESTAMP (microseconds since the epoch).
    #[inline]
    pub fn of_timestamp(self, micros: i64) -> i64 {
        self.of_time(
            micros.div_euclid(MICROS_PER_DAY),
            micros.rem_euclid(MICROS_PER_DAY),
        )
    }

    #[inline]
    fn of_time(self, days: i64, micros_of_day: i64) -> i64 {
        let secs = micros_of_day / MICROS_PER_SEC;
        match self {
            DatePart::Year => civil_from_days(days).0,
            DatePart::Month => civil_from_days(days).1 as i64,
            DatePart::Day => civil_from_days(days).2 as i64,
            DatePart::Hour => secs / 3600,
            DatePart::Minute => secs / 60 % 60,
            DatePart::Second => secs % 60,
        }
    }
}

/// Extracts `part` (year, month, day, hour, minute, second) of a DATE or TIMESTAMP.
pub(crate) fn extract(part: &str, v: &Value) -> Result<i64> {
    let known = DatePart::of(part);
    match (v, known) {
        (Value::Date(d), Some(k)) => Ok(k.of_date(d.0)),
        (Value::Timestamp(t), Some(k)) => Ok(k.of_timestamp(t.0)),
        (Value::Date(_) | Value::Timestamp(_), None) => Err(Error::runtime(format!(
            "unknown date part '{}'",
            part.to_ascii_lowercase()
        ))),
        (other, _) => component(other, part)?.as_i64().ok_or_else(|| {
            Error::runtime(format!(
                "cannot extract {part} from a value of type {}",
                other.logical_type()
            ))
        }),
    }
}

fn part_fn(part: &str, args: &[Value]) -> Result<Value> {
    arity(part, args, 1, 1)?;
    Ok(Value::Int64(extract(part, &args[0])?))
}

fn date_part(args: &[Value]) -> Result<Value> {
    arity("date_part", args, 2, 2)?;
    Ok(Value::Int64(extract(
        arg_str("date_part", &args[0])?,
        &args[1],
    )?))
}

#[cfg(test)]
mod tests {
    use crate::call;
    use kith_common::{Date, Value};

    #[test]
    fn temporal_functions() {
        let d = call("date", &[Value::String("2020-03-04".into())]).unwrap();
        assert_eq!(d, Value::Date(Date::from_ymd(2020, 3, 4).unwrap()));
        assert_eq!(
            call("year", std::slice::from_ref(&d)).unwrap(),
            Value::Int64(2020)
        );
        assert_eq!(
            call("month", std::slice::from_ref(&d)).unwrap(),
            Value::Int64(3)
        );
        assert_eq!(
            call("date_part", &[Value::String("day".into()), d.clone()]).unwrap(),
            Value::Int64(4)
        );
        assert!(call("date", &[Value::String("nope".into())]).is_err());
        let t = call("timestamp", &[Value::String("2020-03-04 05:06:07".into())]).unwrap();
        assert_eq!(
            call("hour", std::slice::from_ref(&t)).unwrap(),
            Value::Int64(5)
        );
        assert_eq!(call("second", &[t]).unwrap(), Value::Int64(7));
        let i = call("interval", &[Value::String("2 days".into())]).unwrap();
        assert!(matches!(i, Value::Interval(iv) if iv.days == 2));
    }
}
