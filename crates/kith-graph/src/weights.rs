//! Rel weights of weighted shortest paths, looked up by the rel ids a
//! [`crate::Graph`] reports: offsets into one stored rel table
//! ([`crate::StorageCsr`], or a [`crate::UnionCsr`] walking one table both
//! ways, whose rel ids are the same offsets).

use std::sync::Arc;

use kith_common::Error;

#[derive(Clone, Debug)]
pub enum RelWeights {
    /// Indexed by rel id.
    Dense(Arc<[f64]>),
    /// Read beside the neighbours from the weight column the graph pinned
    /// ([`crate::StorageCsr::with_weights`]), so a search reads only the
    /// weights of the rels it walks; [`RelWeights::get`] knows none.
    Pinned,
}

/// Whether a search may walk a rel of weight `w`: finite and
/// non-negative, or positive when `positive` (all cheapest paths: a rel of
/// weight 0 could close a cycle of cost 0). Checked as the searches read
/// each weight, so a rel no search reaches is never read.
#[inline]
pub fn weight_ok(w: f64, positive: bool) -> bool {
    w.is_finite() && if positive { w > 0.0 } else { w >= 0.0 }
}

/// The error for rel `r` of weight `w` that [`weight_ok`] refuses.
pub fn weight_error(r: u64, w: f64, positive: bool) -> Error {
    if positive && w.is_finite() && w >= 0.0 {
        Error::runtime(format!(
            "all weighted shortest paths need positive weights; rel {r} has weight {w}"
        ))
    } else {
        Error::runtime(format!(
            "weighted shortest path needs finite non-negative weights; rel {r} has weight {w}"
        ))
    }
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
            RelWeights::Pinned => None,
        };
        w.filter(|x| !x.is_nan())
    }

    /// The cost of a path's rels, summed from the source as the searches
    /// sum it (the tests' reference for the cost a search records).
    #[cfg(test)]
    pub fn cost(&self, rels: &[u64]) -> f64 {
        rels.iter()
            .fold(0.0, |c, r| c + self.get(*r).unwrap_or(f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_lookups_and_checks() {
        let d = RelWeights::from(Arc::from(vec![1.0, 0.0]));
        assert_eq!(d.get(1), Some(0.0));
        assert_eq!(d.get(2), None);
        assert_eq!(d.cost(&[0, 0, 1]), 2.0);
        // NaN: an id with no rel.
        let holes = RelWeights::from(Arc::from(vec![f64::NAN, 1.0]));
        assert_eq!(holes.get(0), None);
        assert_eq!(RelWeights::Pinned.get(0), None);
    }

    #[test]
    fn weights_are_checked_one_by_one() {
        assert!(weight_ok(0.0, false) && !weight_ok(0.0, true));
        assert!(weight_ok(2.5, true));
        for bad in [-1.0, f64::INFINITY, f64::NAN] {
            assert!(!weight_ok(bad, false), "{bad}");
        }
        assert!(weight_error(3, 0.0, true)
            .message
            .contains("positive weights"));
        assert!(weight_error(3, -1.0, true).message.contains("non-negative"));
    }
}
