//! Path values: a walk of nodes and the rels between them.
//!
//! A path either owns its elements (one `Arc` per node and rel: paths
//! built one at a time, by `_path` or the API) or names them by position
//! in a [`PathPool`] that a whole result's paths share. A recursive join
//! returns millions of paths over the same few hundred thousand elements;
//! an `Arc` per element per path costs two atomic operations on the
//! element's counter (clone and drop), each a cache miss on memory shared
//! by every worker, which was most of the time of such queries. A pooled
//! path costs one allocation and one count on its worker's own handle,
//! and reading its length touches no element.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::value::{NodeValue, RelValue};

/// A path: `node_count() == rel_count() + 1`.
#[derive(Clone)]
pub struct PathValue {
    elements: Elements,
}

#[derive(Clone)]
enum Elements {
    Owned {
        nodes: Vec<Arc<NodeValue>>,
        rels: Vec<Arc<RelValue>>,
    },
    /// Positions in the pool: the nodes, then the rels.
    Pooled {
        pool: PathPoolHandle,
        positions: Box<[u32]>,
    },
}

/// The node and rel values that many paths are made of, by position.
/// Each gets its `Arc` when a path first hands it out: a query that only
/// measures its paths never does, and an allocation per element was a
/// large part of building the pool.
#[derive(Debug, Default)]
pub struct PathPool {
    nodes: Vec<NodeValue>,
    rels: Vec<RelValue>,
    node_arcs: Box<[OnceLock<Arc<NodeValue>>]>,
    rel_arcs: Box<[OnceLock<Arc<RelValue>>]>,
}

impl PathPool {
    pub fn new(nodes: Vec<NodeValue>, rels: Vec<RelValue>) -> PathPool {
        PathPool {
            node_arcs: nodes.iter().map(|_| OnceLock::new()).collect(),
            rel_arcs: rels.iter().map(|_| OnceLock::new()).collect(),
            nodes,
            rels,
        }
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn rel_count(&self) -> usize {
        self.rels.len()
    }

    /// Node `i` of the pool.
    pub fn node(&self, i: usize) -> Option<&Arc<NodeValue>> {
        (i < self.nodes.len()).then(|| self.node_at(i))
    }

    /// Rel `i` of the pool.
    pub fn rel(&self, i: usize) -> Option<&Arc<RelValue>> {
        (i < self.rels.len()).then(|| self.rel_at(i))
    }

    fn node_at(&self, i: usize) -> &Arc<NodeValue> {
        self.node_arcs[i].get_or_init(|| Arc::new(self.nodes[i].clone()))
    }

    fn rel_at(&self, i: usize) -> &Arc<RelValue> {
        self.rel_arcs[i].get_or_init(|| Arc::new(self.rels[i].clone()))
    }
}

/// One worker's reference to a [`PathPool`]: the paths a worker builds
/// count on their worker's handle, so no counter is shared between cores
/// (a handle is an `Arc` of the pool's `Arc`).
#[derive(Clone, Debug)]
pub struct PathPoolHandle(Arc<Counted>);

/// The pool as a handle holds it: the handle's `Arc` counts paths, this
/// one handles.
#[derive(Debug)]
struct Counted(Arc<PathPool>);

impl PathPoolHandle {
    /// A new handle (with a counter of its own) on `pool`.
    pub fn new(pool: &Arc<PathPool>) -> PathPoolHandle {
        PathPoolHandle(Arc::new(Counted(Arc::clone(pool))))
    }

    pub fn pool(&self) -> &PathPool {
        &self.0 .0
    }
}

impl PathValue {
    /// A path owning its elements; `None` unless there is one node more
    /// than rels.
    pub fn new(nodes: Vec<Arc<NodeValue>>, rels: Vec<Arc<RelValue>>) -> Option<PathValue> {
        (nodes.len() == rels.len() + 1).then_some(PathValue {
            elements: Elements::Owned { nodes, rels },
        })
    }

    /// A path through the pool's nodes at `positions[..n]` and rels at
    /// `positions[n..]` (`n` = rels + 1); `None` when the count is not
    /// odd or a position is beyond the pool.
    pub fn pooled(pool: &PathPoolHandle, positions: Box<[u32]>) -> Option<PathValue> {
        let n = positions.len().div_ceil(2);
        let p = pool.pool();
        let fits = positions.len() % 2 == 1
            && positions[..n]
                .iter()
                .all(|&i| (i as usize) < p.node_count())
            && positions[n..].iter().all(|&i| (i as usize) < p.rel_count());
        fits.then(|| PathValue {
            elements: Elements::Pooled {
                pool: pool.clone(),
                positions,
            },
        })
    }

    pub fn node_count(&self) -> usize {
        match &self.elements {
            Elements::Owned { nodes, .. } => nodes.len(),
            Elements::Pooled { positions, .. } => positions.len().div_ceil(2),
        }
    }

    pub fn rel_count(&self) -> usize {
        self.node_count() - 1
    }

    /// Node `i` (from the start).
    pub fn node(&self, i: usize) -> Option<&Arc<NodeValue>> {
        (i < self.node_count()).then(|| self.node_at(i))
    }

    /// Rel `i` (from the start).
    pub fn rel(&self, i: usize) -> Option<&Arc<RelValue>> {
        (i < self.rel_count()).then(|| self.rel_at(i))
    }

    // Indexes in range: positions were checked against the pool when the
    // path was made.
    fn node_at(&self, i: usize) -> &Arc<NodeValue> {
        match &self.elements {
            Elements::Owned { nodes, .. } => &nodes[i],
            Elements::Pooled { pool, positions } => pool.pool().node_at(positions[i] as usize),
        }
    }

    fn rel_at(&self, i: usize) -> &Arc<RelValue> {
        match &self.elements {
            Elements::Owned { rels, .. } => &rels[i],
            Elements::Pooled { pool, positions } => {
                let n = positions.len().div_ceil(2);
                pool.pool().rel_at(positions[n + i] as usize)
            }
        }
    }

    pub fn nodes(&self) -> impl DoubleEndedIterator<Item = &Arc<NodeValue>> + ExactSizeIterator {
        (0..self.node_count()).map(move |i| self.node_at(i))
    }

    pub fn rels(&self) -> impl DoubleEndedIterator<Item = &Arc<RelValue>> + ExactSizeIterator {
        (0..self.rel_count()).map(move |i| self.rel_at(i))
    }

    pub fn first_node(&self) -> Option<&Arc<NodeValue>> {
        self.node(0)
    }

    pub fn last_node(&self) -> Option<&Arc<NodeValue>> {
        self.node(self.node_count().checked_sub(1)?)
    }
}

impl PartialEq for PathValue {
    fn eq(&self, other: &Self) -> bool {
        self.node_count() == other.node_count()
            && self.nodes().zip(other.nodes()).all(|(a, b)| a == b)
            && self.rels().zip(other.rels()).all(|(a, b)| a == b)
    }
}

impl fmt::Debug for PathValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathValue")
            .field("nodes", &self.nodes().collect::<Vec<_>>())
            .field("rels", &self.rels().collect::<Vec<_>>())
            .finish()
    }
}

/// Node and rel values for tests: node `i` of table 1, rel `i` of table
/// 2 from node `src` to node `dst`, no properties.
#[cfg(test)]
pub(crate) mod test_elements {
    use std::sync::Arc;

    use crate::value::{NodeValue, RelValue};
    use crate::{InternalId, TableId};

    pub fn node(i: u64) -> Arc<NodeValue> {
        Arc::new(NodeValue {
            id: InternalId::new(TableId(1), i),
            label: "N".into(),
            properties: Arc::from(Vec::new()),
        })
    }

    pub fn rel(i: u64, src: u64, dst: u64) -> Arc<RelValue> {
        Arc::new(RelValue {
            id: InternalId::new(TableId(2), i),
            label: "R".into(),
            src: InternalId::new(TableId(1), src),
            dst: InternalId::new(TableId(1), dst),
            properties: Arc::from(Vec::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::test_elements::{node, rel};
    use super::*;

    /// A pooled path reads back the elements at its positions and equals
    /// the owned path of the same elements; positions must fit the pool
    /// and make one node more than rels.
    #[test]
    fn pooled_paths_read_their_positions() {
        let unshared = |v: Arc<NodeValue>| (*v).clone();
        let pool = Arc::new(PathPool::new(
            (0..4).map(node).map(unshared).collect(),
            [rel(0, 3, 1), rel(1, 1, 2), rel(2, 0, 0)]
                .map(|r| (*r).clone())
                .into(),
        ));
        let h = PathPoolHandle::new(&pool);
        let p = PathValue::pooled(&h, vec![3, 1, 2, 0, 1].into_boxed_slice()).unwrap();
        assert_eq!((p.node_count(), p.rel_count()), (3, 2));
        let ids = |p: &PathValue| p.nodes().map(|n| n.id.offset()).collect::<Vec<_>>();
        assert_eq!(ids(&p), [3, 1, 2]);
        assert_eq!(
            p.nodes().rev().map(|n| n.id.offset()).collect::<Vec<_>>(),
            [2, 1, 3]
        );
        assert_eq!(p.rels().map(|r| r.id.offset()).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(p.last_node().map(|n| n.id.offset()), Some(2));
        assert!(p.node(3).is_none() && p.rel(2).is_none());
        let owned = PathValue::new(
            vec![node(3), node(1), node(2)],
            vec![rel(0, 3, 1), rel(1, 1, 2)],
        )
        .unwrap();
        assert_eq!(p, owned);
        let other = PathValue::pooled(&h, vec![3, 1, 0, 0, 1].into_boxed_slice()).unwrap();
        assert_ne!(p, other);
        // A lone node is a path of length 0.
        let lone = PathValue::pooled(&h, vec![2].into_boxed_slice()).unwrap();
        assert_eq!((lone.node_count(), lone.rel_count()), (1, 0));
        // Even counts, positions beyond the pool, rels without their nodes.
        assert!(PathValue::pooled(&h, vec![0, 1].into_boxed_slice()).is_none());
        assert!(PathValue::pooled(&h, vec![0, 4, 0].into_boxed_slice()).is_none());
        assert!(PathValue::pooled(&h, vec![0, 1, 3].into_boxed_slice()).is_none());
        assert!(PathValue::pooled(&h, Vec::new().into_boxed_slice()).is_none());
        assert!(PathValue::new(vec![node(0)], vec![rel(0, 0, 0)]).is_none());
        // Paths count on their handle; the pool is shared once per handle.
        let h2 = PathPoolHandle::new(&pool);
        assert_eq!(Arc::strong_count(&pool), 3);
        drop((p, other, lone, h, h2));
        assert_eq!(Arc::strong_count(&pool), 1);
    }
}
