//! Column chunks: the values of one property for one node group (or one CSR
//! region), lightly compressed and stored in a run of pages.
//!
//! Encodings: `Constant` (no data pages), `Plain` fixed-width, `BitPacked`
//! frame-of-reference for integer-like types, and `Strings` (bit-packed end
//! offsets plus a byte heap). A chunk is immutable once written (shadow paging);
//! readers pin the whole chunk once ([`PinnedColumn`]) and then decode ranges
//! without further buffer-manager calls.

use std::sync::Arc;

use kith_common::codec::{Decoder, Encoder};
use kith_common::constants::PAGE_SIZE;
use kith_common::{
    Error, InternalId, Interval, LogicalType, PhysicalType, Result, Value, ValueVector, VectorData,
};
use kith_pager::{OwnedPin, PageIdx, Pager};

use crate::bitpack;

mod pinned;
pub use pinned::*;

/// A run of consecutive pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageRun {
    pub first: u32,
    pub count: u32,
}

impl PageRun {
    pub const EMPTY: PageRun = PageRun { first: 0, count: 0 };

    fn encode(&self, e: &mut Encoder) {
        e.u32(self.first);
        e.u32(self.count);
    }

    fn decode(d: &mut Decoder<'_>) -> Result<PageRun> {
        Ok(PageRun {
            first: d.u32()?,
            count: d.u32()?,
        })
    }

    /// Writes `bytes` to freshly allocated pages.
    pub fn write(pager: &Pager, bytes: &[u8]) -> Result<PageRun> {
        if bytes.is_empty() {
            return Ok(PageRun::EMPTY);
        }
        let count = u32::try_from(bytes.len().div_ceil(PAGE_SIZE))
            .map_err(|_| Error::internal("column chunk too large"))?;
        let first = pager.allocate(count)?;
        pager.write_pages(first, bytes)?;
        Ok(PageRun {
            first: first.0,
            count,
        })
    }

    pub fn pin(&self, pager: &Arc<Pager>) -> Result<Option<OwnedPin>> {
        if self.count == 0 {
            return Ok(None);
        }
        Ok(Some(pager.pin_owned(PageIdx(self.first), self.count)?))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Encoding {
    /// Every non-null value equals this one (bits of the fixed-width value, or
    /// the string).
    Constant(ConstValue),
    /// Little-endian fixed-width values.
    Plain,
    /// Order-preserving u64 keys stored as `key - base` in `bits` bits.
    BitPacked { base: u64, bits: u8 },
    /// End offsets (bit-packed chunk of `num_values` u64s) into the byte heap in `data`.
    Strings { ends: Box<ColumnChunk> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    Bits(u64),
    Str(String),
    Interval(Interval),
}

/// One stored column chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnChunk {
    /// Values of this part (the tail's come after them).
    pub num_values: u64,
    pub physical: PhysicalType,
    pub encoding: Encoding,
    pub data: PageRun,
    /// Null bitmap (bit set = NULL); absent when no value is NULL.
    pub nulls: Option<PageRun>,
    /// Values appended after this part, encoded on their own (a chunk that
    /// may have a smaller tail of its own): an append re-encodes only the
    /// last tail, not the whole chunk (see [`ColumnChunk::append`]).
    pub tail: Option<Box<ColumnChunk>>,
    /// Point updates not yet folded into the values (see [`Patch`]); only
    /// a top-level chunk has them, never a tail.
    pub patch: Option<Box<Patch>>,
}

/// Updated values of a chunk, kept beside it instead of rewriting it:
/// entry `k` replaces the value at position `positions[k]` (of the whole
/// chunk, tail included), a later entry for the same position winning.
/// Both lists grow by appends (tails), so a one-value SET writes a few
/// pages; readers index the entries when they pin the chunk (a sort of at
/// most [`PATCH_MAX`]) and apply them to every read. The chunk is written
/// whole, the updates in, when they would pass [`PATCH_MAX`], by an append
/// that folds, and at checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    /// Positions (U64), in update order.
    pub positions: ColumnChunk,
    /// The new values, of the chunk's type.
    pub values: ColumnChunk,
}

/// Values a chunk's tail holds at most (4096 rows; 8 under `kith_tiny`, so
/// small tests go through every level of tails and folds): an append that
/// would pass it rewrites the whole chunk as one part.
pub const TAIL_MAX: u64 = if kith_common::constants::NODE_GROUP_SIZE / 32 > 8 {
    kith_common::constants::NODE_GROUP_SIZE / 32
} else {
    8
};

/// Each level of tail holds at most 1/TAIL_FANOUT of the level above
/// (4096, then 64 rows; 8, 4, 2 under `kith_tiny`). A one-row append then
/// re-encodes about 32 rows of the last level and, amortised, 64 + 32 of
/// the folds above, instead of the whole node group.
pub const TAIL_FANOUT: u64 = if TAIL_MAX >= 64 * 64 { 64 } else { 2 };

/// Point updates a chunk keeps beside it at most (as many as a tail holds).
pub const PATCH_MAX: u64 = TAIL_MAX;

/// Bit of the metadata's physical-type byte that says a tail follows.
const TAIL_FLAG: u8 = 0x80;

/// Bit of the metadata's physical-type byte that says a patch follows (after
/// the tail).
const PATCH_FLAG: u8 = 0x40;

/// What [`ColumnChunk::append`] did.
#[derive(Debug)]
pub struct Appended {
    pub chunk: ColumnChunk,
    /// Page runs written (all belong to the new chunk).
    pub written: Vec<PageRun>,
    /// Page runs of the old chunk the new one no longer references.
    pub retired: Vec<PageRun>,
}

const SIGN_FLIP: u64 = 1 << 63;

fn physical_tag(p: PhysicalType) -> u8 {
    match p {
        PhysicalType::Bool => 0,
        PhysicalType::I8 => 1,
        PhysicalType::I16 => 2,
        PhysicalType::I32 => 3,
        PhysicalType::I64 => 4,
        PhysicalType::U8 => 5,
        PhysicalType::U16 => 6,
        PhysicalType::U32 => 7,
        PhysicalType::U64 => 8,
        PhysicalType::F32 => 9,
        PhysicalType::F64 => 10,
        PhysicalType::String => 11,
        PhysicalType::Interval => 12,
        PhysicalType::InternalId => 13,
        PhysicalType::Value => 14,
    }
}

fn physical_from_tag(t: u8) -> Result<PhysicalType> {
    Ok(match t {
        0 => PhysicalType::Bool,
        1 => PhysicalType::I8,
        2 => PhysicalType::I16,
        3 => PhysicalType::I32,
        4 => PhysicalType::I64,
        5 => PhysicalType::U8,
        6 => PhysicalType::U16,
        7 => PhysicalType::U32,
        8 => PhysicalType::U64,
        9 => PhysicalType::F32,
        10 => PhysicalType::F64,
        11 => PhysicalType::String,
        12 => PhysicalType::Interval,
        13 => PhysicalType::InternalId,
        14 => PhysicalType::Value,
        _ => return Err(Error::corruption(format!("unknown physical type tag {t}"))),
    })
}

/// Order-preserving u64 key of an integer-like slot, or None for other types.
/// Order-preserving unsigned keys of `data[start..start+count]` (integers).
fn int_keys(data: &VectorData, start: usize, count: usize) -> Option<Vec<u64>> {
    let r = start..start + count;
    Some(match data {
        VectorData::Bool(v) => v[r].iter().map(|&x| x as u64).collect(),
        VectorData::I8(v) => v[r]
            .iter()
            .map(|&x| (x as i64 as u64) ^ SIGN_FLIP)
            .collect(),
        VectorData::I16(v) => v[r]
            .iter()
            .map(|&x| (x as i64 as u64) ^ SIGN_FLIP)
            .collect(),
        VectorData::I32(v) => v[r]
            .iter()
            .map(|&x| (x as i64 as u64) ^ SIGN_FLIP)
            .collect(),
        VectorData::I64(v) => v[r].iter().map(|&x| (x as u64) ^ SIGN_FLIP).collect(),
        VectorData::U8(v) => v[r].iter().map(|&x| x as u64).collect(),
        VectorData::U16(v) => v[r].iter().map(|&x| x as u64).collect(),
        VectorData::U32(v) => v[r].iter().map(|&x| x as u64).collect(),
        VectorData::U64(v) => v[r].to_vec(),
        VectorData::Id(v) => v[r].iter().map(|x| x.0).collect(),
        _ => return None,
    })
}

/// Little-endian bytes of `data[start..start+count]` (fixed-width non-integers).
fn plain_bytes(data: &VectorData, start: usize, count: usize) -> Option<Vec<u8>> {
    let r = start..start + count;
    Some(match data {
        VectorData::F32(v) => bytemuck::cast_slice(&v[r]).to_vec(),
        VectorData::F64(v) => bytemuck::cast_slice(&v[r]).to_vec(),
        VectorData::Interval(v) => {
            let mut out = Vec::with_capacity(count * 16);
            for i in &v[r] {
                out.extend_from_slice(&i.months.to_le_bytes());
                out.extend_from_slice(&i.days.to_le_bytes());
                out.extend_from_slice(&i.micros.to_le_bytes());
            }
            out
        }
        _ => return None,
    })
}

fn words_to_bytes(words: &[u64]) -> &[u8] {
    bytemuck::cast_slice(words)
}

impl ColumnChunk {
    /// Encodes and writes `vector[start..start+count]` to fresh pages.
    pub fn write(
        pager: &Pager,
        vector: &ValueVector,
        start: usize,
        count: usize,
    ) -> Result<ColumnChunk> {
        let physical = vector.ty.physical();
        if physical == PhysicalType::Value && !matches!(vector.data, VectorData::Value(_)) {
            return Err(Error::internal(format!(
                "{} column given as a typed vector",
                vector.ty
            )));
        }
        // Null bitmap for the range.
        let mut null_words = vec![0u64; count.div_ceil(64)];
        let mut any_null = false;
        if vector.nulls.may_have_nulls() {
            for idx in 0..count {
                if vector.is_null(start + idx) {
                    null_words[idx / 64] |= 1 << (idx % 64);
                    any_null = true;
                }
            }
        }
        let nulls = if any_null {
            Some(PageRun::write(pager, words_to_bytes(&null_words))?)
        } else {
            None
        };
        let is_null = |idx: usize| any_null && (null_words[idx / 64] >> (idx % 64)) & 1 == 1;
        let (encoding, data) = match &vector.data {
            // Variant values: each one encoded (`Encoder::value`) into a byte
            // heap, laid out like strings.
            VectorData::Value(values) => {
                let mut e = Encoder::new();
                let mut ends = ValueVector::new(LogicalType::UInt64, count);
                if let VectorData::U64(out) = &mut ends.data {
                    for (idx, end) in out.iter_mut().enumerate() {
                        if !is_null(idx) {
                            e.value(&values[start + idx])?;
                        }
                        *end = e.buf.len() as u64;
                    }
                }
                let ends = ColumnChunk::write(pager, &ends, 0, count)?;
                (
                    Encoding::Strings {
                        ends: Box::new(ends),
                    },
                    PageRun::write(pager, &e.buf)?,
                )
            }
            VectorData::Str(strings) => {
                let first_valid = (0..count).find(|&i| !is_null(i));
                let constant = first_valid.is_some_and(|f| {
                    let s0 = strings.get(start + f);
                    (0..count).all(|i| is_null(i) || strings.get(start + i) == s0)
                });
                if let (true, Some(f)) = (constant, first_valid) {
                    (
                        Encoding::Constant(ConstValue::Str(strings.get(start + f).to_string())),
                        PageRun::EMPTY,
                    )
                } else {
                    let mut heap = Vec::new();
                    let mut ends = ValueVector::new(LogicalType::UInt64, count);
                    if let VectorData::U64(e) = &mut ends.data {
                        for (idx, end) in e.iter_mut().enumerate() {
                            if !is_null(idx) {
                                heap.extend_from_slice(strings.get(start + idx).as_bytes());
                            }
                            *end = heap.len() as u64;
                        }
                    }
                    let ends = ColumnChunk::write(pager, &ends, 0, count)?;
                    (
                        Encoding::Strings {
                            ends: Box::new(ends),
                        },
                        PageRun::write(pager, &heap)?,
                    )
                }
            }
            data => {
                if let Some(keys) = int_keys(data, start, count) {
                    let keys = &keys[..];
                    let mut min = u64::MAX;
                    let mut max = 0;
                    for (idx, &k) in keys.iter().enumerate() {
                        if !is_null(idx) {
                            min = min.min(k);
                            max = max.max(k);
                        }
                    }
                    if min >= max {
                        // All NULL, or one distinct value.
                        (
                            Encoding::Constant(ConstValue::Bits(if min > max { 0 } else { min })),
                            PageRun::EMPTY,
                        )
                    } else {
                        let bits = bitpack::bits_needed(max - min);
                        let words = bitpack::pack(
                            keys.iter()
                                .enumerate()
                                .map(|(idx, &k)| if is_null(idx) { 0 } else { k - min }),
                            count,
                            bits,
                        );
                        (
                            Encoding::BitPacked { base: min, bits },
                            PageRun::write(pager, words_to_bytes(&words))?,
                        )
                    }
                } else if let Some(bytes) = plain_bytes(data, start, count) {
                    let width = bytes.len() / count.max(1);
                    let slice = &bytes[..];
                    let first_valid = (0..count).find(|&i| !is_null(i));
                    let constant = first_valid.is_some_and(|f| {
                        let v0 = &slice[f * width..(f + 1) * width];
                        (0..count).all(|i| is_null(i) || &slice[i * width..(i + 1) * width] == v0)
                    });
                    match (constant, first_valid) {
                        (true, Some(f)) if width <= 8 => {
                            let mut b = [0u8; 8];
                            b[..width].copy_from_slice(&slice[f * width..(f + 1) * width]);
                            (
                                Encoding::Constant(ConstValue::Bits(u64::from_le_bytes(b))),
                                PageRun::EMPTY,
                            )
                        }
                        (_, None) => (Encoding::Constant(ConstValue::Bits(0)), PageRun::EMPTY),
                        _ => (Encoding::Plain, PageRun::write(pager, slice)?),
                    }
                } else {
                    return Err(Error::internal(format!("no encoding for {}", vector.ty)));
                }
            }
        };
        Ok(ColumnChunk {
            num_values: count as u64,
            physical,
            encoding,
            data,
            nulls,
            tail: None,
            patch: None,
        })
    }

    /// Point updates kept beside the values.
    pub fn num_patched(&self) -> u64 {
        self.patch.as_ref().map_or(0, |p| p.positions.len())
    }

    /// This chunk with the values at `positions` (ascending, each once)
    /// replaced by `values` (of logical type `ty`, one per position), on
    /// fresh pages: the updates are appended to the chunk's [`Patch`] while
    /// it stays within [`PATCH_MAX`]; otherwise the chunk is rewritten as
    /// one part with every update in.
    pub fn set_values(
        &self,
        pager: &Arc<Pager>,
        ty: &LogicalType,
        positions: &[u64],
        values: &ValueVector,
    ) -> Result<Appended> {
        let len = self.len();
        if positions.len() != values.len() || positions.iter().any(|&p| p >= len) {
            return Err(Error::internal(format!(
                "update of {} positions with {} values in a chunk of {len}",
                positions.len(),
                values.len()
            )));
        }
        if self.num_patched() + positions.len() as u64 > PATCH_MAX {
            return self.rewrite(pager, ty, |all| {
                for (k, &p) in positions.iter().enumerate() {
                    all.copy_from(p as usize, values, k);
                }
            });
        }
        let pos = ValueVector {
            ty: LogicalType::UInt64,
            data: VectorData::U64(positions.to_vec()),
            nulls: kith_common::NullMask::with_len(positions.len()),
        };
        let mut written = Vec::new();
        let mut retired = Vec::new();
        let patch = match &self.patch {
            None => {
                let patch = Patch {
                    positions: ColumnChunk::write(pager, &pos, 0, pos.len())?,
                    values: ColumnChunk::write(pager, values, 0, values.len())?,
                };
                patch.positions.pages(&mut written);
                patch.values.pages(&mut written);
                patch
            }
            Some(old) => {
                let mut patch = Patch {
                    positions: old.positions.clone(),
                    values: old.values.clone(),
                };
                for (chunk, ty, new) in [
                    (&mut patch.positions, &LogicalType::UInt64, &pos),
                    (&mut patch.values, ty, values),
                ] {
                    let a = chunk.append_within(pager, ty, new, TAIL_MAX)?;
                    written.extend(a.written);
                    retired.extend(a.retired);
                    *chunk = a.chunk;
                }
                patch
            }
        };
        let mut chunk = self.clone();
        chunk.patch = Some(Box::new(patch));
        Ok(Appended {
            chunk,
            written,
            retired,
        })
    }

    /// This chunk written as one part with its patch folded in; `None`
    /// when it has no patch.
    pub fn fold_patch(&self, pager: &Arc<Pager>, ty: &LogicalType) -> Result<Option<Appended>> {
        if self.patch.is_none() {
            return Ok(None);
        }
        self.rewrite(pager, ty, |_| {}).map(Some)
    }

    /// The chunk's values (patch applied), changed by `edit`, written as one
    /// new part; every page of this chunk is retired.
    fn rewrite(
        &self,
        pager: &Arc<Pager>,
        ty: &LogicalType,
        edit: impl FnOnce(&mut ValueVector),
    ) -> Result<Appended> {
        let n = self.len() as usize;
        let mut all = ValueVector::new(ty.clone(), n);
        self.pin(pager)?.read(0, n, &mut all, 0)?;
        edit(&mut all);
        let chunk = ColumnChunk::write(pager, &all, 0, all.len())?;
        let mut written = Vec::new();
        chunk.pages(&mut written);
        let mut retired = Vec::new();
        self.pages(&mut retired);
        Ok(Appended {
            chunk,
            written,
            retired,
        })
    }

    /// Values of the whole chunk, tail included.
    pub fn len(&self) -> u64 {
        self.num_values + self.tail.as_ref().map_or(0, |t| t.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// This chunk with `values[start..start+count]` (of logical type `ty`)
    /// appended, on fresh pages. The new values go into the tail while it
    /// stays within [`TAIL_MAX`] (and the main part holds at least that
    /// many): the tail is itself a chunk whose own tail holds at most
    /// 1/[`TAIL_FANOUT`] of that, so a one-row append re-encodes a few
    /// dozen rows, and each level is folded into the one above (rewritten
    /// as one part) only when it fills.
    pub fn append(
        &self,
        pager: &Arc<Pager>,
        ty: &LogicalType,
        values: &ValueVector,
        start: usize,
        count: usize,
    ) -> Result<Appended> {
        let idx: Vec<u64> = (start as u64..(start + count) as u64).collect();
        self.append_within(pager, ty, &values.gather(&idx), TAIL_MAX)
    }

    /// [`ColumnChunk::append`] of all of `new` with tails of at most
    /// `limit` values (0: none, the chunk is rewritten).
    fn append_within(
        &self,
        pager: &Arc<Pager>,
        ty: &LogicalType,
        new: &ValueVector,
        limit: u64,
    ) -> Result<Appended> {
        let count = new.len() as u64;
        let tail_len = self.tail.as_ref().map_or(0, |t| t.len());
        if limit > 0 && self.num_values >= limit && tail_len + count <= limit {
            let a = match &self.tail {
                None => {
                    let chunk = ColumnChunk::write(pager, new, 0, new.len())?;
                    let mut written = Vec::new();
                    chunk.pages(&mut written);
                    Appended {
                        chunk,
                        written,
                        retired: Vec::new(),
                    }
                }
                Some(t) => {
                    let sub = limit / TAIL_FANOUT;
                    t.append_within(pager, ty, new, if sub >= 2 { sub } else { 0 })?
                }
            };
            let mut whole = self.clone();
            whole.tail = Some(Box::new(a.chunk));
            return Ok(Appended {
                chunk: whole,
                written: a.written,
                retired: a.retired,
            });
        }
        // Fold: the whole chunk (patch applied) and the new values as one part.
        self.rewrite(pager, ty, |all| all.append(new))
    }

    /// Every page this chunk occupies (for freeing and free-space accounting).
    pub fn pages(&self, out: &mut Vec<PageRun>) {
        if self.data.count > 0 {
            out.push(self.data);
        }
        if let Some(n) = self.nulls {
            out.push(n);
        }
        if let Encoding::Strings { ends } = &self.encoding {
            ends.pages(out);
        }
        if let Some(t) = &self.tail {
            t.pages(out);
        }
        if let Some(p) = &self.patch {
            p.positions.pages(out);
            p.values.pages(out);
        }
    }

    /// Pins the whole chunk for repeated decoding.
    pub fn pin(&self, pager: &Arc<Pager>) -> Result<PinnedColumn> {
        let ends = match &self.encoding {
            Encoding::Strings { ends } => Some(Box::new(ends.pin(pager)?)),
            _ => None,
        };
        Ok(PinnedColumn {
            chunk: self.clone(),
            data: self.data.pin(pager)?,
            nulls: self.nulls.map(|n| n.pin(pager)).transpose()?.flatten(),
            ends,
            tail: self
                .tail
                .as_ref()
                .map(|t| t.pin(pager).map(Box::new))
                .transpose()?,
            patch: match &self.patch {
                None => None,
                Some(p) => Some(Box::new(PinnedPatch::new(
                    &p.positions.pin(pager)?,
                    p.values.pin(pager)?,
                )?)),
            },
        })
    }

    pub fn encode(&self, e: &mut Encoder) {
        e.u64(self.num_values);
        let mut flags = 0;
        if self.tail.is_some() {
            flags |= TAIL_FLAG;
        }
        if self.patch.is_some() {
            flags |= PATCH_FLAG;
        }
        e.u8(physical_tag(self.physical) | flags);
        self.data.encode(e);
        match self.nulls {
            Some(n) => {
                e.u8(1);
                n.encode(e);
            }
            None => e.u8(0),
        }
        match &self.encoding {
            Encoding::Constant(c) => {
                e.u8(0);
                match c {
                    ConstValue::Bits(b) => {
                        e.u8(0);
                        e.u64(*b);
                    }
                    ConstValue::Str(s) => {
                        e.u8(1);
                        e.str(s);
                    }
                    ConstValue::Interval(i) => {
                        e.u8(2);
                        e.u32(i.months as u32);
                        e.u32(i.days as u32);
                        e.i64(i.micros);
                    }
                }
            }
            Encoding::Plain => e.u8(1),
            Encoding::BitPacked { base, bits } => {
                e.u8(2);
                e.u64(*base);
                e.u8(*bits);
            }
            Encoding::Strings { ends } => {
                e.u8(3);
                ends.encode(e);
            }
        }
        if let Some(t) = &self.tail {
            t.encode(e);
        }
        if let Some(p) = &self.patch {
            p.positions.encode(e);
            p.values.encode(e);
        }
    }

    pub fn decode(d: &mut Decoder<'_>) -> Result<ColumnChunk> {
        let num_values = d.u64()?;
        let tag = d.u8()?;
        let physical = physical_from_tag(tag & !(TAIL_FLAG | PATCH_FLAG))?;
        let data = PageRun::decode(d)?;
        let nulls = match d.u8()? {
            0 => None,
            _ => Some(PageRun::decode(d)?),
        };
        let encoding = match d.u8()? {
            0 => Encoding::Constant(match d.u8()? {
                0 => ConstValue::Bits(d.u64()?),
                1 => ConstValue::Str(d.str()?),
                _ => ConstValue::Interval(Interval {
                    months: d.u32()? as i32,
                    days: d.u32()? as i32,
                    micros: d.i64()?,
                }),
            }),
            1 => Encoding::Plain,
            2 => Encoding::BitPacked {
                base: d.u64()?,
                bits: d.u8()?,
            },
            3 => Encoding::Strings {
                ends: Box::new(ColumnChunk::decode(d)?),
            },
            t => return Err(Error::corruption(format!("unknown column encoding {t}"))),
        };
        let tail = if tag & TAIL_FLAG != 0 {
            Some(Box::new(ColumnChunk::decode(d)?))
        } else {
            None
        };
        let patch = if tag & PATCH_FLAG != 0 {
            Some(Box::new(Patch {
                positions: ColumnChunk::decode(d)?,
                values: ColumnChunk::decode(d)?,
            }))
        } else {
            None
        };
        Ok(ColumnChunk {
            num_values,
            physical,
            encoding,
            data,
            nulls,
            tail,
            patch,
        })
    }
}

#[cfg(test)]
mod tests;
