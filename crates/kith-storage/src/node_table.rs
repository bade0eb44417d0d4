//! Stored node tables: rows split into node groups of `NODE_GROUP_SIZE`, one
//! column chunk per property per group, plus the primary-key index.

use std::sync::Arc;

use kith_catalog::PropertyId;
use kith_common::codec::{Decoder, Encoder};
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{Error, Result, Value, ValueVector};
use kith_pager::Pager;

use crate::column::{ColumnChunk, PageRun, PinnedColumn};
use crate::pk_index::{IndexKey, KeyKind, PinnedPkIndex, PkIndex};

#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroupData {
    pub num_rows: u64,
    /// One chunk per entry of the table's `column_ids`.
    pub columns: Vec<ColumnChunk>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeTableData {
    pub num_rows: u64,
    /// The property each column holds, in storage order.
    pub column_ids: Vec<PropertyId>,
    /// Position in `column_ids` of the primary key.
    pub pk_column: usize,
    pub groups: Vec<NodeGroupData>,
    pub pk_index: Option<PkIndex>,
}

impl NodeTableData {
    pub fn empty(column_ids: Vec<PropertyId>, pk_column: usize) -> NodeTableData {
        NodeTableData {
            num_rows: 0,
            column_ids,
            pk_column,
            groups: Vec::new(),
            pk_index: None,
        }
    }

    pub fn column_of(&self, property: PropertyId) -> Option<usize> {
        self.column_ids.iter().position(|p| *p == property)
    }

    pub fn pages(&self, out: &mut Vec<PageRun>) {
        for g in &self.groups {
            for c in &g.columns {
                c.pages(out);
            }
        }
        if let Some(idx) = &self.pk_index {
            if idx.slots.count > 0 {
                out.push(idx.slots);
            }
        }
    }

    /// Reads `count` values of column `column` starting at row `start` (which
    /// must lie within one node group) into `out[out_pos..]`. Convenience for
    /// cold paths; scans pin chunks once through [`NodeTableData::pin_column`].
    pub fn read_column(
        &self,
        pager: &Arc<Pager>,
        column: usize,
        start: u64,
        count: usize,
        out: &mut ValueVector,
        out_pos: usize,
    ) -> Result<()> {
        let group = (start / NODE_GROUP_SIZE) as usize;
        let pinned = self.pin_column(pager, group, column)?;
        pinned.read(start % NODE_GROUP_SIZE, count, out, out_pos)
    }

    pub fn pin_column(
        &self,
        pager: &Arc<Pager>,
        group: usize,
        column: usize,
    ) -> Result<PinnedColumn> {
        let g = self
            .groups
            .get(group)
            .ok_or_else(|| Error::internal(format!("node group {group} out of range")))?;
        g.columns
            .get(column)
            .ok_or_else(|| Error::internal(format!("column {column} out of range")))?
            .pin(pager)
    }

    /// A lookup handle over the primary-key index.
    pub fn pk_lookup(&self, pager: &Arc<Pager>) -> Result<PkLookup> {
        Ok(PkLookup {
            index: match &self.pk_index {
                Some(idx) => Some((idx.kind, idx.pin(pager)?)),
                None => None,
            },
            table: self.clone(),
            pager: Arc::clone(pager),
            pinned_groups: Vec::new(),
        })
    }

    pub fn encode(&self, e: &mut Encoder) {
        e.u64(self.num_rows);
        e.u64(self.column_ids.len() as u64);
        for p in &self.column_ids {
            e.u32(p.0);
        }
        e.u32(self.pk_column as u32);
        e.u64(self.groups.len() as u64);
        for g in &self.groups {
            e.u64(g.num_rows);
            for c in &g.columns {
                c.encode(e);
            }
        }
        match &self.pk_index {
            Some(idx) => {
                e.u8(1);
                idx.encode(e);
            }
            None => e.u8(0),
        }
    }

    pub fn decode(d: &mut Decoder<'_>) -> Result<NodeTableData> {
        let num_rows = d.u64()?;
        let ncols = d.count(4)?;
        let mut column_ids = Vec::with_capacity(ncols);
        for _ in 0..ncols {
            column_ids.push(PropertyId(d.u32()?));
        }
        let pk_column = d.u32()? as usize;
        let ngroups = d.count(8)?;
        let mut groups = Vec::with_capacity(ngroups);
        for _ in 0..ngroups {
            let rows = d.u64()?;
            let mut columns = Vec::with_capacity(ncols);
            for _ in 0..ncols {
                columns.push(ColumnChunk::decode(d)?);
            }
            groups.push(NodeGroupData {
                num_rows: rows,
                columns,
            });
        }
        let pk_index = match d.u8()? {
            0 => None,
            _ => Some(PkIndex::decode(d)?),
        };
        Ok(NodeTableData {
            num_rows,
            column_ids,
            pk_column,
            groups,
            pk_index,
        })
    }
}

/// Primary-key lookups against one node table (used by rel COPY and by
/// binders of `{id: ...}` lookups). Not shared between threads: each thread
/// makes its own.
pub struct PkLookup {
    index: Option<(KeyKind, PinnedPkIndex)>,
    table: NodeTableData,
    pager: Arc<Pager>,
    /// Pinned PK column per node group, for confirming string keys.
    pinned_groups: Vec<Option<PinnedColumn>>,
}

impl PkLookup {
    pub fn key_kind(&self) -> Option<KeyKind> {
        self.index.as_ref().map(|(k, _)| *k)
    }

    /// Offset of the node whose primary key equals `key`.
    pub fn lookup(&mut self, key: &Value) -> Result<Option<u64>> {
        let Some((kind, index)) = &self.index else {
            return Ok(None);
        };
        let Some(ikey) = IndexKey::of_value(key, *kind) else {
            return Ok(None);
        };
        if *kind == KeyKind::Int {
            return Ok(index.lookup(ikey, |_| true));
        }
        let Some(wanted) = key.as_str() else {
            return Ok(None);
        };
        let mut failure = None;
        let table = &self.table;
        let pager = &self.pager;
        let pinned_groups = &mut self.pinned_groups;
        let found = index.lookup(ikey, |offset| {
            let group = (offset / NODE_GROUP_SIZE) as usize;
            if pinned_groups.len() <= group {
                pinned_groups.resize_with(group + 1, || None);
            }
            if pinned_groups[group].is_none() {
                match table.pin_column(pager, group, table.pk_column) {
                    Ok(p) => pinned_groups[group] = Some(p),
                    Err(e) => {
                        failure = Some(e);
                        return false;
                    }
                }
            }
            let Some(col) = &pinned_groups[group] else {
                return false;
            };
            let mut v = ValueVector::new(kith_common::LogicalType::String, 1);
            if let Err(e) = col.read(offset % NODE_GROUP_SIZE, 1, &mut v, 0) {
                failure = Some(e);
                return false;
            }
            v.get_value(0).as_str() == Some(wanted)
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(found),
        }
    }
}
