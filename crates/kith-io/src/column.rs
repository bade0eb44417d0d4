//! Typed column builders: the hot loops of both readers append here directly
//! instead of going through [`Value`](kith_common::Value).

use kith_common::{
    Date, Interval, LogicalType, NullMask, StringData, Timestamp, Value, ValueVector, VectorData,
};

/// Why a single field could not be converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldError {
    /// Not a valid literal of the target type (or out of range).
    Convert,
    /// Not valid UTF-8.
    Utf8,
}

/// Values of one column being built, plus its null mask.
pub(crate) struct ColumnBuilder {
    ty: LogicalType,
    data: Data,
    nulls: NullMask,
    len: usize,
}

enum Data {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Str(StringData),
    Interval(Vec<Interval>),
    /// LIST, STRUCT and MAP columns: one value per row, already converted to
    /// the column's type.
    Nested(Vec<Value>),
}

/// Whether `ty` can be produced by the readers: the scalar types below, and
/// lists, structs and maps of them.
pub(crate) fn check_supported(ty: &LogicalType) -> bool {
    match ty {
        LogicalType::List(inner) => return check_supported(inner),
        LogicalType::Struct(fields) => return fields.iter().all(|(_, t)| check_supported(t)),
        LogicalType::Map(k, v) => return check_supported(k) && check_supported(v),
        _ => {}
    }
    matches!(
        ty,
        LogicalType::Bool
            | LogicalType::Int8
            | LogicalType::Int16
            | LogicalType::Int32
            | LogicalType::Int64
            | LogicalType::UInt8
            | LogicalType::UInt16
            | LogicalType::UInt32
            | LogicalType::UInt64
            | LogicalType::Float
            | LogicalType::Double
            | LogicalType::String
            | LogicalType::Date
            | LogicalType::Timestamp
            | LogicalType::Interval
    )
}

impl ColumnBuilder {
    /// A builder for `ty`; the caller has checked [`check_supported`].
    pub(crate) fn new(ty: &LogicalType, capacity: usize) -> ColumnBuilder {
        let data = match ty {
            LogicalType::Bool => Data::Bool(Vec::with_capacity(capacity)),
            LogicalType::Int8 => Data::I8(Vec::with_capacity(capacity)),
            LogicalType::Int16 => Data::I16(Vec::with_capacity(capacity)),
            LogicalType::Int32 | LogicalType::Date => Data::I32(Vec::with_capacity(capacity)),
            LogicalType::Int64 | LogicalType::Timestamp => Data::I64(Vec::with_capacity(capacity)),
            LogicalType::UInt8 => Data::U8(Vec::with_capacity(capacity)),
            LogicalType::UInt16 => Data::U16(Vec::with_capacity(capacity)),
            LogicalType::UInt32 => Data::U32(Vec::with_capacity(capacity)),
            LogicalType::UInt64 => Data::U64(Vec::with_capacity(capacity)),
            LogicalType::Float => Data::F32(Vec::with_capacity(capacity)),
            LogicalType::Double => Data::F64(Vec::with_capacity(capacity)),
            LogicalType::Interval => Data::Interval(Vec::with_capacity(capacity)),
            LogicalType::List(_) | LogicalType::Struct(_) | LogicalType::Map(..) => {
                Data::Nested(Vec::with_capacity(capacity))
            }
            _ => Data::Str(StringData::default()),
        };
        ColumnBuilder {
            ty: ty.clone(),
            data,
            nulls: NullMask::default(),
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn ty(&self) -> &LogicalType {
        &self.ty
    }

    /// Appends a NULL.
    #[inline]
    pub(crate) fn push_null(&mut self) {
        match &mut self.data {
            Data::Bool(v) => v.push(false),
            Data::I8(v) => v.push(0),
            Data::I16(v) => v.push(0),
            Data::I32(v) => v.push(0),
            Data::I64(v) => v.push(0),
            Data::U8(v) => v.push(0),
            Data::U16(v) => v.push(0),
            Data::U32(v) => v.push(0),
            Data::U64(v) => v.push(0),
            Data::F32(v) => v.push(0.0),
            Data::F64(v) => v.push(0.0),
            Data::Str(v) => v.push(""),
            Data::Interval(v) => v.push(Interval::default()),
            Data::Nested(v) => v.push(Value::Null),
        }
        self.nulls.set(self.len, true);
        self.len += 1;
    }

    /// Appends one CSV field. `quoted` tells an empty quoted field (an empty
    /// string, NULL for other types) from an empty unquoted one (NULL).
    #[inline]
    pub(crate) fn push_text(&mut self, f: &[u8], quoted: bool) -> Result<(), FieldError> {
        if f.is_empty() && !(quoted && matches!(self.data, Data::Str(_))) {
            self.push_null();
            return Ok(());
        }
        let bad = FieldError::Convert;
        match &mut self.data {
            Data::I64(v) => {
                if self.ty == LogicalType::Timestamp {
                    v.push(Timestamp::parse(as_str(f)?).ok_or(bad)?.0)
                } else {
                    v.push(parse_i64(f).ok_or(bad)?)
                }
            }
            Data::I32(v) => {
                if self.ty == LogicalType::Date {
                    v.push(Date::parse(as_str(f)?).ok_or(bad)?.0)
                } else {
                    v.push(narrow_i(parse_i64(f))?)
                }
            }
            Data::I16(v) => v.push(narrow_i(parse_i64(f))?),
            Data::I8(v) => v.push(narrow_i(parse_i64(f))?),
            Data::U64(v) => v.push(parse_u64(f).ok_or(bad)?),
            Data::U32(v) => v.push(narrow_u(parse_u64(f))?),
            Data::U16(v) => v.push(narrow_u(parse_u64(f))?),
            Data::U8(v) => v.push(narrow_u(parse_u64(f))?),
            Data::F64(v) => v.push(as_str(f)?.trim().parse::<f64>().map_err(|_| bad)?),
            Data::F32(v) => v.push(as_str(f)?.trim().parse::<f32>().map_err(|_| bad)?),
            Data::Bool(v) => v.push(parse_bool(f).ok_or(bad)?),
            Data::Str(v) => v.push(std::str::from_utf8(f).map_err(|_| FieldError::Utf8)?),
            Data::Interval(v) => v.push(Interval::parse(as_str(f)?).ok_or(bad)?),
            Data::Nested(v) => {
                let value = crate::nested_literal::parse(as_str(f)?, &self.ty).ok_or(bad)?;
                if value.is_null() {
                    self.nulls.set(self.len, true);
                }
                v.push(value)
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Appends a value of the column's own type (LIST, STRUCT and MAP
    /// columns, whose values readers build whole).
    pub(crate) fn push_nested(&mut self, value: Value) -> Result<(), FieldError> {
        let Data::Nested(v) = &mut self.data else {
            return Err(FieldError::Convert);
        };
        if value.is_null() {
            self.nulls.set(self.len, true);
        }
        v.push(value);
        self.len += 1;
        Ok(())
    }

    /// The values built so far, one per row (NULL where the row is NULL).
    pub(crate) fn into_values(self) -> Vec<Value> {
        let v = self.finish();
        (0..v.len()).map(|i| v.get_value(i)).collect()
    }

    /// Appends an integer from a typed source; `Err` when out of range or the
    /// target is not numeric.
    #[inline]
    pub(crate) fn push_int(&mut self, x: i128) -> Result<(), FieldError> {
        let bad = FieldError::Convert;
        match &mut self.data {
            Data::I8(v) => v.push(x.try_into().map_err(|_| bad)?),
            Data::I16(v) => v.push(x.try_into().map_err(|_| bad)?),
            Data::I32(v) if self.ty == LogicalType::Int32 => v.push(x.try_into().map_err(|_| bad)?),
            Data::I64(v) if self.ty == LogicalType::Int64 => v.push(x.try_into().map_err(|_| bad)?),
            Data::U8(v) => v.push(x.try_into().map_err(|_| bad)?),
            Data::U16(v) => v.push(x.try_into().map_err(|_| bad)?),
            Data::U32(v) => v.push(x.try_into().map_err(|_| bad)?),
            Data::U64(v) => v.push(x.try_into().map_err(|_| bad)?),
            Data::F32(v) => v.push(x as f32),
            Data::F64(v) => v.push(x as f64),
            _ => return Err(bad),
        }
        self.len += 1;
        Ok(())
    }

    /// Appends a float from a typed source (FLOAT or DOUBLE targets only).
    #[inline]
    pub(crate) fn push_float(&mut self, x: f64) -> Result<(), FieldError> {
        match &mut self.data {
            Data::F32(v) => v.push(x as f32),
            Data::F64(v) => v.push(x),
            _ => return Err(FieldError::Convert),
        }
        self.len += 1;
        Ok(())
    }

    #[inline]
    pub(crate) fn push_bool(&mut self, x: bool) -> Result<(), FieldError> {
        match &mut self.data {
            Data::Bool(v) => v.push(x),
            _ => return Err(FieldError::Convert),
        }
        self.len += 1;
        Ok(())
    }

    /// Appends a string from a typed source: stored as is into STRING, parsed for
    /// every other target.
    #[inline]
    pub(crate) fn push_str(&mut self, s: &str) -> Result<(), FieldError> {
        match &mut self.data {
            Data::Str(v) => {
                v.push(s);
                self.len += 1;
                Ok(())
            }
            _ => self.push_text(s.as_bytes(), true),
        }
    }

    /// Appends a date (days since the epoch) into DATE or TIMESTAMP.
    #[inline]
    pub(crate) fn push_date(&mut self, days: i64) -> Result<(), FieldError> {
        match (&mut self.data, &self.ty) {
            (Data::I32(v), LogicalType::Date) => {
                v.push(days.try_into().map_err(|_| FieldError::Convert)?)
            }
            (Data::I64(v), LogicalType::Timestamp) => v.push(
                days.checked_mul(kith_common::temporal::MICROS_PER_DAY)
                    .ok_or(FieldError::Convert)?,
            ),
            _ => return Err(FieldError::Convert),
        }
        self.len += 1;
        Ok(())
    }

    /// Appends a timestamp (microseconds since the epoch) into TIMESTAMP or DATE.
    #[inline]
    pub(crate) fn push_timestamp(&mut self, micros: i64) -> Result<(), FieldError> {
        match (&mut self.data, &self.ty) {
            (Data::I64(v), LogicalType::Timestamp) => v.push(micros),
            (Data::I32(v), LogicalType::Date) => v.push(
                micros
                    .div_euclid(kith_common::temporal::MICROS_PER_DAY)
                    .try_into()
                    .map_err(|_| FieldError::Convert)?,
            ),
            _ => return Err(FieldError::Convert),
        }
        self.len += 1;
        Ok(())
    }

    /// Appends an interval (INTERVAL targets only).
    #[inline]
    pub(crate) fn push_interval(&mut self, x: Interval) -> Result<(), FieldError> {
        match &mut self.data {
            Data::Interval(v) => v.push(x),
            _ => return Err(FieldError::Convert),
        }
        self.len += 1;
        Ok(())
    }

    pub(crate) fn finish(self) -> ValueVector {
        let data = match self.data {
            Data::Bool(v) => VectorData::Bool(v),
            Data::I8(v) => VectorData::I8(v),
            Data::I16(v) => VectorData::I16(v),
            Data::I32(v) => VectorData::I32(v),
            Data::I64(v) => VectorData::I64(v),
            Data::U8(v) => VectorData::U8(v),
            Data::U16(v) => VectorData::U16(v),
            Data::U32(v) => VectorData::U32(v),
            Data::U64(v) => VectorData::U64(v),
            Data::F32(v) => VectorData::F32(v),
            Data::F64(v) => VectorData::F64(v),
            Data::Str(v) => VectorData::Str(v),
            Data::Interval(v) => VectorData::Interval(v),
            Data::Nested(v) => VectorData::Value(v),
        };
        let mut nulls = self.nulls;
        nulls.resize(self.len);
        ValueVector {
            ty: self.ty,
            data,
            nulls,
        }
    }
}

#[inline]
fn as_str(f: &[u8]) -> Result<&str, FieldError> {
    std::str::from_utf8(f).map_err(|_| FieldError::Convert)
}

#[inline]
fn narrow_i<T: TryFrom<i64>>(x: Option<i64>) -> Result<T, FieldError> {
    x.and_then(|x| T::try_from(x).ok())
        .ok_or(FieldError::Convert)
}

#[inline]
fn narrow_u<T: TryFrom<u64>>(x: Option<u64>) -> Result<T, FieldError> {
    x.and_then(|x| T::try_from(x).ok())
        .ok_or(FieldError::Convert)
}

#[inline]
fn trim_spaces(mut f: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = f {
        f = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = f {
        f = rest;
    }
    f
}

/// Decimal digits to `u64`, `None` on anything else or overflow.
#[inline]
fn digits_u64(d: &[u8]) -> Option<u64> {
    if d.is_empty() {
        return None;
    }
    let mut acc: u64 = 0;
    if d.len() <= 19 {
        // 19 digits cannot overflow a u64.
        for &b in d {
            let x = b.wrapping_sub(b'0');
            if x > 9 {
                return None;
            }
            acc = acc * 10 + x as u64;
        }
        return Some(acc);
    }
    for &b in d {
        let x = b.wrapping_sub(b'0');
        if x > 9 {
            return None;
        }
        acc = acc.checked_mul(10)?.checked_add(x as u64)?;
    }
    Some(acc)
}

/// Optional sign plus decimal digits; surrounding spaces are allowed.
#[inline]
pub(crate) fn parse_i64(f: &[u8]) -> Option<i64> {
    let f = match f {
        [b'0'..=b'9', ..] if matches!(f.last(), Some(b'0'..=b'9')) => f,
        _ => trim_spaces(f),
    };
    match f {
        [b'-', rest @ ..] => {
            let m = digits_u64(rest)?;
            if m <= i64::MAX as u64 + 1 {
                Some((m as i64).wrapping_neg())
            } else {
                None
            }
        }
        [b'+', rest @ ..] => i64::try_from(digits_u64(rest)?).ok(),
        _ => i64::try_from(digits_u64(f)?).ok(),
    }
}

#[inline]
pub(crate) fn parse_u64(f: &[u8]) -> Option<u64> {
    match trim_spaces(f) {
        [b'+', rest @ ..] => digits_u64(rest),
        f => digits_u64(f),
    }
}

fn parse_bool(f: &[u8]) -> Option<bool> {
    let f = trim_spaces(f);
    if f.eq_ignore_ascii_case(b"true") || f == b"1" {
        Some(true)
    } else if f.eq_ignore_ascii_case(b"false") || f == b"0" {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_i64(b"42"), Some(42));
        assert_eq!(parse_i64(b" -7 "), Some(-7));
        assert_eq!(parse_i64(b"+7"), Some(7));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"99999999999999999999999"), None);
        assert_eq!(parse_i64(b"1a"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b""), None);
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
    }
}
