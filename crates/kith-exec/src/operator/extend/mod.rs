//! Extend: for each tuple of the input group, the node's rels from one CSR
//! direction, written as a new unflat group (neighbour ids, rel ids, rel
//! properties) in batches of at most `VECTOR_CAPACITY` (a whole range of up
//! to `WHOLE_RANGE_BATCH` when it is handed on again, see
//! [`Extend::batch_cap`]). The input group is
//! flattened one tuple at a time, so a k-hop pattern is represented as
//! (flat, flat, ..., unflat) and never materialised as flat k-hop tuples.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{InternalId, Result, TableId, ValueVector, VectorData};

use super::csr_pins::CsrPins;
use super::filter::{ChainSignal, PadSignal};
use super::flat_cursor::FlatCursor;
use super::hub_split::{HubSplit, HUB_RELS};
use super::{Operator, Pos, QueryContext};
use crate::result_set::ResultSet;

mod count;
mod range;
mod spec;
pub use count::{CountExtend, CountMode, PairCount, SharedRels};
pub(crate) use spec::{ExtendSpec, FusedExtend};

use range::RelRange;

/// The most rels a batch holding one node's whole range may have: an
/// extend from a node of an earlier group hands that batch on again for
/// every tuple it flattens, and a hub's range cut into two batches would be
/// written (and its properties read) again for each.
const WHOLE_RANGE_BATCH: usize = 8 * VECTOR_CAPACITY;

pub struct Extend {
    pub child: Box<dyn Operator>,
    pub ctx: Arc<QueryContext>,
    pub rel_table: TableId,
    pins: CsrPins,
    pub from: Pos,
    /// The group flattened by this extend (the newest unflat group below it).
    pub input_chunk: usize,
    pub output_chunk: usize,
    pub to: Option<(usize, TableId)>,
    pub rel_id: Option<usize>,
    /// (storage column, vector in the output chunk)
    pub properties: Vec<(usize, usize)>,
    /// Relationship isomorphism: (position of an earlier rel's id, position
    /// of that rel's endpoint on this side) each; all flat when this extend
    /// runs. When the endpoint is the node extended from, that rel is
    /// skipped in the range.
    pub exclude: Vec<(Pos, Pos)>,
    /// Nothing downstream reads the input group (nor anything but this
    /// extend's output group): the rels of several tuples of one input batch
    /// fill one output batch, so a low-degree expansion does not hand on a
    /// batch of a few tuples per input tuple. The input group stays flat at
    /// the last tuple read, so the tuple count is still the output's.
    pub pack: bool,
    /// With `pack`: input-group vectors the sink reads (position in the
    /// input chunk, vector in the output chunk), each copied along the
    /// output positions of its tuple. The sink finds those slots in the
    /// output group, so each packed position carries its own source's
    /// values: `MATCH (a)-[]->(b) RETURN a, collect(b)` gets a batch of
    /// many sources per aggregate call, not one call per source.
    pub replicas: Vec<(usize, usize)>,
    /// OPTIONAL MATCH: a tuple without rels (or a NULL node) gets one
    /// output tuple of NULLs instead of none. After every batch the signal
    /// says which input tuples it holds and which end in it, for the
    /// padding filter of the clause's predicates
    /// ([`super::filter::PadFilter`]).
    pub pad: Option<Arc<PadSignal>>,
    /// A step of an OPTIONAL MATCH chain (`Step::OptionalChain`): the
    /// chain's signal, and whether this is its first extend (which pads
    /// an input tuple none of whose matches reached the chain's end) or a
    /// later one (which turns the padding tuple into one tuple of NULLs).
    pub chain: Option<(Arc<ChainSignal>, bool)>,
    /// The first extend of a chain is inside an input tuple (its padding
    /// not yet decided).
    in_tuple: bool,
    /// A pipeline from one tuple that every worker runs
    /// (`physical::rewrite::split_single_source`): the workers share this extend's
    /// rels, each claiming chunks of every input tuple's range in turn.
    pub split: Option<Arc<SplitClaims>>,
    /// The first run of a pipeline whose hubs the workers share afterwards
    /// ([`HubSplit`]): an input node with at least [`HUB_RELS`] rels is
    /// deferred there instead of expanded.
    pub hubs: Option<Arc<HubSplit>>,
    /// Input tuples seeked so far (every worker sees them in one order),
    /// the current tuple's unclaimed range and the claim size.
    split_seq: usize,
    split_range: (u64, u64),
    split_chunk: u64,
    cursor: FlatCursor,
    /// The current node's rels: the cursor into its runs and the rels
    /// excluded from them.
    range: RelRange,
    /// The number of the last fresh batch written (see
    /// [`crate::result_set::ChunkState::generation`]), and the node whose
    /// whole range it held (no rel skipped, one batch): a later tuple
    /// extending that same node gets the batch handed on again, unchanged,
    /// without reading the CSR.
    generation: u64,
    whole_range_of: Option<InternalId>,
    /// The node whose whole range the next emitted batch will hold, if so.
    fresh_whole: Option<InternalId>,
}

impl Extend {
    /// The flat id at `pos` (an earlier, flattened group).
    pub(crate) fn flat_id(rs: &ResultSet, pos: Pos) -> Result<Option<InternalId>> {
        let chunk = &rs.chunks[pos.0];
        let Some(p) = chunk.state.flat_position() else {
            return Err(kith_common::Error::internal(
                "extend exclusion reads an unflat group",
            ));
        };
        let v = &chunk.vectors[pos.1];
        if v.is_null(p) {
            return Ok(None);
        }
        match &v.data {
            VectorData::Id(ids) => Ok(Some(ids[p])),
            _ => Err(kith_common::Error::internal("extend exclusion of a non-id")),
        }
    }

    fn emit(&mut self, rs: &mut ResultSet) -> Result<()> {
        // A whole range (at most `batch_cap`) in one batch, to hand on again.
        let room = match self.fresh_whole {
            Some(_) => ((self.range.end - self.range.pos) as usize).max(VECTOR_CAPACITY),
            None => VECTOR_CAPACITY,
        };
        let n = self.write(rs, 0, room)?;
        self.finish_batch(rs, n);
        Ok(())
    }

    /// Writes the rels from the cursor on (up to the next skipped one, at
    /// most `room`) at position `at` of the output vectors; returns how many.
    fn write(&mut self, rs: &mut ResultSet, at: usize, room: usize) -> Result<usize> {
        let limit = self
            .range
            .skips
            .get(self.range.next_skip)
            .map_or(self.range.end, |&s| s.min(self.range.end));
        let n = ((limit - self.range.pos) as usize).min(room);
        if self.range.scratch.len() < n {
            self.range.scratch.resize(n, 0);
        }
        let pinned = self.pins.group(self.range.group)?;
        let out = &mut rs.chunks[self.output_chunk];
        // A fresh batch starts empty; a packed one grows.
        let size = |v: &mut ValueVector| match at {
            0 => v.reset(n),
            _ => v.resize(at + n),
        };
        let pack = self.pack;
        if let Some((vector, table)) = self.to {
            pinned
                .neighbors()?
                .read_u64s(self.range.pos, n, &mut self.range.scratch[..n]);
            let v = &mut out.vectors[vector];
            fit_id_vector(v, at, n, pack);
            if let VectorData::Id(ids) = &mut v.data {
                for (dst, &nbr) in ids[at..].iter_mut().zip(&self.range.scratch[..n]) {
                    *dst = InternalId::new(table, nbr);
                }
            }
        }
        if let Some(vector) = self.rel_id {
            pinned
                .rel_ids()?
                .read_u64s(self.range.pos, n, &mut self.range.scratch[..n]);
            let v = &mut out.vectors[vector];
            fit_id_vector(v, at, n, pack);
            if let VectorData::Id(ids) = &mut v.data {
                for (dst, &rel) in ids[at..].iter_mut().zip(&self.range.scratch[..n]) {
                    *dst = InternalId::new(self.rel_table, rel);
                }
            }
        }
        for ((_, vector), column) in self.properties.iter().zip(&pinned.properties) {
            let v = &mut out.vectors[*vector];
            size(v);
            column.read(self.range.pos, n, v, at)?;
        }
        self.range.pos += n as u64;
        self.write_replicas(rs, at, n)?;
        Ok(n)
    }

    /// [`Extend::replicas`]: the input tuple's values at output positions
    /// `at..at + n`.
    fn write_replicas(&self, rs: &mut ResultSet, at: usize, n: usize) -> Result<()> {
        if self.replicas.is_empty() {
            return Ok(());
        }
        if self.input_chunk == self.output_chunk {
            return Err(kith_common::Error::internal(
                "extend replicates its own output",
            ));
        }
        let (input, out) = if self.input_chunk < self.output_chunk {
            let (lo, hi) = rs.chunks.split_at_mut(self.output_chunk);
            (&lo[self.input_chunk], &mut hi[0])
        } else {
            let (lo, hi) = rs.chunks.split_at_mut(self.input_chunk);
            (&hi[0], &mut lo[self.output_chunk])
        };
        let Some(p) = input.state.flat_position() else {
            return Err(kith_common::Error::internal("replicated input is not flat"));
        };
        for &(from, to) in &self.replicas {
            let v = &mut out.vectors[to];
            fit_id_vector(v, at, n, true);
            v.fill_from(at..at + n, &input.vectors[from], p);
        }
        Ok(())
    }

    /// [`Extend::pack`]: cuts the id vectors, grown a batch at a time by
    /// [`fit_id_vector`], to the `filled` positions written.
    fn trim_packed(&self, rs: &mut ResultSet, filled: usize) {
        let out = &mut rs.chunks[self.output_chunk];
        let ids = self.to.map(|(v, _)| v).into_iter().chain(self.rel_id);
        for v in ids.chain(self.replicas.iter().map(|r| r.1)) {
            out.vectors[v].resize(filled);
        }
    }

    /// Marks the output group as a fresh batch of `n` tuples.
    fn finish_batch(&mut self, rs: &mut ResultSet, n: usize) {
        let out = &mut rs.chunks[self.output_chunk];
        out.state.reset(n);
        self.generation += 1;
        out.state.generation = self.generation;
        // Only the first batch after a seek of a whole range holds it.
        self.whole_range_of = self.fresh_whole.take();
    }

    /// Moves the cursor past skipped rels and on to the tuple's next
    /// appended run; true while the current tuple has rels left.
    fn rels_left(&mut self) -> bool {
        loop {
            if self.range.pos < self.range.end
                && self.range.skips.get(self.range.next_skip) == Some(&self.range.pos)
            {
                self.range.pos += 1;
                self.range.next_skip += 1;
                continue;
            }
            if self.range.pos < self.range.end {
                return true;
            }
            let Some(&(s, e)) = self.range.runs.get(self.range.next_run) else {
                return self.claim_next();
            };
            (self.range.pos, self.range.end) = (s, e);
            self.range.next_run += 1;
        }
    }

    /// [`Extend::split`], after a seek: the tuple's range becomes the one
    /// to claim from. A range with appended runs or skipped rels is not
    /// cut: the first worker to claim it takes it whole.
    fn start_split(&mut self) {
        let Some(claims) = &self.split else {
            return;
        };
        let seq = self.split_seq;
        self.split_seq += 1;
        if !self.range.runs.is_empty() || !self.range.skips.is_empty() {
            if claims.claim(seq, u64::MAX) != 0 {
                self.range.pos = self.range.end;
                self.range.runs.clear();
            }
            self.split_range = (0, 0);
            return;
        }
        self.split_range = (self.range.pos, self.range.end);
        // About 16 claims a tuple, a batch at most each.
        self.split_chunk =
            ((self.range.end - self.range.pos) / 16).clamp(1, VECTOR_CAPACITY as u64);
        self.range.end = self.range.pos;
    }

    /// [`Extend::split`]: the next chunk of the current tuple's range, if
    /// any is left.
    fn claim_next(&mut self) -> bool {
        let Some(claims) = &self.split else {
            return false;
        };
        let (base, end) = self.split_range;
        if base >= end {
            return false;
        }
        let at = base.saturating_add(claims.claim(self.split_seq - 1, self.split_chunk));
        if at >= end {
            self.split_range = (end, end);
            return false;
        }
        (self.range.pos, self.range.end) = (at, (at + self.split_chunk).min(end));
        true
    }

    /// [`Extend::pack`]: fills one output batch from as many tuples of the
    /// held input batch as fit.
    fn next_packed(&mut self, rs: &mut ResultSet) -> Result<bool> {
        let mut filled = 0;
        // With `pad`: each input tuple's first position, and whether its
        // last rel is in this batch (see `PadSignal`).
        let signal = self.pad.clone();
        let mut tuples = signal.as_ref().map(|s| s.tuples.lock());
        if let (Some(t), Some(s)) = (tuples.as_mut(), &signal) {
            t.clear();
            let continues = self.rels_left();
            s.continues.store(continues, Ordering::Relaxed);
            if continues {
                t.push((0, false));
            }
        }
        loop {
            if self.rels_left() {
                filled += self.write(rs, filled, VECTOR_CAPACITY - filled)?;
                if filled == VECTOR_CAPACITY {
                    break;
                }
                continue;
            }
            if let Some(last) = tuples.as_mut().and_then(|t| t.last_mut()) {
                last.1 = true;
            }
            // Once something is packed, only tuples of the held batch join
            // it: pulling the child would change the groups before it.
            let more = if filled == 0 {
                self.cursor
                    .advance(self.child.as_mut(), rs, &self.ctx.cancel)?
            } else {
                self.cursor.advance_within(rs)
            };
            if !more {
                break;
            }
            self.seek_flat_tuple(rs)?;
            if let Some(t) = tuples.as_mut() {
                t.push((filled as u32, false));
                if !self.rels_left() {
                    self.write_null(rs, filled)?;
                    filled += 1;
                    if filled == VECTOR_CAPACITY {
                        break;
                    }
                }
            }
        }
        if let Some(last) = tuples.as_mut().and_then(|t| t.last_mut()) {
            last.1 |= !self.rels_left();
        }
        drop(tuples);
        if filled == 0 {
            return Ok(false);
        }
        self.trim_packed(rs, filled);
        self.fresh_whole = None;
        self.finish_batch(rs, filled);
        Ok(true)
    }

    /// Seeks the rels of the input group's current flat tuple (none for a
    /// NULL node) and finds its excluded rels.
    fn seek_flat_tuple(&mut self, rs: &ResultSet) -> Result<Option<InternalId>> {
        let from_chunk = &rs.chunks[self.from.0];
        let Some(p) = from_chunk.state.flat_position() else {
            return Err(kith_common::Error::internal("extend source is not flat"));
        };
        let ids = &from_chunk.vectors[self.from.1];
        if ids.is_null(p) {
            self.range.pos = 0;
            self.range.end = 0;
            self.range.runs.clear();
            return Ok(None);
        }
        let VectorData::Id(v) = &ids.data else {
            return Err(kith_common::Error::internal(
                "extend source is not an id vector",
            ));
        };
        let from = v[p];
        self.range
            .seek(&mut self.pins, &self.ctx.pager, from.offset())?;
        if let Some(hubs) = &self.hubs {
            if self.range.runs.is_empty() && self.range.end - self.range.pos >= HUB_RELS {
                hubs.defer(from.offset());
                self.range.pos = self.range.end;
            }
        }
        if !self.exclude.is_empty() {
            self.range
                .find_excluded(&self.pins, rs, &self.exclude, self.rel_table, from)?;
        }
        self.start_split();
        Ok(Some(from))
    }

    /// [`Extend::pad`]: tells the padding filter whether the batch just
    /// emitted is its tuple's last.
    #[inline]
    fn tuple_done(&self, last: bool) {
        if let Some(signal) = &self.pad {
            signal.last.store(last, Ordering::Relaxed);
        }
    }

    /// One output tuple of NULLs (an optional extend's tuple without rels,
    /// a chain's padding); the batch is no longer one to hand on again.
    fn emit_null_tuple(&mut self, rs: &mut ResultSet) {
        rs.chunks[self.output_chunk].pad_with_nulls();
        self.whole_range_of = None;
    }

    /// [`Extend::pad`] of a packed batch: one tuple of NULLs at position
    /// `at` for an input tuple without rels.
    fn write_null(&mut self, rs: &mut ResultSet, at: usize) -> Result<()> {
        let out = &mut rs.chunks[self.output_chunk];
        for v in self.to.map(|(v, _)| v).into_iter().chain(self.rel_id) {
            let v = &mut out.vectors[v];
            fit_id_vector(v, at, 1, true);
            v.set_null(at, true);
        }
        for &(_, v) in &self.properties {
            let v = &mut out.vectors[v];
            match at {
                0 => v.reset(1),
                _ => v.resize(at + 1),
            }
            v.set_null(at, true);
        }
        // The padded tuple is still its source's.
        self.write_replicas(rs, at, 1)
    }

    /// The most rels a batch holding a whole range may have:
    /// [`WHOLE_RANGE_BATCH`] when this extend runs from a node of an earlier
    /// (flat) group, so that every tuple it flattens gets the same batch
    /// handed on again (`MATCH (a)->(b)->(c)` started at `b`, extending to
    /// the `a`s once per `c`), and not for an OPTIONAL MATCH chain or a
    /// split extend; `VECTOR_CAPACITY` otherwise.
    fn batch_cap(&self) -> usize {
        if self.from.0 != self.input_chunk && self.chain.is_none() && self.split.is_none() {
            WHOLE_RANGE_BATCH
        } else {
            VECTOR_CAPACITY
        }
    }

    /// After a seek from `from`: when the range is the one the last batch
    /// held whole, hands that batch on again (its vectors are untouched:
    /// only this extend writes them) and returns true.
    fn repeat_batch(&mut self, rs: &mut ResultSet, from: InternalId) -> bool {
        let whole = self.range.skips.is_empty()
            && self.range.runs.is_empty()
            && self.range.end - self.range.pos <= self.batch_cap() as u64;
        let out = &mut rs.chunks[self.output_chunk].state;
        if whole
            && self.whole_range_of == Some(from)
            && self.generation != 0
            && out.generation == self.generation
            && out.len as u64 == self.range.end - self.range.pos
        {
            out.sel = None;
            out.flat = None;
            self.range.pos = self.range.end;
            return true;
        }
        self.fresh_whole = whole.then_some(from);
        false
    }
}

/// The claims of an extend whose rels the workers share
/// ([`Extend::split`]): per input tuple, in the order every worker sees
/// them, the next unclaimed offset into its range.
#[derive(Debug, Default)]
pub struct SplitClaims {
    next: parking_lot::Mutex<Vec<u64>>,
}

impl SplitClaims {
    /// Claims `want` offsets of tuple `seq`'s range; returns where they
    /// start (past the range once it is all claimed).
    fn claim(&self, seq: usize, want: u64) -> u64 {
        let mut next = self.next.lock();
        if next.len() <= seq {
            next.resize(seq + 1, 0);
        }
        let at = next[seq];
        next[seq] = at.saturating_add(want);
        at
    }
}

/// Makes room for `n` ids at `at` in an output id vector. A fresh batch of
/// an extend that does not pack is exactly `n` long; a packed batch grows
/// to a whole vector once (its writes come a few rels at a time, and a
/// resize per write was a tenth of a packed extend) and is cut to its
/// length when full (`Extend::trim_packed`).
#[inline]
fn fit_id_vector(v: &mut ValueVector, at: usize, n: usize, pack: bool) {
    match at {
        0 if !pack => v.reset(n),
        0 => v.reset(n.max(VECTOR_CAPACITY)),
        _ if v.len() < at + n => v.resize((at + n).max(VECTOR_CAPACITY)),
        _ => {}
    }
}

/// The ids of an id vector.
pub(super) fn ids_of(v: &ValueVector) -> Result<&[InternalId]> {
    match &v.data {
        VectorData::Id(ids) => Ok(ids.as_slice()),
        _ => Err(kith_common::Error::internal("extend reads a non-id vector")),
    }
}

impl Operator for Extend {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.pack {
            return self.next_packed(rs);
        }
        loop {
            if self.rels_left() {
                self.emit(rs)?;
                if self.pad.is_some() {
                    let last = !self.rels_left();
                    self.tuple_done(last);
                }
                if let Some((signal, true)) = &self.chain {
                    signal.padding.store(false, Ordering::Relaxed);
                }
                return Ok(true);
            }
            if let Some((signal, true)) = &self.chain {
                // Asked for more, so everything after this extend has
                // finished the input tuple's batches: it is padded when
                // none of them reached the chain's end.
                if std::mem::take(&mut self.in_tuple)
                    && !signal.matched.swap(false, Ordering::Relaxed)
                {
                    signal.padding.store(true, Ordering::Relaxed);
                    self.emit_null_tuple(rs);
                    return Ok(true);
                }
            }
            if !self
                .cursor
                .advance(self.child.as_mut(), rs, &self.ctx.cancel)?
            {
                return Ok(false);
            }
            self.fresh_whole = None;
            let from = self.seek_flat_tuple(rs)?;
            match &self.chain {
                Some((signal, true)) => {
                    signal.matched.store(false, Ordering::Relaxed);
                    signal.padding.store(false, Ordering::Relaxed);
                    self.in_tuple = true;
                }
                Some((signal, false)) if signal.padding.load(Ordering::Relaxed) => {
                    // The padding tuple of the chain's first extend (its
                    // NULL node has no rels to seek).
                    self.emit_null_tuple(rs);
                    return Ok(true);
                }
                _ => {}
            }
            if self.pad.is_some() && !self.rels_left() {
                self.emit_null_tuple(rs);
                self.tuple_done(true);
                return Ok(true);
            }
            let Some(from) = from else {
                continue;
            };
            if self.range.pos < self.range.end && self.repeat_batch(rs, from) {
                self.tuple_done(true);
                return Ok(true);
            }
        }
    }
}
