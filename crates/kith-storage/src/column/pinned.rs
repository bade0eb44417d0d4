//! The read side of column chunks: a chunk pinned once ([`PinnedColumn`],
//! or lazily on first use) and decoded by range, by gathered rows or as
//! packed u64s, with no buffer-manager call per value.

use super::*;

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
    pub(super) chunk: ColumnChunk,
    pub(super) data: Option<OwnedPin>,
    pub(super) nulls: Option<OwnedPin>,
    pub(super) ends: Option<Box<PinnedColumn>>,
    /// The chunk's tail: values `chunk.num_values..`.
    pub(super) tail: Option<Box<PinnedColumn>>,
    pub(super) patch: Option<Box<PinnedPatch>>,
}

/// A pinned [`Patch`], indexed by position.
pub(super) struct PinnedPatch {
    /// The patched positions, ascending, each once.
    positions: Vec<u64>,
    /// For each position, the entry of `values` with its newest value.
    slots: Vec<u64>,
    values: PinnedColumn,
}

impl PinnedPatch {
    pub(super) fn new(positions: &PinnedColumn, values: PinnedColumn) -> Result<PinnedPatch> {
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

pub(super) fn as_words(pin: &Option<OwnedPin>) -> &[u64] {
    match pin {
        // Pages are page-aligned in the buffer pool, so the cast cannot fail on
        // alignment; an empty slice results only for an empty run.
        Some(p) => bytemuck::try_cast_slice(&p[..]).unwrap_or(&[]),
        None => &[],
    }
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
