//! The CSR groups an operator reads, pinned once: a worker's [`CsrPins`]
//! takes each group from the pipeline's [`SharedCsrPins`] (pinned by the
//! first worker to read it) and keeps it for its life, so the inner loops
//! read plain arrays with no buffer-manager call per node, and no page is
//! pinned once per worker.

use std::collections::HashMap;
use std::sync::Arc;

use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{InternalId, Result};
use kith_pager::Pager;
use kith_storage::{PinnedCsrGroup, RelDirection, RelTableData};
use parking_lot::Mutex;

/// The CSR groups of a pipeline (or of any set of operators sharing
/// them), each pinned by the first worker to read it and then shared: a
/// worker pinning a group for itself pinned the group's pages once per
/// worker, an atomic pin and unpin of each page (2 x 2,300 per worker for
/// a 2 M-rel group whose neighbours it read). The pins are let go when the
/// last worker's [`CsrPins`] and this are dropped.
#[derive(Default)]
pub struct SharedCsrPins {
    groups: Mutex<HashMap<GroupKey, SharedGroup>>,
}

/// A pinned group and the rel table data it was pinned from, held so that
/// the key's address is not reused while the entry lives.
struct SharedGroup {
    _data: Arc<RelTableData>,
    csr: Arc<PinnedCsrGroup>,
}

/// One pinned group: its rel table's data (by address), its direction and
/// group, and the rel property columns pinned with it.
#[derive(PartialEq, Eq, Hash)]
struct GroupKey {
    data: usize,
    fwd: bool,
    group: usize,
    columns: Vec<usize>,
}

impl SharedCsrPins {
    /// Group `group` of `data` in `dir` with `columns`, pinned on the first
    /// call for it.
    fn group(
        &self,
        (data, dir, columns): (&Arc<RelTableData>, RelDirection, &[usize]),
        group: usize,
        pager: &Arc<Pager>,
    ) -> Result<Option<Arc<PinnedCsrGroup>>> {
        let Some(csr_group) = data.csr(dir).groups.get(group) else {
            return Ok(None);
        };
        let key = GroupKey {
            data: Arc::as_ptr(data) as usize,
            fwd: dir == RelDirection::Fwd,
            group,
            columns: columns.to_vec(),
        };
        // Pinned under the lock: a second worker waits for the pin rather
        // than making its own.
        let mut groups = self.groups.lock();
        if let Some(p) = groups.get(&key) {
            return Ok(Some(Arc::clone(&p.csr)));
        }
        let pinned = Arc::new(csr_group.pin(pager, columns)?);
        let entry = SharedGroup {
            _data: Arc::clone(data),
            csr: Arc::clone(&pinned),
        };
        groups.insert(key, entry);
        Ok(Some(pinned))
    }

    /// Lets go of every group (the operators holding one keep it).
    pub fn clear(&self) {
        self.groups.lock().clear();
    }
}

/// Where a [`CsrPins`] reads its groups from.
struct CsrSource {
    data: Arc<RelTableData>,
    dir: RelDirection,
    /// Storage columns of the rel properties pinned with each group.
    columns: Vec<usize>,
    shared: Arc<SharedCsrPins>,
}

/// The CSR groups of one rel table in one direction that one operator
/// reads, each taken from the [`SharedCsrPins`] the first time a node of it
/// is read and kept for the operator's life: the inner loops then read
/// plain arrays, with no buffer-manager call per node.
pub struct CsrPins {
    source: CsrSource,
    pinned: Vec<Option<PinnedGroup>>,
    /// Scratch of [`CsrPins::degrees_into`]: the offsets decoded for a run.
    run_offsets: Vec<u64>,
}

/// A pinned CSR group and, once it has been sought often enough, its
/// offsets decoded from their bit-packed form (a node the group masks, see
/// [`PinnedCsrGroup::is_masked`], still reads an empty main range).
struct PinnedGroup {
    csr: Arc<PinnedCsrGroup>,
    seeks: u64,
    offsets: Option<Vec<u64>>,
}

/// A group's offsets are decoded once it has been sought one time per 64 of
/// its nodes (and at least this often): decoding a node's offset costs
/// about a hundredth of a seek in the bit-packed column, so a query that
/// seeks a group often (every middle node of a 2-hop pattern, say) pays for
/// the decode many times over, and one seeking a handful of nodes never
/// decodes. (At one per 16, the two workers of a 2-hop count over 9.5 % of
/// R-MAT 16's nodes each stayed below the threshold and sought every node
/// in the bit-packed column: 0.44 / 0.27 ms at 1 / 2 threads, against
/// 0.35 / 0.235 ms at one per 64, before counting extends read a batch's
/// degrees through [`CsrPins::degrees_into`].)
const DECODE_AFTER_SEEKS: u64 = 8;

/// The offsets of `csr`'s main part, decoded a block of 64 at a time into
/// a vector that is never zeroed first (zeroing 512 KiB for a group of
/// 64 Ki nodes cost as much as the decode).
fn decode_offsets(csr: &PinnedCsrGroup) -> Vec<u64> {
    const BLOCK: usize = 64;
    let n = csr.num_nodes as usize + 1;
    let mut offsets = Vec::with_capacity(n);
    let mut block = [0u64; BLOCK];
    for start in (0..n).step_by(BLOCK) {
        let k = (n - start).min(BLOCK);
        csr.offsets.read_u64s(start as u64, k, &mut block[..k]);
        offsets.extend_from_slice(&block[..k]);
    }
    offsets
}

impl CsrPins {
    pub fn new(
        data: Arc<RelTableData>,
        fwd: bool,
        columns: Vec<usize>,
        shared: Arc<SharedCsrPins>,
    ) -> CsrPins {
        CsrPins {
            source: CsrSource {
                data,
                dir: if fwd {
                    RelDirection::Fwd
                } else {
                    RelDirection::Bwd
                },
                columns,
                shared,
            },
            pinned: Vec::new(),
            run_offsets: Vec::new(),
        }
    }

    /// The group and CSR positions of node `offset`'s rels (an empty range
    /// for a node added after the rels were built).
    #[inline]
    pub fn range(&mut self, pager: &Arc<Pager>, offset: u64) -> Result<(usize, u64, u64)> {
        let group = (offset / NODE_GROUP_SIZE) as usize;
        let local = offset % NODE_GROUP_SIZE;
        if let Some(Some(PinnedGroup {
            csr,
            offsets: Some(offsets),
            ..
        })) = self.pinned.get(group)
        {
            if local >= csr.num_nodes || csr.is_masked(local) {
                return Ok((group, 0, 0));
            }
            let l = local as usize;
            return Ok((group, offsets[l], offsets[l + 1]));
        }
        self.range_pinning(pager, group, local)
    }

    /// Group `group`, pinned on first use; None past the CSR's groups.
    /// Borrows only the pins, so the caller may use its scratch meanwhile.
    fn pinned_group<'a>(
        source: &CsrSource,
        pinned: &'a mut Vec<Option<PinnedGroup>>,
        pager: &Arc<Pager>,
        group: usize,
    ) -> Result<Option<&'a mut PinnedGroup>> {
        if let Some(Some(_)) = pinned.get(group) {
            return Ok(pinned[group].as_mut());
        }
        let from = (&source.data, source.dir, &source.columns[..]);
        let Some(csr) = source.shared.group(from, group, pager)? else {
            return Ok(None);
        };
        if pinned.len() <= group {
            pinned.resize_with(group + 1, || None);
        }
        Ok(Some(pinned[group].insert(PinnedGroup {
            csr,
            seeks: 0,
            offsets: None,
        })))
    }

    /// [`CsrPins::range`] in a group whose offsets are not decoded yet
    /// (pinning it first if needed); out of line so the decoded path inlines.
    #[inline(never)]
    fn range_pinning(
        &mut self,
        pager: &Arc<Pager>,
        group: usize,
        local: u64,
    ) -> Result<(usize, u64, u64)> {
        let Some(pinned) = Self::pinned_group(&self.source, &mut self.pinned, pager, group)? else {
            // A node of a group the CSR does not reach (added after the
            // rels were built) has no rels: its own group, which nothing
            // pinned, so that no other group's appended rels are read.
            return Ok((group, 0, 0));
        };
        pinned.seeks += 1;
        let (s, e) = pinned.csr.range(local);
        if pinned.seeks >= DECODE_AFTER_SEEKS.max(pinned.csr.num_nodes / 64) {
            pinned.offsets = Some(decode_offsets(&pinned.csr));
        }
        Ok((group, s, e))
    }

    /// Runs of positions of the rels appended to node `offset` in `group`
    /// (pinned by [`CsrPins::range`]); empty for most nodes.
    #[inline]
    pub fn appended(&self, group: usize, offset: u64) -> &[(u64, u64)] {
        match self.pinned.get(group) {
            Some(Some(p)) => p.csr.appended(offset % NODE_GROUP_SIZE),
            _ => &[],
        }
    }

    /// How many rels node `offset` has.
    #[inline]
    pub fn degree(&mut self, pager: &Arc<Pager>, offset: u64) -> Result<u64> {
        let (group, s, e) = self.range(pager, offset)?;
        let extra = match self.pinned.get(group) {
            Some(Some(p)) => p.csr.appended_degree(offset % NODE_GROUP_SIZE),
            _ => 0,
        };
        Ok(e - s + extra)
    }

    /// [`CsrPins::degree`] of node `ids[p]` into `out[p]` for each `p` of
    /// `positions` (ascending positions of one batch): a run of nodes in
    /// one group whose offsets are decoded and which has no changes reads
    /// two offsets per node, with no lookup of its group or its appended
    /// rels. In a group without changes whose offsets are not decoded, a
    /// run of nodes close together (a scan's morsel) decodes just the
    /// offsets it spans: the workers of a scan decode their own morsels'
    /// offsets, not each the whole group.
    pub fn degrees_into(
        &mut self,
        pager: &Arc<Pager>,
        ids: &[InternalId],
        positions: impl Iterator<Item = usize> + Clone,
        out: &mut [u64],
    ) -> Result<()> {
        let mut positions = positions.peekable();
        while let Some(&p) = positions.peek() {
            let group = (ids[p].offset() / NODE_GROUP_SIZE) as usize;
            if let Some(Some(PinnedGroup {
                csr,
                offsets: Some(offsets),
                ..
            })) = self.pinned.get(group)
            {
                if !csr.has_changes() {
                    let (base, nodes) = (group as u64 * NODE_GROUP_SIZE, csr.num_nodes);
                    while let Some(&p) = positions.peek() {
                        let local = ids[p].offset().wrapping_sub(base);
                        if local >= NODE_GROUP_SIZE {
                            break;
                        }
                        // A node added after the rels were built has none.
                        out[p] = match local < nodes {
                            true => offsets[local as usize + 1] - offsets[local as usize],
                            false => 0,
                        };
                        positions.next();
                    }
                    continue;
                }
            } else if self.run_of_group(pager, group, ids, &mut positions, out)? {
                continue;
            }
            out[p] = self.degree(pager, ids[p].offset())?;
            positions.next();
        }
        Ok(())
    }

    /// The degrees of every one of `ids` into `out`, by position, when they
    /// are consecutive nodes of one group without changes (a scan's
    /// batch): the offsets they span read at once and subtracted, with no
    /// per-node group test. False (nothing written) otherwise.
    pub fn degrees_of_consecutive(
        &mut self,
        pager: &Arc<Pager>,
        ids: &[InternalId],
        out: &mut [u64],
    ) -> Result<bool> {
        let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
            return Ok(true);
        };
        let n = ids.len();
        // Or-ed differences from the next id, so that the test vectorizes.
        let gaps = ids
            .windows(2)
            .fold(0, |acc, w| acc | (w[1].0 ^ w[0].0.wrapping_add(1)));
        let group = first.offset() / NODE_GROUP_SIZE;
        if gaps != 0 || last.offset() / NODE_GROUP_SIZE != group || out.len() < n {
            return Ok(false);
        }
        let Some(pinned) =
            Self::pinned_group(&self.source, &mut self.pinned, pager, group as usize)?
        else {
            return Ok(false);
        };
        if pinned.csr.has_changes() {
            return Ok(false);
        }
        let lo = first.offset() % NODE_GROUP_SIZE;
        // Nodes added after the rels were built have none.
        let with_rels = (pinned.csr.num_nodes.saturating_sub(lo) as usize).min(n);
        let (out, none) = out[..n].split_at_mut(with_rels);
        none.fill(0);
        if with_rels == 0 {
            return Ok(true);
        }
        let offsets = match &pinned.offsets {
            Some(all) => &all[lo as usize..lo as usize + with_rels + 1],
            None => {
                self.run_offsets.resize(with_rels + 1, 0);
                pinned
                    .csr
                    .offsets
                    .read_u64s(lo, with_rels + 1, &mut self.run_offsets);
                &self.run_offsets[..]
            }
        };
        for (d, w) in out.iter_mut().zip(offsets.windows(2)) {
            *d = w[1] - w[0];
        }
        Ok(true)
    }

    /// [`CsrPins::degrees_into`] for the positions at the front of
    /// `positions` whose nodes are in `group`, not decoded, when the group
    /// has no changes: the offsets from the run's lowest node to its
    /// highest decoded at once when they are at most 64 per node (plus 64;
    /// a seek in the packed offsets costs about as much as decoding a
    /// hundred of them), else each node sought. False (nothing taken) for a
    /// group with changes.
    fn run_of_group(
        &mut self,
        pager: &Arc<Pager>,
        group: usize,
        ids: &[InternalId],
        positions: &mut std::iter::Peekable<impl Iterator<Item = usize> + Clone>,
        out: &mut [u64],
    ) -> Result<bool> {
        let Some(pinned) = Self::pinned_group(&self.source, &mut self.pinned, pager, group)? else {
            return Ok(false);
        };
        if pinned.csr.has_changes() {
            return Ok(false);
        }
        let base = group as u64 * NODE_GROUP_SIZE;
        let nodes = pinned.csr.num_nodes;
        // The run's extent first (nodes added after the rels were built
        // have none and are not read), then its degrees.
        let (mut lo, mut hi, mut len) = (u64::MAX, 0, 0usize);
        for p in positions.clone() {
            let local = ids[p].offset().wrapping_sub(base);
            if local >= NODE_GROUP_SIZE {
                break;
            }
            len += 1;
            if local < nodes {
                lo = lo.min(local);
                hi = hi.max(local);
            }
        }
        let span = hi.wrapping_sub(lo).wrapping_add(2) as usize;
        if lo <= hi && span <= 64 * len + 64 {
            let offsets = &mut self.run_offsets;
            offsets.resize(span, 0);
            pinned.csr.offsets.read_u64s(lo, span, offsets);
            for p in positions.by_ref().take(len) {
                let at = (ids[p].offset() - base).wrapping_sub(lo) as usize;
                out[p] = match offsets.get(at..at + 2) {
                    Some(&[s, e]) => e - s,
                    // Past the rels' nodes.
                    _ => 0,
                };
            }
        } else {
            for p in positions.by_ref().take(len) {
                out[p] = self.degree(pager, ids[p].offset())?;
            }
        }
        Ok(true)
    }

    /// Every run of positions of node `offset`'s rels (the main range, then
    /// the appended runs) into `out`; returns the group.
    pub fn runs(
        &mut self,
        pager: &Arc<Pager>,
        offset: u64,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<usize> {
        let (group, s, e) = self.range(pager, offset)?;
        out.clear();
        if s < e {
            out.push((s, e));
        }
        out.extend_from_slice(self.appended(group, offset));
        Ok(group)
    }

    /// How many of node `offset`'s rels lead to node `target` (a scan of
    /// its neighbours, `scratch` a vector at a time).
    pub fn count_to(
        &mut self,
        pager: &Arc<Pager>,
        offset: u64,
        target: u64,
        scratch: &mut [u64],
    ) -> Result<u64> {
        let (group, s, e) = self.range(pager, offset)?;
        let csr = self.group(group)?;
        let mut n = 0u64;
        let runs = std::iter::once((s, e)).chain(self.appended(group, offset).iter().copied());
        for (mut at, end) in runs {
            while at < end {
                let k = ((end - at) as usize).min(scratch.len());
                csr.neighbors()?.read_u64s(at, k, &mut scratch[..k]);
                n += scratch[..k].iter().filter(|&&x| x == target).count() as u64;
                at += k as u64;
            }
        }
        Ok(n)
    }

    /// A group pinned by [`CsrPins::range`].
    pub fn group(&self, group: usize) -> Result<&PinnedCsrGroup> {
        self.pinned
            .get(group)
            .and_then(|p| p.as_ref())
            .map(|p| &*p.csr)
            .ok_or_else(|| kith_common::Error::internal("CSR group read before it was pinned"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::{LogicalType, Value};
    use kith_storage::{NodeTableData, Storage, StorageConfig, TableData};

    /// A database of `n` nodes and the rels `i -> (i + 1) % n` and
    /// `i -> (i + 3) % n`, committed; the rel table's data.
    fn rels(n: u64) -> (Arc<Storage>, Arc<RelTableData>) {
        let storage = Storage::open(None, StorageConfig::default()).unwrap();
        let mut txn = storage.begin_write().unwrap();
        let p = txn
            .catalog
            .create_node_table("P", vec![("id".into(), LogicalType::Int64)], "id")
            .unwrap();
        let props = txn.catalog.table(p).unwrap().properties.clone();
        txn.tables.insert(
            p,
            Arc::new(TableData::Node(NodeTableData::empty(
                props.iter().map(|p| p.id).collect(),
                0,
            ))),
        );
        let k = txn
            .catalog
            .create_rel_table("K", "P", "P", vec![], kith_catalog::Multiplicity::MANY_MANY)
            .unwrap();
        txn.tables
            .insert(k, Arc::new(TableData::Rel(RelTableData::empty(Vec::new()))));
        let rows: Vec<Vec<Value>> = (0..n as i64).map(|i| vec![Value::Int64(i)]).collect();
        txn.insert_nodes(p, &rows).unwrap();
        let src: Vec<u64> = (0..n).chain(0..n).collect();
        let dst: Vec<u64> = (0..n)
            .map(|i| (i + 1) % n)
            .chain((0..n).map(|i| (i + 3) % n))
            .collect();
        txn.insert_rels(k, &src, &dst, &[]).unwrap();
        txn.commit().unwrap();
        let data = match storage.snapshot().unwrap().table(k).unwrap().as_ref() {
            TableData::Rel(r) => Arc::new(r.clone()),
            _ => unreachable!("K is a rel table"),
        };
        (storage, data)
    }

    #[test]
    fn workers_share_each_pinned_group() {
        let (storage, data) = rels(10);
        let pager = storage.pager();
        let shared = Arc::new(SharedCsrPins::default());
        let mut one = CsrPins::new(Arc::clone(&data), true, Vec::new(), Arc::clone(&shared));
        let mut two = CsrPins::new(Arc::clone(&data), true, Vec::new(), Arc::clone(&shared));
        for node in 0..10 {
            assert_eq!(one.degree(pager, node).unwrap(), 2, "degree of {node}");
            assert_eq!(two.degree(pager, node).unwrap(), 2, "degree of {node}");
        }
        // One pin, two readers; each decoded the offsets after 8 seeks.
        let (a, b) = (one.group(0).unwrap(), two.group(0).unwrap());
        assert!(std::ptr::eq(a, b), "each worker pinned the group");
        let decoded: Vec<u64> = (0..=10).map(|i| 2 * i).collect();
        assert_eq!(one.pinned[0].as_ref().unwrap().offsets, Some(decoded));
        assert_eq!(
            decode_offsets(a),
            one.pinned[0].as_ref().unwrap().offsets.clone().unwrap()
        );
        // Another direction, or other property columns, is another pin.
        let mut back = CsrPins::new(Arc::clone(&data), false, Vec::new(), Arc::clone(&shared));
        assert_eq!(back.degree(pager, 4).unwrap(), 2);
        assert!(!std::ptr::eq(a, back.group(0).unwrap()));
        // Cleared, the next reader pins afresh while the others keep theirs.
        shared.clear();
        let mut three = CsrPins::new(Arc::clone(&data), true, Vec::new(), shared);
        assert_eq!(three.degree(pager, 7).unwrap(), 2);
        assert!(!std::ptr::eq(a, three.group(0).unwrap()));
        assert_eq!(one.degree(pager, 7).unwrap(), 2);
        let mut scratch = [0u64; 4];
        assert_eq!(one.count_to(pager, 7, 8, &mut scratch).unwrap(), 1);
        assert_eq!(three.count_to(pager, 7, 0, &mut scratch).unwrap(), 1);
    }

    #[test]
    fn offsets_decode_block_by_block() {
        // In tiny builds 200 nodes span several groups; decode each.
        let (storage, data) = rels(200);
        let shared = Arc::new(SharedCsrPins::default());
        let mut pins = CsrPins::new(Arc::clone(&data), true, Vec::new(), shared);
        let mut total = 0;
        for g in 0..data.fwd.groups.len() {
            let first = g as u64 * NODE_GROUP_SIZE;
            pins.degree(storage.pager(), first).unwrap();
            let csr = pins.group(g).unwrap();
            let n = csr.num_nodes;
            let want: Vec<u64> = (0..=n).map(|i| 2 * i).collect();
            assert_eq!(decode_offsets(csr), want, "group {g}");
            total += n;
        }
        assert_eq!(total, 200);
    }
}
