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
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
