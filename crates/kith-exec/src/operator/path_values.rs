//! Node and rel values of enumerated variable-length paths (`p = (a)-[*]->(b)`,
//! `-[r*]->`): the recursive join knows only ids, so the values (label,
//! endpoints, every property, as `_node`/`_rel` build them for fixed-length
//! patterns) are read here, once per distinct node or rel (cached), since
//! paths share most of their elements.

use std::collections::HashMap;

use kith_catalog::TableEntry;
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{
    Error, InternalId, LogicalType, NodeValue, RelValue, Result, TableId, Value, ValueVector,
};
use kith_storage::{PinnedColumn, TableData};

use super::QueryContext;

/// How to read one node table's values.
struct NodeTable {
    label: std::sync::Arc<str>,
    /// (property name, storage column; None: the column was never stored).
    props: Vec<(String, Option<usize>)>,
    /// Storage column of the hidden label list (multi-label tables).
    labels: Option<usize>,
    data: std::sync::Arc<TableData>,
    /// Pinned columns per node group (`props` then `labels`), on first use.
    pinned: HashMap<usize, Vec<Option<PinnedColumn>>>,
    /// One-value buffers per column.
    scratch: Vec<ValueVector>,
}

/// A rel table's rels by rel id: every rel's endpoints and properties,
/// read once from the forward CSR (rel properties are stored in CSR order,
/// so a rel id alone needs this index).
struct RelTable {
    label: std::sync::Arc<str>,
    names: Vec<String>,
    /// Per rel id: (group, position in the group), or None (deleted).
    loc: Vec<Option<(u32, u32)>>,
    /// Per group: (source offset, destination offset) per position.
    ends: Vec<Vec<(u64, u64)>>,
    /// Per group, per property: its values in CSR order.
    values: Vec<Vec<ValueVector>>,
    src_table: TableId,
    dst_table: TableId,
}

/// Builds node and rel values by id, caching each.
pub struct PathValues<'a> {
    ctx: &'a QueryContext,
    nodes: HashMap<TableId, NodeTable>,
    rels: HashMap<TableId, RelTable>,
    node_cache: HashMap<InternalId, NodeValue>,
    rel_cache: HashMap<InternalId, RelValue>,
}

fn entry(ctx: &QueryContext, t: TableId) -> Result<&TableEntry> {
    ctx.version
        .catalog
        .table(t)
        .ok_or_else(|| Error::internal("table vanished from the catalog"))
}

impl<'a> PathValues<'a> {
    pub fn new(ctx: &'a QueryContext) -> PathValues<'a> {
        PathValues {
            ctx,
            nodes: HashMap::new(),
            rels: HashMap::new(),
            node_cache: HashMap::new(),
            rel_cache: HashMap::new(),
        }
    }

    fn node_table(&mut self, t: TableId) -> Result<&mut NodeTable> {
        if !self.nodes.contains_key(&t) {
            let e = entry(self.ctx, t)?;
            let data = self.ctx.version.table(t)?.clone();
            let TableData::Node(nd) = data.as_ref() else {
                return Err(Error::internal("expected node table storage"));
            };
            let mut props = Vec::new();
            let mut scratch = Vec::new();
            for p in &e.properties {
                if !kith_catalog::is_hidden(&p.name) {
                    props.push((p.name.clone(), nd.column_of(p.id)));
                    scratch.push(ValueVector::new(p.ty.clone(), 1));
                }
            }
            let labels = e.property(kith_catalog::LABELS_KEY).and_then(|p| {
                scratch.push(ValueVector::new(p.ty.clone(), 1));
                nd.column_of(p.id)
            });
            let label = e.label.as_str().into();
            self.nodes.insert(
                t,
                NodeTable {
                    label,
                    props,
                    labels,
                    data,
                    pinned: HashMap::new(),
                    scratch,
                },
            );
        }
        self.nodes
            .get_mut(&t)
            .ok_or_else(|| Error::internal("node table cache"))
    }

    /// The value of node `id`.
    pub fn node(&mut self, id: InternalId) -> Result<NodeValue> {
        if let Some(v) = self.node_cache.get(&id) {
            return Ok(v.clone());
        }
        let pager = self.ctx.pager.clone();
        let nt = self.node_table(id.table())?;
        let TableData::Node(nd) = nt.data.as_ref() else {
            return Err(Error::internal("expected node table storage"));
        };
        let group = (id.offset() / NODE_GROUP_SIZE) as usize;
        let local = id.offset() % NODE_GROUP_SIZE;
        if !nt.pinned.contains_key(&group) {
            let mut cols = Vec::with_capacity(nt.props.len() + 1);
            for c in nt.props.iter().map(|p| p.1).chain([nt.labels]) {
                cols.push(match c {
                    Some(c) => Some(nd.pin_column(&pager, group, c)?),
                    None => None,
                });
            }
            nt.pinned.insert(group, cols);
        }
        let pins = nt
            .pinned
            .get(&group)
            .ok_or_else(|| Error::internal("node pins"))?;
        let mut properties = Vec::with_capacity(nt.props.len());
        for (i, (name, _)) in nt.props.iter().enumerate() {
            let v = match &pins[i] {
                Some(col) => {
                    col.read(local, 1, &mut nt.scratch[i], 0)?;
                    nt.scratch[i].get_value(0)
                }
                None => Value::Null,
            };
            properties.push((name.clone(), v));
        }
        let mut label = nt.label.clone();
        if let (Some(Some(col)), Some(buf)) = (pins.last(), nt.scratch.last_mut()) {
            if nt.labels.is_some() {
                col.read(local, 1, buf, 0)?;
                if let Value::List(l) = buf.get_value(0) {
                    label = l
                        .iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(":")
                        .into();
                }
            }
        }
        let v = NodeValue {
            id,
            label,
            properties: properties.into(),
        };
        self.node_cache.insert(id, v.clone());
        Ok(v)
    }

    fn rel_table(&mut self, t: TableId) -> Result<&RelTable> {
        if !self.rels.contains_key(&t) {
            let e = entry(self.ctx, t)?;
            let info = e
                .rel_info()
                .ok_or_else(|| Error::internal("rel table without endpoints"))?;
            let TableData::Rel(rd) = self.ctx.version.table(t)?.as_ref() else {
                return Err(Error::internal("expected rel table storage"));
            };
            let mut names = Vec::new();
            let mut columns = Vec::new();
            let mut types = Vec::new();
            for p in &e.properties {
                if kith_catalog::is_hidden(&p.name) {
                    continue;
                }
                names.push(p.name.clone());
                columns.push(rd.column_of(p.id));
                types.push(p.ty.clone());
            }
            let stored: Vec<usize> = columns.iter().flatten().copied().collect();
            let mut loc = vec![None; rd.next_rel_id.max(rd.num_rels) as usize];
            let mut ends = Vec::with_capacity(rd.fwd.groups.len());
            let mut values = Vec::with_capacity(rd.fwd.groups.len());
            let mut ids = Vec::new();
            let mut nbrs = Vec::new();
            for (gi, g) in rd.fwd.groups.iter().enumerate() {
                let n = g.num_rels as usize;
                let pinned = g.pin(&self.ctx.pager, &stored)?;
                ids.resize(n, 0);
                nbrs.resize(n, 0);
                pinned.rel_ids.read_u64s(0, n, &mut ids);
                pinned.neighbors.read_u64s(0, n, &mut nbrs);
                let mut group_ends = vec![(0u64, 0u64); n];
                for local in 0..g.num_nodes {
                    let (a, b) = pinned.range(local);
                    for pos in a..b {
                        let pos = pos as usize;
                        if let Some(e) = group_ends.get_mut(pos) {
                            *e = (gi as u64 * NODE_GROUP_SIZE + local, nbrs[pos]);
                        }
                    }
                }
                for (pos, &id) in ids.iter().enumerate() {
                    let slot = loc
                        .get_mut(id as usize)
                        .ok_or_else(|| Error::internal(format!("rel id {id} out of range")))?;
                    *slot = Some((gi as u32, pos as u32));
                }
                let mut group_values = Vec::with_capacity(names.len());
                let mut k = 0;
                for (c, ty) in columns.iter().zip(&types) {
                    let mut v = ValueVector::new(ty.clone(), n);
                    match c {
                        Some(_) => {
                            let col = pinned
                                .properties
                                .get(k)
                                .ok_or_else(|| Error::internal("rel column not pinned"))?;
                            col.read(0, n, &mut v, 0)?;
                            k += 1;
                        }
                        None => (0..n).for_each(|i| v.set_null(i, true)),
                    }
                    group_values.push(v);
                }
                ends.push(group_ends);
                values.push(group_values);
                self.ctx.cancel.check()?;
            }
            self.rels.insert(
                t,
                RelTable {
                    label: e.label.as_str().into(),
                    names,
                    loc,
                    ends,
                    values,
                    src_table: info.src,
                    dst_table: info.dst,
                },
            );
        }
        self.rels
            .get(&t)
            .ok_or_else(|| Error::internal("rel table cache"))
    }

    /// The value of rel `id`.
    pub fn rel(&mut self, id: InternalId) -> Result<RelValue> {
        if let Some(v) = self.rel_cache.get(&id) {
            return Ok(v.clone());
        }
        let rt = self.rel_table(id.table())?;
        let Some((g, pos)) = rt.loc.get(id.offset() as usize).copied().flatten() else {
            return Err(Error::internal(format!("rel {id} not in its table")));
        };
        let (g, pos) = (g as usize, pos as usize);
        let (s, d) = rt.ends[g][pos];
        let properties = rt
            .names
            .iter()
            .zip(&rt.values[g])
            .map(|(n, v)| (n.clone(), v.get_value(pos)))
            .collect::<Vec<_>>()
            .into();
        let v = RelValue {
            id,
            label: rt.label.clone(),
            src: InternalId::new(rt.src_table, s),
            dst: InternalId::new(rt.dst_table, d),
            properties,
        };
        self.rel_cache.insert(id, v.clone());
        Ok(v)
    }

    /// `LIST(REL)` of `rels`.
    pub fn rel_list(&mut self, rels: &[InternalId]) -> Result<Value> {
        let mut out = Vec::with_capacity(rels.len());
        for r in rels {
            out.push(Value::Rel(Box::new(self.rel(*r)?)));
        }
        Ok(Value::List(out))
    }

    /// The path through `nodes` and `rels` (`nodes.len() == rels.len() + 1`).
    pub fn path(&mut self, nodes: &[InternalId], rels: &[InternalId]) -> Result<Value> {
        let mut p = kith_common::PathValue {
            nodes: Vec::with_capacity(nodes.len()),
            rels: Vec::with_capacity(rels.len()),
        };
        for n in nodes {
            p.nodes.push(self.node(*n)?);
        }
        for r in rels {
            p.rels.push(self.rel(*r)?);
        }
        Ok(Value::Path(Box::new(p)))
    }
}

/// The logical type of a list of rels.
pub fn rels_type() -> LogicalType {
    LogicalType::List(Box::new(LogicalType::Rel))
}
