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
use crate::result_set::{ChunkState, ResultSet};

mod spec;
pub(crate) use spec::{ExtendSpec, FusedExtend};

/// The most rels a batch holding one node's whole range may have: an
/// extend from a node of an earlier group hands that batch on again for
/// every tuple it flattens, and a hub's range cut into two batches would be
/// written (and its properties read) again for each.
const WHOLE_RANGE_BATCH: usize = 8 * VECTOR_CAPACITY;

/// The other half of two counting extends from one node `b` whose
/// neighbours nothing reads (`MATCH (a)-[:R]->(b)-[:R]->(c) RETURN count(*)`
/// started at `b`): each `b` stands for deg₁(b) · deg₂(b) tuples, less the
/// pairs that would bind one rel twice (relationship isomorphism), without
/// writing the `a`s.
pub struct PairCount {
    pub pins: CsrPins,
    pub shared: SharedRels,
}

/// Which pairs of rels of a [`PairCount`] are one rel, to be excluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedRels {
    /// Different tables, or no isomorphism test between the two: none.
    None,
    /// One table read in one direction: each rel pairs with itself.
    All,
    /// One table read in both directions: a self loop at `b` is in both
    /// ranges, once each.
    SelfLoops,
}

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
    /// Count only: nothing downstream reads the input group or this
    /// extend's output, so each input batch becomes one tuple standing for
    /// all its rels (the result set's multiplicity) and no neighbour is
    /// read. The last extend of `MATCH (a)->(b)->(c) RETURN count(*)`.
    pub collapse: bool,
    /// Degrees only: the sink reads the input group but nothing of this
    /// extend's output, so each input batch is handed on whole, each tuple
    /// weighted by its rels (`ResultSet::weights`; tuples without rels
    /// deselected), and no neighbour is read. The extend of
    /// `MATCH (b)<-[]-(a) RETURN b, count(*)`.
    pub degrees: bool,
    /// With `collapse`: the fused other extend from the same node (then
    /// `from` is in the input group and `exclude` is empty; the pair's
    /// `shared` accounts for the isomorphism test).
    pub pair: Option<PairCount>,
    /// The output group of the fused extend, one tuple per batch.
    pub pair_output: Option<usize>,
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
    /// The multiplicity the child set, restored before pulling from it.
    base_multiplicity: u64,
    /// [`Extend::degrees`]: the weights handed on with the last batch,
    /// taken back (to reuse) before the next is pulled.
    weights: Vec<u64>,
    /// Scratch of the counting paths: the degrees of a batch's nodes by
    /// position, in each of the pair's directions.
    batch_degrees: [Vec<u64>; 2],
    /// The last input state the counting path summed `batch_degrees[0]`
    /// of, with the sum (an untracked state never repeats; its allocation
    /// is reused for the next).
    degree_memo: (ChunkState, u64),
    /// Positions in the current range of the rels to skip, ascending, and
    /// the next one to come.
    skips: Vec<u64>,
    next_skip: usize,
    /// Per-batch scratch of the counting path: the exclusions' gates that
    /// are flat, and the batch positions equal to a gate.
    fixed_gates: Vec<InternalId>,
    gated: Vec<usize>,
    // Cursor state: the current run of positions `pos..end`, then the
    // node's appended runs from `next_run` on.
    cursor: FlatCursor,
    group: usize,
    pos: u64,
    end: u64,
    runs: Vec<(u64, u64)>,
    next_run: usize,
    scratch: Vec<u64>,
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
    /// Positions the cursor on the rels of node `offset`.
    fn seek(&mut self, offset: u64) -> Result<()> {
        (self.group, self.pos, self.end) = self.pins.range(&self.ctx.pager, offset)?;
        self.runs.clear();
        self.runs
            .extend_from_slice(self.pins.appended(self.group, offset));
        self.next_run = 0;
        Ok(())
    }

    /// The rels left from the cursor on: the current run and the runs after it.
    fn remaining(&self) -> u64 {
        let later: u64 = self.runs[self.next_run..].iter().map(|&(s, e)| e - s).sum();
        self.end - self.pos + later
    }

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

    /// After a seek from node `from`: the positions of the excluded rels
    /// that are in the range.
    fn find_excluded(&mut self, rs: &ResultSet, from: InternalId) -> Result<()> {
        self.skips.clear();
        self.next_skip = 0;
        for k in 0..self.exclude.len() {
            let (rel_pos, gate_pos) = self.exclude[k];
            if Self::flat_id(rs, gate_pos)? != Some(from) {
                continue;
            }
            let Some(rel) = Self::flat_id(rs, rel_pos)? else {
                continue;
            };
            if rel.table() != self.rel_table || self.remaining() == 0 {
                continue;
            }
            let pinned = self.pins.group(self.group)?;
            // Scan the runs' rel ids a vector at a time in the scratch buffer.
            let runs = std::iter::once((self.pos, self.end)).chain(self.runs.iter().copied());
            'runs: for (mut at, end) in runs {
                while at < end {
                    let n = ((end - at) as usize).min(self.scratch.len());
                    pinned.rel_ids()?.read_u64s(at, n, &mut self.scratch[..n]);
                    if let Some(i) = self.scratch[..n].iter().position(|&id| id == rel.offset()) {
                        self.skips.push(at + i as u64);
                        break 'runs;
                    }
                    at += n as u64;
                }
            }
        }
        self.skips.sort_unstable();
        self.skips.dedup();
        Ok(())
    }

    fn emit(&mut self, rs: &mut ResultSet) -> Result<()> {
        // A whole range (at most `batch_cap`) in one batch, to hand on again.
        let room = match self.fresh_whole {
            Some(_) => ((self.end - self.pos) as usize).max(VECTOR_CAPACITY),
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
            .skips
            .get(self.next_skip)
            .map_or(self.end, |&s| s.min(self.end));
        let n = ((limit - self.pos) as usize).min(room);
        if self.scratch.len() < n {
            self.scratch.resize(n, 0);
        }
        let pinned = self.pins.group(self.group)?;
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
                .read_u64s(self.pos, n, &mut self.scratch[..n]);
            let v = &mut out.vectors[vector];
            fit_id_vector(v, at, n, pack);
            if let VectorData::Id(ids) = &mut v.data {
                for (dst, &nbr) in ids[at..].iter_mut().zip(&self.scratch[..n]) {
                    *dst = InternalId::new(table, nbr);
                }
            }
        }
        if let Some(vector) = self.rel_id {
            pinned
                .rel_ids()?
                .read_u64s(self.pos, n, &mut self.scratch[..n]);
            let v = &mut out.vectors[vector];
            fit_id_vector(v, at, n, pack);
            if let VectorData::Id(ids) = &mut v.data {
                for (dst, &rel) in ids[at..].iter_mut().zip(&self.scratch[..n]) {
                    *dst = InternalId::new(self.rel_table, rel);
                }
            }
        }
        for ((_, vector), column) in self.properties.iter().zip(&pinned.properties) {
            let v = &mut out.vectors[*vector];
            size(v);
            column.read(self.pos, n, v, at)?;
        }
        self.pos += n as u64;
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
            if self.pos < self.end && self.skips.get(self.next_skip) == Some(&self.pos) {
                self.pos += 1;
                self.next_skip += 1;
                continue;
            }
            if self.pos < self.end {
                return true;
            }
            let Some(&(s, e)) = self.runs.get(self.next_run) else {
                return self.claim_next();
            };
            (self.pos, self.end) = (s, e);
            self.next_run += 1;
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
        if !self.runs.is_empty() || !self.skips.is_empty() {
            if claims.claim(seq, u64::MAX) != 0 {
                self.pos = self.end;
                self.runs.clear();
            }
            self.split_range = (0, 0);
            return;
        }
        self.split_range = (self.pos, self.end);
        // About 16 claims a tuple, a batch at most each.
        self.split_chunk = ((self.end - self.pos) / 16).clamp(1, VECTOR_CAPACITY as u64);
        self.end = self.pos;
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
        (self.pos, self.end) = (at, (at + self.split_chunk).min(end));
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
            self.pos = 0;
            self.end = 0;
            self.runs.clear();
            return Ok(None);
        }
        let VectorData::Id(v) = &ids.data else {
            return Err(kith_common::Error::internal(
                "extend source is not an id vector",
            ));
        };
        let from = v[p];
        self.seek(from.offset())?;
        if let Some(hubs) = &self.hubs {
            if self.runs.is_empty() && self.end - self.pos >= HUB_RELS {
                hubs.defer(from.offset());
                self.pos = self.end;
            }
        }
        if !self.exclude.is_empty() {
            self.find_excluded(rs, from)?;
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
        let whole = self.skips.is_empty()
            && self.runs.is_empty()
            && self.end - self.pos <= self.batch_cap() as u64;
        let out = &mut rs.chunks[self.output_chunk].state;
        if whole
            && self.whole_range_of == Some(from)
            && self.generation != 0
            && out.generation == self.generation
            && out.len as u64 == self.end - self.pos
        {
            out.sel = None;
            out.flat = None;
            self.pos = self.end;
            return true;
        }
        self.fresh_whole = whole.then_some(from);
        false
    }
}

impl Extend {
    /// [`Extend::degrees`]: each input batch with each tuple's rels as its
    /// weight, the tuples without rels deselected, and one output tuple.
    fn next_degrees(&mut self, rs: &mut ResultSet) -> Result<bool> {
        let input = self.input_chunk;
        loop {
            if let Some(w) = rs.weights.take() {
                self.weights = w;
            }
            rs.multiplicity = self.base_multiplicity;
            rs.chunks[input].state.flat = None;
            self.ctx.cancel.check()?;
            if !self.child.next(rs)? {
                return Ok(false);
            }
            self.base_multiplicity = rs.multiplicity.max(1);
            let mut weights = std::mem::take(&mut self.weights);
            weights.clear();
            weights.resize(rs.chunks[input].state.len, 0);
            match self.batch_weights(rs, &mut weights)? {
                Some(sel) if sel.is_empty() => {
                    self.weights = weights;
                    continue;
                }
                Some(sel) => rs.chunks[input].state.sel = Some(sel),
                None => {}
            }
            let out = &mut rs.chunks[self.output_chunk];
            for v in &mut out.vectors {
                v.reset(1);
            }
            out.state.reset(1);
            out.state.flat = Some(0);
            rs.weights = Some(weights);
            return Ok(true);
        }
    }

    /// Each selected tuple's rels (less its exclusions) into `weights` by
    /// position; the selection of the tuples with rels when some have none
    /// (`None`: all have rels).
    fn batch_weights(
        &mut self,
        rs: &mut ResultSet,
        weights: &mut [u64],
    ) -> Result<Option<Vec<u32>>> {
        let input = self.input_chunk;
        let n = rs.chunks[input].state.selected_len();
        // Every tuple extends from the same node of an earlier group: one
        // degree for the batch (unless exclusions make it differ).
        let fixed = if self.from.0 != input && self.exclude.is_empty() {
            Some(match Self::flat_id(rs, self.from)? {
                Some(from) => self.pins.degree(&self.ctx.pager, from.offset())?,
                None => 0,
            })
        } else {
            None
        };
        let chunk = &rs.chunks[input];
        // The source ids are in the input group only when not `fixed` (a
        // source in an earlier group indexed the input group with the other
        // group's vector and panicked, issue 51).
        let ids = match fixed {
            None if self.from.0 == input => Some(&chunk.vectors[self.from.1]),
            _ => None,
        };
        if let Some(ids) = ids.filter(|v| self.exclude.is_empty() && !v.nulls.may_have_nulls()) {
            // The common batch: every tuple's own node, none NULL (a
            // scan's whole batch as a plain range, the loops' cheapest
            // iterator).
            let (pager, ids) = (&self.ctx.pager, ids_of(ids)?);
            match &chunk.state.sel {
                None if self
                    .pins
                    .degrees_of_consecutive(pager, &ids[..n], weights)? => {}
                None => self.pins.degrees_into(pager, ids, 0..n, weights)?,
                Some(sel) => {
                    let positions = sel.iter().map(|&p| p as usize);
                    self.pins.degrees_into(pager, ids, positions, weights)?
                }
            }
        } else {
            for i in 0..n {
                let p = rs.chunks[input].state.position(i);
                weights[p] = if let Some(d) = fixed {
                    d
                } else if self.exclude.is_empty() {
                    let v = &rs.chunks[input].vectors[self.from.1];
                    if v.is_null(p) {
                        0
                    } else {
                        self.pins.degree(&self.ctx.pager, ids_of(v)?[p].offset())?
                    }
                } else {
                    // Exclusions depend on the tuple: tested flat, one by one.
                    rs.chunks[input].state.flat = Some(i);
                    let d = self.tuple_degree(rs);
                    rs.chunks[input].state.flat = None;
                    d?
                };
            }
        }
        // The tuples with rels, written branch-free.
        let state = &rs.chunks[input].state;
        let mut sel = vec![0u32; n];
        let mut kept = 0;
        match &state.sel {
            None => {
                for (p, &w) in weights[..n].iter().enumerate() {
                    sel[kept] = p as u32;
                    kept += usize::from(w > 0);
                }
            }
            Some(s) => {
                for &p in s {
                    sel[kept] = p;
                    kept += usize::from(weights[p as usize] > 0);
                }
            }
        }
        if kept == n {
            return Ok(None);
        }
        sel.truncate(kept);
        Ok(Some(sel))
    }

    /// [`Extend::collapse`]: sums the rels of every tuple of each input
    /// batch and represents the batch by its first tuple.
    fn next_collapsed(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            rs.multiplicity = self.base_multiplicity;
            rs.chunks[self.input_chunk].state.flat = None;
            self.ctx.cancel.check()?;
            if !self.child.next(rs)? {
                return Ok(false);
            }
            self.base_multiplicity = rs.multiplicity.max(1);
            let total = self.batch_degrees(rs)?;
            if total == 0 {
                continue;
            }
            rs.chunks[self.input_chunk].state.flat = Some(0);
            for c in std::iter::once(self.output_chunk).chain(self.pair_output) {
                let out = &mut rs.chunks[c];
                for v in &mut out.vectors {
                    v.reset(1);
                }
                out.state.reset(1);
            }
            rs.multiplicity = self.base_multiplicity * total;
            return Ok(true);
        }
    }

    /// The rels of the input batch's tuples, less the exclusions, in one
    /// loop over the batch. The node extended from, and each exclusion's
    /// gate, is either in the input group (one per tuple) or in an earlier,
    /// flat group (the same for the whole batch, its degree read once). An
    /// exclusion can only remove a rel from a node equal to its gate, so only
    /// such tuples are flattened and tested one by one.
    fn batch_degrees(&mut self, rs: &mut ResultSet) -> Result<u64> {
        if self.pair.is_some() {
            return self.batch_pair_degrees(rs);
        }
        let input = self.input_chunk;
        let mut fixed_gates = std::mem::take(&mut self.fixed_gates);
        let mut gated = std::mem::take(&mut self.gated);
        fixed_gates.clear();
        gated.clear();
        let mut tuple_gates: Vec<(&ValueVector, &[InternalId])> = Vec::new();
        for &(_, gate) in &self.exclude {
            if gate.0 == input {
                let v = &rs.chunks[input].vectors[gate.1];
                tuple_gates.push((v, ids_of(v)?));
            } else if let Some(g) = Self::flat_id(rs, gate)? {
                fixed_gates.push(g);
            }
        }
        let pager = &self.ctx.pager;
        let chunk = &rs.chunks[input];
        if self.from.0 == input && tuple_gates.is_empty() {
            let v = &chunk.vectors[self.from.1];
            if !v.nulls.may_have_nulls() {
                let (ids, state) = (ids_of(v)?, &chunk.state);
                // A batch handed on again (the neighbours of a node of an
                // earlier group, once per tuple of a later one: the third
                // hop of a 3-hop count from its middle) keeps the degrees
                // read for it the first time, and their sum.
                let (seen, sum) = &mut self.degree_memo;
                if !state.repeats(seen) {
                    let [out, _] = &mut self.batch_degrees;
                    selected_degrees(&mut self.pins, pager, state, ids, out)?;
                    *sum = match &state.sel {
                        Some(sel) => sel.iter().map(|&p| out[p as usize]).sum(),
                        None => out[..state.len].iter().sum(),
                    };
                    seen.clone_from(state);
                }
                let mut total = *sum;
                // A node equal to a gate (of an earlier, flat group) may
                // lose a rel to an exclusion: its degree leaves the sum and
                // its tuple is tested alone.
                if !fixed_gates.is_empty() {
                    let out = &self.batch_degrees[0];
                    let mut visit = |i: usize, p: usize| {
                        if fixed_gates.contains(&ids[p]) {
                            gated.push(i);
                            total -= out[p];
                        }
                    };
                    match &state.sel {
                        Some(sel) => sel
                            .iter()
                            .enumerate()
                            .for_each(|(i, &p)| visit(i, p as usize)),
                        None => (0..state.len).for_each(|p| visit(p, p)),
                    }
                    for &i in &gated {
                        rs.chunks[input].state.flat = Some(i);
                        total += self.tuple_degree(rs)?;
                    }
                    rs.chunks[input].state.flat = None;
                    self.skips.clear();
                }
                (self.fixed_gates, self.gated) = (fixed_gates, gated);
                return Ok(total);
            }
        }
        let (from_vector, fixed) = if self.from.0 == input {
            let v = &chunk.vectors[self.from.1];
            (Some((v, ids_of(v)?)), None)
        } else {
            let Some(from) = Self::flat_id(rs, self.from)? else {
                return Ok(0);
            };
            let degree = self.pins.degree(pager, from.offset())?;
            (None, Some((from, degree)))
        };
        let mut total = 0u64;
        let mut visit = |i: usize, p: usize| -> Result<()> {
            let from = match (from_vector, fixed) {
                (Some((v, ids)), _) => {
                    if v.is_null(p) {
                        return Ok(());
                    }
                    ids[p]
                }
                (None, Some((from, _))) => from,
                (None, None) => return Ok(()),
            };
            if fixed_gates.contains(&from)
                || tuple_gates
                    .iter()
                    .any(|(v, ids)| !v.is_null(p) && ids[p] == from)
            {
                gated.push(i);
                return Ok(());
            }
            total += match fixed {
                Some((_, degree)) => degree,
                None => self.pins.degree(pager, from.offset())?,
            };
            Ok(())
        };
        match &chunk.state.sel {
            Some(sel) => {
                for (i, &p) in sel.iter().enumerate() {
                    visit(i, p as usize)?;
                }
            }
            None => {
                for p in 0..chunk.state.len {
                    visit(p, p)?;
                }
            }
        }
        for &i in &gated {
            rs.chunks[input].state.flat = Some(i);
            total += self.tuple_degree(rs)?;
        }
        self.skips.clear();
        (self.fixed_gates, self.gated) = (fixed_gates, gated);
        Ok(total)
    }

    /// [`Extend::pair`]: the sum over the input batch's nodes of the
    /// product of their two degrees, less the pairs of one rel.
    fn batch_pair_degrees(&mut self, rs: &ResultSet) -> Result<u64> {
        let Extend {
            ctx,
            pins,
            pair: Some(pair),
            from,
            input_chunk,
            scratch,
            batch_degrees,
            ..
        } = self
        else {
            return Ok(0);
        };
        let pager = &ctx.pager;
        let chunk = &rs.chunks[*input_chunk];
        let v = &chunk.vectors[from.1];
        let ids = ids_of(v)?;
        // The batch's degrees in both directions at once (runs of close
        // nodes decode the offsets they span, see `CsrPins::degrees_into`);
        // a NULL position's stale id is read too, and its degrees ignored.
        let [d2s, d1s] = batch_degrees;
        selected_degrees(pins, pager, &chunk.state, ids, d2s)?;
        selected_degrees(&mut pair.pins, pager, &chunk.state, ids, d1s)?;
        if pair.shared != SharedRels::SelfLoops && !v.nulls.may_have_nulls() {
            // Arithmetic only (no neighbour read can follow): one loop the
            // compiler vectorizes. A node without rels adds 0 either way.
            let all = pair.shared == SharedRels::All;
            let term = |p: usize| {
                let (d2, d1) = (d2s[p], d1s[p]);
                d1 * d2 - if all { d1.min(d2) } else { 0 }
            };
            return Ok(match &chunk.state.sel {
                Some(sel) => sel.iter().map(|&p| term(p as usize)).sum(),
                None => (0..chunk.state.len).map(term).sum(),
            });
        }
        let mut total = 0u64;
        let mut visit = |p: usize| -> Result<()> {
            let (d2, d1) = (d2s[p], d1s[p]);
            if v.is_null(p) || d2 == 0 {
                return Ok(());
            }
            let b = ids[p].offset();
            let shared = match pair.shared {
                SharedRels::None => 0,
                SharedRels::All => d1.min(d2),
                // A self loop is in both ranges: scan the shorter.
                SharedRels::SelfLoops if d1 == 0 => 0,
                SharedRels::SelfLoops if d1 < d2 => pair.pins.count_to(pager, b, b, scratch)?,
                SharedRels::SelfLoops => pins.count_to(pager, b, b, scratch)?,
            };
            total += d1 * d2 - shared;
            Ok(())
        };
        match &chunk.state.sel {
            Some(sel) => {
                for &p in sel.iter() {
                    visit(p as usize)?;
                }
            }
            None => {
                for p in 0..chunk.state.len {
                    visit(p)?;
                }
            }
        }
        Ok(total)
    }

    /// The rels of the current flat tuple, less the exclusions.
    fn tuple_degree(&mut self, rs: &ResultSet) -> Result<u64> {
        let Some(from) = Self::flat_id(rs, self.from)? else {
            return Ok(0);
        };
        self.seek(from.offset())?;
        let mut n = self.remaining();
        if !self.exclude.is_empty() {
            self.find_excluded(rs, from)?;
            n -= self.skips.len() as u64;
        }
        Ok(n)
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
/// The degree of the node of every selected position of a batch (`ids`,
/// by position, none NULL) into `out` at that position.
fn selected_degrees(
    pins: &mut CsrPins,
    pager: &Arc<kith_pager::Pager>,
    state: &ChunkState,
    ids: &[InternalId],
    out: &mut Vec<u64>,
) -> Result<()> {
    if out.len() < state.len {
        out.resize(state.len, 0);
    }
    match &state.sel {
        Some(sel) => pins.degrees_into(pager, ids, sel.iter().map(|&p| p as usize), out),
        None => pins.degrees_into(pager, ids, 0..state.len, out),
    }
}

fn ids_of(v: &ValueVector) -> Result<&[InternalId]> {
    match &v.data {
        VectorData::Id(ids) => Ok(ids.as_slice()),
        _ => Err(kith_common::Error::internal("extend reads a non-id vector")),
    }
}

impl Operator for Extend {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.collapse {
            return self.next_collapsed(rs);
        }
        if self.degrees {
            return self.next_degrees(rs);
        }
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
            if self.pos < self.end && self.repeat_batch(rs, from) {
                self.tuple_done(true);
                return Ok(true);
            }
        }
    }
}
