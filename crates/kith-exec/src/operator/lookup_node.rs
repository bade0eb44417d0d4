//! Index nested-loop join on a primary key: for each tuple, the node whose
//! primary key equals a key expression, found through the PK index instead
//! of a scan (`MATCH (a:P {id: $x})`, `UNWIND $rows AS r MATCH (a:P {id:
//! r.a})`). The id is written into the newest chunk (the only one that may
//! be unflat): per selected position when the key reads that chunk, else
//! the one key's node at every position. A tuple whose key finds no node
//! (NULL, a value of another type, no such key) is dropped; the equality
//! filter the planner keeps after this step decides Cypher's comparison
//! exactly, so the lookup only has to find every candidate.
//!
//! In item mode (`WHERE n.pk IN $ids` at the start of a pipeline) the key is
//! a list and the nodes of its distinct items become a new unflat group,
//! handed on in batches; the membership filter after it decides each one.

use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{
    Error, InternalId, LogicalType, Result, TableId, Value, ValueVector, VectorData,
};
use kith_planner::expr::BoundExpr;
use kith_storage::{NodeTableData, PkLookup};

use super::{Operator, QueryContext};
use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::physical::step::{PhysicalStep, WorkerChain};
use crate::result_set::{ResultSet, SlotLayout};

pub struct LookupNode {
    child: Box<dyn Operator>,
    ctx: Arc<QueryContext>,
    layout: Arc<SlotLayout>,
    key: Evaluator,
    table: TableId,
    pk_type: LogicalType,
    lookup: PkLookup,
    /// Where the id goes: the newest chunk and its vector.
    chunk: usize,
    vector: usize,
    keys: ValueVector,
    sel: Vec<u32>,
    /// Item mode: the nodes found for the current input tuple (ascending)
    /// and how many of them were handed on.
    items: Option<(Vec<InternalId>, usize)>,
}

impl LookupNode {
    /// The next input tuple's keys (None: no more input).
    fn next_keys(&mut self, rs: &mut ResultSet) -> Result<Option<Evaluated>> {
        if !self.child.next(rs)? {
            return Ok(None);
        }
        let ectx = EvalContext {
            rs,
            layout: &self.layout,
            params: &self.ctx.params,
            subqueries: &self.ctx.subqueries,
        };
        self.key.evaluate(&ectx, &mut self.keys).map(Some)
    }

    /// Item mode: the next batch of found nodes as the newest chunk.
    fn next_items(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            let (found, done) = self
                .items
                .as_mut()
                .ok_or_else(|| Error::internal("primary-key item lookup without its buffer"))?;
            if *done < found.len() {
                // Only the newest group may be unflat: the one tuple the
                // items were looked up for is fixed while they are handed
                // on.
                for older in &mut rs.chunks[..self.chunk] {
                    if !older.state.is_flat() {
                        if older.state.selected_len() != 1 {
                            return Err(Error::internal(
                                "primary-key item lookup after an unflat group",
                            ));
                        }
                        older.state.flat = Some(0);
                    }
                }
                let n = (found.len() - *done).min(VECTOR_CAPACITY);
                let chunk = &mut rs.chunks[self.chunk];
                let out = &mut chunk.vectors[self.vector];
                out.reset(n);
                for (p, id) in found[*done..*done + n].iter().enumerate() {
                    write_id(out, p, *id)?;
                }
                chunk.state.reset(n);
                *done += n;
                return Ok(true);
            }
            let Some(shape) = self.next_keys(rs)? else {
                return Ok(false);
            };
            if !matches!(shape, Evaluated::Flat) {
                return Err(Error::internal(
                    "primary-key item lookup keyed by a per-tuple list",
                ));
            }
            let list = self.keys.get_value(0);
            let items = match &list {
                Value::Null => continue,
                Value::List(items) => items,
                other => {
                    return Err(Error::runtime(format!(
                        "IN expects a LIST on its right, got {}",
                        other.logical_type()
                    )))
                }
            };
            let mut ids = Vec::with_capacity(items.len());
            for item in items.iter() {
                if let Some(id) = self.find(item)? {
                    ids.push(id);
                }
            }
            ids.sort_unstable();
            ids.dedup();
            self.items = Some((ids, 0));
        }
    }

    fn find(&mut self, key: &Value) -> Result<Option<InternalId>> {
        let Some(k) = probe_key(key, &self.pk_type) else {
            return Ok(None);
        };
        Ok(self
            .lookup
            .lookup(&k)?
            .map(|off| InternalId::new(self.table, off)))
    }
}

/// The value to probe a primary-key index of type `pk` with for a key
/// equal to `key`, or None when no key of that type can equal it (NULL,
/// another type, a fractional number for an integer key).
pub fn probe_key(key: &Value, pk: &LogicalType) -> Option<Value> {
    let integral = |f: f64| -> Option<Value> {
        if !pk.is_integer() || f.fract() != 0.0 {
            return None;
        }
        // 2^63 and 2^64: beyond i64, a UINT64 key may still equal it.
        if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
            Some(Value::Int64(f as i64))
        } else if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
            Some(Value::UInt64(f as u64))
        } else {
            None
        }
    };
    match key {
        Value::Null => None,
        Value::Float(f) => integral(*f as f64),
        Value::Double(f) => integral(*f),
        Value::UInt64(_) if pk.is_integer() => Some(key.clone()),
        v if pk.is_integer() => v.as_i64().map(|_| key.clone()),
        Value::String(_) if *pk == LogicalType::String => Some(key.clone()),
        Value::Date(_) if *pk == LogicalType::Date => Some(key.clone()),
        _ => None,
    }
}

fn write_id(out: &mut ValueVector, p: usize, id: InternalId) -> Result<()> {
    match &mut out.data {
        VectorData::Id(v) => {
            v[p] = id;
            out.nulls.set(p, false);
            Ok(())
        }
        _ => Err(Error::internal("primary-key lookup into a non-id vector")),
    }
}

impl Operator for LookupNode {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        if self.items.is_some() {
            return self.next_items(rs);
        }
        loop {
            let Some(shape) = self.next_keys(rs)? else {
                return Ok(false);
            };
            let c = self.chunk;
            match shape {
                Evaluated::Flat => {
                    let key = self.keys.get_value(0);
                    let Some(id) = self.find(&key)? else {
                        continue;
                    };
                    let chunk = &mut rs.chunks[c];
                    let out = &mut chunk.vectors[self.vector];
                    out.reset(chunk.state.len);
                    let mut res = Ok(());
                    chunk.state.for_each_position(|p| {
                        if res.is_ok() {
                            res = write_id(out, p, id);
                        }
                    });
                    res?;
                }
                Evaluated::Unflat(u) if u == c => {
                    let mut positions = std::mem::take(&mut self.sel);
                    positions.clear();
                    rs.chunks[c].state.extend_positions(&mut positions);
                    let len = rs.chunks[c].state.len;
                    rs.chunks[c].vectors[self.vector].reset(len);
                    let mut kept = 0;
                    for i in 0..positions.len() {
                        let p = positions[i] as usize;
                        let key = self.keys.get_value(p);
                        if let Some(id) = self.find(&key)? {
                            write_id(&mut rs.chunks[c].vectors[self.vector], p, id)?;
                            positions[kept] = p as u32;
                            kept += 1;
                        }
                    }
                    positions.truncate(kept);
                    if positions.is_empty() {
                        self.sel = positions;
                        continue;
                    }
                    let old = rs.chunks[c].state.sel.replace(positions);
                    self.sel = old.unwrap_or_default();
                }
                Evaluated::Unflat(_) => {
                    return Err(Error::internal(
                        "primary-key lookup keyed by a chunk older than the newest",
                    ))
                }
            }
            return Ok(true);
        }
    }
}

/// A primary-key lookup resolved: the table, its key expression and type,
/// and where the id goes (the newest chunk, or a new one in item mode).
pub(crate) struct LookupNodeSpec {
    pub(crate) table: TableId,
    pub(crate) data: Arc<NodeTableData>,
    pub(crate) key: BoundExpr,
    pub(crate) each_item: bool,
    pub(crate) pk_type: LogicalType,
    pub(crate) pos: (usize, usize),
}

impl PhysicalStep for LookupNodeSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        let key = Evaluator::new(&self.key)?;
        Ok(Box::new(LookupNode {
            child,
            ctx: Arc::clone(chain.ctx),
            layout: Arc::clone(chain.layout),
            keys: ValueVector::new(key.result_type().clone(), 0),
            key,
            table: self.table,
            pk_type: self.pk_type.clone(),
            lookup: self.data.pk_lookup(&chain.ctx.pager)?,
            chunk: self.pos.0,
            vector: self.pos.1,
            sel: Vec::new(),
            items: self.each_item.then(|| (Vec::new(), 0)),
        }))
    }

    fn repeatable(&self) -> bool {
        !self.key.calls("rand")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_keys_follow_cypher_equality() {
        let int = LogicalType::Int64;
        assert_eq!(probe_key(&Value::Int32(7), &int), Some(Value::Int32(7)));
        assert_eq!(probe_key(&Value::Double(7.0), &int), Some(Value::Int64(7)));
        assert_eq!(probe_key(&Value::Double(7.5), &int), None);
        assert_eq!(probe_key(&Value::Null, &int), None);
        assert_eq!(probe_key(&Value::String("7".into()), &int), None);
        assert_eq!(
            probe_key(&Value::Double(1.8e19), &LogicalType::UInt64),
            Some(Value::UInt64(18_000_000_000_000_000_000))
        );
        let s = LogicalType::String;
        assert_eq!(
            probe_key(&Value::String("a".into()), &s),
            Some(Value::String("a".into()))
        );
        assert_eq!(probe_key(&Value::Int64(1), &s), None);
    }
}
