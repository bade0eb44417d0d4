//! ORDER BY: each worker collects its rows (output columns followed by the
//! sort-key columns) and sorts them locally; with a LIMIT it keeps only the
//! best `skip + limit` rows (top-k: sort and truncate whenever the buffer
//! doubles). The sorted runs are then merged. Order is Cypher's: ascending
//! puts NULLs last, descending puts them first.

use std::cmp::Ordering;
use std::sync::Arc;

use kith_common::{Chunk, Result, Value, ValueVector, VectorData};

use super::collect::Collect;
use super::LocalSink;
use crate::result_set::{ResultSet, SlotLayout};

/// One key column prepared for comparisons without building values for
/// fixed-width and string columns.
enum KeyColumn<'a> {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Str(&'a ValueVector),
    Other(Vec<Value>),
}

impl KeyColumn<'_> {
    fn new(v: &ValueVector, rows: usize) -> KeyColumn<'_> {
        let ints = |f: &dyn Fn(usize) -> i64| -> KeyColumn {
            KeyColumn::Int((0..rows).map(|r| (!v.is_null(r)).then(|| f(r))).collect())
        };
        match &v.data {
            VectorData::I8(d) => ints(&|r| d[r] as i64),
            VectorData::I16(d) => ints(&|r| d[r] as i64),
            VectorData::I32(d) => ints(&|r| d[r] as i64),
            VectorData::I64(d) => ints(&|r| d[r]),
            VectorData::U8(d) => ints(&|r| d[r] as i64),
            VectorData::U16(d) => ints(&|r| d[r] as i64),
            VectorData::U32(d) => ints(&|r| d[r] as i64),
            VectorData::F32(d) => KeyColumn::Float(
                (0..rows)
                    .map(|r| (!v.is_null(r)).then(|| d[r] as f64))
                    .collect(),
            ),
            VectorData::F64(d) => {
                KeyColumn::Float((0..rows).map(|r| (!v.is_null(r)).then(|| d[r])).collect())
            }
            VectorData::Str(_) => KeyColumn::Str(v),
            _ => KeyColumn::Other((0..rows).map(|r| v.get_value(r)).collect()),
        }
    }

    /// Ascending order with NULLs last.
    fn cmp(&self, a: usize, b: usize) -> Ordering {
        fn nulls_last<T>(x: Option<T>, y: Option<T>, f: impl Fn(T, T) -> Ordering) -> Ordering {
            match (x, y) {
                (None, None) => Ordering::Equal,
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(x), Some(y)) => f(x, y),
            }
        }
        match self {
            KeyColumn::Int(v) => nulls_last(v[a], v[b], |x, y| x.cmp(&y)),
            KeyColumn::Float(v) => nulls_last(v[a], v[b], |x, y| x.total_cmp(&y)),
            KeyColumn::Str(v) => {
                let get = |r: usize| match &v.data {
                    VectorData::Str(s) if !v.is_null(r) => Some(s.get(r)),
                    _ => None,
                };
                nulls_last(get(a), get(b), |x, y| x.cmp(y))
            }
            KeyColumn::Other(v) => v[a].total_cmp(&v[b]),
        }
    }
}

/// The rows of `chunk` sorted by the key columns starting at `first_key`,
/// keeping at most `keep` rows (top-k: a selection, then a sort of the k).
pub fn sort_chunk(
    chunk: &Chunk,
    first_key: usize,
    descending: &[bool],
    keep: Option<usize>,
) -> Chunk {
    let n = chunk.num_rows;
    if let Some(order) = packed_order(&chunk.columns[first_key..], n, descending, keep) {
        return Chunk {
            columns: chunk.columns.iter().map(|c| c.gather(&order)).collect(),
            num_rows: order.len(),
        };
    }
    let keys: Vec<KeyColumn> = chunk.columns[first_key..]
        .iter()
        .map(|c| KeyColumn::new(c, n))
        .collect();
    let cmp = |a: &u64, b: &u64| -> Ordering {
        for (k, desc) in keys.iter().zip(descending) {
            let o = k.cmp(*a as usize, *b as usize);
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    };
    let mut order: Vec<u64> = (0..n as u64).collect();
    match keep {
        Some(k) if k < n => {
            if k > 0 {
                order.select_nth_unstable_by(k - 1, cmp);
            }
            order.truncate(k);
            order.sort_by(cmp);
        }
        _ => order.sort_by(cmp),
    }
    Chunk {
        columns: chunk.columns.iter().map(|c| c.gather(&order)).collect(),
        num_rows: order.len(),
    }
}

/// Bits needed to hold `x`.
fn bits_for(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// One integer key's `n` rows as ordinals that sort in the key's order
/// (NULLs last ascending, first descending), shifted to start at 0, and
/// the bits the largest ordinal needs; None for a key of another type.
fn ordinals(v: &ValueVector, n: usize, desc: bool) -> Option<(Vec<u64>, u32)> {
    let flip = if desc { u64::MAX } else { 0 };
    // Order-preserving bits, inverted when descending.
    let norm = move |x: i64| ((x as u64) ^ (1 << 63)) ^ flip;
    let mut ords: Vec<u64> = match &v.data {
        VectorData::I8(d) => d.get(..n)?.iter().map(|&x| norm(x.into())).collect(),
        VectorData::I16(d) => d.get(..n)?.iter().map(|&x| norm(x.into())).collect(),
        VectorData::I32(d) => d.get(..n)?.iter().map(|&x| norm(x.into())).collect(),
        VectorData::I64(d) => d.get(..n)?.iter().map(|&x| norm(x)).collect(),
        VectorData::U8(d) => d.get(..n)?.iter().map(|&x| norm(x.into())).collect(),
        VectorData::U16(d) => d.get(..n)?.iter().map(|&x| norm(x.into())).collect(),
        VectorData::U32(d) => d.get(..n)?.iter().map(|&x| norm(x.into())).collect(),
        _ => return None,
    };
    let nulls = v.nulls.may_have_nulls() && (0..n).any(|r| v.is_null(r));
    let live = |r: usize| !nulls || !v.is_null(r);
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for (r, &b) in ords.iter().enumerate() {
        if live(r) {
            lo = lo.min(b);
            hi = hi.max(b);
        }
    }
    if lo > hi {
        (lo, hi) = (0, 0);
    }
    // With NULLs the ordinals run 0..=span+1: the NULL one last ascending,
    // first (values from 1) descending.
    let span = hi - lo;
    let (first_value, null, top) = match (nulls, desc) {
        (false, _) => (0, 0, span),
        (true, false) => (0, span + 1, span + 1),
        (true, true) => (1, 0, span + 1),
    };
    for (r, o) in ords.iter_mut().enumerate() {
        *o = if live(r) { *o - lo + first_value } else { null };
    }
    Some((ords, bits_for(top)))
}

/// The row order of integer keys packed, with the row number last, into
/// one integer per row: a key spans only the bits between its smallest and
/// largest value, so two keys and the row number usually fit 64 bits, and
/// the rows are radix sorted (in 128 bits, sorted by comparison). None for
/// a key that is not an integer, or keys that need more bits.
fn packed_order(
    columns: &[ValueVector],
    n: usize,
    descending: &[bool],
    keep: Option<usize>,
) -> Option<Vec<u64>> {
    if n > u32::MAX as usize {
        return None;
    }
    let row_bits = bits_for(n.saturating_sub(1) as u64);
    let keys: Vec<(Vec<u64>, u32)> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| ordinals(c, n, descending.get(i).copied().unwrap_or(false)))
        .collect::<Option<_>>()?;
    let total = row_bits + keys.iter().map(|k| k.1).sum::<u32>();
    let pack = |r: usize| -> u128 {
        let mut x: u128 = 0;
        for (ords, bits) in &keys {
            x = (x << bits) | u128::from(ords[r]);
        }
        (x << row_bits) | r as u128
    };
    let row_mask = (1u128 << row_bits) - 1;
    if total <= 64 {
        let mut packed: Vec<u64> = (0..n).map(|r| pack(r) as u64).collect();
        top_or_sort(&mut packed, keep, |v: &mut Vec<u64>| {
            // The workers' sorted runs, concatenated, merge in one pass of
            // the run-adaptive sort; anything else is radix sorted.
            let descents = v.windows(2).filter(|w| w[0] > w[1]).count();
            if descents < 16 {
                v.sort();
            } else {
                radix_sort(v, total)
            }
        });
        return Some(packed.iter().map(|&x| x & row_mask as u64).collect());
    }
    if total <= 128 {
        let mut packed: Vec<u128> = (0..n).map(pack).collect();
        top_or_sort(&mut packed, keep, |v: &mut Vec<u128>| v.sort_unstable());
        return Some(packed.iter().map(|&x| (x & row_mask) as u64).collect());
    }
    None
}

/// Sorts `v` (distinct values: each ends in its row number, so any sort is
/// stable), or with `keep` only its `keep` smallest, first.
fn top_or_sort<T: Ord + Copy>(v: &mut Vec<T>, keep: Option<usize>, sort: impl Fn(&mut Vec<T>)) {
    match keep {
        Some(k) if k < v.len() => {
            if k > 0 {
                v.select_nth_unstable(k - 1);
            }
            v.truncate(k);
            v.sort_unstable();
        }
        _ => sort(v),
    }
}

/// Least-significant-digit radix sort of values below `2^bits`, by 11-bit
/// digits (a digit's counts fit the L1 cache), skipping digits every value
/// shares; short inputs are sorted by comparison.
fn radix_sort(v: &mut Vec<u64>, bits: u32) {
    const DIGIT: u32 = 11;
    const BUCKETS: usize = 1 << DIGIT;
    if v.len() < 512 {
        v.sort_unstable();
        return;
    }
    let digits = bits.div_ceil(DIGIT).max(1) as usize;
    let mut counts = vec![[0usize; BUCKETS]; digits];
    for &x in v.iter() {
        for (d, c) in counts.iter_mut().enumerate() {
            c[((x >> (DIGIT as usize * d)) as usize) & (BUCKETS - 1)] += 1;
        }
    }
    let mut from = std::mem::take(v);
    let mut to = vec![0u64; from.len()];
    for (d, c) in counts.iter().enumerate() {
        if c.contains(&from.len()) {
            continue;
        }
        let mut at = [0usize; BUCKETS];
        let mut sum = 0;
        for (a, &k) in at.iter_mut().zip(c.iter()) {
            *a = sum;
            sum += k;
        }
        let shift = DIGIT as usize * d;
        for &x in &from {
            let b = ((x >> shift) as usize) & (BUCKETS - 1);
            to[at[b]] = x;
            at[b] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *v = from;
}

pub struct OrderBy {
    pub inner: Collect,
    pub first_key: usize,
    pub descending: Arc<Vec<bool>>,
    /// Rows needed at most (skip + limit) when the query has a LIMIT.
    pub keep: Option<usize>,
}

impl OrderBy {
    /// This worker's rows, sorted.
    pub fn finish(self) -> Chunk {
        sort_chunk(
            &self.inner.rows,
            self.first_key,
            &self.descending,
            self.keep,
        )
    }
}

impl LocalSink for OrderBy {
    fn consume(&mut self, rs: &ResultSet, layout: &SlotLayout) -> Result<()> {
        self.inner.consume(rs, layout)?;
        if let Some(k) = self.keep {
            if self.inner.rows.num_rows > (2 * k).max(1024) {
                self.inner.rows =
                    sort_chunk(&self.inner.rows, self.first_key, &self.descending, Some(k));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::LogicalType;

    /// The rows' order through the comparator (the path other keys take).
    fn by_comparator(chunk: &Chunk, descending: &[bool], keep: Option<usize>) -> Vec<Vec<Value>> {
        let n = chunk.num_rows;
        let keys: Vec<KeyColumn> = chunk.columns.iter().map(|c| KeyColumn::new(c, n)).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            for (k, desc) in keys.iter().zip(descending) {
                let o = k.cmp(a, b);
                let o = if *desc { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        order.truncate(keep.unwrap_or(n));
        order.into_iter().map(|r| chunk.row(r)).collect()
    }

    proptest::proptest! {
        /// One or two integer keys (NULLs, both directions, duplicates,
        /// extreme values, with and without a top-k) sort as the comparator
        /// path sorts, ties in row order: packed in 64 bits (radix sorted
        /// from 512 rows), in 128 bits, or neither.
        #[test]
        fn integer_keys_sort_like_the_comparator(
            rows in proptest::collection::vec(
                (proptest::option::weighted(0.8, proptest::num::i64::ANY),
                 proptest::option::weighted(0.8, proptest::num::i32::ANY)),
                0..1500,
            ),
            // Per case, the keys' ranges: a few values, about 18 bits, any.
            scale in (0usize..3, 0usize..2),
            two in proptest::bool::ANY,
            desc in (proptest::bool::ANY, proptest::bool::ANY),
            keep in proptest::option::of(0usize..1600),
        ) {
            let mut a = ValueVector::new(LogicalType::Int64, 0);
            let mut b = ValueVector::new(LogicalType::Int32, 0);
            for (x, y) in &rows {
                let x = x.map(|x| [x % 3, x % 100_000, x][scale.0]);
                let y = y.map(|y| [y % 2, y][scale.1]);
                a.push_value(&x.map_or(Value::Null, Value::Int64));
                b.push_value(&y.map_or(Value::Null, Value::Int32));
            }
            let columns = if two { vec![a, b] } else { vec![a] };
            let chunk = Chunk { columns, num_rows: rows.len() };
            let descending = [desc.0, desc.1];
            let sorted = sort_chunk(&chunk, 0, &descending, keep);
            let got: Vec<Vec<Value>> = (0..sorted.num_rows).map(|r| sorted.row(r)).collect();
            proptest::prop_assert_eq!(got, by_comparator(&chunk, &descending, keep));
        }
    }
}
