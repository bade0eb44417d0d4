//! Hops left to a destination: a lower bound on the rels a walk still needs
//! from each node to reach one of the wanted destinations, so that walks
//! which cannot end at one within the upper bound are never extended.
//!
//! Seed 003's variable-length query (walks of 1..5 hops from 50 sources to
//! 500 destinations) explores every walk of up to 5 hops, yet almost all of
//! them end far from the 500 destinations; one breadth-first search backwards
//! from the destinations bounds how far each node is from them. The bound
//! stays a lower bound when the search ignores rel masks and node
//! predicates (they only remove walks), so pruning with it never drops a
//! walk that could still match.

use std::sync::Arc;

use crate::graph::Graph;

/// The hops from each node to the nearest node of `targets` (a bit per
/// node) along the rels of `reverse` (the walked graph with every rel
/// turned around), as far as `max` hops; nodes farther away get
/// `max + 1`. `None` when `max` does not fit the bound's byte.
pub fn hops_to_targets<G: Graph>(reverse: &G, targets: &[u64], max: u32) -> Option<HopBound> {
    if max >= u8::MAX as u32 {
        return None;
    }
    let n = reverse.num_nodes() as usize;
    let far = max as u8 + 1;
    let mut hops = vec![far; n];
    let mut frontier: Vec<u64> = Vec::new();
    for (w, &word) in targets.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let v = w as u64 * 64 + bits.trailing_zeros() as u64;
            bits &= bits - 1;
            if (v as usize) < n {
                hops[v as usize] = 0;
                frontier.push(v);
            }
        }
    }
    let mut next = Vec::new();
    let mut scratch = G::Scratch::default();
    for level in 1..=max as u8 {
        for &u in &frontier {
            reverse.neighbor_nodes(u, &mut scratch, |w| {
                let h = &mut hops[w as usize];
                if *h == far {
                    *h = level;
                    next.push(w);
                }
            });
        }
        if next.is_empty() {
            break;
        }
        std::mem::swap(&mut frontier, &mut next);
        next.clear();
    }
    Some(HopBound {
        hops: hops.into(),
        max,
    })
}

/// Whether bounding walks by [`hops_to_targets`] is likely to pay: its
/// backward search costs up to one pass over the rels from the
/// `targets` destinations, the forward walks from `sources` sources up to
/// one pass per source (walks explode as `degree^upper` until they cover
/// the graph). A single source with a short bound over a large graph
/// would spend more on the backward search than it saves.
pub fn bound_pays(sources: u64, targets: u64, nodes: u64, edges: u64, upper: u32) -> bool {
    let degree = (edges as f64 / nodes.max(1) as f64).max(1.0);
    let reach = degree.powi(upper.min(64) as i32);
    let forward = sources as f64 * reach.min(edges as f64);
    let backward = (targets as f64 * reach).min(edges as f64);
    targets < nodes && forward >= backward
}

/// Per node, a lower bound on the hops to a destination (see
/// [`hops_to_targets`]).
#[derive(Clone, Debug)]
pub struct HopBound {
    hops: Arc<[u8]>,
    max: u32,
}

impl HopBound {
    /// Whether a walk reaching `node` after `depth` rels can still end at a
    /// destination within `upper` rels.
    #[inline]
    pub fn may_reach(&self, node: u64, depth: u32, upper: u32) -> bool {
        match self.hops.get(node as usize) {
            Some(&h) => h as u32 <= self.max && depth + h as u32 <= upper,
            // Beyond the graph the search saw: no bound.
            None => true,
        }
    }

    /// Whether `node` is itself a destination.
    #[inline]
    pub fn is_target(&self, node: u64) -> bool {
        self.hops.get(node as usize) == Some(&0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::InMemoryCsr;

    fn mask(n: u64, set: &[u64]) -> Vec<u64> {
        let mut m = vec![0u64; n.div_ceil(64) as usize];
        for &v in set {
            m[(v / 64) as usize] |= 1 << (v % 64);
        }
        m
    }

    #[test]
    fn hops_follow_reverse_rels_and_stop_at_max() {
        // Walked graph 0 -> 1 -> 2 -> 3, 4 isolated; reverse it.
        let fwd = [(0, 1), (1, 2), (2, 3)];
        let rev: Vec<(u64, u64)> = fwd.iter().map(|&(a, b)| (b, a)).collect();
        let g = InMemoryCsr::from_edges(5, &rev);
        let b = hops_to_targets(&g, &mask(5, &[3]), 2).unwrap();
        assert!(b.is_target(3));
        assert!(b.may_reach(2, 0, 2) && b.may_reach(1, 0, 2));
        // Node 1 is 2 hops away: not reachable after 1 rel with upper 2.
        assert!(!b.may_reach(1, 1, 2));
        // Node 0 is 3 hops away, beyond max = 2: never.
        assert!(!b.may_reach(0, 0, 30));
        assert!(!b.may_reach(4, 0, 30));
        assert!(hops_to_targets(&g, &mask(5, &[3]), 255).is_none());
    }

    #[test]
    fn bound_pays_for_many_sources_not_for_one_short_search() {
        // Seed 003: 50 sources, 500 destinations, 65k nodes of degree 8, 5 hops.
        assert!(bound_pays(50, 500, 65_536, 524_288, 5));
        // One source, 3 hops, a million destinations in a big graph.
        assert!(!bound_pays(1, 1_000_000, 10_000_000, 400_000_000, 3));
        // Every node a destination: nothing to prune.
        assert!(!bound_pays(50, 65_536, 65_536, 524_288, 5));
    }
}
