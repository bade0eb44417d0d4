//! Factorized intermediate results.
//!
//! A [`ResultSet`] is a list of [`DataChunk`]s. Each chunk holds vectors that
//! share one [`ChunkState`]: either *unflat* (all its selected positions are
//! tuples) or *flat* (it stands for one current tuple). The tuples a result set
//! represents are the Cartesian product of its chunks' tuples. The planner keeps
//! at most one chunk unflat at a time; extends flatten their input chunk and
//! write neighbours into a fresh unflat chunk, so a k-hop count never
//! materialises k-hop flat tuples.

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::ValueVector;

/// Positions `0..VECTOR_CAPACITY` as an array of `$t`, built at compile
/// time: every position of a full batch, to copy or borrow rather than
/// count out per batch.
macro_rules! identity {
    ($t:ty) => {{
        let mut positions = [0 as $t; VECTOR_CAPACITY];
        let mut i = 0;
        while i < VECTOR_CAPACITY {
            positions[i] = i as $t;
            i += 1;
        }
        positions
    }};
}

/// A full batch's positions as selections hold them.
pub static IDENTITY_U32: [u32; VECTOR_CAPACITY] = identity!(u32);

/// A full batch's positions as gathers take them (`PinnedColumn::gather`).
pub static IDENTITY_USIZE: [usize; VECTOR_CAPACITY] = identity!(usize);

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkState {
    /// Physical positions filled in the chunk's vectors.
    pub len: usize,
    /// Selected positions, ascending; `None` means all of `0..len`.
    pub sel: Option<Vec<u32>>,
    /// When `Some(i)`, the chunk is flat and stands for the tuple at selected
    /// index `i` only.
    pub flat: Option<usize>,
    /// Which content the vectors hold: 0 when untracked (every `reset`);
    /// an extend numbers its fresh batches and keeps the number when it
    /// hands the same batch on again (the neighbours of a node of an earlier
    /// group, once per tuple of a later one). A consumer that saw this very
    /// state before may keep what it computed from it.
    pub generation: u64,
}

impl ChunkState {
    /// Whether this state is `seen` again with a tracked content.
    #[inline]
    pub fn repeats(&self, seen: &ChunkState) -> bool {
        self.generation != 0 && self == seen
    }
}

impl ChunkState {
    /// Number of selected positions (ignores flatness).
    #[inline]
    pub fn selected_len(&self) -> usize {
        match &self.sel {
            Some(s) => s.len(),
            None => self.len,
        }
    }

    /// Physical position of selected index `i`.
    #[inline]
    pub fn position(&self, i: usize) -> usize {
        match &self.sel {
            Some(s) => s[i] as usize,
            None => i,
        }
    }

    #[inline]
    pub fn is_flat(&self) -> bool {
        self.flat.is_some()
    }

    /// Number of tuples this chunk contributes: 1 when flat.
    #[inline]
    pub fn num_tuples(&self) -> usize {
        if self.is_flat() {
            1
        } else {
            self.selected_len()
        }
    }

    /// The physical position of the current tuple of a flat chunk.
    #[inline]
    pub fn flat_position(&self) -> Option<usize> {
        self.flat.map(|i| self.position(i))
    }

    /// Calls `f` with each position that is part of the represented tuples:
    /// the current one when flat, every selected one otherwise.
    #[inline]
    pub fn for_each_position(&self, mut f: impl FnMut(usize)) {
        if let Some(p) = self.flat_position() {
            f(p);
            return;
        }
        match &self.sel {
            Some(s) => s.iter().for_each(|&p| f(p as usize)),
            None => (0..self.len).for_each(f),
        }
    }

    /// Appends the selected positions to `out` (as [`Self::for_each_position`]
    /// visits them), copied or counted out in one go rather than pushed one
    /// by one.
    pub fn extend_positions(&self, out: &mut Vec<u32>) {
        if let Some(p) = self.flat_position() {
            out.push(p as u32);
            return;
        }
        match &self.sel {
            Some(s) => out.extend_from_slice(s),
            // A copy of the identity is a `memcpy`; counting the positions
            // out was 7 % of a scan-and-sum.
            None => match IDENTITY_U32.get(..self.len) {
                Some(run) => out.extend_from_slice(run),
                None => out.extend(0..self.len as u32),
            },
        }
    }

    /// Resets to `len` positions, all selected, unflat.
    pub fn reset(&mut self, len: usize) {
        self.len = len;
        self.sel = None;
        self.flat = None;
        self.generation = 0;
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataChunk {
    pub vectors: Vec<ValueVector>,
    pub state: ChunkState,
}

impl DataChunk {
    /// One tuple of NULLs in every vector: an OPTIONAL MATCH's padding.
    /// The state is untracked afterwards (no consumer may reuse what it
    /// computed from an earlier content).
    pub fn pad_with_nulls(&mut self) {
        for v in &mut self.vectors {
            v.reset(1);
            v.set_null(0, true);
        }
        self.state.reset(1);
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResultSet {
    pub chunks: Vec<DataChunk>,
    /// Each represented tuple stands for this many identical tuples (set when a
    /// projection drops an unflat chunk whose size must still count).
    pub multiplicity: u64,
    /// Per physical position of the one unflat chunk, how many tuples the
    /// position stands for (times `multiplicity`). Only the extend that
    /// counts each input tuple's rels (`CountMode::Degrees`) sets it, for the
    /// aggregate right after it; it takes it back before pulling its input.
    pub weights: Option<Vec<u64>>,
}

impl ResultSet {
    pub fn vector(&self, chunk: usize, vector: usize) -> &ValueVector {
        &self.chunks[chunk].vectors[vector]
    }

    /// Number of tuples represented (product of chunk tuple counts).
    pub fn num_tuples(&self) -> u64 {
        self.num_tuples_through(self.chunks.len())
    }

    /// Number of tuples the chunks up to `last` represent (weighted
    /// positions count their weight).
    pub fn num_tuples_through(&self, last: usize) -> u64 {
        let chunks = &self.chunks[..(last + 1).min(self.chunks.len())];
        let unflat = chunks.iter().find(|c| !c.state.is_flat());
        let per_tuple = match (&self.weights, unflat) {
            (Some(w), Some(c)) => {
                let mut n = 0;
                c.state.for_each_position(|p| n += w[p]);
                n
            }
            _ => chunks
                .iter()
                .map(|c| c.state.num_tuples() as u64)
                .product::<u64>(),
        };
        per_tuple * self.multiplicity.max(1)
    }

    /// How many tuples position `p` of the unflat chunk stands for, given
    /// the multiplicity a position has without weights.
    #[inline]
    pub fn weight_of(&self, p: usize, unweighted: u64) -> u64 {
        match &self.weights {
            Some(w) => w[p] * self.multiplicity.max(1),
            None => unweighted,
        }
    }

    /// The index of the unflat chunk, if any (the planner keeps at most one).
    pub fn unflat_chunk(&self) -> Option<usize> {
        self.chunks.iter().position(|c| !c.state.is_flat())
    }
}

/// Where each slot lives in a pipeline's result set: `(chunk, vector)`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlotLayout {
    pub positions: hashbrown::HashMap<kith_planner::expr::SlotId, (usize, usize)>,
}

impl SlotLayout {
    pub fn get(&self, slot: kith_planner::expr::SlotId) -> Option<(usize, usize)> {
        self.positions.get(&slot).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `extend_positions` appends what `for_each_position` visits: all of
    /// `0..len`, the selection, or the one flat tuple's position (of the
    /// selection when there is one).
    #[test]
    fn extended_positions_are_the_visited_ones() {
        let states = [
            (5, None, None),
            (0, None, None),
            (6, Some(vec![1, 4, 5]), None),
            (6, Some(vec![1, 4, 5]), Some(1)),
            (3, None, Some(2)),
        ];
        for (len, sel, flat) in states {
            let state = ChunkState {
                len,
                sel,
                flat,
                generation: 0,
            };
            let mut visited = vec![9];
            state.for_each_position(|p| visited.push(p as u32));
            let mut extended = vec![9];
            state.extend_positions(&mut extended);
            assert_eq!(extended, visited, "{state:?}");
        }
    }
}
