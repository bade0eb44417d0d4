//! A recursive join's output rows, kept as what each row is made of (its
//! input row, destination, length, count and path number) and built into
//! vectors morsel by morsel as the parent part's scan reads them, on every
//! worker: the rows are never materialized as columns (at 2.6 M rows that
//! was over 100 bytes a row of freshly zeroed memory, on one thread). A
//! part that must see its rows whole (UNWIND, OPTIONAL MATCH padding)
//! materializes them ([`JoinRows::materialize`]).

use std::sync::Arc;

use kith_common::{
    Chunk, Error, InternalId, LogicalType, NullMask, Result, Value, ValueVector, VectorData,
};

use super::path_values::{LazyPaths, PathCache};
use super::recursive_join::COUNT_TYPE;
use super::Pos;
use crate::result_set::ResultSet;

/// The rows of a recursive join: each input row repeated once per
/// destination found from its source, then (a left outer join) one padded
/// row per input row without any. Columns: the input's, the destination,
/// the length (or cost) when asked for, the path columns, the count.
pub struct JoinRows {
    /// The join's input rows.
    pub input: Chunk,
    /// Per row, the input row it continues.
    pub input_row: Vec<u32>,
    pub dst: Vec<InternalId>,
    /// Per row, the length, or the cost's bits (`weighted`); empty without
    /// a length column.
    pub len: Vec<u64>,
    pub weighted: bool,
    pub with_len: bool,
    /// Per row, how many paths it stands for; empty while every count is
    /// 1 (one row per path).
    pub count: Vec<u64>,
    /// Per row, the number of its path (when paths are output); empty while
    /// each row's is its row number (one input row per source).
    pub numbers: Vec<u64>,
    /// Rows from here on are padded: NULL destination, length and paths.
    pub padded_from: usize,
    /// Builds the path columns' values from the path numbers.
    pub paths: Option<LazyPaths>,
}

impl JoinRows {
    pub fn num_rows(&self) -> usize {
        self.input_row.len()
    }

    /// The number of paths row `r` stands for.
    #[inline]
    pub fn count(&self, r: usize) -> u64 {
        self.count.get(r).copied().unwrap_or(1)
    }

    /// Records the count of the row just pushed (the rows' other columns
    /// first): a count vector is made only once a count is not 1.
    pub fn push_count(&mut self, c: u64) {
        push_unless_implied(&mut self.count, self.input_row.len() - 1, c, |_| 1);
    }

    /// Records the path number of the row just pushed: a number vector is
    /// made only once a row's number is not its row number.
    pub fn push_number(&mut self, n: u64) {
        push_unless_implied(&mut self.numbers, self.input_row.len() - 1, n, |r| r);
    }

    /// Writes rows `start..start + len` into the result set, column `c` of
    /// the rows to `columns[c]` (the count column is not written).
    pub fn fill(
        &self,
        start: usize,
        len: usize,
        columns: &[Pos],
        rs: &mut ResultSet,
        cache: &mut PathCache,
    ) -> Result<()> {
        for (c, &(chunk, vector)) in columns.iter().enumerate() {
            let out = &mut rs.chunks[chunk].vectors[vector];
            self.fill_column(c, start, len, out, cache)?;
        }
        Ok(())
    }

    /// Column `c` of rows `start..start + len`.
    fn fill_column(
        &self,
        c: usize,
        start: usize,
        len: usize,
        out: &mut ValueVector,
        cache: &mut PathCache,
    ) -> Result<()> {
        let end = start + len;
        // Rows `padded..len` of the morsel are padded ones.
        let padded = self.padded_from.clamp(start, end) - start;
        let inputs = self.input.columns.len();
        if c < inputs {
            out.reset(0);
            out.extend_gather(&self.input.columns[c], &self.input_row[start..end]);
            return Ok(());
        }
        if c == inputs {
            out.reset(len);
            match &mut out.data {
                VectorData::Id(d) => d[..len].copy_from_slice(&self.dst[start..end]),
                _ => {
                    for p in 0..len {
                        out.set_value(p, &Value::InternalId(self.dst[start + p]));
                    }
                }
            }
        } else if c == inputs + 1 && self.with_len {
            out.reset(len);
            let lens = &self.len[start..end];
            match (&mut out.data, self.weighted) {
                (VectorData::F64(d), true) => {
                    for (x, &bits) in d.iter_mut().zip(lens) {
                        *x = f64::from_bits(bits);
                    }
                }
                (VectorData::I64(d), false) => {
                    for (x, &l) in d.iter_mut().zip(lens) {
                        *x = l as i64;
                    }
                }
                _ => {
                    for (p, &l) in lens.iter().enumerate() {
                        let v = match self.weighted {
                            true => Value::Double(f64::from_bits(l)),
                            false => Value::Int64(l as i64),
                        };
                        out.set_value(p, &v);
                    }
                }
            }
        } else {
            let paths = self.paths.as_ref();
            let Some((paths, part)) = paths.and_then(|p| Some((p, p.part_of(c)?))) else {
                return Err(Error::internal(format!(
                    "recursive join rows have no column {c}"
                )));
            };
            let numbers: std::borrow::Cow<'_, [u64]> = match self.numbers.is_empty() {
                true => (start as u64..end as u64).collect(),
                false => self.numbers[start..end].into(),
            };
            return paths.fill(part, &numbers, padded, out, cache);
        }
        for p in padded..len {
            out.set_null(p, true);
        }
        Ok(())
    }

    /// The rows as columns (the count column last), for a part that reads
    /// them whole. Path values are built only by [`JoinRows::fill`].
    pub fn materialize(&self) -> Result<Chunk> {
        if self.paths.is_some() {
            return Err(Error::internal(
                "path values of a recursive join read before its part's scan",
            ));
        }
        let n = self.num_rows();
        let mut types: Vec<LogicalType> = self.input.columns.iter().map(|c| c.ty.clone()).collect();
        types.push(LogicalType::InternalId);
        if self.with_len {
            types.push(match self.weighted {
                true => LogicalType::Double,
                false => LogicalType::Int64,
            });
        }
        let visible = types.len();
        let mut columns = Vec::with_capacity(visible + 1);
        for (c, ty) in types[..visible].iter().enumerate() {
            let mut v = ValueVector::new(ty.clone(), 0);
            self.fill_column(c, 0, n, &mut v, &mut PathCache::default())?;
            columns.push(v);
        }
        columns.push(ValueVector {
            ty: COUNT_TYPE,
            data: VectorData::U64((0..n).map(|r| self.count(r)).collect()),
            nulls: NullMask::with_len(n),
        });
        Ok(Chunk {
            columns,
            num_rows: n,
        })
    }
}

/// Pushes row `row`'s value `x` onto `v`, which stays empty while every
/// row's value is the one `implied` gives for it.
fn push_unless_implied(v: &mut Vec<u64>, row: usize, x: u64, implied: impl Fn(u64) -> u64) {
    if v.is_empty() {
        if x == implied(row as u64) {
            return;
        }
        *v = (0..row as u64).map(&implied).collect();
    }
    v.push(x);
}

/// A part's input rows: an earlier part's output (with the count as the
/// last column after a recursive join that had to be materialized), or a
/// recursive join's rows, built as they are read.
#[derive(Clone)]
pub enum PartRows {
    Join(Arc<JoinRows>),
    Chunk(Arc<Chunk>),
}

impl PartRows {
    pub fn num_rows(&self) -> usize {
        match self {
            PartRows::Join(j) => j.num_rows(),
            PartRows::Chunk(c) => c.num_rows,
        }
    }
}
