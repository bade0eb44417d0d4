//! Cost-based join order: dynamic programming over the connected sets of a
//! pattern's nodes.
//!
//! A pipeline binds one node (a scan, a key lookup or the input rows) and
//! then adds the others one at a time: by extending one rel from a bound
//! node (the other rels to the new node become filters that close cycles),
//! or by intersecting the neighbour lists of two or more bound nodes. The
//! order decides how many tuples flow between the steps, so it is chosen
//! here: for every connected set of nodes the cheapest way to bind it,
//! from the cheapest ways to bind its subsets one node smaller (the DPsub
//! scheme over connected subgraphs, left-deep).
//!
//! The cost of an order is the sum of the tuples each step produces
//! (C_out): a scan produces its table's rows, an extend `card · degree`
//! before its filters, an intersection only the tuples that survive it.
//! Cardinalities come from table sizes (`cardinality`), average degrees per
//! rel table and direction (rels / rows of the table extended from; a
//! closing rel keeps `degree / rows of the far table` of the tuples), and
//! the classic fixed selectivities for predicates (System R's): key
//! equality `1/rows`, `=` 0.1, ranges 1/3, and so on. Equal costs keep the
//! planner's earlier preferences (see `mod.rs`), so plans change only where
//! the estimates tell them apart.
//!
//! Sets of more than [`MAX_DP_NODES`] unbound nodes fall back to the greedy
//! order.

use std::collections::HashMap;

use kith_catalog::Catalog;
use kith_common::{TableId, Value};
use kith_parser::ast::{BinaryOp, UnaryOp};

use crate::bound::QueryGraph;
use crate::expr::{BoundExpr, BoundExprKind, SlotId};

/// The most nodes the dynamic program orders (2^n states).
pub const MAX_DP_NODES: usize = 14;

/// Selectivities for predicates whose values the statistics do not know.
const EQ_SELECTIVITY: f64 = 0.1;
const RANGE_SELECTIVITY: f64 = 1.0 / 3.0;
const DEFAULT_SELECTIVITY: f64 = 0.5;

/// Estimates for one table choice of a pattern.
pub struct Estimates {
    /// Rows of each node's table, at least 1.
    node_rows: Vec<f64>,
    /// Rels of each rel's table.
    rel_rows: Vec<f64>,
    /// Per predicate: the nodes that must be bound before it can run (a rel
    /// slot needs both ends), as a bit set, and its selectivity.
    predicates: Vec<(u64, f64)>,
    /// Nodes that, bound last by an extend, are only counted (see
    /// [`Estimates::count_only`]).
    counted: u64,
}

/// The best order found for a set of nodes.
#[derive(Debug, Clone)]
pub struct JoinOrder {
    /// Nodes in the order they are bound (the start first when it is a
    /// scan; nodes bound before are left out).
    pub order: Vec<usize>,
    /// Estimated tuples produced by all steps.
    pub cost: f64,
    /// Estimated tuples after the last step.
    pub rows: f64,
}

impl JoinOrder {
    /// The start of an order from bound nodes: one tuple, nothing spent.
    fn from_rows() -> JoinOrder {
        JoinOrder {
            order: Vec::new(),
            cost: 0.0,
            rows: 1.0,
        }
    }
}

/// How one node joins a bound set.
struct Join {
    /// The rel extended (None: an intersection of all of `rels`).
    extend: Option<usize>,
    rels: Vec<usize>,
}

impl Estimates {
    /// `predicates` are the part's and the table choice's; isomorphism
    /// tests cost nothing and are left out by the caller.
    pub fn new<'p>(
        g: &QueryGraph,
        catalog: &Catalog,
        node_tables: &[TableId],
        rel_tables: &[TableId],
        predicates: impl Iterator<Item = &'p BoundExpr>,
        cardinality: &dyn Fn(TableId) -> u64,
    ) -> Estimates {
        let node_rows: Vec<f64> = node_tables
            .iter()
            .map(|t| (cardinality(*t) as f64).max(1.0))
            .collect();
        let rel_rows = rel_tables.iter().map(|t| cardinality(*t) as f64).collect();
        // Which node a slot belongs to (a rel's slots: both its ends).
        let mut owner: HashMap<SlotId, u64> = HashMap::new();
        for (i, n) in g.nodes.iter().enumerate() {
            for s in std::iter::once(n.id_slot).chain(n.properties.iter().map(|p| p.1)) {
                owner.insert(s, bit(i));
            }
        }
        for r in &g.rels {
            for s in std::iter::once(r.id_slot).chain(r.properties.iter().map(|p| p.1)) {
                owner.insert(s, bit(r.left) | bit(r.right));
            }
        }
        // Primary-key property slots: an equality on one fixes one row.
        let key_slot: HashMap<SlotId, usize> = g
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let entry = catalog.table(node_tables[i])?;
                let pk = entry.primary_key()?;
                let slot = n.properties.iter().find(|p| p.0 == pk.name)?.1;
                Some((slot, i))
            })
            .collect();
        let predicates = predicates
            .map(|e| {
                let mut slots = Vec::new();
                e.slots(&mut slots);
                let needs = slots
                    .iter()
                    .filter_map(|s| owner.get(s))
                    .fold(0, |m, b| m | b);
                let key_rows = |s: &SlotId| key_slot.get(s).map(|&i| node_rows[i]);
                (needs, selectivity(e, &key_rows))
            })
            .collect();
        Estimates {
            node_rows,
            rel_rows,
            predicates,
            counted: 0,
        }
    }

    /// Marks `nodes` (a bit set) as counted when bound last: leaves that
    /// nothing reads, of a part that aggregates. Their extend ends the
    /// pipeline and reads each tuple's degree instead of writing its
    /// neighbours (`CountMode::Degrees`, `CountMode::Collapse` in kith-exec), so
    /// it costs one read per input tuple, not one tuple per rel: an order
    /// that leaves such a node last can be far cheaper (`count(DISTINCT
    /// b)` over `(a)-[:R]->(b)` scans `b` and reads its in-degrees).
    pub fn count_only(mut self, nodes: u64) -> Estimates {
        self.counted = nodes;
        self
    }

    /// Average rels per node when rel `ri` is walked from its end `from`.
    pub fn degree(&self, g: &QueryGraph, ri: usize, from: usize) -> f64 {
        let r = &g.rels[ri];
        debug_assert!(r.left == from || r.right == from);
        self.rel_rows[ri] / self.node_rows[from]
    }

    /// The fraction of tuples the predicates that become ready when `added`
    /// joins `bound` keep.
    pub(super) fn ready_selectivity(&self, bound: u64, added: u64) -> f64 {
        let after = bound | added;
        self.predicates
            .iter()
            .filter(|(needs, _)| needs & after == *needs && needs & bound != *needs)
            .map(|(_, s)| s)
            .product()
    }

    /// The rel to extend to `y` from the bound set (fewest rels per tuple),
    /// or an intersection when `intersect` allows one.
    fn join(
        &self,
        g: &QueryGraph,
        bound: u64,
        y: usize,
        intersect: &dyn Fn(usize, u64) -> Vec<usize>,
    ) -> Option<Join> {
        let rels = intersect(y, bound);
        if rels.len() >= 2 {
            return Some(Join { extend: None, rels });
        }
        let mut rels: Vec<usize> = (0..g.rels.len())
            .filter(|&i| {
                let r = &g.rels[i];
                r.recursive.is_none()
                    && ((r.left == y && bound & bit(r.right) != 0)
                        || (r.right == y && bound & bit(r.left) != 0))
            })
            .collect();
        let from = |i: usize| other_end(g, i, y);
        let best = rels.iter().copied().min_by(|&a, &b| {
            self.degree(g, a, from(a))
                .total_cmp(&self.degree(g, b, from(b)))
                .then(a.cmp(&b))
        })?;
        rels.retain(|&i| i != best);
        Some(Join {
            extend: Some(best),
            rels,
        })
    }

    /// (cost, rows) of binding `y` after `bound` (holding `rows` tuples),
    /// the last of the nodes `all` when `bound | y` is `all`.
    fn step(
        &self,
        g: &QueryGraph,
        (bound, all): (u64, u64),
        rows: f64,
        y: usize,
        join: &Join,
    ) -> (f64, f64) {
        let from = |i: usize| other_end(g, i, y);
        // Each rel but the one extended keeps the tuples whose far end is
        // `y`: degree / rows of y's table.
        let closing = |i: usize| (self.degree(g, i, from(i)) / self.node_rows[y]).min(1.0);
        let sel = self.ready_selectivity(bound, bit(y));
        match join.extend {
            Some(e) => {
                let extended = rows * self.degree(g, e, from(e));
                if join.rels.is_empty() && self.counted & bit(y) != 0 && bound | bit(y) == all {
                    // One degree read per tuple; the rels are counted, not
                    // produced.
                    return (rows, extended * sel);
                }
                let kept: f64 = join.rels.iter().map(|&i| closing(i)).product();
                let out = extended * kept * sel;
                (extended + out, out)
            }
            None => {
                // One list is scanned per tuple, the others only probed:
                // no tuple is produced that the intersection drops.
                let mut degrees: Vec<f64> = join
                    .rels
                    .iter()
                    .map(|&i| self.degree(g, i, from(i)))
                    .collect();
                degrees.sort_by(f64::total_cmp);
                let kept: f64 = degrees[1..]
                    .iter()
                    .map(|d| (d / self.node_rows[y]).min(1.0))
                    .product();
                let out = rows * degrees[0] * kept * sel;
                (rows + out, out)
            }
        }
    }

    /// A scan of node `y`'s table, its own predicates applied.
    fn scan(&self, y: usize) -> JoinOrder {
        JoinOrder {
            order: vec![y],
            cost: self.node_rows[y],
            rows: self.node_rows[y] * self.ready_selectivity(0, bit(y)),
        }
    }

    /// `o` (binding `set`) followed by node `y`, of the nodes `all`.
    fn grow(
        &self,
        g: &QueryGraph,
        (set, all): (u64, u64),
        o: &JoinOrder,
        y: usize,
        intersect: &dyn Fn(usize, u64) -> Vec<usize>,
    ) -> Option<JoinOrder> {
        let join = self.join(g, set, y, intersect)?;
        let (cost, rows) = self.step(g, (set, all), o.rows, y, &join);
        let mut order = o.order.clone();
        order.push(y);
        Some(JoinOrder {
            order,
            cost: o.cost + cost,
            rows,
        })
    }

    /// The estimate of binding `order` after `bound` (empty: `order`
    /// starts with a scan), for EXPLAIN. None when a node of `order` is not
    /// adjacent to the nodes before it.
    pub fn evaluate(
        &self,
        g: &QueryGraph,
        bound: u64,
        order: &[usize],
        intersect: &dyn Fn(usize, u64) -> Vec<usize>,
    ) -> Option<JoinOrder> {
        let (mut o, rest) = match (bound, order) {
            (0, [first, rest @ ..]) => (self.scan(*first), rest),
            (0, []) => return None,
            _ => (JoinOrder::from_rows(), order),
        };
        let mut set = if bound == 0 { bit(order[0]) } else { bound };
        let all = order.iter().fold(set, |m, &y| m | bit(y));
        for &y in rest {
            o = self.grow(g, (set, all), &o, y, intersect)?;
            set |= bit(y);
        }
        Some(o)
    }

    /// The cheapest order binding every node reachable from `bound` (a bit
    /// set; empty: the order starts with a scan of one node of `nodes`).
    /// `nodes` are the candidates (a bit set, connected through fixed-length
    /// rels to `bound` or to each other); `prefer` ranks equal-cost orders
    /// (smaller first); `intersect(y, bound)` gives the rels an
    /// intersection would bind `y` through (fewer than two: none). None
    /// when there are too many nodes.
    pub fn best_order(
        &self,
        g: &QueryGraph,
        bound: u64,
        nodes: u64,
        prefer: &dyn Fn(&[usize]) -> Vec<usize>,
        intersect: &dyn Fn(usize, u64) -> Vec<usize>,
    ) -> Option<JoinOrder> {
        let free = nodes & !bound;
        let n = free.count_ones() as usize;
        if n == 0 || n > MAX_DP_NODES || g.nodes.len() > 64 {
            return None;
        }
        let adjacent = |y: usize, set: u64| {
            g.rels.iter().any(|r| {
                r.recursive.is_none()
                    && ((r.left == y && set & bit(r.right) != 0)
                        || (r.right == y && set & bit(r.left) != 0))
            })
        };
        let mut best: HashMap<u64, JoinOrder> = HashMap::new();
        let better = |candidate: &JoinOrder, incumbent: &JoinOrder| {
            let (a, b) = (candidate.cost, incumbent.cost);
            if a < b * (1.0 - 1e-9) {
                return true;
            }
            if b < a * (1.0 - 1e-9) {
                return false;
            }
            prefer(&candidate.order) < prefer(&incumbent.order)
        };
        let offer =
            |best: &mut HashMap<u64, JoinOrder>, set: u64, o: JoinOrder| match best.get(&set) {
                Some(old) if !better(&o, old) => {}
                _ => {
                    best.insert(set, o);
                }
            };
        if bound == 0 {
            for y in bits(free) {
                offer(&mut best, bit(y), self.scan(y));
            }
        } else {
            offer(&mut best, bound, JoinOrder::from_rows());
        }
        // Sets by size: every state is complete before it is extended.
        for _ in 0..n {
            let mut states: Vec<(u64, JoinOrder)> = best.drain().collect();
            states.sort_by_key(|(set, _)| *set);
            let mut next = HashMap::new();
            let mut finished = Vec::new();
            for (set, o) in states {
                let mut grew = false;
                for y in bits(free & !set) {
                    if !adjacent(y, set) {
                        continue;
                    }
                    let Some(grown) = self.grow(g, (set, nodes | bound), &o, y, intersect) else {
                        continue;
                    };
                    offer(&mut next, set | bit(y), grown);
                    grew = true;
                }
                if !grew {
                    finished.push((set, o));
                }
            }
            for (set, o) in finished {
                offer(&mut next, set, o);
            }
            best = next;
        }
        // The largest set reached; among those, the cheapest.
        let most = best.values().map(|o| o.order.len()).max()?;
        best.into_values()
            .filter(|o| o.order.len() == most)
            .reduce(|a, b| if better(&b, &a) { b } else { a })
    }
}

/// The end of rel `ri` that is not node `y`.
fn other_end(g: &QueryGraph, ri: usize, y: usize) -> usize {
    let r = &g.rels[ri];
    if r.left == y {
        r.right
    } else {
        r.left
    }
}

/// Node `i` as a bit set: none for `i` of 64 and beyond (patterns that
/// large are ordered greedily; see `best_order`).
pub fn bit(i: usize) -> u64 {
    u32::try_from(i)
        .ok()
        .and_then(|i| 1u64.checked_shl(i))
        .unwrap_or(0)
}

/// The members of a bit set, ascending.
pub fn bits(set: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |i| set & (1 << i) != 0)
}

/// The fraction of rows predicate `e` keeps. `key_rows` gives the table
/// rows of a primary-key property slot.
fn selectivity(e: &BoundExpr, key_rows: &dyn Fn(&SlotId) -> Option<f64>) -> f64 {
    let slot_of = |e: &BoundExpr| match &e.kind {
        BoundExprKind::Slot(s) => Some(*s),
        _ => None,
    };
    let key = |l: &BoundExpr, r: &BoundExpr| {
        slot_of(l)
            .and_then(|s| key_rows(&s))
            .or_else(|| slot_of(r).and_then(|s| key_rows(&s)))
    };
    match &e.kind {
        BoundExprKind::Literal(v) => match v.as_bool() {
            Some(true) => 1.0,
            Some(false) => 0.0,
            None => DEFAULT_SELECTIVITY,
        },
        BoundExprKind::Binary(op, l, r) => match op {
            BinaryOp::And => selectivity(l, key_rows) * selectivity(r, key_rows),
            BinaryOp::Or => {
                let (a, b) = (selectivity(l, key_rows), selectivity(r, key_rows));
                a + b - a * b
            }
            BinaryOp::Eq => key(l, r).map_or(EQ_SELECTIVITY, |rows| 1.0 / rows),
            BinaryOp::Ne => 1.0 - EQ_SELECTIVITY,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => RANGE_SELECTIVITY,
            BinaryOp::StartsWith
            | BinaryOp::EndsWith
            | BinaryOp::Contains
            | BinaryOp::RegexMatch => EQ_SELECTIVITY,
            BinaryOp::In => {
                let each = slot_of(l)
                    .and_then(|s| key_rows(&s))
                    .map_or(EQ_SELECTIVITY, |rows| 1.0 / rows);
                match &r.kind {
                    BoundExprKind::List(items) => (each * items.len() as f64).min(1.0),
                    BoundExprKind::Literal(Value::List(items)) => {
                        (each * items.len() as f64).min(1.0)
                    }
                    _ => DEFAULT_SELECTIVITY,
                }
            }
            _ => DEFAULT_SELECTIVITY,
        },
        BoundExprKind::Unary(op, x) => match op {
            UnaryOp::Not => 1.0 - selectivity(x, key_rows),
            UnaryOp::IsNull => EQ_SELECTIVITY,
            UnaryOp::IsNotNull => 1.0 - EQ_SELECTIVITY,
            _ => DEFAULT_SELECTIVITY,
        },
        _ => DEFAULT_SELECTIVITY,
    }
}
