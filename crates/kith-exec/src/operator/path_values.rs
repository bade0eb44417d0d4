//! Node and rel values of enumerated variable-length paths (`p = (a)-[*]->(b)`,
//! `-[r*]->`): the recursive join knows only ids, so the values (label,
//! endpoints, every property, as `_node`/`_rel` build them for fixed-length
//! patterns) are read here, once per distinct node or rel for a whole
//! result ([`PathValues`]), since paths share most of their elements, into
//! a [`PathPool`]; the paths are then built on several workers as positions
//! in that pool ([`LazyPaths`]).

use hashbrown::HashMap;
use std::sync::Arc;

use kith_catalog::TableEntry;
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{
    Error, InternalId, LogicalType, NodeValue, PathPool, PathPoolHandle, PathValue, RelValue,
    Result, TableId, Value, ValueVector,
};
use kith_graph::{tree_parent, tree_path, ParentTree, PathRow, TreeRow};
use kith_sched::Scheduler;
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

/// The node and rel values a result's paths are made of, read once by
/// [`PathValues`] into a pool that the paths built on every worker share
/// ([`PathValue::pooled`]), with each element's position in it.
pub struct ElementValues {
    pool: PathPool,
    nodes: Positions,
    rels: Positions,
}

/// Positions by id for the ids of a few tables, known up front: each
/// table's ids as a bit set with the number of bits set before each word,
/// so an id's position is a rank (a popcount, no hashing).
#[derive(Default)]
pub struct Positions {
    /// (table, bit per offset, bits set before each word, first position).
    tables: Vec<(TableId, Vec<u64>, Vec<u32>, usize)>,
}

impl Positions {
    /// Adds table `t`'s ids, one per bit set in `bits`, the first at
    /// position `first`; `count` values come with them.
    fn push_table(&mut self, t: TableId, bits: Vec<u64>, first: usize, count: usize) -> Result<()> {
        let mut before = Vec::with_capacity(bits.len());
        let mut n = 0u32;
        for w in &bits {
            before.push(n);
            n += w.count_ones();
        }
        if n as usize != count || self.tables.iter().any(|x| x.0 == t) {
            return Err(Error::internal("element values do not match their ids"));
        }
        self.tables.push((t, bits, before, first));
        Ok(())
    }

    /// The position of `id`'s value.
    #[inline]
    fn index(&self, id: InternalId) -> Option<usize> {
        let (_, bits, before, first) = self.tables.iter().find(|x| x.0 == id.table())?;
        let o = id.offset();
        let (w, b) = ((o / 64) as usize, o % 64);
        let word = *bits.get(w)?;
        if (word >> b) & 1 == 0 {
            return None;
        }
        Some(first + before[w] as usize + (word & ((1u64 << b) - 1)).count_ones() as usize)
    }
}

/// Moves `more` to the end of `all` (without a copy when `all` is empty).
fn append<T>(all: &mut Vec<T>, mut more: Vec<T>) {
    if all.is_empty() {
        *all = more;
    } else {
        all.append(&mut more);
    }
}

/// Sets bit `o` of `bits` (grown as needed); true when it was not set.
fn mark(bits: &mut Vec<u64>, o: u64) -> bool {
    let (w, b) = ((o / 64) as usize, o % 64);
    if bits.len() <= w {
        bits.resize(w + 1, 0);
    }
    let new = bits[w] >> b & 1 == 0;
    bits[w] |= 1 << b;
    new
}

/// A rel to read, with the endpoint expected to be its source and the
/// other one.
type WantedRel = (InternalId, InternalId, InternalId);

/// A rel looked for beside a node: (node offset, rel offset, item).
type Wanted = (u64, u64, usize);

/// A rel's (source, position) not found yet.
const NOT_FOUND: (u64, u64) = (u64::MAX, u64::MAX);

/// Reads the node and rel values of a result's paths into [`ElementValues`]:
/// the elements are named first ([`PathValues::want_node`],
/// [`PathValues::want_rel`], repeats allowed: a bit per id keeps each
/// once), then read together ([`PathValues::read`]).
pub struct PathValues<'a> {
    ctx: &'a QueryContext,
    /// Read the elements' properties (else ids, labels and endpoints only:
    /// the query only measures its paths).
    properties: bool,
    no_properties: Arc<[(String, Value)]>,
    /// The pool and thread count to read rels with (else on this thread).
    parallel: Option<(&'a Scheduler, usize)>,
    tables: HashMap<TableId, NodeTable>,
    /// Per node table, a bit per wanted offset.
    nodes: HashMap<TableId, Vec<u64>>,
    /// Per rel table, the wanted rels (each once) and a bit per offset.
    rels: HashMap<TableId, (Vec<WantedRel>, Vec<u64>)>,
}

fn entry(ctx: &QueryContext, t: TableId) -> Result<&TableEntry> {
    ctx.version
        .catalog
        .table(t)
        .ok_or_else(|| Error::internal("table vanished from the catalog"))
}

impl<'a> PathValues<'a> {
    pub fn new(ctx: &'a QueryContext, properties: bool) -> PathValues<'a> {
        PathValues {
            ctx,
            properties,
            no_properties: Arc::from(Vec::new()),
            parallel: None,
            tables: HashMap::new(),
            nodes: HashMap::new(),
            rels: HashMap::new(),
        }
    }

    /// Reads rels on up to `threads` workers of `sched`.
    pub fn on_workers(mut self, sched: &'a Scheduler, threads: usize) -> PathValues<'a> {
        self.parallel = Some((sched, threads));
        self
    }

    /// `properties` as a value's list: no properties share one (an empty
    /// `Arc` is still an allocation, once per element of a measured path).
    fn shared(&self, properties: Vec<(String, Value)>) -> Arc<[(String, Value)]> {
        match properties.is_empty() {
            true => self.no_properties.clone(),
            false => properties.into(),
        }
    }

    /// Names a node whose value is read.
    pub fn want_node(&mut self, id: InternalId) {
        mark(self.nodes.entry(id.table()).or_default(), id.offset());
    }

    /// Names a rel whose value is read, with the endpoint expected to be
    /// its source (`a`) and the other one (`b`).
    pub fn want_rel(&mut self, r: InternalId, a: InternalId, b: InternalId) {
        let (items, listed) = self.rels.entry(r.table()).or_default();
        if mark(listed, r.offset()) {
            items.push((r, a, b));
        }
    }

    /// Reads the values of the nodes and rels named: each node once, in id
    /// order (node group by node group); rels as [`PathValues::read_rels`]
    /// finds them.
    pub fn read(mut self) -> Result<ElementValues> {
        let (mut node_positions, mut rel_positions) = (Positions::default(), Positions::default());
        let (mut nodes, mut rels) = (Vec::new(), Vec::new());
        for (t, bits) in std::mem::take(&mut self.nodes) {
            let mut read = Vec::new();
            for (w, &word) in bits.iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let o = (w * 64) as u64 + u64::from(word.trailing_zeros());
                    word &= word - 1;
                    read.push(self.read_node(InternalId::new(t, o))?);
                }
                if w % 1024 == 0 {
                    self.ctx.cancel.check()?;
                }
            }
            node_positions.push_table(t, bits, nodes.len(), read.len())?;
            append(&mut nodes, read);
        }
        for (t, (items, listed)) in std::mem::take(&mut self.rels) {
            let read = self.read_rels(t, items)?;
            rel_positions.push_table(t, listed, rels.len(), read.len())?;
            append(&mut rels, read);
        }
        Ok(ElementValues {
            pool: PathPool::new(nodes, rels),
            nodes: node_positions,
            rels: rel_positions,
        })
    }

    fn node_table(&mut self, t: TableId) -> Result<&mut NodeTable> {
        if !self.tables.contains_key(&t) {
            let e = entry(self.ctx, t)?;
            let data = self.ctx.version.table(t)?.clone();
            let TableData::Node(nd) = data.as_ref() else {
                return Err(Error::internal("expected node table storage"));
            };
            let mut props = Vec::new();
            let mut scratch = Vec::new();
            for p in e.properties.iter().filter(|_| self.properties) {
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
            self.tables.insert(
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
        self.tables
            .get_mut(&t)
            .ok_or_else(|| Error::internal("node table cache"))
    }

    /// Reads the value of node `id`.
    fn read_node(&mut self, id: InternalId) -> Result<NodeValue> {
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
        Ok(NodeValue {
            id,
            label,
            properties: self.shared(properties),
        })
    }

    /// The values of `items`, rels of table `t`, in rel offset order.
    /// Rel properties are stored in CSR order, so a rel is found among its
    /// source's forward CSR positions ([`RelReader`]); the items are split
    /// into runs of rel offsets read on several workers (offsets follow
    /// CSR order where rels were written in one piece, so a run reads few
    /// node groups).
    fn read_rels(&mut self, t: TableId, mut items: Vec<WantedRel>) -> Result<Vec<RelValue>> {
        let e = entry(self.ctx, t)?;
        let info = e
            .rel_info()
            .ok_or_else(|| Error::internal("rel table without endpoints"))?;
        let data = self.ctx.version.table(t)?.clone();
        let TableData::Rel(rd) = data.as_ref() else {
            return Err(Error::internal("expected rel table storage"));
        };
        let mut props = Vec::new();
        for p in e.properties.iter().filter(|_| self.properties) {
            if !kith_catalog::is_hidden(&p.name) {
                props.push((p.name.clone(), rd.column_of(p.id), p.ty.clone()));
            }
        }
        let reader = Arc::new(RelReader {
            pager: Arc::clone(&self.ctx.pager),
            data: Arc::clone(&data),
            table: t,
            ends: (info.src, info.dst),
            label: e.label.as_str().into(),
            stored: props.iter().filter_map(|p| p.1).collect(),
            props,
            no_properties: Arc::clone(&self.no_properties),
            cancel: self.ctx.cancel.clone(),
        });
        items.sort_unstable_by_key(|w| w.0.offset());
        let parallel = (self.parallel).filter(|&(_, t)| t > 1 && items.len() >= 2 * REL_RUN);
        let Some((sched, threads)) = parallel else {
            return reader.read(&items);
        };
        let runs = items.len().div_ceil(REL_RUN).min(threads * 8);
        let items = Arc::new(items);
        let each = items.len().div_ceil(runs);
        let parts = sched.parallel_map(threads, &self.ctx.cancel, runs, {
            let items = Arc::clone(&items);
            move |i| {
                let run = &items[(i * each).min(items.len())..((i + 1) * each).min(items.len())];
                reader.read(run)
            }
        })?;
        let mut out = Vec::with_capacity(items.len());
        for p in parts {
            append(&mut out, p);
        }
        Ok(out)
    }
}

/// Rels per run read by one task of [`PathValues::read_rels`].
#[cfg(not(kith_tiny))]
const REL_RUN: usize = 16 * 1024;
#[cfg(kith_tiny)]
const REL_RUN: usize = 4;

/// What reading one rel table's values takes, shared by the workers that
/// read runs of them.
struct RelReader {
    pager: Arc<kith_pager::Pager>,
    data: Arc<TableData>,
    table: TableId,
    /// The source and destination node tables.
    ends: (TableId, TableId),
    label: Arc<str>,
    /// (name, storage column, type) of each property read.
    props: Vec<(String, Option<usize>, LogicalType)>,
    /// The stored columns among them, pinned with each group.
    stored: Vec<usize>,
    no_properties: Arc<[(String, Value)]>,
    cancel: kith_sched::CancelToken,
}

impl RelReader {
    /// The values of `items`, in their order: each rel's (source,
    /// position) found first at the position its id suggests beside either
    /// endpoint (a rel an undirected walk took backward is beside the
    /// second), and only for the rels not found so by reading each
    /// endpoint's rel ids once (a result's rels share few sources, but a
    /// hub can be the source of many).
    fn read(&self, items: &[WantedRel]) -> Result<Vec<RelValue>> {
        let TableData::Rel(rd) = self.data.as_ref() else {
            return Err(Error::internal("expected rel table storage"));
        };
        let (src_table, dst_table) = self.ends;
        let src_of = |n: InternalId| (n.table() == src_table).then_some(n.offset());
        let mut ends: [Vec<Wanted>; 2] = [Vec::with_capacity(items.len()), Vec::new()];
        for (i, &(r, a, b)) in items.iter().enumerate() {
            let (x, y) = (src_of(a), src_of(b));
            match (x, y) {
                (Some(x), y) => {
                    ends[0].push((x, r.offset(), i));
                    if let Some(y) = y.filter(|&y| y != x) {
                        ends[1].push((y, r.offset(), i));
                    }
                }
                (None, Some(y)) => ends[0].push((y, r.offset(), i)),
                (None, None) => {
                    return Err(Error::internal(format!(
                        "rel {r} has no endpoint in its source table"
                    )))
                }
            }
        }
        let mut pins: HashMap<usize, kith_storage::PinnedCsrGroup> = HashMap::new();
        let mut found = vec![NOT_FOUND; items.len()];
        for scan in [false, true] {
            for end in &ends {
                let left: Vec<Wanted> = end
                    .iter()
                    .filter(|w| found[w.2] == NOT_FOUND)
                    .copied()
                    .collect();
                if !left.is_empty() {
                    self.find_rels(rd, &mut pins, left, scan, &mut found)?;
                }
            }
        }
        let mut scratch: Vec<ValueVector> = self
            .props
            .iter()
            .map(|p| ValueVector::new(p.2.clone(), 1))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        let mut nbr = [0u64; 1];
        for (&(r, _, _), &(src, pos)) in items.iter().zip(&found) {
            let r = r.offset();
            if (src, pos) == NOT_FOUND {
                return Err(Error::internal(format!(
                    "rel {} not found beside its endpoints (deleted?)",
                    InternalId::new(self.table, r)
                )));
            }
            let pinned = pins
                .get(&((src / NODE_GROUP_SIZE) as usize))
                .ok_or_else(|| Error::internal("rel group not pinned"))?;
            pinned.neighbors()?.read_u64s(pos, 1, &mut nbr);
            let properties = if self.props.is_empty() {
                Arc::clone(&self.no_properties)
            } else {
                let mut properties = Vec::with_capacity(self.props.len());
                let mut k = 0;
                for (i, (name, c, _)) in self.props.iter().enumerate() {
                    let v = match c {
                        Some(_) => {
                            let col = pinned
                                .properties
                                .get(k)
                                .ok_or_else(|| Error::internal("rel column not pinned"))?;
                            k += 1;
                            col.read(pos, 1, &mut scratch[i], 0)?;
                            scratch[i].get_value(0)
                        }
                        None => Value::Null,
                    };
                    properties.push((name.clone(), v));
                }
                properties.into()
            };
            out.push(RelValue {
                id: InternalId::new(self.table, r),
                label: self.label.clone(),
                src: InternalId::new(src_table, src),
                dst: InternalId::new(dst_table, nbr[0]),
                properties,
            });
        }
        Ok(out)
    }

    /// Finds the forward CSR position of the rels of `wanted` (source
    /// offset, rel offset, item) among their sources' rels, into
    /// `found[item]` as (source offset, position): at the position a
    /// region written in one piece numbers the rel with, and, when `scan`,
    /// by reading the source's rel ids (once per source). Pins the groups
    /// it reads into `pins` (with the stored property columns).
    fn find_rels(
        &self,
        rd: &kith_storage::RelTableData,
        pins: &mut HashMap<usize, kith_storage::PinnedCsrGroup>,
        mut wanted: Vec<Wanted>,
        scan: bool,
        found: &mut [(u64, u64)],
    ) -> Result<()> {
        wanted.sort_unstable();
        let mut ids = Vec::new();
        let (mut i, mut sources) = (0, 0usize);
        while i < wanted.len() {
            let src = wanted[i].0;
            let end = i + wanted[i..].partition_point(|w| w.0 == src);
            let want = &wanted[i..end];
            i = end;
            let gi = (src / NODE_GROUP_SIZE) as usize;
            let Some(g) = rd.fwd.groups.get(gi) else {
                continue;
            };
            if !pins.contains_key(&gi) {
                pins.insert(gi, g.pin(&self.pager, &self.stored)?);
            }
            let pinned = pins
                .get(&gi)
                .ok_or_else(|| Error::internal("rel group not pinned"))?;
            let local = src % NODE_GROUP_SIZE;
            if scan {
                for (s, e) in pinned.ranges(local) {
                    ids.resize((e - s) as usize, 0);
                    pinned.rel_ids()?.read_u64s(s, ids.len(), &mut ids);
                    for (k, r) in ids.iter().enumerate() {
                        let at = want.partition_point(|w| w.1 < *r);
                        for w in want[at..].iter().take_while(|w| w.1 == *r) {
                            found[w.2] = (src, s + k as u64);
                        }
                    }
                }
            } else {
                let rel_ids = pinned.rel_ids()?;
                let positions = rel_ids.num_values();
                let mut first = [0u64; 1];
                if positions > 0 {
                    rel_ids.read_u64s(0, 1, &mut first);
                }
                for &(_, r, item) in want {
                    let guess = r.wrapping_sub(first[0]);
                    let mut at = [u64::MAX; 1];
                    if guess < positions {
                        rel_ids.read_u64s(guess, 1, &mut at);
                    }
                    if at[0] == r && pinned.ranges(local).any(|(s, e)| (s..e).contains(&guess)) {
                        found[item] = (src, guess);
                    }
                }
            }
            sources += 1;
            if sources % 1024 == 0 {
                self.cancel.check()?;
            }
        }
        Ok(())
    }
}

/// What one worker builds path values with: its handle on the pool (so
/// the paths it builds count on a counter of its own) and buffers for a
/// path read back from a tree.
#[derive(Default)]
pub struct PathCache {
    handle: Option<PathPoolHandle>,
    path_nodes: Vec<u64>,
    path_rels: Vec<u64>,
}

impl PathCache {
    /// This worker's handle on `pool`.
    fn handle(&mut self, pool: &Arc<PathPool>) -> &PathPoolHandle {
        let stale = (self.handle.as_ref()).is_none_or(|h| !std::ptr::eq(h.pool(), &**pool));
        if stale {
            self.handle = Some(PathPoolHandle::new(pool));
        }
        self.handle.get_or_insert_with(|| PathPoolHandle::new(pool))
    }
}

/// How a search's dense node and rel numbers map to ids: node tables and
/// rel tables, each by its first dense number (ascending).
#[derive(Clone, Debug)]
pub struct IdSpace {
    pub nodes: Vec<(TableId, u64)>,
    pub rels: Vec<(TableId, u64)>,
}

impl IdSpace {
    #[inline]
    pub fn node(&self, d: u64) -> InternalId {
        dense_to_id(&self.nodes, d)
    }

    #[inline]
    pub fn rel(&self, r: u64) -> InternalId {
        dense_to_id(&self.rels, r)
    }
}

/// The table whose range holds dense number `d`, and `d`'s offset in it.
#[inline]
fn dense_to_id(space: &[(TableId, u64)], d: u64) -> InternalId {
    let t = space.partition_point(|&(_, b)| b <= d).saturating_sub(1);
    match space.get(t) {
        Some(&(table, base)) => InternalId::new(table, d - base),
        None => InternalId(d),
    }
}

/// Which value of a path a result column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathPart {
    /// The `PATH`.
    Path,
    /// Its rels as a `LIST(REL)`.
    Rels,
}

/// A recursive join's path columns, built as they are read: the join's
/// rows hold each path's number (`UINT64`, NULL for a padded row) and the
/// worker that scans a morsel of rows builds that morsel's values
/// ([`LazyPaths::fill`]), so path values live only while the parent
/// pipeline works on them, and are built on every worker.
pub struct LazyPaths {
    /// The paths, in path-number order.
    pub paths: FoundPaths,
    pub ids: IdSpace,
    pool: Arc<PathPool>,
    nodes: Positions,
    rels: Positions,
    /// Result columns holding path numbers, with the value each stands for.
    pub columns: Vec<(usize, PathPart)>,
}

/// The paths a search found, in the search's dense numbers.
pub enum FoundPaths {
    /// Each path's nodes and rels.
    Rows(Vec<PathRow>),
    /// One shortest path per destination, read back from its source's
    /// parent tree ([`ShortestTrees`](kith_graph::ShortestTrees)).
    Trees {
        rows: Vec<TreeRow>,
        trees: HashMap<u64, ParentTree>,
    },
}

impl FoundPaths {
    pub fn len(&self) -> usize {
        match self {
            FoundPaths::Rows(rows) => rows.len(),
            FoundPaths::Trees { rows, .. } => rows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Path `i`'s source, destination and length (its cost bits when
    /// `weighted`).
    pub fn end(&self, i: usize, weighted: bool) -> (u64, u64, u64) {
        match self {
            FoundPaths::Rows(rows) => {
                let p = &rows[i];
                let len = if weighted {
                    p.cost_bits
                } else {
                    p.rels.len() as u64
                };
                (p.src, p.dst, len)
            }
            FoundPaths::Trees { rows, .. } => {
                let r = &rows[i];
                (r.src, r.dst, u64::from(r.hops))
            }
        }
    }

    /// Calls `f(nodes, rels)` for the elements of the paths: every path
    /// of `Rows`; for `Trees`, each tree node on a path with its parent
    /// edge once (a two-node "path"), and each source as a lone node.
    fn for_each_part(&self, mut f: impl FnMut(&[u64], &[u64])) -> Result<()> {
        match self {
            FoundPaths::Rows(rows) => rows.iter().for_each(|p| f(&p.nodes, &p.rels)),
            FoundPaths::Trees { rows, trees } => {
                // Rows come grouped by source: one source's marks at a time.
                let mut marks: HashMap<u64, Vec<u64>> = HashMap::new();
                let mut current: Option<(u64, &ParentTree, Vec<u64>)> = None;
                for row in rows {
                    if current.as_ref().is_none_or(|c| c.0 != row.src) {
                        if let Some((src, _, seen)) = current.take() {
                            marks.insert(src, seen);
                        }
                        let tree = trees
                            .get(&row.src)
                            .ok_or_else(|| Error::internal("path of a source without a tree"))?;
                        let seen = marks.remove(&row.src).unwrap_or_else(|| {
                            f(&[row.src], &[]);
                            vec![0u64; tree.len().div_ceil(64)]
                        });
                        current = Some((row.src, tree, seen));
                    }
                    let Some((_, tree, seen)) = current.as_mut() else {
                        continue;
                    };
                    let mut v = row.dst;
                    for _ in 0..row.hops {
                        if !mark(seen, v) {
                            break;
                        }
                        let (p, r) = tree_parent(tree, v)?;
                        f(&[p, v], &[r]);
                        v = p;
                    }
                }
            }
        }
        Ok(())
    }
}

impl LazyPaths {
    /// Reads the values of the paths' nodes (when a column holds paths)
    /// and rels, with their properties when `properties`; `walked_back`
    /// lists the rel tables walked only backward (a rel's source is then
    /// the path's next node); rels are read on `workers` when given.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &QueryContext,
        paths: FoundPaths,
        ids: IdSpace,
        columns: Vec<(usize, PathPart)>,
        walked_back: &[TableId],
        properties: bool,
        workers: Option<(&Scheduler, usize)>,
    ) -> Result<LazyPaths> {
        let mut values = PathValues::new(ctx, properties);
        if let Some((sched, threads)) = workers {
            values = values.on_workers(sched, threads);
        }
        let with_nodes = columns.iter().any(|c| c.1 == PathPart::Path);
        paths.for_each_part(|ns, rs| {
            for (k, &r) in rs.iter().enumerate() {
                let (r, a, b) = (ids.rel(r), ids.node(ns[k]), ids.node(ns[k + 1]));
                match walked_back.contains(&r.table()) {
                    true => values.want_rel(r, b, a),
                    false => values.want_rel(r, a, b),
                }
            }
            if with_nodes {
                ns.iter().for_each(|&n| values.want_node(ids.node(n)));
            }
        })?;
        let values = values.read()?;
        Ok(LazyPaths {
            paths,
            ids,
            pool: Arc::new(values.pool),
            nodes: values.nodes,
            rels: values.rels,
            columns,
        })
    }

    /// What column `c` of the join's rows holds, if it is a path column.
    pub fn part_of(&self, c: usize) -> Option<PathPart> {
        self.columns.iter().find(|x| x.0 == c).map(|x| x.1)
    }

    /// The value of path number `i`.
    fn value(&self, i: u64, part: PathPart, cache: &mut PathCache) -> Result<Value> {
        let beyond = || Error::internal(format!("path number {i} beyond the result"));
        let (nodes, rels) = match &self.paths {
            FoundPaths::Rows(rows) => {
                let p = rows.get(i as usize).ok_or_else(beyond)?;
                (p.nodes.as_slice(), p.rels.as_slice())
            }
            FoundPaths::Trees { rows, trees } => {
                let row = rows.get(i as usize).ok_or_else(beyond)?;
                let tree = trees
                    .get(&row.src)
                    .ok_or_else(|| Error::internal("path of a source without a tree"))?;
                tree_path(tree, row, &mut cache.path_nodes, &mut cache.path_rels)?;
                (cache.path_nodes.as_slice(), cache.path_rels.as_slice())
            }
        };
        let missing = |id: InternalId| Error::internal(format!("path element {id} not loaded"));
        let rel = |r: u64| {
            let id = self.ids.rel(r);
            self.rels.index(id).ok_or_else(|| missing(id))
        };
        match part {
            PathPart::Path => {
                let mut positions = Vec::with_capacity(nodes.len() + rels.len());
                for &n in nodes {
                    let id = self.ids.node(n);
                    positions.push(self.nodes.index(id).ok_or_else(|| missing(id))? as u32);
                }
                for &r in rels {
                    positions.push(rel(r)? as u32);
                }
                let handle = cache.handle(&self.pool);
                let path = PathValue::pooled(handle, positions.into_boxed_slice())
                    .ok_or_else(|| Error::internal("a found path does not fit its pool"))?;
                Ok(Value::Path(Arc::new(path)))
            }
            PathPart::Rels => {
                let mut list = Vec::with_capacity(rels.len());
                for &r in rels {
                    let v = self.pool.rel(rel(r)?);
                    let v = v.ok_or_else(|| Error::internal("rel position beyond the pool"))?;
                    list.push(Value::Rel(Arc::clone(v)));
                }
                Ok(Value::list(list))
            }
        }
    }

    /// Writes the values of the paths numbered `numbers` into `out`, NULL
    /// from position `padded` on (rows a left outer join padded).
    pub fn fill(
        &self,
        part: PathPart,
        numbers: &[u64],
        padded: usize,
        out: &mut ValueVector,
        cache: &mut PathCache,
    ) -> Result<()> {
        out.reset(numbers.len());
        for (p, &n) in numbers.iter().enumerate() {
            if p >= padded {
                out.set_null(p, true);
            } else {
                out.put_value(p, self.value(n, part, cache)?);
            }
        }
        Ok(())
    }
}

/// The logical type of a list of rels.
pub fn rels_type() -> LogicalType {
    LogicalType::List(Box::new(LogicalType::Rel))
}
