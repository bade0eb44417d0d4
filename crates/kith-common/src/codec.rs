//! A small explicit binary encoding for metadata that is persisted (catalog,
//! table metadata, WAL records): little-endian fixed-width integers, length-
//! prefixed strings and byte strings. Decoding never panics: truncated or bad
//! input is a corruption error.

use crate::error::{Error, Result};
use crate::types::LogicalType;

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
    fn truncated_input_is_an_error() {
        let mut e = Encoder::new();
        e.str("abcdef");
        let buf = e.finish();
        for cut in 0..buf.len() {
            assert!(Decoder::new(&buf[..cut]).str().is_err());
        }
    }
}
