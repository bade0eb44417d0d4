//! The rels of the node an extend is at: a cursor over the runs of its
//! CSR range (the checkpointed run, then runs appended since) and the
//! positions of the rels relationship isomorphism excludes. Shared by the
//! expanding [`super::Extend`] and the counting [`super::CountExtend`].

use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{InternalId, Result, TableId};
use kith_pager::Pager;

use super::Extend;
use crate::operator::csr_pins::CsrPins;
use crate::operator::Pos;
use crate::result_set::ResultSet;

pub(super) struct RelRange {
    /// The CSR group of the node, and its current run of positions
    /// `pos..end`.
    pub(super) group: usize,
    pub(super) pos: u64,
    pub(super) end: u64,
    /// The node's appended runs, from `next_run` on after the current one.
    pub(super) runs: Vec<(u64, u64)>,
    pub(super) next_run: usize,
    /// Positions in the current range of the rels to skip, ascending, and
    /// the next one to come.
    pub(super) skips: Vec<u64>,
    pub(super) next_skip: usize,
    /// Scratch for rel and neighbour ids read a vector at a time.
    pub(super) scratch: Vec<u64>,
}

impl Default for RelRange {
    fn default() -> RelRange {
        RelRange {
            group: 0,
            pos: 0,
            end: 0,
            runs: Vec::new(),
            next_run: 0,
            skips: Vec::new(),
            next_skip: 0,
            scratch: vec![0; VECTOR_CAPACITY],
        }
    }
}

impl RelRange {
    /// Positions the cursor on the rels of node `offset`.
    pub(super) fn seek(
        &mut self,
        pins: &mut CsrPins,
        pager: &Arc<Pager>,
        offset: u64,
    ) -> Result<()> {
        (self.group, self.pos, self.end) = pins.range(pager, offset)?;
        self.runs.clear();
        self.runs
            .extend_from_slice(pins.appended(self.group, offset));
        self.next_run = 0;
        Ok(())
    }

    /// The rels left from the cursor on: the current run and the runs after it.
    pub(super) fn remaining(&self) -> u64 {
        let later: u64 = self.runs[self.next_run..].iter().map(|&(s, e)| e - s).sum();
        self.end - self.pos + later
    }

    /// After a seek from node `from`: the positions of the rels of
    /// `rel_table` that `exclude` (earlier rel, its gate) excludes and
    /// that are in the range.
    pub(super) fn find_excluded(
        &mut self,
        pins: &CsrPins,
        rs: &ResultSet,
        exclude: &[(Pos, Pos)],
        rel_table: TableId,
        from: InternalId,
    ) -> Result<()> {
        self.skips.clear();
        self.next_skip = 0;
        for &(rel_pos, gate_pos) in exclude {
            if Extend::flat_id(rs, gate_pos)? != Some(from) {
                continue;
            }
            let Some(rel) = Extend::flat_id(rs, rel_pos)? else {
                continue;
            };
            if rel.table() != rel_table || self.remaining() == 0 {
                continue;
            }
            let pinned = pins.group(self.group)?;
            // Scan the runs' rel ids a vector at a time in the scratch buffer.
            let runs = std::iter::once((self.pos, self.end)).chain(self.runs.iter().copied());
            'runs: for (mut at, end) in runs {
                while at < end {
                    let n = ((end - at) as usize).min(self.scratch.len());
                    pinned.rel_ids()?.read_u64s(at, n, &mut self.scratch[..n]);
                    if let Some(i) = self.scratch[..n].iter().position(|&id| id == rel.offset()) {
                        self.skips.push(at + i as u64);
                        break 'runs;
                    }
                    at += n as u64;
                }
            }
        }
        self.skips.sort_unstable();
        self.skips.dedup();
        Ok(())
    }
}
