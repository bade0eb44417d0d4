//! The columnar vector: typed values of one column plus a null mask.
//!
//! Operators exchange vectors of up to [`crate::constants::VECTOR_CAPACITY`]
//! values; loaders may build longer ones. Fixed-width values live in flat typed
//! arrays so hot loops run over plain slices; strings live in one byte heap per
//! vector (no allocation per value); nested and graph values fall back to one
//! [`Value`] per slot.

use crate::ids::InternalId;
use crate::temporal::{Date, Interval, Timestamp};
use crate::types::{LogicalType, PhysicalType};
use crate::value::Value;

/// One bit per position; a set bit means NULL.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NullMask {
    bits: Vec<u64>,
    /// False when no bit is set, so null checks can be skipped wholesale.
    may_have_nulls: bool,
}

impl NullMask {
    pub fn with_len(len: usize) -> NullMask {
        NullMask {
            bits: vec![0; len.div_ceil(64)],
            may_have_nulls: false,
        }
    }

    pub fn resize(&mut self, len: usize) {
        self.bits.resize(len.div_ceil(64), 0);
    }

    #[inline]
    pub fn is_null(&self, pos: usize) -> bool {
        self.may_have_nulls
            && self
                .bits
                .get(pos / 64)
                .is_some_and(|w| w >> (pos % 64) & 1 == 1)
    }

    #[inline]
    pub fn set(&mut self, pos: usize, null: bool) {
        let word = pos / 64;
        if word >= self.bits.len() {
            if !null {
                return;
            }
            self.bits.resize(word + 1, 0);
        }
        if null {
            self.bits[word] |= 1 << (pos % 64);
            self.may_have_nulls = true;
        } else {
            self.bits[word] &= !(1 << (pos % 64));
        }
    }

    pub fn may_have_nulls(&self) -> bool {
        self.may_have_nulls
    }

    /// Sets position `at[i]` NULL for each `i` where `null(i)`, without a
    /// branch per position (a random pattern of NULLs mispredicts every
    /// other one); the other positions keep their bits.
    pub fn set_where(&mut self, at: &[u32], null: impl Fn(usize) -> bool) {
        let Some(&last) = at.iter().max() else {
            return;
        };
        if self.bits.len() <= last as usize / 64 {
            self.bits.resize(last as usize / 64 + 1, 0);
        }
        // The bits of one word gather in a register: or-ing each into
        // memory made every position wait for the previous one's store.
        let mut word = last as usize / 64;
        let mut bits = 0u64;
        let mut any = 0u64;
        for (i, &p) in at.iter().enumerate() {
            let w = p as usize / 64;
            if w != word {
                self.bits[word] |= bits;
                any |= bits;
                (word, bits) = (w, 0);
            }
            bits |= (null(i) as u64) << (p % 64);
        }
        self.bits[word] |= bits;
        any |= bits;
        self.may_have_nulls |= any != 0;
    }

    /// Sets NULL every position below `len` that is NULL in `other`, a
    /// word at a time (a batch's NULLs carried from an operand to a result).
    pub fn union_prefix(&mut self, other: &NullMask, len: usize) {
        if !other.may_have_nulls || len == 0 {
            return;
        }
        let words = len.div_ceil(64);
        if self.bits.len() < words {
            self.bits.resize(words, 0);
        }
        let mut any = 0;
        for (i, (dst, &src)) in self.bits[..words].iter_mut().zip(&other.bits).enumerate() {
            // The last word keeps only the positions below `len`.
            let keep = match (i + 1) * 64 > len {
                true => (1u64 << (len % 64)).wrapping_sub(1),
                false => u64::MAX,
            };
            *dst |= src & keep;
            any |= src & keep;
        }
        self.may_have_nulls |= any != 0;
    }

    /// Clears every bit.
    pub fn clear(&mut self) {
        if self.may_have_nulls {
            self.bits.iter_mut().for_each(|w| *w = 0);
            self.may_have_nulls = false;
        }
    }

    pub fn words(&self) -> &[u64] {
        &self.bits
    }

    pub fn from_words(bits: Vec<u64>) -> NullMask {
        let may_have_nulls = bits.iter().any(|w| *w != 0);
        NullMask {
            bits,
            may_have_nulls,
        }
    }
}

/// A `match` on the data of two vectors with one arm per fixed-width
/// variant they both hold (`|d, s| body` with `d` the first's data,
/// mutable, under the guard), then the caller's own arms for the rest.
macro_rules! match_fixed_width {
    (($dst:expr, $src:expr) if $guard:expr => |$d:ident, $s:ident| $body:expr, $($rest:tt)*) => {
        match ($dst, $src) {
            (VectorData::Bool($d), VectorData::Bool($s)) if $guard => $body,
            (VectorData::I8($d), VectorData::I8($s)) if $guard => $body,
            (VectorData::I16($d), VectorData::I16($s)) if $guard => $body,
            (VectorData::I32($d), VectorData::I32($s)) if $guard => $body,
            (VectorData::I64($d), VectorData::I64($s)) if $guard => $body,
            (VectorData::U8($d), VectorData::U8($s)) if $guard => $body,
            (VectorData::U16($d), VectorData::U16($s)) if $guard => $body,
            (VectorData::U32($d), VectorData::U32($s)) if $guard => $body,
            (VectorData::U64($d), VectorData::U64($s)) if $guard => $body,
            (VectorData::F32($d), VectorData::F32($s)) if $guard => $body,
            (VectorData::F64($d), VectorData::F64($s)) if $guard => $body,
            (VectorData::Interval($d), VectorData::Interval($s)) if $guard => $body,
            (VectorData::Id($d), VectorData::Id($s)) if $guard => $body,
            $($rest)*
        }
    };
}

/// Strings of a vector: `(start, len)` per slot into one byte heap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringData {
    slots: Vec<(u32, u32)>,
    heap: Vec<u8>,
}

impl StringData {
    #[inline]
    pub fn get(&self, pos: usize) -> &str {
        let (start, len) = self.slots[pos];
        let bytes = &self.heap[start as usize..start as usize + len as usize];
        // SAFETY: the heap is only ever appended to from `&str` values in `set` and
        // `push`, and every slot covers exactly the bytes of one such append, so each
        // slot is valid UTF-8. Tested by `string_data_round_trip`.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    #[inline]
    pub fn set(&mut self, pos: usize, s: &str) {
        let start = self.heap.len() as u32;
        self.heap.extend_from_slice(s.as_bytes());
        self.slots[pos] = (start, s.len() as u32);
    }

    pub fn push(&mut self, s: &str) {
        let start = self.heap.len() as u32;
        self.heap.extend_from_slice(s.as_bytes());
        self.slots.push((start, s.len() as u32));
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn resize(&mut self, len: usize) {
        self.slots.resize(len, (0, 0));
    }

    /// Drops all strings but keeps the allocations.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.heap.clear();
    }

    /// Bytes allocated for the slots and the string bytes.
    pub fn memory_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<(u32, u32)>() + self.heap.capacity()
    }

    pub fn heap_bytes(&self) -> usize {
        self.heap.len()
    }
}

/// Typed storage of a vector.
#[derive(Debug, Clone, PartialEq)]
pub enum VectorData {
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
    Id(Vec<InternalId>),
    Value(Vec<Value>),
}

macro_rules! for_each_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            VectorData::Bool($v) => $body,
            VectorData::I8($v) => $body,
            VectorData::I16($v) => $body,
            VectorData::I32($v) => $body,
            VectorData::I64($v) => $body,
            VectorData::U8($v) => $body,
            VectorData::U16($v) => $body,
            VectorData::U32($v) => $body,
            VectorData::U64($v) => $body,
            VectorData::F32($v) => $body,
            VectorData::F64($v) => $body,
            VectorData::Interval($v) => $body,
            VectorData::Id($v) => $body,
            VectorData::Value($v) => $body,
            VectorData::Str($v) => $body,
        }
    };
}

impl VectorData {
    pub fn new(physical: PhysicalType, len: usize) -> VectorData {
        match physical {
            PhysicalType::Bool => VectorData::Bool(vec![false; len]),
            PhysicalType::I8 => VectorData::I8(vec![0; len]),
            PhysicalType::I16 => VectorData::I16(vec![0; len]),
            PhysicalType::I32 => VectorData::I32(vec![0; len]),
            PhysicalType::I64 => VectorData::I64(vec![0; len]),
            PhysicalType::U8 => VectorData::U8(vec![0; len]),
            PhysicalType::U16 => VectorData::U16(vec![0; len]),
            PhysicalType::U32 => VectorData::U32(vec![0; len]),
            PhysicalType::U64 => VectorData::U64(vec![0; len]),
            PhysicalType::F32 => VectorData::F32(vec![0.0; len]),
            PhysicalType::F64 => VectorData::F64(vec![0.0; len]),
            PhysicalType::String => {
                let mut s = StringData::default();
                s.resize(len);
                VectorData::Str(s)
            }
            PhysicalType::Interval => VectorData::Interval(vec![Interval::default(); len]),
            PhysicalType::InternalId => VectorData::Id(vec![InternalId::default(); len]),
            PhysicalType::Value => VectorData::Value(vec![Value::Null; len]),
        }
    }

    pub fn len(&self) -> usize {
        for_each_data!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn resize(&mut self, len: usize) {
        match self {
            VectorData::Bool(v) => v.resize(len, false),
            VectorData::I8(v) => v.resize(len, 0),
            VectorData::I16(v) => v.resize(len, 0),
            VectorData::I32(v) => v.resize(len, 0),
            VectorData::I64(v) => v.resize(len, 0),
            VectorData::U8(v) => v.resize(len, 0),
            VectorData::U16(v) => v.resize(len, 0),
            VectorData::U32(v) => v.resize(len, 0),
            VectorData::U64(v) => v.resize(len, 0),
            VectorData::F32(v) => v.resize(len, 0.0),
            VectorData::F64(v) => v.resize(len, 0.0),
            VectorData::Str(v) => v.resize(len),
            VectorData::Interval(v) => v.resize(len, Interval::default()),
            VectorData::Id(v) => v.resize(len, InternalId::default()),
            VectorData::Value(v) => v.resize(len, Value::Null),
        }
    }
}

/// A column of values of one logical type.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueVector {
    pub ty: LogicalType,
    pub data: VectorData,
    pub nulls: NullMask,
}

impl VectorData {
    /// Bytes allocated for the values (for memory accounting; a `Value`
    /// counts its own size, not what it points to).
    pub fn memory_bytes(&self) -> usize {
        fn of<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        match self {
            VectorData::Bool(v) => of(v),
            VectorData::I8(v) => of(v),
            VectorData::I16(v) => of(v),
            VectorData::I32(v) => of(v),
            VectorData::I64(v) => of(v),
            VectorData::U8(v) => of(v),
            VectorData::U16(v) => of(v),
            VectorData::U32(v) => of(v),
            VectorData::U64(v) => of(v),
            VectorData::F32(v) => of(v),
            VectorData::F64(v) => of(v),
            VectorData::Str(s) => s.memory_bytes(),
            VectorData::Interval(v) => of(v),
            VectorData::Id(v) => of(v),
            VectorData::Value(v) => of(v),
        }
    }
}

impl ValueVector {
    /// Bytes allocated for the values and the null mask.
    pub fn memory_bytes(&self) -> usize {
        self.data.memory_bytes() + self.nulls.bits.capacity() * 8
    }

    /// A vector of `len` slots, all zero/empty and not null.
    pub fn new(ty: LogicalType, len: usize) -> ValueVector {
        ValueVector {
            data: VectorData::new(ty.physical(), len),
            nulls: NullMask::with_len(len),
            ty,
        }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn resize(&mut self, len: usize) {
        self.data.resize(len);
        self.nulls.resize(len);
    }

    #[inline]
    pub fn is_null(&self, pos: usize) -> bool {
        self.nulls.is_null(pos)
    }

    #[inline]
    pub fn set_null(&mut self, pos: usize, null: bool) {
        self.nulls.set(pos, null);
    }

    /// The value at `pos` as a [`Value`] (slow path, for results and constants).
    pub fn get_value(&self, pos: usize) -> Value {
        if self.is_null(pos) {
            return Value::Null;
        }
        match (&self.data, &self.ty) {
            (VectorData::Bool(v), _) => Value::Bool(v[pos]),
            (VectorData::I8(v), _) => Value::Int8(v[pos]),
            (VectorData::I16(v), _) => Value::Int16(v[pos]),
            (VectorData::I32(v), LogicalType::Date) => Value::Date(Date(v[pos])),
            (VectorData::I32(v), _) => Value::Int32(v[pos]),
            (VectorData::I64(v), LogicalType::Timestamp) => Value::Timestamp(Timestamp(v[pos])),
            (VectorData::I64(v), _) => Value::Int64(v[pos]),
            (VectorData::U8(v), _) => Value::UInt8(v[pos]),
            (VectorData::U16(v), _) => Value::UInt16(v[pos]),
            (VectorData::U32(v), _) => Value::UInt32(v[pos]),
            (VectorData::U64(v), _) => Value::UInt64(v[pos]),
            (VectorData::F32(v), _) => Value::Float(v[pos]),
            (VectorData::F64(v), _) => Value::Double(v[pos]),
            (VectorData::Str(v), _) => Value::String(v.get(pos).to_string()),
            (VectorData::Interval(v), _) => Value::Interval(v[pos]),
            (VectorData::Id(v), _) => Value::InternalId(v[pos]),
            (VectorData::Value(v), _) => v[pos].clone(),
        }
    }

    /// [`ValueVector::get_value`] that leaves NULL behind in a `Value`
    /// vector instead of cloning (for a reader that is the value's last).
    pub fn take_value(&mut self, pos: usize) -> Value {
        match &mut self.data {
            VectorData::Value(v) if !self.nulls.is_null(pos) => {
                self.nulls.set(pos, true);
                std::mem::replace(&mut v[pos], Value::Null)
            }
            _ => self.get_value(pos),
        }
    }

    /// [`ValueVector::set_value`] of a value the caller no longer needs:
    /// a `Value` vector takes it as is instead of cloning it (a list or a
    /// map would be copied element by element).
    pub fn put_value(&mut self, pos: usize, value: Value) {
        match (&mut self.data, value) {
            (_, Value::Null) => self.nulls.set(pos, true),
            (VectorData::Value(v), x) => {
                v[pos] = x;
                self.nulls.set(pos, false);
            }
            (_, x) => self.set_value(pos, &x),
        }
    }

    /// Stores `value` at `pos`. The value must already have this vector's type
    /// (the binder inserts casts); a mismatch is a bug and stores NULL in release
    /// builds after a debug assertion.
    pub fn set_value(&mut self, pos: usize, value: &Value) {
        let ok = match (&mut self.data, value) {
            (_, Value::Null) => {
                self.nulls.set(pos, true);
                return;
            }
            (VectorData::Bool(v), Value::Bool(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::I8(v), Value::Int8(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::I16(v), Value::Int16(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::I32(v), Value::Int32(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::I32(v), Value::Date(x)) => {
                v[pos] = x.0;
                true
            }
            (VectorData::I64(v), Value::Int64(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::I64(v), Value::Timestamp(x)) => {
                v[pos] = x.0;
                true
            }
            (VectorData::U8(v), Value::UInt8(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::U16(v), Value::UInt16(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::U32(v), Value::UInt32(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::U64(v), Value::UInt64(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::F32(v), Value::Float(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::F64(v), Value::Double(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::Str(v), Value::String(x)) => {
                v.set(pos, x);
                true
            }
            (VectorData::Interval(v), Value::Interval(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::Id(v), Value::InternalId(x)) => {
                v[pos] = *x;
                true
            }
            (VectorData::Value(v), x) => {
                v[pos] = x.clone();
                true
            }
            _ => false,
        };
        debug_assert!(ok, "value {value:?} stored into a {} vector", self.ty);
        self.nulls.set(pos, !ok);
    }

    /// Appends one value (grows the vector by one slot).
    pub fn push_value(&mut self, value: &Value) {
        let pos = self.len();
        self.resize(pos + 1);
        self.set_value(pos, value);
    }

    /// [`ValueVector::push_value`] that moves the value into a vector of
    /// values (lists, structs) instead of cloning it.
    pub fn push_owned(&mut self, value: Value) {
        if !value.is_null() {
            if let VectorData::Value(v) = &mut self.data {
                let pos = v.len();
                v.push(value);
                self.nulls.resize(pos + 1);
                self.nulls.set(pos, false);
                return;
            }
        }
        self.push_value(&value);
    }

    /// Copies slot `src_pos` of `src` (same type) into slot `dst_pos`.
    pub fn copy_from(&mut self, dst_pos: usize, src: &ValueVector, src_pos: usize) {
        if src.is_null(src_pos) {
            self.nulls.set(dst_pos, true);
            return;
        }
        self.nulls.set(dst_pos, false);
        match (&mut self.data, &src.data) {
            (VectorData::Bool(d), VectorData::Bool(s)) => d[dst_pos] = s[src_pos],
            (VectorData::I8(d), VectorData::I8(s)) => d[dst_pos] = s[src_pos],
            (VectorData::I16(d), VectorData::I16(s)) => d[dst_pos] = s[src_pos],
            (VectorData::I32(d), VectorData::I32(s)) => d[dst_pos] = s[src_pos],
            (VectorData::I64(d), VectorData::I64(s)) => d[dst_pos] = s[src_pos],
            (VectorData::U8(d), VectorData::U8(s)) => d[dst_pos] = s[src_pos],
            (VectorData::U16(d), VectorData::U16(s)) => d[dst_pos] = s[src_pos],
            (VectorData::U32(d), VectorData::U32(s)) => d[dst_pos] = s[src_pos],
            (VectorData::U64(d), VectorData::U64(s)) => d[dst_pos] = s[src_pos],
            (VectorData::F32(d), VectorData::F32(s)) => d[dst_pos] = s[src_pos],
            (VectorData::F64(d), VectorData::F64(s)) => d[dst_pos] = s[src_pos],
            (VectorData::Str(d), VectorData::Str(s)) => d.set(dst_pos, s.get(src_pos)),
            (VectorData::Interval(d), VectorData::Interval(s)) => d[dst_pos] = s[src_pos],
            (VectorData::Id(d), VectorData::Id(s)) => d[dst_pos] = s[src_pos],
            (VectorData::Value(d), VectorData::Value(s)) => d[dst_pos] = s[src_pos].clone(),
            (_, _) => {
                let v = src.get_value(src_pos);
                self.set_value(dst_pos, &v);
            }
        }
    }

    /// For each `i`: slot `at[i]` (within the length) becomes row
    /// `rows[i]` of `src` (same type), or NULL where `rows[i]` is
    /// `u32::MAX`; typed (no match per slot) for fixed-width data.
    pub fn put_rows(&mut self, at: &[u32], src: &ValueVector, rows: &[u32]) {
        fn put<T: Copy>(d: &mut [T], s: &[T], at: &[u32], rows: &[u32]) {
            // A miss copies the last row (its slot is NULL): no branch.
            let Some(last) = s.len().checked_sub(1) else {
                return;
            };
            for (&p, &r) in at.iter().zip(rows) {
                d[p as usize] = s[(r as usize).min(last)];
            }
        }
        let typed = self.ty == src.ty;
        match_fixed_width! {
            (&mut self.data, &src.data) if typed => |d, s| put(d, s, at, rows),
            _ => {
                for (&p, &r) in at.iter().zip(rows) {
                    if r == u32::MAX {
                        self.nulls.set(p as usize, true);
                    } else {
                        self.copy_from(p as usize, src, r as usize);
                    }
                }
                return;
            }
        }
        // The slots' old NULL bits, then the misses and NULL rows.
        if self.nulls.may_have_nulls() {
            for &p in at {
                self.nulls.set(p as usize, false);
            }
        }
        if src.nulls.may_have_nulls() {
            self.nulls
                .set_where(at, |i| rows[i] == u32::MAX || src.is_null(rows[i] as usize));
        } else {
            self.nulls.set_where(at, |i| rows[i] == u32::MAX);
        }
    }

    /// Sets every slot of `range` (within the length) to slot `src_pos` of
    /// `src` (same type): a flat value repeated along an unflat group.
    pub fn fill_from(&mut self, range: std::ops::Range<usize>, src: &ValueVector, src_pos: usize) {
        let null = src.is_null(src_pos);
        if null || self.nulls.may_have_nulls() {
            for p in range.clone() {
                self.nulls.set(p, null);
            }
        }
        if null {
            return;
        }
        match (&mut self.data, &src.data) {
            (VectorData::I64(d), VectorData::I64(s)) => d[range].fill(s[src_pos]),
            (VectorData::Id(d), VectorData::Id(s)) => d[range].fill(s[src_pos]),
            (VectorData::F64(d), VectorData::F64(s)) => d[range].fill(s[src_pos]),
            (VectorData::I32(d), VectorData::I32(s)) => d[range].fill(s[src_pos]),
            _ => {
                for p in range {
                    self.copy_from(p, src, src_pos);
                }
            }
        }
    }

    /// Becomes `src[start..start + len]` (same type), typed: no [`Value`]
    /// per slot.
    pub fn assign_range(&mut self, src: &ValueVector, start: usize, len: usize) {
        fn copy<T: Clone>(d: &mut Vec<T>, s: &[T], range: std::ops::Range<usize>) {
            d.clear();
            d.extend_from_slice(&s[range]);
        }
        let r = start..start + len;
        let typed = self.ty == src.ty;
        match_fixed_width! {
            (&mut self.data, &src.data) if typed => |d, s| copy(d, s, r),
            (VectorData::Value(d), VectorData::Value(s)) if typed => copy(d, s, r),
            _ => {
                self.reset(len);
                for p in 0..len {
                    self.copy_from(p, src, start + p);
                }
                return;
            }
        }
        self.nulls.clear();
        self.nulls.resize(len);
        if src.nulls.may_have_nulls() {
            for p in 0..len {
                if src.is_null(start + p) {
                    self.nulls.set(p, true);
                }
            }
        }
    }

    /// Appends all slots of `other` (same type).
    pub fn append(&mut self, other: &ValueVector) {
        let base = self.len();
        match_fixed_width! {
            (&mut self.data, &other.data) if true => |d, s| d.extend_from_slice(s),
            (VectorData::Value(d), VectorData::Value(s)) => d.extend_from_slice(s),
            (VectorData::Str(d), VectorData::Str(s)) => {
                for pos in 0..s.len() {
                    d.push(s.get(pos));
                }
            }
            _ => {
                for pos in 0..other.len() {
                    self.push_value(&other.get_value(pos));
                }
                return;
            }
        }
        self.nulls.resize(base + other.len());
        if other.nulls.may_have_nulls() {
            for pos in 0..other.len() {
                if other.is_null(pos) {
                    self.nulls.set(base + pos, true);
                }
            }
        }
    }

    /// Appends `src[p]` for each `p` in `positions`, typed (no [`Value`] per
    /// slot) when both vectors have the same type.
    pub fn extend_gather(&mut self, src: &ValueVector, positions: &[u32]) {
        fn gather<T: Copy>(d: &mut Vec<T>, s: &[T], positions: &[u32]) {
            d.extend(positions.iter().map(|&p| s[p as usize]));
        }
        let base = self.len();
        let typed = self.ty == src.ty;
        match_fixed_width! {
            (&mut self.data, &src.data) if typed => |d, s| gather(d, s, positions),
            (VectorData::Str(d), VectorData::Str(s)) if typed => {
                for &p in positions {
                    d.push(s.get(p as usize));
                }
            }
            (VectorData::Value(d), VectorData::Value(s)) if typed => {
                d.extend(positions.iter().map(|&p| s[p as usize].clone()));
            }
            _ => {
                for &p in positions {
                    self.push_value(&src.get_value(p as usize));
                }
                return;
            }
        }
        self.nulls.resize(base + positions.len());
        if src.nulls.may_have_nulls() {
            for (i, &p) in positions.iter().enumerate() {
                if src.is_null(p as usize) {
                    self.nulls.set(base + i, true);
                }
            }
        }
    }

    /// A new vector holding `self[indices[0]], self[indices[1]], ...`.
    pub fn gather(&self, indices: &[u64]) -> ValueVector {
        let data = match &self.data {
            VectorData::Bool(s) => {
                VectorData::Bool(indices.iter().map(|&i| s[i as usize]).collect())
            }
            VectorData::I8(s) => VectorData::I8(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::I16(s) => VectorData::I16(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::I32(s) => VectorData::I32(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::I64(s) => VectorData::I64(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::U8(s) => VectorData::U8(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::U16(s) => VectorData::U16(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::U32(s) => VectorData::U32(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::U64(s) => VectorData::U64(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::F32(s) => VectorData::F32(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::F64(s) => VectorData::F64(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::Interval(s) => {
                VectorData::Interval(indices.iter().map(|&i| s[i as usize]).collect())
            }
            VectorData::Id(s) => VectorData::Id(indices.iter().map(|&i| s[i as usize]).collect()),
            VectorData::Value(s) => {
                VectorData::Value(indices.iter().map(|&i| s[i as usize].clone()).collect())
            }
            VectorData::Str(s) => {
                let mut out = StringData::default();
                for &i in indices {
                    out.push(s.get(i as usize));
                }
                VectorData::Str(out)
            }
        };
        let mut nulls = NullMask::with_len(indices.len());
        if self.nulls.may_have_nulls() {
            for (pos, &i) in indices.iter().enumerate() {
                if self.is_null(i as usize) {
                    nulls.set(pos, true);
                }
            }
        }
        ValueVector {
            ty: self.ty.clone(),
            data,
            nulls,
        }
    }

    /// A new vector of `sources[c][p]` for each `(c, p)` of `indices`: a
    /// gather across the equally typed vectors of several chunks, without
    /// first concatenating them. The type is `ty`'s (no source: all NULL
    /// is impossible, as no index can be given).
    pub fn gather_across(
        ty: &LogicalType,
        sources: &[&ValueVector],
        indices: &[(u32, u32)],
    ) -> ValueVector {
        macro_rules! typed {
            ($variant:ident) => {{
                let parts: Option<Vec<&[_]>> = sources
                    .iter()
                    .map(|s| match &s.data {
                        VectorData::$variant(v) => Some(&v[..]),
                        _ => None,
                    })
                    .collect();
                parts.map(|parts| {
                    VectorData::$variant(
                        indices
                            .iter()
                            .map(|&(c, p)| parts[c as usize][p as usize].clone())
                            .collect(),
                    )
                })
            }};
        }
        let data = match sources.first().map(|s| &s.data) {
            Some(VectorData::Bool(_)) => typed!(Bool),
            Some(VectorData::I8(_)) => typed!(I8),
            Some(VectorData::I16(_)) => typed!(I16),
            Some(VectorData::I32(_)) => typed!(I32),
            Some(VectorData::I64(_)) => typed!(I64),
            Some(VectorData::U8(_)) => typed!(U8),
            Some(VectorData::U16(_)) => typed!(U16),
            Some(VectorData::U32(_)) => typed!(U32),
            Some(VectorData::U64(_)) => typed!(U64),
            Some(VectorData::F32(_)) => typed!(F32),
            Some(VectorData::F64(_)) => typed!(F64),
            Some(VectorData::Interval(_)) => typed!(Interval),
            Some(VectorData::Id(_)) => typed!(Id),
            Some(VectorData::Value(_)) => typed!(Value),
            Some(VectorData::Str(_)) | None => None,
        };
        let mut out = match data {
            Some(data) => ValueVector {
                ty: ty.clone(),
                data,
                nulls: NullMask::with_len(indices.len()),
            },
            // Strings, or sources of mixed layouts: value by value.
            None => {
                let mut out = ValueVector::new(ty.clone(), indices.len());
                for (pos, &(c, p)) in indices.iter().enumerate() {
                    out.set_value(pos, &sources[c as usize].get_value(p as usize));
                }
                return out;
            }
        };
        if sources.iter().any(|s| s.nulls.may_have_nulls()) {
            for (pos, &(c, p)) in indices.iter().enumerate() {
                if sources[c as usize].is_null(p as usize) {
                    out.nulls.set(pos, true);
                }
            }
        }
        out
    }

    /// Resets to `len` empty, non-null slots, keeping allocations.
    pub fn reset(&mut self, len: usize) {
        if let VectorData::Str(s) = &mut self.data {
            s.clear();
        }
        self.nulls.clear();
        self.resize(len);
    }
}

/// A batch of equally long columns, as produced by readers and returned to the
/// API. (The executor's factorized intermediate results live in `kith-exec`.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    pub columns: Vec<ValueVector>,
    pub num_rows: usize,
}

impl Chunk {
    /// Bytes allocated for the chunk's columns.
    pub fn memory_bytes(&self) -> usize {
        self.columns.iter().map(ValueVector::memory_bytes).sum()
    }

    pub fn new(types: &[LogicalType], num_rows: usize) -> Chunk {
        Chunk {
            columns: types
                .iter()
                .map(|t| ValueVector::new(t.clone(), num_rows))
                .collect(),
            num_rows,
        }
    }

    pub fn row(&self, pos: usize) -> Vec<Value> {
        self.columns.iter().map(|c| c.get_value(pos)).collect()
    }

    /// A copy of the rows in `range` (typed, as [`ValueVector::assign_range`]).
    pub fn rows_in(&self, range: std::ops::Range<usize>) -> Chunk {
        Chunk {
            columns: self
                .columns
                .iter()
                .map(|c| {
                    let mut v = ValueVector::new(c.ty.clone(), 0);
                    v.assign_range(c, range.start, range.len());
                    v
                })
                .collect(),
            num_rows: range.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// put_rows equals copy_from per slot (set_null for a miss) for typed
    /// and string vectors, NULL rows and misses, over a vector that had
    /// NULLs of its own; the slots not named keep theirs.
    #[test]
    fn put_rows_matches_copy_from_slot_by_slot() {
        for ty in [LogicalType::Int64, LogicalType::String, LogicalType::Int16] {
            let value = |i: i64| match &ty {
                LogicalType::String => Value::String(format!("v{i}")),
                LogicalType::Int16 => Value::Int16(i as i16),
                _ => Value::Int64(i),
            };
            let mut src = ValueVector::new(ty.clone(), 0);
            for i in 0..50 {
                src.push_value(&if i % 7 == 3 { Value::Null } else { value(i) });
            }
            let mut start = ValueVector::new(ty.clone(), 0);
            for i in 0..130 {
                start.push_value(&if i % 5 == 0 { Value::Null } else { value(-i) });
            }
            let at: Vec<u32> = (0..130).filter(|p| p % 3 != 1).collect();
            let rows: Vec<u32> = at
                .iter()
                .map(|&p| if p % 4 == 2 { u32::MAX } else { (p * 7) % 50 })
                .collect();
            let mut got = start.clone();
            got.put_rows(&at, &src, &rows);
            let mut want = start.clone();
            for (&p, &r) in at.iter().zip(&rows) {
                if r == u32::MAX {
                    want.set_null(p as usize, true);
                } else {
                    want.copy_from(p as usize, &src, r as usize);
                }
            }
            for p in 0..130 {
                assert_eq!(got.get_value(p), want.get_value(p), "{ty:?} slot {p}");
            }
        }
    }

    /// set_where sets exactly the named positions it is asked to, in any
    /// order (ascending runs, jumps back across words, repeats), keeps
    /// every other bit and tracks whether any NULL exists.
    #[test]
    fn set_where_sets_the_positions_asked_and_keeps_the_rest() {
        let mut at: Vec<u32> = (0..300).filter(|p| p % 3 != 0).collect();
        at.extend([7, 500, 64, 63, 128, 5, 500]);
        let null = |i: usize| (i * 7919) % 5 < 2;
        let mut mask = NullMask::default();
        mask.set(1, true);
        mask.set(200, true);
        mask.set_where(&at, null);
        let mut want = std::collections::BTreeSet::from([1usize, 200]);
        for (i, &p) in at.iter().enumerate() {
            if null(i) {
                want.insert(p as usize);
            }
        }
        for p in 0..520 {
            assert_eq!(mask.is_null(p), want.contains(&p), "position {p}");
        }
        assert!(mask.may_have_nulls());
        let mut none = NullMask::default();
        none.set_where(&at, |_| false);
        assert!(!none.may_have_nulls());
        none.set_where(&[], |_| true);
        assert!(!none.may_have_nulls());
    }

    /// fill_from repeats one slot (value or NULL) over a range, typed or
    /// through values, and leaves the rest alone.
    #[test]
    fn fill_from_repeats_one_slot_over_a_range() {
        let types = [LogicalType::Int64, LogicalType::String, LogicalType::Int16];
        for ty in types {
            let src_vals = [Value::Int64(4), Value::Null];
            let mut src = ValueVector::new(ty.clone(), 0);
            for v in &src_vals {
                let v = match (&ty, v) {
                    (LogicalType::String, Value::Int64(x)) => Value::String(x.to_string()),
                    (LogicalType::Int16, Value::Int64(x)) => Value::Int16(*x as i16),
                    _ => v.clone(),
                };
                src.push_value(&v);
            }
            let mut out = ValueVector::new(ty.clone(), 6);
            out.set_null(1, true);
            out.fill_from(1..4, &src, 0);
            out.fill_from(4..5, &src, 1);
            for p in 1..4 {
                assert_eq!(out.get_value(p), src.get_value(0), "{ty:?} {p}");
            }
            assert!(out.is_null(4));
            assert!(!out.is_null(0) && !out.is_null(5));
            out.fill_from(4..6, &src, 0);
            assert_eq!(out.get_value(5), src.get_value(0));
        }
    }

    #[test]
    fn push_owned_moves_into_value_vectors_and_matches_push_value() {
        let list = LogicalType::List(Box::new(LogicalType::Int64));
        let (mut a, mut b) = (ValueVector::new(list.clone(), 0), ValueVector::new(list, 0));
        let vals = [
            Value::list(vec![Value::Int64(1), Value::Int64(2)]),
            Value::Null,
            Value::list(vec![]),
        ];
        for v in &vals {
            a.push_owned(v.clone());
            b.push_value(v);
        }
        let mut ints = ValueVector::new(LogicalType::Int64, 0);
        ints.push_owned(Value::Int64(7));
        ints.push_owned(Value::Null);
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(&a.get_value(i), v);
            assert_eq!(a.get_value(i), b.get_value(i));
        }
        assert_eq!(a.len(), 3);
        assert_eq!(ints.get_value(0), Value::Int64(7));
        assert!(ints.is_null(1));
    }

    #[test]
    fn string_data_round_trip() {
        let mut v = ValueVector::new(LogicalType::String, 3);
        v.set_value(0, &Value::String("héllo".into()));
        v.set_value(2, &Value::String(String::new()));
        v.set_value(1, &Value::Null);
        assert_eq!(v.get_value(0), Value::String("héllo".into()));
        assert_eq!(v.get_value(1), Value::Null);
        assert_eq!(v.get_value(2), Value::String(String::new()));
        let mut w = ValueVector::new(LogicalType::String, 1);
        w.copy_from(0, &v, 0);
        assert_eq!(w.get_value(0), Value::String("héllo".into()));
    }

    #[test]
    fn append_and_gather() {
        let mut a = ValueVector::new(LogicalType::String, 0);
        a.push_value(&Value::String("x".into()));
        a.push_value(&Value::Null);
        let mut b = a.clone();
        b.append(&a);
        assert_eq!(b.len(), 4);
        assert_eq!(b.get_value(2), Value::String("x".into()));
        assert!(b.is_null(3));
        let g = b.gather(&[3, 0]);
        assert!(g.is_null(0));
        assert_eq!(g.get_value(1), Value::String("x".into()));
        let mut i = ValueVector::new(LogicalType::Int64, 2);
        i.set_value(1, &Value::Int64(7));
        i.append(&i.clone());
        assert_eq!(i.gather(&[3]).get_value(0), Value::Int64(7));
    }

    /// One vector's values per storage layout, NULLs included.
    fn sample_cases() -> Vec<(LogicalType, Vec<Value>)> {
        vec![
            (
                LogicalType::Int64,
                vec![Value::Int64(1), Value::Null, Value::Int64(-3)],
            ),
            (
                LogicalType::Date,
                vec![Value::Date(Date(9)), Value::Null, Value::Date(Date(2))],
            ),
            (
                LogicalType::Double,
                vec![Value::Double(0.5), Value::Double(2.0), Value::Null],
            ),
            (
                LogicalType::String,
                vec![
                    Value::Null,
                    Value::String("ab".into()),
                    Value::String("ç".into()),
                ],
            ),
            (
                LogicalType::Bool,
                vec![Value::Bool(true), Value::Null, Value::Bool(false)],
            ),
            (
                LogicalType::List(Box::new(LogicalType::Int64)),
                vec![
                    Value::list(vec![Value::Int64(1)]),
                    Value::Null,
                    Value::list(vec![]),
                ],
            ),
        ]
    }

    #[test]
    fn extend_gather_matches_value_by_value_pushes() {
        let cases = sample_cases();
        let positions = [2u32, 0, 1, 1, 2, 0, 0];
        for (ty, values) in cases {
            let mut src = ValueVector::new(ty.clone(), 0);
            values.iter().for_each(|v| src.push_value(v));
            // A destination that already holds a row (and a NULL) keeps it.
            let mut got = ValueVector::new(ty.clone(), 0);
            got.push_value(&Value::Null);
            let mut want = got.clone();
            got.extend_gather(&src, &positions);
            positions
                .iter()
                .for_each(|&p| want.push_value(&src.get_value(p as usize)));
            assert_eq!(got.len(), 1 + positions.len(), "{ty:?}");
            for pos in 0..got.len() {
                assert_eq!(got.get_value(pos), want.get_value(pos), "{ty:?} at {pos}");
            }
        }
        // A source of another type converts value by value.
        let mut src = ValueVector::new(LogicalType::Int64, 0);
        src.push_value(&Value::Int64(4));
        let mut any = ValueVector::new(LogicalType::Any, 0);
        any.extend_gather(&src, &[0, 0]);
        assert_eq!(any.get_value(1), Value::Int64(4));
    }

    /// The typed range copy and the gather across chunks equal value by
    /// value copies, over a destination that held other values and NULLs.
    #[test]
    fn assign_range_and_gather_across_match_value_copies() {
        for (ty, values) in sample_cases() {
            let mut src = ValueVector::new(ty.clone(), 0);
            values.iter().for_each(|v| src.push_value(v));
            let mut other = src.clone();
            other.append(&src);
            for (start, len) in [(0, 3), (1, 2), (2, 1), (3, 0)] {
                let mut got = other.clone();
                got.assign_range(&src, start, len);
                assert_eq!(got.len(), len, "{ty:?}");
                for p in 0..len {
                    assert_eq!(
                        got.get_value(p),
                        src.get_value(start + p),
                        "{ty:?} {start}+{p}"
                    );
                }
            }
            let indices = [(1u32, 5u32), (0, 0), (0, 2), (1, 1), (0, 1), (1, 3)];
            let got = ValueVector::gather_across(&ty, &[&src, &other], &indices);
            for (pos, &(c, p)) in indices.iter().enumerate() {
                let from = if c == 0 { &src } else { &other };
                assert_eq!(
                    got.get_value(pos),
                    from.get_value(p as usize),
                    "{ty:?} at {pos}"
                );
            }
        }
    }

    #[test]
    fn null_mask_tracks_bits() {
        let mut m = NullMask::with_len(130);
        assert!(!m.is_null(129));
        m.set(129, true);
        assert!(m.is_null(129) && !m.is_null(128));
        m.set(129, false);
        assert!(!m.is_null(129));
        m.set(500, true);
        assert!(m.is_null(500));
        m.clear();
        assert!(!m.is_null(500));
    }

    /// `union_prefix` sets exactly the other mask's NULLs below `len`
    /// (none at or past it, even in the same word) and keeps its own.
    #[test]
    fn null_masks_join_below_a_length() {
        for len in [0, 1, 63, 64, 65, 127, 128, 130] {
            let mut other = NullMask::with_len(200);
            for p in (0..200).filter(|p| p % 3 == 0 || *p == 64 || *p == 129) {
                other.set(p, true);
            }
            let mut m = NullMask::with_len(10);
            m.set(1, true);
            m.union_prefix(&other, len);
            for p in 0..200 {
                let want = p == 1 || (p < len && other.is_null(p));
                assert_eq!(m.is_null(p), want, "len {len}, position {p}");
            }
        }
        let mut m = NullMask::with_len(64);
        m.union_prefix(&NullMask::with_len(64), 64);
        assert!(!m.may_have_nulls());
    }

    #[test]
    fn temporal_values_use_integer_storage() {
        let mut v = ValueVector::new(LogicalType::Date, 1);
        v.set_value(0, &Value::Date(Date(5)));
        assert!(matches!(v.data, VectorData::I32(ref d) if d[0] == 5));
        assert_eq!(v.get_value(0), Value::Date(Date(5)));
    }
}
