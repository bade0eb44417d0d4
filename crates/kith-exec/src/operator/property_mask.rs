//! Masks from property predicates: the nodes of some tables whose
//! properties pass a predicate, as one bitmask (a recursive join's node and
//! destination predicates, a semijoin mask passed sideways), and the reader
//! that evaluates such a predicate over a table's pinned columns a vector at
//! a time (also used for rel masks).

use std::sync::Arc;

use kith_common::constants::{NODE_GROUP_SIZE, VECTOR_CAPACITY};
use kith_common::{Error, LogicalType, Result, TableId, ValueVector, VectorData};
use kith_planner::bound::PropertyPredicate;
use kith_storage::{PinnedColumn, TableData};

use super::QueryContext;
use crate::expression::kernels::truth;
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::result_set::{DataChunk, ResultSet, SlotLayout};

/// The nodes that pass `pred` (the join's node predicate: which nodes may
/// be intermediate; its destination predicate: where paths may end), as a
/// mask over the graph's dense node ids: node table `tables[i]` owns
/// `bases[i]..`. `None` without a predicate.
pub fn node_mask(
    pred: Option<&PropertyPredicate>,
    tables: &[(TableId, u64)],
    num_nodes: u64,
    ctx: &QueryContext,
) -> Result<Option<Arc<[u64]>>> {
    let Some(pred) = pred else {
        return Ok(None);
    };
    let mut mask = vec![0u64; (num_nodes as usize).div_ceil(64)];
    let mut keep = Vec::new();
    for &(table, base) in tables {
        let entry = ctx
            .version
            .catalog
            .table(table)
            .ok_or_else(|| Error::internal("node table vanished from the catalog"))?;
        let TableData::Node(nd) = ctx.version.table(table)?.as_ref() else {
            return Err(Error::internal("expected node table storage"));
        };
        let mut reader = PredicateReader::new(pred, entry, |id| nd.column_of(id))?;
        let columns = reader.stored_columns();
        let groups = nd.num_rows.div_ceil(NODE_GROUP_SIZE);
        for g in 0..groups {
            let first = g * NODE_GROUP_SIZE;
            let n = (nd.num_rows - first).min(NODE_GROUP_SIZE) as usize;
            let mut pinned = Vec::with_capacity(columns.len());
            for &c in &columns {
                pinned.push(nd.pin_column(&ctx.pager, g as usize, c)?);
            }
            keep.clear();
            keep.resize(n, true);
            reader.filter(&pinned, n, &mut keep, ctx)?;
            for (i, k) in keep.iter().enumerate() {
                if *k {
                    let id = base + first + i as u64;
                    let w = mask
                        .get_mut((id / 64) as usize)
                        .ok_or_else(|| Error::internal("node id beyond the node mask"))?;
                    *w |= 1 << (id % 64);
                }
            }
            ctx.cancel.check()?;
        }
    }
    Ok(Some(mask.into()))
}

/// Evaluates a [`PropertyPredicate`] over the rows of one table, a vector
/// at a time, from its pinned property columns.
pub struct PredicateReader {
    eval: Evaluator,
    /// Per property of the predicate: its storage column (None: the table
    /// lacks it, so it reads NULL) and its type.
    props: Vec<(Option<usize>, LogicalType)>,
    layout: SlotLayout,
    rs: ResultSet,
    out: ValueVector,
}

impl PredicateReader {
    pub fn new(
        pred: &PropertyPredicate,
        entry: &kith_catalog::TableEntry,
        column_of: impl Fn(kith_catalog::PropertyId) -> Option<usize>,
    ) -> Result<PredicateReader> {
        let mut layout = SlotLayout::default();
        let mut props = Vec::with_capacity(pred.properties.len());
        let mut vectors = Vec::with_capacity(pred.properties.len());
        for (i, (name, slot, ty)) in pred.properties.iter().enumerate() {
            layout.positions.insert(*slot, (0, i));
            let column = entry.property(name).and_then(|p| column_of(p.id));
            // Read with the stored type; the predicate was typed with it.
            let ty = match entry.property(name) {
                Some(p) if column.is_some() => p.ty.clone(),
                _ => ty.clone(),
            };
            vectors.push(ValueVector::new(ty.clone(), VECTOR_CAPACITY));
            props.push((column, ty));
        }
        let eval = Evaluator::new(&pred.expr)?;
        let out = ValueVector::new(eval.result_type().clone(), 0);
        Ok(PredicateReader {
            eval,
            props,
            layout,
            rs: ResultSet {
                chunks: vec![DataChunk {
                    vectors,
                    state: Default::default(),
                }],
                multiplicity: 1,
                weights: None,
            },
            out,
        })
    }

    /// The storage columns to pin, in the order [`PredicateReader::filter`]
    /// takes them.
    pub fn stored_columns(&self) -> Vec<usize> {
        self.props.iter().filter_map(|p| p.0).collect()
    }

    /// Clears `keep[i]` for each of the `n` rows whose predicate is not TRUE;
    /// `pinned` holds the stored columns, in [`PredicateReader::stored_columns`] order.
    pub fn filter(
        &mut self,
        pinned: &[PinnedColumn],
        n: usize,
        keep: &mut [bool],
        ctx: &QueryContext,
    ) -> Result<()> {
        let mut start = 0;
        while start < n {
            let count = (n - start).min(VECTOR_CAPACITY);
            let chunk = &mut self.rs.chunks[0];
            let mut next_pinned = pinned.iter();
            for ((column, _), v) in self.props.iter().zip(chunk.vectors.iter_mut()) {
                v.reset(count);
                match column {
                    Some(_) => {
                        let col = next_pinned
                            .next()
                            .ok_or_else(|| Error::internal("predicate column not pinned"))?;
                        col.read(start as u64, count, v, 0)?;
                    }
                    None => (0..count).for_each(|i| v.set_null(i, true)),
                }
            }
            chunk.state.reset(count);
            let ectx = EvalContext {
                rs: &self.rs,
                layout: &self.layout,
                params: &ctx.params,
                subqueries: &ctx.subqueries,
            };
            let shape = self.eval.evaluate(&ectx, &mut self.out)?;
            if let (Evaluated::Unflat(_), VectorData::Bool(b), false) =
                (&shape, &self.out.data, self.out.nulls.may_have_nulls())
            {
                // The common case: a vector of booleans without NULLs.
                for (k, &pass) in keep[start..start + count].iter_mut().zip(b) {
                    *k &= pass;
                }
                start += count;
                continue;
            }
            for i in 0..count {
                let p = match shape {
                    Evaluated::Flat => 0,
                    Evaluated::Unflat(_) => i,
                };
                let pass = !self.out.is_null(p) && truth(&self.out.get_value(p))?.unwrap_or(false);
                if !pass {
                    keep[start + i] = false;
                }
            }
            start += count;
        }
        Ok(())
    }
}
