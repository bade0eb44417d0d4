//! Stored node tables: rows split into node groups of `NODE_GROUP_SIZE`, one
//! column chunk per property per group, plus the primary-key index.

use std::collections::BTreeMap;
use std::sync::Arc;

use kith_catalog::PropertyId;
use kith_common::codec::{Decoder, Encoder};
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{Error, Result, Value, ValueVector};
use kith_pager::Pager;

use crate::column::{ColumnChunk, PageRun, PinnedColumn};
use crate::pk_delta::PkDelta;
use crate::pk_index::{IndexKey, KeyKind, PinnedPkIndex, PkIndex};

#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroupData {
    pub num_rows: u64,
    /// One chunk per entry of the table's `column_ids`.
    pub columns: Vec<ColumnChunk>,
    /// Rows of this group that are deleted (None: none). A deleted row
    /// keeps its offset until an insert reuses it; scans must skip it (see
    /// [`NodeTableData::is_deleted`]). Its column values stay until a
    /// checkpoint clears them (see `free`).
    pub deleted: Option<DeletedMask>,
    /// The deleted rows a checkpoint has cleared (a subset of `deleted`):
    /// every value, the primary key included, is NULL, no index entry and
    /// no rel (the checkpoint folded their tombstones away) points at them,
    /// so an insert may take their offsets (`NodeTableData::take_free`).
    /// Rows deleted since are in `deleted` only.
    pub free: Option<DeletedMask>,
}

impl NodeGroupData {
    /// Deleted rows whose values a checkpoint has not cleared yet.
    pub fn uncleared(&self) -> u64 {
        let deleted = self.deleted.as_ref().map_or(0, |m| m.count);
        deleted - self.free.as_ref().map_or(0, |m| m.count)
    }
}

/// A per-node-group deletion bitmap (bit set = row deleted), kept in the
/// metadata (sparse list or bitmap, whichever is smaller) so that deleting rows
/// never rewrites column chunks. Words beyond the end read as "not deleted".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeletedMask {
    pub words: Arc<Vec<u64>>,
    pub count: u64,
}

impl DeletedMask {
    #[inline]
    pub fn contains(&self, local: u64) -> bool {
        self.words
            .get((local / 64) as usize)
            .is_some_and(|w| (w >> (local % 64)) & 1 == 1)
    }

    /// The bitmap words (bit set = deleted); may be shorter than the group.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    pub fn insert(&mut self, local: u64) -> bool {
        if self.contains(local) {
            return false;
        }
        let words = Arc::make_mut(&mut self.words);
        let w = (local / 64) as usize;
        if words.len() <= w {
            words.resize(w + 1, 0);
        }
        words[w] |= 1 << (local % 64);
        self.count += 1;
        true
    }

    pub fn remove(&mut self, local: u64) -> bool {
        if !self.contains(local) {
            return false;
        }
        Arc::make_mut(&mut self.words)[(local / 64) as usize] &= !(1 << (local % 64));
        self.count -= 1;
        true
    }

    /// The set rows, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as u64;
                    bits &= bits - 1;
                    wi as u64 * 64 + b
                })
            })
        })
    }

    fn encode(&self, e: &mut Encoder) {
        // Sparse list when it is smaller than the bitmap.
        if self.count * 4 < self.words.len() as u64 * 8 {
            e.u8(1);
            e.u64(self.count);
            for local in self.iter() {
                e.u32(local as u32);
            }
        } else {
            e.u8(2);
            e.u64(self.words.len() as u64);
            for &w in self.words.iter() {
                e.u64(w);
            }
        }
    }

    fn decode(d: &mut Decoder<'_>) -> Result<Option<DeletedMask>> {
        let mut mask = DeletedMask::default();
        match d.u8()? {
            0 => return Ok(None),
            1 => {
                let n = d.count(4)?;
                for _ in 0..n {
                    mask.insert(d.u32()? as u64);
                }
            }
            2 => {
                let n = d.count(8)?;
                let mut words = Vec::with_capacity(n);
                for _ in 0..n {
                    words.push(d.u64()?);
                }
                mask.count = words.iter().map(|w| w.count_ones() as u64).sum();
                mask.words = Arc::new(words);
            }
            t => return Err(Error::corruption(format!("unknown deletion mask kind {t}"))),
        }
        Ok(Some(mask))
    }
}

/// A primary key as the insert delta of the PK index keeps it (exact, so
/// string keys need no confirmation against the column).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PkKey {
    /// The [`IndexKey`] bits of an integer-like key.
    Int(u64),
    Str(String),
}

impl PkKey {
    /// The delta key of `v` for an index of `kind` (None: no node can have it).
    pub fn of_value(v: &Value, kind: KeyKind) -> Option<PkKey> {
        match kind {
            KeyKind::StrHash => v.as_str().map(|s| PkKey::Str(s.to_string())),
            KeyKind::Int => IndexKey::of_value(v, kind).map(|k| PkKey::Int(k.0)),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeTableData {
    pub num_rows: u64,
    /// The property each column holds, in storage order.
    pub column_ids: Vec<PropertyId>,
    /// Position in `column_ids` of the primary key.
    pub pk_column: usize,
    pub groups: Vec<NodeGroupData>,
    pub pk_index: Option<PkIndex>,
    /// Keys inserted since `pk_index` was last built (key -> offset). Lookups
    /// consult it first; it is folded into a rebuilt index when it grows past
    /// a threshold (see `write.rs`). Deleted rows are removed from it; base
    /// index entries of deleted rows are masked by the deletion bitmaps.
    pub pk_delta: PkDelta,
}

impl NodeTableData {
    pub fn empty(column_ids: Vec<PropertyId>, pk_column: usize) -> NodeTableData {
        NodeTableData {
            num_rows: 0,
            column_ids,
            pk_column,
            groups: Vec::new(),
            pk_index: None,
            pk_delta: PkDelta::default(),
        }
    }

    /// Whether row `offset` has been deleted (offsets beyond the table: false).
    #[inline]
    pub fn is_deleted(&self, offset: u64) -> bool {
        self.groups
            .get((offset / NODE_GROUP_SIZE) as usize)
            .and_then(|g| g.deleted.as_ref())
            .is_some_and(|m| m.contains(offset % NODE_GROUP_SIZE))
    }

    /// The deletion mask of node group `group` (None: no row deleted), for scans.
    pub fn deleted_mask(&self, group: usize) -> Option<&DeletedMask> {
        self.groups.get(group).and_then(|g| g.deleted.as_ref())
    }

    /// Number of deleted rows (their offsets stay allocated).
    pub fn num_deleted(&self) -> u64 {
        self.groups
            .iter()
            .filter_map(|g| g.deleted.as_ref())
            .map(|m| m.count)
            .sum()
    }

    /// Takes up to `n` free offsets (see [`NodeGroupData::free`]), lowest
    /// first, and marks them live; the caller writes every column of them.
    pub fn take_free(&mut self, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for (g, group) in self.groups.iter_mut().enumerate() {
            if out.len() == n {
                break;
            }
            let Some(free) = group.free.as_mut().filter(|m| m.count > 0) else {
                continue;
            };
            let taken: Vec<u64> = free.iter().take(n - out.len()).collect();
            for &local in &taken {
                free.remove(local);
                if let Some(deleted) = group.deleted.as_mut() {
                    deleted.remove(local);
                }
                out.push(g as u64 * NODE_GROUP_SIZE + local);
            }
            // Empty masks are absent, as decoding gives them.
            for mask in [&mut group.free, &mut group.deleted] {
                if mask.as_ref().is_some_and(|m| m.count == 0) {
                    *mask = None;
                }
            }
        }
        out
    }

    /// Number of rows that are not deleted.
    pub fn num_live_rows(&self) -> u64 {
        self.num_rows - self.num_deleted()
    }

    pub fn column_of(&self, property: PropertyId) -> Option<usize> {
        self.column_ids.iter().position(|p| *p == property)
    }

    pub fn pages(&self, out: &mut Vec<PageRun>) {
        for g in &self.groups {
            for c in &g.columns {
                c.pages(out);
            }
        }
        if let Some(idx) = &self.pk_index {
            if idx.slots.count > 0 {
                out.push(idx.slots);
            }
        }
    }

    /// Reads `count` values of column `column` starting at row `start` (which
    /// must lie within one node group) into `out[out_pos..]`. Convenience for
    /// cold paths; scans pin chunks once through [`NodeTableData::pin_column`].
    pub fn read_column(
        &self,
        pager: &Arc<Pager>,
        column: usize,
        start: u64,
        count: usize,
        out: &mut ValueVector,
        out_pos: usize,
    ) -> Result<()> {
        let group = (start / NODE_GROUP_SIZE) as usize;
        let pinned = self.pin_column(pager, group, column)?;
        pinned.read(start % NODE_GROUP_SIZE, count, out, out_pos)
    }

    pub fn pin_column(
        &self,
        pager: &Arc<Pager>,
        group: usize,
        column: usize,
    ) -> Result<PinnedColumn> {
        let g = self
            .groups
            .get(group)
            .ok_or_else(|| Error::internal(format!("node group {group} out of range")))?;
        g.columns
            .get(column)
            .ok_or_else(|| Error::internal(format!("column {column} out of range")))?
            .pin(pager)
    }

    /// A lookup handle over the primary-key index.
    pub fn pk_lookup(&self, pager: &Arc<Pager>) -> Result<PkLookup> {
        Ok(PkLookup {
            kind: self.pk_index.as_ref().map(|i| i.kind),
            index: match &self.pk_index {
                Some(idx) => Some((idx.kind, idx.pin(pager)?)),
                None => None,
            },
            table: self.clone(),
            pager: Arc::clone(pager),
            pinned_groups: Vec::new(),
        })
    }

    pub fn encode(&self, e: &mut Encoder) {
        e.u64(self.num_rows);
        e.u64(self.column_ids.len() as u64);
        for p in &self.column_ids {
            e.u32(p.0);
        }
        e.u32(self.pk_column as u32);
        e.u64(self.groups.len() as u64);
        for g in &self.groups {
            e.u64(g.num_rows);
            for c in &g.columns {
                c.encode(e);
            }
            for mask in [&g.deleted, &g.free] {
                match mask {
                    Some(m) if m.count > 0 => m.encode(e),
                    _ => e.u8(0),
                }
            }
        }
        match &self.pk_index {
            Some(idx) => {
                e.u8(1);
                idx.encode(e);
            }
            None => e.u8(0),
        }
        e.u64(self.pk_delta.len() as u64);
        self.pk_delta.for_each(|k, off| {
            match k {
                PkKey::Int(i) => {
                    e.u8(0);
                    e.u64(*i);
                }
                PkKey::Str(s) => {
                    e.u8(1);
                    e.str(s);
                }
            }
            e.u64(off);
        });
    }

    /// Decodes metadata written with metadata format `format` (1: before
    /// deletions and the PK delta existed; 3 and 4: a count of cleared rows,
    /// whose primary keys were kept, so they are cleared again and not free;
    /// 5: free rows).
    pub fn decode(d: &mut Decoder<'_>, format: u32) -> Result<NodeTableData> {
        let num_rows = d.u64()?;
        let ncols = d.count(4)?;
        let mut column_ids = Vec::with_capacity(ncols);
        for _ in 0..ncols {
            column_ids.push(PropertyId(d.u32()?));
        }
        let pk_column = d.u32()? as usize;
        let ngroups = d.count(8)?;
        let mut groups = Vec::with_capacity(ngroups);
        for _ in 0..ngroups {
            let rows = d.u64()?;
            let mut columns = Vec::with_capacity(ncols);
            for _ in 0..ncols {
                columns.push(ColumnChunk::decode(d)?);
            }
            let deleted = if format >= 2 {
                DeletedMask::decode(d)?
            } else {
                None
            };
            let free = match format {
                5.. => DeletedMask::decode(d)?,
                3 | 4 => {
                    d.u64()?;
                    None
                }
                _ => None,
            };
            groups.push(NodeGroupData {
                num_rows: rows,
                columns,
                deleted,
                free,
            });
        }
        let pk_index = match d.u8()? {
            0 => None,
            _ => Some(PkIndex::decode(d)?),
        };
        let mut pk_delta = BTreeMap::new();
        if format >= 2 {
            let n = d.count(9)?;
            for _ in 0..n {
                let key = match d.u8()? {
                    0 => PkKey::Int(d.u64()?),
                    1 => PkKey::Str(d.str()?),
                    t => return Err(Error::corruption(format!("unknown PK delta key kind {t}"))),
                };
                pk_delta.insert(key, d.u64()?);
            }
        }
        Ok(NodeTableData {
            num_rows,
            column_ids,
            pk_column,
            groups,
            pk_index,
            pk_delta: pk_delta.into_iter().collect(),
        })
    }
}

/// Primary-key lookups against one node table (used by rel COPY and by
/// binders of `{id: ...}` lookups). Not shared between threads: each thread
/// makes its own.
pub struct PkLookup {
    /// Key kind of the table's index (None: no index was ever built).
    kind: Option<KeyKind>,
    index: Option<(KeyKind, PinnedPkIndex)>,
    table: NodeTableData,
    pager: Arc<Pager>,
    /// Pinned PK column per node group, for confirming string keys.
    pinned_groups: Vec<Option<PinnedColumn>>,
}

impl PkLookup {
    pub fn key_kind(&self) -> Option<KeyKind> {
        self.kind
    }

    /// Offset of the (live) node whose primary key equals `key`.
    pub fn lookup(&mut self, key: &Value) -> Result<Option<u64>> {
        if let Some(kind) = self.kind {
            if !self.table.pk_delta.is_empty() {
                if let Some(k) = PkKey::of_value(key, kind) {
                    if let Some(off) = self.table.pk_delta.get(&k) {
                        return Ok(Some(off));
                    }
                }
            }
        }
        let Some((kind, index)) = &self.index else {
            return Ok(None);
        };
        let table = &self.table;
        let Some(ikey) = IndexKey::of_value(key, *kind) else {
            return Ok(None);
        };
        if *kind == KeyKind::Int {
            return Ok(index.lookup(ikey, |off| !table.is_deleted(off)));
        }
        let Some(wanted) = key.as_str() else {
            return Ok(None);
        };
        let mut failure = None;
        let pager = &self.pager;
        let pinned_groups = &mut self.pinned_groups;
        let found = index.lookup(ikey, |offset| {
            if table.is_deleted(offset) {
                return false;
            }
            let group = (offset / NODE_GROUP_SIZE) as usize;
            if pinned_groups.len() <= group {
                pinned_groups.resize_with(group + 1, || None);
            }
            if pinned_groups[group].is_none() {
                match table.pin_column(pager, group, table.pk_column) {
                    Ok(p) => pinned_groups[group] = Some(p),
                    Err(e) => {
                        failure = Some(e);
                        return false;
                    }
                }
            }
            let Some(col) = &pinned_groups[group] else {
                return false;
            };
            let mut v = ValueVector::new(kith_common::LogicalType::String, 1);
            if let Err(e) = col.read(offset % NODE_GROUP_SIZE, 1, &mut v, 0) {
                failure = Some(e);
                return false;
            }
            v.get_value(0).as_str() == Some(wanted)
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(found),
        }
    }
}
