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
