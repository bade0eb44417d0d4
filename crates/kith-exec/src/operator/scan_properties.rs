//! Reads node properties by id for an already-bound node (the far end of an
//! extend): random access into the node groups, pinned once per group.

use std::sync::Arc;

use kith_common::constants::{NODE_GROUP_SIZE, VECTOR_CAPACITY};
use kith_common::{Error, LogicalType, Result, ValueVector, VectorData};
use kith_planner::expr::BoundExpr;
use kith_storage::{NodeTableData, PinnedColumn};

use super::{Operator, Pos, QueryContext};
use crate::physical::step::{PhysicalStep, WorkerChain};
use crate::result_set::{ChunkState, DataChunk, ResultSet, IDENTITY_U32, IDENTITY_USIZE};

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
    /// Positions of NULL ids, and the node offsets to read with their
    /// positions (reused across batches).
    nulls: Vec<usize>,
    rows: Vec<u64>,
    at: Vec<usize>,
    /// Per node group: the rows to read and their positions in the output
    /// (reused across batches).
    by_group: Vec<(Vec<u64>, Vec<usize>)>,
    /// The state of the node's group last read: the same batch handed on
    /// again (see `ChunkState::generation`) still holds what was read.
    last: ChunkState,
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
            nulls: Vec::new(),
            rows: Vec::new(),
            at: Vec::new(),
            by_group: Vec::new(),
            last: ChunkState::default(),
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

impl ScanProperties {
    /// Reads `rows` (offsets within node group `group`) of every column
    /// into positions `at` of the output vectors: one gather per column.
    #[allow(clippy::too_many_arguments)]
    fn read_group(
        ctx: &QueryContext,
        data: &NodeTableData,
        columns: &[(usize, usize)],
        pinned: &mut Vec<Option<Vec<PinnedColumn>>>,
        vectors: &[usize],
        rs: &mut ResultSet,
        c: usize,
        group: usize,
        rows: &[u64],
        at: &[usize],
    ) -> Result<()> {
        // Only the clauses after a DELETE in the same statement can hold a
        // deleted node (scans, extends and lookups skip them): reading its
        // properties is openCypher's EntityNotFound.
        if let Some(mask) = data.deleted_mask(group) {
            if rows.iter().any(|&r| mask.contains(r)) {
                return Err(Error::runtime(
                    "EntityNotFound: a node deleted by this statement has no properties or labels to read",
                ));
            }
        }
        let pins = Self::pins(pinned, ctx, data, columns, group)?;
        for (col, &vector) in pins.iter().zip(vectors) {
            col.gather(rows, &mut rs.chunks[c].vectors[vector], at)?;
        }
        Ok(())
    }
}

impl Operator for ScanProperties {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if !self.child.next(rs)? {
            return Ok(false);
        }
        let (c, v) = self.node;
        if rs.chunks[c].state.repeats(&self.last) {
            return Ok(true);
        }
        self.last.clone_from(&rs.chunks[c].state);
        let len = rs.chunks[c].state.len;
        let ScanProperties {
            ctx,
            data,
            columns,
            pinned,
            vectors,
            nulls,
            rows,
            at,
            by_group,
            ..
        } = self;
        // The rows to read and where they go, in one pass over the ids
        // (plain pushes: this loop runs once per extended tuple).
        rows.clear();
        at.clear();
        nulls.clear();
        // Whether the rows go to positions `0..rows.len()`, in order: then
        // `at` stays empty and the positions are a static identity's.
        let mut identity = false;
        {
            let ids = &rs.chunks[c].vectors[v];
            let VectorData::Id(idv) = &ids.data else {
                return Err(Error::internal("property scan over a non-id vector"));
            };
            let state = &rs.chunks[c].state;
            if ids.nulls.may_have_nulls() && state.sel.is_none() && !state.is_flat() {
                // NULL ids (an optional extend's padding): ids split from
                // NULLs in one plain loop, no selection to follow.
                for (p, id) in idv[..state.len].iter().enumerate() {
                    if ids.is_null(p) {
                        nulls.push(p);
                    } else {
                        rows.push(id.offset());
                        at.push(p);
                    }
                }
            } else if ids.nulls.may_have_nulls() || state.is_flat() {
                state.for_each_position(|p| {
                    if ids.is_null(p) {
                        nulls.push(p);
                    } else {
                        rows.push(idv[p].offset());
                        at.push(p);
                    }
                });
            } else {
                // No NULL ids: plain copies the compiler can vectorize.
                match &state.sel {
                    None => {
                        rows.extend(idv[..state.len].iter().map(|id| id.offset()));
                        identity = state.len <= IDENTITY_USIZE.len();
                        if !identity {
                            at.extend(0..state.len);
                        }
                    }
                    Some(sel) => {
                        rows.extend(sel.iter().map(|&p| idv[p as usize].offset()));
                        at.extend(sel.iter().map(|&p| p as usize));
                    }
                }
            }
        }
        for &vector in vectors.iter() {
            let out = &mut rs.chunks[c].vectors[vector];
            out.reset(len);
            for &p in nulls.iter() {
                out.set_null(p, true);
            }
        }
        let (low, high) = rows
            .iter()
            .fold((u64::MAX, 0), |(l, h), &o| (l.min(o), h.max(o)));
        if rows.is_empty() {
            return Ok(true);
        }
        let at: &[usize] = match identity {
            true => &IDENTITY_USIZE[..rows.len()],
            false => at,
        };
        let (first, last) = (
            (low / NODE_GROUP_SIZE) as usize,
            (high / NODE_GROUP_SIZE) as usize,
        );
        if first == last {
            // All in one node group (always for tables of one group).
            let base = first as u64 * NODE_GROUP_SIZE;
            rows.iter_mut().for_each(|r| *r -= base);
            Self::read_group(ctx, data, columns, pinned, vectors, rs, c, first, rows, at)?;
            return Ok(true);
        }
        for (rows, at) in by_group.iter_mut() {
            rows.clear();
            at.clear();
        }
        if by_group.len() <= last {
            by_group.resize_with(last + 1, Default::default);
        }
        for (&o, &p) in rows.iter().zip(at.iter()) {
            let g = &mut by_group[(o / NODE_GROUP_SIZE) as usize];
            g.0.push(o % NODE_GROUP_SIZE);
            g.1.push(p);
        }
        for (group, (rows, at)) in by_group.iter().enumerate() {
            if !rows.is_empty() {
                Self::read_group(ctx, data, columns, pinned, vectors, rs, c, group, rows, at)?;
            }
        }
        Ok(true)
    }
}

/// Hands out the node ids of one vector a batch at a time (the source of
/// [`read_by_id`]'s property scan).
struct IdBatches {
    ids: ValueVector,
    at: usize,
}

impl Operator for IdBatches {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        let n = (self.ids.len() - self.at).min(VECTOR_CAPACITY);
        if n == 0 {
            return Ok(false);
        }
        rs.chunks[0].vectors[0].assign_range(&self.ids, self.at, n);
        rs.chunks[0].state.reset(n);
        self.at += n;
        Ok(true)
    }
}

/// Properties of the nodes of `ids` (of `data`'s table; a NULL id reads
/// NULL), one vector per `(storage column, type)` with a value per id: the
/// group keys read once per group after an aggregation.
pub fn read_by_id(
    ctx: &Arc<QueryContext>,
    data: &Arc<NodeTableData>,
    columns: &[(usize, LogicalType)],
    ids: ValueVector,
) -> Result<Vec<ValueVector>> {
    let mut out: Vec<ValueVector> = columns
        .iter()
        .map(|(_, ty)| ValueVector::new(ty.clone(), 0))
        .collect();
    let mut vectors = vec![ValueVector::new(LogicalType::InternalId, VECTOR_CAPACITY)];
    vectors.extend(
        columns
            .iter()
            .map(|(_, ty)| ValueVector::new(ty.clone(), VECTOR_CAPACITY)),
    );
    let mut rs = ResultSet {
        chunks: vec![DataChunk {
            vectors,
            state: Default::default(),
        }],
        multiplicity: 1,
        weights: None,
    };
    let mut scan = ScanProperties::new(
        Box::new(IdBatches { ids, at: 0 }),
        Arc::clone(ctx),
        Arc::clone(data),
        (0, 0),
        columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.0, i + 1))
            .collect(),
    );
    // Appended typed (a `Value` per key read was a third of this).
    while scan.next(&mut rs)? {
        let chunk = &rs.chunks[0];
        let n = chunk.state.len.min(IDENTITY_U32.len());
        for (o, v) in out.iter_mut().zip(&chunk.vectors[1..]) {
            o.extend_gather(v, &IDENTITY_U32[..n]);
        }
    }
    Ok(out)
}

/// A property scan resolved: the node table, the node's position and
/// (storage column, output vector) per property.
pub(crate) struct ScanPropertiesSpec {
    pub(crate) data: Arc<NodeTableData>,
    pub(crate) node: Pos,
    pub(crate) columns: Vec<(usize, usize)>,
}

impl PhysicalStep for ScanPropertiesSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        Ok(Box::new(ScanProperties::new(
            child,
            Arc::clone(chain.ctx),
            Arc::clone(&self.data),
            self.node,
            self.columns.clone(),
        )))
    }

    fn repeatable(&self) -> bool {
        true
    }

    fn keeps_packing(
        &self,
        input: usize,
        _padded: bool,
        _reads_input: &dyn Fn(&BoundExpr) -> bool,
    ) -> bool {
        self.node.0 != input
    }
}
