//! From a bound query to a [`QueryPlan`]: chooses where the pipeline starts,
//! the order and direction of extends, and where each predicate runs.
//!
//! The start node is the one with the most predicates of its own (ties: the
//! smallest table, then the most rels in the pattern); rels are then added
//! breadth-first, each predicate placed right after the step that makes its
//! last slot available. A node whose
//! primary key an equality fixes with a key computable from what is bound
//! (constants, parameters, earlier variables) is found by a PK-index lookup
//! per tuple (`Step::LookupNode`, an index nested-loop join) instead of a
//! scan or a cross product. A part of the pattern that shares no variable
//! with what is bound is joined by a hash join when an equality with
//! hashable types links the two (`Step::CrossProduct` with a key), else by a
//! cross product. The order of scans and extends comes from a cost-based
//! dynamic program over the pattern's connected subsets (`join_order.rs`);
//! the preferences above break its ties.

use std::collections::{HashMap, HashSet};

use kith_catalog::{Catalog, TableEntry};
use kith_common::{Error, LogicalType, Result, TableId};
use kith_parser::ast::Direction;

use crate::bound::{
    BoundPart, BoundQuery, OptionalExtend, OptionalPattern, QueryGraph, QueryNode, QueryRel,
    SubqueryKind,
};
use crate::expr::{BoundExpr, SlotId};
use crate::plan::{
    DependentKey, ExtendDirection, IntersectRel, KeyCounts, PartPlan, PropertyRead, QueryPlan,
    RecursiveJoin, Sink, Source, Step, SubPlan, SubqueryPlan,
};

mod group_keys;
mod join_order;
mod optional;
mod pipeline;
mod recursive;
mod subquery;
mod table_choice;
use group_keys::*;
use join_order::{bit, bits, Estimates, JoinOrder};
use optional::*;
use pipeline::*;
use recursive::split_recursive;
use table_choice::*;

fn reads(
    catalog: &Catalog,
    table: TableId,
    props: &[(String, SlotId, LogicalType)],
) -> Result<Vec<PropertyRead>> {
    let entry: Option<&TableEntry> =
        if table == NO_TABLE {
            None
        } else {
            Some(catalog.table(table).ok_or_else(|| {
                Error::internal(format!("table {table:?} vanished from the catalog"))
            })?)
        };
    props
        .iter()
        .map(|(name, slot, ty)| {
            let property = entry.and_then(|e| e.property(name));
            Ok(PropertyRead {
                property: property.map(|p| p.id),
                slot: *slot,
                // A variable over tables whose property types differ has
                // the variant slot type; each table reads its own type.
                ty: match property {
                    Some(p) if *ty == LogicalType::Any => p.ty.clone(),
                    _ => ty.clone(),
                },
            })
        })
        .collect()
}

/// Builds the plan for `q`; `cardinality` gives a table's row count.
pub fn plan_query(
    q: BoundQuery,
    catalog: &Catalog,
    cardinality: &dyn Fn(TableId) -> u64,
) -> Result<QueryPlan> {
    let subqueries = q
        .subqueries
        .into_iter()
        .map(|s| {
            let mut plan = plan_query(s.query, catalog, cardinality)?;
            let key_counts = match s.kind {
                _ if s.num_keys != 1 => None,
                SubqueryKind::Exists => Some(KeyCounts::Presence),
                SubqueryKind::Count => Some(KeyCounts::Counts),
                SubqueryKind::Collect => None,
            };
            if let Some(last) = plan.parts.last_mut() {
                last.key_counts = key_counts;
            }
            Ok(SubqueryPlan {
                degree: subquery::degree_count(&plan, s.kind, s.num_keys),
                plan,
                kind: s.kind,
                num_keys: s.num_keys,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut parts = Vec::new();
    let mut names = Vec::new();
    let mut types = Vec::new();
    // Variable-length rels split their part in two around a recursive join.
    let mut next_slot = q.num_slots;
    let mut expanded: Vec<(BoundPart, Option<RecursiveJoin>)> = Vec::new();
    for part in q.parts {
        expanded.extend(split_recursive(part, catalog, &mut next_slot)?);
    }
    let last = expanded.len().saturating_sub(1);
    for (i, (part, recursive)) in expanded.into_iter().enumerate() {
        if i == last {
            names = part.outputs.iter().map(|(n, _)| n.clone()).collect();
            types = part.outputs.iter().map(|(_, e)| e.ty.clone()).collect();
        }
        // A continuation after writes starts from the rows the writes hand
        // over (its first part has inputs).
        let from_rows = i > 0 || part.numbers_rows || !part.inputs.is_empty();
        let mut plan = plan_part(part, from_rows, catalog, cardinality)?;
        plan.recursive = recursive;
        parts.push(plan);
    }
    Ok(QueryPlan {
        parts,
        subqueries,
        names,
        types,
    })
}

/// The table of a node variable that can match no table.
const NO_TABLE: TableId = TableId(u32::MAX);

/// Most pipelines one part may expand into.
const MAX_TABLE_CHOICES: usize = 256;

/// An OPTIONAL MATCH's single extend, taken off the part's graph: its
/// description, rel and node.
type OptionalEdge = (OptionalExtend, QueryRel, QueryNode);

/// Plans one part: a pipeline per choice of its variables' tables, all
/// feeding its sink.
fn plan_part(
    mut q: BoundPart,
    from_rows: bool,
    catalog: &Catalog,
    cardinality: &dyn Fn(TableId) -> u64,
) -> Result<PartPlan> {
    let from_rows = from_rows || !q.unwinds.is_empty();
    // An optional extend's rel and node (the graph's last) join after
    // everything else: the rest of the graph is planned without them.
    let optional = match q.optional_extend.take() {
        Some(o) => {
            let (Some(rel), Some(node)) = (q.graph.rels.pop(), q.graph.nodes.pop()) else {
                return Err(Error::internal("optional extend without its rel"));
            };
            Some((o, rel, node))
        }
        None => None,
    };
    let after_optional = take_after_optional(&mut q, optional.as_ref());
    let (dependent, entity_keys) = dependent_keys(&mut q, catalog)?;
    let used = slot_uses(&q, optional.as_ref(), &after_optional);
    if !dependent.is_empty() {
        // Properties only dependent keys read are read after aggregating.
        for node in &mut q.graph.nodes {
            node.properties.retain(|p| used.contains(&p.1));
        }
    }
    substitute_entity_keys(&mut q, &entity_keys);
    let choices = table_choices(&q.graph, catalog)?;
    // The NULL ids an imported node may hold (from an OPTIONAL MATCH) pass
    // in the pipelines where that node takes its smallest table: once for
    // every choice of the other variables' tables.
    let null_tables: Vec<Option<TableId>> = (0..q.graph.nodes.len())
        .map(|i| choices.iter().map(|c| c.node_tables[i]).min())
        .collect();
    // A last extend may only count when the pipeline ends at an aggregate
    // (an optional extend's steps come after it otherwise).
    let counts_last = !q.aggregates.is_empty() && optional.is_none();
    let mut pipelines = choices
        .into_iter()
        .map(|choice| {
            plan_pipeline(
                &q,
                &choice,
                &null_tables,
                (from_rows, counts_last),
                &used,
                catalog,
                cardinality,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some((o, rel, node)) = &optional {
        for p in &mut pipelines {
            optional_steps(&q.graph, o, rel, node, &used, catalog, &mut p.steps)?;
            p.steps
                .extend(after_optional.iter().cloned().map(Step::Filter));
        }
    }
    Ok(part_plan(q, from_rows, pipelines, dependent))
}

/// The predicates of a WITH's WHERE over the optional extend's variables
/// (`WITH a, b WHERE b IS NULL`), taken off the part: they filter the
/// padded rows after the extend.
fn take_after_optional(q: &mut BoundPart, optional: Option<&OptionalEdge>) -> Vec<BoundExpr> {
    let Some((_, rel, node)) = optional else {
        return Vec::new();
    };
    let mut theirs: HashSet<SlotId> = [rel.id_slot, node.id_slot].into_iter().collect();
    theirs.extend(rel.properties.iter().chain(&node.properties).map(|p| p.1));
    let (after, before) = std::mem::take(&mut q.predicates)
        .into_iter()
        .partition(|e| expr_slots(e).iter().any(|s| theirs.contains(s)));
    q.predicates = before;
    after
}

/// The slots something downstream of the part's pattern reads: its
/// predicates (but the relationship-isomorphism tests within one connected
/// pattern), keys, aggregate arguments, outputs and sort keys, what its
/// OPTIONAL MATCH patterns read, and the nodes those start from.
fn slot_uses(
    q: &BoundPart,
    optional: Option<&OptionalEdge>,
    after_optional: &[BoundExpr],
) -> SlotUses {
    let mut used = SlotUses::default();
    let mut collect = |e: &BoundExpr| used.add(e);
    // Relationship-isomorphism predicates do not count: extends absorb
    // them and produce the rel ids they need themselves.
    // (Only between rels of one connected pattern: across a cross product
    // the test is a filter that needs both ids.)
    let component = components(&q.graph);
    let rel_component = |slot: SlotId| {
        q.graph
            .rels
            .iter()
            .find(|r| r.id_slot == slot)
            .map(|r| component[r.left])
    };
    q.predicates
        .iter()
        .filter(|e| match isomorphism_pair(&q.graph, e) {
            Some((x, y)) => rel_component(x) != rel_component(y),
            None => true,
        })
        .for_each(&mut collect);
    q.group_keys.iter().for_each(|(e, _)| collect(e));
    q.aggregates
        .iter()
        .filter_map(|a| a.arg.as_ref())
        .for_each(&mut collect);
    q.outputs.iter().for_each(|(_, e)| collect(e));
    q.order_by.iter().for_each(|k| collect(&k.expr));
    if let Some((o, ..)) = optional {
        o.predicates.iter().for_each(&mut collect);
        after_optional.iter().for_each(&mut collect);
    }
    if let Some(c) = &q.optional_chain {
        c.predicates.iter().for_each(&mut collect);
    }
    if let Some(j) = &q.optional_join {
        j.predicates.iter().for_each(&mut collect);
        // The padding filter finds the join's group by a column of it.
        if let Some(n) = q.graph.nodes.get(j.first_node) {
            used.insert(n.id_slot);
        }
    }
    add_optional_anchors(q, optional, &mut used);
    used
}

/// The nodes the part's OPTIONAL MATCH patterns start from are used: an
/// optional chain's must reach the chain (a build column across a cross
/// product, say); an extend binding the optional extend's anchor may not
/// only count it (`MATCH (a)-->(b) OPTIONAL MATCH (b)<--(c) RETURN
/// count(*)` failed with "extend from an unplaced slot", issue 51).
fn add_optional_anchors(q: &BoundPart, optional: Option<&OptionalEdge>, used: &mut SlotUses) {
    if let Some(c) = &q.optional_chain {
        for r in &q.graph.rels[c.first_rel.min(q.graph.rels.len())..] {
            for end in [r.left, r.right] {
                if end < c.first_node {
                    if let Some(n) = q.graph.nodes.get(end) {
                        used.insert(n.id_slot);
                    }
                }
            }
        }
    }
    if let Some((_, rel, _)) = optional {
        // The optional node was the graph's last (popped off it).
        let popped = q.graph.nodes.len();
        let anchor = if rel.left == popped {
            rel.right
        } else {
            rel.left
        };
        if let Some(n) = q.graph.nodes.get(anchor) {
            used.insert(n.id_slot);
        }
    }
}

/// A node grouped on by its id is built from it and its dependent keys
/// after aggregating, wherever the outputs and sort keys name it.
fn substitute_entity_keys(q: &mut BoundPart, entity_keys: &[EntityKey]) {
    if entity_keys.is_empty() {
        return;
    }
    let targets: Vec<BoundExpr> = entity_keys
        .iter()
        .map(|(out, e)| crate::binder::strip(&BoundExpr::slot(*out, e.ty.clone(), e.span)))
        .collect();
    let replace = |i: usize, _: &BoundExpr| entity_keys[i].1.clone();
    for (_, e) in &mut q.outputs {
        *e = crate::binder::substitute(e, &targets, &replace);
    }
    for k in &mut q.order_by {
        k.expr = crate::binder::substitute(&k.expr, &targets, &replace);
    }
}

/// The plan of part `q` whose pattern `pipelines` match: the sink they
/// feed (an aggregate with `dependent` keys, or the rows collected), the
/// columns and what comes after the sink.
fn part_plan(
    q: BoundPart,
    from_rows: bool,
    pipelines: Vec<SubPlan>,
    dependent: Vec<DependentKey>,
) -> PartPlan {
    let num_visible = q.outputs.len();
    let descending: Vec<bool> = q.order_by.iter().map(|k| k.descending).collect();
    let outputs: Vec<BoundExpr> = q
        .outputs
        .into_iter()
        .map(|(_, e)| e)
        .chain(q.order_by.into_iter().map(|k| k.expr))
        .collect();
    let types: Vec<LogicalType> = outputs.iter().map(|e| e.ty.clone()).collect();
    let aggregating = !q.aggregates.is_empty();
    let (sink, final_outputs) = if aggregating {
        (
            Sink::Aggregate {
                keys: q.group_keys,
                aggregates: q.aggregates,
                dependent,
            },
            outputs,
        )
    } else {
        (Sink::Collect { outputs }, Vec::new())
    };
    PartPlan {
        recursive: None,
        inputs: q.inputs,
        unwinds: q.unwinds,
        from_rows,
        pipelines,
        sink,
        types,
        num_visible,
        descending,
        final_outputs,
        distinct: q.distinct,
        skip: q.skip,
        limit: q.limit,
        skip_expr: q.skip_expr,
        limit_expr: q.limit_expr,
        optional: q.optional,
        numbers_rows: q.numbers_rows,
        key_counts: None,
    }
}

/// A key that is a node's value: its output slot and the value's
/// expression, built after aggregating (see [`dependent_keys`]).
type EntityKey = (SlotId, BoundExpr);

/// The nodes of a part's pattern that an extend binding them last would
/// only count (see `Estimates::count_only`): leaves of one fixed-length
/// rel, neither they nor their rel read by anything (no id, property or
/// predicate), in a pattern planned as one pipeline (no OPTIONAL MATCH
/// pattern or hash join within it, whose build sides end elsewhere).
fn counted_leaves(q: &BoundPart, used: &SlotUses) -> u64 {
    let g = &q.graph;
    let all = (0..g.nodes.len()).fold(0, |m, i| m | bit(i));
    let connected = g.nodes.len() <= 64 && reachable(g, bit(0)) == all;
    if q.optional_join.is_some() || q.optional_chain.is_some() || !connected {
        return 0;
    }
    let mut counted = 0;
    for (i, n) in g.nodes.iter().enumerate() {
        let rels: Vec<&crate::bound::QueryRel> = g
            .rels
            .iter()
            .filter(|r| r.left == i || r.right == i)
            .collect();
        let [r] = rels.as_slice() else {
            continue;
        };
        let read = |s: &SlotId| used.contains(s);
        if n.imported
            || r.left == r.right
            || r.recursive.is_some()
            || read(&n.id_slot)
            || !n.properties.is_empty()
            || read(&r.id_slot)
            || !r.properties.is_empty()
            || r.ends.is_some_and(|(s, d)| read(&s) || read(&d))
        {
            continue;
        }
        counted |= bit(i);
    }
    counted
}

/// The nodes reachable from the set `from` through fixed-length rels (as a
/// bit set; nodes of 64 and beyond are left out, see [`bit`]).
fn reachable(g: &QueryGraph, from: u64) -> u64 {
    let mut set = from;
    loop {
        let grown = g
            .rels
            .iter()
            .filter(|r| r.recursive.is_none() && r.left < 64 && r.right < 64)
            .fold(set, |m, r| {
                if m & (bit(r.left) | bit(r.right)) != 0 {
                    m | bit(r.left) | bit(r.right)
                } else {
                    m
                }
            });
        if grown == set {
            return set;
        }
        set = grown;
    }
}

/// The id and property slots of node `n`.
fn own_slots(n: &QueryNode) -> HashSet<SlotId> {
    std::iter::once(n.id_slot)
        .chain(n.properties.iter().map(|p| p.1))
        .collect()
}

/// A connected-component number per node of `g` (through its rels).
fn components(g: &QueryGraph) -> Vec<usize> {
    let mut comp: Vec<usize> = (0..g.nodes.len()).collect();
    loop {
        let mut changed = false;
        for r in &g.rels {
            let m = comp[r.left].min(comp[r.right]);
            for n in [r.left, r.right] {
                if comp[n] != m {
                    comp[n] = m;
                    changed = true;
                }
            }
        }
        if !changed {
            return comp;
        }
    }
}

/// `r1 <> r2` over the ids of two rels of `g` (relationship isomorphism):
/// their id slots.
fn isomorphism_pair(g: &QueryGraph, e: &BoundExpr) -> Option<(SlotId, SlotId)> {
    use crate::expr::{BinaryOp, BoundExprKind};
    let BoundExprKind::Binary(BinaryOp::Ne, x, y) = &e.kind else {
        return None;
    };
    let (BoundExprKind::Slot(x), BoundExprKind::Slot(y)) = (&x.kind, &y.kind) else {
        return None;
    };
    let is_rel = |s: &SlotId| {
        g.rels
            .iter()
            .any(|r| r.id_slot == *s && r.recursive.is_none())
    };
    (is_rel(x) && is_rel(y)).then_some((*x, *y))
}

/// The types of every slot a part defines or receives.
fn slot_types(q: &BoundPart) -> HashMap<SlotId, LogicalType> {
    q.inputs
        .iter()
        .cloned()
        .chain(q.unwinds.iter().map(|u| (u.slot, u.ty.clone())))
        .chain(q.graph.slot_types())
        .collect()
}

/// The build side's slots a hash join or cross product hands on: those
/// read beyond the predicates the build side consumed (its filters, the
/// join key: evaluated in the build pipeline, so `b.id` of `b.id = a.id * 2`
/// is no column unless something else reads it), in slot order.
fn build_columns<'e>(
    used: &SlotUses,
    build: &HashSet<SlotId>,
    consumed: impl Iterator<Item = &'e BoundExpr>,
    slot_types: &HashMap<SlotId, LogicalType>,
) -> Vec<(SlotId, LogicalType)> {
    let mut taken = SlotUses::default();
    consumed.for_each(|e| taken.add(e));
    let mut columns: Vec<(SlotId, LogicalType)> = build
        .iter()
        .filter(|s| used.reads(s) > taken.reads(s))
        .filter_map(|s| slot_types.get(s).map(|t| (*s, t.clone())))
        .collect();
    columns.sort_by_key(|c| c.0);
    columns
}

/// How many expressions read each slot. A slot some expression reads is
/// used; one that only predicates a hash join's build side consumed read
/// (its key, its own filters) needs no build column.
#[derive(Debug, Clone, Default)]
struct SlotUses(HashMap<SlotId, u32>);

impl SlotUses {
    fn contains(&self, s: &SlotId) -> bool {
        self.0.contains_key(s)
    }

    /// One more read of each slot `e` reads.
    fn add(&mut self, e: &BoundExpr) {
        let mut slots = expr_slots(e);
        slots.sort_unstable();
        slots.dedup();
        for s in slots {
            self.insert(s);
        }
    }

    fn insert(&mut self, s: SlotId) {
        *self.0.entry(s).or_default() += 1;
    }

    /// How many expressions read `s`.
    fn reads(&self, s: &SlotId) -> u32 {
        self.0.get(s).copied().unwrap_or(0)
    }
}

fn expr_slots(e: &BoundExpr) -> Vec<SlotId> {
    let mut v = Vec::new();
    e.slots(&mut v);
    v
}

/// The nodes and the rels (both ends kept) of `g` selected by `keep_node`.
fn subgraph(g: &QueryGraph, keep_node: &[bool], skip_rel: usize) -> QueryGraph {
    let mut map = vec![usize::MAX; g.nodes.len()];
    let mut out = QueryGraph::default();
    for (i, n) in g.nodes.iter().enumerate() {
        if keep_node[i] {
            map[i] = out.nodes.len();
            out.nodes.push(n.clone());
        }
    }
    for (i, r) in g.rels.iter().enumerate() {
        if i != skip_rel && keep_node[r.left] && keep_node[r.right] {
            let mut r = r.clone();
            r.left = map[r.left];
            r.right = map[r.right];
            out.rels.push(r);
        }
    }
    out
}
