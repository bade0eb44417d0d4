//! Node and rel values of enumerated variable-length paths (`p = (a)-[*]->(b)`,
//! `-[r*]->`): the recursive join knows only ids, so the values (label,
//! endpoints, every property, as `_node`/`_rel` build them for fixed-length
//! patterns) are read here, once per distinct node or rel (cached), since
//! paths share most of their elements.

use hashbrown::HashMap;
use std::sync::Arc;

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

/// The rel values a result needs, by rel offset: rel properties are stored
/// in CSR order, so finding a rel by id takes a pass over its table's
/// forward CSR, made once for all the rels of a result
/// ([`PathValues::load_rels`]).
pub type RelTable = HashMap<u64, Arc<RelValue>>;

/// Builds node and rel values by id, caching each.
pub struct PathValues<'a> {
    ctx: &'a QueryContext,
    nodes: HashMap<TableId, NodeTable>,
    /// Loaded once ([`PathValues::load_rels`]), then shared read-only by
    /// the workers that build a result's paths ([`PathValues::with_rels`]).
    rels: Arc<HashMap<TableId, RelTable>>,
    node_cache: HashMap<InternalId, Arc<NodeValue>>,
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
            rels: Arc::default(),
            node_cache: HashMap::new(),
        }
    }

    /// A builder over the rels another one loaded (node values are read
    /// and cached per builder).
    pub fn with_rels(ctx: &'a QueryContext, rels: Arc<HashMap<TableId, RelTable>>) -> Self {
        PathValues {
            rels,
            ..PathValues::new(ctx)
        }
    }

    /// The loaded rels, to share with [`PathValues::with_rels`].
    pub fn loaded_rels(&self) -> Arc<HashMap<TableId, RelTable>> {
        Arc::clone(&self.rels)
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
    pub fn node(&mut self, id: InternalId) -> Result<Arc<NodeValue>> {
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
        let v = Arc::new(NodeValue {
            id,
            label,
            properties: properties.into(),
        });
        self.node_cache.insert(id, v.clone());
        Ok(v)
    }

    /// Reads the values of `ids` (rels of any tables, repeats allowed):
    /// one pass over each table's forward CSR picks the positions of the
    /// wanted rel ids (a bit per id), then reads their endpoints and
    /// properties. [`PathValues::rel`] answers only for loaded rels.
    pub fn load_rels(&mut self, ids: impl IntoIterator<Item = InternalId>) -> Result<()> {
        let mut wanted: HashMap<TableId, Vec<u64>> = HashMap::new();
        for id in ids {
            let (t, r) = (id.table(), id.offset() as usize);
            if self
                .rels
                .get(&t)
                .is_some_and(|m| m.contains_key(&(r as u64)))
            {
                continue;
            }
            let bits = wanted.entry(t).or_default();
            if bits.len() <= r / 64 {
                bits.resize(r / 64 + 1, 0);
            }
            bits[r / 64] |= 1 << (r % 64);
        }
        for (t, bits) in wanted {
            self.load_rel_table(t, &bits)?;
        }
        Ok(())
    }

    /// [`PathValues::load_rels`] for the rel ids of table `t` set in `bits`.
    fn load_rel_table(&mut self, t: TableId, bits: &[u64]) -> Result<()> {
        let e = entry(self.ctx, t)?;
        let info = e
            .rel_info()
            .ok_or_else(|| Error::internal("rel table without endpoints"))?;
        let data = self.ctx.version.table(t)?.clone();
        let TableData::Rel(rd) = data.as_ref() else {
            return Err(Error::internal("expected rel table storage"));
        };
        let label: Arc<str> = e.label.as_str().into();
        let mut names = Vec::new();
        let mut columns = Vec::new();
        let mut scratch = Vec::new();
        for p in &e.properties {
            if kith_catalog::is_hidden(&p.name) {
                continue;
            }
            names.push(p.name.clone());
            columns.push(rd.column_of(p.id));
            scratch.push(ValueVector::new(p.ty.clone(), 1));
        }
        let stored: Vec<usize> = columns.iter().flatten().copied().collect();
        let map = Arc::make_mut(&mut self.rels).entry(t).or_default();
        let (mut ids, mut nbrs) = (Vec::new(), Vec::new());
        for (gi, g) in rd.fwd.groups.iter().enumerate() {
            let n = g.num_rels as usize;
            if n == 0 {
                continue;
            }
            let pinned = g.pin(&self.ctx.pager, &stored)?;
            ids.resize(n, 0);
            pinned.rel_ids.read_u64s(0, n, &mut ids);
            if !ids.iter().any(|&r| kith_graph::graph::mask_has(bits, r)) {
                continue;
            }
            nbrs.resize(n, 0);
            pinned.neighbors.read_u64s(0, n, &mut nbrs);
            let bound = pinned.bound_nodes();
            for (pos, &local) in bound.iter().enumerate().take(n) {
                if local == kith_storage::DELETED_POSITION {
                    continue;
                }
                let r = ids[pos];
                if !kith_graph::graph::mask_has(bits, r) {
                    continue;
                }
                let mut properties = Vec::with_capacity(names.len());
                let mut k = 0;
                for (i, (name, c)) in names.iter().zip(&columns).enumerate() {
                    let v = match c {
                        Some(_) => {
                            let col = pinned
                                .properties
                                .get(k)
                                .ok_or_else(|| Error::internal("rel column not pinned"))?;
                            k += 1;
                            col.read(pos as u64, 1, &mut scratch[i], 0)?;
                            scratch[i].get_value(0)
                        }
                        None => Value::Null,
                    };
                    properties.push((name.clone(), v));
                }
                let src = gi as u64 * NODE_GROUP_SIZE + local;
                map.insert(
                    r,
                    Arc::new(RelValue {
                        id: InternalId::new(t, r),
                        label: label.clone(),
                        src: InternalId::new(info.src, src),
                        dst: InternalId::new(info.dst, nbrs[pos]),
                        properties: properties.into(),
                    }),
                );
            }
            self.ctx.cancel.check()?;
        }
        Ok(())
    }

    /// The value of rel `id`, loaded by [`PathValues::load_rels`].
    pub fn rel(&self, id: InternalId) -> Result<Arc<RelValue>> {
        self.rels
            .get(&id.table())
            .and_then(|m| m.get(&id.offset()))
            .cloned()
            .ok_or_else(|| {
                Error::internal(format!("rel {id} not loaded (deleted, or not asked for)"))
            })
    }

    /// `LIST(REL)` of `rels`.
    pub fn rel_list(&mut self, rels: &[InternalId]) -> Result<Value> {
        let mut out = Vec::with_capacity(rels.len());
        for r in rels {
            out.push(Value::Rel(self.rel(*r)?));
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
        Ok(Value::Path(Arc::new(p)))
    }
}

/// The logical type of a list of rels.
pub fn rels_type() -> LogicalType {
    LogicalType::List(Box::new(LogicalType::Rel))
}
