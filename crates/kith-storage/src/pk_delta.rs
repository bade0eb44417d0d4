//! The insert delta of a node table's primary-key index: keys added since
//! the index was last built, key → offset.
//!
//! Each commit makes a new table version, so the delta is copied on every
//! write. It has two levels so that copy is small: a large `base` shared
//! (`Arc`) between versions, and a `recent` level of at most
//! [`RECENT_MAX`] changes (additions, and tombstones for base keys deleted
//! since) that is folded into a new base when it fills. Adding one key thus
//! copies at most `RECENT_MAX` entries plus, amortised, `len / RECENT_MAX`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::node_table::PkKey;

/// Changes the recent level holds before it is folded into the base.
pub const RECENT_MAX: usize = 64;

#[derive(Debug, Clone, Default)]
pub struct PkDelta {
    base: Arc<BTreeMap<PkKey, u64>>,
    /// `Some(offset)`: added (or replaced); `None`: removed from `base`.
    recent: BTreeMap<PkKey, Option<u64>>,
    len: usize,
}

impl PkDelta {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, key: &PkKey) -> Option<u64> {
        match self.recent.get(key) {
            Some(v) => *v,
            None => self.base.get(key).copied(),
        }
    }

    pub fn insert(&mut self, key: PkKey, offset: u64) {
        if self.get(&key).is_none() {
            self.len += 1;
        }
        self.recent.insert(key, Some(offset));
        self.fold_if_full();
    }

    pub fn remove(&mut self, key: &PkKey) {
        if self.get(key).is_none() {
            return;
        }
        self.len -= 1;
        if self.base.contains_key(key) {
            self.recent.insert(key.clone(), None);
        } else {
            self.recent.remove(key);
        }
        self.fold_if_full();
    }

    fn fold_if_full(&mut self) {
        if self.recent.len() <= RECENT_MAX {
            return;
        }
        let base = Arc::make_mut(&mut self.base);
        for (k, v) in std::mem::take(&mut self.recent) {
            match v {
                Some(o) => {
                    base.insert(k, o);
                }
                None => {
                    base.remove(&k);
                }
            }
        }
    }

    /// Calls `f` with every (key, offset), in key order (a merge of the
    /// two levels, copying nothing).
    pub fn for_each(&self, mut f: impl FnMut(&PkKey, u64)) {
        let mut base = self.base.iter().peekable();
        for (k, v) in &self.recent {
            while let Some((bk, bo)) = base.next_if(|(bk, _)| *bk < k) {
                f(bk, *bo);
            }
            base.next_if(|(bk, _)| *bk == k);
            if let Some(o) = v {
                f(k, *o);
            }
        }
        for (bk, bo) in base {
            f(bk, *bo);
        }
    }

    /// Every (key, offset), in key order.
    pub fn entries(&self) -> Vec<(PkKey, u64)> {
        let mut out = Vec::with_capacity(self.len);
        self.for_each(|k, o| out.push((k.clone(), o)));
        out
    }
}

impl FromIterator<(PkKey, u64)> for PkDelta {
    fn from_iter<I: IntoIterator<Item = (PkKey, u64)>>(iter: I) -> PkDelta {
        let base: BTreeMap<PkKey, u64> = iter.into_iter().collect();
        PkDelta {
            len: base.len(),
            base: Arc::new(base),
            recent: BTreeMap::new(),
        }
    }
}

/// Equal when they map the same keys (however the levels split them).
impl PartialEq for PkDelta {
    fn eq(&self, other: &PkDelta) -> bool {
        self.len == other.len && self.entries() == other.entries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a plain map, through inserts, re-inserts and removals
        /// of base and recent keys, across many folds.
        #[test]
        fn behaves_like_a_map(ops in prop::collection::vec((any::<bool>(), 0u64..300, any::<u64>()), 0..1500)) {
            let mut d = PkDelta::default();
            let mut r: BTreeMap<PkKey, u64> = BTreeMap::new();
            for (add, k, o) in ops {
                let key = PkKey::Int(k);
                if add {
                    d.insert(key.clone(), o);
                    r.insert(key.clone(), o);
                } else {
                    d.remove(&key);
                    r.remove(&key);
                }
                prop_assert_eq!(d.len(), r.len());
                prop_assert_eq!(d.get(&key), r.get(&key).copied());
            }
            prop_assert_eq!(d.entries(), r.clone().into_iter().collect::<Vec<_>>());
            let rebuilt: PkDelta = r.into_iter().collect();
            prop_assert!(rebuilt == d);
        }
    }
}
