//! A grouped count(*) by one id key held by the key's offset instead of
//! as numbered groups ([`ByOffset`]): each offset's count in arrays
//! ([`OffsetCounts`]), or, when only whether a key counted matters (an
//! EXISTS subquery's table, `KeyCounts::Presence`), a bit per offset
//! ([`OffsetPresence`]). A tuple then costs one word written, with no
//! group looked up or made, and workers' tables merge word by word. A
//! subquery's table takes the merged arrays as they are ([`OffsetTable`]).

use std::ops::Range;

use kith_common::{InternalId, TableId};

/// A grouped count(*) by one id key held by offset.
pub(super) enum ByOffset {
    Counts(OffsetCounts),
    Presence(OffsetPresence),
}

/// The arrays of a merged [`ByOffset`], as a subquery's table keeps them:
/// a probe is then an array read (see `PartPlan::key_counts`).
#[derive(Debug, Clone, PartialEq)]
pub enum OffsetTable {
    /// Each offset's count; offsets past the array count 0.
    Counts { table: TableId, counts: Vec<u64> },
    /// Bit `o % 64` of word `o / 64`: whether offset `o` counted; offsets
    /// past the words did not.
    Presence { table: TableId, words: Vec<u64> },
}

impl ByOffset {
    /// A table of `table`'s keys (`rows` nodes), of bits with `presence`
    /// when the table is small enough for them.
    pub(super) fn new(table: TableId, rows: u64, presence: bool) -> ByOffset {
        match presence.then(|| OffsetPresence::new(table, rows)).flatten() {
            Some(p) => ByOffset::Presence(p),
            None => ByOffset::Counts(OffsetCounts::new(table, rows)),
        }
    }

    /// Offsets counted (groups).
    pub(super) fn groups(&self) -> usize {
        match self {
            ByOffset::Counts(c) => c.groups,
            ByOffset::Presence(p) => p.groups(),
        }
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        match self {
            ByOffset::Counts(c) => c.span() as usize * 8,
            ByOffset::Presence(p) => p.words.len() * 8,
        }
    }

    /// Adds `weight(p)` to the count of `ids[p]` for each of `positions`;
    /// false (nothing added) when a key is not countable here.
    pub(super) fn count(
        &mut self,
        ids: &[InternalId],
        positions: &[u32],
        weight: impl Fn(usize) -> u64,
    ) -> bool {
        match self {
            ByOffset::Counts(c) => c.count(ids, positions, weight),
            ByOffset::Presence(p) => p.count(ids, positions, weight),
        }
    }

    /// Adds another worker's table; false (nothing added) for one of
    /// another kind or table, or when the runs would grow too long.
    pub(super) fn add(&mut self, other: &mut ByOffset) -> bool {
        match (self, other) {
            (ByOffset::Counts(mine), ByOffset::Counts(theirs)) => mine.add(theirs),
            (ByOffset::Presence(mine), ByOffset::Presence(theirs)) => mine.add(theirs),
            _ => false,
        }
    }

    /// The groups in offset order: their ids' bits and their counts (1
    /// for each of a presence table).
    pub(super) fn into_groups(self) -> (Vec<u64>, Vec<u64>) {
        match self {
            ByOffset::Counts(c) => c.into_groups(),
            ByOffset::Presence(p) => p.into_groups(),
        }
    }

    /// The arrays as they are; the table back when its counts would be
    /// an array reaching past `max_offsets`.
    pub(super) fn into_table(self, max_offsets: u64) -> Result<OffsetTable, ByOffset> {
        match self {
            ByOffset::Counts(c) => {
                let table = c.table;
                match c.into_dense(max_offsets) {
                    Ok(counts) => Ok(OffsetTable::Counts { table, counts }),
                    Err(c) => Err(ByOffset::Counts(c)),
                }
            }
            ByOffset::Presence(p) => Ok(OffsetTable::Presence {
                table: p.table,
                words: p.words,
            }),
        }
    }
}

/// Whether a key counted, by offset: a bit per node of the key's table.
/// Numbered groups made from it count 1 each, which is all an EXISTS
/// reads of them.
pub(super) struct OffsetPresence {
    table: TableId,
    words: Vec<u64>,
    /// The table's node count: offsets at or past it are not countable.
    rows: u64,
}

/// Nodes an [`OffsetPresence`] holds at most (8 MiB of bits).
const OFFSET_PRESENCE_MAX: u64 = 1 << 26;

impl OffsetPresence {
    /// None for a table of more than [`OFFSET_PRESENCE_MAX`] nodes.
    fn new(table: TableId, rows: u64) -> Option<OffsetPresence> {
        (rows <= OFFSET_PRESENCE_MAX).then(|| OffsetPresence {
            table,
            // Zeroed by the allocator: pages untouched until counted.
            words: vec![0; rows.div_ceil(64) as usize],
            rows,
        })
    }

    fn groups(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Sets the bit of `ids[p]` for each of `positions` of a weight above
    /// zero; false (nothing set) when a key is not countable here.
    fn count(
        &mut self,
        ids: &[InternalId],
        positions: &[u32],
        weight: impl Fn(usize) -> u64,
    ) -> bool {
        // Checked first, so that a batch not countable sets nothing.
        let mut odd = false;
        for &p in positions {
            let Some(id) = ids.get(p as usize) else {
                return false;
            };
            odd |= id.table() != self.table || id.offset() >= self.rows || weight(p as usize) == 0;
        }
        if odd {
            return false;
        }
        for &p in positions {
            let o = ids[p as usize].offset();
            if let Some(w) = self.words.get_mut((o / 64) as usize) {
                *w |= 1 << (o % 64);
            }
        }
        true
    }

    /// Or-s another table's bits into these; false (nothing added) for
    /// one of another table or size.
    fn add(&mut self, other: &mut OffsetPresence) -> bool {
        if other.table != self.table || other.rows != self.rows {
            return false;
        }
        for (w, &o) in self.words.iter_mut().zip(&other.words) {
            *w |= o;
        }
        true
    }

    /// The offsets set, in order, as ids' bits, each with a count of 1.
    fn into_groups(self) -> (Vec<u64>, Vec<u64>) {
        let base = InternalId::new(self.table, 0).0;
        let mut bits = Vec::with_capacity(self.groups());
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                bits.push(base + i as u64 * 64 + u64::from(w.trailing_zeros()));
                w &= w - 1;
            }
        }
        let counts = vec![1; bits.len()];
        (bits, counts)
    }
}

/// A grouped count(*) by one id key (`WITH b, count(*)`, an EXISTS
/// subquery's `id(a), count(*)`) held as each offset's count in arrays:
/// a tuple adds to one word, with no group number looked up or group
/// created, and workers' tables merge by adding arrays. A count of 0 is no
/// group (count(*) of a group is at least 1). Another table's key, a NULL
/// key or arrays much larger than their groups turn the table into
/// numbered groups (`HashAggregate::groups_by_number`).
///
/// The arrays are runs of offsets, so that a worker holds the offsets its
/// morsels reach: mostly one run over its region of the scan (see
/// `MorselDispenser::with_regions`), and one per region it helped finish.
pub(super) struct OffsetCounts {
    table: TableId,
    /// Disjoint, in offset order.
    runs: Vec<CountRun>,
    /// The run the last batch counted into.
    last: usize,
    /// Offsets with a count.
    groups: usize,
    /// The key table's node count: how far a run may reach, reserved at
    /// once so that a run growing morsel by morsel is not copied.
    rows: u64,
}

/// The counts of offsets `first..first + counts.len()`.
#[derive(Debug, Clone, PartialEq)]
struct CountRun {
    first: u64,
    counts: Vec<u64>,
    /// How far below the start of its first batch the run has grown.
    grown_down: u64,
}

impl CountRun {
    fn end(&self) -> u64 {
        self.first + self.counts.len() as u64
    }
}

/// Offsets [`OffsetCounts`] hold at most (32 MiB of counts).
const OFFSET_COUNTS_MAX: u64 = 1 << 22;

/// Runs this close are joined (the zeros between them written): a worker
/// that helps finish another's region takes every other morsel there.
const COUNT_RUN_GAP: u64 = 1 << 12;

impl OffsetCounts {
    pub(super) fn new(table: TableId, rows: u64) -> OffsetCounts {
        OffsetCounts {
            table,
            runs: Vec::new(),
            last: 0,
            groups: 0,
            rows,
        }
    }

    /// Adds `weight(p)` to the count of `ids[p]` for each of `positions`;
    /// false (nothing added) when a key is not countable here.
    fn count(
        &mut self,
        ids: &[InternalId],
        positions: &[u32],
        weight: impl Fn(usize) -> u64,
    ) -> bool {
        let (mut lo, mut hi) = (u64::MAX, 0);
        for &p in positions {
            let Some(id) = ids.get(p as usize) else {
                return false;
            };
            if id.table() != self.table || weight(p as usize) == 0 {
                return false;
            }
            lo = lo.min(id.offset());
            hi = hi.max(id.offset());
        }
        if positions.is_empty() {
            return true;
        }
        let r = match self.runs.get(self.last) {
            Some(run) if run.first <= lo && hi < run.end() => self.last,
            _ => match self.place(lo, hi) {
                Some(r) => r,
                None => return false,
            },
        };
        self.last = r;
        // Locals, so that the loop keeps them in registers.
        let (first, counts) = (self.runs[r].first, self.runs[r].counts.as_mut_slice());
        let mut groups = 0;
        for &p in positions {
            let c = &mut counts[(ids[p as usize].offset() - first) as usize];
            groups += usize::from(*c == 0);
            *c += weight(p as usize);
        }
        self.groups += groups;
        true
    }

    /// Offsets in all runs.
    fn span(&self) -> u64 {
        self.runs.iter().map(|r| r.counts.len() as u64).sum()
    }

    /// The runs within the gap of offsets `lo..=hi` (indices `a..b`) and
    /// the offsets the run joining them and `lo..=hi` would cover.
    fn reach(&self, lo: u64, hi: u64) -> (Range<usize>, Range<u64>) {
        let a = self
            .runs
            .partition_point(|r| r.end().saturating_add(COUNT_RUN_GAP) <= lo);
        // At least `a`: a run starting past hi + gap ends past lo + gap.
        let b = self
            .runs
            .partition_point(|r| r.first <= hi.saturating_add(COUNT_RUN_GAP))
            .max(a);
        let joined = &self.runs[a..b];
        // A run starts at a multiple of the gap and grows down at least as
        // far as it has grown down before: keys coming in descending order
        // copy a run a few times, not at every batch with a smaller key,
        // while a first step down (a worker helping at the end of another's
        // region) takes only the offsets it needs, not the whole region.
        let first = match joined.first() {
            Some(r) if r.first <= lo => r.first,
            Some(r) => lo.min(r.first.saturating_sub(r.grown_down)),
            None => lo,
        };
        // Not below the run before (more than a gap before lo).
        let floor = a.checked_sub(1).map_or(0, |p| self.runs[p].end());
        let first = (first - first % COUNT_RUN_GAP).max(floor);
        let end = joined.last().map_or(hi + 1, |r| r.end().max(hi + 1));
        (a..b, first..end)
    }

    /// The index of a run holding offsets `lo..=hi`, made by [`Self::join`];
    /// None (nothing changed) when that would make the runs too long, or
    /// much longer than the groups need (a few far-apart keys).
    fn place(&mut self, lo: u64, hi: u64) -> Option<usize> {
        let (joined, cover) = self.reach(lo, hi);
        let kept: u64 = self.runs[joined.clone()]
            .iter()
            .map(|r| r.counts.len() as u64)
            .sum();
        let span = self.span() - kept + (cover.end - cover.start);
        if span > OFFSET_COUNTS_MAX || (span > 1 << 16 && (self.groups as u64) < span / 32) {
            return None;
        }
        Some(self.join((joined, cover)))
    }

    /// The index of the run covering `cover` that replaces runs `joined`
    /// (as [`Self::reach`] found them): one of them grown at its end, or a
    /// new array holding them all.
    fn join(&mut self, (joined, cover): (Range<usize>, Range<u64>)) -> usize {
        let (a, first) = (joined.start, cover.start);
        let len = (cover.end - first) as usize;
        // Room up to the table's last node: virtual memory, untouched
        // until counted, so a run growing morsel by morsel is not copied.
        let room = (self.rows.saturating_sub(first).min(OFFSET_COUNTS_MAX) as usize).max(len);
        match &mut self.runs[joined.clone()] {
            // Grown at its end (the next morsels of a region).
            [run] if run.first == first => {
                if run.counts.capacity() < len {
                    run.counts.reserve_exact(room - run.counts.len());
                }
                run.counts.resize(len, 0);
            }
            runs => {
                let mut counts = Vec::with_capacity(room);
                counts.resize(len, 0);
                for r in runs.iter() {
                    let at = (r.first - first) as usize;
                    counts[at..at + r.counts.len()].copy_from_slice(&r.counts);
                }
                let grown_down = runs
                    .first()
                    .map_or(0, |r| r.grown_down + r.first.saturating_sub(first));
                let run = CountRun {
                    first,
                    counts,
                    grown_down,
                };
                self.runs.splice(joined, [run]);
            }
        }
        a
    }

    /// Adds another table's counts; false (nothing added) for one of
    /// another table or when the runs would grow too long.
    fn add(&mut self, other: &mut OffsetCounts) -> bool {
        if other.table != self.table {
            return false;
        }
        let gaps = COUNT_RUN_GAP * (self.runs.len() + other.runs.len()) as u64;
        if self.span() + other.span() + gaps > OFFSET_COUNTS_MAX {
            return false;
        }
        if other.span() > self.span() {
            std::mem::swap(&mut self.runs, &mut other.runs);
        }
        for theirs in &other.runs {
            let r = self.join(self.reach(theirs.first, theirs.end() - 1));
            let run = &mut self.runs[r];
            let at = (theirs.first - run.first) as usize;
            for (c, &o) in run.counts[at..].iter_mut().zip(&theirs.counts) {
                *c += o;
            }
        }
        self.groups = self
            .runs
            .iter()
            .map(|r| r.counts.iter().filter(|&&c| c > 0).count())
            .sum();
        true
    }

    /// Each offset's count in one array from offset 0 (the runs copied
    /// into it unless there is one from 0); the table back when the array
    /// would reach past `max_offsets`.
    fn into_dense(mut self, max_offsets: u64) -> Result<Vec<u64>, OffsetCounts> {
        let end = self.runs.last().map_or(0, CountRun::end);
        if end > max_offsets {
            return Err(self);
        }
        Ok(match self.runs.as_mut_slice() {
            [run] if run.first == 0 => std::mem::take(&mut run.counts),
            runs => {
                let mut counts = vec![0; end as usize];
                for r in runs.iter() {
                    counts[r.first as usize..r.end() as usize].copy_from_slice(&r.counts);
                }
                counts
            }
        })
    }

    /// The groups in offset order: their ids' bits and their counts.
    fn into_groups(self) -> (Vec<u64>, Vec<u64>) {
        let n = self.groups;
        let base = InternalId::new(self.table, 0).0;
        let mut runs = self.runs.into_iter();
        let Some(head) = runs.next() else {
            return (Vec::new(), Vec::new());
        };
        // The counts compacted into the first run's array: a group's place
        // is never after its offset there, nor in the part of the array
        // already read when later runs are written.
        let mut counts = head.counts;
        let head_len = counts.len();
        if counts.len() < n + 1 {
            counts.resize(n + 1, 0);
        }
        let mut bits = vec![0u64; n + 1];
        // Every offset written, the next group's place advanced only past
        // a count: no branch per offset (counts are zero at random).
        // `groups` counts them, so the writes stay within one extra slot.
        let mut g = 0;
        let mut put = |counts: &mut [u64], offset: u64, c: u64| {
            let at = g.min(n);
            bits[at] = base + offset;
            counts[at] = c;
            g += usize::from(c > 0);
        };
        for o in 0..head_len {
            let c = counts[o];
            put(&mut counts, head.first + o as u64, c);
        }
        for run in runs {
            for (o, &c) in run.counts.iter().enumerate() {
                put(&mut counts, run.first + o as u64, c);
            }
        }
        bits.truncate(n);
        counts.truncate(n);
        (bits, counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A run's first step down takes the offsets it needs (to a multiple
    /// of the gap), later steps at least as far again as it has grown down
    /// (keys in descending order copy it a few times), and it stops at the
    /// run before it instead of covering its offsets again.
    #[test]
    fn offset_count_runs_grow_down_without_overlapping() {
        let table = TableId(2);
        let ids = |offsets: &[u64]| -> Vec<InternalId> {
            offsets.iter().map(|&o| InternalId::new(table, o)).collect()
        };
        let mut counts = OffsetCounts::new(table, 50_000);
        let mut want: BTreeMap<u64, u64> = BTreeMap::new();
        let mut add = |counts: &mut OffsetCounts, offsets: &[u64]| {
            let positions: Vec<u32> = (0..offsets.len() as u32).collect();
            assert!(counts.count(&ids(offsets), &positions, |_| 1));
            offsets
                .iter()
                .for_each(|&o| *want.entry(o).or_default() += 1);
        };
        let firsts = |c: &OffsetCounts| c.runs.iter().map(|r| r.first).collect::<Vec<_>>();
        add(&mut counts, &[50]);
        add(
            &mut counts,
            &(20_000..40_000).step_by(7).collect::<Vec<_>>(),
        );
        assert_eq!(firsts(&counts), [0, 16_384]);
        // Just below: down to 12,288 (3 gaps), not by the run's length.
        add(&mut counts, &[15_000]);
        assert_eq!(firsts(&counts), [0, 12_288]);
        // Further down: at least as far again (4,096 more).
        add(&mut counts, &[11_000]);
        assert_eq!(firsts(&counts), [0, 8_192]);
        // Then 8,192 more, which stops at the run before it.
        add(&mut counts, &[7_000]);
        assert_eq!(firsts(&counts), [0, 51]);
        assert!(counts.runs[0].end() <= counts.runs[1].first);
        add(&mut counts, &[50, 51]);
        let (bits, n) = counts.into_groups();
        let got: BTreeMap<u64, u64> = bits
            .iter()
            .map(|&b| InternalId(b).offset())
            .zip(n)
            .collect();
        assert_eq!(got, want);
    }

    proptest::proptest! {
        /// Counts by offset against a map: a batch with a key of another
        /// table, a zero weight or an offset too far for the groups adds
        /// nothing and says so; tables of one table merge by adding.
        /// Batches land in six places (`shifts`), in any order, so runs
        /// are made apart, joined, grown at either end and merged.
        #[test]
        fn offset_counts_match_a_map(
            batches in proptest::collection::vec(
                proptest::collection::vec((0u32..6, 0u64..3000, 0u64..4), 1..40),
                1..12,
            ),
            shifts in proptest::collection::vec(0usize..6, 12),
            far in proptest::bool::ANY,
        ) {
            let table = TableId(2);
            let mut mine = OffsetCounts::new(table, 2000);
            let mut theirs = OffsetCounts::new(table, 0);
            let mut want: BTreeMap<u64, u64> = BTreeMap::new();
            for (i, batch) in batches.iter().enumerate() {
                // Table 2 mostly, weight 0 rarely, an offset of 2^20 (too
                // sparse for a few groups) in some runs.
                let ids: Vec<InternalId> = batch
                    .iter()
                    .enumerate()
                    .map(|(j, &(t, o, _))| {
                        let o = o + [0, 6000, 12000, 19000, 26000, 50000][shifts[i]];
                        let o = if far && i == 3 && j == 0 { 1 << 20 } else { o };
                        InternalId::new(TableId(if t == 0 { 5 } else { 2 }), o)
                    })
                    .collect();
                let weights: Vec<u64> = batch.iter().map(|&(t, _, w)| if t == 1 { w } else { w + 1 }).collect();
                let positions: Vec<u32> = (0..ids.len() as u32).collect();
                // A far key with near ones spans too many offsets for the
                // groups; alone it is a run of its own.
                let countable = ids.iter().zip(&weights).all(|(id, &w)| id.table() == table && w > 0)
                    && !(far && i == 3 && ids.len() > 1);
                let into = if i % 2 == 0 { &mut mine } else { &mut theirs };
                let before = into.runs.clone();
                let counted = into.count(&ids, &positions, |p| weights[p]);
                proptest::prop_assert_eq!(counted, countable);
                for pair in into.runs.windows(2) {
                    proptest::prop_assert!(pair[0].end() <= pair[1].first, "runs apart");
                }
                if counted {
                    for (id, &w) in ids.iter().zip(&weights) {
                        *want.entry(id.offset()).or_default() += w;
                    }
                } else {
                    proptest::prop_assert_eq!(&into.runs, &before);
                }
            }
            proptest::prop_assert!(mine.add(&mut theirs));
            proptest::prop_assert!(!mine.add(&mut OffsetCounts::new(TableId(7), 0)));
            proptest::prop_assert_eq!(mine.groups, want.len());
            // Whole: one row per offset of a single run, the zeros too;
            // groups as below for several runs.
            // One array from offset 0: each offset's count at its index,
            // zeros between; a limit short of the last run's end gives the
            // table back.
            let end = mine.runs.last().map_or(0, CountRun::end);
            let copy = |m: &OffsetCounts| OffsetCounts {
                table,
                runs: m.runs.clone(),
                last: 0,
                groups: m.groups,
                rows: m.rows,
            };
            proptest::prop_assert!(end == 0 || copy(&mine).into_dense(end - 1).is_err());
            let dense = copy(&mine).into_dense(end);
            proptest::prop_assert!(dense.is_ok());
            let got: BTreeMap<u64, u64> = dense
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .filter(|&(_, c)| c > 0)
                .map(|(o, c)| (o as u64, c))
                .collect();
            proptest::prop_assert_eq!(&got, &want);
            let (bits, counts) = mine.into_groups();
            let got: BTreeMap<u64, u64> = bits
                .iter()
                .map(|&b| InternalId(b))
                .inspect(|id| assert_eq!(id.table(), table))
                .map(|id| id.offset())
                .zip(counts)
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    proptest::proptest! {
        /// Presence bits against a set: a batch with a key of another
        /// table, a zero weight or an offset past the table's nodes sets
        /// nothing and says so; tables of one table merge by or-ing; the
        /// groups are the offsets set, each counted 1, and the table's
        /// words read the same.
        #[test]
        fn offset_presence_matches_a_set(
            batches in proptest::collection::vec(
                proptest::collection::vec((0u32..8, 0u64..700, 0u64..4), 1..30),
                1..10,
            ),
        ) {
            let (table, rows) = (TableId(2), 650);
            let new = || match ByOffset::new(table, rows, true) {
                ByOffset::Presence(p) => Some(p),
                ByOffset::Counts(_) => None,
            };
            let (Some(mut mine), Some(mut theirs)) = (new(), new()) else {
                return Err(proptest::test_runner::TestCaseError::fail("not bits"));
            };
            let mut want = std::collections::BTreeSet::new();
            for (i, batch) in batches.iter().enumerate() {
                let ids: Vec<InternalId> = batch
                    .iter()
                    .map(|&(t, o, _)| InternalId::new(TableId(if t == 0 { 5 } else { 2 }), o))
                    .collect();
                let weights: Vec<u64> = batch.iter().map(|&(t, _, w)| if t == 1 { w } else { w + 1 }).collect();
                let positions: Vec<u32> = (0..ids.len() as u32).collect();
                let countable = ids
                    .iter()
                    .zip(&weights)
                    .all(|(id, &w)| id.table() == table && id.offset() < rows && w > 0);
                let into = if i % 2 == 0 { &mut mine } else { &mut theirs };
                let before = into.words.clone();
                proptest::prop_assert_eq!(into.count(&ids, &positions, |p| weights[p]), countable);
                match countable {
                    true => want.extend(ids.iter().map(|id| id.offset())),
                    false => proptest::prop_assert_eq!(&into.words, &before),
                }
            }
            proptest::prop_assert!(mine.add(&mut theirs));
            let mut other = OffsetPresence::new(TableId(7), rows).map(ByOffset::Presence);
            let mut mine = ByOffset::Presence(mine);
            proptest::prop_assert!(other.as_mut().is_some_and(|o| !mine.add(o)));
            proptest::prop_assert_eq!(mine.groups(), want.len());
            let words = match mine.into_table(0) {
                Ok(OffsetTable::Presence { table: t, words }) if t == table => words,
                _ => return Err(proptest::test_runner::TestCaseError::fail("not the bits")),
            };
            let set: Vec<u64> = (0..rows).filter(|&o| words[(o / 64) as usize] >> (o % 64) & 1 == 1).collect();
            proptest::prop_assert_eq!(&set, &want.iter().copied().collect::<Vec<_>>());
            let (bits, counts) = OffsetPresence { table, words, rows }.into_groups();
            let got: Vec<u64> = bits.iter().map(|&b| InternalId(b).offset()).collect();
            proptest::prop_assert_eq!(&got, &set);
            proptest::prop_assert!(counts.iter().all(|&c| c == 1) && counts.len() == got.len());
        }
    }

    /// A table too large for bits counts instead; presence and counts do
    /// not merge.
    #[test]
    fn presence_only_for_tables_that_fit() {
        let t = TableId(1);
        assert!(matches!(
            ByOffset::new(t, OFFSET_PRESENCE_MAX + 1, true),
            ByOffset::Counts(_)
        ));
        assert!(matches!(ByOffset::new(t, 100, false), ByOffset::Counts(_)));
        let mut bits = ByOffset::new(t, 100, true);
        assert!(matches!(bits, ByOffset::Presence(_)));
        assert!(!bits.add(&mut ByOffset::new(t, 100, false)));
        // Tables of other sizes (snapshots apart) do not merge either.
        assert!(!bits.add(&mut ByOffset::new(t, 200, true)));
    }
}
