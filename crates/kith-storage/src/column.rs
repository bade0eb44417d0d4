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

/// A column chunk pinned on its first read: a reader that may never touch
/// it pays no pins for it. An extend that only counts degrees reads a CSR
/// group's offsets, never its neighbours or rel ids, which are most of its
/// pages, and every worker pins the groups it reads for itself.
pub struct LazyPinnedColumn {
    chunk: ColumnChunk,
    pinned: std::sync::OnceLock<PinnedColumn>,
}

impl LazyPinnedColumn {
    pub fn new(chunk: &ColumnChunk) -> LazyPinnedColumn {
        LazyPinnedColumn {
            chunk: chunk.clone(),
            pinned: std::sync::OnceLock::new(),
        }
    }

    /// The values in the chunk (its tail included), without pinning it.
    pub fn num_values(&self) -> u64 {
        self.chunk.len()
    }

    /// Whether the pages are pinned yet (for tests).
    pub fn is_pinned(&self) -> bool {
        self.pinned.get().is_some()
    }

    /// The pinned chunk, pinning it on the first call.
    #[inline]
    pub fn get(&self, pager: &Arc<Pager>) -> Result<&PinnedColumn> {
        if let Some(p) = self.pinned.get() {
            return Ok(p);
        }
        self.pin(pager)
    }

    #[inline(never)]
    fn pin(&self, pager: &Arc<Pager>) -> Result<&PinnedColumn> {
        let p = self.chunk.pin(pager)?;
        Ok(self.pinned.get_or_init(|| p))
    }
}

/// A column chunk whose pages are pinned: decoding makes no buffer-manager calls.
pub struct PinnedColumn {
    chunk: ColumnChunk,
    data: Option<OwnedPin>,
    nulls: Option<OwnedPin>,
    ends: Option<Box<PinnedColumn>>,
    /// The chunk's tail: values `chunk.num_values..`.
    tail: Option<Box<PinnedColumn>>,
    patch: Option<Box<PinnedPatch>>,
}

/// A pinned [`Patch`], indexed by position.
struct PinnedPatch {
    /// The patched positions, ascending, each once.
    positions: Vec<u64>,
    /// For each position, the entry of `values` with its newest value.
    slots: Vec<u64>,
    values: PinnedColumn,
}

impl PinnedPatch {
    fn new(positions: &PinnedColumn, values: PinnedColumn) -> Result<PinnedPatch> {
        let n = positions.num_values();
        if n != values.num_values() {
            return Err(Error::corruption(format!(
                "a column patch lists {n} positions and {} values",
                values.num_values()
            )));
        }
        let mut raw = vec![0u64; n as usize];
        positions.read_u64s(0, raw.len(), &mut raw);
        let mut order: Vec<(u64, u64)> = raw.into_iter().zip(0..n).collect();
        // Stable by position, so the last entry of a position comes last.
        order.sort_by_key(|&(p, _)| p);
        let mut patch = PinnedPatch {
            positions: Vec::with_capacity(order.len()),
            slots: Vec::with_capacity(order.len()),
            values,
        };
        for (p, k) in order {
            if patch.positions.last() == Some(&p) {
                if let Some(s) = patch.slots.last_mut() {
                    *s = k;
                }
            } else {
                patch.positions.push(p);
                patch.slots.push(k);
            }
        }
        Ok(patch)
    }

    /// The entries for positions `start..start + count`.
    #[inline]
    fn within(&self, start: u64, count: u64) -> std::ops::Range<usize> {
        let a = self.positions.partition_point(|&p| p < start);
        let b = a + self.positions[a..].partition_point(|&p| p < start + count);
        a..b
    }
}

/// See [`PinnedColumn::packed_u64s`].
#[derive(Debug, Clone, Copy)]
pub struct PackedU64s<'a> {
    words: &'a [u64],
    base: u64,
    bits: u32,
    mask: u64,
}

impl PackedU64s<'_> {
    /// Value `i` (as [`PinnedColumn::read_u64s`] reads it); a position
    /// beyond the column reads a meaningless value, never out of bounds.
    #[inline]
    pub fn get(&self, i: u64) -> u64 {
        let v = bitpack::field_at(self.words, i.wrapping_mul(u64::from(self.bits)));
        self.base.wrapping_add(v & self.mask)
    }
}

fn as_words(pin: &Option<OwnedPin>) -> &[u64] {
    match pin {
        // Pages are page-aligned in the buffer pool, so the cast cannot fail on
        // alignment; an empty slice results only for an empty run.
        Some(p) => bytemuck::try_cast_slice(&p[..]).unwrap_or(&[]),
        None => &[],
    }
}

macro_rules! decode_keys {
    ($out:expr, $base:expr, $bits:expr, $words:expr, $start:expr, $count:expr, $pos:expr, $conv:expr) => {{
        let out = &mut $out[$pos..$pos + $count];
        let base = $base;
        bitpack::unpack_range($words, $bits, $start, $count, |idx, deltas| {
            for (o, &d) in out[idx..idx + deltas.len()].iter_mut().zip(deltas) {
                *o = $conv(base.wrapping_add(d));
            }
        });
    }};
}

impl PinnedColumn {
    /// Values of the chunk, tail included.
    pub fn num_values(&self) -> u64 {
        self.chunk.num_values + self.tail.as_ref().map_or(0, |t| t.num_values())
    }

    #[inline]
    pub fn is_null(&self, idx: u64) -> bool {
        if let Some(p) = &self.patch {
            if let Ok(k) = p.positions.binary_search(&idx) {
                return p.values.is_null(p.slots[k]);
            }
        }
        self.stored_is_null(idx)
    }

    /// [`PinnedColumn::is_null`] of the stored value (patch not applied).
    #[inline]
    fn stored_is_null(&self, idx: u64) -> bool {
        if idx >= self.chunk.num_values {
            return self
                .tail
                .as_ref()
                .is_some_and(|t| t.is_null(idx - self.chunk.num_values));
        }
        let words = as_words(&self.nulls);
        !words.is_empty() && (words[(idx / 64) as usize] >> (idx % 64)) & 1 == 1
    }

    /// Decodes values `start..start+count` into `out[out_pos..]` (which must be
    /// long enough), setting nulls.
    pub fn read(
        &self,
        start: u64,
        count: usize,
        out: &mut ValueVector,
        out_pos: usize,
    ) -> Result<()> {
        self.read_stored(start, count, out, out_pos)?;
        if let Some(p) = &self.patch {
            for k in p.within(start, count as u64) {
                let at = out_pos + (p.positions[k] - start) as usize;
                p.values.read(p.slots[k], 1, out, at)?;
            }
        }
        Ok(())
    }

    /// [`PinnedColumn::read`] of the stored values (patch not applied).
    fn read_stored(
        &self,
        start: u64,
        count: usize,
        out: &mut ValueVector,
        out_pos: usize,
    ) -> Result<()> {
        let main = self.chunk.num_values;
        let Some(tail) = &self.tail else {
            return self.read_part(start, count, out, out_pos);
        };
        if start + count as u64 > main + tail.num_values() {
            return Err(Error::internal(format!(
                "read of rows {start}..{} beyond chunk of {}",
                start + count as u64,
                main + tail.num_values()
            )));
        }
        if start >= main {
            return tail.read(start - main, count, out, out_pos);
        }
        let here = count.min((main - start) as usize);
        self.read_part(start, here, out, out_pos)?;
        if count > here {
            tail.read(0, count - here, out, out_pos + here)?;
        }
        Ok(())
    }

    /// [`PinnedColumn::read`] within this part (not the tail).
    fn read_part(
        &self,
        start: u64,
        count: usize,
        out: &mut ValueVector,
        out_pos: usize,
    ) -> Result<()> {
        if start + count as u64 > self.chunk.num_values {
            return Err(Error::internal(format!(
                "read of rows {start}..{} beyond chunk of {}",
                start + count as u64,
                self.chunk.num_values
            )));
        }
        if self.nulls.is_some() {
            for idx in 0..count {
                out.set_null(out_pos + idx, self.stored_is_null(start + idx as u64));
            }
        } else if out.nulls.may_have_nulls() {
            for idx in 0..count {
                out.set_null(out_pos + idx, false);
            }
        }
        match &self.chunk.encoding {
            Encoding::Constant(c) => self.fill_constant(c, count, out, out_pos),
            Encoding::BitPacked { base, bits } => {
                let words = as_words(&self.data);
                self.decode_bitpacked(*base, *bits, words, start, count, out, out_pos)
            }
            Encoding::Plain => {
                let bytes: &[u8] = self.data.as_deref().unwrap_or(&[]);
                match &mut out.data {
                    VectorData::F64(o) => {
                        let src: &[f64] = bytemuck::try_cast_slice(bytes)
                            .map_err(|_| Error::internal("misaligned f64 chunk"))?;
                        o[out_pos..out_pos + count]
                            .copy_from_slice(&src[start as usize..start as usize + count]);
                    }
                    VectorData::F32(o) => {
                        let src: &[f32] = bytemuck::try_cast_slice(bytes)
                            .map_err(|_| Error::internal("misaligned f32 chunk"))?;
                        o[out_pos..out_pos + count]
                            .copy_from_slice(&src[start as usize..start as usize + count]);
                    }
                    VectorData::Interval(o) => {
                        for idx in 0..count {
                            let at = (start as usize + idx) * 16;
                            let b = &bytes[at..at + 16];
                            o[out_pos + idx] = Interval {
                                months: i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                                days: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                                micros: i64::from_le_bytes([
                                    b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15],
                                ]),
                            };
                        }
                    }
                    _ => return Err(Error::internal("plain chunk read into wrong vector type")),
                }
                Ok(())
            }
            Encoding::Strings { .. } => {
                let ends = self
                    .ends
                    .as_ref()
                    .ok_or_else(|| Error::internal("string chunk without ends"))?;
                // `e[i]..e[i + 1]` is value `start + i` in the heap; a read
                // of a few values (property lookups by id) needs no
                // allocation.
                let mut small = [0u64; 17];
                let mut large;
                let e: &mut [u64] = if count < small.len() {
                    &mut small[..count + 1]
                } else {
                    large = vec![0u64; count + 1];
                    &mut large
                };
                if start == 0 {
                    ends.read_u64s(0, count, &mut e[1..]);
                } else {
                    ends.read_u64s(start - 1, count + 1, e);
                }
                let e = &*e;
                let heap: &[u8] = self.data.as_deref().unwrap_or(&[]);
                if let VectorData::Value(o) = &mut out.data {
                    for idx in 0..count {
                        let bytes = &heap[e[idx] as usize..e[idx + 1] as usize];
                        o[out_pos + idx] = if bytes.is_empty() {
                            Value::Null
                        } else {
                            Decoder::new(bytes).value()?
                        };
                    }
                    return Ok(());
                }
                let VectorData::Str(o) = &mut out.data else {
                    return Err(Error::internal("string chunk read into wrong vector type"));
                };
                for idx in 0..count {
                    let bytes = &heap[e[idx] as usize..e[idx + 1] as usize];
                    let s = std::str::from_utf8(bytes)
                        .map_err(|_| Error::corruption("invalid UTF-8 in string column"))?;
                    o.set(out_pos + idx, s);
                }
                Ok(())
            }
        }
    }

    fn fill_constant(
        &self,
        c: &ConstValue,
        count: usize,
        out: &mut ValueVector,
        pos: usize,
    ) -> Result<()> {
        let range = pos..pos + count;
        match (c, &mut out.data) {
            (ConstValue::Str(s), VectorData::Str(o)) => {
                for idx in range {
                    o.set(idx, s);
                }
            }
            (ConstValue::Interval(i), VectorData::Interval(o)) => o[range].fill(*i),
            (ConstValue::Bits(b), data) => {
                let b = *b;
                match data {
                    VectorData::Bool(o) => o[range].fill(b != 0),
                    VectorData::I8(o) => o[range].fill((b ^ SIGN_FLIP) as i64 as i8),
                    VectorData::I16(o) => o[range].fill((b ^ SIGN_FLIP) as i64 as i16),
                    VectorData::I32(o) => o[range].fill((b ^ SIGN_FLIP) as i64 as i32),
                    VectorData::I64(o) => o[range].fill((b ^ SIGN_FLIP) as i64),
                    VectorData::U8(o) => o[range].fill(b as u8),
                    VectorData::U16(o) => o[range].fill(b as u16),
                    VectorData::U32(o) => o[range].fill(b as u32),
                    VectorData::U64(o) => o[range].fill(b),
                    VectorData::Id(o) => o[range].fill(InternalId(b)),
                    VectorData::F32(o) => o[range].fill(f32::from_bits(b as u32)),
                    VectorData::F64(o) => o[range].fill(f64::from_bits(b)),
                    _ => {
                        return Err(Error::internal(
                            "constant chunk read into wrong vector type",
                        ))
                    }
                }
            }
            _ => {
                return Err(Error::internal(
                    "constant chunk read into wrong vector type",
                ))
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn decode_bitpacked(
        &self,
        base: u64,
        bits: u8,
        words: &[u64],
        start: u64,
        count: usize,
        out: &mut ValueVector,
        pos: usize,
    ) -> Result<()> {
        let signed = |k: u64| (k ^ SIGN_FLIP) as i64;
        match &mut out.data {
            VectorData::Bool(o) => {
                decode_keys!(o, base, bits, words, start, count, pos, |k: u64| k != 0)
            }
            VectorData::I8(o) => {
                decode_keys!(o, base, bits, words, start, count, pos, |k| signed(k) as i8)
            }
            VectorData::I16(o) => {
                decode_keys!(o, base, bits, words, start, count, pos, |k| signed(k)
                    as i16)
            }
            VectorData::I32(o) => {
                decode_keys!(o, base, bits, words, start, count, pos, |k| signed(k)
                    as i32)
            }
            VectorData::I64(o) => bitpack::unpack_range_into(
                words,
                bits,
                start,
                base,
                SIGN_FLIP,
                bytemuck::cast_slice_mut(&mut o[pos..pos + count]),
            ),
            VectorData::U8(o) => decode_keys!(o, base, bits, words, start, count, pos, |k| k as u8),
            VectorData::U16(o) => {
                decode_keys!(o, base, bits, words, start, count, pos, |k| k as u16)
            }
            VectorData::U32(o) => {
                decode_keys!(o, base, bits, words, start, count, pos, |k| k as u32)
            }
            VectorData::U64(o) => {
                bitpack::unpack_range_into(words, bits, start, base, 0, &mut o[pos..pos + count])
            }
            VectorData::Id(o) => decode_keys!(o, base, bits, words, start, count, pos, InternalId),
            _ => {
                return Err(Error::internal(
                    "bit-packed chunk read into wrong vector type",
                ))
            }
        }
        Ok(())
    }

    /// Reads the values at `rows` (any order, repeats allowed) into
    /// `out[at[i]]`, setting nulls: the property reads of the nodes an
    /// extend reached. A plain or bit-packed part without tail or patch is
    /// read in one tight loop (one shift and mask per value, no call per
    /// value); anything else value by value through [`PinnedColumn::read`].
    pub fn gather(&self, rows: &[u64], out: &mut ValueVector, at: &[usize]) -> Result<()> {
        debug_assert_eq!(rows.len(), at.len());
        if self.tail.is_some() || self.patch.is_some() || !self.gathers(out) {
            // `read` checks each row's bounds.
            for (&r, &p) in rows.iter().zip(at) {
                self.read(r, 1, out, p)?;
            }
            return Ok(());
        }
        let n = self.chunk.num_values;
        let beyond = |row: u64| Error::internal(format!("read of row {row} beyond chunk of {n}"));
        match &self.chunk.encoding {
            Encoding::BitPacked { base, bits } => {
                let words = as_words(&self.data);
                let (base, bits) = (*base, *bits);
                let signed = |k: u64| (k ^ SIGN_FLIP) as i64;
                macro_rules! gather_into {
                    ($o:expr, $conv:expr) => {
                        bitpack::gather_into(words, bits, base, rows, at, &mut $o[..], $conv)
                    };
                }
                let largest = match &mut out.data {
                    VectorData::Bool(o) => gather_into!(o, |k: u64| k != 0),
                    VectorData::I8(o) => gather_into!(o, |k| signed(k) as i8),
                    VectorData::I16(o) => gather_into!(o, |k| signed(k) as i16),
                    VectorData::I32(o) => gather_into!(o, |k| signed(k) as i32),
                    VectorData::I64(o) => gather_into!(o, signed),
                    VectorData::U8(o) => gather_into!(o, |k| k as u8),
                    VectorData::U16(o) => gather_into!(o, |k| k as u16),
                    VectorData::U32(o) => gather_into!(o, |k| k as u32),
                    VectorData::U64(o) => gather_into!(o, |k| k),
                    VectorData::Id(o) => gather_into!(o, InternalId),
                    _ => {
                        return Err(Error::internal(
                            "bit-packed chunk read into wrong vector type",
                        ))
                    }
                };
                if !rows.is_empty() && largest >= n {
                    return Err(beyond(largest));
                }
            }
            Encoding::Plain => {
                if let Some(&bad) = rows.iter().find(|&&r| r >= n) {
                    return Err(beyond(bad));
                }
                let bytes: &[u8] = self.data.as_deref().unwrap_or(&[]);
                match &mut out.data {
                    VectorData::F64(o) => {
                        let src: &[f64] = bytemuck::try_cast_slice(bytes)
                            .map_err(|_| Error::internal("misaligned f64 chunk"))?;
                        for (&r, &p) in rows.iter().zip(at) {
                            o[p] = src[r as usize];
                        }
                    }
                    VectorData::F32(o) => {
                        let src: &[f32] = bytemuck::try_cast_slice(bytes)
                            .map_err(|_| Error::internal("misaligned f32 chunk"))?;
                        for (&r, &p) in rows.iter().zip(at) {
                            o[p] = src[r as usize];
                        }
                    }
                    _ => return Err(Error::internal("plain chunk read into wrong vector type")),
                }
            }
            _ => return Err(Error::internal("gather of an encoding without a fast path")),
        }
        // Every row is in bounds by now.
        if self.nulls.is_some() {
            let words = as_words(&self.nulls);
            for (&r, &p) in rows.iter().zip(at) {
                let null = !words.is_empty() && (words[(r / 64) as usize] >> (r % 64)) & 1 == 1;
                out.set_null(p, null);
            }
        } else if out.nulls.may_have_nulls() {
            for &p in at {
                out.set_null(p, false);
            }
        }
        Ok(())
    }

    /// Whether [`PinnedColumn::gather`]'s loop serves this part and `out`.
    fn gathers(&self, out: &ValueVector) -> bool {
        match &self.chunk.encoding {
            Encoding::BitPacked { .. } => !matches!(
                out.data,
                VectorData::F32(_)
                    | VectorData::F64(_)
                    | VectorData::Str(_)
                    | VectorData::Value(_)
                    | VectorData::Interval(_)
            ),
            Encoding::Plain => matches!(out.data, VectorData::F32(_) | VectorData::F64(_)),
            _ => false,
        }
    }

    /// Direct access to the unsigned values of a bit-packed or constant
    /// column without patches or a tail (the common case of a CSR
    /// column): one value costs a shift and a mask instead of a call
    /// through [`PinnedColumn::read_u64s`], for readers that stop early.
    pub fn packed_u64s(&self) -> Option<PackedU64s<'_>> {
        if self.tail.is_some() || self.patch.is_some() {
            return None;
        }
        match &self.chunk.encoding {
            Encoding::BitPacked { base, bits } => Some(PackedU64s {
                words: as_words(&self.data),
                base: *base,
                bits: u32::from(*bits).min(64),
                mask: if *bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                },
            }),
            Encoding::Constant(ConstValue::Bits(b)) => Some(PackedU64s {
                words: &[],
                base: *b,
                bits: 0,
                mask: 0,
            }),
            _ => None,
        }
    }

    /// Decodes unsigned values `start..start+count` into `out` (for CSR offsets
    /// and neighbour lists stored as U64 columns).
    #[inline]
    pub fn read_u64s(&self, start: u64, count: usize, out: &mut [u64]) {
        self.read_stored_u64s(start, count, out);
        if let Some(p) = &self.patch {
            for k in p.within(start, count as u64) {
                let at = (p.positions[k] - start) as usize;
                p.values.read_u64s(p.slots[k], 1, &mut out[at..at + 1]);
            }
        }
    }

    #[inline]
    fn read_stored_u64s(&self, start: u64, count: usize, out: &mut [u64]) {
        if let Some(tail) = &self.tail {
            let main = self.chunk.num_values;
            if start >= main {
                return tail.read_u64s(start - main, count, out);
            }
            let here = count.min((main - start) as usize);
            if count > here {
                tail.read_u64s(0, count - here, &mut out[here..]);
            }
            return self.read_part_u64s(start, here, out);
        }
        self.read_part_u64s(start, count, out)
    }

    #[inline]
    fn read_part_u64s(&self, start: u64, count: usize, out: &mut [u64]) {
        match &self.chunk.encoding {
            Encoding::BitPacked { base, bits } => {
                let words = as_words(&self.data);
                let base = *base;
                bitpack::unpack_range_into(words, *bits, start, base, 0, &mut out[..count]);
            }
            Encoding::Constant(ConstValue::Bits(b)) => out[..count].fill(*b),
            _ => {
                debug_assert!(false, "read_u64s on a non-integer chunk");
                out[..count].fill(0);
            }
        }
    }

    /// One unsigned value (CSR offsets).
    #[inline]
    pub fn get_u64(&self, idx: u64) -> u64 {
        let mut v = [0u64; 1];
        self.read_u64s(idx, 1, &mut v);
        v[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::Value;
    use kith_pager::PagerConfig;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// `gather` of rows in a scrambled order with repeats, into scattered
    /// positions over stale values, reads what `read` of the whole column
    /// (`whole`) read.
    fn check_gather(pinned: &PinnedColumn, whole: &ValueVector) {
        let n = whole.len();
        if n == 0 {
            return;
        }
        let rows: Vec<u64> = (0..2 * n as u64)
            .map(|i| (i * 7919 + 3) % n as u64)
            .collect();
        let at: Vec<usize> = (0..rows.len()).rev().collect();
        let mut out = ValueVector::new(whole.ty.clone(), rows.len());
        // Stale values and nulls where the gather writes.
        for p in 0..rows.len() {
            out.copy_from(p, whole, (p * 13) % n);
        }
        pinned.gather(&rows, &mut out, &at).unwrap();
        for (&r, &p) in rows.iter().zip(&at) {
            assert_eq!(out.get_value(p), whole.get_value(r as usize), "row {r}");
        }
        assert!(pinned.gather(&[n as u64 + 4], &mut out, &[0]).is_err());
    }

    fn round_trip(ty: LogicalType, values: &[Option<Value>], start: usize) {
        let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
        let mut v = ValueVector::new(ty.clone(), values.len());
        for (i, x) in values.iter().enumerate() {
            v.set_value(i, x.as_ref().unwrap_or(&Value::Null));
        }
        let start = start.min(values.len());
        let count = values.len() - start;
        let chunk = ColumnChunk::write(&pager, &v, start, count).unwrap();
        // Through the metadata codec too.
        let mut e = Encoder::new();
        chunk.encode(&mut e);
        let bytes = e.finish();
        let chunk = ColumnChunk::decode(&mut Decoder::new(&bytes)).unwrap();
        let pinned = chunk.pin(&pager).unwrap();
        let mut out = ValueVector::new(ty, count);
        pinned.read(0, count, &mut out, 0).unwrap();
        for i in 0..count {
            let want = values[start + i].clone().unwrap_or(Value::Null);
            assert_eq!(out.get_value(i), want, "position {i}");
            assert_eq!(pinned.is_null(i as u64), want.is_null());
        }
        check_gather(&pinned, &out);
        // Partial reads at an offset.
        if count > 2 {
            let mut part = ValueVector::new(out.ty.clone(), 2);
            pinned.read(1, 2, &mut part, 0).unwrap();
            assert_eq!(
                part.get_value(1),
                values[start + 2].clone().unwrap_or(Value::Null)
            );
        }
    }

    proptest! {
        #[test]
        fn int64_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, any::<i64>()), 0..300), s in 0usize..10) {
            let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Int64)).collect();
            round_trip(LogicalType::Int64, &vals, s);
        }

        #[test]
        fn small_int32_round_trip(v in prop::collection::vec(prop::option::weighted(0.9, -5i32..5), 0..300), s in 0usize..10) {
            let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Int32)).collect();
            round_trip(LogicalType::Int32, &vals, s);
        }

        #[test]
        fn double_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, -1e9f64..1e9), 0..300), s in 0usize..10) {
            let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Double)).collect();
            round_trip(LogicalType::Double, &vals, s);
        }

        #[test]
        fn string_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, "[a-zé]{0,12}"), 0..200), s in 0usize..10) {
            let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::String)).collect();
            round_trip(LogicalType::String, &vals, s);
        }

        #[test]
        fn variant_round_trip(v in prop::collection::vec(prop::option::weighted(0.8, prop_oneof![
            any::<i64>().prop_map(Value::Int64),
            "[a-z]{0,6}".prop_map(Value::String),
            any::<bool>().prop_map(Value::Bool),
            prop::collection::vec(any::<i32>().prop_map(|x| Value::Int64(x.into())), 0..4).prop_map(Value::list),
        ]), 0..200), s in 0usize..10) {
            round_trip(LogicalType::Any, &v, s);
        }

        #[test]
        fn bool_round_trip(v in prop::collection::vec(prop::option::of(any::<bool>()), 0..200), s in 0usize..10) {
            let vals: Vec<Option<Value>> = v.into_iter().map(|x| x.map(Value::Bool)).collect();
            round_trip(LogicalType::Bool, &vals, s);
        }
    }

    /// One step of a chunk's life.
    #[derive(Debug, Clone)]
    enum ChunkOp {
        /// Append these values (as auto-commit inserts do).
        Append(Vec<Option<Value>>),
        /// Set these positions (modulo the length; a position may repeat,
        /// the last value wins) to these values, as a SET does.
        Set(Vec<(usize, Option<Value>)>),
        /// Fold the patch in, as a checkpoint does.
        Fold,
    }

    /// Applies `ops` one at a time: the chunk (main part, tails folded when
    /// they fill, patch folded when it fills) always reads back as the
    /// reference values, whole and from any offset, through the metadata
    /// codec, and the runs each step reports as written and retired
    /// account for the old and new chunks' pages.
    fn chunk_sequence(ty: LogicalType, ops: &[ChunkOp]) {
        let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
        let empty = ValueVector::new(ty.clone(), 0);
        let mut chunk = ColumnChunk::write(&pager, &empty, 0, 0).unwrap();
        let mut all: Vec<Option<Value>> = Vec::new();
        let mut saw_tail = false;
        let vector = |values: &[Option<Value>]| {
            let mut v = ValueVector::new(ty.clone(), values.len());
            for (i, x) in values.iter().enumerate() {
                v.set_value(i, x.as_ref().unwrap_or(&Value::Null));
            }
            v
        };
        for op in ops {
            let a = match op {
                ChunkOp::Append(b) => {
                    all.extend(b.iter().cloned());
                    chunk.append(&pager, &ty, &vector(b), 0, b.len()).unwrap()
                }
                ChunkOp::Set(_) if all.is_empty() => continue,
                ChunkOp::Set(sets) => {
                    let mut last = BTreeMap::new();
                    for (p, v) in sets {
                        last.insert((p % all.len()) as u64, v.clone());
                    }
                    for (&p, v) in &last {
                        all[p as usize] = v.clone();
                    }
                    let positions: Vec<u64> = last.keys().copied().collect();
                    let values: Vec<Option<Value>> = last.into_values().collect();
                    chunk
                        .set_values(&pager, &ty, &positions, &vector(&values))
                        .unwrap()
                }
                ChunkOp::Fold => match chunk.fold_patch(&pager, &ty).unwrap() {
                    Some(a) => {
                        assert!(a.chunk.patch.is_none());
                        a
                    }
                    None => continue,
                },
            };
            let (mut old, mut new) = (Vec::new(), Vec::new());
            chunk.pages(&mut old);
            a.chunk.pages(&mut new);
            for r in &a.written {
                assert!(new.contains(r) && !old.contains(r), "written run {r:?}");
            }
            for r in &a.retired {
                assert!(old.contains(r) && !new.contains(r), "retired run {r:?}");
            }
            for r in &new {
                assert!(
                    old.contains(r) || a.written.contains(r),
                    "unaccounted {r:?}"
                );
            }
            chunk = a.chunk;
            assert!(chunk.num_patched() <= PATCH_MAX);
            saw_tail |= chunk.tail.as_ref().is_some_and(|t| t.tail.is_some());
            let mut e = Encoder::new();
            chunk.encode(&mut e);
            let bytes = e.finish();
            let chunk = ColumnChunk::decode(&mut Decoder::new(&bytes)).unwrap();
            assert_eq!(chunk.len(), all.len() as u64);
            let pinned = chunk.pin(&pager).unwrap();
            assert_eq!(pinned.num_values(), all.len() as u64);
            let mut whole = ValueVector::new(ty.clone(), all.len());
            pinned.read(0, all.len(), &mut whole, 0).unwrap();
            check_gather(&pinned, &whole);
            for from in [0, all.len() / 3, all.len().saturating_sub(1)] {
                let n = all.len() - from;
                let mut out = ValueVector::new(ty.clone(), n);
                pinned.read(from as u64, n, &mut out, 0).unwrap();
                for i in 0..n {
                    let want = all[from + i].clone().unwrap_or(Value::Null);
                    assert_eq!(
                        out.get_value(i),
                        want,
                        "value {} of {}",
                        from + i,
                        all.len()
                    );
                    assert_eq!(pinned.is_null((from + i) as u64), want.is_null());
                }
            }
            if ty == LogicalType::UInt64 {
                let mut out = vec![0u64; all.len()];
                pinned.read_u64s(0, all.len(), &mut out);
                for (i, want) in all.iter().enumerate() {
                    if let Some(Value::UInt64(w)) = want {
                        assert_eq!(out[i], *w, "u64 {i}");
                        assert_eq!(pinned.get_u64(i as u64), *w);
                    }
                }
            }
        }
        let appends_of_one = ops
            .iter()
            .all(|o| matches!(o, ChunkOp::Append(b) if b.len() == 1));
        if all.len() as u64 > 2 * TAIL_MAX && appends_of_one {
            assert!(
                saw_tail,
                "one-row appends past TAIL_MAX never used a nested tail"
            );
        }
    }

    fn append_sequence(ty: LogicalType, batches: &[Vec<Option<Value>>]) {
        let ops: Vec<ChunkOp> = batches.iter().cloned().map(ChunkOp::Append).collect();
        chunk_sequence(ty, &ops);
    }

    fn chunk_op<V: Strategy<Value = Value> + Clone>(value: V) -> impl Strategy<Value = ChunkOp> {
        let v = prop::option::weighted(0.9, value);
        prop_oneof![
            3 => prop::collection::vec(v.clone(), 1..4).prop_map(ChunkOp::Append),
            3 => prop::collection::vec((any::<usize>(), v), 1..4).prop_map(ChunkOp::Set),
            1 => Just(ChunkOp::Fold),
        ]
    }

    proptest! {
        #[test]
        fn updates_read_back_int64(ops in prop::collection::vec(chunk_op((-1000i64..1000).prop_map(Value::Int64)), 0..60)) {
            chunk_sequence(LogicalType::Int64, &ops);
        }

        #[test]
        fn updates_read_back_strings(ops in prop::collection::vec(chunk_op("[a-c]{0,3}".prop_map(Value::String)), 0..60)) {
            chunk_sequence(LogicalType::String, &ops);
        }

        #[test]
        fn updates_read_back_u64(ops in prop::collection::vec(chunk_op((0u64..5000).prop_map(Value::UInt64)), 0..60)) {
            chunk_sequence(LogicalType::UInt64, &ops);
        }
    }

    proptest! {
        #[test]
        fn appends_read_back_int64(batches in prop::collection::vec(
            prop::collection::vec(prop::option::weighted(0.9, -1000i64..1000), 1..4), 0..40)) {
            let b: Vec<Vec<Option<Value>>> = batches.into_iter()
                .map(|b| b.into_iter().map(|x| x.map(Value::Int64)).collect()).collect();
            append_sequence(LogicalType::Int64, &b);
        }

        #[test]
        fn appends_read_back_strings(batches in prop::collection::vec(
            prop::collection::vec(prop::option::weighted(0.9, "[a-c]{0,3}"), 1..4), 0..40)) {
            let b: Vec<Vec<Option<Value>>> = batches.into_iter()
                .map(|b| b.into_iter().map(|x| x.map(Value::String)).collect()).collect();
            append_sequence(LogicalType::String, &b);
        }
    }

    /// Where [`PinnedColumn::packed_u64s`] gives a view, it reads what
    /// `read_u64s` reads at every position.
    fn check_packed(pinned: &PinnedColumn, n: usize) {
        let Some(p) = pinned.packed_u64s() else {
            return;
        };
        let mut out = vec![0u64; n];
        pinned.read_u64s(0, n, &mut out);
        for (i, &x) in out.iter().enumerate() {
            assert_eq!(p.get(i as u64), x, "position {i}");
        }
    }

    proptest! {
        #[test]
        fn packed_view_reads_every_width(
            raw in prop::collection::vec(any::<u64>(), 0..300),
            bits in 0u32..=64,
            base in any::<u64>(),
        ) {
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let vals: Vec<u64> = raw.iter().map(|&x| base.wrapping_add(x & mask)).collect();
            let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
            let mut v = ValueVector::new(LogicalType::UInt64, vals.len());
            for (i, &x) in vals.iter().enumerate() {
                v.set_value(i, &Value::UInt64(x));
            }
            let chunk = ColumnChunk::write(&pager, &v, 0, vals.len()).unwrap();
            let pinned = chunk.pin(&pager).unwrap();
            prop_assert!(vals.is_empty() || pinned.packed_u64s().is_some());
            check_packed(&pinned, vals.len());
        }
    }

    #[test]
    fn one_row_appends_use_and_fold_tails() {
        let n = (3 * TAIL_MAX + 5) as usize;
        let batches: Vec<Vec<Option<Value>>> = (0..n)
            .map(|i| vec![Some(Value::Int64(i as i64 * 7 - 3))])
            .collect();
        append_sequence(LogicalType::Int64, &batches);
        let u: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
        let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
        let mut chunk =
            ColumnChunk::write(&pager, &ValueVector::new(LogicalType::UInt64, 0), 0, 0).unwrap();
        for x in &u {
            let mut v = ValueVector::new(LogicalType::UInt64, 1);
            v.set_value(0, &Value::UInt64(*x));
            chunk = chunk
                .append(&pager, &LogicalType::UInt64, &v, 0, 1)
                .unwrap()
                .chunk;
        }
        let pinned = chunk.pin(&pager).unwrap();
        let mut out = vec![0u64; n];
        pinned.read_u64s(0, n, &mut out);
        assert_eq!(out, u);
        assert_eq!(pinned.get_u64(n as u64 - 1), u[n - 1]);
        check_packed(&pinned, n);
    }

    #[test]
    fn one_value_sets_patch_then_fold() {
        let mut ops = vec![ChunkOp::Append(
            (0..100).map(|i| Some(Value::Int64(i))).collect(),
        )];
        for i in 0..PATCH_MAX as usize + 3 {
            ops.push(ChunkOp::Set(vec![(i * 7, Some(Value::Int64(-(i as i64))))]));
        }
        chunk_sequence(LogicalType::Int64, &ops);
    }

    #[test]
    fn constant_and_all_null_columns() {
        round_trip(LogicalType::Int64, &vec![Some(Value::Int64(7)); 100], 0);
        round_trip(
            LogicalType::String,
            &vec![Some(Value::String("x".into())); 100],
            3,
        );
        round_trip(LogicalType::Double, &vec![None; 50], 0);
        round_trip(
            LogicalType::Int64,
            &[Some(Value::Int64(i64::MIN)), Some(Value::Int64(i64::MAX))],
            0,
        );
    }
}
