//! A small explicit binary encoding for metadata that is persisted (catalog,
//! table metadata, WAL records): little-endian fixed-width integers, length-
//! prefixed strings and byte strings. Decoding never panics: truncated or bad
//! input is a corruption error.

use crate::error::{Error, Result};
use crate::temporal::{DateTime, Duration, LocalDateTime, LocalTime, Time, ZoneId};
use crate::types::LogicalType;
use crate::value::Value;
use crate::{Date, Interval, Timestamp};

// Tags of `encode_value`; persisted in variant (ANY) columns, so never renumber.
const V_NULL: u8 = 0;
const V_BOOL: u8 = 1;
const V_INT: u8 = 2;
const V_UINT: u8 = 3;
const V_DOUBLE: u8 = 4;
const V_STRING: u8 = 5;
const V_LIST: u8 = 6;
const V_MAP: u8 = 7;
const V_DATE: u8 = 8;
const V_TIMESTAMP: u8 = 9;
const V_INTERVAL: u8 = 10;
const V_FLOAT: u8 = 11;
const V_STRUCT: u8 = 12;
const V_INT_SMALL: u8 = 13;
const V_LOCAL_TIME: u8 = 14;
const V_TIME: u8 = 15;
const V_LOCAL_DATETIME: u8 = 16;
const V_DATETIME: u8 = 17;
const V_DURATION: u8 = 18;

#[derive(Debug, Default, Clone)]
pub struct Encoder {
    pub buf: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder::default()
    }
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, v: &[u8]) {
        self.u64(v.len() as u64);
        self.buf.extend_from_slice(v);
    }
    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    pub fn ty(&mut self, t: &LogicalType) {
        self.u8(t.tag());
        match t {
            LogicalType::List(inner) => self.ty(inner),
            LogicalType::Struct(fields) => {
                self.u32(fields.len() as u32);
                for (n, ft) in fields {
                    self.str(n);
                    self.ty(ft);
                }
            }
            LogicalType::Map(k, v) => {
                self.ty(k);
                self.ty(v);
            }
            _ => {}
        }
    }
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    /// A property value of a variant (ANY) column. Integers keep their width
    /// class (signed / unsigned, and the exact type in a second byte) so a
    /// value reads back as the type it was written with. Nodes, rels, paths
    /// and ids are not property values: an error.
    pub fn value(&mut self, v: &Value) -> Result<()> {
        match v {
            Value::Null => self.u8(V_NULL),
            Value::Bool(b) => {
                self.u8(V_BOOL);
                self.bool(*b);
            }
            Value::Int64(x) => {
                self.u8(V_INT);
                self.i64(*x);
            }
            Value::Int8(_) | Value::Int16(_) | Value::Int32(_) => {
                self.u8(V_INT_SMALL);
                self.u8(match v {
                    Value::Int8(_) => 8,
                    Value::Int16(_) => 16,
                    _ => 32,
                });
                self.i64(v.as_i64().unwrap_or(0));
            }
            Value::UInt8(_) | Value::UInt16(_) | Value::UInt32(_) | Value::UInt64(_) => {
                self.u8(V_UINT);
                self.u8(match v {
                    Value::UInt8(_) => 8,
                    Value::UInt16(_) => 16,
                    Value::UInt32(_) => 32,
                    _ => 64,
                });
                let x = match v {
                    Value::UInt8(x) => u64::from(*x),
                    Value::UInt16(x) => u64::from(*x),
                    Value::UInt32(x) => u64::from(*x),
                    Value::UInt64(x) => *x,
                    _ => 0,
                };
                self.u64(x);
            }
            Value::Float(x) => {
                self.u8(V_FLOAT);
                self.u32(x.to_bits());
            }
            Value::Double(x) => {
                self.u8(V_DOUBLE);
                self.f64(*x);
            }
            Value::String(s) => {
                self.u8(V_STRING);
                self.str(s);
            }
            Value::Date(d) => {
                self.u8(V_DATE);
                self.u32(d.0 as u32);
            }
            Value::Timestamp(t) => {
                self.u8(V_TIMESTAMP);
                self.i64(t.0);
            }
            Value::Interval(i) => {
                self.u8(V_INTERVAL);
                self.u32(i.months as u32);
                self.u32(i.days as u32);
                self.i64(i.micros);
            }
            Value::List(items) => {
                self.u8(V_LIST);
                self.u64(items.len() as u64);
                for item in items.iter() {
                    self.value(item)?;
                }
            }
            Value::Map(entries) => {
                self.u8(V_MAP);
                self.u64(entries.len() as u64);
                for (k, val) in entries {
                    self.value(k)?;
                    self.value(val)?;
                }
            }
            Value::Struct(fields) => {
                self.u8(V_STRUCT);
                self.u64(fields.len() as u64);
                for (k, val) in fields {
                    self.str(k);
                    self.value(val)?;
                }
            }
            Value::LocalTime(t) => {
                self.u8(V_LOCAL_TIME);
                self.i64(t.0);
            }
            Value::Time(t) => {
                self.u8(V_TIME);
                self.i64(t.time.0);
                self.u32(t.offset as u32);
            }
            Value::LocalDateTime(t) => {
                self.u8(V_LOCAL_DATETIME);
                self.u32(t.date.0 as u32);
                self.i64(t.time.0);
            }
            Value::DateTime(t) => {
                self.u8(V_DATETIME);
                self.u32(t.local.date.0 as u32);
                self.i64(t.local.time.0);
                self.u32(t.offset as u32);
                self.str(t.zone.map_or("", |z| z.name()));
            }
            Value::Duration(d) => {
                self.u8(V_DURATION);
                self.u32(d.months as u32);
                self.u32(d.days as u32);
                self.i64(d.seconds);
                self.u32(d.nanos as u32);
            }
            Value::InternalId(_) | Value::Node(_) | Value::Rel(_) | Value::Path(_) => {
                return Err(Error::type_error(format!(
                    "{v} cannot be stored as a property value"
                )))
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Decoder<'a> {
        Decoder { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| Error::corruption("truncated metadata record"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn bool(&mut self) -> Result<bool> {
        Ok(self.u8()? != 0)
    }
    pub fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    pub fn i64(&mut self) -> Result<i64> {
        Ok(self.u64()? as i64)
    }
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| Error::corruption("bad length in metadata"))?;
        self.take(n)
    }
    pub fn str(&mut self) -> Result<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| Error::corruption("invalid UTF-8 in metadata"))
    }
    /// A count of items that follow, sanity-checked against the remaining bytes so
    /// a corrupt count cannot trigger a huge allocation.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize> {
        let n = self.u64()? as usize;
        if n.saturating_mul(min_item_bytes.max(1)) > self.buf.len() - self.pos {
            return Err(Error::corruption("bad item count in metadata"));
        }
        Ok(n)
    }
    pub fn ty(&mut self) -> Result<LogicalType> {
        let tag = self.u8()?;
        Ok(match tag {
            17 => LogicalType::List(Box::new(self.ty()?)),
            18 => {
                let n = self.u32()? as usize;
                let mut fields = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let name = self.str()?;
                    fields.push((name, self.ty()?));
                }
                LogicalType::Struct(fields)
            }
            19 => {
                let k = self.ty()?;
                LogicalType::Map(Box::new(k), Box::new(self.ty()?))
            }
            t => LogicalType::from_simple_tag(t)
                .ok_or_else(|| Error::corruption(format!("unknown type tag {t}")))?,
        })
    }
    pub fn is_done(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// The inverse of [`Encoder::value`].
    pub fn value(&mut self) -> Result<Value> {
        Ok(match self.u8()? {
            V_NULL => Value::Null,
            V_BOOL => Value::Bool(self.bool()?),
            V_INT => Value::Int64(self.i64()?),
            V_INT_SMALL => {
                let width = self.u8()?;
                let x = self.i64()?;
                match width {
                    8 => Value::Int8(x as i8),
                    16 => Value::Int16(x as i16),
                    _ => Value::Int32(x as i32),
                }
            }
            V_UINT => {
                let width = self.u8()?;
                let x = self.u64()?;
                match width {
                    8 => Value::UInt8(x as u8),
                    16 => Value::UInt16(x as u16),
                    32 => Value::UInt32(x as u32),
                    _ => Value::UInt64(x),
                }
            }
            V_FLOAT => Value::Float(f32::from_bits(self.u32()?)),
            V_DOUBLE => Value::Double(self.f64()?),
            V_STRING => Value::String(self.str()?),
            V_DATE => Value::Date(Date(self.u32()? as i32)),
            V_TIMESTAMP => Value::Timestamp(Timestamp(self.i64()?)),
            V_INTERVAL => Value::Interval(Interval {
                months: self.u32()? as i32,
                days: self.u32()? as i32,
                micros: self.i64()?,
            }),
            V_LIST => {
                let n = self.count(1)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value()?);
                }
                Value::list(items)
            }
            V_MAP => {
                let n = self.count(2)?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = self.value()?;
                    entries.push((k, self.value()?));
                }
                Value::Map(entries)
            }
            V_STRUCT => {
                let n = self.count(9)?;
                let mut fields = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = self.str()?;
                    fields.push((k, self.value()?));
                }
                Value::Struct(fields)
            }
            V_LOCAL_TIME => Value::LocalTime(LocalTime(self.i64()?)),
            V_TIME => Value::Time(Time {
                time: LocalTime(self.i64()?),
                offset: self.u32()? as i32,
            }),
            V_LOCAL_DATETIME => Value::LocalDateTime(LocalDateTime {
                date: Date(self.u32()? as i32),
                time: LocalTime(self.i64()?),
            }),
            V_DATETIME => {
                let local = LocalDateTime {
                    date: Date(self.u32()? as i32),
                    time: LocalTime(self.i64()?),
                };
                let offset = self.u32()? as i32;
                let name = self.str()?;
                let zone =
                    if name.is_empty() {
                        None
                    } else {
                        Some(ZoneId::parse(&name).ok_or_else(|| {
                            Error::corruption(format!("unknown time zone '{name}'"))
                        })?)
                    };
                Value::DateTime(DateTime {
                    local,
                    offset,
                    zone,
                })
            }
            V_DURATION => Value::Duration(Duration {
                months: self.u32()? as i32,
                days: self.u32()? as i32,
                seconds: self.i64()?,
                nanos: self.u32()? as i32,
            }),
            t => return Err(Error::corruption(format!("unknown value tag {t}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut e = Encoder::new();
        e.u32(7);
        e.str("héllo");
        e.ty(&LogicalType::List(Box::new(LogicalType::Int64)));
        e.f64(1.5);
        let buf = e.finish();
        let mut d = Decoder::new(&buf);
        assert_eq!(d.u32().unwrap(), 7);
        assert_eq!(d.str().unwrap(), "héllo");
        assert_eq!(
            d.ty().unwrap(),
            LogicalType::List(Box::new(LogicalType::Int64))
        );
        assert_eq!(d.f64().unwrap(), 1.5);
        assert!(d.is_done());
    }

    #[test]
    fn values_round_trip() {
        let values = vec![
            Value::Null,
            Value::Bool(true),
            Value::Int64(-5),
            Value::Int16(-3),
            Value::UInt8(200),
            Value::Float(1.25),
            Value::Double(f64::NAN),
            Value::String("x".into()),
            Value::Date(Date(19000)),
            Value::list(vec![Value::Int64(1), Value::list(vec![]), Value::Null]),
            Value::Map(vec![(Value::String("k".into()), Value::Double(2.5))]),
            Value::Struct(vec![("a".into(), Value::Bool(false))]),
        ];
        for v in values {
            let mut e = Encoder::new();
            e.value(&v).unwrap();
            let buf = e.finish();
            let back = Decoder::new(&buf).value().unwrap();
            // NaN != NaN: compare the printed forms.
            assert_eq!(format!("{back:?}"), format!("{v:?}"));
            for cut in 0..buf.len() {
                assert!(Decoder::new(&buf[..cut]).value().is_err());
            }
        }
        let id = Value::InternalId(crate::InternalId(3));
        assert!(Encoder::new().value(&id).is_err());
    }

    #[test]
    fn truncated_input_is_an_error() {
        let mut e = Encoder::new();
        e.str("abcdef");
        let buf = e.finish();
        for cut in 0..buf.len() {
            assert!(Decoder::new(&buf[..cut]).str().is_err());
        }
    }
}
