//! Scans a node table morsel by morsel: ids plus the requested property
//! columns, pinned once per node group.

use std::ops::Range;
use std::sync::Arc;

use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{InternalId, Result, TableId, VectorData};
use kith_sched::MorselDispenser;
use kith_storage::{NodeTableData, PinnedColumn};

use super::{Operator, Pos, QueryContext};
use crate::result_set::ResultSet;

pub struct ScanNodes {
    pub ctx: Arc<QueryContext>,
    pub table: TableId,
    pub data: Arc<NodeTableData>,
    pub morsels: NodeMorsels,
    pub chunk: usize,
    pub id_vector: usize,
    /// Whether anything downstream reads the ids; if not, the id vector
    /// only gets each batch's length.
    pub write_ids: bool,
    /// (storage column, position) per property read.
    pub columns: Vec<(usize, Pos)>,
    pinned: Option<(usize, Vec<PinnedColumn>)>,
}

/// Where a scan's ranges of node offsets come from (a range never crosses
/// a node group).
pub enum NodeMorsels {
    /// Shared across workers; the worker running this chain (the second
    /// field) takes its own region's morsels first.
    Shared(Arc<MorselDispenser>, usize),
    /// Every node of the list (in order, one a batch; the second field is
    /// the next one's index) for this chain alone: each worker scans all
    /// of them (`HubSplit`).
    Each(Arc<Vec<u64>>, usize),
}

impl NodeMorsels {
    fn next(&mut self) -> Option<Range<u64>> {
        match self {
            NodeMorsels::Shared(m, worker) => m.next(*worker),
            NodeMorsels::Each(list, at) => {
                let o = *list.get(*at)?;
                *at += 1;
                Some(o..o + 1)
            }
        }
    }
}

impl ScanNodes {
    pub fn new(
        ctx: Arc<QueryContext>,
        table: TableId,
        data: Arc<NodeTableData>,
        morsels: NodeMorsels,
        (id_pos, write_ids): (Pos, bool),
        columns: Vec<(usize, Pos)>,
    ) -> ScanNodes {
        ScanNodes {
            ctx,
            table,
            data,
            morsels,
            chunk: id_pos.0,
            id_vector: id_pos.1,
            write_ids,
            columns,
            pinned: None,
        }
    }
}

impl Operator for ScanNodes {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        // Live positions of the morsel when some of its rows are deleted.
        let (range, live) = loop {
            if self.ctx.cancel.should_stop()? {
                return Ok(false);
            }
            let Some(range) = self.morsels.next() else {
                return Ok(false);
            };
            let group = (range.start / NODE_GROUP_SIZE) as usize;
            let Some(mask) = self.data.deleted_mask(group) else {
                break (range, None);
            };
            let local = range.start % NODE_GROUP_SIZE;
            let n = range.end - range.start;
            let live: Vec<u32> = (0..n)
                .filter(|&i| !mask.contains(local + i))
                .map(|i| i as u32)
                .collect();
            if live.is_empty() {
                continue;
            }
            if live.len() as u64 == n {
                break (range, None);
            }
            break (range, Some(live));
        };
        let len = (range.end - range.start) as usize;
        let group = (range.start / NODE_GROUP_SIZE) as usize;
        if self.pinned.as_ref().map(|p| p.0) != Some(group) {
            let mut cols = Vec::with_capacity(self.columns.len());
            for (col, _) in &self.columns {
                cols.push(self.data.pin_column(&self.ctx.pager, group, *col)?);
            }
            self.pinned = Some((group, cols));
        }
        let chunk = &mut rs.chunks[self.chunk];
        let ids = &mut chunk.vectors[self.id_vector];
        ids.reset(len);
        if let (true, VectorData::Id(v)) = (self.write_ids, &mut ids.data) {
            // Consecutive ids: the first plus the position, a loop that
            // vectorizes (a zip with the offset range did not).
            let first = InternalId::new(self.table, range.start).0;
            for (p, slot) in v[..len].iter_mut().enumerate() {
                *slot = InternalId(first + p as u64);
            }
        }
        if let Some((_, pinned)) = &self.pinned {
            let local = range.start % NODE_GROUP_SIZE;
            for ((_, (_, vector)), column) in self.columns.iter().zip(pinned) {
                let out = &mut chunk.vectors[*vector];
                out.reset(len);
                column.read(local, len, out, 0)?;
            }
        }
        chunk.state.reset(len);
        chunk.state.sel = live;
        Ok(true)
    }
}
