//! The `Graph` interface of IFE and its two implementations: an in-memory CSR
//! (tests, generated graphs) and a CSR over pinned `kith-storage` columns.

use std::sync::Arc;

use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::vector::VectorData;
use kith_common::{Error, LogicalType, Result, ValueVector};
use kith_pager::Pager;
use kith_storage::{CsrIndex, PackedU64s, PinnedColumn, PinnedCsrGroup};

use crate::weights::RelWeights;

/// Neighbour access for IFE over one node table with dense offsets `0..n`.
///
/// `neighbors` is generic over the callback so the extend inner loop is
/// monomorphised: no dynamic dispatch and no buffer-manager call per neighbour.
pub trait Graph: Send + Sync + 'static {
    /// Per-worker scratch (decode buffers); one per worker per task.
    type Scratch: Default + Send;

    fn num_nodes(&self) -> u64;

    /// Number of adjacency entries (for degree estimates).
    fn num_edges(&self) -> u64;

    /// Calls `f(neighbour, rel_id)` for every rel of `node`, in CSR order.
    fn neighbors<F: FnMut(u64, u64)>(&self, node: u64, scratch: &mut Self::Scratch, f: F);

    /// Calls `f(neighbour)` for every rel of `node`, in CSR order: for the
    /// searches that keep no rel ids (a storage CSR then decodes none,
    /// half of what its inner loop read).
    fn neighbor_nodes<F: FnMut(u64)>(&self, node: u64, scratch: &mut Self::Scratch, mut f: F) {
        self.neighbors(node, scratch, |n, _| f(n))
    }

    /// The number of rels of `node` (before rel conditions): what a
    /// top-down step from it would read, for choosing a level's direction.
    fn degree(&self, node: u64, scratch: &mut Self::Scratch) -> u64 {
        let mut d = 0;
        self.neighbor_nodes(node, scratch, |_| d += 1);
        d
    }

    /// Calls `f(neighbour)` in CSR order until it returns true; whether it
    /// did. A bottom-up BFS step asks whether any in-neighbour is in the
    /// frontier and stops at the first (a storage CSR then decodes a few
    /// neighbours at a time).
    fn find_neighbor<F: FnMut(u64) -> bool>(
        &self,
        node: u64,
        scratch: &mut Self::Scratch,
        mut f: F,
    ) -> bool {
        let mut found = false;
        self.neighbor_nodes(node, scratch, |n| found = found || f(n));
        found
    }

    /// [`Graph::find_neighbor`] for each of `nodes` (ascending, in one
    /// aligned block of 64 ids), calling `found(node)` for those with a
    /// neighbour that `f` holds for: a bottom-up step over a block of
    /// unreached nodes (a storage CSR decodes the block's offsets once).
    fn find_neighbors<F: FnMut(u64) -> bool, H: FnMut(u64)>(
        &self,
        nodes: &[u64],
        scratch: &mut Self::Scratch,
        f: F,
        found: H,
    ) {
        find_each(self, nodes, scratch, f, found)
    }

    /// Calls `f(neighbour, rel_id, weight)` for every rel of `node`, in CSR
    /// order, with the weight `weights` gives the rel (a graph that pinned
    /// its weight column reads [`RelWeights::Pinned`] next to the
    /// neighbours). Err: a rel without a weight, or whose weight is NULL.
    /// Weights are handed on as stored: the caller checks them.
    fn weighted_neighbors<F: FnMut(u64, u64, f64)>(
        &self,
        node: u64,
        scratch: &mut Self::Scratch,
        weights: &RelWeights,
        f: F,
    ) -> Result<()> {
        looked_up_weights(self, node, scratch, weights, f)
    }
}

/// [`Graph::find_neighbors`] one node at a time.
fn find_each<G: Graph + ?Sized, F: FnMut(u64) -> bool, H: FnMut(u64)>(
    g: &G,
    nodes: &[u64],
    scratch: &mut G::Scratch,
    mut f: F,
    mut found: H,
) {
    for &x in nodes {
        if g.find_neighbor(x, scratch, &mut f) {
            found(x);
        }
    }
}

/// [`Graph::weighted_neighbors`] looking each rel's weight up by rel id.
fn looked_up_weights<G: Graph + ?Sized, F: FnMut(u64, u64, f64)>(
    g: &G,
    node: u64,
    scratch: &mut G::Scratch,
    weights: &RelWeights,
    mut f: F,
) -> Result<()> {
    let mut missing = None;
    g.neighbors(node, scratch, |n, r| match weights.get(r) {
        Some(w) => f(n, r, w),
        None => missing = Some(r),
    });
    match missing {
        None => Ok(()),
        Some(r) => Err(Error::internal(format!("rel {r} has no weight"))),
    }
}

/// A CSR held in plain vectors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InMemoryCsr {
    /// `n + 1` positions; node `i`'s rels are `offsets[i]..offsets[i + 1]`.
    pub offsets: Vec<u64>,
    pub nbrs: Vec<u64>,
    pub rel_ids: Vec<u64>,
}

impl InMemoryCsr {
    /// Forward CSR of `edges` (`(src, dst)`); the rel id of an edge is its
    /// index in `edges`; each node's rels keep their input order.
    ///
    /// Panics when an endpoint is `>= num_nodes`.
    pub fn from_edges(num_nodes: u64, edges: &[(u64, u64)]) -> InMemoryCsr {
        let n = num_nodes as usize;
        let mut offsets = vec![0u64; n + 1];
        for &(s, d) in edges {
            assert!(
                s < num_nodes && d < num_nodes,
                "edge ({s}, {d}) out of range"
            );
            offsets[s as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut cursor = offsets.clone();
        let mut nbrs = vec![0u64; edges.len()];
        let mut rel_ids = vec![0u64; edges.len()];
        for (r, &(s, d)) in edges.iter().enumerate() {
            let c = &mut cursor[s as usize];
            nbrs[*c as usize] = d;
            rel_ids[*c as usize] = r as u64;
            *c += 1;
        }
        InMemoryCsr {
            offsets,
            nbrs,
            rel_ids,
        }
    }

    /// The backward CSR (by destination) of the same edges.
    pub fn from_edges_reversed(num_nodes: u64, edges: &[(u64, u64)]) -> InMemoryCsr {
        let rev: Vec<(u64, u64)> = edges.iter().map(|&(s, d)| (d, s)).collect();
        InMemoryCsr::from_edges(num_nodes, &rev)
    }
}

impl Graph for InMemoryCsr {
    type Scratch = ();

    fn num_nodes(&self) -> u64 {
        self.offsets.len().saturating_sub(1) as u64
    }

    fn num_edges(&self) -> u64 {
        self.nbrs.len() as u64
    }

    fn degree(&self, node: u64, _: &mut ()) -> u64 {
        self.offsets[node as usize + 1] - self.offsets[node as usize]
    }

    #[inline]
    fn neighbors<F: FnMut(u64, u64)>(&self, node: u64, _: &mut (), mut f: F) {
        let a = self.offsets[node as usize] as usize;
        let b = self.offsets[node as usize + 1] as usize;
        for (n, r) in self.nbrs[a..b].iter().zip(&self.rel_ids[a..b]) {
            f(*n, *r);
        }
    }
}

/// A CSR direction of a stored rel table with every node group's offsets,
/// neighbours and rel ids pinned once for the whole computation; neighbour
/// lists are decoded with `read_u64s` into per-worker buffers.
pub struct StorageCsr {
    groups: Vec<GraphGroup>,
    num_nodes: u64,
    num_edges: u64,
    /// Bit `r` set: rel id `r` may be walked (rel property conditions of
    /// the pattern); `None`: every rel. Ids beyond the mask are skipped.
    rel_mask: Option<Arc<[u64]>>,
    /// The type of the weight property pinned as each group's first
    /// property column ([`StorageCsr::with_weights`]): rel properties are
    /// stored in CSR order, so a node's weights are read beside its
    /// neighbours and a search reads only the weights of the rels it walks.
    weight_ty: Option<LogicalType>,
}

/// Decode buffers of one worker for [`StorageCsr`].
#[derive(Default)]
pub struct StorageScratch {
    nbrs: Vec<u64>,
    rels: Vec<u64>,
    /// Weights as stored, then as f64.
    stored: Option<ValueVector>,
    weights: Vec<f64>,
}

/// A pinned CSR group with its neighbours and rel ids pinned up front,
/// since every walk reads them (the group's own are pinned on demand).
struct GraphGroup {
    csr: PinnedCsrGroup,
    neighbors: PinnedColumn,
    rel_ids: PinnedColumn,
}

impl StorageCsr {
    /// Pins every group of `csr`. The node count is the end of the last
    /// group's region; use [`StorageCsr::with_num_nodes`] to widen it to the
    /// node table (nodes beyond the CSR have no rels).
    pub fn new(pager: &Arc<Pager>, csr: &CsrIndex) -> Result<StorageCsr> {
        StorageCsr::pinning(pager, csr, &[])
    }

    /// [`StorageCsr::new`] that also pins the weight property (storage
    /// column `column`, of type `ty`) for [`Graph::weighted_neighbors`]
    /// with [`RelWeights::Pinned`].
    pub fn with_weights(
        pager: &Arc<Pager>,
        csr: &CsrIndex,
        column: usize,
        ty: LogicalType,
    ) -> Result<StorageCsr> {
        let mut g = StorageCsr::pinning(pager, csr, &[column])?;
        g.weight_ty = Some(ty);
        Ok(g)
    }

    fn pinning(pager: &Arc<Pager>, csr: &CsrIndex, columns: &[usize]) -> Result<StorageCsr> {
        let mut groups = Vec::with_capacity(csr.groups.len());
        let mut num_nodes = 0;
        let mut num_edges = 0;
        for (gi, g) in csr.groups.iter().enumerate() {
            let pinned = GraphGroup {
                csr: g.pin(pager, columns)?,
                neighbors: g.neighbors.pin(pager)?,
                rel_ids: g.rel_ids.pin(pager)?,
            };
            if pinned.csr.node_span() > 0 {
                num_nodes = gi as u64 * NODE_GROUP_SIZE + pinned.csr.node_span();
            }
            num_edges += g.live_rels();
            groups.push(pinned);
        }
        Ok(StorageCsr {
            groups,
            num_nodes,
            num_edges,
            rel_mask: None,
            weight_ty: None,
        })
    }

    pub fn with_num_nodes(mut self, num_nodes: u64) -> StorageCsr {
        self.num_nodes = self.num_nodes.max(num_nodes);
        self
    }

    /// Only the rels whose id has its bit set in `mask` (64 ids a word) are
    /// walked.
    pub fn with_rel_mask(mut self, mask: Arc<[u64]>) -> StorageCsr {
        self.rel_mask = Some(mask);
        self
    }
}

/// Whether bit `r` of `mask` is set (false beyond its end).
#[inline]
pub fn mask_has(mask: &[u64], r: u64) -> bool {
    mask.get((r / 64) as usize)
        .is_some_and(|w| w & (1 << (r % 64)) != 0)
}

impl Graph for StorageCsr {
    type Scratch = StorageScratch;

    fn num_nodes(&self) -> u64 {
        self.num_nodes
    }

    fn num_edges(&self) -> u64 {
        self.num_edges
    }

    fn degree(&self, node: u64, _: &mut StorageScratch) -> u64 {
        self.groups
            .get((node / NODE_GROUP_SIZE) as usize)
            .map_or(0, |g| g.csr.degree(node % NODE_GROUP_SIZE))
    }

    #[inline]
    fn neighbors<F: FnMut(u64, u64)>(&self, node: u64, s: &mut StorageScratch, mut f: F) {
        let Some(g) = self.groups.get((node / NODE_GROUP_SIZE) as usize) else {
            return;
        };
        let local = node % NODE_GROUP_SIZE;
        let (a, b) = g.csr.range(local);
        self.run(g, a, b, s, &mut f);
        for &(a, b) in g.csr.appended(local) {
            self.run(g, a, b, s, &mut f);
        }
    }

    #[inline]
    fn neighbor_nodes<F: FnMut(u64)>(&self, node: u64, s: &mut StorageScratch, mut f: F) {
        if self.rel_mask.is_some() {
            return self.neighbors(node, s, |n, _| f(n));
        }
        let Some(g) = self.groups.get((node / NODE_GROUP_SIZE) as usize) else {
            return;
        };
        let local = node % NODE_GROUP_SIZE;
        let (a, b) = g.csr.range(local);
        run_nodes(g, a, b, s, &mut f);
        for &(a, b) in g.csr.appended(local) {
            run_nodes(g, a, b, s, &mut f);
        }
    }

    fn find_neighbor<F: FnMut(u64) -> bool>(
        &self,
        node: u64,
        s: &mut StorageScratch,
        mut f: F,
    ) -> bool {
        if self.rel_mask.is_some() {
            let mut found = false;
            self.neighbors(node, s, |n, _| found = found || f(n));
            return found;
        }
        let Some(g) = self.groups.get((node / NODE_GROUP_SIZE) as usize) else {
            return false;
        };
        let local = node % NODE_GROUP_SIZE;
        find_in_node(
            g,
            g.neighbors.packed_u64s(),
            local,
            g.csr.range(local),
            &mut f,
        )
    }

    fn find_neighbors<F: FnMut(u64) -> bool, H: FnMut(u64)>(
        &self,
        nodes: &[u64],
        s: &mut StorageScratch,
        mut f: F,
        mut found: H,
    ) {
        let Some(&first) = nodes.first() else {
            return;
        };
        let group = self.groups.get((first / NODE_GROUP_SIZE) as usize);
        let (Some(g), None) = (group, &self.rel_mask) else {
            return find_each(self, nodes, s, f, found);
        };
        // A block of 64 ids lies in one node group.
        const _: () = assert!(NODE_GROUP_SIZE.is_multiple_of(64));
        let block = first / 64 * 64;
        let packed = g.neighbors.packed_u64s();
        let mut ranges = [(0u64, 0u64); 64];
        g.csr.main_ranges(block % NODE_GROUP_SIZE, &mut ranges);
        for &x in nodes {
            let Some(&main) = ranges.get((x - block) as usize) else {
                continue;
            };
            if find_in_node(g, packed, x % NODE_GROUP_SIZE, main, &mut f) {
                found(x);
            }
        }
    }

    fn weighted_neighbors<F: FnMut(u64, u64, f64)>(
        &self,
        node: u64,
        s: &mut StorageScratch,
        weights: &RelWeights,
        mut f: F,
    ) -> Result<()> {
        let (RelWeights::Pinned, Some(ty)) = (weights, &self.weight_ty) else {
            return looked_up_weights(self, node, s, weights, f);
        };
        let Some(g) = self.groups.get((node / NODE_GROUP_SIZE) as usize) else {
            return Ok(());
        };
        let local = node % NODE_GROUP_SIZE;
        let (a, b) = g.csr.range(local);
        self.weighted_run(g, ty, a, b, s, &mut f)?;
        for &(a, b) in g.csr.appended(local) {
            self.weighted_run(g, ty, a, b, s, &mut f)?;
        }
        Ok(())
    }
}

impl StorageCsr {
    /// Calls `f` for the rels at positions `a..b` of `g`.
    #[inline]
    fn run<F: FnMut(u64, u64)>(
        &self,
        g: &GraphGroup,
        a: u64,
        b: u64,
        s: &mut StorageScratch,
        f: &mut F,
    ) {
        if a == b {
            return;
        }
        let (nbrs, rels) = decode(g, a, b, &mut s.nbrs, &mut s.rels);
        match &self.rel_mask {
            None => {
                for (n, r) in nbrs.iter().zip(rels) {
                    f(*n, *r);
                }
            }
            Some(mask) => {
                for (n, r) in nbrs.iter().zip(rels) {
                    if mask_has(mask, *r) {
                        f(*n, *r);
                    }
                }
            }
        }
    }

    /// [`StorageCsr::run`] with the weights of positions `a..b` read from
    /// the pinned weight column.
    fn weighted_run<F: FnMut(u64, u64, f64)>(
        &self,
        g: &GraphGroup,
        ty: &LogicalType,
        a: u64,
        b: u64,
        s: &mut StorageScratch,
        f: &mut F,
    ) -> Result<()> {
        let len = (b - a) as usize;
        if len == 0 {
            return Ok(());
        }
        let column = g
            .csr
            .properties
            .first()
            .ok_or_else(|| Error::internal("weight column not pinned"))?;
        let StorageScratch {
            nbrs,
            rels,
            stored,
            weights,
        } = s;
        let stored = stored.get_or_insert_with(|| ValueVector::new(ty.clone(), len));
        if stored.len() < len {
            stored.resize(len);
        }
        column.read(a, len, stored, 0)?;
        if stored.nulls.may_have_nulls() && (0..len).any(|i| stored.is_null(i)) {
            return Err(Error::runtime(
                "weighted shortest path over a rel whose weight is NULL",
            ));
        }
        // DOUBLE weights are read where they were decoded; other numeric
        // types are converted once per neighbour list.
        let ws: &[f64] = match &stored.data {
            VectorData::F64(v) => &v[..len],
            data => {
                weights.clear();
                match data {
                    VectorData::F32(v) => weights.extend(v[..len].iter().map(|&x| x as f64)),
                    VectorData::I64(v) => weights.extend(v[..len].iter().map(|&x| x as f64)),
                    VectorData::I32(v) => weights.extend(v[..len].iter().map(|&x| x as f64)),
                    _ => {
                        for i in 0..len {
                            let v = stored.get_value(i);
                            weights.push(v.as_f64().ok_or_else(|| {
                                Error::runtime(format!("weight {v} is not a number"))
                            })?);
                        }
                    }
                }
                weights
            }
        };
        let (nbrs, rels) = decode(g, a, b, nbrs, rels);
        let edges = nbrs.iter().zip(rels).zip(ws);
        match &self.rel_mask {
            None => edges.for_each(|((n, r), w)| f(*n, *r, *w)),
            Some(mask) => edges
                .filter(|((_, r), _)| mask_has(mask, **r))
                .for_each(|((n, r), w)| f(*n, *r, *w)),
        }
        Ok(())
    }
}

/// The neighbours at positions `a..b` of `g`, without their rel ids.
#[inline]
fn run_nodes<F: FnMut(u64)>(g: &GraphGroup, a: u64, b: u64, s: &mut StorageScratch, f: &mut F) {
    let len = (b - a) as usize;
    if len == 0 {
        return;
    }
    if s.nbrs.len() < len {
        s.nbrs.resize(len, 0);
    }
    g.neighbors.read_u64s(a, len, &mut s.nbrs[..len]);
    s.nbrs[..len].iter().for_each(|&n| f(n));
}

/// Whether `f` holds for a neighbour of node `local` of `g`: in its main
/// range `main` ([`PinnedCsrGroup::range`]), then in its appended runs.
#[inline(always)]
fn find_in_node<F: FnMut(u64) -> bool>(
    g: &GraphGroup,
    packed: Option<PackedU64s<'_>>,
    local: u64,
    (a, b): (u64, u64),
    f: &mut F,
) -> bool {
    find_in_run(g, packed, a, b, f)
        || g.csr
            .appended(local)
            .iter()
            .any(|&(a, b)| find_in_run(g, packed, a, b, f))
}

/// Whether `f` holds for a neighbour at positions `a..b` of `g`, read one
/// at a time from `packed` (the neighbour column's direct view, when it
/// has one) or decoded a few at a time, so that an early hit reads little.
#[inline(always)]
fn find_in_run<F: FnMut(u64) -> bool>(
    g: &GraphGroup,
    packed: Option<PackedU64s<'_>>,
    a: u64,
    b: u64,
    f: &mut F,
) -> bool {
    if let Some(p) = packed {
        return (a..b).any(|i| f(p.get(i)));
    }
    const STEP: u64 = 16;
    let mut buf = [0u64; STEP as usize];
    let mut at = a;
    while at < b {
        let len = (b - at).min(STEP) as usize;
        g.neighbors.read_u64s(at, len, &mut buf[..len]);
        if buf[..len].iter().any(|&n| f(n)) {
            return true;
        }
        at += len as u64;
    }
    false
}

/// Decodes the neighbours and rel ids at positions `a..b` of `g` into the
/// buffers (grown as needed) and returns them.
#[inline]
fn decode<'s>(
    g: &GraphGroup,
    a: u64,
    b: u64,
    nbrs: &'s mut Vec<u64>,
    rels: &'s mut Vec<u64>,
) -> (&'s [u64], &'s [u64]) {
    let len = (b - a) as usize;
    if nbrs.len() < len {
        nbrs.resize(len, 0);
        rels.resize(len, 0);
    }
    g.neighbors.read_u64s(a, len, &mut nbrs[..len]);
    g.rel_ids.read_u64s(a, len, &mut rels[..len]);
    (&nbrs[..len], &rels[..len])
}

/// One CSR of a [`UnionCsr`]: a rel table walked in one direction.
pub struct UnionMember {
    /// Index of the node table walked from.
    pub from: usize,
    /// Index of the node table reached.
    pub to: usize,
    /// Added to the table's rel offsets to give the rel ids the union
    /// reports: the caller gives each rel table its own range (and the
    /// same base to both directions of one table).
    pub rel_base: u64,
    /// The rel table's CSR in the walked direction.
    pub csr: StorageCsr,
    /// Skip self-loops: set on the backward copy of a rel table walked in
    /// both directions (undirected patterns), so that a self-loop is
    /// walked once, as openCypher matches it.
    pub skip_self_loops: bool,
}

/// Several stored CSRs (rel tables, each in one direction) over several node
/// tables as one graph: node table `i` owns the dense ids
/// `bases[i]..bases[i] + sizes[i]`. A rel id is its offset plus its
/// member's `rel_base`, so ids stay dense (parent trees pack them in 32
/// bits) and a rel walked in both directions keeps one id.
pub struct UnionCsr {
    bases: Vec<u64>,
    num_nodes: u64,
    num_edges: u64,
    members: Vec<UnionMember>,
}

impl UnionCsr {
    /// `sizes`: the row count of each node table, in node-space order.
    pub fn new(sizes: &[u64], members: Vec<UnionMember>) -> UnionCsr {
        let mut bases = Vec::with_capacity(sizes.len());
        let mut total = 0;
        for &n in sizes {
            bases.push(total);
            total += n;
        }
        let num_edges = members.iter().map(|m| m.csr.num_edges()).sum();
        UnionCsr {
            bases,
            num_nodes: total,
            num_edges,
            members,
        }
    }

    /// The dense id of `offset` in node table number `table`.
    pub fn global(&self, table: usize, offset: u64) -> u64 {
        self.bases[table] + offset
    }

    /// (node table number, offset) of dense id `id`.
    pub fn local(&self, id: u64) -> (usize, u64) {
        let t = self.bases.partition_point(|&b| b <= id).saturating_sub(1);
        (t, id - self.bases[t])
    }
}

impl Graph for UnionCsr {
    type Scratch = StorageScratch;

    fn num_nodes(&self) -> u64 {
        self.num_nodes
    }

    fn num_edges(&self) -> u64 {
        self.num_edges
    }

    fn degree(&self, node: u64, s: &mut StorageScratch) -> u64 {
        let (t, local) = self.local(node);
        self.members
            .iter()
            .filter(|m| m.from == t && local < m.csr.num_nodes())
            .map(|m| m.csr.degree(local, s))
            .sum()
    }

    #[inline]
    fn neighbors<F: FnMut(u64, u64)>(&self, node: u64, s: &mut StorageScratch, mut f: F) {
        let (t, local) = self.local(node);
        for m in &self.members {
            if m.from != t || local >= m.csr.num_nodes() {
                continue;
            }
            let (base, rel_base) = (self.bases[m.to], m.rel_base);
            if m.skip_self_loops && m.from == m.to {
                m.csr.neighbors(local, s, |n, r| {
                    if n != local {
                        f(base + n, rel_base + r)
                    }
                });
            } else {
                m.csr.neighbors(local, s, |n, r| f(base + n, rel_base + r));
            }
        }
    }

    #[inline]
    fn neighbor_nodes<F: FnMut(u64)>(&self, node: u64, s: &mut StorageScratch, mut f: F) {
        let (t, local) = self.local(node);
        for m in &self.members {
            if m.from != t || local >= m.csr.num_nodes() {
                continue;
            }
            let base = self.bases[m.to];
            if m.skip_self_loops && m.from == m.to {
                m.csr.neighbor_nodes(local, s, |n| {
                    if n != local {
                        f(base + n)
                    }
                });
            } else {
                m.csr.neighbor_nodes(local, s, |n| f(base + n));
            }
        }
    }
}
