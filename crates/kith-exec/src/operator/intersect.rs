//! Intersect: binds a new node that several rels tie to already-bound nodes
//! (the closing node of a triangle, a 4-cycle, a clique) as the
//! intersection of their neighbour lists, the step of a worst-case-optimal
//! join. Extending one rel and filtering on the others would read every
//! neighbour of every open path; here one list (the *driver*, read from the
//! tuple's newest node) is scanned and each entry probed in the other lists,
//! which are marked once per distinct node they are read from, so a list
//! from an outer, flat node is marked once for all the tuples below it.
//!
//! Like an extend, it flattens the input group one tuple at a time and
//! writes the matches (the node, and the rel ids wanted downstream) as a new
//! unflat group. A node reached through several rels of one list (parallel
//! rels) matches once per combination of rels, as a join of the rels would,
//! less the combinations that break relationship isomorphism.

use std::sync::Arc;

use hashbrown::HashMap;
use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{InternalId, Result, TableId, VectorData};
use kith_storage::RelTableData;

use super::csr_pins::CsrPins;
use super::extend::Extend;
use super::flat_cursor::FlatCursor;
use super::{Operator, Pos, QueryContext};
use crate::physical::step::{PhysicalStep, WorkerChain};
use crate::result_set::ResultSet;

/// One rel of the intersection: the neighbours of node `from` in one CSR.
#[derive(Clone)]
pub struct IntersectRel {
    pub rel_table: TableId,
    pub data: Arc<RelTableData>,
    pub fwd: bool,
    /// The bound node (flat when this step runs).
    pub from: Pos,
    /// The output vector of this rel's id, when read downstream.
    pub rel_id: Option<usize>,
}

/// Above this many nodes a list is marked in a hash map instead of dense
/// per-node arrays (16 bytes per node and list, per worker).
const DENSE_MARK_LIMIT: u64 = 1 << 21;

/// The entries of one neighbour list, by neighbour: how many rels lead
/// there and the first one's id.
enum Marks {
    Dense {
        epoch: u32,
        stamp: Vec<u32>,
        count: Vec<u32>,
        first: Vec<u64>,
    },
    Sparse(HashMap<u64, (u32, u64)>),
}

impl Marks {
    fn new(num_nodes: u64) -> Marks {
        if num_nodes <= DENSE_MARK_LIMIT {
            let n = num_nodes as usize;
            Marks::Dense {
                epoch: 0,
                stamp: vec![0; n],
                count: vec![0; n],
                first: vec![0; n],
            }
        } else {
            Marks::Sparse(HashMap::new())
        }
    }

    fn clear(&mut self) {
        match self {
            Marks::Dense { epoch, stamp, .. } => {
                *epoch = epoch.wrapping_add(1);
                if *epoch == 0 {
                    stamp.fill(0);
                    *epoch = 1;
                }
            }
            Marks::Sparse(m) => m.clear(),
        }
    }

    #[inline]
    fn add(&mut self, nbr: u64, rel: u64) {
        match self {
            Marks::Dense {
                epoch,
                stamp,
                count,
                first,
            } => {
                let i = nbr as usize;
                if i >= stamp.len() {
                    // A neighbour beyond the table size the marks were made
                    // for (cannot happen on one version; stay correct anyway).
                    stamp.resize(i + 1, 0);
                    count.resize(i + 1, 0);
                    first.resize(i + 1, 0);
                }
                if stamp[i] == *epoch {
                    count[i] += 1;
                } else {
                    stamp[i] = *epoch;
                    count[i] = 1;
                    first[i] = rel;
                }
            }
            Marks::Sparse(m) => {
                m.entry(nbr).and_modify(|e| e.0 += 1).or_insert((1, rel));
            }
        }
    }

    /// (number of rels to `nbr`, the first one's id).
    #[inline]
    fn get(&self, nbr: u64) -> Option<(u32, u64)> {
        match self {
            Marks::Dense {
                epoch,
                stamp,
                count,
                first,
            } => {
                let i = nbr as usize;
                (stamp.get(i) == Some(epoch)).then(|| (count[i], first[i]))
            }
            Marks::Sparse(m) => m.get(&nbr).copied(),
        }
    }
}

/// A list's reading state.
struct List {
    rel: IntersectRel,
    pins: CsrPins,
    marks: Option<Marks>,
    /// The node the marks were made from.
    marked_from: Option<InternalId>,
    /// The group and CSR position runs of the current tuple's node.
    group: usize,
    runs: Vec<(u64, u64)>,
}

/// What an intersect step reads and writes, resolved against the layout.
#[derive(Clone)]
pub struct IntersectSpec {
    pub rels: Vec<IntersectRel>,
    /// The output vector of the bound node's id.
    pub to: usize,
    pub to_table: TableId,
    /// Rows of `to_table` (the size of the dense marks).
    pub to_nodes: u64,
    pub input_chunk: usize,
    pub output_chunk: usize,
    /// Pairs of `rels` (same rel table) whose rels must differ.
    pub distinct: Vec<(usize, usize)>,
    /// A rel of `rels` that must differ from an earlier rel (same table),
    /// by the position of that rel's id.
    pub exclude: Vec<(usize, Pos)>,
}

pub struct Intersect {
    child: Box<dyn Operator>,
    ctx: Arc<QueryContext>,
    lists: Vec<List>,
    /// The list scanned per tuple (the others are probed).
    driver: usize,
    to_table: TableId,
    to_nodes: u64,
    output_chunk: usize,
    to: usize,
    /// See [`IntersectSpec`].
    distinct: Vec<(usize, usize)>,
    exclude: Vec<(usize, Pos)>,
    // Per-tuple state.
    input: FlatCursor,
    excluded: Vec<(usize, Option<u64>)>,
    /// The matches of the current tuple: a node each, and (when rel ids are
    /// read or tested) one rel id per list, flattened.
    matches: Vec<u64>,
    match_rels: Vec<u64>,
    with_rels: bool,
    cursor: usize,
    nbrs: Vec<u64>,
    rels: Vec<u64>,
    combo: Vec<u64>,
    probe: Vec<u64>,
    froms: Vec<InternalId>,
    choices: Vec<Vec<u64>>,
}

impl Intersect {
    pub fn new(child: Box<dyn Operator>, ctx: Arc<QueryContext>, spec: IntersectSpec) -> Intersect {
        let IntersectSpec {
            rels,
            to,
            to_table,
            to_nodes,
            input_chunk,
            output_chunk,
            distinct,
            exclude,
        } = spec;
        // The driver is read from the input group's node, which changes
        // with every tuple; the others are marked once per node.
        let driver = rels
            .iter()
            .position(|r| r.from.0 == input_chunk)
            .unwrap_or(0);
        let k = rels.len();
        let with_rels =
            !distinct.is_empty() || !exclude.is_empty() || rels.iter().any(|r| r.rel_id.is_some());
        let lists = rels
            .into_iter()
            .map(|rel| List {
                pins: CsrPins::new(
                    Arc::clone(&rel.data),
                    rel.fwd,
                    Vec::new(),
                    Arc::clone(&ctx.csr_pins),
                ),
                rel,
                marks: None,
                marked_from: None,
                group: 0,
                runs: Vec::new(),
            })
            .collect();
        Intersect {
            child,
            ctx,
            lists,
            driver,
            to_table,
            to_nodes,
            output_chunk,
            to,
            distinct,
            exclude,
            input: FlatCursor::new(input_chunk),
            excluded: Vec::new(),
            matches: Vec::new(),
            match_rels: Vec::new(),
            with_rels,
            cursor: 0,
            nbrs: vec![0; VECTOR_CAPACITY],
            rels: vec![0; VECTOR_CAPACITY],
            combo: Vec::new(),
            probe: vec![0; k],
            froms: Vec::with_capacity(k),
            choices: Vec::new(),
        }
    }

    /// Marks list `j`'s neighbours of node `from` (unless already marked).
    fn mark(&mut self, j: usize, from: InternalId) -> Result<()> {
        let list = &mut self.lists[j];
        list.group = list
            .pins
            .runs(&self.ctx.pager, from.offset(), &mut list.runs)?;
        if list.marked_from == Some(from) {
            return Ok(());
        }
        let marks = list.marks.get_or_insert_with(|| Marks::new(self.to_nodes));
        marks.clear();
        for &(mut at, end) in &list.runs {
            let pinned = list.pins.group(list.group)?;
            while at < end {
                let n = ((end - at) as usize).min(VECTOR_CAPACITY);
                pinned.neighbors()?.read_u64s(at, n, &mut self.nbrs[..n]);
                pinned.rel_ids()?.read_u64s(at, n, &mut self.rels[..n]);
                for (&x, &r) in self.nbrs[..n].iter().zip(&self.rels[..n]) {
                    marks.add(x, r);
                }
                at += n as u64;
            }
        }
        list.marked_from = Some(from);
        Ok(())
    }

    /// Whether the rels `combo` (one per list) keep relationship isomorphism.
    fn valid(&self, combo: &[u64]) -> bool {
        self.distinct.iter().all(|&(i, j)| combo[i] != combo[j])
            && self.excluded.iter().all(|&(i, id)| id != Some(combo[i]))
    }

    /// The rels of list `j` that lead to `x` (parallel rels).
    fn rels_to(&self, j: usize, x: u64, out: &mut Vec<u64>) -> Result<()> {
        out.clear();
        let list = &self.lists[j];
        if list.runs.is_empty() {
            return Ok(());
        }
        let pinned = list.pins.group(list.group)?;
        let (neighbors, rel_ids) = (pinned.neighbors()?, pinned.rel_ids()?);
        for at in list.runs.iter().flat_map(|&(s, e)| s..e) {
            let mut one = [0u64; 1];
            neighbors.read_u64s(at, 1, &mut one);
            if one[0] == x {
                rel_ids.read_u64s(at, 1, &mut one);
                out.push(one[0]);
            }
        }
        Ok(())
    }

    /// Every valid combination of rels to `x`, given the driver's rel.
    fn push_combinations(&mut self, x: u64, driver_rel: u64) -> Result<()> {
        let k = self.lists.len();
        let mut choices = std::mem::take(&mut self.choices);
        choices.resize_with(k, Vec::new);
        for (j, c) in choices.iter_mut().enumerate() {
            if j == self.driver {
                c.clear();
                c.push(driver_rel);
            } else {
                self.rels_to(j, x, c)?;
            }
        }
        // An odometer over the choices.
        let mut at = vec![0usize; k];
        let mut combo = std::mem::take(&mut self.combo);
        loop {
            combo.clear();
            combo.extend((0..k).map(|j| choices[j][at[j]]));
            if self.valid(&combo) {
                self.matches.push(x);
                self.match_rels.extend_from_slice(&combo);
            }
            let mut j = 0;
            while j < k {
                at[j] += 1;
                if at[j] < choices[j].len() {
                    break;
                }
                at[j] = 0;
                j += 1;
            }
            if j == k {
                break;
            }
        }
        self.combo = combo;
        self.choices = choices;
        Ok(())
    }

    /// The matches of the current (flattened) tuple.
    fn compute(&mut self, rs: &ResultSet) -> Result<()> {
        self.matches.clear();
        self.match_rels.clear();
        self.cursor = 0;
        // A NULL node (OPTIONAL MATCH) matches nothing.
        let mut froms = std::mem::take(&mut self.froms);
        froms.clear();
        for list in &self.lists {
            match Extend::flat_id(rs, list.rel.from)? {
                Some(id) => froms.push(id),
                None => {
                    self.froms = froms;
                    return Ok(());
                }
            }
        }
        self.excluded.clear();
        for &(i, pos) in &self.exclude {
            let id = Extend::flat_id(rs, pos)?;
            let table = self.lists[i].rel.rel_table;
            self.excluded
                .push((i, id.filter(|r| r.table() == table).map(|r| r.offset())));
        }
        for (j, &from) in froms.iter().enumerate() {
            if j != self.driver {
                self.mark(j, from)?;
            }
        }
        let d = self.driver;
        let (group, runs) = {
            let list = &mut self.lists[d];
            list.group = list
                .pins
                .runs(&self.ctx.pager, froms[d].offset(), &mut list.runs)?;
            (list.group, std::mem::take(&mut list.runs))
        };
        self.froms = froms;
        let mut nbrs = std::mem::take(&mut self.nbrs);
        let mut rels = std::mem::take(&mut self.rels);
        // One rel per list for the entry being probed.
        let mut combo = std::mem::take(&mut self.probe);
        let result = (|| {
            for &(mut at, end) in &runs {
                while at < end {
                    let n = ((end - at) as usize).min(VECTOR_CAPACITY);
                    {
                        let pinned = self.lists[d].pins.group(group)?;
                        pinned.neighbors()?.read_u64s(at, n, &mut nbrs[..n]);
                        pinned.rel_ids()?.read_u64s(at, n, &mut rels[..n]);
                    }
                    'entry: for (&x, &r) in nbrs[..n].iter().zip(&rels[..n]) {
                        let mut parallel = false;
                        for (j, list) in self.lists.iter().enumerate() {
                            if j == d {
                                combo[j] = r;
                                continue;
                            }
                            let Some((count, first)) = list.marks.as_ref().and_then(|m| m.get(x))
                            else {
                                continue 'entry;
                            };
                            parallel |= count > 1;
                            combo[j] = first;
                        }
                        if parallel {
                            self.push_combinations(x, r)?;
                        } else if !self.with_rels {
                            self.matches.push(x);
                        } else if self.valid(&combo) {
                            self.matches.push(x);
                            self.match_rels.extend_from_slice(&combo);
                        }
                    }
                    at += n as u64;
                }
            }
            Ok(())
        })();
        self.lists[d].runs = runs;
        self.nbrs = nbrs;
        self.rels = rels;
        self.probe = combo;
        result
    }

    fn emit(&mut self, rs: &mut ResultSet) {
        let k = self.lists.len();
        let n = (self.matches.len() - self.cursor).min(VECTOR_CAPACITY);
        let range = self.cursor..self.cursor + n;
        let out = &mut rs.chunks[self.output_chunk];
        let v = &mut out.vectors[self.to];
        v.reset(n);
        if let VectorData::Id(ids) = &mut v.data {
            for (dst, &x) in ids.iter_mut().zip(&self.matches[range.clone()]) {
                *dst = InternalId::new(self.to_table, x);
            }
        }
        for (j, list) in self.lists.iter().enumerate() {
            let Some(vector) = list.rel.rel_id else {
                continue;
            };
            let v = &mut out.vectors[vector];
            v.reset(n);
            if let VectorData::Id(ids) = &mut v.data {
                for (i, dst) in range.clone().zip(ids.iter_mut()) {
                    *dst = InternalId::new(list.rel.rel_table, self.match_rels[i * k + j]);
                }
            }
        }
        out.state.reset(n);
        self.cursor += n;
    }
}

impl Operator for Intersect {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        loop {
            if self.cursor < self.matches.len() {
                self.emit(rs);
                return Ok(true);
            }
            if !self
                .input
                .advance(self.child.as_mut(), rs, &self.ctx.cancel)?
            {
                return Ok(false);
            }
            self.compute(rs)?;
        }
    }
}

impl PhysicalStep for IntersectSpec {
    fn instantiate(
        &self,
        child: Box<dyn Operator>,
        chain: &mut WorkerChain<'_>,
    ) -> Result<Box<dyn Operator>> {
        Ok(Box::new(Intersect::new(
            child,
            Arc::clone(chain.ctx),
            self.clone(),
        )))
    }

    fn expands(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both mark layouts count rels per neighbour, keep the first rel id,
    /// and forget everything on `clear` (the dense one by its epoch, also
    /// across the epoch's wrap-around).
    #[test]
    fn marks_count_and_clear() {
        for num_nodes in [16, DENSE_MARK_LIMIT + 1] {
            let mut m = Marks::new(num_nodes);
            assert_eq!(matches!(m, Marks::Sparse(_)), num_nodes > DENSE_MARK_LIMIT);
            m.clear();
            for (nbr, rel) in [(3, 30), (5, 50), (3, 31), (3, 32)] {
                m.add(nbr, rel);
            }
            assert_eq!(m.get(3), Some((3, 30)));
            assert_eq!(m.get(5), Some((1, 50)));
            assert_eq!(m.get(4), None);
            m.clear();
            assert_eq!(m.get(3), None);
            m.add(5, 51);
            assert_eq!(m.get(5), Some((1, 51)));
        }
        let mut m = Marks::new(8);
        if let Marks::Dense { epoch, .. } = &mut m {
            *epoch = u32::MAX - 1;
        }
        m.clear();
        m.add(2, 7);
        m.clear(); // wraps: every stamp is reset
        assert_eq!(m.get(2), None);
        // A neighbour beyond the size the marks were made for.
        m.add(20, 9);
        assert_eq!(m.get(20), Some((1, 9)));
    }
}
