//! openCypher temporal functions: `date`, `localtime`, `time`,
//! `localdatetime`, `datetime` and `duration` from text, maps and other
//! temporal values; `X.truncate`; `duration.between/inMonths/inDays/
//! inSeconds`; the current instant; and the components `value.field` reads.

use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use kith_common::temporal::{
    days_between, format_offset, months_between, parse_iso_date, parse_iso_datetime,
    parse_time_and_zone, plus_months_days, week_year_start, DateTime, Duration, DurationBuilder,
    DurationUnit, LocalDateTime, LocalTime, Num, Time, Zone, NANOS_PER_DAY, NANOS_PER_SEC,
};
use kith_common::{Date, Error, Result, Value};

/// The five openCypher temporal instant types (DATE is shared with the Kùzu
/// dialect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Date,
    LocalTime,
    Time,
    LocalDateTime,
    DateTime,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Date => "date",
            Kind::LocalTime => "localtime",
            Kind::Time => "time",
            Kind::LocalDateTime => "localdatetime",
            Kind::DateTime => "datetime",
        }
    }
    fn has_date(self) -> bool {
        matches!(self, Kind::Date | Kind::LocalDateTime | Kind::DateTime)
    }
    fn has_time(self) -> bool {
        !matches!(self, Kind::Date)
    }
}

/// The components any temporal instant value has: date, time of day, zone
/// and the offset in force (for zoned values).
#[derive(Debug, Clone, Copy, Default)]
struct Parts {
    date: Option<Date>,
    time: Option<LocalTime>,
    zone: Option<Zone>,
    offset: Option<i32>,
}

fn parts(v: &Value) -> Option<Parts> {
    Some(match v {
        Value::Date(d) => Parts {
            date: Some(*d),
            ..Parts::default()
        },
        Value::LocalTime(t) => Parts {
            time: Some(*t),
            ..Parts::default()
        },
        Value::Time(t) => Parts {
            time: Some(t.time),
            zone: Some(Zone::Offset(t.offset)),
            offset: Some(t.offset),
            ..Parts::default()
        },
        Value::LocalDateTime(t) => Parts {
            date: Some(t.date),
            time: Some(t.time),
            ..Parts::default()
        },
        Value::DateTime(t) => Parts {
            date: Some(t.local.date),
            time: Some(t.local.time),
            zone: Some(t.zone()),
            offset: Some(t.offset),
        },
        // Kùzu's TIMESTAMP is an instant in UTC.
        Value::Timestamp(t) => {
            let micros_per_day = NANOS_PER_DAY / 1000;
            Parts {
                date: Some(Date(i32::try_from(t.0.div_euclid(micros_per_day)).ok()?)),
                time: Some(LocalTime(t.0.rem_euclid(micros_per_day) * 1000)),
                zone: Some(Zone::Offset(0)),
                offset: Some(0),
            }
        }
        _ => return None,
    })
}

fn not_temporal(what: &str, v: &Value) -> Error {
    Error::runtime(format!(
        "{what} expects a temporal value, got {} '{v}'",
        v.logical_type()
    ))
}

/// `date(x)` etc.: no argument is the current instant; text is parsed; a
/// map builds or selects; another temporal value converts.
pub(crate) fn construct(kind: Kind, args: &[Value]) -> Result<Value> {
    crate::arguments::arity(kind.name(), args, 0, 1)?;
    let Some(arg) = args.first() else {
        return now(kind, args);
    };
    match arg {
        Value::String(s) => parse_text(kind, s),
        Value::Struct(_) | Value::Map(_) => from_map(kind, &map_fields(kind.name(), arg)?, None),
        other => {
            let p = parts(other).ok_or_else(|| not_temporal(kind.name(), other))?;
            from_parts(kind, p)
        }
    }
}

fn invalid_text(kind: Kind, s: &str) -> Error {
    Error::runtime(format!(
        "{}(): invalid {} '{s}'",
        kind.name(),
        kind.name().to_ascii_uppercase()
    ))
}

fn parse_text(kind: Kind, s: &str) -> Result<Value> {
    let bad = || invalid_text(kind, s);
    Ok(match kind {
        Kind::Date => Value::Date(parse_iso_date(s).ok_or_else(bad)?),
        Kind::LocalTime => Value::LocalTime(parse_time_and_zone(s).ok_or_else(bad)?.0),
        Kind::Time => {
            let (time, zone) = parse_time_and_zone(s).ok_or_else(bad)?;
            let offset = match zone {
                None => 0,
                Some(z) => match (z.offset, z.zone) {
                    (Some(o), _) => o,
                    (None, zone) => {
                        zone.offset_at_instant(now_nanos().div_euclid(1_000_000_000) as i64)
                    }
                },
            };
            Value::Time(Time { time, offset })
        }
        Kind::LocalDateTime => Value::LocalDateTime(parse_iso_datetime(s).ok_or_else(bad)?.0),
        Kind::DateTime => {
            let (local, spec) = parse_iso_datetime(s).ok_or_else(bad)?;
            let zone = spec.map_or(Zone::Offset(0), |z| z.zone);
            let dt = DateTime::from_local(local, zone).ok_or_else(bad)?;
            // An offset written beside a zone name picks the instant when
            // the local time is ambiguous (clocks turned back).
            let written = spec.and_then(|z| z.offset).filter(|o| *o != dt.offset);
            let alt = written.and_then(|o| {
                let instant = local.epoch_nanos() - o as i128 * NANOS_PER_SEC as i128;
                DateTime::from_instant(instant, zone).filter(|d| d.local == local)
            });
            Value::DateTime(alt.unwrap_or(dt))
        }
    })
}

/// A map argument as (key, value) pairs.
fn map_fields(what: &str, v: &Value) -> Result<Vec<(String, Value)>> {
    match v {
        Value::Struct(fields) => Ok(fields.clone()),
        Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| match k {
                Value::String(k) => Ok((k.clone(), v.clone())),
                other => Err(Error::runtime(format!(
                    "{what}() expects a map with STRING keys, got key {other}"
                ))),
            })
            .collect(),
        other => Err(Error::runtime(format!(
            "{what}() expects a map, got {} '{other}'",
            other.logical_type()
        ))),
    }
}

fn out_of_range(kind: Kind) -> Error {
    Error::runtime(format!("{}(): value out of range", kind.name()))
}

/// Converts another temporal value: keeps the components `kind` has,
/// defaulting a missing time to midnight and a missing zone to UTC.
fn from_parts(kind: Kind, p: Parts) -> Result<Value> {
    let need_date = || {
        p.date.ok_or_else(|| {
            Error::runtime(format!(
                "{}(): cannot take a date from a value without one",
                kind.name()
            ))
        })
    };
    let need_time = || {
        p.time.ok_or_else(|| {
            Error::runtime(format!(
                "{}(): cannot take a time from a value without one",
                kind.name()
            ))
        })
    };
    let time = p.time.unwrap_or_default();
    Ok(match kind {
        Kind::Date => Value::Date(need_date()?),
        Kind::LocalTime => Value::LocalTime(need_time()?),
        Kind::Time => Value::Time(Time {
            time: need_time()?,
            offset: p.offset.unwrap_or(0),
        }),
        Kind::LocalDateTime => Value::LocalDateTime(LocalDateTime {
            date: need_date()?,
            time,
        }),
        Kind::DateTime => {
            let local = LocalDateTime {
                date: need_date()?,
                time,
            };
            match (p.zone, p.offset) {
                (Some(zone), Some(offset)) => Value::DateTime(DateTime {
                    local,
                    offset,
                    zone: match zone {
                        Zone::Named(z) => Some(z),
                        Zone::Offset(_) => None,
                    },
                }),
                _ => Value::DateTime(
                    DateTime::from_local(local, Zone::Offset(0))
                        .ok_or_else(|| out_of_range(kind))?,
                ),
            }
        }
    })
}

/// The fields a map argument may hold, for lookup by name.
struct Fields<'a> {
    kind: Kind,
    fields: &'a [(String, Value)],
}

impl Fields<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
            .filter(|v| !v.is_null())
    }

    fn int(&self, key: &str) -> Result<Option<i64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| {
                Error::runtime(format!(
                    "{}(): '{key}' must be an integer, got {} '{v}'",
                    self.kind.name(),
                    v.logical_type()
                ))
            }),
        }
    }

    fn temporal(&self, key: &str) -> Result<Option<Parts>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => parts(v)
                .map(Some)
                .ok_or_else(|| not_temporal(&format!("{}() field '{key}'", self.kind.name()), v)),
        }
    }
}

const KNOWN_FIELDS: &[&str] = &[
    "year",
    "month",
    "day",
    "week",
    "dayofweek",
    "quarter",
    "dayofquarter",
    "ordinalday",
    "hour",
    "minute",
    "second",
    "millisecond",
    "microsecond",
    "nanosecond",
    "timezone",
    "date",
    "time",
    "datetime",
    "epochseconds",
    "epochmillis",
];

/// Builds a value of `kind` from map fields. Without `base` the fields
/// construct it (`year` required for dates) or select from the temporal
/// values under `date`, `time` and `datetime`, other fields overriding
/// theirs. With `base` (truncation) the fields override the truncated
/// value and `timezone` replaces its zone instead of converting to it.
fn from_map(kind: Kind, fields: &[(String, Value)], base: Option<Parts>) -> Result<Value> {
    let f = Fields { kind, fields };
    if let Some((k, _)) = fields
        .iter()
        .find(|(k, _)| !KNOWN_FIELDS.contains(&k.to_ascii_lowercase().as_str()))
    {
        return Err(Error::runtime(format!(
            "{}(): unknown field '{k}'",
            kind.name()
        )));
    }
    if kind == Kind::DateTime && base.is_none() {
        if let Some(v) = from_epoch(&f)? {
            return Ok(v);
        }
    }
    let truncating = base.is_some();
    let whole = f.temporal("datetime")?;
    let date_src = f.temporal("date")?.or(whole).or(base);
    let time_src = f.temporal("time")?.or(whole).or(base);

    let date = if kind.has_date() {
        Some(select_date(&f, date_src.and_then(|p| p.date))?)
    } else {
        None
    };
    let time = if kind.has_time() {
        select_time(&f, time_src.and_then(|p| p.time).unwrap_or_default())?
    } else {
        LocalTime(0)
    };
    let target = match f.get("timezone") {
        None => None,
        Some(Value::String(s)) => Some(Zone::parse(s).ok_or_else(|| {
            Error::runtime(format!("{}(): unknown time zone '{s}'", kind.name()))
        })?),
        Some(v) => {
            return Err(Error::runtime(format!(
                "{}(): 'timezone' must be a STRING, got {} '{v}'",
                kind.name(),
                v.logical_type()
            )))
        }
    };
    let source = time_src.and_then(|p| p.zone.map(|z| (z, p.offset)));
    let range = || out_of_range(kind);
    Ok(match kind {
        Kind::Date => Value::Date(date.ok_or_else(range)?),
        Kind::LocalTime => Value::LocalTime(time),
        Kind::LocalDateTime => Value::LocalDateTime(LocalDateTime {
            date: date.ok_or_else(range)?,
            time,
        }),
        Kind::Time => {
            let src_offset = source.map(|(z, o)| o.unwrap_or_else(|| zone_offset_now(z)));
            match target {
                Some(t) => {
                    let offset = zone_offset_now(t);
                    let time = match src_offset {
                        Some(src) if !truncating => LocalTime::wrapping(
                            time.0 + (offset as i64 - src as i64) * NANOS_PER_SEC,
                        ),
                        _ => time,
                    };
                    Value::Time(Time { time, offset })
                }
                None => Value::Time(Time {
                    time,
                    offset: src_offset.unwrap_or(0),
                }),
            }
        }
        Kind::DateTime => {
            let local = LocalDateTime {
                date: date.ok_or_else(range)?,
                time,
            };
            let dt = match (target, source) {
                (Some(t), Some((src, _))) if !truncating => {
                    let at_src = DateTime::from_local(local, src).ok_or_else(range)?;
                    DateTime::from_instant(at_src.instant(), t)
                }
                (Some(t), _) => DateTime::from_local(local, t),
                (None, Some((src, _))) => DateTime::from_local(local, src),
                (None, None) => DateTime::from_local(local, Zone::Offset(0)),
            };
            Value::DateTime(dt.ok_or_else(range)?)
        }
    })
}

/// `datetime({epochSeconds: s[, nanosecond: n][, timezone: z]})` and
/// `datetime({epochMillis: ms, ...})`; `None` without either field.
fn from_epoch(f: &Fields) -> Result<Option<Value>> {
    let instant = match (f.int("epochSeconds")?, f.int("epochMillis")?) {
        (Some(s), _) => s as i128 * NANOS_PER_SEC as i128,
        (None, Some(ms)) => ms as i128 * 1_000_000,
        (None, None) => return Ok(None),
    };
    let extra = f.int("millisecond")?.unwrap_or(0) as i128 * 1_000_000
        + f.int("microsecond")?.unwrap_or(0) as i128 * 1_000
        + f.int("nanosecond")?.unwrap_or(0) as i128;
    let zone = match f.get("timezone") {
        Some(Value::String(s)) => Zone::parse(s)
            .ok_or_else(|| Error::runtime(format!("datetime(): unknown time zone '{s}'")))?,
        _ => Zone::Offset(0),
    };
    DateTime::from_instant(instant + extra, zone)
        .map(|d| Some(Value::DateTime(d)))
        .ok_or_else(|| out_of_range(Kind::DateTime))
}

/// `datetime.fromepoch(seconds, nanoseconds)` and
/// `datetime.fromepochmillis(milliseconds)`.
pub(crate) fn from_epoch_fn(millis: bool, args: &[Value]) -> Result<Value> {
    let name = if millis {
        "datetime.fromepochmillis"
    } else {
        "datetime.fromepoch"
    };
    crate::arguments::arity(
        name,
        args,
        if millis { 1 } else { 2 },
        if millis { 1 } else { 2 },
    )?;
    let int = |v: &Value| {
        v.as_i64()
            .ok_or_else(|| Error::runtime(format!("{name}() expects integers, got {v}")))
    };
    let key = if millis {
        "epochMillis"
    } else {
        "epochSeconds"
    };
    let mut fields = vec![(key.to_string(), Value::Int64(int(&args[0])?))];
    if let Some(n) = args.get(1) {
        fields.push(("nanosecond".to_string(), Value::Int64(int(n)?)));
    }
    from_map(Kind::DateTime, &fields, None)
}

/// The offset of a zone now (for times, which have no date to fix it).
fn zone_offset_now(z: Zone) -> i32 {
    z.offset_at_instant(now_nanos().div_euclid(NANOS_PER_SEC as i128) as i64)
}

/// The date the fields describe, starting from `base` when selecting: a
/// week-based date if `week` or `dayOfWeek` is given, an ordinal date for
/// `ordinalDay`, a quarter date for `quarter`/`dayOfQuarter`, else a
/// calendar date. Unset fields come from `base`, else their first value.
fn select_date(f: &Fields, base: Option<Date>) -> Result<Date> {
    let year = f.int("year")?;
    let need_year = |by: Option<i64>| {
        year.or(by)
            .ok_or_else(|| Error::runtime(format!("{}(): 'year' must be given", f.kind.name())))
    };
    let (week, dow) = (f.int("week")?, f.int("dayOfWeek")?);
    let ordinal = f.int("ordinalDay")?;
    let (quarter, doq) = (f.int("quarter")?, f.int("dayOfQuarter")?);
    let date = if week.is_some() || dow.is_some() {
        let bw = base.map(|d| d.iso_week());
        let wy = need_year(bw.map(|w| w.0))?;
        Date::from_week(
            wy,
            week.or(bw.map(|w| w.1)).unwrap_or(1),
            dow.or(base.map(|d| d.weekday())).unwrap_or(1),
        )
    } else if let Some(o) = ordinal {
        Date::from_ordinal(need_year(base.map(|d| d.ymd().0))?, o)
    } else if quarter.is_some() || doq.is_some() {
        Date::from_quarter(
            need_year(base.map(|d| d.ymd().0))?,
            quarter.or(base.map(|d| d.quarter())).unwrap_or(1),
            doq.or(base.map(|d| d.day_of_quarter())).unwrap_or(1),
        )
    } else {
        let b = base.map(|d| d.ymd());
        let y = need_year(b.map(|x| x.0))?;
        let m = f.int("month")?.or(b.map(|x| x.1 as i64)).unwrap_or(1);
        let d = f.int("day")?.or(b.map(|x| x.2 as i64)).unwrap_or(1);
        match (u32::try_from(m), u32::try_from(d)) {
            (Ok(m), Ok(d)) => Date::from_ymd(y, m, d),
            _ => None,
        }
    };
    date.ok_or_else(|| Error::runtime(format!("{}(): invalid date fields", f.kind.name())))
}

/// The time of day the fields describe, starting from `base`. Sub-second
/// fields add up (`millisecond: 1, nanosecond: 2` is 1.000002 ms) and
/// replace the base's fraction below the coarsest one given, so truncating
/// to milliseconds and setting `nanosecond: 2` keeps the milliseconds.
fn select_time(f: &Fields, base: LocalTime) -> Result<LocalTime> {
    let h = f.int("hour")?.unwrap_or(base.hour());
    let m = f.int("minute")?.unwrap_or(base.minute());
    let s = f.int("second")?.unwrap_or(base.second());
    let (ms, us, ns) = (
        f.int("millisecond")?,
        f.int("microsecond")?,
        f.int("nanosecond")?,
    );
    let base_ns = base.nanosecond();
    let kept = match (ms, us, ns) {
        (Some(_), _, _) => 0,
        (None, Some(u), _) if u < 1000 => base_ns / 1_000_000 * 1_000_000,
        (None, None, Some(n)) if n < 1000 => base_ns / 1000 * 1000,
        (None, None, None) => base_ns,
        _ => 0,
    };
    let nanos = kept as i128
        + ms.unwrap_or(0) as i128 * 1_000_000
        + us.unwrap_or(0) as i128 * 1000
        + ns.unwrap_or(0) as i128;
    i64::try_from(nanos)
        .ok()
        .and_then(|n| LocalTime::from_hms_nano(h, m, s, n))
        .ok_or_else(|| Error::runtime(format!("{}(): invalid time fields", f.kind.name())))
}

/// `X.truncate(unit, value[, map])`.
pub(crate) fn truncate(kind: Kind, args: &[Value]) -> Result<Value> {
    let name = format!("{}.truncate", kind.name());
    crate::arguments::arity(&name, args, 2, 3)?;
    let unit = crate::arguments::arg_str(&name, &args[0])?;
    let p = parts(&args[1]).ok_or_else(|| not_temporal(&name, &args[1]))?;
    let fields = match args.get(2) {
        Some(m) if !m.is_null() => map_fields(&name, m)?,
        _ => Vec::new(),
    };
    let bad_unit = || Error::runtime(format!("{name}(): cannot truncate to unit '{unit}'"));
    let lower = unit.to_ascii_lowercase();
    let date_unit = matches!(
        lower.as_str(),
        "millennium" | "century" | "decade" | "year" | "weekyear" | "quarter" | "month" | "week"
    );
    let mut t = p;
    if date_unit || lower == "day" {
        if date_unit && !kind.has_date() {
            return Err(bad_unit());
        }
        if let Some(d) = p.date {
            let (y, m, _) = d.ymd();
            let floor = |n: i64| y - y.rem_euclid(n);
            let days = match lower.as_str() {
                "millennium" => Date::from_ymd(floor(1000), 1, 1).map(Date::days),
                "century" => Date::from_ymd(floor(100), 1, 1).map(Date::days),
                "decade" => Date::from_ymd(floor(10), 1, 1).map(Date::days),
                "year" => Date::from_ymd(y, 1, 1).map(Date::days),
                "weekyear" => Some(week_year_start(d.iso_week().0)),
                "quarter" => Date::from_ymd(y, (m - 1) / 3 * 3 + 1, 1).map(Date::days),
                "month" => Date::from_ymd(y, m, 1).map(Date::days),
                "week" => Some(d.days() - (d.weekday() - 1)),
                _ => Some(d.days()),
            };
            t.date = Some(
                days.and_then(|x| i32::try_from(x).ok())
                    .map(Date)
                    .ok_or_else(|| out_of_range(kind))?,
            );
        } else if date_unit || kind.has_date() {
            return Err(bad_unit());
        }
        t.time = Some(LocalTime(0));
    } else {
        let step = match lower.as_str() {
            "hour" => 3_600 * NANOS_PER_SEC,
            "minute" => 60 * NANOS_PER_SEC,
            "second" => NANOS_PER_SEC,
            "millisecond" => 1_000_000,
            "microsecond" => 1_000,
            _ => return Err(bad_unit()),
        };
        if kind == Kind::Date {
            return Err(bad_unit());
        }
        let time = p.time.ok_or_else(bad_unit)?;
        t.time = Some(LocalTime(time.0 - time.0 % step));
    }
    if kind.has_date() && t.date.is_none() {
        return Err(bad_unit());
    }
    from_map(kind, &fields, Some(t))
}

/// The statement clock: the current instant in nanoseconds since the epoch.
/// Cypher wants every call within one statement to see the same instant,
/// but functions here have no statement context; so the instant read is
/// reused for as long as calls keep coming less than 10 ms apart (and for
/// at most a second). Calls within one expression therefore always agree.
pub(crate) fn now_nanos() -> i128 {
    static CLOCK: Mutex<Option<(Instant, Instant, i128)>> = Mutex::new(None);
    let t = Instant::now();
    let mut guard = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((first, last, v)) = *guard {
        if t.duration_since(last).as_millis() < 10 && t.duration_since(first).as_secs() < 1 {
            *guard = Some((first, t, v));
            return v;
        }
    }
    let v = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    *guard = Some((t, t, v));
    v
}

/// The current instant as `kind`, in UTC or in the zone given as the
/// argument (`datetime.statement('Europe/Stockholm')`).
pub(crate) fn now(kind: Kind, args: &[Value]) -> Result<Value> {
    crate::arguments::arity(kind.name(), args, 0, 1)?;
    let zone = match args.first() {
        None => Zone::Offset(0),
        Some(Value::String(s)) => Zone::parse(s)
            .ok_or_else(|| Error::runtime(format!("{}(): unknown time zone '{s}'", kind.name())))?,
        Some(Value::Struct(_) | Value::Map(_)) => {
            let fields = map_fields(kind.name(), &args[0])?;
            return match fields
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("timezone"))
            {
                Some((_, Value::String(s))) => now(kind, &[Value::String(s.clone())]),
                _ => from_map(kind, &fields, None),
            };
        }
        Some(other) => return Err(not_temporal(kind.name(), other)),
    };
    let dt = DateTime::from_instant(now_nanos(), zone).ok_or_else(|| out_of_range(kind))?;
    from_parts(
        kind,
        Parts {
            date: Some(dt.local.date),
            time: Some(dt.local.time),
            zone: Some(zone),
            offset: Some(dt.offset),
        },
    )
}

/// `duration(text | map | duration)`.
pub(crate) fn duration(args: &[Value]) -> Result<Value> {
    crate::arguments::arity("duration", args, 1, 1)?;
    match &args[0] {
        Value::Duration(d) => Ok(Value::Duration(*d)),
        Value::String(s) => Duration::parse(s)
            .map(Value::Duration)
            .ok_or_else(|| Error::runtime(format!("duration(): invalid DURATION '{s}'"))),
        m @ (Value::Struct(_) | Value::Map(_)) => {
            let mut b = DurationBuilder::default();
            for (k, v) in map_fields("duration", m)? {
                let unit = DurationUnit::from_name(&k)
                    .ok_or_else(|| Error::runtime(format!("duration(): unknown field '{k}'")))?;
                let n = match &v {
                    Value::Null => continue,
                    Value::Float(_) | Value::Double(_) => Num::Float(v.as_f64().unwrap_or(0.0)),
                    _ => Num::Int(v.as_i64().ok_or_else(|| {
                        Error::runtime(format!(
                            "duration(): '{k}' must be a number, got {} '{v}'",
                            v.logical_type()
                        ))
                    })?),
                };
                b.add(unit, n);
            }
            b.build()
                .map(Value::Duration)
                .ok_or_else(|| Error::runtime("duration(): value out of range"))
        }
        other => Err(Error::runtime(format!(
            "duration() expects a STRING or a map, got {} '{other}'",
            other.logical_type()
        ))),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Between {
    Full,
    Months,
    Days,
    Seconds,
}

/// `duration.between(a, b)` and `duration.inMonths/inDays/inSeconds`.
///
/// Both values are brought into one frame first: a zoned value keeps its
/// offset, the other side is converted to that offset (a local value is
/// read in the zone of the zoned one), and a value without a date borrows
/// the other's. Months and days count only when both values have dates.
pub(crate) fn between(mode: Between, args: &[Value]) -> Result<Value> {
    let name = match mode {
        Between::Full => "duration.between",
        Between::Months => "duration.inMonths",
        Between::Days => "duration.inDays",
        Between::Seconds => "duration.inSeconds",
    };
    crate::arguments::arity(name, args, 2, 2)?;
    let a = parts(&args[0]).ok_or_else(|| not_temporal(name, &args[0]))?;
    let b = parts(&args[1]).ok_or_else(|| not_temporal(name, &args[1]))?;
    let with_dates = a.date.is_some() && b.date.is_some();
    let local = |p: &Parts, other: &Parts| LocalDateTime {
        date: p.date.or(other.date).unwrap_or_default(),
        time: p.time.unwrap_or_default(),
    };
    let (la, lb) = (local(&a, &b), local(&b, &a));
    let context = a.zone.or(b.zone);
    let offset_of = |p: &Parts, l: LocalDateTime| -> i64 {
        match (p.zone, p.offset, context) {
            (Some(_), Some(o), _) => o as i64,
            (Some(z), None, _) | (None, _, Some(z)) => z.offset_at_local(l) as i64,
            (None, _, None) => 0,
        }
    };
    let shift = (offset_of(&a, la) - offset_of(&b, lb)) as i128 * NANOS_PER_SEC as i128;
    let range = || Error::runtime(format!("{name}(): value out of range"));
    let lb = LocalDateTime::from_epoch_nanos(lb.epoch_nanos() + shift).ok_or_else(range)?;
    let total = lb.epoch_nanos() - la.epoch_nanos();
    let d = match mode {
        Between::Seconds => Duration::from_parts(0, 0, total),
        _ if !with_dates => match mode {
            Between::Full => Duration::from_parts(0, 0, total),
            _ => Some(Duration::default()),
        },
        Between::Months => Duration::from_parts(months_between(la, lb) as i128, 0, 0),
        Between::Days => Duration::from_parts(0, days_between(la, lb) as i128, 0),
        Between::Full => {
            let months = months_between(la, lb);
            let t1 = plus_months_days(la, months, 0).ok_or_else(range)?;
            let days = days_between(t1, lb);
            let t2 = plus_months_days(t1, 0, days).ok_or_else(range)?;
            Duration::from_parts(
                months as i128,
                days as i128,
                lb.epoch_nanos() - t2.epoch_nanos(),
            )
        }
    };
    d.map(Value::Duration).ok_or_else(range)
}

/// The arithmetic operators that apply to durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// `a op b` when a side is a DURATION: temporal ± duration, duration ±
/// duration, duration × number and duration ÷ number. `None` when the
/// operands are no such pair.
pub fn arith(op: DurationOp, a: &Value, b: &Value) -> Option<Result<Value>> {
    let range = || Error::runtime(format!("{op:?} of temporal values out of range"));
    let num = |v: &Value| match v {
        Value::Float(_) | Value::Double(_) => v.as_f64().map(Num::Float),
        _ => v.as_i64().map(Num::Int),
    };
    let plus = |t: &Value, d: Duration| -> Option<Result<Value>> {
        Some(
            match t {
                Value::Date(x) => x.plus(d).map(Value::Date),
                Value::LocalTime(x) => Some(Value::LocalTime(x.plus(d))),
                Value::Time(x) => Some(Value::Time(x.plus(d))),
                Value::LocalDateTime(x) => x.plus(d).map(Value::LocalDateTime),
                Value::DateTime(x) => x.plus(d).map(Value::DateTime),
                Value::Duration(x) => x.checked_add(d).map(Value::Duration),
                _ => return None,
            }
            .ok_or_else(range),
        )
    };
    match (op, a, b) {
        (DurationOp::Add, t, Value::Duration(d)) => plus(t, *d),
        (DurationOp::Add, Value::Duration(d), t) => plus(t, *d),
        (DurationOp::Sub, t, Value::Duration(d)) => match d.checked_neg() {
            Some(n) => plus(t, n),
            None => Some(Err(range())),
        },
        (DurationOp::Mul, Value::Duration(d), n) | (DurationOp::Mul, n, Value::Duration(d)) => {
            Some(
                d.checked_mul(num(n)?)
                    .map(Value::Duration)
                    .ok_or_else(range),
            )
        }
        (DurationOp::Div, Value::Duration(d), n) => {
            num(n)?;
            let x = n.as_f64()?;
            if x == 0.0 {
                return Some(Err(Error::runtime("division by zero")));
            }
            Some(d.checked_div(x).map(Value::Duration).ok_or_else(range))
        }
        _ => None,
    }
}

/// `value.key` on a temporal value or a duration: its components.
pub fn component(v: &Value, key: &str) -> Result<Value> {
    let k = key.to_ascii_lowercase();
    let unknown = || {
        Error::runtime(format!(
            "a {} value has no component '{key}'",
            v.logical_type()
        ))
    };
    if let Value::Duration(d) = v {
        let months = d.months as i64;
        let days = d.days as i64;
        let secs = d.seconds;
        let nanos = d.nanos as i64;
        let total = d.total_nanos();
        return Ok(Value::Int64(match k.as_str() {
            "years" => months / 12,
            "quarters" => months / 3,
            "months" => months,
            "weeks" => days / 7,
            "days" => days,
            "hours" => secs.div_euclid(3600),
            "minutes" => secs.div_euclid(60),
            "seconds" => secs,
            "milliseconds" => i64::try_from(total.div_euclid(1_000_000)).map_err(|_| unknown())?,
            "microseconds" => i64::try_from(total.div_euclid(1_000)).map_err(|_| unknown())?,
            "nanoseconds" => i64::try_from(total).map_err(|_| unknown())?,
            "quartersofyear" => months % 12 / 3,
            "monthsofquarter" => months % 3,
            "monthsofyear" => months % 12,
            "daysofweek" => days % 7,
            "minutesofhour" => secs.div_euclid(60).rem_euclid(60),
            "secondsofminute" => secs.rem_euclid(60),
            "millisecondsofsecond" => nanos / 1_000_000,
            "microsecondsofsecond" => nanos / 1_000,
            "nanosecondsofsecond" => nanos,
            _ => return Err(unknown()),
        }));
    }
    let p = parts(v).ok_or_else(unknown)?;
    if let Some(d) = p.date {
        let (y, m, day) = d.ymd();
        let r = match k.as_str() {
            "year" => Some(y),
            "quarter" => Some(d.quarter()),
            "month" => Some(m as i64),
            "week" => Some(d.iso_week().1),
            "weekyear" => Some(d.iso_week().0),
            "day" => Some(day as i64),
            "ordinalday" => Some(d.ordinal_day()),
            "weekday" | "dayofweek" => Some(d.weekday()),
            "dayofquarter" => Some(d.day_of_quarter()),
            _ => None,
        };
        if let Some(r) = r {
            return Ok(Value::Int64(r));
        }
    }
    if let Some(t) = p.time {
        let r = match k.as_str() {
            "hour" => Some(t.hour()),
            "minute" => Some(t.minute()),
            "second" => Some(t.second()),
            "millisecond" => Some(t.nanosecond() / 1_000_000),
            "microsecond" => Some(t.nanosecond() / 1_000),
            "nanosecond" => Some(t.nanosecond()),
            _ => None,
        };
        if let Some(r) = r {
            return Ok(Value::Int64(r));
        }
    }
    if let (Some(zone), Some(offset)) = (p.zone, p.offset) {
        match k.as_str() {
            "timezone" => {
                return Ok(Value::String(match zone {
                    Zone::Named(z) => z.name().to_string(),
                    Zone::Offset(o) => format_offset(o),
                }))
            }
            "offset" => return Ok(Value::String(format_offset(offset))),
            "offsetminutes" => return Ok(Value::Int64(offset as i64 / 60)),
            "offsetseconds" => return Ok(Value::Int64(offset as i64)),
            _ => {}
        }
        if let (Some(date), Some(time)) = (p.date, p.time) {
            let instant =
                LocalDateTime { date, time }.epoch_nanos() - offset as i128 * NANOS_PER_SEC as i128;
            match k.as_str() {
                "epochseconds" => {
                    return Ok(Value::Int64(
                        instant.div_euclid(NANOS_PER_SEC as i128) as i64
                    ))
                }
                "epochmillis" => return Ok(Value::Int64(instant.div_euclid(1_000_000) as i64)),
                _ => {}
            }
        }
    }
    Err(unknown())
}

#[cfg(test)]
mod tests {
    use crate::call;
    use kith_common::Value;

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    fn text(name: &str, args: &[Value]) -> String {
        call(name, args).unwrap().to_string()
    }

    fn map(fields: &[(&str, Value)]) -> Value {
        Value::Struct(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn parses_iso_text() {
        for (input, out) in [
            ("2015-07-21", "2015-07-21"),
            ("20150721", "2015-07-21"),
            ("2015-07", "2015-07-01"),
            ("2015W302", "2015-07-21"),
            ("2015-W30", "2015-07-20"),
            ("2015-202", "2015-07-21"),
            ("2015", "2015-01-01"),
        ] {
            assert_eq!(text("date", &[s(input)]), out, "{input}");
        }
        assert_eq!(text("localtime", &[s("214032.142")]), "21:40:32.142");
        assert_eq!(text("time", &[s("2140-00:00")]), "21:40Z");
        assert_eq!(text("time", &[s("22+18:00")]), "22:00+18:00");
        assert_eq!(
            text("datetime", &[s("2015-07-21T21:40:32.142[Europe/London]")]),
            "2015-07-21T21:40:32.142+01:00[Europe/London]"
        );
        assert_eq!(
            text(
                "datetime",
                &[s("1818-07-21T21:40:32.142[Europe/Stockholm]")]
            ),
            "1818-07-21T21:40:32.142+00:53:28[Europe/Stockholm]"
        );
        assert_eq!(
            text("datetime", &[s("2017-10-29T02:30+01:00[Europe/Stockholm]")]),
            "2017-10-29T02:30+01:00[Europe/Stockholm]"
        );
        assert_eq!(
            text("datetime", &[s("2017-10-29T02:30[Europe/Stockholm]")]),
            "2017-10-29T02:30+02:00[Europe/Stockholm]"
        );
        assert_eq!(
            text("datetime", &[s("2017-03-26T02:30[Europe/Stockholm]")]),
            "2017-03-26T03:30+02:00[Europe/Stockholm]"
        );
        assert_eq!(text("duration", &[s("P0.75M")]), "P22DT19H51M49.5S");
        assert_eq!(
            text("duration", &[s("P2012-02-02T14:37:21.545")]),
            "P2012Y2M2DT14H37M21.545S"
        );
    }

    #[test]
    fn builds_from_maps_and_selects() {
        let d = call(
            "date",
            &[map(&[
                ("year", Value::Int64(1984)),
                ("month", Value::Int64(11)),
                ("day", Value::Int64(11)),
            ])],
        )
        .unwrap();
        assert_eq!(
            text(
                "date",
                &[map(&[("date", d.clone()), ("week", Value::Int64(1))])]
            ),
            "1984-01-08"
        );
        assert_eq!(
            text(
                "date",
                &[map(&[("date", d.clone()), ("quarter", Value::Int64(3))])]
            ),
            "1984-08-11"
        );
        let dur = call(
            "duration",
            &[map(&[
                ("seconds", Value::Int64(-60)),
                ("milliseconds", Value::Int64(-1)),
            ])],
        )
        .unwrap();
        assert_eq!(dur.to_string(), "PT-1M-0.001S");
        assert_eq!(
            text(
                "datetime.truncate",
                &[
                    s("weekYear"),
                    d,
                    map(&[("timezone", s("Europe/Stockholm"))])
                ]
            ),
            "1984-01-02T00:00+01:00[Europe/Stockholm]"
        );
    }

    #[test]
    fn arithmetic() {
        use super::DurationOp;
        let v = |name: &str, t: &str| call(name, &[s(t)]).unwrap();
        let dur = |t: &str| v("duration", t);
        let ar = |op, a: &Value, b: &Value| super::arith(op, a, b).unwrap().unwrap().to_string();
        assert_eq!(
            ar(DurationOp::Add, &v("date", "2020-01-31"), &dur("P1M")),
            "2020-02-29"
        );
        assert_eq!(
            ar(DurationOp::Sub, &v("localtime", "00:30"), &dur("PT1H")),
            "23:30"
        );
        assert_eq!(
            ar(
                DurationOp::Add,
                &dur("PT1H"),
                &v("datetime", "2017-10-29T01:30+02:00[Europe/Stockholm]")
            ),
            "2017-10-29T02:30+02:00[Europe/Stockholm]"
        );
        assert_eq!(
            ar(
                DurationOp::Add,
                &v("datetime", "2017-10-28T02:30+02:00[Europe/Stockholm]"),
                &dur("P1D")
            ),
            "2017-10-29T02:30+02:00[Europe/Stockholm]"
        );
        assert_eq!(
            ar(DurationOp::Mul, &dur("P1M2DT3S"), &Value::Int64(2)),
            "P2M4DT6S"
        );
        assert_eq!(
            ar(DurationOp::Div, &dur("P3DT3S"), &Value::Int64(3)),
            "P1DT1S"
        );
        assert_eq!(
            ar(DurationOp::Mul, &dur("P1D"), &Value::Double(0.5)),
            "PT12H"
        );
        assert_eq!(ar(DurationOp::Sub, &dur("P1D"), &dur("PT1H")), "P1DT-1H");
        assert!(super::arith(DurationOp::Div, &dur("P1D"), &Value::Int64(0))
            .unwrap()
            .is_err());
        assert!(
            super::arith(DurationOp::Add, &v("date", "2020-01-01"), &Value::Int64(1)).is_none()
        );
    }

    #[test]
    fn components_and_bad_input() {
        let d = call(
            "datetime",
            &[s("1984-11-11T12:31:14.645876123[Europe/Stockholm]")],
        )
        .unwrap();
        let c = |k: &str| super::component(&d, k).unwrap().to_string();
        assert_eq!(c("weekYear"), "1984");
        assert_eq!(c("dayOfQuarter"), "42");
        assert_eq!(c("offset"), "+01:00");
        assert_eq!(c("epochMillis"), "469020674645");
        assert!(super::component(&d, "nope").is_err());
        assert_eq!(
            text(
                "datetime",
                &[map(&[("epochMillis", Value::Int64(237821673987))])]
            ),
            "1977-07-15T13:34:33.987Z"
        );
        assert_eq!(
            text(
                "datetime.fromepoch",
                &[Value::Int64(416779), Value::Int64(999999999)]
            ),
            "1970-01-05T19:46:19.999999999Z"
        );
        // Malformed text never panics.
        for bad in [
            "",
            "2é15",
            "20é",
            "2015-Wé1",
            "12:3é",
            "+é1",
            "P1é",
            "PT",
            "99999999999999999999",
        ] {
            for f in [
                "date",
                "localtime",
                "time",
                "localdatetime",
                "datetime",
                "duration",
            ] {
                assert!(call(f, &[s(bad)]).is_err(), "{f}({bad:?})");
            }
        }
        let huge = Value::Int64(i64::MAX);
        let m = map(&[("year", huge.clone()), ("nanosecond", huge)]);
        assert!(call("localdatetime", &[m]).is_err());
    }

    #[test]
    fn durations_between() {
        let ldt = |t: &str| call("localdatetime", &[s(t)]).unwrap();
        let dt = |t: &str| call("datetime", &[s(t)]).unwrap();
        assert_eq!(
            text(
                "duration.between",
                &[
                    dt("2014-07-21T21:40:36.143+0200"),
                    dt("2015-07-21T21:40:32.142+0100")
                ]
            ),
            "P1YT59M55.999S"
        );
        assert_eq!(
            text(
                "duration.between",
                &[
                    ldt("2015-07-21T21:40:32.142"),
                    call("date", &[s("2015-06-24")]).unwrap()
                ]
            ),
            "P-27DT-21H-40M-32.142S"
        );
        assert_eq!(
            text(
                "duration.between",
                &[
                    dt("2017-10-28T23:00+02:00[Europe/Stockholm]"),
                    dt("2017-10-29T04:00+01:00[Europe/Stockholm]")
                ]
            ),
            "PT6H"
        );
    }
}
