//! Rel weights of weighted shortest paths, looked up by the rel ids a
//! [`crate::Graph`] reports: offsets into one stored rel table
//! ([`crate::StorageCsr`]), or raw internal ids of several tables, or of one
//! table walked both ways ([`crate::UnionCsr`]).

use std::sync::Arc;

use kith_common::{Error, InternalId, Result, TableId};

#[derive(Clone, Debug)]
pub enum RelWeights {
    /// Indexed by rel id.
    Dense(Arc<[f64]>),
    /// Per rel table, indexed by the offset of a raw internal id.
    ByTable(Arc<[(TableId, Arc<[f64]>)]>),
}

impl From<Arc<[f64]>> for RelWeights {
    fn from(w: Arc<[f64]>) -> RelWeights {
        RelWeights::Dense(w)
    }
}

impl RelWeights {
    /// The weight of rel `r`; `None` when the arrays do not cover it or
    /// mark it as no rel (NaN).
    #[inline]
    pub fn get(&self, r: u64) -> Option<f64> {
        let w = match self {
            RelWeights::Dense(w) => w.get(r as usize).copied(),
            RelWeights::ByTable(tables) => {
                let id = InternalId(r);
                let (_, w) = tables.iter().find(|(t, _)| *t == id.table())?;
                w.get(id.offset() as usize).copied()
            }
        };
        w.filter(|x| !x.is_nan())
    }

    /// Every weight must be finite and non-negative, or positive when
    /// `positive` (all cheapest paths: a rel of weight 0 could close a cycle
    /// of cost 0). NaN marks an id with no rel (a deleted one; a stored
    /// weight is never NaN) and is skipped.
    pub fn check(&self, positive: bool) -> Result<()> {
        let arrays: Vec<&[f64]> = match self {
            RelWeights::Dense(w) => vec![w],
            RelWeights::ByTable(t) => t.iter().map(|(_, w)| &w[..]).collect(),
        };
        for w in arrays {
            if let Some((r, x)) = w
                .iter()
                .enumerate()
                .find(|(_, x)| !(x.is_nan() || x.is_finite() && **x >= 0.0))
            {
                return Err(Error::runtime(format!(
                    "weighted shortest path needs finite non-negative weights; rel {r} has weight {x}"
                )));
            }
            if let Some((r, x)) = w.iter().enumerate().find(|(_, x)| positive && **x <= 0.0) {
                return Err(Error::runtime(format!(
                    "all weighted shortest paths need positive weights; rel {r} has weight {x}"
                )));
            }
        }
        Ok(())
    }

    /// Entries in all arrays (for messages).
    pub fn len(&self) -> usize {
        match self {
            RelWeights::Dense(w) => w.len(),
            RelWeights::ByTable(t) => t.iter().map(|(_, w)| w.len()).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cost of a path's rels, summed from the source as the searches
    /// sum it.
    pub fn cost(&self, rels: &[u64]) -> f64 {
        rels.iter()
            .fold(0.0, |c, r| c + self.get(*r).unwrap_or(f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_by_table_lookups_and_checks() {
        let d = RelWeights::from(Arc::from(vec![1.0, 0.0]));
        assert_eq!(d.get(1), Some(0.0));
        assert_eq!(d.get(2), None);
        assert!(d.check(false).is_ok());
        assert!(d.check(true).is_err());
        assert_eq!(d.cost(&[0, 0, 1]), 2.0);
        let t = RelWeights::ByTable(Arc::from(vec![
            (TableId(3), Arc::from(vec![0.5, 2.0])),
            (TableId(5), Arc::from(vec![4.0])),
        ]));
        assert_eq!(t.get(InternalId::new(TableId(3), 1).0), Some(2.0));
        assert_eq!(t.get(InternalId::new(TableId(5), 0).0), Some(4.0));
        assert_eq!(t.get(InternalId::new(TableId(4), 0).0), None);
        assert!(t.check(true).is_ok());
        let bad = RelWeights::from(Arc::from(vec![-1.0]));
        assert!(bad.check(false).is_err());
        let infinite = RelWeights::from(Arc::from(vec![f64::INFINITY]));
        assert!(infinite.check(false).is_err());
        // NaN: an id with no rel.
        let holes = RelWeights::from(Arc::from(vec![f64::NAN, 1.0]));
        assert!(holes.check(true).is_ok());
        assert_eq!(holes.get(0), None);
    }
}
