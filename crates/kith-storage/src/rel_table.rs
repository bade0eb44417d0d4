//! Stored rel tables: a double-indexed CSR (forward by source, backward by
//! destination), one CSR region per node group of the bound node table, with
//! the rel properties stored in CSR order in both directions ("parallel"
//! columns), so a node's rels and their properties are read sequentially from
//! either side.
//!
//! A region has room to grow: rels inserted after it was written go to the
//! end of its columns (each column chunk re-encodes only its small tail, see
//! [`crate::column::ColumnChunk::append`]), with their bound nodes in a small
//! `appended` column, so a one-rel commit writes a few pages instead of the
//! whole region. The region is written whole again (the appended rels sorted
//! in) when they pass [`APPENDED_MAX`], by a write that needs the region in
//! order (a delete), and at checkpoint. Readers see a node's rels as its main
//! range plus the runs of [`PinnedCsrGroup::appended`].

use std::sync::Arc;

use kith_catalog::PropertyId;
use kith_common::codec::{Decoder, Encoder};
use kith_common::{Error, Result};
use kith_pager::Pager;

use crate::column::{ColumnChunk, PageRun, PinnedColumn, TAIL_MAX};

/// Rels a CSR region holds appended (beyond its sorted main part) at most:
/// the size of a column chunk's tail, so every append stays a tail append.
/// Readers index the appended rels when they pin the region (a sort of at
/// most this many), and seek them by binary search.
pub const APPENDED_MAX: u64 = TAIL_MAX;

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
}

impl RelTableData {
    pub fn empty(column_ids: Vec<PropertyId>) -> RelTableData {
        RelTableData {
            num_rels: 0,
            next_rel_id: 0,
            column_ids,
            fwd: CsrIndex::default(),
            bwd: CsrIndex::default(),
        }
    }

    pub fn csr(&self, dir: RelDirection) -> &CsrIndex {
        match dir {
            RelDirection::Fwd => &self.fwd,
            RelDirection::Bwd => &self.bwd,
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
            }
        }
    }

    pub fn encode(&self, e: &mut Encoder) {
        e.u64(self.num_rels);
        e.u64(self.next_rel_id);
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
                match &g.appended {
                    Some(a) => {
                        e.u8(1);
                        a.encode(e);
                    }
                    None => e.u8(0),
                }
            }
        }
    }

    /// Decodes metadata of metadata format `format` (1: no `next_rel_id`;
    /// before 3: no appended rels).
    pub fn decode(d: &mut Decoder<'_>, format: u32) -> Result<RelTableData> {
        let num_rels = d.u64()?;
        let next_rel_id = if format >= 2 { d.u64()? } else { num_rels };
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
                groups.push(CsrGroup {
                    num_nodes,
                    num_rels,
                    offsets,
                    neighbors,
                    rel_ids,
                    properties,
                    appended,
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
        })
    }
}

/// A CSR region with its offsets, neighbours, rel ids and selected property
/// chunks pinned: the extend inner loop reads plain arrays from here.
pub struct PinnedCsrGroup {
    pub num_nodes: u64,
    pub offsets: PinnedColumn,
    pub neighbors: PinnedColumn,
    pub rel_ids: PinnedColumn,
    /// Pinned chunks of the requested property columns, in request order.
    pub properties: Vec<PinnedColumn>,
    /// The appended rels by bound node; `None` when there are none.
    appended: Option<Box<AppendedIndex>>,
}

/// The appended rels of a pinned region, by bound node: node `nodes[k]`'s
/// are the position runs `runs[starts[k]..starts[k + 1]]`. `present` has a bit per node that has any, so a seek of a node
/// without appended rels costs one bit test.
struct AppendedIndex {
    present: Vec<u64>,
    nodes: Vec<u64>,
    starts: Vec<usize>,
    runs: Vec<(u64, u64)>,
    /// One past the largest node with appended rels.
    span: u64,
}

impl AppendedIndex {
    /// `locals[i]`: the bound node of the rel at position `first + i`.
    fn new(first: u64, locals: &[u64]) -> AppendedIndex {
        let mut order: Vec<(u64, u64)> = locals
            .iter()
            .enumerate()
            .map(|(i, &l)| (l, first + i as u64))
            .collect();
        order.sort_unstable();
        let span = order.last().map_or(0, |&(l, _)| l + 1);
        let mut present = vec![0u64; span.div_ceil(64) as usize];
        let (mut nodes, mut starts, mut runs) = (Vec::new(), Vec::new(), Vec::<(u64, u64)>::new());
        for &(local, pos) in &order {
            if nodes.last() != Some(&local) {
                present[(local / 64) as usize] |= 1 << (local % 64);
                nodes.push(local);
                starts.push(runs.len());
                runs.push((pos, pos + 1));
            } else {
                match runs.last_mut() {
                    Some(run) if run.1 == pos => run.1 += 1,
                    _ => runs.push((pos, pos + 1)),
                }
            }
        }
        starts.push(runs.len());
        AppendedIndex {
            present,
            nodes,
            starts,
            runs,
            span,
        }
    }

    #[inline]
    fn find(&self, local: u64) -> Option<usize> {
        let word = self.present.get((local / 64) as usize)?;
        if word & (1 << (local % 64)) == 0 {
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
        let appended = match &self.appended {
            Some(chunk) if !chunk.is_empty() => {
                let n = chunk.len();
                if n > self.num_rels {
                    return Err(Error::corruption(format!(
                        "a CSR region of {} rels lists {n} appended rels",
                        self.num_rels
                    )));
                }
                let mut locals = vec![0u64; n as usize];
                chunk.pin(pager)?.read_u64s(0, n as usize, &mut locals);
                Some(Box::new(AppendedIndex::new(self.num_rels - n, &locals)))
            }
            _ => None,
        };
        Ok(PinnedCsrGroup {
            num_nodes: self.num_nodes,
            offsets: self.offsets.pin(pager)?,
            neighbors: self.neighbors.pin(pager)?,
            rel_ids: self.rel_ids.pin(pager)?,
            properties,
            appended,
        })
    }
}

impl PinnedCsrGroup {
    /// The main-part CSR positions of node `local` (offset within its node
    /// group); empty for nodes beyond the main part (added after it was
    /// written). The node's appended rels are [`PinnedCsrGroup::appended`].
    #[inline]
    pub fn range(&self, local: u64) -> (u64, u64) {
        if local >= self.num_nodes {
            return (0, 0);
        }
        let mut two = [0u64; 2];
        self.offsets.read_u64s(local, 2, &mut two);
        (two[0], two[1])
    }

    /// Whether the region has appended rels at all.
    #[inline]
    pub fn has_appended(&self) -> bool {
        self.appended.is_some()
    }

    /// Runs of positions (ascending, after the main part) of the rels
    /// appended to node `local`; empty for most nodes.
    #[inline]
    pub fn appended(&self, local: u64) -> &[(u64, u64)] {
        match &self.appended {
            None => &[],
            Some(a) => match a.find(local) {
                Some(k) => &a.runs[a.starts[k]..a.starts[k + 1]],
                None => &[],
            },
        }
    }

    /// How many rels were appended to node `local`.
    #[inline]
    pub fn appended_degree(&self, local: u64) -> u64 {
        self.appended(local).iter().map(|&(a, b)| b - a).sum()
    }

    /// All rels of node `local`.
    #[inline]
    pub fn degree(&self, local: u64) -> u64 {
        let (s, e) = self.range(local);
        e - s + self.appended_degree(local)
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

    /// One past the last node with rels in this region (main or appended).
    pub fn node_span(&self) -> u64 {
        self.num_nodes
            .max(self.appended.as_ref().map_or(0, |a| a.span))
    }

    /// The bound node (offset within the group) of every position, in
    /// position order: for readers that walk the whole region's columns.
    pub fn bound_nodes(&self) -> Vec<u64> {
        let total = self.neighbors.num_values() as usize;
        let mut out = vec![0u64; total];
        for local in 0..self.num_nodes {
            let (s, e) = self.range(local);
            out[s as usize..(e as usize).min(total)].fill(local);
        }
        if let Some(a) = &self.appended {
            for (k, &local) in a.nodes.iter().enumerate() {
                for &(s, e) in &a.runs[a.starts[k]..a.starts[k + 1]] {
                    out[s as usize..(e as usize).min(total)].fill(local);
                }
            }
        }
        out
    }
}
