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

/// Position `a` of `x` against position `b` of `y` (two vectors of one
/// type), ascending with NULLs last: the order [`KeyColumn::cmp`] gives
/// within one vector.
fn cmp_across(x: &ValueVector, a: usize, y: &ValueVector, b: usize) -> Ordering {
    match (x.is_null(a), y.is_null(b)) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    fn int(v: &VectorData, r: usize) -> Option<i64> {
        Some(match v {
            VectorData::I8(d) => d[r] as i64,
            VectorData::I16(d) => d[r] as i64,
            VectorData::I32(d) => d[r] as i64,
            VectorData::I64(d) => d[r],
            VectorData::U8(d) => d[r] as i64,
            VectorData::U16(d) => d[r] as i64,
            VectorData::U32(d) => d[r] as i64,
            _ => return None,
        })
    }
    fn float(v: &VectorData, r: usize) -> Option<f64> {
        match v {
            VectorData::F32(d) => Some(d[r] as f64),
            VectorData::F64(d) => Some(d[r]),
            _ => None,
        }
    }
    if let (Some(p), Some(q)) = (int(&x.data, a), int(&y.data, b)) {
        return p.cmp(&q);
    }
    if let (Some(p), Some(q)) = (float(&x.data, a), float(&y.data, b)) {
        return p.total_cmp(&q);
    }
    if let (VectorData::Str(p), VectorData::Str(q)) = (&x.data, &y.data) {
        return p.get(a).cmp(q.get(b));
    }
    x.get_value(a).total_cmp(&y.get_value(b))
}

/// Row `a` of `x` against row `b` of `y` by the sort keys (the columns from
/// `first_key`) in the query's order.
fn cmp_rows(
    x: &Chunk,
    a: usize,
    y: &Chunk,
    b: usize,
    first_key: usize,
    descending: &[bool],
) -> Ordering {
    for (i, (p, q)) in x.columns[first_key..]
        .iter()
        .zip(&y.columns[first_key..])
        .enumerate()
    {
        let o = cmp_across(p, a, q, b);
        let o = if descending.get(i).copied().unwrap_or(false) {
            o.reverse()
        } else {
            o
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Where the merge of sorted runs (each sorted by the key columns from
/// `first_key`, as [`sort_chunk`] leaves them) reaches each of `ranks`:
/// per rank, per run, how many of the run's rows the merge's first `rank`
/// rows hold. The merge is the stable one (rows with equal keys in run
/// order, then row order: a stable sort of the runs put end to end), so
/// the cuts are exact: the rows between two ranks, sorted on their own
/// (on their own worker), are that stretch of the merge, and a stretch
/// SKIP passes over or LIMIT never reaches need not be sorted at all.
/// Each rank costs about `runs² · log² rows` comparisons.
pub fn cut_sorted_runs(
    runs: &[Chunk],
    first_key: usize,
    descending: &[bool],
    ranks: &[usize],
) -> Vec<Vec<usize>> {
    // The first of `0..n` for which `before` fails (`before` holds for a
    // prefix).
    fn first_not(n: usize, before: impl Fn(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if before(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
    // Rows of run `i` that the merge puts before row `p` of run `j`.
    let ahead = |i: usize, j: usize, p: usize| -> usize {
        if i == j {
            return p;
        }
        first_not(runs[i].num_rows, |r| {
            match cmp_rows(&runs[i], r, &runs[j], p, first_key, descending) {
                Ordering::Less => true,
                Ordering::Equal => i < j,
                Ordering::Greater => false,
            }
        })
    };
    let rank_of = |j: usize, p: usize| (0..runs.len()).map(|i| ahead(i, j, p)).sum::<usize>();
    ranks
        .iter()
        .map(|&t| {
            // The row at position `t` of the merge: in one run, where
            // the first row whose rank is not below `t` has rank `t`.
            for j in 0..runs.len() {
                let p = first_not(runs[j].num_rows, |p| rank_of(j, p) < t);
                if p < runs[j].num_rows && rank_of(j, p) == t {
                    return (0..runs.len()).map(|i| ahead(i, j, p)).collect();
                }
            }
            // At or past the end.
            runs.iter().map(|r| r.num_rows).collect()
        })
        .collect()
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

    proptest::proptest! {
        /// Sorted runs cut at ranks, the rows between two ranks sorted on
        /// their own and the pieces put end to end, are those rows of one
        /// stable sort of all the rows: integer keys with NULLs and ties,
        /// a second key that is a string (the comparator's path) or an
        /// integer (the packed one), either direction; the payload column
        /// (run and row) shows ties kept in run order.
        #[test]
        fn cut_runs_sort_piece_by_piece_like_one_sort(
            runs in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::option::weighted(0.9, 0i64..40), 0i64..6),
                    0..300,
                ),
                1..5,
            ),
            desc in (proptest::bool::ANY, proptest::bool::ANY),
            strings in proptest::bool::ANY,
            window in (0usize..1000, 0usize..1000),
            parts in 1usize..7,
        ) {
            let descending = [desc.0, desc.1];
            let second = if strings { LogicalType::String } else { LogicalType::Int64 };
            let chunk_of = |rows: &[(Option<i64>, i64, i64)]| {
                let mut c = Chunk::new(&[LogicalType::Int64, LogicalType::Int64, second.clone()], 0);
                for (x, y, payload) in rows {
                    c.columns[0].push_value(&Value::Int64(*payload));
                    c.columns[1].push_value(&x.map_or(Value::Null, Value::Int64));
                    c.columns[2].push_value(&if strings {
                        Value::String(format!("s{y}"))
                    } else {
                        Value::Int64(*y)
                    });
                }
                c.num_rows = rows.len();
                c
            };
            let rows_of = |c: &Chunk| -> Vec<Vec<Value>> { (0..c.num_rows).map(|r| c.row(r)).collect() };
            let runs: Vec<Chunk> = runs
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let rows: Vec<_> = r
                        .iter()
                        .enumerate()
                        .map(|(p, (x, y))| (*x, *y, (i * 1000 + p) as i64))
                        .collect();
                    sort_chunk(&chunk_of(&rows), 1, &descending, None)
                })
                .collect();
            let mut all = Chunk::new(&runs[0].columns.iter().map(|c| c.ty.clone()).collect::<Vec<_>>(), 0);
            for r in &runs {
                for (dst, src) in all.columns.iter_mut().zip(&r.columns) {
                    dst.append(src);
                }
                all.num_rows += r.num_rows;
            }
            let want = rows_of(&sort_chunk(&all, 1, &descending, None));
            let total = want.len();
            let (from, to) = (window.0.min(window.1).min(total), window.0.max(window.1).min(total));
            let ranks: Vec<usize> = (0..=parts).map(|i| from + (to - from) * i / parts).collect();
            let cuts = cut_sorted_runs(&runs, 1, &descending, &ranks);
            let mut got: Vec<Vec<Value>> = Vec::new();
            for (rank, w) in ranks.iter().zip(&cuts) {
                proptest::prop_assert_eq!(w.iter().sum::<usize>(), *rank);
            }
            for w in cuts.windows(2) {
                let mut piece = Vec::new();
                for (run, (a, b)) in runs.iter().zip(w[0].iter().zip(&w[1])) {
                    proptest::prop_assert!(a <= b);
                    piece.extend((*a..*b).map(|r| run.row(r)));
                }
                let mut c = chunk_of(&[]);
                for r in &piece {
                    for (dst, v) in c.columns.iter_mut().zip(r) {
                        dst.push_value(v);
                    }
                }
                c.num_rows = piece.len();
                got.extend(rows_of(&sort_chunk(&c, 1, &descending, None)));
            }
            proptest::prop_assert_eq!(got, want[from..to].to_vec());
        }
    }
}
