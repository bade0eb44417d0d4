//! Stored rel tables: a double-indexed CSR (forward by source, backward by
//! destination), one CSR region per node group of the bound node table, with
//! the rel properties stored in CSR order in both directions ("parallel"
//! columns), so a node's rels and their properties are read sequentially from
//! either side.

use std::sync::Arc;

use kith_catalog::PropertyId;
use kith_common::codec::{Decoder, Encoder};
use kith_common::{Error, Result};
use kith_pager::Pager;

use crate::column::{ColumnChunk, PageRun, PinnedColumn};

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
    pub num_rels: u64,
    /// `num_nodes + 1` U64 values: node `i`'s rels are `offsets[i]..offsets[i+1]`.
    pub offsets: ColumnChunk,
    /// Offsets of the neighbour nodes (U64).
    pub neighbors: ColumnChunk,
    /// Rel offsets (U64) — the rel's identity within its table.
    pub rel_ids: ColumnChunk,
    /// One chunk per entry of the table's `column_ids`.
    pub properties: Vec<ColumnChunk>,
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
            }
        }
    }

    /// Decodes metadata of metadata format `format` (1: no `next_rel_id`).
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
                groups.push(CsrGroup {
                    num_nodes,
                    num_rels,
                    offsets,
                    neighbors,
                    rel_ids,
                    properties,
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
}

impl CsrGroup {
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
        Ok(PinnedCsrGroup {
            num_nodes: self.num_nodes,
            offsets: self.offsets.pin(pager)?,
            neighbors: self.neighbors.pin(pager)?,
            rel_ids: self.rel_ids.pin(pager)?,
            properties,
        })
    }
}

impl PinnedCsrGroup {
    /// The CSR positions of node `local` (offset within its node group);
    /// empty for nodes beyond the region (added after the rels were built).
    #[inline]
    pub fn range(&self, local: u64) -> (u64, u64) {
        if local >= self.num_nodes {
            return (0, 0);
        }
        let mut two = [0u64; 2];
        self.offsets.read_u64s(local, 2, &mut two);
        (two[0], two[1])
    }
}
