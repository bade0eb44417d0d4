//! Stored rel tables: a double-indexed CSR (forward by source, backward by
//! destination), one CSR region per node group of the bound node table, with
//! the rel properties stored in CSR order in both directions ("parallel"
//! columns), so a node's rels and their properties are read sequentially from
//! either side.
//!
//! A region changes without being rewritten. Rels inserted after it was
//! written go to the end of its columns (each column chunk re-encodes only
//! its small tail, see [`crate::column::ColumnChunk::append`]), with their
//! bound nodes in a small `appended` column; a deleted rel is a tombstone
//! (its bound node and position) in a small `deleted` column; an updated
//! property is a patch of its column chunk
//! ([`crate::column::ColumnChunk::set_values`]). So a one-rel commit writes
//! a few pages instead of the whole region. Readers index the appended and
//! deleted rels when they pin the region: a node with a deleted rel in its
//! main range reads an empty main range and its live positions as runs of
//! [`PinnedCsrGroup::appended`], so readers that take the main range plus
//! the appended runs need not know about deletes. The region is written
//! whole again (appended rels sorted in, deleted ones dropped) when its
//! changes would pass [`APPENDED_MAX`], and at checkpoint.

use std::sync::Arc;

use kith_catalog::PropertyId;
use kith_common::codec::{Decoder, Encoder};
use kith_common::{Error, Result};
use kith_pager::Pager;

use crate::column::{ColumnChunk, LazyPinnedColumn, PageRun, PinnedColumn, TAIL_MAX};

/// Appended plus deleted rels a CSR region holds at most: the size of a
/// column chunk's tail, so every append stays a tail append. Readers index
/// them when they pin the region (a sort of at most this many), and seek
/// them by binary search.
pub const APPENDED_MAX: u64 = TAIL_MAX;

/// [`PinnedCsrGroup::bound_nodes`] at a deleted position.
pub const DELETED_POSITION: u64 = u64::MAX;

/// Which CSR: by source (`Fwd`) or by destination (`Bwd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RelDirection {
    Fwd,
    Bwd,
}

/// The CSR region of one node group.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrGroup {
    pub num_nodes: u64,
    /// Rels of the region: the main part's, then the appended ones.
    pub num_rels: u64,
    /// `num_nodes + 1` U64 values: node `i`'s rels in the main part are
    /// `offsets[i]..offsets[i+1]`.
    pub offsets: ColumnChunk,
    /// Offsets of the neighbour nodes (U64).
    pub neighbors: ColumnChunk,
    /// Rel offsets (U64) — the rel's identity within its table.
    pub rel_ids: ColumnChunk,
    /// One chunk per entry of the table's `column_ids`.
    pub properties: Vec<ColumnChunk>,
    /// The bound node (offset within the group, U64) of each appended rel,
    /// in position order: appended rel `i` sits at position
    /// `num_rels - appended.len() + i` of the other columns. `None`: none.
    pub appended: Option<ColumnChunk>,
    /// The rels deleted since the region was last written whole, as
    /// (bound node, position) pairs, flattened into one U64 column.
    /// `None`: none.
    pub deleted: Option<ColumnChunk>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CsrIndex {
    pub groups: Vec<CsrGroup>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelTableData {
    /// Number of (live) rels.
    pub num_rels: u64,
    /// The id the next inserted rel gets (ids are never reused until a COPY
    /// renumbers them).
    pub next_rel_id: u64,
    pub column_ids: Vec<PropertyId>,
    pub fwd: CsrIndex,
    pub bwd: CsrIndex,
    /// Live rels whose two ends are one node (each is in both CSR
    /// directions, at that node); `None` when not known (metadata written
    /// before format 6). A 2-hop count through one table in both directions
    /// skips reading neighbours for self loops when there are none.
    pub self_loops: Option<u64>,
}

/// How many of the rels `src[i] -> dst[i]` (node offsets; `same_table`:
/// both ends in one node table) are self loops.
pub fn count_self_loops(same_table: bool, src: &[u64], dst: &[u64]) -> u64 {
    match same_table {
        true => src.iter().zip(dst).filter(|(s, d)| s == d).count() as u64,
        false => 0,
    }
}

impl RelTableData {
    pub fn empty(column_ids: Vec<PropertyId>) -> RelTableData {
        RelTableData {
            num_rels: 0,
            next_rel_id: 0,
            column_ids,
            fwd: CsrIndex::default(),
            bwd: CsrIndex::default(),
            self_loops: Some(0),
        }
    }

    /// Adds (`added`) or takes away the self loops among rels
    /// `src[i] -> dst[i]` in [`RelTableData::self_loops`], when it is known.
    pub fn count_changed_self_loops(
        &mut self,
        same_table: bool,
        src: &[u64],
        dst: &[u64],
        added: bool,
    ) {
        let n = count_self_loops(same_table, src, dst);
        self.self_loops = self.self_loops.and_then(|k| match added {
            true => k.checked_add(n),
            false => k.checked_sub(n),
        });
    }

    pub fn csr(&self, dir: RelDirection) -> &CsrIndex {
        match dir {
            RelDirection::Fwd => &self.fwd,
            RelDirection::Bwd => &self.bwd,
        }
    }

    pub fn csr_mut(&mut self, dir: RelDirection) -> &mut CsrIndex {
        match dir {
            RelDirection::Fwd => &mut self.fwd,
            RelDirection::Bwd => &mut self.bwd,
        }
    }

    pub fn column_of(&self, property: PropertyId) -> Option<usize> {
        self.column_ids.iter().position(|p| *p == property)
    }

    pub fn pages(&self, out: &mut Vec<PageRun>) {
        for csr in [&self.fwd, &self.bwd] {
            for g in &csr.groups {
                g.offsets.pages(out);
                g.neighbors.pages(out);
                g.rel_ids.pages(out);
                for p in &g.properties {
                    p.pages(out);
                }
                if let Some(a) = &g.appended {
                    a.pages(out);
                }
                if let Some(d) = &g.deleted {
                    d.pages(out);
                }
            }
        }
    }

    pub fn encode(&self, e: &mut Encoder) {
        e.u64(self.num_rels);
        e.u64(self.next_rel_id);
        match self.self_loops {
            Some(n) => {
                e.u8(1);
                e.u64(n);
            }
            None => e.u8(0),
        }
        e.u64(self.column_ids.len() as u64);
        for p in &self.column_ids {
            e.u32(p.0);
        }
        for csr in [&self.fwd, &self.bwd] {
            e.u64(csr.groups.len() as u64);
            for g in &csr.groups {
                e.u64(g.num_nodes);
                e.u64(g.num_rels);
                g.offsets.encode(e);
                g.neighbors.encode(e);
                g.rel_ids.encode(e);
                for p in &g.properties {
                    p.encode(e);
                }
                for c in [&g.appended, &g.deleted] {
                    match c {
                        Some(c) => {
                            e.u8(1);
                            c.encode(e);
                        }
                        None => e.u8(0),
                    }
                }
            }
        }
    }

    /// Decodes metadata of metadata format `format` (1: no `next_rel_id`;
    /// before 3: no appended rels; before 4: no deleted rels; before 6: no
    /// self-loop count).
    pub fn decode(d: &mut Decoder<'_>, format: u32) -> Result<RelTableData> {
        let num_rels = d.u64()?;
        let next_rel_id = if format >= 2 { d.u64()? } else { num_rels };
        let self_loops = match format >= 6 && d.u8()? == 1 {
            true => Some(d.u64()?),
            false => None,
        };
        let ncols = d.count(4)?;
        let mut column_ids = Vec::with_capacity(ncols);
        for _ in 0..ncols {
            column_ids.push(PropertyId(d.u32()?));
        }
        let mut csrs = Vec::with_capacity(2);
        for _ in 0..2 {
            let ngroups = d.count(16)?;
            let mut groups = Vec::with_capacity(ngroups);
            for _ in 0..ngroups {
                let num_nodes = d.u64()?;
                let num_rels = d.u64()?;
                let offsets = ColumnChunk::decode(d)?;
                let neighbors = ColumnChunk::decode(d)?;
                let rel_ids = ColumnChunk::decode(d)?;
                let mut properties = Vec::with_capacity(ncols);
                for _ in 0..ncols {
                    properties.push(ColumnChunk::decode(d)?);
                }
                let appended = if format >= 3 && d.u8()? == 1 {
                    Some(ColumnChunk::decode(d)?)
                } else {
                    None
                };
                let deleted = if format >= 4 && d.u8()? == 1 {
                    Some(ColumnChunk::decode(d)?)
                } else {
                    None
                };
                groups.push(CsrGroup {
                    num_nodes,
                    num_rels,
                    offsets,
                    neighbors,
                    rel_ids,
                    properties,
                    appended,
                    deleted,
                });
            }
            csrs.push(CsrIndex { groups });
        }
        let bwd = csrs.pop().unwrap_or_default();
        let fwd = csrs.pop().unwrap_or_default();
        Ok(RelTableData {
            num_rels,
            next_rel_id,
            column_ids,
            fwd,
            bwd,
            self_loops,
        })
    }
}

/// A CSR region with its offsets and selected property chunks pinned, and
/// its neighbours and rel ids pinned on their first read: the extend inner
/// loop reads plain arrays from here.
pub struct PinnedCsrGroup {
    pub num_nodes: u64,
    pub offsets: PinnedColumn,
    neighbors: LazyPinnedColumn,
    rel_ids: LazyPinnedColumn,
    pager: Arc<Pager>,
    /// Pinned chunks of the requested property columns, in request order.
    pub properties: Vec<PinnedColumn>,
    /// The appended and deleted rels by bound node; `None` when there are
    /// none.
    changes: Option<Box<ChangeIndex>>,
}

/// The appended and deleted rels of a pinned region, by bound node: node
/// `nodes[k]`'s live positions beyond its main range are the runs
/// `runs[starts[k]..starts[k + 1]]`. A node with a deleted rel in its main
/// range is `masked`: its main range reads empty and its live main
/// positions come first among its runs. `present` has a bit per node with
/// runs, so a seek of an unchanged node costs a bit test or two.
struct ChangeIndex {
    present: Vec<u64>,
    masked: Vec<u64>,
    nodes: Vec<u64>,
    starts: Vec<usize>,
    runs: Vec<(u64, u64)>,
    /// One past the largest node with runs.
    span: u64,
    /// The deleted positions, ascending.
    deleted: Vec<u64>,
}

/// The positions that runs of positions (`start..end` each) cover.
/// Inlined: it sits in the per-node degree read of counting extends (a call
/// there cost 15 % of a 3-hop count on R-MAT 16).
#[inline]
fn rels_in(runs: &[(u64, u64)]) -> u64 {
    runs.iter().map(|&(a, b)| b - a).sum()
}

fn bit(words: &[u64], i: u64) -> bool {
    words
        .get((i / 64) as usize)
        .is_some_and(|w| (w >> (i % 64)) & 1 == 1)
}

fn set_bit(words: &mut Vec<u64>, i: u64) {
    let w = (i / 64) as usize;
    if words.len() <= w {
        words.resize(w + 1, 0);
    }
    words[w] |= 1 << (i % 64);
}

impl ChangeIndex {
    /// `locals[i]`: the bound node of the appended rel at position
    /// `first + i`; `deleted`: (bound node, position) of the deleted rels,
    /// sorted and unique; `offsets`: the main part's offsets.
    fn new(
        first: u64,
        locals: &[u64],
        deleted: &[(u64, u64)],
        offsets: &PinnedColumn,
        num_nodes: u64,
    ) -> Result<ChangeIndex> {
        // (node, start, end) of every live run outside unmasked main ranges.
        let mut pieces: Vec<(u64, u64, u64)> = Vec::with_capacity(locals.len() + deleted.len());
        let mut masked = Vec::new();
        for node in deleted.chunk_by(|a, b| a.0 == b.0) {
            let local = node[0].0;
            let mut main = node
                .iter()
                .map(|&(_, p)| p)
                .filter(|&p| p < first)
                .peekable();
            if main.peek().is_none() {
                continue;
            }
            let mut two = [0u64; 2];
            if local < num_nodes {
                offsets.read_u64s(local, 2, &mut two);
            }
            set_bit(&mut masked, local);
            let mut s = two[0];
            for p in main {
                if p < s || p >= two[1] {
                    return Err(Error::corruption(format!(
                        "a deleted rel at position {p} lies outside the range of its node {local}"
                    )));
                }
                if p > s {
                    pieces.push((local, s, p));
                }
                s = p + 1;
            }
            if s < two[1] {
                pieces.push((local, s, two[1]));
            }
        }
        for (i, &local) in locals.iter().enumerate() {
            let pos = first + i as u64;
            if deleted.binary_search(&(local, pos)).is_err() {
                pieces.push((local, pos, pos + 1));
            }
        }
        pieces.sort_unstable();
        let mut index = ChangeIndex {
            present: Vec::new(),
            masked,
            nodes: Vec::new(),
            starts: Vec::new(),
            runs: Vec::with_capacity(pieces.len()),
            span: pieces.last().map_or(0, |&(l, _, _)| l + 1),
            deleted: {
                let mut d: Vec<u64> = deleted.iter().map(|&(_, p)| p).collect();
                d.sort_unstable();
                d
            },
        };
        for (local, s, e) in pieces {
            if index.nodes.last() != Some(&local) {
                set_bit(&mut index.present, local);
                index.nodes.push(local);
                index.starts.push(index.runs.len());
                index.runs.push((s, e));
            } else {
                match index.runs.last_mut() {
                    Some(run) if run.1 == s => run.1 = e,
                    _ => index.runs.push((s, e)),
                }
            }
        }
        index.starts.push(index.runs.len());
        Ok(index)
    }

    #[inline]
    fn find(&self, local: u64) -> Option<usize> {
        if !bit(&self.present, local) {
            return None;
        }
        self.nodes.binary_search(&local).ok()
    }
}

impl CsrGroup {
    /// Rels in the sorted main part (the appended ones follow them).
    pub fn main_rels(&self) -> u64 {
        self.num_rels - self.num_appended()
    }

    /// Rels appended after the main part.
    pub fn num_appended(&self) -> u64 {
        self.appended.as_ref().map_or(0, |a| a.len())
    }

    /// Rels deleted (tombstones) since the region was written whole.
    pub fn num_deleted(&self) -> u64 {
        self.deleted.as_ref().map_or(0, |d| d.len() / 2)
    }

    /// Rels of the region that are not deleted.
    pub fn live_rels(&self) -> u64 {
        self.num_rels - self.num_deleted()
    }

    /// Whether the region has appended or deleted rels (is not one plain
    /// sorted CSR).
    pub fn has_changes(&self) -> bool {
        self.num_appended() + self.num_deleted() > 0
    }

    pub fn pin(&self, pager: &Arc<Pager>, property_columns: &[usize]) -> Result<PinnedCsrGroup> {
        let mut properties = Vec::with_capacity(property_columns.len());
        for &c in property_columns {
            properties.push(
                self.properties
                    .get(c)
                    .ok_or_else(|| Error::internal(format!("rel column {c} out of range")))?
                    .pin(pager)?,
            );
        }
        let offsets = self.offsets.pin(pager)?;
        let changes = if self.has_changes() {
            let n = self.num_appended();
            if n > self.num_rels {
                return Err(Error::corruption(format!(
                    "a CSR region of {} rels lists {n} appended rels",
                    self.num_rels
                )));
            }
            let mut locals = vec![0u64; n as usize];
            if let Some(chunk) = &self.appended {
                chunk.pin(pager)?.read_u64s(0, locals.len(), &mut locals);
            }
            let mut flat = vec![0u64; 2 * self.num_deleted() as usize];
            if let Some(chunk) = &self.deleted {
                chunk.pin(pager)?.read_u64s(0, flat.len(), &mut flat);
            }
            let mut deleted: Vec<(u64, u64)> = flat.chunks_exact(2).map(|p| (p[0], p[1])).collect();
            deleted.sort_unstable();
            deleted.dedup();
            if deleted.last().is_some_and(|&(_, p)| p >= self.num_rels) {
                return Err(Error::corruption(format!(
                    "a CSR region of {} rels lists a deleted rel beyond its end",
                    self.num_rels
                )));
            }
            Some(Box::new(ChangeIndex::new(
                self.num_rels - n,
                &locals,
                &deleted,
                &offsets,
                self.num_nodes,
            )?))
        } else {
            None
        };
        Ok(PinnedCsrGroup {
            num_nodes: self.num_nodes,
            offsets,
            neighbors: LazyPinnedColumn::new(&self.neighbors),
            rel_ids: LazyPinnedColumn::new(&self.rel_ids),
            pager: Arc::clone(pager),
            properties,
            changes,
        })
    }
}

impl PinnedCsrGroup {
    /// The neighbour of every CSR position, pinned on the first call.
    #[inline]
    pub fn neighbors(&self) -> Result<&PinnedColumn> {
        self.neighbors.get(&self.pager)
    }

    /// The rel id of every CSR position, pinned on the first call.
    #[inline]
    pub fn rel_ids(&self) -> Result<&PinnedColumn> {
        self.rel_ids.get(&self.pager)
    }

    /// Whether the neighbours and the rel ids are pinned yet.
    pub fn pinned_parts(&self) -> (bool, bool) {
        (self.neighbors.is_pinned(), self.rel_ids.is_pinned())
    }

    /// The main-part CSR positions of node `local` (offset within its node
    /// group); empty for nodes beyond the main part (added after it was
    /// written) and for nodes with a deleted rel there. The node's other
    /// rels are [`PinnedCsrGroup::appended`].
    #[inline]
    pub fn range(&self, local: u64) -> (u64, u64) {
        if local >= self.num_nodes {
            return (0, 0);
        }
        if self.is_masked(local) {
            return (0, 0);
        }
        let mut two = [0u64; 2];
        self.offsets.read_u64s(local, 2, &mut two);
        (two[0], two[1])
    }

    /// The [`PinnedCsrGroup::range`] of each node `lo..lo + out.len()`
    /// (at most 64), decoding their offsets in one read instead of two
    /// reads per node: for a bottom-up search step, which visits every
    /// unreached node of a block.
    pub fn main_ranges(&self, lo: u64, out: &mut [(u64, u64)]) {
        let mut offsets = [0u64; 65];
        let n = self
            .num_nodes
            .saturating_sub(lo)
            .min(out.len().min(64) as u64) as usize;
        if n > 0 {
            self.offsets.read_u64s(lo, n + 1, &mut offsets[..n + 1]);
        }
        for (i, r) in out.iter_mut().enumerate() {
            *r = if i < n && !self.is_masked(lo + i as u64) {
                (offsets[i], offsets[i + 1])
            } else {
                (0, 0)
            };
        }
    }

    /// Whether node `local`'s main range reads empty because one of its rels
    /// there was deleted (its live ones are among its appended runs): for
    /// readers that decode the offsets themselves.
    #[inline]
    pub fn is_masked(&self, local: u64) -> bool {
        self.changes.as_ref().is_some_and(|c| bit(&c.masked, local))
    }

    /// Whether the region has appended or deleted rels.
    #[inline]
    pub fn has_changes(&self) -> bool {
        self.changes.is_some()
    }

    /// Runs of live positions (ascending) of node `local` outside its
    /// [`PinnedCsrGroup::range`]: its appended rels, and its main-part rels
    /// when one of them was deleted; empty for most nodes.
    #[inline]
    pub fn appended(&self, local: u64) -> &[(u64, u64)] {
        match &self.changes {
            None => &[],
            Some(c) => match c.find(local) {
                Some(k) => &c.runs[c.starts[k]..c.starts[k + 1]],
                None => &[],
            },
        }
    }

    /// How many rels of node `local` lie in its [`PinnedCsrGroup::appended`] runs.
    #[inline]
    pub fn appended_degree(&self, local: u64) -> u64 {
        rels_in(self.appended(local))
    }

    /// All (live) rels of node `local`.
    #[inline]
    pub fn degree(&self, local: u64) -> u64 {
        let (s, e) = self.range(local);
        e - s + self.appended_degree(local)
    }

    /// The degree of every node of the region, `0..node_span()`, into
    /// `out`: one decode of the offsets instead of two reads per node.
    pub fn degrees(&self, out: &mut Vec<u64>) {
        out.clear();
        out.resize(self.node_span() as usize, 0);
        let n = self.num_nodes as usize;
        if n > 0 {
            let mut offsets = vec![0u64; n + 1];
            self.offsets.read_u64s(0, n + 1, &mut offsets);
            for (d, w) in out.iter_mut().zip(offsets.windows(2)) {
                *d = w[1] - w[0];
            }
        }
        let Some(c) = &self.changes else {
            return;
        };
        for (local, d) in out.iter_mut().enumerate().take(n) {
            if bit(&c.masked, local as u64) {
                *d = 0;
            }
        }
        for (k, &node) in c.nodes.iter().enumerate() {
            if let Some(d) = out.get_mut(node as usize) {
                *d += rels_in(&c.runs[c.starts[k]..c.starts[k + 1]]);
            }
        }
    }

    /// Every position run of node `local`: the main range (when not empty),
    /// then the appended runs.
    pub fn ranges(&self, local: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let main = self.range(local);
        (main.0 < main.1)
            .then_some(main)
            .into_iter()
            .chain(self.appended(local).iter().copied())
    }

    /// The positions of deleted rels, ascending: for readers that walk the
    /// whole region's columns.
    pub fn deleted_positions(&self) -> &[u64] {
        self.changes.as_ref().map_or(&[], |c| &c.deleted)
    }

    /// One past the last node with rels in this region (main or appended).
    pub fn node_span(&self) -> u64 {
        self.num_nodes
            .max(self.changes.as_ref().map_or(0, |c| c.span))
    }

    /// The bound node (offset within the group) of every position, in
    /// position order, [`DELETED_POSITION`] at deleted ones: for readers
    /// that walk the whole region's columns.
    pub fn bound_nodes(&self) -> Vec<u64> {
        let total = self.neighbors.num_values() as usize;
        let mut out = vec![DELETED_POSITION; total];
        for local in 0..self.node_span() {
            for (s, e) in self.ranges(local) {
                out[s as usize..(e as usize).min(total)].fill(local);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The self-loop count survives encoding; metadata of format 5 (the
    /// same bytes without it) decodes as not known.
    #[test]
    fn self_loop_count_round_trips_and_is_unknown_before_format_6() {
        for loops in [Some(3), Some(0), None] {
            let mut data = RelTableData::empty(vec![PropertyId(4)]);
            data.self_loops = loops;
            let mut e = Encoder::new();
            data.encode(&mut e);
            let bytes = e.finish();
            assert_eq!(
                RelTableData::decode(&mut Decoder::new(&bytes), 6).unwrap(),
                data
            );
            // num_rels and next_rel_id, then the flag and the count.
            let count_len = if loops.is_some() { 9 } else { 1 };
            let mut old = bytes[..16].to_vec();
            old.extend_from_slice(&bytes[16 + count_len..]);
            let got = RelTableData::decode(&mut Decoder::new(&old), 5).unwrap();
            assert_eq!(got.self_loops, None);
            assert_eq!(got.column_ids, data.column_ids);
        }
        let mut data = RelTableData::empty(Vec::new());
        data.count_changed_self_loops(true, &[1, 2, 3], &[1, 5, 3], true);
        assert_eq!(data.self_loops, Some(2));
        data.count_changed_self_loops(false, &[4], &[4], true);
        assert_eq!(data.self_loops, Some(2));
        data.count_changed_self_loops(true, &[3], &[3], false);
        assert_eq!(data.self_loops, Some(1));
        data.self_loops = None;
        data.count_changed_self_loops(true, &[1], &[1], true);
        assert_eq!(data.self_loops, None);
    }
}
