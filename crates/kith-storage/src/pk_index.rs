//! The primary-key hash index of a node table: key → node offset.
//!
//! An open-addressing table of `(key, offset)` slots in a run of pages, with a
//! power-of-two capacity at most 70% full. Integer-like keys (including DATE) are
//! stored exactly as their 64-bit pattern; STRING keys are stored as their xxh3
//! hash and confirmed against the key column by the caller, so a hash collision
//! can never return a wrong node. Like every chunk, an index is immutable once
//! written; bulk loads write a new one.

use std::sync::Arc;

use kith_common::codec::{Decoder, Encoder};
use kith_common::{Error, Result, Value};
use kith_pager::{OwnedPin, Pager};

use crate::column::PageRun;

const EMPTY: u64 = u64::MAX;
/// Fill factor limit in percent.
const MAX_LOAD_PERCENT: u64 = 70;

/// A key as the index stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexKey(pub u64);

/// Which kind of keys an index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// The key's own 64-bit pattern (signed values as two's complement).
    Int,
    /// xxh3 of the UTF-8 bytes; needs confirmation against the key column.
    StrHash,
}

impl IndexKey {
    pub fn of_str(s: &str) -> IndexKey {
        IndexKey(xxhash_rust::xxh3::xxh3_64(s.as_bytes()))
    }

    /// The index key of a value for an index of `kind`, or None if the value
    /// cannot be a key of that kind (then no node has it).
    pub fn of_value(v: &Value, kind: KeyKind) -> Option<IndexKey> {
        match (kind, v) {
            (KeyKind::StrHash, Value::String(s)) => Some(IndexKey::of_str(s)),
            (KeyKind::Int, Value::UInt64(u)) => Some(IndexKey(*u)),
            (KeyKind::Int, Value::Date(d)) => Some(IndexKey(d.0 as i64 as u64)),
            (KeyKind::Int, v) => v.as_i64().map(|i| IndexKey(i as u64)),
            _ => None,
        }
    }
}

#[inline]
fn mix(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Debug, Clone, PartialEq)]
pub struct PkIndex {
    pub kind: KeyKind,
    pub num_keys: u64,
    pub capacity: u64,
    pub slots: PageRun,
}

impl PkIndex {
    /// Builds and writes an index over `(key, offset)` pairs. Keys must be unique
    /// for `Int` indexes (the loader checks duplicates first).
    pub fn build(
        pager: &Pager,
        kind: KeyKind,
        entries: impl ExactSizeIterator<Item = (IndexKey, u64)>,
    ) -> Result<PkIndex> {
        let num_keys = entries.len() as u64;
        let capacity = (num_keys * 100 / MAX_LOAD_PERCENT + 1)
            .next_power_of_two()
            .max(16);
        let mask = capacity - 1;
        let mut slots = vec![EMPTY; capacity as usize * 2];
        for (key, offset) in entries {
            let mut pos = mix(key.0) & mask;
            while slots[pos as usize * 2 + 1] != EMPTY {
                pos = (pos + 1) & mask;
            }
            slots[pos as usize * 2] = key.0;
            slots[pos as usize * 2 + 1] = offset;
        }
        let run = PageRun::write(pager, bytemuck::cast_slice(&slots))?;
        Ok(PkIndex {
            kind,
            num_keys,
            capacity,
            slots: run,
        })
    }

    pub fn pin(&self, pager: &Arc<Pager>) -> Result<PinnedPkIndex> {
        Ok(PinnedPkIndex {
            capacity: self.capacity,
            pin: self.slots.pin(pager)?,
        })
    }

    pub fn encode(&self, e: &mut Encoder) {
        e.u8(match self.kind {
            KeyKind::Int => 0,
            KeyKind::StrHash => 1,
        });
        e.u64(self.num_keys);
        e.u64(self.capacity);
        e.u32(self.slots.first);
        e.u32(self.slots.count);
    }

    pub fn decode(d: &mut Decoder<'_>) -> Result<PkIndex> {
        let kind = match d.u8()? {
            0 => KeyKind::Int,
            1 => KeyKind::StrHash,
            k => return Err(Error::corruption(format!("unknown index kind {k}"))),
        };
        let num_keys = d.u64()?;
        let capacity = d.u64()?;
        if !capacity.is_power_of_two() {
            return Err(Error::corruption("index capacity is not a power of two"));
        }
        Ok(PkIndex {
            kind,
            num_keys,
            capacity,
            slots: PageRun {
                first: d.u32()?,
                count: d.u32()?,
            },
        })
    }
}

/// An index with its slots pinned, for many lookups.
pub struct PinnedPkIndex {
    capacity: u64,
    pin: Option<OwnedPin>,
}

impl PinnedPkIndex {
    fn slots(&self) -> &[u64] {
        match &self.pin {
            Some(p) => bytemuck::try_cast_slice(&p[..]).unwrap_or(&[]),
            None => &[],
        }
    }

    /// Every offset whose stored key equals `key`, until `confirm` accepts one.
    /// For `Int` indexes pass `|_| true`.
    #[inline]
    pub fn lookup(&self, key: IndexKey, mut confirm: impl FnMut(u64) -> bool) -> Option<u64> {
        let slots = self.slots();
        if slots.len() < (self.capacity * 2) as usize {
            return None;
        }
        let mask = self.capacity - 1;
        let mut pos = mix(key.0) & mask;
        // A valid index always has an empty slot (its load is bounded); the
        // bound only keeps a damaged one from looping forever.
        for _ in 0..self.capacity {
            let offset = slots[pos as usize * 2 + 1];
            if offset == EMPTY {
                return None;
            }
            if slots[pos as usize * 2] == key.0 && confirm(offset) {
                return Some(offset);
            }
            pos = (pos + 1) & mask;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_pager::PagerConfig;

    #[test]
    fn lookups_find_built_keys_and_end_on_a_full_table() {
        let pager = Arc::new(Pager::in_memory(PagerConfig::default()));
        let entries: Vec<(IndexKey, u64)> = (0..100).map(|k| (IndexKey(k * 7), k)).collect();
        let index = PkIndex::build(&pager, KeyKind::Int, entries.into_iter()).unwrap();
        let pinned = index.pin(&pager).unwrap();
        assert_eq!(pinned.lookup(IndexKey(21), |_| true), Some(3));
        assert_eq!(pinned.lookup(IndexKey(22), |_| true), None);
        // Every slot taken (a damaged index): a miss ends instead of looping.
        let full = vec![1u64; 32];
        let run = PageRun::write(&pager, bytemuck::cast_slice(&full)).unwrap();
        let damaged = PkIndex {
            kind: KeyKind::Int,
            num_keys: 16,
            capacity: 16,
            slots: run,
        };
        let pinned = damaged.pin(&pager).unwrap();
        assert_eq!(pinned.lookup(IndexKey(5), |_| true), None);
        assert_eq!(pinned.lookup(IndexKey(1), |_| true), Some(1));
    }
}
