//! A recursive join's output rows, kept as what each row is made of (its
//! input row, destination, length, count and path number) and built into
//! vectors morsel by morsel as the parent part's scan reads them, on every
//! worker: the rows are never materialized as columns (at 2.6 M rows that
//! was over 100 bytes a row of freshly zeroed memory, on one thread). A
//! part that must see its rows whole (UNWIND, OPTIONAL MATCH padding)
//! materializes them ([`JoinRows::materialize`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hashbrown::HashMap;
use parking_lot::Mutex;

use kith_common::{
    Chunk, Error, InternalId, LogicalType, NullMask, Result, TableId, Value, ValueVector,
    VectorData,
};
use kith_graph::graph::mask_has;
use kith_graph::{CostCountRow, CostRow, LenRow, PathRow, Sink};

use super::path_values::{FoundPaths, IdSpace, LazyPaths, PathCache, PathPart};
use super::recursive_join::COUNT_TYPE;
use super::scan_rows::RowPieces;
use super::{Pos, QueryContext};
use crate::memory::{MemoryCharge, QueryMemory};
use crate::result_set::ResultSet;

/// The rows of a recursive join: each input row repeated once per
/// destination found from its source, then (a left outer join) one padded
/// row per input row without any. Columns: the input's, the destination,
/// the length (or cost) when asked for, the path columns, the count.
pub struct JoinRows {
    /// The join's input rows (shared by the batches of a pipelined join).
    pub input: Arc<Chunk>,
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
    /// No rows over `input`.
    pub fn empty(input: Arc<Chunk>, with_len: bool) -> JoinRows {
        JoinRows {
            input,
            input_row: Vec::new(),
            dst: Vec::new(),
            len: Vec::new(),
            weighted: false,
            with_len,
            count: Vec::new(),
            numbers: Vec::new(),
            padded_from: usize::MAX,
            paths: None,
        }
    }

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
    Chunks(Arc<RowPieces>),
}

impl PartRows {
    /// The length morsels are cut from (see [`RowPieces::span`]).
    pub fn span(&self) -> u64 {
        match self {
            PartRows::Join(j) => j.num_rows() as u64,
            PartRows::Chunks(c) => c.span(),
        }
    }
}

/// The input rows of a recursive join by source: where each input row's
/// source stands in the source list, and each source's input rows
/// (usually one) in `by_src[start[i]..start[i + 1]]`.
pub struct SourceRows {
    row_si: Vec<Option<usize>>,
    start: Vec<usize>,
    by_src: Vec<u32>,
}

impl SourceRows {
    /// `row_src`: per input row, its source node (None: NULL);
    /// `index_of`: a source node's index among the `sources` sources.
    pub fn new(
        num_rows: usize,
        row_src: &[Option<u64>],
        index_of: &HashMap<u64, usize>,
        sources: usize,
    ) -> SourceRows {
        let row_si: Vec<Option<usize>> = (0..num_rows)
            .map(|r| {
                row_src
                    .get(r)
                    .copied()
                    .flatten()
                    .and_then(|s| index_of.get(&s).copied())
            })
            .collect();
        let mut start = vec![0usize; sources + 1];
        for si in row_si.iter().flatten() {
            start[si + 1] += 1;
        }
        for i in 0..sources {
            start[i + 1] += start[i];
        }
        let mut cursor = start.clone();
        let mut by_src = vec![0u32; start[sources]];
        for (r, si) in row_si.iter().enumerate() {
            if let Some(si) = si {
                by_src[cursor[*si]] = r as u32;
                cursor[*si] += 1;
            }
        }
        SourceRows {
            row_si,
            start,
            by_src,
        }
    }

    pub fn num_sources(&self) -> usize {
        self.start.len() - 1
    }

    /// The input rows of source `si`.
    #[inline]
    pub fn rows_of(&self, si: usize) -> &[u32] {
        &self.by_src[self.start[si]..self.start[si + 1]]
    }

    /// Where [`SourceRows::rows_of`] finds source `si`'s rows in
    /// [`SourceRows::all_rows`].
    #[inline]
    fn range_of(&self, si: usize) -> (u32, u32) {
        (self.start[si] as u32, self.start[si + 1] as u32)
    }

    /// Every source's input rows, source by source.
    #[inline]
    fn all_rows(&self) -> &[u32] {
        &self.by_src
    }

    /// Marks where `out`'s padded rows start and, for a left outer join,
    /// adds one for each input row whose source found nothing (`hit`:
    /// per source): NULL destination, length and path.
    pub fn pad_unmatched(&self, left_outer: bool, hit: &[bool], out: &mut JoinRows) {
        out.padded_from = out.input_row.len();
        if !left_outer {
            return;
        }
        for (r, si) in self.row_si.iter().enumerate() {
            if si.is_some_and(|si| hit[si]) {
                continue;
            }
            out.input_row.push(r as u32);
            out.dst.push(InternalId(0));
            if out.with_len {
                out.len.push(0);
            }
            out.push_count(1);
            if !out.numbers.is_empty() {
                out.numbers.push(0);
            }
        }
    }
}

/// Builds a counting or lengths search's [`JoinRows`] from its rows as the
/// workers hand them over ([`Sink`]), each worker converting its own batch:
/// the search's rows are never kept whole. Keeping them (32 bytes a row,
/// 2.6 M rows from 64 sources) and then copying them into the join's rows
/// on one thread took most of such a query.
pub struct JoinRowsSink {
    index_of: HashMap<u64, usize>,
    sources: SourceRows,
    /// Destinations kept (None: all).
    dst_mask: Option<Arc<[u64]>>,
    /// The destinations' node ids (None: the pattern's label names no
    /// table, so nothing is kept).
    dst_ids: Option<DstIds>,
    with_len: bool,
    out: Mutex<SinkRows>,
    /// The rows are charged against the query's memory limit as they grow.
    memory: Arc<QueryMemory>,
    /// Set: batches go there, not into `out`.
    forward: Option<Forward>,
    /// The length column holds costs' bits (weighted searches).
    weighted: bool,
    /// Rows from a source to itself are dropped (a weighted search's
    /// zero-cost row when the lower bound is 1).
    drop_self: bool,
    /// Rows of one source and length are merged (see `merged`).
    merge: bool,
}

/// Where a pipelined join's batches go.
struct Forward {
    input: Arc<Chunk>,
    to: Arc<dyn JoinRowsConsumer>,
    rows: AtomicU64,
    /// A left outer join: per source, whether it found a row, noted as
    /// batches go; the rows of those that found nothing go last, padded.
    found: Option<Mutex<Vec<bool>>>,
}

impl Forward {
    fn new(
        input: Arc<Chunk>,
        to: Arc<dyn JoinRowsConsumer>,
        left_outer: bool,
        sources: usize,
    ) -> Forward {
        Forward {
            input,
            to,
            rows: AtomicU64::new(0),
            found: left_outer.then(|| Mutex::new(vec![false; sources])),
        }
    }

    /// Notes that the sources `hits` found rows (a left outer join).
    fn note(&self, hits: &[usize]) {
        if let (Some(found), false) = (&self.found, hits.is_empty()) {
            let mut found = found.lock();
            hits.iter().for_each(|&si| found[si] = true);
        }
    }

    /// After the search: a left outer join's padded rows, one per input
    /// row of `sources` whose source found nothing (none otherwise).
    fn padded(&self, sources: &SourceRows, with_len: bool, weighted: bool) -> JoinRows {
        let mut rows = JoinRows::empty(Arc::clone(&self.input), with_len);
        rows.weighted = weighted;
        if let Some(found) = &self.found {
            sources.pad_unmatched(true, &found.lock(), &mut rows);
        }
        rows
    }

    /// Hands `rows` on, unless there are none.
    fn forward(&self, rows: JoinRows) -> Result<()> {
        if rows.num_rows() == 0 {
            return Ok(());
        }
        self.rows
            .fetch_add(rows.num_rows() as u64, Ordering::Relaxed);
        self.to.consume(rows)
    }
}

/// How the join-row sink turns a search's node offsets into node ids.
#[derive(Clone)]
pub enum DstIds {
    /// One node table.
    Table(TableId),
    /// Several, as a `UnionCsr` numbers them: table `i` owns the offsets
    /// from `starts[i]`; `None` where the destination's label rules the
    /// table out (its rows are dropped).
    Union {
        starts: Vec<u64>,
        tables: Vec<Option<TableId>>,
    },
}

impl DstIds {
    #[inline]
    fn id(&self, d: u64) -> Option<InternalId> {
        match self {
            DstIds::Table(t) => Some(InternalId::new(*t, d)),
            DstIds::Union { starts, tables } => {
                let i = starts.partition_point(|&b| b <= d).checked_sub(1)?;
                let table = (*tables.get(i)?)?;
                Some(InternalId::new(table, d - starts[i]))
            }
        }
    }
}

/// Takes a recursive join's rows batch by batch, as the search's workers
/// find them (the parent part's pipeline, which each worker runs on its own
/// batches): the rows are then never kept whole.
pub trait JoinRowsConsumer: Send + Sync {
    fn consume(&self, rows: JoinRows) -> Result<()>;
}

#[derive(Default)]
struct SinkRows {
    charge: MemoryCharge,
    input_row: Vec<u32>,
    dst: Vec<InternalId>,
    len: Vec<u64>,
    /// Empty while every count is 1.
    count: Vec<u64>,
    /// Per source, whether it found a row.
    hit: Vec<bool>,
    /// A row from a source the join does not know (a bug).
    unknown: bool,
}

impl JoinRowsSink {
    pub fn new(
        sources: SourceRows,
        index_of: &HashMap<u64, usize>,
        dst_mask: Option<Arc<[u64]>>,
        dst_ids: Option<DstIds>,
        with_len: bool,
        expected_rows: usize,
        memory: Arc<QueryMemory>,
    ) -> JoinRowsSink {
        // Room for the rows expected saves the copies of growing by
        // doubling; the memory is touched only as rows arrive.
        let out = SinkRows {
            input_row: room_for(expected_rows),
            dst: room_for(expected_rows),
            len: room_for(if with_len { expected_rows } else { 0 }),
            count: Vec::new(),
            hit: vec![false; sources.num_sources()],
            unknown: false,
            charge: MemoryCharge::default(),
        };
        JoinRowsSink {
            index_of: index_of.clone(),
            sources,
            dst_mask,
            dst_ids,
            with_len,
            out: Mutex::new(out),
            memory,
            forward: None,
            weighted: false,
            drop_self: false,
            merge: false,
        }
    }

    /// Merges the rows of one source and length in each batch into one,
    /// their counts summed, when nothing reads the destination (the
    /// join's `dst_unread`; the destination column then holds a
    /// placeholder).
    pub fn merged(mut self, merge: bool) -> Self {
        self.merge = merge;
        self
    }

    /// The rows of a weighted search: lengths are costs (as bits), and
    /// unless `keep_self`, a source's row to itself is dropped.
    pub fn weighted(mut self, keep_self: bool) -> Self {
        self.weighted = true;
        self.drop_self = !keep_self;
        self
    }

    /// Hands every batch of rows to `to` as the search finds it instead of
    /// keeping them (the join's rows are then never whole): the parent
    /// part's pipeline runs on the worker that found them. A left outer
    /// join (`pads`) hands on its padded rows in [`JoinRowsSink::finish`].
    pub fn forward_to(
        mut self,
        input: Arc<Chunk>,
        to: Arc<dyn JoinRowsConsumer>,
        pads: bool,
    ) -> Self {
        let sources = self.sources.num_sources();
        self.forward = Some(Forward::new(input, to, pads, sources));
        self
    }

    /// The rows handed on by [`JoinRowsSink::forward_to`].
    pub fn forwarded_rows(&self) -> Option<u64> {
        self.forward
            .as_ref()
            .map(|f| f.rows.load(Ordering::Relaxed))
    }

    /// The join's rows over `input` once the search has ended (none when
    /// they were forwarded: a left outer join's padded rows are forwarded
    /// here, as the last batch).
    pub fn finish(&self, input: &Arc<Chunk>, left_outer: bool) -> Result<JoinRows> {
        let found = std::mem::take(&mut *self.out.lock());
        if found.unknown {
            return Err(Error::internal("recursive result for an unknown source"));
        }
        if let Some(f) = &self.forward {
            f.forward(f.padded(&self.sources, self.with_len, self.weighted))?;
            return Ok(JoinRows::empty(Arc::clone(input), self.with_len));
        }
        let mut out = JoinRows {
            input: Arc::clone(input),
            input_row: found.input_row,
            dst: found.dst,
            len: found.len,
            weighted: self.weighted,
            with_len: self.with_len,
            count: found.count,
            numbers: Vec::new(),
            padded_from: usize::MAX,
            paths: None,
        };
        self.sources.pad_unmatched(left_outer, &found.hit, &mut out);
        Ok(out)
    }
}

/// Turns a path search's rows into the join's rows batch by batch and hands
/// them on (a pipelined join that enumerates its paths): each batch's
/// paths with the values of their nodes and rels ([`LazyPaths`], read for
/// the batch on the worker that found it), one row per (path, input row
/// of its source), each standing for one path. Nothing is kept; a LIMIT
/// the next part satisfies ends the enumeration.
pub struct PathRowsSink {
    /// The statement's context, shared with the search's workers.
    ctx: QueryContext,
    index_of: HashMap<u64, usize>,
    sources: SourceRows,
    ids: IdSpace,
    /// The tables a destination may be in (`None`: any).
    dst_tables: Option<Vec<TableId>>,
    /// Result columns holding the paths or their rels (none when only
    /// the rows are wanted: trails counted).
    columns: Vec<(usize, PathPart)>,
    walked_back: Vec<TableId>,
    element_properties: bool,
    with_len: bool,
    weighted: bool,
    forward: Forward,
}

/// What a [`PathRowsSink`] builds its rows from besides the paths.
pub struct PathRowsSpec {
    pub ids: IdSpace,
    pub dst_tables: Option<Vec<TableId>>,
    pub columns: Vec<(usize, PathPart)>,
    pub walked_back: Vec<TableId>,
    pub element_properties: bool,
    pub with_len: bool,
    pub weighted: bool,
    pub left_outer: bool,
}

impl PathRowsSink {
    pub fn new(
        ctx: &QueryContext,
        sources: SourceRows,
        index_of: &HashMap<u64, usize>,
        spec: PathRowsSpec,
        input: Arc<Chunk>,
        to: Arc<dyn JoinRowsConsumer>,
    ) -> PathRowsSink {
        let forward = Forward::new(input, to, spec.left_outer, sources.num_sources());
        PathRowsSink {
            ctx: ctx.clone(),
            index_of: index_of.clone(),
            sources,
            ids: spec.ids,
            dst_tables: spec.dst_tables,
            columns: spec.columns,
            walked_back: spec.walked_back,
            element_properties: spec.element_properties,
            with_len: spec.with_len,
            weighted: spec.weighted,
            forward,
        }
    }

    /// The path values of `paths` (the columns' values; none without path
    /// columns).
    fn values(&self, paths: Vec<PathRow>) -> Result<Option<LazyPaths>> {
        if self.columns.is_empty() {
            return Ok(None);
        }
        LazyPaths::new(
            &self.ctx,
            FoundPaths::Rows(paths),
            self.ids.clone(),
            self.columns.clone(),
            &self.walked_back,
            self.element_properties,
            None,
        )
        .map(Some)
    }

    /// The rows handed on.
    pub fn forwarded_rows(&self) -> u64 {
        self.forward.rows.load(Ordering::Relaxed)
    }

    /// After the search: a left outer join's padded rows, as the last batch.
    pub fn finish(&self) -> Result<()> {
        let mut padded = self
            .forward
            .padded(&self.sources, self.with_len, self.weighted);
        if padded.num_rows() > 0 {
            padded.paths = self.values(Vec::new())?;
        }
        self.forward.forward(padded)
    }
}

impl Sink<PathRow> for PathRowsSink {
    fn consume(&self, found: &mut Vec<PathRow>) -> Result<()> {
        let dst_ok = |id: InternalId| {
            self.dst_tables
                .as_ref()
                .is_none_or(|t| t.contains(&id.table()))
        };
        let mut paths = std::mem::take(found);
        paths.retain(|p| dst_ok(self.ids.node(p.dst)));
        let mut out = JoinRows::empty(Arc::clone(&self.forward.input), self.with_len);
        out.weighted = self.weighted;
        let mut hits = Vec::new();
        for (k, p) in paths.iter().enumerate() {
            let si = *self
                .index_of
                .get(&p.src)
                .ok_or_else(|| Error::internal("recursive result for an unknown source"))?;
            let rows = self.sources.rows_of(si);
            if rows.is_empty() {
                continue;
            }
            if hits.last() != Some(&si) {
                hits.push(si);
            }
            let len = match self.weighted {
                true => p.cost_bits,
                false => p.rels.len() as u64,
            };
            let dst = self.ids.node(p.dst);
            for &r in rows {
                out.input_row.push(r);
                out.dst.push(dst);
                if self.with_len {
                    out.len.push(len);
                }
                out.push_number(k as u64);
            }
        }
        if out.num_rows() == 0 {
            return Ok(());
        }
        self.forward.note(&hits);
        out.paths = self.values(paths)?;
        self.forward.forward(out)
    }
}

/// Entries of the join-row sink's cache of source indexes.
const SOURCE_CACHE: usize = 512;

/// The cache entry of source `src` (Fibonacci hashing: consecutive and
/// strided node offsets spread over the entries).
#[inline]
fn source_slot(src: u64) -> usize {
    (src.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SOURCE_CACHE.trailing_zeros())) as usize
}

/// An empty vector with room for `n` values when the allocator grants it
/// (address space: the pages are touched as values arrive), else with
/// none: a reservation the system refuses must not end the process.
pub fn room_for<T>(n: usize) -> Vec<T> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        v = Vec::new();
    }
    v
}

/// A search's row as the join-row sink reads it: source and destination
/// node offsets, the length or a cost's bits, and how many paths it
/// stands for.
pub trait SearchRow: Send + 'static {
    fn src(&self) -> u64;
    fn dst(&self) -> u64;
    fn len_bits(&self) -> u64;
    fn count(&self) -> u64;
}

impl SearchRow for LenRow {
    #[inline]
    fn src(&self) -> u64 {
        self.src
    }
    #[inline]
    fn dst(&self) -> u64 {
        self.dst
    }
    #[inline]
    fn len_bits(&self) -> u64 {
        u64::from(self.len)
    }
    #[inline]
    fn count(&self) -> u64 {
        self.count
    }
}

impl SearchRow for CostRow {
    #[inline]
    fn src(&self) -> u64 {
        self.src
    }
    #[inline]
    fn dst(&self) -> u64 {
        self.dst
    }
    #[inline]
    fn len_bits(&self) -> u64 {
        self.cost.to_bits()
    }
    #[inline]
    fn count(&self) -> u64 {
        1
    }
}

impl SearchRow for CostCountRow {
    #[inline]
    fn src(&self) -> u64 {
        self.src
    }
    #[inline]
    fn dst(&self) -> u64 {
        self.dst
    }
    #[inline]
    fn len_bits(&self) -> u64 {
        self.cost.to_bits()
    }
    #[inline]
    fn count(&self) -> u64 {
        self.count
    }
}

impl JoinRowsSink {
    /// A batch's rows, one per (row, input row of its source): the input
    /// row, destination, length and count of each, and the sources found.
    fn rows_of_batch<R: SearchRow>(
        &self,
        rows: &mut Vec<R>,
        dst_ids: &DstIds,
    ) -> (SinkRows, Vec<usize>) {
        let mut local = SinkRows {
            input_row: Vec::with_capacity(rows.len()),
            dst: Vec::with_capacity(rows.len()),
            len: Vec::with_capacity(if self.with_len { rows.len() } else { 0 }),
            ..SinkRows::default()
        };
        let mut hits: Vec<usize> = Vec::new();
        // A one-source search's rows come in runs of its source; a lane
        // morsel's cycle through its (up to 64) sources per destination. A
        // small direct-mapped cache of source indexes serves both without
        // a hash-map probe per row (a quarter of a 64-source query's time).
        // Per entry: the source and its input rows in `all_rows`.
        let mut cache = [(u64::MAX, 0u32, 0u32); SOURCE_CACHE];
        let all_rows = self.sources.all_rows();
        for r in rows.drain(..) {
            let Some(dst) = self.kept(&r, dst_ids) else {
                continue;
            };
            let src = r.src();
            let slot = &mut cache[source_slot(src)];
            let (from, to) = match *slot {
                (s, from, to) if s == src => (from, to),
                _ => match self.index_of.get(&src) {
                    Some(&si) => {
                        let (from, to) = self.sources.range_of(si);
                        *slot = (src, from, to);
                        hits.push(si);
                        (from, to)
                    }
                    None => {
                        local.unknown = true;
                        continue;
                    }
                },
            };
            let (len, count) = (r.len_bits(), r.count());
            for &row in &all_rows[from as usize..to as usize] {
                local.push(row, dst, self.with_len.then_some(len), count);
            }
        }
        (local, hits)
    }

    /// A batch's rows merged by source and length, their counts summed,
    /// for a join whose destination nothing reads (`dst_unread`): one row
    /// per input row of each (source, length) found in the batch, its
    /// destination a placeholder. A 64-source search's batch of a million
    /// rows becomes a few thousand.
    fn merged_rows_of_batch<R: SearchRow>(
        &self,
        rows: &mut Vec<R>,
        dst_ids: &DstIds,
    ) -> (SinkRows, Vec<usize>) {
        let mut local = SinkRows::default();
        let mut hits: Vec<usize> = Vec::new();
        let all_rows = self.sources.all_rows();
        // Direct-mapped sums: per entry (source, length, its input rows in
        // `all_rows`, the count so far); an entry pushed aside is written
        // out, so a (source, length) may give more than one row.
        let mut sums = [(u64::MAX, 0u64, 0u32, 0u32, 0u64); SOURCE_CACHE];
        let flush = |local: &mut SinkRows, e: (u64, u64, u32, u32, u64)| {
            let (_, len, from, to, count) = e;
            if count == 0 {
                return;
            }
            for &row in &all_rows[from as usize..to as usize] {
                local.push(row, InternalId(0), self.with_len.then_some(len), count);
            }
        };
        for r in rows.drain(..) {
            if self.kept(&r, dst_ids).is_none() {
                continue;
            }
            let src = r.src();
            let len = if self.with_len { r.len_bits() } else { 0 };
            let entry = &mut sums[source_slot(src ^ len.rotate_left(29))];
            if entry.0 == src && entry.1 == len {
                entry.4 = entry.4.saturating_add(r.count());
                continue;
            }
            let Some(&si) = self.index_of.get(&src) else {
                local.unknown = true;
                continue;
            };
            hits.push(si);
            let (from, to) = self.sources.range_of(si);
            let old = std::mem::replace(entry, (src, len, from, to, r.count()));
            flush(&mut local, old);
        }
        for e in sums {
            flush(&mut local, e);
        }
        (local, hits)
    }

    /// The destination id of row `r` when the join keeps it: it stands
    /// for a path (count above 0), is not a dropped row from a source to
    /// itself, and its destination passes the mask and has a table.
    #[inline]
    fn kept<R: SearchRow>(&self, r: &R, dst_ids: &DstIds) -> Option<InternalId> {
        if r.count() == 0 || (self.drop_self && r.src() == r.dst()) {
            return None;
        }
        if let Some(mask) = &self.dst_mask {
            if !mask_has(mask, r.dst()) {
                return None;
            }
        }
        dst_ids.id(r.dst())
    }
}

impl SinkRows {
    /// Appends a row; counts are kept from the first that is not 1.
    #[inline]
    fn push(&mut self, row: u32, dst: InternalId, len: Option<u64>, count: u64) {
        self.input_row.push(row);
        self.dst.push(dst);
        if let Some(len) = len {
            self.len.push(len);
        }
        if count != 1 || !self.count.is_empty() {
            self.count.resize(self.input_row.len() - 1, 1);
            self.count.push(count);
        }
    }
}

impl<R: SearchRow> Sink<R> for JoinRowsSink {
    fn consume(&self, rows: &mut Vec<R>) -> Result<()> {
        let Some(dst_ids) = &self.dst_ids else {
            rows.clear();
            return Ok(());
        };
        let (mut local, hits) = match self.merge {
            true => self.merged_rows_of_batch(rows, dst_ids),
            false => self.rows_of_batch(rows, dst_ids),
        };
        let counts_one = local.count.is_empty();
        if !counts_one {
            local.count.resize(local.input_row.len(), 1);
        }
        if let Some(f) = &self.forward {
            if local.unknown {
                return Err(Error::internal("recursive result for an unknown source"));
            }
            f.note(&hits);
            return f.forward(JoinRows {
                input: Arc::clone(&f.input),
                input_row: local.input_row,
                dst: local.dst,
                len: local.len,
                weighted: self.weighted,
                with_len: self.with_len,
                count: local.count,
                numbers: Vec::new(),
                padded_from: usize::MAX,
                paths: None,
            });
        }
        let mut out = self.out.lock();
        for si in hits {
            if !self.sources.rows_of(si).is_empty() {
                out.hit[si] = true;
            }
        }
        out.unknown |= local.unknown;
        // Counts are kept once one is not 1 (the rows before count 1 each).
        if !counts_one || !out.count.is_empty() {
            let before = out.input_row.len();
            out.count.resize(before, 1);
            out.count.extend_from_slice(&local.count);
            out.count.resize(before + local.input_row.len(), 1);
        }
        out.input_row.extend_from_slice(&local.input_row);
        out.dst.extend_from_slice(&local.dst);
        out.len.extend_from_slice(&local.len);
        let bytes = out.input_row.len() * size_of::<u32>()
            + (out.dst.len() + out.len.len() + out.count.len()) * size_of::<u64>();
        let SinkRows { charge, .. } = &mut *out;
        charge.grow_to(&self.memory, bytes as u64)
    }
}

#[cfg(test)]
mod tests;
