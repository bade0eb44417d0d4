//! The counting modes of an extend: when nothing downstream reads its
//! neighbours, an extend reads each node's degree instead of its rels and
//! hands on counts, not tuples ([`CountExtend`]). Its loops share nothing
//! with the expanding [`Extend`] but the node's range ([`RelRange`]), read
//! for a tuple whose rels an exclusion may remove.

use std::sync::Arc;

use kith_common::{InternalId, Result, TableId, ValueVector};

use super::range::RelRange;
use super::{ids_of, Extend};
use crate::operator::csr_pins::CsrPins;
use crate::operator::{Operator, Pos, QueryContext};
use crate::result_set::{ChunkState, ResultSet};

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

/// What a [`CountExtend`] hands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountMode {
    /// Count only: nothing downstream reads the input group or this
    /// extend's output, so each input batch becomes one tuple standing for
    /// all its rels (the result set's multiplicity) and no neighbour is
    /// read. The last extend of `MATCH (a)->(b)->(c) RETURN count(*)`.
    Collapse,
    /// Degrees only: the sink reads the input group but nothing of this
    /// extend's output, so each input batch is handed on whole, each tuple
    /// weighted by its rels (`ResultSet::weights`; tuples without rels
    /// deselected), and no neighbour is read. The extend of
    /// `MATCH (b)<-[]-(a) RETURN b, count(*)`.
    Degrees,
}

/// An extend that counts rels instead of writing them (see [`CountMode`]).
pub struct CountExtend {
    pub(super) child: Box<dyn Operator>,
    pub(super) ctx: Arc<QueryContext>,
    pub(super) mode: CountMode,
    pub(super) rel_table: TableId,
    pub(super) pins: CsrPins,
    pub(super) from: Pos,
    /// The group whose tuples are counted (the newest unflat group below).
    pub(super) input_chunk: usize,
    /// This extend's output group: one tuple, no values read.
    pub(super) output_chunk: usize,
    /// Relationship isomorphism, as [`Extend::exclude`].
    pub(super) exclude: Vec<(Pos, Pos)>,
    /// With [`CountMode::Collapse`]: the fused other extend from the same
    /// node (then `from` is in the input group and `exclude` is empty; the
    /// pair's `shared` accounts for the isomorphism test).
    pub(super) pair: Option<PairCount>,
    /// The output group of the fused extend, one tuple per batch.
    pub(super) pair_output: Option<usize>,
    /// The multiplicity the child set, restored before pulling from it.
    pub(super) base_multiplicity: u64,
    /// [`CountMode::Degrees`]: the weights handed on with the last batch,
    /// taken back (to reuse) before the next is pulled.
    pub(super) weights: Vec<u64>,
    /// Scratch: the degrees of a batch's nodes by position, in each of the
    /// pair's directions.
    pub(super) batch_degrees: [Vec<u64>; 2],
    /// The last input state whose `batch_degrees[0]` were summed, with the
    /// sum (an untracked state never repeats; its allocation is reused for
    /// the next).
    pub(super) degree_memo: (ChunkState, u64),
    /// Per-batch scratch: the exclusions' gates that are flat, and the
    /// batch positions equal to a gate.
    pub(super) fixed_gates: Vec<InternalId>,
    pub(super) gated: Vec<usize>,
    /// The range of a tuple tested alone (an exclusion may remove a rel).
    pub(super) range: RelRange,
}

impl Operator for CountExtend {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        match self.mode {
            CountMode::Collapse => self.next_collapsed(rs),
            CountMode::Degrees => self.next_degrees(rs),
        }
    }
}

impl CountExtend {
    /// [`CountMode::Degrees`]: each input batch with each tuple's rels as its
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
            Some(match Extend::flat_id(rs, self.from)? {
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

    /// [`CountMode::Collapse`]: sums the rels of every tuple of each input
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
            } else if let Some(g) = Extend::flat_id(rs, gate)? {
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
                // Most batches hold no gate at all: one pass the compiler
                // vectorizes says so (the third hop of a 3-hop count ran
                // 10 % slower testing each position with `contains`).
                let any_gate = !fixed_gates.is_empty()
                    && match (&state.sel, ids.get(..state.len)) {
                        (None, Some(batch)) => count_gates(batch, &fixed_gates) > 0,
                        _ => true,
                    };
                if any_gate {
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
                    self.range.skips.clear();
                }
                (self.fixed_gates, self.gated) = (fixed_gates, gated);
                return Ok(total);
            }
        }
        let (from_vector, fixed) = if self.from.0 == input {
            let v = &chunk.vectors[self.from.1];
            (Some((v, ids_of(v)?)), None)
        } else {
            let Some(from) = Extend::flat_id(rs, self.from)? else {
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
        self.range.skips.clear();
        (self.fixed_gates, self.gated) = (fixed_gates, gated);
        Ok(total)
    }

    /// [`CountExtend::pair`]: the sum over the input batch's nodes of the
    /// product of their two degrees, less the pairs of one rel.
    fn batch_pair_degrees(&mut self, rs: &ResultSet) -> Result<u64> {
        let CountExtend {
            ctx,
            pins,
            pair: Some(pair),
            from,
            input_chunk,
            range,
            batch_degrees,
            ..
        } = self
        else {
            return Ok(0);
        };
        let scratch = &mut range.scratch;
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
        let Some(from) = Extend::flat_id(rs, self.from)? else {
            return Ok(0);
        };
        self.range
            .seek(&mut self.pins, &self.ctx.pager, from.offset())?;
        let mut n = self.range.remaining();
        if !self.exclude.is_empty() {
            self.range
                .find_excluded(&self.pins, rs, &self.exclude, self.rel_table, from)?;
            n -= self.range.skips.len() as u64;
        }
        Ok(n)
    }
}

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

/// How many of `ids` equal one of `gates`: with one or two gates (an
/// exclusion's flat endpoints, the usual), a branch-free pass.
fn count_gates(ids: &[InternalId], gates: &[InternalId]) -> usize {
    match gates {
        [g] => ids.iter().map(|x| usize::from(x.0 == g.0)).sum(),
        [g, h] => ids
            .iter()
            .map(|x| usize::from((x.0 == g.0) | (x.0 == h.0)))
            .sum(),
        _ => ids.iter().filter(|x| gates.contains(x)).count(),
    }
}
