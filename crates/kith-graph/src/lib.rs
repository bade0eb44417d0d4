//! The core of KithDB's IFE (iterative frontier extension) recursive-join
//! operator (issue 4; VLDB 2025 "Robust Recursive Query Parallelism").
//!
//! Job: given a [`Graph`] (neighbour scans over dense node offsets of one
//! node table: an in-memory CSR or pinned `kith-storage` CSR groups) and a
//! list of sources, run a recursive computation ([`Compute`]: per-edge
//! updates plus per-source auxiliary state) from every source and stream the
//! result rows to a [`Sink`]:
//!
//! - [`ShortestLengths`]: BFS levels (single source, or 64 sources in bit
//!   lanes for nTkMS);
//! - [`AllShortestCounts`]: number of shortest paths per destination;
//! - [`WalkCounts`]: number of walks of each length `lower..=upper`,
//!   propagated per node level by level (never enumerated);
//! - [`WeightedShortest`]: frontier relaxation on a rel-id-indexed weight array;
//! - [`ShortestPaths`]: one or all shortest paths, from [`compute::Parents`]
//!   (per-worker arenas linked into a dense head array with CAS);
//! - [`WalkPaths`]: every walk, trail or acyclic path enumerated by a
//!   per-source DFS with a node/rel stack (when the paths themselves are
//!   needed: a bound rel variable, a named path);
//! - [`WeightedPaths`]: one weighted shortest path per destination, by a
//!   per-source Dijkstra that keeps parents.
//!
//! Parallelism follows the paper's morsel dispatching policies ([`Policy`]:
//! 1T1S, nT1S, nTkS, nTkMS) on the shared [`kith_sched::Scheduler`], with the
//! cancel token checked once per morsel. Frontiers are dense atomic bitsets
//! with a sparse list when below 1/8 of the nodes. Every policy and thread
//! count produces the same rows (in a different order).
//!
//! Rel conditions are a rel-id mask on [`StorageCsr`]; undirected patterns
//! are a [`UnionCsr`] with both directions of a table.
//!
//! Predicates on path nodes are a node mask (intermediate nodes only) of
//! [`WalkPaths`] and of the shortest and weighted searches; the counting
//! computations take none. A destination mask
//! bounds walks: [`hops_to_targets`] searches backwards from the
//! destinations, and [`WalkCounts`] and [`WalkPaths`] extend no walk that
//! cannot reach one within the upper bound.
//!
//! Boundaries: no parsing, no planning; the planner maps a query to a
//! [`Compute`], a [`Graph`], the source list and the destination handling.

pub mod bits;
pub mod compute;
pub mod distance;
pub mod engine;
pub mod graph;
pub mod paths;
pub mod weighted_paths;
pub mod weights;

pub use compute::{
    all_shortest_counts, shortest_lengths, shortest_lengths_pulling, shortest_paths, tree_parent,
    tree_path, walk_counts, weighted_shortest, AllShortestCounts, CostRow, LenRow, ParentTree,
    PathMode, PathRow, ShortestLengths, ShortestPaths, ShortestTrees, TreeRow, WalkCounts,
    WeightedShortest, MAX_UPPER,
};
pub use distance::{bound_pays, hops_to_targets, HopBound};
pub use engine::{
    run_ife, run_ife_with_reverse, Budget, CollectSink, Compute, IfeOptions, Nodes, Policy,
    RunStats, Sink, StateBudget, Visit,
};
pub use graph::{mask_has, Graph, InMemoryCsr, StorageCsr, StorageScratch, UnionCsr, UnionMember};
pub use paths::{walk_paths, PathSemantics, WalkPaths};
pub use weighted_paths::{AllWeightedCounts, CostCountRow, WeightedPaths};
pub use weights::RelWeights;
