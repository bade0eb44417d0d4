//! Reads node properties by id for an already-bound node (the far end of an
//! extend): random access into the node groups, pinned once per group.

use std::sync::Arc;

use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{Error, Result, VectorData};
use kith_storage::{NodeTableData, PinnedColumn};

use super::{Operator, Pos, QueryContext};
use crate::result_set::ResultSet;

pub struct ScanProperties {
    pub child: Box<dyn Operator>,
    pub ctx: Arc<QueryContext>,
    pub data: Arc<NodeTableData>,
    pub node: Pos,
    /// (storage column, vector in the node's chunk)
    pub columns: Vec<(usize, usize)>,
    pinned: Vec<Option<Vec<PinnedColumn>>>,
}

impl ScanProperties {
    pub fn new(
        child: Box<dyn Operator>,
        ctx: Arc<QueryContext>,
        data: Arc<NodeTableData>,
        node: Pos,
        columns: Vec<(usize, usize)>,
    ) -> ScanProperties {
        ScanProperties {
            child,
            ctx,
            data,
            node,
            columns,
            pinned: Vec::new(),
        }
    }

    fn pins(&mut self, group: usize) -> Result<&Vec<PinnedColumn>> {
        if self.pinned.len() <= group {
            self.pinned.resize_with(group + 1, || None);
        }
        if self.pinned[group].is_none() {
            let mut cols = Vec::with_capacity(self.columns.len());
            for (c, _) in &self.columns {
                cols.push(self.data.pin_column(&self.ctx.pager, group, *c)?);
            }
            self.pinned[group] = Some(cols);
        }
        self.pinned[group]
            .as_ref()
            .ok_or_else(|| Error::internal("property pins missing"))
    }
}

impl Operator for ScanProperties {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if !self.child.next(rs)? {
            return Ok(false);
        }
        let (c, v) = self.node;
        let len = rs.chunks[c].state.len;
        let mut positions = Vec::new();
        rs.chunks[c].state.for_each_position(|p| positions.push(p));
        let offsets: Vec<Option<u64>> = {
            let ids = &rs.chunks[c].vectors[v];
            let VectorData::Id(idv) = &ids.data else {
                return Err(Error::internal("property scan over a non-id vector"));
            };
            positions
                .iter()
                .map(|&p| (!ids.is_null(p)).then(|| idv[p].offset()))
                .collect()
        };
        for (_, vector) in &self.columns {
            rs.chunks[c].vectors[*vector].reset(len);
        }
        let vectors: Vec<usize> = self.columns.iter().map(|c| c.1).collect();
        for (&p, offset) in positions.iter().zip(offsets) {
            match offset {
                None => {
                    for (_, vector) in &self.columns {
                        rs.chunks[c].vectors[*vector].set_null(p, true);
                    }
                }
                Some(o) => {
                    let group = (o / NODE_GROUP_SIZE) as usize;
                    let local = o % NODE_GROUP_SIZE;
                    let pins = self.pins(group)?;
                    for (col, &vector) in pins.iter().zip(&vectors) {
                        col.read(local, 1, &mut rs.chunks[c].vectors[vector], p)?;
                    }
                }
            }
        }
        Ok(true)
    }
}
