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
    /// The output vector of each column (second half of `columns`).
    vectors: Vec<usize>,
    targets: Vec<(usize, Option<u64>)>,
}

impl ScanProperties {
    pub fn new(
        child: Box<dyn Operator>,
        ctx: Arc<QueryContext>,
        data: Arc<NodeTableData>,
        node: Pos,
        columns: Vec<(usize, usize)>,
    ) -> ScanProperties {
        let vectors = columns.iter().map(|c| c.1).collect();
        ScanProperties {
            child,
            ctx,
            data,
            node,
            columns,
            pinned: Vec::new(),
            vectors,
            targets: Vec::new(),
        }
    }

    /// The pinned columns of node group `group`, pinned on first use. Takes
    /// only the fields it needs so callers can keep borrowing the others.
    fn pins<'a>(
        pinned: &'a mut Vec<Option<Vec<PinnedColumn>>>,
        ctx: &QueryContext,
        data: &NodeTableData,
        columns: &[(usize, usize)],
        group: usize,
    ) -> Result<&'a Vec<PinnedColumn>> {
        if pinned.len() <= group {
            pinned.resize_with(group + 1, || None);
        }
        if pinned[group].is_none() {
            let mut cols = Vec::with_capacity(columns.len());
            for (c, _) in columns {
                cols.push(data.pin_column(&ctx.pager, group, *c)?);
            }
            pinned[group] = Some(cols);
        }
        pinned[group]
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
        // (position, node offset or None for a NULL id), reused across batches.
        let mut targets = std::mem::take(&mut self.targets);
        targets.clear();
        {
            let ids = &rs.chunks[c].vectors[v];
            let VectorData::Id(idv) = &ids.data else {
                return Err(Error::internal("property scan over a non-id vector"));
            };
            rs.chunks[c].state.for_each_position(|p| {
                targets.push((p, (!ids.is_null(p)).then(|| idv[p].offset())))
            });
        }
        for &vector in &self.vectors {
            rs.chunks[c].vectors[vector].reset(len);
        }
        let ScanProperties {
            ctx,
            data,
            columns,
            pinned,
            vectors,
            ..
        } = self;
        for &(p, offset) in &targets {
            match offset {
                None => {
                    for &vector in vectors.iter() {
                        rs.chunks[c].vectors[vector].set_null(p, true);
                    }
                }
                Some(o) => {
                    let group = (o / NODE_GROUP_SIZE) as usize;
                    let local = o % NODE_GROUP_SIZE;
                    // Only the clauses after a DELETE in the same statement
                    // can hold a deleted node (scans, extends and lookups
                    // skip them): reading its properties is openCypher's
                    // EntityNotFound.
                    if data.deleted_mask(group).is_some_and(|m| m.contains(local)) {
                        return Err(Error::runtime(
                            "EntityNotFound: a node deleted by this statement has no properties or labels to read",
                        ));
                    }
                    let pins = Self::pins(pinned, ctx, data, columns, group)?;
                    for (col, &vector) in pins.iter().zip(vectors.iter()) {
                        col.read(local, 1, &mut rs.chunks[c].vectors[vector], p)?;
                    }
                }
            }
        }
        self.targets = targets;
        Ok(true)
    }
}
