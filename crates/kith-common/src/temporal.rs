//! DATE, TIMESTAMP and INTERVAL: representation, parsing and formatting.
//!
//! Dates are days since 1970-01-01 in the proleptic Gregorian calendar; timestamps
//! are microseconds since the epoch (UTC); intervals keep months, days and
//! microseconds apart because months and days have no fixed length.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Date(pub i32);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

pub const MICROS_PER_SEC: i64 = 1_000_000;
pub const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SEC;

/// Days since epoch of a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date (year, month, day) of days since epoch.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        _ => 28,
    }
}

fn parse_uint(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 9 {
        return None;
    }
    s.parse().ok()
}

impl Date {
    pub fn from_ymd(year: i64, month: u32, day: u32) -> Option<Date> {
        if !year_in_range(year)
            || !(1..=12).contains(&month)
            || day == 0
            || day > days_in_month(year, month)
        {
            return None;
        }
        i32::try_from(days_from_civil(year, month, day))
            .ok()
            .map(Date)
    }

    /// `YYYY-MM-DD` (a leading `-` for years BC is allowed).
    pub fn parse(s: &str) -> Option<Date> {
        let s = s.trim();
        let (neg, body) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let mut parts = body.splitn(3, '-');
        let y = parse_uint(parts.next()?)?;
        let m = parse_uint(parts.next()?)?;
        let d = parse_uint(parts.next()?)?;
        Date::from_ymd(if neg { -y } else { y }, m as u32, d as u32)
    }

    pub fn ymd(self) -> (i64, u32, u32) {
        civil_from_days(self.0 as i64)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = self.ymd();
        if y < 0 {
            write!(f, "-{:04}-{m:02}-{d:02}", -y)
        } else {
            write!(f, "{y:04}-{m:02}-{d:02}")
        }
    }
}

impl Timestamp {
    /// `YYYY-MM-DD[( |T)hh:mm[:ss[.ffffff]]][Z|±hh[:mm]]`.
    pub fn parse(s: &str) -> Option<Timestamp> {
        let s = s.trim();
        let split = s.find(['T', ' ']);
        let (date_part, time_part) = match split {
            Some(p) if p >= 8 => (&s[..p], Some(&s[p + 1..])),
            _ => (s, None),
        };
        let date = Date::parse(date_part)?;
        let mut micros = date.0 as i64 * MICROS_PER_DAY;
        if let Some(t) = time_part {
            let t = t.trim();
            // Split off a zone suffix.
            let (clock, offset_micros) = if let Some(c) = t.strip_suffix('Z') {
                (c, 0)
            } else if let Some(p) = t.rfind(['+', '-']).filter(|&p| p >= 5) {
                let zone = &t[p + 1..];
                let (zh, zm) = match zone.split_once(':') {
                    Some((h, m)) => (parse_uint(h)?, parse_uint(m)?),
                    None if zone.len() == 4 => (parse_uint(&zone[..2])?, parse_uint(&zone[2..])?),
                    None => (parse_uint(zone)?, 0),
                };
                let sign = if &t[p..=p] == "-" { -1 } else { 1 };
                (&t[..p], sign * (zh * 3600 + zm * 60) * MICROS_PER_SEC)
            } else {
                (t, 0)
            };
            let mut fields = clock.splitn(3, ':');
            let h = parse_uint(fields.next()?)?;
            let mi = parse_uint(fields.next()?)?;
            let (sec, frac) = match fields.next() {
                Some(sf) => match sf.split_once('.') {
                    Some((s, fr)) => {
                        if fr.is_empty() || fr.len() > 9 || !fr.bytes().all(|b| b.is_ascii_digit())
                        {
                            return None;
                        }
                        let digits = &fr[..fr.len().min(6)];
                        let scale = 10i64.pow(6 - digits.len() as u32);
                        (parse_uint(s)?, digits.parse::<i64>().ok()? * scale)
                    }
                    None => (parse_uint(sf)?, 0),
                },
                None => (0, 0),
            };
            if h > 23 || mi > 59 || sec > 60 {
                return None;
            }
            micros += (h * 3600 + mi * 60 + sec) * MICROS_PER_SEC + frac - offset_micros;
        }
        Some(Timestamp(micros))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(MICROS_PER_DAY);
        let rem = self.0.rem_euclid(MICROS_PER_DAY);
        let date = Date(days as i32);
        let secs = rem / MICROS_PER_SEC;
        let frac = rem % MICROS_PER_SEC;
        write!(
            f,
            "{date} {:02}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )?;
        if frac != 0 {
            let s = format!("{frac:06}");
            write!(f, ".{}", s.trim_end_matches('0'))?;
        }
        Ok(())
    }
}

impl Interval {
    /// Parses `1 year 2 months 3 days 04:05:06.5`-style text and ISO-8601
    /// durations such as `P1Y2M3DT4H5M6S`.
    pub fn parse(s: &str) -> Option<Interval> {
        let s = s.trim();
        if let Some(iso) = s.strip_prefix('P').or_else(|| s.strip_prefix('p')) {
            return Interval::parse_iso(iso);
        }
        let mut out = Interval::default();
        let mut tokens = s.split_whitespace().peekable();
        let mut any = false;
        while let Some(tok) = tokens.next() {
            any = true;
            if tok.contains(':') {
                let neg = tok.starts_with('-');
                let t = tok.trim_start_matches('-');
                let mut parts = t.splitn(3, ':');
                let h = parse_uint(parts.next()?)?;
                let m = parse_uint(parts.next()?)?;
                let sec = match parts.next() {
                    Some(x) => x.parse::<f64>().ok()?,
                    None => 0.0,
                };
                let micros = (h * 3600 + m * 60) * MICROS_PER_SEC + (sec * 1e6).round() as i64;
                out.micros += if neg { -micros } else { micros };
                continue;
            }
            let num: f64 = tok.parse().ok()?;
            let unit = tokens.next()?.to_ascii_lowercase();
            match unit.as_str() {
                "year" | "years" | "y" => out.months += (num * 12.0) as i32,
                "month" | "months" | "mon" | "mons" => out.months += num as i32,
                "week" | "weeks" | "w" => out.days += (num * 7.0) as i32,
                "day" | "days" | "d" => out.days += num as i32,
                "hour" | "hours" | "h" => out.micros += (num * 3600e6) as i64,
                "minute" | "minutes" | "min" | "mins" | "m" => out.micros += (num * 60e6) as i64,
                "second" | "seconds" | "sec" | "secs" | "s" => out.micros += (num * 1e6) as i64,
                "millisecond" | "milliseconds" | "ms" => out.micros += (num * 1e3) as i64,
                "microsecond" | "microseconds" | "us" => out.micros += num as i64,
                _ => return None,
            }
        }
        any.then_some(out)
    }

    fn parse_iso(s: &str) -> Option<Interval> {
        let mut out = Interval::default();
        let mut in_time = false;
        let mut num = String::new();
        for c in s.chars() {
            match c {
                'T' | 't' => in_time = true,
                '0'..='9' | '.' | '-' => num.push(c),
                _ => {
                    let v: f64 = num.parse().ok()?;
                    num.clear();
                    match (c.to_ascii_uppercase(), in_time) {
                        ('Y', false) => out.months += (v * 12.0) as i32,
                        ('M', false) => out.months += v as i32,
                        ('W', false) => out.days += (v * 7.0) as i32,
                        ('D', false) => out.days += v as i32,
                        ('H', true) => out.micros += (v * 3600e6) as i64,
                        ('M', true) => out.micros += (v * 60e6) as i64,
                        ('S', true) => out.micros += (v * 1e6).round() as i64,
                        _ => return None,
                    }
                }
            }
        }
        num.is_empty().then_some(out)
    }

    /// A total order used for sorting and comparison (months as 30 days).
    pub fn sort_key(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * MICROS_PER_DAY as i128
            + self.micros as i128
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let years = self.months / 12;
        let months = self.months % 12;
        if years != 0 {
            parts.push(format!(
                "{years} year{}",
                if years.abs() == 1 { "" } else { "s" }
            ));
        }
        if months != 0 {
            parts.push(format!(
                "{months} month{}",
                if months.abs() == 1 { "" } else { "s" }
            ));
        }
        if self.days != 0 {
            parts.push(format!(
                "{} day{}",
                self.days,
                if self.days.abs() == 1 { "" } else { "s" }
            ));
        }
        if self.micros != 0 || parts.is_empty() {
            let neg = self.micros < 0;
            let m = self.micros.unsigned_abs() as i64;
            let secs = m / MICROS_PER_SEC;
            let frac = m % MICROS_PER_SEC;
            let mut s = format!(
                "{}{:02}:{:02}:{:02}",
                if neg { "-" } else { "" },
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            );
            if frac != 0 {
                s.push_str(&format!(".{frac:06}"));
            }
            parts.push(s);
        }
        write!(f, "{}", parts.join(" "))
    }
}

// ---------------------------------------------------------------------------
// openCypher temporal values: LOCAL TIME, ZONED TIME, LOCAL DATETIME, ZONED
// DATETIME and DURATION, all with nanosecond precision. DATE is shared with
// the Kùzu dialect above. TIMESTAMP and INTERVAL stay as they are: DDL, COPY
// and their printed forms belong to that dialect, while these types print
// the ISO-8601 forms openCypher specifies.
// ---------------------------------------------------------------------------

pub const NANOS_PER_SEC: i64 = 1_000_000_000;
pub const NANOS_PER_MINUTE: i64 = 60 * NANOS_PER_SEC;
pub const NANOS_PER_HOUR: i64 = 60 * NANOS_PER_MINUTE;
pub const NANOS_PER_DAY: i64 = 24 * NANOS_PER_HOUR;
/// The average Gregorian month (365.2425 / 12 days) in seconds: what a
/// fractional month of a duration is worth.
pub const SECONDS_PER_AVG_MONTH: f64 = 2_629_746.0;

/// Time of day without a zone: nanoseconds since midnight, `0..NANOS_PER_DAY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LocalTime(pub i64);

/// Time of day with a UTC offset (seconds east of Greenwich).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Time {
    pub time: LocalTime,
    pub offset: i32,
}

/// Date and time of day without a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LocalDateTime {
    pub date: Date,
    pub time: LocalTime,
}

/// A named zone of the tz database (`Europe/Stockholm`). Two bytes, so
/// zoned values stay `Copy` and small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZoneId(chrono_tz::Tz);

/// Date and time of day in a zone: the local fields, the offset in force
/// for them, and the named zone when there is one (else the offset is the
/// zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DateTime {
    pub local: LocalDateTime,
    pub offset: i32,
    pub zone: Option<ZoneId>,
}

/// A Cypher duration: months, days and seconds stay apart because months
/// and days have no fixed length. `nanos` is `0..1e9` and adds to
/// `seconds` (so -0.5 s is seconds -1, nanos 500000000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Duration {
    pub months: i32,
    pub days: i32,
    pub seconds: i64,
    pub nanos: i32,
}

/// A zone as written in a value or a `timezone` field: a fixed offset or a
/// named zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Zone {
    Offset(i32),
    Named(ZoneId),
}

/// Day of the week of days since epoch, Monday = 1 .. Sunday = 7
/// (1970-01-01 was a Thursday).
pub fn weekday_of(days: i64) -> i64 {
    (days + 3).rem_euclid(7) + 1
}

/// Days since epoch of the Monday that starts ISO week 1 of `week_year`
/// (the week holding January 4th).
pub fn week_year_start(week_year: i64) -> i64 {
    let jan4 = days_from_civil(week_year, 1, 4);
    jan4 - (weekday_of(jan4) - 1)
}

impl Date {
    fn from_days(days: i64) -> Option<Date> {
        i32::try_from(days).ok().map(Date)
    }

    /// The date of ISO `week` (1..=52/53) and `day_of_week` (1..=7) of `week_year`.
    pub fn from_week(week_year: i64, week: i64, day_of_week: i64) -> Option<Date> {
        if !year_in_range(week_year)
            || !(1..=7).contains(&day_of_week)
            || week < 1
            || week > weeks_in_year(week_year)
        {
            return None;
        }
        Date::from_days(week_year_start(week_year) + (week - 1) * 7 + day_of_week - 1)
    }

    /// The `ordinal`th day (1-based) of `year`.
    pub fn from_ordinal(year: i64, ordinal: i64) -> Option<Date> {
        if !year_in_range(year) {
            return None;
        }
        let len = if is_leap(year) { 366 } else { 365 };
        if !(1..=len).contains(&ordinal) {
            return None;
        }
        Date::from_days(days_from_civil(year, 1, 1) + ordinal - 1)
    }

    /// Day `day_of_quarter` (1-based) of `quarter` (1..=4) of `year`.
    pub fn from_quarter(year: i64, quarter: i64, day_of_quarter: i64) -> Option<Date> {
        if !year_in_range(year) || !(1..=4).contains(&quarter) || day_of_quarter < 1 {
            return None;
        }
        let start = days_from_civil(year, (quarter as u32 - 1) * 3 + 1, 1);
        let next = if quarter == 4 {
            days_from_civil(year + 1, 1, 1)
        } else {
            days_from_civil(year, quarter as u32 * 3 + 1, 1)
        };
        if day_of_quarter > next - start {
            return None;
        }
        Date::from_days(start + day_of_quarter - 1)
    }

    pub fn days(self) -> i64 {
        self.0 as i64
    }

    /// Monday = 1 .. Sunday = 7.
    pub fn weekday(self) -> i64 {
        weekday_of(self.days())
    }

    /// (ISO week-based year, ISO week number).
    pub fn iso_week(self) -> (i64, i64) {
        // The week belongs to the year its Thursday is in.
        let thursday = self.days() - self.weekday() + 4;
        let (wy, _, _) = civil_from_days(thursday);
        (wy, (thursday - days_from_civil(wy, 1, 1)) / 7 + 1)
    }

    pub fn ordinal_day(self) -> i64 {
        let (y, _, _) = self.ymd();
        self.days() - days_from_civil(y, 1, 1) + 1
    }

    pub fn quarter(self) -> i64 {
        let (_, m, _) = self.ymd();
        (m as i64 - 1) / 3 + 1
    }

    pub fn day_of_quarter(self) -> i64 {
        let (y, _, _) = self.ymd();
        let q = self.quarter();
        self.days() - days_from_civil(y, (q as u32 - 1) * 3 + 1, 1) + 1
    }
}

/// Whether calendar arithmetic on `year` stays far from i64 overflow (the
/// result must still fit a DATE, which holds about ±5.8 million years).
fn year_in_range(year: i64) -> bool {
    year.unsigned_abs() <= 1_000_000_000
}

fn weeks_in_year(week_year: i64) -> i64 {
    (week_year_start(week_year + 1) - week_year_start(week_year)) / 7
}

impl LocalTime {
    pub fn from_hms_nano(h: i64, m: i64, s: i64, nanos: i64) -> Option<LocalTime> {
        if !(0..24).contains(&h)
            || !(0..60).contains(&m)
            || !(0..60).contains(&s)
            || !(0..NANOS_PER_SEC).contains(&nanos)
        {
            return None;
        }
        Some(LocalTime(
            h * NANOS_PER_HOUR + m * NANOS_PER_MINUTE + s * NANOS_PER_SEC + nanos,
        ))
    }

    /// Wraps any nanosecond count onto the clock.
    pub fn wrapping(nanos: i64) -> LocalTime {
        LocalTime(nanos.rem_euclid(NANOS_PER_DAY))
    }

    pub fn hour(self) -> i64 {
        self.0 / NANOS_PER_HOUR
    }
    pub fn minute(self) -> i64 {
        self.0 / NANOS_PER_MINUTE % 60
    }
    pub fn second(self) -> i64 {
        self.0 / NANOS_PER_SEC % 60
    }
    pub fn nanosecond(self) -> i64 {
        self.0 % NANOS_PER_SEC
    }

    /// `HH:MM[:SS[.fff[fff[fff]]]]` (fractions in groups of three digits).
    pub fn parse(s: &str) -> Option<LocalTime> {
        let (t, zone) = parse_time_and_zone(s)?;
        zone.is_none().then_some(t)
    }
}

impl fmt::Display for LocalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.hour(), self.minute())?;
        let (s, n) = (self.second(), self.nanosecond());
        if s != 0 || n != 0 {
            write!(f, ":{s:02}")?;
        }
        if n != 0 {
            if n % 1_000_000 == 0 {
                write!(f, ".{:03}", n / 1_000_000)?;
            } else if n % 1_000 == 0 {
                write!(f, ".{:06}", n / 1_000)?;
            } else {
                write!(f, ".{n:09}")?;
            }
        }
        Ok(())
    }
}

/// `Z` for UTC, else `±HH:MM` (`:SS` when the offset has seconds, as local
/// mean times before 1900 do).
pub fn format_offset(offset: i32) -> String {
    if offset == 0 {
        return "Z".to_string();
    }
    let sign = if offset < 0 { '-' } else { '+' };
    let a = offset.unsigned_abs();
    let mut s = format!("{sign}{:02}:{:02}", a / 3600, a / 60 % 60);
    if !a.is_multiple_of(60) {
        s.push_str(&format!(":{:02}", a % 60));
    }
    s
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.time, format_offset(self.offset))
    }
}

impl Time {
    /// Nanoseconds since midnight UTC (may leave `0..NANOS_PER_DAY`): what
    /// times in different offsets are compared by.
    pub fn utc_nanos(self) -> i64 {
        self.time.0 - self.offset as i64 * NANOS_PER_SEC
    }
}

impl LocalDateTime {
    /// Nanoseconds since 1970-01-01T00:00 (as if the local time were UTC).
    pub fn epoch_nanos(self) -> i128 {
        self.date.days() as i128 * NANOS_PER_DAY as i128 + self.time.0 as i128
    }

    pub fn from_epoch_nanos(n: i128) -> Option<LocalDateTime> {
        let day = NANOS_PER_DAY as i128;
        let days = i64::try_from(n.div_euclid(day)).ok()?;
        Some(LocalDateTime {
            date: Date::from_days(days)?,
            time: LocalTime(n.rem_euclid(day) as i64),
        })
    }
}

impl fmt::Display for LocalDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}T{}", self.date, self.time)
    }
}

impl ZoneId {
    pub fn parse(name: &str) -> Option<ZoneId> {
        name.parse::<chrono_tz::Tz>().ok().map(ZoneId)
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// The offset in force at an instant (seconds since epoch, UTC).
    pub fn offset_at_instant(self, epoch_secs: i64) -> i32 {
        use chrono::{Offset, TimeZone};
        // chrono covers about ±262,000 years; beyond that the zone's rules
        // at the edge apply.
        let secs = epoch_secs.clamp(-8_000_000_000_000, 8_000_000_000_000);
        match chrono::DateTime::from_timestamp(secs, 0) {
            Some(utc) => self
                .0
                .offset_from_utc_datetime(&utc.naive_utc())
                .fix()
                .local_minus_utc(),
            None => 0,
        }
    }

    /// The offset for local date and time `local` in this zone. In an
    /// overlap (clocks turned back) the earlier offset wins; in a gap
    /// (clocks turned forward) the offset before the gap, so the local
    /// time moves forward by the gap's length once the instant is fixed.
    pub fn offset_at_local(self, local: LocalDateTime) -> i32 {
        use chrono::{LocalResult, Offset, TimeZone};
        let secs = i64::try_from(local.epoch_nanos().div_euclid(NANOS_PER_SEC as i128))
            .unwrap_or(0)
            .clamp(-8_000_000_000_000, 8_000_000_000_000);
        let naive = match chrono::DateTime::from_timestamp(secs, 0) {
            Some(t) => t.naive_utc(),
            None => return 0,
        };
        match self.0.offset_from_local_datetime(&naive) {
            LocalResult::Single(o) => o.fix().local_minus_utc(),
            LocalResult::Ambiguous(a, b) => {
                a.fix().local_minus_utc().max(b.fix().local_minus_utc())
            }
            LocalResult::None => self.offset_at_instant(secs - 86_400),
        }
    }
}

impl Zone {
    /// `Z`, `±HH`, `±HHMM`, `±HH:MM` (optionally `:SS`) or a tz database name.
    pub fn parse(s: &str) -> Option<Zone> {
        let s = s.trim();
        if s == "Z" || s == "z" {
            return Some(Zone::Offset(0));
        }
        if s.starts_with(['+', '-']) {
            return parse_offset(s).map(Zone::Offset);
        }
        ZoneId::parse(s).map(Zone::Named)
    }

    /// The offset in force for local date and time `local`.
    pub fn offset_at_local(self, local: LocalDateTime) -> i32 {
        match self {
            Zone::Offset(o) => o,
            Zone::Named(z) => z.offset_at_local(local),
        }
    }

    pub fn offset_at_instant(self, epoch_secs: i64) -> i32 {
        match self {
            Zone::Offset(o) => o,
            Zone::Named(z) => z.offset_at_instant(epoch_secs),
        }
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn num(s: &str) -> Option<i64> {
    if !digits(s) || s.len() > 18 {
        return None;
    }
    s.parse().ok()
}

/// `HHMMSS` as `["HH", "MM", "SS"]`; `None` unless ASCII of even length.
fn pairs(s: &str) -> Option<Vec<&str>> {
    if !s.is_ascii() || !s.len().is_multiple_of(2) {
        return None;
    }
    Some((0..s.len() / 2).map(|i| &s[i * 2..i * 2 + 2]).collect())
}

/// `±HH`, `±HHMM`, `±HH:MM`, `±HH:MM:SS` as seconds east of UTC.
fn parse_offset(s: &str) -> Option<i32> {
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let body = &s[1..];
    let parts: Vec<&str> = if body.contains(':') {
        body.split(':').collect()
    } else if body.len() <= 6 {
        pairs(body)?
    } else {
        return None;
    };
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let h = num(parts[0])?;
    let m = parts.get(1).map_or(Some(0), |p| num(p))?;
    let sec = parts.get(2).map_or(Some(0), |p| num(p))?;
    if h > 18 || m > 59 || sec > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + sec) as i32)
}

/// A date in any ISO-8601 form openCypher accepts: `YYYY-MM-DD`,
/// `YYYYMMDD`, `YYYY-MM`, `YYYYMM`, `YYYY-Www-D`, `YYYYWwwD`, `YYYY-Www`,
/// `YYYYWww`, `YYYY-DDD`, `YYYYDDD` and `YYYY`; a year beyond four digits
/// needs a sign.
pub fn parse_iso_date(s: &str) -> Option<Date> {
    let s = s.trim();
    let (sign, body) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => (1, s),
    };
    // The year: all leading digits when signed, else exactly four.
    let year_len = if sign == -1 || s.starts_with('+') {
        body.bytes().take_while(u8::is_ascii_digit).count()
    } else {
        4
    };
    if year_len == 0 || !body.is_char_boundary(year_len.min(body.len())) {
        return None;
    }
    let year = sign * num(body.get(..year_len)?)?;
    let rest = body.get(year_len..)?;
    if rest.is_empty() {
        return Date::from_ymd(year, 1, 1);
    }
    let (dashed, rest) = match rest.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    if let Some(w) = rest.strip_prefix(['W', 'w']) {
        let (week, day) = if dashed {
            match w.split_once('-') {
                Some((wk, d)) if d.len() == 1 => (wk, Some(d)),
                Some(_) => return None,
                None => (w, None),
            }
        } else {
            match w.len() {
                2 => (w, None),
                3 => (w.get(..2)?, Some(w.get(2..)?)),
                _ => return None,
            }
        };
        if week.len() != 2 {
            return None;
        }
        let day = match day {
            Some(d) => num(d)?,
            None => 1,
        };
        return Date::from_week(year, num(week)?, day);
    }
    if !dashed && !digits(rest) {
        return None;
    }
    match (dashed, rest.len()) {
        (_, 2) => Date::from_ymd(year, num(rest)? as u32, 1),
        (_, 3) => Date::from_ordinal(year, num(rest)?),
        (false, 4) => Date::from_ymd(year, num(&rest[..2])? as u32, num(&rest[2..])? as u32),
        (true, 5) if rest.as_bytes()[2] == b'-' => {
            Date::from_ymd(year, num(&rest[..2])? as u32, num(&rest[3..])? as u32)
        }
        _ => None,
    }
}

/// A time of day with an optional zone: `HH[:MM[:SS[.f]]]` or the compact
/// `HH[MM[SS[.f]]]`, then `Z`, an offset and/or `[Zone/Name]`.
pub fn parse_time_and_zone(s: &str) -> Option<(LocalTime, Option<TimeZoneSpec>)> {
    let s = s.trim();
    let (s, name) = match s.strip_suffix(']') {
        Some(r) => {
            let open = r.rfind('[')?;
            (&r[..open], Some(ZoneId::parse(&r[open + 1..])?))
        }
        None => (s, None),
    };
    let (clock, offset) = if let Some(c) = s.strip_suffix(['Z', 'z']) {
        (c, Some(0))
    } else if let Some(p) = s.rfind(['+', '-']) {
        (&s[..p], Some(parse_offset(&s[p..])?))
    } else {
        (s, None)
    };
    let (hms, frac) = match clock.split_once(['.', ',']) {
        Some((a, f)) => (a, Some(f)),
        None => (clock, None),
    };
    let fields: Vec<&str> = if hms.contains(':') {
        hms.split(':').collect()
    } else {
        pairs(hms)?
    };
    if fields.is_empty() || fields.len() > 3 || fields.iter().any(|f| f.len() != 2) {
        return None;
    }
    let h = num(fields[0])?;
    let m = fields.get(1).map_or(Some(0), |f| num(f))?;
    let sec = fields.get(2).map_or(Some(0), |f| num(f))?;
    let nanos = match frac {
        Some(f) if fields.len() == 3 && digits(f) && f.len() <= 9 => {
            num(f)? * 10i64.pow(9 - f.len() as u32)
        }
        Some(_) => return None,
        None => 0,
    };
    let t = LocalTime::from_hms_nano(h, m, sec, nanos)?;
    let zone = match (offset, name) {
        (_, Some(z)) => Some(TimeZoneSpec {
            offset,
            zone: Zone::Named(z),
        }),
        (Some(o), None) => Some(TimeZoneSpec {
            offset: Some(o),
            zone: Zone::Offset(o),
        }),
        (None, None) => None,
    };
    Some((t, zone))
}

/// The zone part of a parsed time or datetime: the zone, and the offset
/// written beside a zone name (if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeZoneSpec {
    pub offset: Option<i32>,
    pub zone: Zone,
}

/// `<date>T<time>` (the time optional) with an optional zone.
pub fn parse_iso_datetime(s: &str) -> Option<(LocalDateTime, Option<TimeZoneSpec>)> {
    let s = s.trim();
    match s.find(['T', 't']) {
        Some(p) => {
            let date = parse_iso_date(&s[..p])?;
            let (time, zone) = parse_time_and_zone(&s[p + 1..])?;
            Some((LocalDateTime { date, time }, zone))
        }
        None => Some((
            LocalDateTime {
                date: parse_iso_date(s)?,
                time: LocalTime(0),
            },
            None,
        )),
    }
}

impl DateTime {
    /// The value for local fields in `zone` (offset resolved by the zone's
    /// rules; a local time in a gap moves forward by the gap's length).
    pub fn from_local(local: LocalDateTime, zone: Zone) -> Option<DateTime> {
        match zone {
            Zone::Offset(o) => Some(DateTime {
                local,
                offset: o,
                zone: None,
            }),
            Zone::Named(z) => {
                let offset = z.offset_at_local(local);
                let instant = local.epoch_nanos() - offset as i128 * NANOS_PER_SEC as i128;
                DateTime::from_instant(instant, zone)
            }
        }
    }

    /// The value at an instant (nanoseconds since epoch, UTC) seen in `zone`.
    pub fn from_instant(instant: i128, zone: Zone) -> Option<DateTime> {
        let secs = i64::try_from(instant.div_euclid(NANOS_PER_SEC as i128)).ok()?;
        let offset = zone.offset_at_instant(secs);
        Some(DateTime {
            local: LocalDateTime::from_epoch_nanos(
                instant + offset as i128 * NANOS_PER_SEC as i128,
            )?,
            offset,
            zone: match zone {
                Zone::Named(z) => Some(z),
                Zone::Offset(_) => None,
            },
        })
    }

    /// Nanoseconds since the epoch, UTC.
    pub fn instant(&self) -> i128 {
        self.local.epoch_nanos() - self.offset as i128 * NANOS_PER_SEC as i128
    }

    pub fn zone(&self) -> Zone {
        match self.zone {
            Some(z) => Zone::Named(z),
            None => Zone::Offset(self.offset),
        }
    }

    /// openCypher's datetime text: a zone name given without an offset
    /// gets the zone's offset; an offset and a name both given keep the
    /// name's rules.
    pub fn parse(s: &str) -> Option<DateTime> {
        let (local, zone) = parse_iso_datetime(s)?;
        let zone = zone.map_or(Zone::Offset(0), |z| z.zone);
        DateTime::from_local(local, zone)
    }

    /// Total order: by instant, then offset, then zone name.
    pub fn cmp_key(&self) -> (i128, i32, &'static str) {
        (
            self.instant(),
            self.offset,
            self.zone.map_or("", |z| z.name()),
        )
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.local, format_offset(self.offset))?;
        if let Some(z) = self.zone {
            write!(f, "[{}]", z.name())?;
        }
        Ok(())
    }
}

/// A number in a duration or temporal field: integers stay exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

/// The units a duration is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationUnit {
    Years,
    Quarters,
    Months,
    Weeks,
    Days,
    Hours,
    Minutes,
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl DurationUnit {
    pub fn from_name(name: &str) -> Option<DurationUnit> {
        use DurationUnit::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "years" => Years,
            "quarters" => Quarters,
            "months" => Months,
            "weeks" => Weeks,
            "days" => Days,
            "hours" => Hours,
            "minutes" => Minutes,
            "seconds" => Seconds,
            "milliseconds" => Milliseconds,
            "microseconds" => Microseconds,
            "nanoseconds" => Nanoseconds,
            _ => return None,
        })
    }
}

/// Accumulates duration components exactly; a fraction of a month or a day
/// cascades into the smaller units (a month as the average Gregorian month).
#[derive(Debug, Default)]
pub struct DurationBuilder {
    months: i128,
    days: i128,
    nanos: i128,
}

impl DurationBuilder {
    pub fn add(&mut self, unit: DurationUnit, n: Num) {
        use DurationUnit::*;
        match unit {
            Years => self.add_months(n, 12),
            Quarters => self.add_months(n, 3),
            Months => self.add_months(n, 1),
            Weeks => self.add_days(n, 7),
            Days => self.add_days(n, 1),
            Hours => self.add_nanos(n, NANOS_PER_HOUR),
            Minutes => self.add_nanos(n, NANOS_PER_MINUTE),
            Seconds => self.add_nanos(n, NANOS_PER_SEC),
            Milliseconds => self.add_nanos(n, 1_000_000),
            Microseconds => self.add_nanos(n, 1_000),
            Nanoseconds => self.add_nanos(n, 1),
        }
    }

    fn add_months(&mut self, n: Num, per: i64) {
        match n {
            Num::Int(i) => self.months = self.months.saturating_add(i as i128 * per as i128),
            Num::Float(f) => {
                let m = f * per as f64;
                let whole = m.trunc();
                self.months = self.months.saturating_add(whole as i128);
                let secs = (m - whole) * SECONDS_PER_AVG_MONTH;
                let days = (secs / 86_400.0).trunc();
                self.days = self.days.saturating_add(days as i128);
                self.nanos = self
                    .nanos
                    .saturating_add(((secs - days * 86_400.0) * 1e9).round() as i128);
            }
        }
    }

    fn add_days(&mut self, n: Num, per: i64) {
        match n {
            Num::Int(i) => self.days = self.days.saturating_add(i as i128 * per as i128),
            Num::Float(f) => {
                let d = f * per as f64;
                let whole = d.trunc();
                self.days = self.days.saturating_add(whole as i128);
                self.nanos = self
                    .nanos
                    .saturating_add(((d - whole) * NANOS_PER_DAY as f64).round() as i128);
            }
        }
    }

    fn add_nanos(&mut self, n: Num, per: i64) {
        match n {
            Num::Int(i) => self.nanos = self.nanos.saturating_add(i as i128 * per as i128),
            Num::Float(f) => {
                self.nanos = self.nanos.saturating_add((f * per as f64).round() as i128)
            }
        }
    }

    pub fn build(self) -> Option<Duration> {
        Duration::from_parts(self.months, self.days, self.nanos)
    }
}

impl Duration {
    /// From months, days and nanoseconds; `None` when out of range.
    pub fn from_parts(months: i128, days: i128, nanos: i128) -> Option<Duration> {
        let ns = NANOS_PER_SEC as i128;
        Some(Duration {
            months: i32::try_from(months).ok()?,
            days: i32::try_from(days).ok()?,
            seconds: i64::try_from(nanos.div_euclid(ns)).ok()?,
            nanos: nanos.rem_euclid(ns) as i32,
        })
    }

    /// Seconds and nanoseconds together.
    pub fn total_nanos(&self) -> i128 {
        self.seconds as i128 * NANOS_PER_SEC as i128 + self.nanos as i128
    }

    /// ISO-8601 `PnYnMnWnDTnHnMnS` (any component may be fractional or
    /// negative) or the alternative `PYYYY-MM-DDTHH:MM:SS.f`.
    pub fn parse(s: &str) -> Option<Duration> {
        let s = s.trim();
        let body = s.strip_prefix(['P', 'p'])?;
        if body.is_empty() {
            return None;
        }
        if let Some(d) = Duration::parse_alternative(body) {
            return Some(d);
        }
        let mut b = DurationBuilder::default();
        let mut in_time = false;
        let mut start = 0;
        let mut any = false;
        for (i, c) in body.char_indices() {
            if c == 'T' || c == 't' {
                if in_time || i != start {
                    return None;
                }
                in_time = true;
                start = i + 1;
                continue;
            }
            if c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | '+') {
                continue;
            }
            let text = body[start..i].replace(',', ".");
            let n = parse_num(&text)?;
            let unit = match (c.to_ascii_uppercase(), in_time) {
                ('Y', false) => DurationUnit::Years,
                ('M', false) => DurationUnit::Months,
                ('W', false) => DurationUnit::Weeks,
                ('D', false) => DurationUnit::Days,
                ('H', true) => DurationUnit::Hours,
                ('M', true) => DurationUnit::Minutes,
                ('S', true) => DurationUnit::Seconds,
                _ => return None,
            };
            b.add(unit, n);
            any = true;
            start = i + c.len_utf8();
        }
        (any && start == body.len()).then(|| b.build())?
    }

    fn parse_alternative(body: &str) -> Option<Duration> {
        let (date, time) = match body.split_once(['T', 't']) {
            Some((d, t)) => (d, Some(t)),
            None => (body, None),
        };
        let ymd: Vec<&str> = date.split('-').collect();
        if ymd.len() != 3 || ymd[0].len() != 4 || ymd[1].len() != 2 || ymd[2].len() != 2 {
            return None;
        }
        let mut b = DurationBuilder::default();
        b.add(DurationUnit::Years, Num::Int(num(ymd[0])?));
        b.add(DurationUnit::Months, Num::Int(num(ymd[1])?));
        b.add(DurationUnit::Days, Num::Int(num(ymd[2])?));
        if let Some(t) = time {
            let (lt, zone) = parse_time_and_zone(t)?;
            if zone.is_some() {
                return None;
            }
            b.add(DurationUnit::Nanoseconds, Num::Int(lt.0));
        }
        b.build()
    }

    /// The order used for sorting (Cypher leaves durations unordered):
    /// months as 30 days, like INTERVAL.
    pub fn sort_key(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * NANOS_PER_DAY as i128 + self.total_nanos()
    }
}

fn parse_num(text: &str) -> Option<Num> {
    if text.is_empty() {
        return None;
    }
    if text.contains('.') {
        let f: f64 = text.parse().ok()?;
        if f == f.trunc() && f.abs() < 9e15 {
            return Some(Num::Int(f as i64));
        }
        return f.is_finite().then_some(Num::Float(f));
    }
    text.parse().ok().map(Num::Int)
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "P")?;
        let (years, months) = (self.months / 12, self.months % 12);
        if years != 0 {
            write!(f, "{years}Y")?;
        }
        if months != 0 {
            write!(f, "{months}M")?;
        }
        if self.days != 0 {
            write!(f, "{}D", self.days)?;
        }
        let total = self.total_nanos();
        if total != 0 {
            write!(f, "T")?;
            let hours = total / NANOS_PER_HOUR as i128;
            let minutes = total / NANOS_PER_MINUTE as i128 % 60;
            let rest = total % NANOS_PER_MINUTE as i128;
            if hours != 0 {
                write!(f, "{hours}H")?;
            }
            if minutes != 0 {
                write!(f, "{minutes}M")?;
            }
            if rest != 0 {
                let ns = NANOS_PER_SEC as i128;
                let sign = if rest < 0 { "-" } else { "" };
                let a = rest.abs();
                write!(f, "{sign}{}", a / ns)?;
                if a % ns != 0 {
                    let frac = format!("{:09}", a % ns);
                    write!(f, ".{}", frac.trim_end_matches('0'))?;
                }
                write!(f, "S")?;
            }
        } else if self.months == 0 && self.days == 0 {
            write!(f, "T0S")?;
        }
        Ok(())
    }
}

/// A float that holds an integer as `Num::Int`, so integral results stay exact.
fn num_of(f: f64) -> Num {
    if f == f.trunc() && f.abs() < 9e15 {
        Num::Int(f as i64)
    } else {
        Num::Float(f)
    }
}

impl Duration {
    pub fn checked_neg(self) -> Option<Duration> {
        Duration::from_parts(
            -(self.months as i128),
            -(self.days as i128),
            -self.total_nanos(),
        )
    }

    pub fn checked_add(self, o: Duration) -> Option<Duration> {
        Duration::from_parts(
            self.months as i128 + o.months as i128,
            self.days as i128 + o.days as i128,
            self.total_nanos() + o.total_nanos(),
        )
    }

    /// Every component times `factor`; fractions of months and days
    /// cascade into the smaller units as in a duration's text.
    pub fn checked_mul(self, factor: Num) -> Option<Duration> {
        match factor {
            Num::Int(i) => Duration::from_parts(
                (self.months as i128).checked_mul(i as i128)?,
                (self.days as i128).checked_mul(i as i128)?,
                self.total_nanos().checked_mul(i as i128)?,
            ),
            Num::Float(f) if !f.is_finite() => None,
            Num::Float(f) => match Ratio::of_decimal(f) {
                Some(r) => self.scaled_exactly(r),
                None => self.scaled(|x| x * f),
            },
        }
    }

    /// Every component divided by `divisor` (not zero).
    pub fn checked_div(self, divisor: f64) -> Option<Duration> {
        if divisor == 0.0 || !divisor.is_finite() {
            return None;
        }
        match Ratio::of_decimal(divisor).and_then(Ratio::inverse) {
            Some(r) => self.scaled_exactly(r),
            None => self.scaled(|x| x / divisor),
        }
    }

    /// The duration times `r`, in integers: whole months stay months, the
    /// fraction of a month (at the average month, 2,629,746 s) and of a day
    /// carries into days and then into nanoseconds, rounded once at the end
    /// (half away from zero). Float arithmetic here was off by a
    /// nanosecond or more in the carries (`P1Y2M3DT4H5M6.7S * 1.1`).
    /// `None` when out of range.
    fn scaled_exactly(self, r: Ratio) -> Option<Duration> {
        const AVG_MONTH_NANOS: i128 = 2_629_746 * NANOS_PER_SEC as i128;
        let day = NANOS_PER_DAY as i128;
        // Each quantity below is in its unit times `r.den`.
        let months = (self.months as i128).checked_mul(r.num)?;
        let days = (self.days as i128).checked_mul(r.num)?;
        let carry = (days % r.den)
            .checked_mul(day)?
            .checked_add((months % r.den).checked_mul(AVG_MONTH_NANOS)?)?;
        let per_day = day.checked_mul(r.den)?;
        let nanos = self
            .total_nanos()
            .checked_mul(r.num)?
            .checked_add(carry % per_day)?;
        let half = r.den / 2;
        let rounded = if nanos >= 0 {
            nanos.checked_add(half)? / r.den
        } else {
            nanos.checked_sub(half)? / r.den
        };
        Duration::from_parts(months / r.den, days / r.den + carry / per_day, rounded)
    }

    fn scaled(self, f: impl Fn(f64) -> f64) -> Option<Duration> {
        let mut b = DurationBuilder::default();
        b.add(DurationUnit::Months, num_of(f(self.months as f64)));
        b.add(DurationUnit::Days, num_of(f(self.days as f64)));
        let n = f(self.total_nanos() as f64);
        if !n.is_finite() {
            return None;
        }
        b.add(DurationUnit::Nanoseconds, num_of(n.round()));
        b.build()
    }
}

/// An exact factor `num / den` (`den > 0`) to scale a duration by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ratio {
    num: i128,
    den: i128,
}

impl Ratio {
    /// The decimal that `f` prints as (its shortest round-trip digits): the
    /// literal `1.1` is 11/10, not the binary fraction nearest to it. `None`
    /// when that needs more than 10^24 in either part (the caller then
    /// scales in floats).
    fn of_decimal(f: f64) -> Option<Ratio> {
        if !f.is_finite() {
            return None;
        }
        let text = format!("{f:e}");
        let (mantissa, exp) = text.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let (neg, mantissa) = match mantissa.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, mantissa),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut num: i128 = format!("{int}{frac}").parse().ok()?;
        if neg {
            num = -num;
        }
        let scale = frac.len() as i32 - exp;
        const MAX_POW: u32 = 24;
        if scale >= 0 {
            let den = 10i128.checked_pow(u32::try_from(scale).ok().filter(|s| *s <= MAX_POW)?)?;
            Some(Ratio { num, den })
        } else {
            let pow = u32::try_from(-scale).ok().filter(|s| *s <= MAX_POW)?;
            Some(Ratio {
                num: num.checked_mul(10i128.checked_pow(pow)?)?,
                den: 1,
            })
        }
    }

    /// `1 / self`; `None` for zero.
    fn inverse(self) -> Option<Ratio> {
        if self.num == 0 {
            return None;
        }
        Some(Ratio {
            num: self.den * self.num.signum(),
            den: self.num.abs(),
        })
    }
}

impl Date {
    /// The date moved by a duration: months (day clamped to the month's
    /// length), days, and the whole days of its time part.
    pub fn plus(self, d: Duration) -> Option<Date> {
        let days = add_months_to_days(self.days(), d.months as i64)
            + d.days as i64
            + i64::try_from(d.total_nanos() / NANOS_PER_DAY as i128).ok()?;
        Date::from_days(days)
    }
}

impl LocalTime {
    /// The time moved by a duration's time part, around the clock.
    pub fn plus(self, d: Duration) -> LocalTime {
        LocalTime((self.0 as i128 + d.total_nanos()).rem_euclid(NANOS_PER_DAY as i128) as i64)
    }
}

impl Time {
    pub fn plus(self, d: Duration) -> Time {
        Time {
            time: self.time.plus(d),
            offset: self.offset,
        }
    }
}

impl LocalDateTime {
    /// Months, then days, then the time part.
    pub fn plus(self, d: Duration) -> Option<LocalDateTime> {
        let t = plus_months_days(self, d.months as i64, d.days as i64)?;
        LocalDateTime::from_epoch_nanos(t.epoch_nanos() + d.total_nanos())
    }
}

impl DateTime {
    /// Months and days move the local fields (the zone's rules then fix the
    /// offset); the time part moves the instant.
    pub fn plus(self, d: Duration) -> Option<DateTime> {
        let local = plus_months_days(self.local, d.months as i64, d.days as i64)?;
        let moved = DateTime::from_local(local, self.zone())?;
        DateTime::from_instant(moved.instant() + d.total_nanos(), self.zone())
    }
}

/// Adds `months` to days since epoch, clamping the day to the new month's
/// length (Jan 31 + 1 month = Feb 28/29).
pub fn add_months_to_days(days: i64, months: i64) -> i64 {
    if months == 0 {
        return days;
    }
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m as i64 - 1) + months;
    let ny = total.div_euclid(12);
    let nm = (total.rem_euclid(12) + 1) as u32;
    days_from_civil(ny, nm, d.min(days_in_month(ny, nm)))
}

/// Whole months from `a` to `b` (towards zero): the months that can be
/// added to `a` without passing `b`.
pub fn months_between(a: LocalDateTime, b: LocalDateTime) -> i64 {
    let (ay, am, ad) = a.date.ymd();
    let (by, bm, bd) = b.date.ymd();
    let mut months = (by * 12 + bm as i64) - (ay * 12 + am as i64);
    let a_rest = (ad, a.time);
    let b_rest = (bd, b.time);
    if months > 0 && b_rest < a_rest {
        months -= 1;
    } else if months < 0 && b_rest > a_rest {
        months += 1;
    }
    months
}

/// Whole days from `a` to `b` (towards zero).
pub fn days_between(a: LocalDateTime, b: LocalDateTime) -> i64 {
    let mut days = b.date.days() - a.date.days();
    if days > 0 && b.time < a.time {
        days -= 1;
    } else if days < 0 && b.time > a.time {
        days += 1;
    }
    days
}

/// A local date-time moved by whole months and days.
pub fn plus_months_days(t: LocalDateTime, months: i64, days: i64) -> Option<LocalDateTime> {
    let d = add_months_to_days(t.date.days(), months) + days;
    Some(LocalDateTime {
        date: Date::from_days(d)?,
        time: t.time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dur(text: &str) -> Duration {
        Duration::parse(text).unwrap()
    }

    #[test]
    fn fractional_scaling_is_exact_in_decimal() {
        let d = dur("P1Y2M3DT4H5M6.7S");
        // 15.4 months: 0.4 of the average month is 12.17475 days; with
        // 3.3 days that is 15 days and 0.47475 days = 41,018.4 s, added to
        // 14,706.7 s * 1.1 = 16,177.37 s.
        assert_eq!(
            d.checked_mul(Num::Float(1.1)).unwrap().to_string(),
            "P1Y3M15DT15H53M15.77S"
        );
        // 14 / 0.3 months = 46 and 2/3 (20.29125 days); 3 / 0.3 = 10 days.
        assert_eq!(
            d.checked_div(0.3).unwrap().to_string(),
            "P3Y10M30DT20H36M26.333333333S"
        );
        assert_eq!(
            dur("P1D").checked_mul(Num::Float(0.5)).unwrap(),
            dur("PT12H")
        );
        assert_eq!(
            dur("PT1S").checked_mul(Num::Float(0.1)).unwrap(),
            dur("PT0.1S")
        );
        assert_eq!(dur("PT2S").checked_div(3.0).unwrap(), dur("PT0.666666667S"));
        assert_eq!(
            dur("PT-2S").checked_div(3.0).unwrap(),
            dur("PT-0.666666667S")
        );
        assert_eq!(
            dur("P1M").checked_mul(Num::Float(-0.5)).unwrap(),
            dur("P-15DT-5H-14M-33S")
        );
        // Factors with more digits than the exact path takes still scale.
        assert!(dur("P1D").checked_mul(Num::Float(1e-30)).is_some());
        assert!(dur("P1D").checked_mul(Num::Float(f64::NAN)).is_none());
        assert!(dur("P1D").checked_div(0.0).is_none());
    }

    #[test]
    fn decimal_scaling_matches_integer_arithmetic() {
        // d * (k / 10^n) computed as (d * k) then divided by 10^n in
        // nanoseconds: for a duration without months or days both must
        // agree to the nanosecond.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let nanos = (x % 10_000_000_000_000) as i64 - 5_000_000_000_000;
            let k = (x >> 40) as i64 % 100_000 - 50_000;
            let n = (x >> 20) as u32 % 5;
            let d = Duration::from_parts(0, 0, nanos as i128).unwrap();
            let factor: f64 = format!("{}e-{}", k, n).parse().unwrap();
            let got = d.checked_mul(Num::Float(factor)).unwrap();
            let den = 10i128.pow(n);
            let exact = nanos as i128 * k as i128;
            let want = (exact + exact.signum() * den / 2) / den;
            assert_eq!(got.total_nanos(), want, "{d} * {factor}");
        }
    }

    #[test]
    fn date_round_trip() {
        for text in [
            "1970-01-01",
            "2000-02-29",
            "1899-12-31",
            "2024-12-31",
            "0001-01-01",
        ] {
            let d = Date::parse(text).unwrap();
            assert_eq!(d.to_string(), text);
        }
        assert_eq!(Date::parse("1970-01-02"), Some(Date(1)));
        assert_eq!(Date::parse("2023-02-29"), None);
        assert_eq!(Date::parse("2023-13-01"), None);
        assert_eq!(Date::parse("abc"), None);
        assert_eq!(Date::parse("2023-1"), None);
    }

    #[test]
    fn civil_round_trip_over_wide_range() {
        for days in (-800_000i64..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn timestamp_parse_and_format() {
        let t = Timestamp::parse("2011-08-20 11:25:30.5").unwrap();
        assert_eq!(t.to_string(), "2011-08-20 11:25:30.5");
        assert_eq!(
            Timestamp::parse("1970-01-01T00:00:01Z"),
            Some(Timestamp(1_000_000))
        );
        assert_eq!(
            Timestamp::parse("1970-01-01T01:00:00+01:00"),
            Some(Timestamp(0))
        );
        assert_eq!(Timestamp::parse("1970-01-01"), Some(Timestamp(0)));
        assert_eq!(Timestamp::parse("1970-01-01 25:00:00"), None);
    }

    #[test]
    fn interval_parse_and_format() {
        let i = Interval::parse("1 year 2 days 03:00:00").unwrap();
        assert_eq!(
            i,
            Interval {
                months: 12,
                days: 2,
                micros: 3 * 3600 * MICROS_PER_SEC
            }
        );
        assert_eq!(i.to_string(), "1 year 2 days 03:00:00");
        assert_eq!(Interval::parse("P1Y2M3DT4H").unwrap().months, 14);
        assert_eq!(Interval::parse("nonsense"), None);
    }

    /// A small deterministic generator (no dev-dependency needed).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 11
        }
        fn range(&mut self, lo: i64, hi: i64) -> i64 {
            lo + (self.next() % (hi - lo) as u64) as i64
        }
    }

    #[test]
    fn cypher_values_print_and_parse_back() {
        let mut r = Lcg(7);
        let zones = ["Europe/Stockholm", "Pacific/Honolulu", "Australia/Eucla"];
        for _ in 0..2000 {
            let t = LocalTime(r.range(0, NANOS_PER_DAY));
            assert_eq!(LocalTime::parse(&t.to_string()), Some(t));
            let date = Date(r.range(-800_000, 800_000) as i32);
            assert_eq!(parse_iso_date(&date.to_string()), Some(date), "{date}");
            let local = LocalDateTime { date, time: t };
            assert_eq!(
                parse_iso_datetime(&local.to_string()).map(|x| x.0),
                Some(local)
            );
            let offset = r.range(-18 * 3600, 18 * 3600 + 1) as i32 / 60 * 60;
            let dt = DateTime::from_local(local, Zone::Offset(offset)).unwrap();
            assert_eq!(DateTime::parse(&dt.to_string()), Some(dt));
            let zone = ZoneId::parse(zones[r.range(0, 3) as usize]).unwrap();
            let named = DateTime::from_instant(dt.instant(), Zone::Named(zone)).unwrap();
            assert_eq!(named.instant(), dt.instant());
            let d = Duration::from_parts(
                r.range(-100_000, 100_000) as i128,
                r.range(-100_000, 100_000) as i128,
                r.range(-NANOS_PER_DAY * 1000, NANOS_PER_DAY * 1000) as i128,
            )
            .unwrap();
            assert_eq!(Duration::parse(&d.to_string()), Some(d), "{d}");
        }
    }

    #[test]
    fn parsers_never_panic_on_garbage() {
        let mut r = Lcg(11);
        let alphabet: Vec<char> = "0123456789-+:.,TWZPYMDHSé[]/ ".chars().collect();
        for _ in 0..20_000 {
            let len = r.range(0, 24) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[r.range(0, alphabet.len() as i64) as usize])
                .collect();
            let _ = parse_iso_date(&text);
            let _ = parse_time_and_zone(&text);
            let _ = parse_iso_datetime(&text);
            let _ = DateTime::parse(&text);
            let _ = Duration::parse(&text);
            let _ = Zone::parse(&text);
        }
    }

    #[test]
    fn iso_week_and_calendar_fields() {
        let d = Date::from_ymd(1984, 1, 1).unwrap();
        assert_eq!(d.iso_week(), (1983, 52));
        assert_eq!(d.weekday(), 7);
        let d = Date::from_ymd(1984, 11, 11).unwrap();
        assert_eq!(
            (d.quarter(), d.day_of_quarter(), d.ordinal_day()),
            (4, 42, 316)
        );
        assert_eq!(Date::from_week(2015, 30, 2), Date::from_ymd(2015, 7, 21));
        assert_eq!(Date::from_week(2015, 54, 1), None);
        assert_eq!(Date::from_quarter(1984, 3, 42), Date::from_ymd(1984, 8, 11));
        assert_eq!(Date::from_ymd(i64::MAX, 1, 1), None);
    }
}
