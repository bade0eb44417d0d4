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

mod join_order;
mod recursive;
mod subquery;
use join_order::{bit, bits, Estimates, JoinOrder};
use recursive::split_recursive;

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

/// One way of matching a part's pattern: a table per node and per rel and
/// a direction per rel (undirected rels are tried both ways).
struct TableChoice {
    node_tables: Vec<TableId>,
    rel_tables: Vec<TableId>,
    directions: Vec<Direction>,
    /// Predicates this choice adds (an undirected self-loop is matched in
    /// one direction only).
    predicates: Vec<BoundExpr>,
}

/// The table of a node variable that can match no table.
const NO_TABLE: TableId = TableId(u32::MAX);

/// Most pipelines one part may expand into.
const MAX_TABLE_CHOICES: usize = 256;

/// Every consistent assignment of tables (and directions) to the pattern's
/// variables. A pattern written with single tables that do not fit together
/// is an error; otherwise no assignment means no match.
fn table_choices(g: &QueryGraph, catalog: &Catalog) -> Result<Vec<TableChoice>> {
    // A node carried from an earlier part that can match no table holds
    // only NULLs (from an OPTIONAL MATCH): the rows still pass.
    let mut candidates: Vec<Vec<TableId>> = g
        .nodes
        .iter()
        .map(|n| {
            if n.imported && n.tables.is_empty() {
                vec![NO_TABLE]
            } else {
                n.tables.clone()
            }
        })
        .collect();
    // Keep only node tables some candidate rel table connects (repeated
    // until nothing changes), so that unlabelled nodes between typed rels
    // do not multiply into every table of the catalog.
    loop {
        let mut changed = false;
        for r in &g.rels {
            let mut ends: [Vec<TableId>; 2] = [Vec::new(), Vec::new()];
            for t in &r.tables {
                let Some(info) = catalog.table(*t).and_then(|e| e.rel_info()) else {
                    continue;
                };
                let pairs: &[(TableId, TableId)] = match r.direction {
                    Direction::Right => &[(info.src, info.dst)],
                    Direction::Left => &[(info.dst, info.src)],
                    Direction::Both => &[(info.src, info.dst), (info.dst, info.src)],
                };
                for &(l, rr) in pairs {
                    ends[0].push(l);
                    ends[1].push(rr);
                }
            }
            for (node, allowed) in [(r.left, &ends[0]), (r.right, &ends[1])] {
                let before = candidates[node].len();
                candidates[node].retain(|t| *t == NO_TABLE || allowed.contains(t));
                changed |= candidates[node].len() != before;
            }
        }
        if !changed {
            break;
        }
    }
    let mut node_choices: Vec<Vec<TableId>> = vec![Vec::new()];
    for candidates in &candidates {
        let mut next = Vec::new();
        for prefix in &node_choices {
            for &t in candidates {
                let mut c = prefix.clone();
                c.push(t);
                next.push(c);
            }
        }
        node_choices = next;
        if node_choices.len() > MAX_TABLE_CHOICES {
            return Err(too_many_choices());
        }
    }
    let mut out = Vec::new();
    for node_tables in node_choices {
        let mut partial: Vec<(Vec<TableId>, Vec<Direction>, Vec<BoundExpr>)> =
            vec![(Vec::new(), Vec::new(), Vec::new())];
        for r in &g.rels {
            let dirs: &[Direction] = match r.direction {
                Direction::Both => &[Direction::Right, Direction::Left],
                Direction::Left => &[Direction::Left],
                Direction::Right => &[Direction::Right],
            };
            let mut options = Vec::new();
            for &t in &r.tables {
                let entry = catalog
                    .table(t)
                    .ok_or_else(|| Error::internal("rel table vanished"))?;
                let info = entry
                    .rel_info()
                    .ok_or_else(|| Error::internal("rel table without endpoints"))?;
                for &d in dirs {
                    let (src, dst) = match d {
                        Direction::Left => (r.right, r.left),
                        _ => (r.left, r.right),
                    };
                    if node_tables[src] != info.src || node_tables[dst] != info.dst {
                        continue;
                    }
                    // Both directions fit a self-loop: keep it once
                    // (unless walks take it both ways).
                    let extra = (r.direction == Direction::Both
                        && d == Direction::Left
                        && info.src == info.dst
                        && !r.self_loops_twice)
                        .then(|| distinct_ends(g, r));
                    options.push((t, d, extra));
                }
            }
            let mut next = Vec::new();
            for (tables, directions, preds) in &partial {
                for (t, d, extra) in &options {
                    let (mut t2, mut d2, mut p2) =
                        (tables.clone(), directions.clone(), preds.clone());
                    t2.push(*t);
                    d2.push(*d);
                    p2.extend(extra.clone());
                    next.push((t2, d2, p2));
                }
            }
            partial = next;
            if partial.len() * out.len().max(1) > MAX_TABLE_CHOICES {
                return Err(too_many_choices());
            }
        }
        for (rel_tables, directions, predicates) in partial {
            out.push(TableChoice {
                node_tables: node_tables.clone(),
                rel_tables,
                directions,
                predicates,
            });
        }
    }
    if out.is_empty() {
        check_explicit_pattern(g, catalog)?;
    }
    Ok(out)
}

fn too_many_choices() -> Error {
    Error::not_supported(format!(
        "a pattern whose variables match more than {MAX_TABLE_CHOICES} combinations of tables; add labels"
    ))
}

/// `_table_is(id, table)`, or-ed with `id IS NULL` when `with_nulls`.
fn table_filter(id: SlotId, table: TableId, with_nulls: bool) -> BoundExpr {
    use crate::expr::{BinaryOp, BoundExprKind, UnaryOp};
    let span = kith_common::Span::new(0, 0);
    let id = BoundExpr::slot(id, LogicalType::InternalId, span);
    let bool_expr = |kind| BoundExpr {
        kind,
        ty: LogicalType::Bool,
        span,
    };
    let is = bool_expr(BoundExprKind::Function(
        "_table_is".to_string(),
        vec![
            id.clone(),
            BoundExpr::literal(kith_common::Value::Int64(table.0 as i64), span),
        ],
    ));
    if !with_nulls {
        return is;
    }
    let null = bool_expr(BoundExprKind::Unary(UnaryOp::IsNull, Box::new(id)));
    bool_expr(BoundExprKind::Binary(
        BinaryOp::Or,
        Box::new(null),
        Box::new(is),
    ))
}

/// `left <> right` for rel `r` (the two ends are different nodes).
fn distinct_ends(g: &QueryGraph, r: &crate::bound::QueryRel) -> BoundExpr {
    let span = kith_common::Span::new(0, 0);
    let id = |n: usize| BoundExpr::slot(g.nodes[n].id_slot, LogicalType::InternalId, span);
    BoundExpr {
        kind: crate::expr::BoundExprKind::Binary(
            crate::expr::BinaryOp::Ne,
            Box::new(id(r.left)),
            Box::new(id(r.right)),
        ),
        ty: LogicalType::Bool,
        span,
    }
}

/// A pattern whose every variable names one table and whose rels have a
/// direction, but that cannot match: say which rel does not fit.
fn check_explicit_pattern(g: &QueryGraph, catalog: &Catalog) -> Result<()> {
    let name = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
    for r in &g.rels {
        let ([t], [lt], [rt]) = (
            r.tables.as_slice(),
            g.nodes[r.left].tables.as_slice(),
            g.nodes[r.right].tables.as_slice(),
        ) else {
            continue;
        };
        if r.direction == Direction::Both {
            continue;
        }
        let Some(entry) = catalog.table(*t) else {
            continue;
        };
        // A schema-less rel type has no declared endpoints: a pattern it does
        // not fit simply matches nothing (as in openCypher).
        if entry.implicit {
            continue;
        }
        let Some(info) = entry.rel_info() else {
            continue;
        };
        let (src, dst) = match r.direction {
            Direction::Left => (*rt, *lt),
            _ => (*lt, *rt),
        };
        if src != info.src || dst != info.dst {
            return Err(Error::semantic(format!(
                "rel table '{}' connects {} to {}, but the pattern uses it from {} to {}",
                name(*t),
                name(info.src),
                name(info.dst),
                name(src),
                name(dst)
            )));
        }
    }
    Ok(())
}

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
    // A WITH's WHERE over the optional extend's variables (`WITH a, b
    // WHERE b IS NULL`) filters the padded rows after it.
    let mut after_optional = Vec::new();
    if let Some((_, rel, node)) = &optional {
        let mut theirs: HashSet<SlotId> = [rel.id_slot, node.id_slot].into_iter().collect();
        theirs.extend(rel.properties.iter().chain(&node.properties).map(|p| p.1));
        let (after, before) = std::mem::take(&mut q.predicates)
            .into_iter()
            .partition(|e| expr_slots(e).iter().any(|s| theirs.contains(s)));
        q.predicates = before;
        after_optional = after;
    }
    let (dependent, entity_keys) = dependent_keys(&mut q, catalog)?;
    // Slots something downstream reads.
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
    if let Some((o, ..)) = &optional {
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
    // An optional chain starts from a node of the part: it must reach the
    // chain (a build column across a cross product, say) as the optional
    // extend's anchor must (below).
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
    // The optional extend starts from its anchor node: an extend binding
    // that node may not only count it (`MATCH (a)-->(b) OPTIONAL MATCH
    // (b)<--(c) RETURN count(*)` failed with "extend from an unplaced
    // slot", issue 51).
    if let Some((_, rel, _)) = &optional {
        // The optional node was the graph's last (popped above).
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
    if !dependent.is_empty() {
        // Properties only dependent keys read are read after aggregating.
        for node in &mut q.graph.nodes {
            node.properties.retain(|p| used.contains(&p.1));
        }
    }
    // A node grouped on by its id is built from it and its dependent keys
    // after aggregating, wherever the outputs and sort keys name it.
    if !entity_keys.is_empty() {
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
    let pipelines = choices
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
    let mut pipelines = pipelines;
    if let Some((o, rel, node)) = &optional {
        for p in &mut pipelines {
            optional_steps(&q.graph, o, rel, node, &used, catalog, &mut p.steps)?;
            p.steps
                .extend(after_optional.iter().cloned().map(Step::Filter));
        }
    }

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
    Ok(PartPlan {
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
    })
}

/// After the step that bound undirected rel `ri` walking it from node
/// `from` in `direction`: its stored ends ([`QueryRel::ends`]) name the
/// vectors of the nodes it joins, source first.
fn alias_ends(
    g: &QueryGraph,
    ri: usize,
    from: usize,
    direction: ExtendDirection,
    used: &SlotUses,
    available: &mut HashSet<SlotId>,
    steps: &mut Vec<Step>,
) {
    let r = &g.rels[ri];
    // Only a rel whose value is read needs them (its far end is then
    // bound, see the extend's `to`).
    let Some((src, dst)) = r.ends.filter(|(s, d)| used.contains(s) || used.contains(d)) else {
        return;
    };
    let to = if r.left == from { r.right } else { r.left };
    let (s, d) = match direction {
        ExtendDirection::Fwd => (from, to),
        ExtendDirection::Bwd => (to, from),
    };
    for (slot, node) in [(src, s), (dst, d)] {
        steps.push(Step::Alias {
            slot,
            of: g.nodes[node].id_slot,
        });
        available.insert(slot);
    }
}

/// The steps of an optional extend (see [`OptionalExtend`]): the extend
/// from the bound end, the new node's properties, then its predicates as
/// a padding filter.
fn optional_steps(
    g: &QueryGraph,
    o: &OptionalExtend,
    rel: &QueryRel,
    node: &QueryNode,
    used: &SlotUses,
    catalog: &Catalog,
    steps: &mut Vec<Step>,
) -> Result<()> {
    let internal = || Error::internal("optional extend of an unexpected shape");
    let new = g.nodes.len();
    let (from, fwd) = match (rel.left == new, rel.right == new) {
        (false, true) => (rel.left, rel.direction == Direction::Right),
        (true, false) => (rel.right, rel.direction == Direction::Left),
        _ => return Err(internal()),
    };
    if rel.direction == Direction::Both {
        return Err(internal());
    }
    let (&[rel_table], &[to_table]) = (rel.tables.as_slice(), node.tables.as_slice()) else {
        return Err(internal());
    };
    let from = g.nodes.get(from).ok_or_else(internal)?;
    let reads_rel =
        |s: SlotId| used.contains(&s) || o.predicates.iter().any(|e| expr_slots(e).contains(&s));
    steps.push(Step::Extend {
        rel_table,
        direction: if fwd {
            ExtendDirection::Fwd
        } else {
            ExtendDirection::Bwd
        },
        from: from.id_slot,
        to: Some(node.id_slot),
        to_table,
        rel_id: reads_rel(rel.id_slot).then_some(rel.id_slot),
        properties: reads(catalog, rel_table, &rel.properties)?,
        exclude: Vec::new(),
        optional: true,
    });
    if !node.properties.is_empty() {
        steps.push(Step::ScanProperties {
            node: node.id_slot,
            table: to_table,
            properties: reads(catalog, to_table, &node.properties)?,
        });
    }
    if let Some(predicate) = BoundExpr::and_all(o.predicates.iter().cloned()) {
        steps.push(Step::PadFilter {
            predicate,
            node: node.id_slot,
        });
    }
    Ok(())
}

/// The steps of an OPTIONAL MATCH chain ([`OptionalPattern`]), after every other step:
/// the chain's extends from the bound node with their property reads and
/// the clause's predicates as filters (and semijoin masks), each placed
/// once its slots are bound, the ones over the part alone last (a tuple
/// failing them is padded, not dropped). The padding tuple passes them
/// all: a chain filter lets it through and a mask keeps NULL nodes.
fn optional_chain_steps(
    ctx: &ExtendCtx,
    c: &OptionalPattern,
    bound: &mut [bool],
    done: &mut [bool],
    available: &mut HashSet<SlotId>,
) -> Result<Vec<Step>> {
    c.unbind(bound, done);
    let (outer, chained): (Vec<BoundExpr>, Vec<BoundExpr>) = c
        .predicates
        .iter()
        .cloned()
        .partition(|e| expr_slots(e).iter().all(|s| available.contains(s)));
    let mut pending: Vec<Option<BoundExpr>> = chained.into_iter().map(Some).collect();
    let mut steps = Vec::new();
    ctx.extend_all(bound, done, available, &mut pending, &mut steps)?;
    if bound.iter().any(|b| !b) || done.iter().any(|d| !d) {
        return Err(Error::internal("optional chain not bound"));
    }
    if let Some(e) = pending.iter().flatten().next() {
        return Err(Error::internal(format!(
            "optional chain predicate at {:?} could not be placed",
            e.span
        )));
    }
    steps.extend(outer.into_iter().map(Step::Filter));
    let chain_step = |s: &Step| {
        matches!(
            s,
            Step::Extend { .. }
                | Step::Filter(_)
                | Step::ScanProperties { .. }
                | Step::SemiMask { .. }
                | Step::Alias { .. }
        )
    };
    if !matches!(steps.first(), Some(Step::Extend { .. })) || !steps.iter().all(chain_step) {
        return Err(Error::internal("optional chain of an unexpected shape"));
    }
    Ok(steps)
}

/// The left outer hash join of an OPTIONAL MATCH ([`OptionalPattern`]), after
/// every other step: its pattern planned as the build side (from the node
/// the estimates prefer, with the predicates that read only its variables
/// pushed into it), joined on an equality between it and the part when the
/// predicates hold one, then the other predicates as a padding filter.
fn optional_join_steps(
    ctx: &ExtendCtx,
    j: &OptionalPattern,
    bound: &mut [bool],
    done: &mut [bool],
    available: &mut HashSet<SlotId>,
    slot_types: &HashMap<SlotId, LogicalType>,
    steps: &mut Vec<Step>,
) -> Result<()> {
    let internal = || Error::internal("optional join of an unexpected shape");
    j.unbind(bound, done);
    let nodes = (j.first_node..ctx.g.nodes.len()).fold(0u64, |m, i| m | bit(i));
    let start = ctx
        .estimates
        .best_order(ctx.g, 0, nodes, &|o: &[usize]| o.to_vec(), &|y, set| {
            ctx.intersect_rels(y, &|n| set & bit(n) != 0, &|_| false)
        })
        .map_or(j.first_node, |o| o.order[0]);
    let mut pending: Vec<Option<BoundExpr>> = j.predicates.iter().cloned().map(Some).collect();
    let mut sub_available = HashSet::new();
    let mut sub_steps = Vec::new();
    let source = ctx.scan_from(
        start,
        bound,
        done,
        &mut sub_available,
        &mut pending,
        &mut sub_steps,
    )?;
    if bound.iter().any(|b| !b) || done.iter().any(|d| !d) {
        return Err(internal());
    }
    let first = ctx.g.nodes.get(j.first_node).ok_or_else(internal)?.id_slot;
    let key = hash_join_key(available, &sub_available, &mut pending);
    let consumed = j
        .predicates
        .iter()
        .zip(&pending)
        .filter_map(|(e, p)| p.is_none().then_some(e));
    let columns = build_columns(ctx.used, &sub_available, consumed, slot_types);
    if !columns.iter().any(|c| c.0 == first) {
        return Err(internal());
    }
    available.extend(columns.iter().map(|c| c.0));
    steps.push(Step::CrossProduct {
        build: Box::new(SubPlan {
            source,
            steps: sub_steps,
            estimate: ctx.take_estimate(false),
        }),
        columns,
        key,
        optional: true,
    });
    // Everything left reads the part (else the build side took it).
    if let Some(predicate) = BoundExpr::and_all(pending.into_iter().flatten()) {
        steps.push(Step::PadFilter {
            predicate,
            node: first,
        });
    }
    Ok(())
}

/// Group keys that are properties of a node whose primary key is also a
/// key (`RETURN f.id, f.name, count(*)`): one node per group, so grouping
/// on the node's id is the same grouping. Those keys leave `q.group_keys`
/// (the node's id takes their place) and become [`DependentKey`]s, read once
/// per group instead of once per tuple, and never hashed (`plan_part` stops
/// the pipelines reading a property nothing else reads).
///
/// Likewise a key that is a node's value (`RETURN b, count(*)`): grouped
/// on the node's id, its properties read per group, and the value built
/// after aggregating. Returns those keys' output slots and values, for
/// `plan_part` to put in the outputs and sort keys that name them.
fn dependent_keys(
    q: &mut BoundPart,
    catalog: &Catalog,
) -> Result<(Vec<DependentKey>, Vec<EntityKey>)> {
    use crate::expr::BoundExprKind;
    let mut dependent = Vec::new();
    let mut entity_keys = Vec::new();
    if q.aggregates.is_empty() || q.optional.is_some() {
        return Ok((dependent, entity_keys));
    }
    let key_slot = |e: &BoundExpr| match e.kind {
        BoundExprKind::Slot(s) => Some(s),
        _ => None,
    };
    for n in 0..q.graph.nodes.len() {
        let node = &q.graph.nodes[n];
        let [table] = node.tables[..] else {
            continue;
        };
        if let Some(late) = node_value_keys(q, n, &mut entity_keys) {
            dependent.extend(reads(catalog, table, &late)?.into_iter().map(|property| {
                DependentKey {
                    node: q.graph.nodes[n].id_slot,
                    table,
                    property,
                }
            }));
            continue;
        }
        let node = &q.graph.nodes[n];
        let Some(pk) = catalog.table(table).and_then(|t| t.primary_key()) else {
            continue;
        };
        let Some(pk_slot) = node.properties.iter().find(|p| p.0 == pk.name).map(|p| p.1) else {
            continue;
        };
        let id_slot = node.id_slot;
        let keyed = q
            .group_keys
            .iter()
            .any(|(e, _)| key_slot(e) == Some(pk_slot));
        let id_taken = q
            .group_keys
            .iter()
            .any(|(e, out)| *out == id_slot || key_slot(e) == Some(id_slot));
        if !keyed || id_taken {
            continue;
        }
        let props: Vec<(String, SlotId, LogicalType)> = node.properties.clone();
        let prop_of =
            |e: &BoundExpr| key_slot(e).and_then(|s| props.iter().find(|p| p.1 == s).cloned());
        let span = kith_common::Span::new(0, 0);
        let mut kept = Vec::with_capacity(q.group_keys.len());
        let mut late = Vec::new();
        for (e, out) in std::mem::take(&mut q.group_keys) {
            match prop_of(&e) {
                Some(p) => late.push((p, out)),
                None => kept.push((e, out)),
            }
        }
        kept.push((
            BoundExpr::slot(id_slot, LogicalType::InternalId, span),
            id_slot,
        ));
        q.group_keys = kept;
        let late: Vec<_> = late
            .into_iter()
            .map(|((name, _, ty), out)| (name, out, ty))
            .collect();
        dependent.extend(
            reads(catalog, table, &late)?
                .into_iter()
                .map(|property| DependentKey {
                    node: id_slot,
                    table,
                    property,
                }),
        );
    }
    Ok((dependent, entity_keys))
}

/// A key that is a node's value: its output slot and the value's
/// expression, built after aggregating (see [`dependent_keys`]).
type EntityKey = (SlotId, BoundExpr);

/// [`dependent_keys`] for the keys that are node `n`'s value (built from
/// its id, constants and its properties): they leave the keys, its id
/// joins them if not there, and they go to `entity_keys`. Returns the
/// properties those values read, or None when no key is such a value.
fn node_value_keys(
    q: &mut BoundPart,
    n: usize,
    entity_keys: &mut Vec<EntityKey>,
) -> Option<Vec<(String, SlotId, LogicalType)>> {
    use crate::expr::BoundExprKind;
    let node = &q.graph.nodes[n];
    let id_slot = node.id_slot;
    let is_value = |e: &BoundExpr| {
        let BoundExprKind::Function(f, args) = &e.kind else {
            return false;
        };
        let mut slots = Vec::new();
        e.slots(&mut slots);
        f == "_node"
            && matches!(args.first().map(|a| &a.kind), Some(BoundExprKind::Slot(s)) if *s == id_slot)
            && slots
                .iter()
                .all(|s| *s == id_slot || node.properties.iter().any(|p| p.1 == *s))
    };
    if !q.group_keys.iter().any(|(e, _)| is_value(e)) {
        return None;
    }
    let mut late: Vec<(String, SlotId, LogicalType)> = Vec::new();
    let mut kept = Vec::with_capacity(q.group_keys.len());
    for (e, out) in std::mem::take(&mut q.group_keys) {
        if !is_value(&e) {
            kept.push((e, out));
            continue;
        }
        let mut slots = Vec::new();
        e.slots(&mut slots);
        for p in &node.properties {
            if slots.contains(&p.1) && !late.iter().any(|l| l.1 == p.1) {
                late.push(p.clone());
            }
        }
        entity_keys.push((out, e));
    }
    let id_taken = kept.iter().any(|(e, out)| {
        *out == id_slot || matches!(e.kind, BoundExprKind::Slot(s) if s == id_slot)
    });
    if !id_taken {
        let span = kith_common::Span::new(0, 0);
        kept.push((
            BoundExpr::slot(id_slot, LogicalType::InternalId, span),
            id_slot,
        ));
    }
    q.group_keys = kept;
    Some(late)
}

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

/// The estimated fraction of a scan's rows its own filters may keep at
/// most for the properties no filter reads to be read after the filters
/// (for the kept rows) instead of by the scan (for every row).
const LATE_READ_SELECTIVITY: f64 = 0.1;

/// The pipeline (source and steps) of one table choice.
fn plan_pipeline(
    q: &BoundPart,
    choice: &TableChoice,
    null_tables: &[Option<TableId>],
    (from_rows, counts_last): (bool, bool),
    used: &SlotUses,
    catalog: &Catalog,
    cardinality: &dyn Fn(TableId) -> u64,
) -> Result<SubPlan> {
    let g: &QueryGraph = &q.graph;
    let node_tables = &choice.node_tables;
    let rel_tables = &choice.rel_tables;
    let mut used = used.clone();
    for e in &choice.predicates {
        used.add(e);
    }
    let used = &used;
    let mut available: HashSet<SlotId> = HashSet::new();
    let mut pending: Vec<Option<BoundExpr>> = q
        .predicates
        .iter()
        .chain(&choice.predicates)
        .cloned()
        .map(Some)
        .collect();
    let mut steps = Vec::new();

    let estimates = Estimates::new(
        g,
        catalog,
        node_tables,
        rel_tables,
        pending
            .iter()
            .flatten()
            .filter(|e| isomorphism_pair(g, e).is_none()),
        cardinality,
    )
    .count_only(if counts_last {
        counted_leaves(q, used)
    } else {
        0
    });
    let ctx = ExtendCtx {
        g,
        catalog,
        node_tables,
        rel_tables,
        directions: &choice.directions,
        used,
        estimates: &estimates,
        chosen: Default::default(),
    };
    let mut bound = vec![false; g.nodes.len()];
    let mut done = vec![false; g.rels.len()];
    // An in-pipeline OPTIONAL MATCH's pattern (a left outer hash join's
    // build side, or a chain) is planned last: held bound until then.
    let optional_join = q.optional_join.as_ref();
    let optional_chain = q.optional_chain.as_ref();
    let held = optional_join
        .map(|j| (j.first_node, j.first_rel))
        .or(optional_chain.map(|c| (c.first_node, c.first_rel)));
    if let Some((first_node, first_rel)) = held {
        bound[first_node..].iter_mut().for_each(|b| *b = true);
        done[first_rel..].iter_mut().for_each(|d| *d = true);
    }
    let own_predicates = |i: usize| {
        let mine = own_slots(&g.nodes[i]);
        q.predicates
            .iter()
            .filter(|e| {
                let v = expr_slots(e);
                !v.is_empty() && v.iter().all(|s| mine.contains(s))
            })
            .count()
    };
    // Fixed-length rels at each node.
    let pattern_degree = |i: usize| {
        g.rels
            .iter()
            .filter(|r| r.recursive.is_none() && (r.left == i || r.right == i))
            .count()
    };
    // Whether the part groups by this node alone (its value or its
    // properties): started there, the keys are flat while the extends after
    // them run, so a count reads degrees instead of neighbours
    // (`Extend::degrees`, `Extend::collapse`) and a key is read once per
    // node instead of once per match.
    let groups_by = |i: usize| {
        let n = &g.nodes[i];
        !q.group_keys.is_empty()
            && q.group_keys.iter().all(|(e, _)| {
                let mut v = Vec::new();
                e.slots(&mut v);
                !v.is_empty()
                    && v.iter()
                        .all(|s| *s == n.id_slot || n.properties.iter().any(|p| p.1 == *s))
            })
    };
    // Where a scan starts when the estimates cannot tell (see
    // `join_order.rs`): most predicates of its own, then the node the part
    // groups by, then the smallest table, then the most rels: the middle
    // of `(a)->(b)->(c)`, whose two extends then both run from one flat
    // node (and, when only counted, multiply its two degrees:
    // `Extend::pair`).
    let mut by_preference: Vec<usize> = (0..g.nodes.len()).collect();
    by_preference.sort_by_key(|&i| {
        (
            std::cmp::Reverse(own_predicates(i)),
            !groups_by(i),
            cardinality(node_tables[i]),
            std::cmp::Reverse(pattern_degree(i)),
            i,
        )
    });
    let mut start_rank = vec![0; g.nodes.len()];
    for (rank, &i) in by_preference.iter().enumerate() {
        start_rank[i] = rank;
    }
    // The unbound node to scan next: the start of the cheapest order of
    // the component of the most preferred unbound node.
    let pick_start = |bound: &[bool]| {
        let first = by_preference.iter().copied().find(|&i| !bound[i])?;
        let prefer = |order: &[usize]| -> Vec<usize> {
            std::iter::once(start_rank[order[0]])
                .chain(order.iter().copied())
                .collect()
        };
        let nodes = ctx.reachable(bit(first)) & !ctx.mask(bound);
        let best = estimates.best_order(g, 0, nodes, &prefer, &|y, set| {
            ctx.intersect_rels(y, &|n| set & bit(n) != 0, &|_| false)
        });
        Some(best.map_or(first, |o| o.order[0]))
    };

    let source = if from_rows {
        let columns: Vec<(SlotId, LogicalType)> = q
            .inputs
            .iter()
            .cloned()
            .chain(q.unwinds.iter().map(|u| (u.slot, u.ty.clone())))
            .collect();
        available.extend(columns.iter().map(|c| c.0));
        for (i, n) in g.nodes.iter().enumerate() {
            if !n.imported {
                continue;
            }
            bound[i] = true;
            if n.tables.len() > 1 {
                // The input holds ids of several tables: this pipeline takes
                // those of its table (and, for the node's smallest table, the
                // NULLs of an OPTIONAL MATCH).
                let nulls = null_tables[i] == Some(node_tables[i]);
                steps.push(Step::Filter(table_filter(n.id_slot, node_tables[i], nulls)));
            }
            if !n.properties.is_empty() {
                steps.push(Step::ScanProperties {
                    node: n.id_slot,
                    table: node_tables[i],
                    properties: reads(catalog, node_tables[i], &n.properties)?,
                });
                available.extend(n.properties.iter().map(|p| p.1));
            }
        }
        place_filters(&available, &mut pending, &mut steps);
        ctx.extend_all(
            &mut bound,
            &mut done,
            &mut available,
            &mut pending,
            &mut steps,
        )?;
        Source::Rows { columns }
    } else if ctx.find_lookup(&bound, &available, &pending).is_some() {
        // A node found by its key: the loop below starts from it.
        Source::Single
    } else {
        match pick_start(&bound) {
            None => Source::Single,
            Some(start) => ctx.scan_from(
                start,
                &mut bound,
                &mut done,
                &mut available,
                &mut pending,
                &mut steps,
            )?,
        }
    };
    let mut estimate = ctx.take_estimate(matches!(source, Source::Rows { .. }));
    // Whatever is not connected to the bound part: a cross product with the
    // materialized rows of each remaining component.
    let slot_types: HashMap<SlotId, LogicalType> = g.slot_types().collect();
    loop {
        // A node whose primary key is fixed by what is bound: looked up
        // per tuple (index nested-loop join) instead of a cross product
        // with a scan.
        if let Some((i, key)) = ctx.find_lookup(&bound, &available, &pending) {
            ctx.lookup_from(
                i,
                key,
                &mut bound,
                &mut done,
                &mut available,
                &mut pending,
                &mut steps,
            )?;
            // A key lookup that starts the pipeline shows its order.
            let found = ctx.take_estimate(false);
            if estimate.is_none() && matches!(source, Source::Single) {
                estimate = found;
            }
            continue;
        }
        let Some(start) = pick_start(&bound) else {
            break;
        };
        let mut sub_available = HashSet::new();
        let mut sub_steps = Vec::new();
        let before = pending.clone();
        let sub_source = ctx.scan_from(
            start,
            &mut bound,
            &mut done,
            &mut sub_available,
            &mut pending,
            &mut sub_steps,
        )?;
        let key = hash_join_key(&available, &sub_available, &mut pending);
        // The predicates the build side and its key took (not the
        // isomorphism tests, which `used` may not count).
        let consumed = before
            .iter()
            .zip(&pending)
            .filter_map(|(e, p)| e.as_ref().filter(|_| p.is_none()))
            .filter(|e| isomorphism_pair(g, e).is_none());
        let columns = build_columns(used, &sub_available, consumed, &slot_types);
        available.extend(columns.iter().map(|c| c.0));
        steps.push(Step::CrossProduct {
            build: Box::new(SubPlan {
                source: sub_source,
                steps: sub_steps,
                estimate: ctx.take_estimate(false),
            }),
            columns,
            key,
            optional: false,
        });
        place_filters(&available, &mut pending, &mut steps);
    }
    if let Some(c) = optional_chain {
        let chain = optional_chain_steps(&ctx, c, &mut bound, &mut done, &mut available)?;
        steps.push(Step::OptionalChain(chain));
        // A WITH's WHERE over the chain's variables filters the padded rows.
        place_filters(&available, &mut pending, &mut steps);
    }
    if let Some(j) = optional_join {
        optional_join_steps(
            &ctx,
            j,
            &mut bound,
            &mut done,
            &mut available,
            &slot_types,
            &mut steps,
        )?;
        // A WITH's WHERE over the pattern's variables (`WITH a, b WHERE b
        // IS NULL`) filters the padded rows.
        place_filters(&available, &mut pending, &mut steps);
    }
    if let Some(e) = pending.iter().flatten().next() {
        return Err(Error::internal(format!(
            "predicate at {:?} could not be placed",
            e.span
        )));
    }
    Ok(SubPlan {
        source,
        steps,
        estimate,
    })
}

fn place_filters(
    available: &HashSet<SlotId>,
    pending: &mut [Option<BoundExpr>],
    steps: &mut Vec<Step>,
) {
    for p in pending.iter_mut() {
        let ready = p.as_ref().is_some_and(|e| {
            let mut v = Vec::new();
            e.slots(&mut v);
            v.iter().all(|s| available.contains(s))
        });
        if ready {
            if let Some(e) = p.take() {
                steps.push(Step::Filter(e));
            }
        }
    }
}

/// What adding the rels of a query graph needs.
/// What a primary-key lookup probes the index with (see
/// [`ExtendCtx::lookup_key`]).
struct LookupKey {
    key: BoundExpr,
    /// The key is a list: each distinct item's node is bound.
    each_item: bool,
}

struct ExtendCtx<'a> {
    g: &'a QueryGraph,
    catalog: &'a Catalog,
    node_tables: &'a [TableId],
    rel_tables: &'a [TableId],
    /// Per rel: the direction it is matched in (never `Both`).
    directions: &'a [Direction],
    used: &'a SlotUses,
    estimates: &'a Estimates,
    /// The order the last `extend_all` followed, for EXPLAIN.
    chosen: std::cell::RefCell<Option<JoinOrder>>,
}

impl ExtendCtx<'_> {
    /// The order the last `scan_from`, `lookup_from` or `extend_all`
    /// followed, as EXPLAIN shows it (None: the greedy order, or one node).
    fn take_estimate(&self, per_input_row: bool) -> Option<crate::plan::JoinEstimate> {
        let o = self.chosen.take()?;
        (o.order.len() >= 2).then(|| crate::plan::JoinEstimate {
            order: o
                .order
                .iter()
                .map(|&i| self.g.nodes[i].name.clone())
                .collect(),
            cost: o.cost,
            rows: o.rows,
            per_input_row,
        })
    }

    /// `bound` as a bit set (see `join_order.rs`).
    fn mask(&self, bound: &[bool]) -> u64 {
        (0..bound.len().min(64))
            .filter(|&i| bound[i])
            .fold(0, |m, i| m | bit(i))
    }

    /// The nodes connected to `from` (a bit set) through fixed-length rels,
    /// `from` included.
    fn reachable(&self, from: u64) -> u64 {
        reachable(self.g, from)
    }

    /// The rels an intersection would bind unbound node `x` through: those
    /// not `done`, without property reads, from `x` to a `bound` node.
    fn intersect_rels(
        &self,
        x: usize,
        bound: &dyn Fn(usize) -> bool,
        done: &dyn Fn(usize) -> bool,
    ) -> Vec<usize> {
        (0..self.g.rels.len())
            .filter(|&i| {
                let r = &self.g.rels[i];
                !done(i)
                    && r.recursive.is_none()
                    && r.properties.is_empty()
                    && r.left != r.right
                    && ((r.left == x && bound(r.right)) || (r.right == x && bound(r.left)))
            })
            .collect()
    }

    /// Adds every rel reachable from the bound nodes, breadth-first, each
    /// predicate right after the step that makes its last slot available.
    /// Scans node `start` and adds everything connected to it.
    fn scan_from(
        &self,
        start: usize,
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<Source> {
        let n = &self.g.nodes[start];
        available.insert(n.id_slot);
        // The properties the scan's own filters read are scanned; when
        // those filters keep few rows, the others are read after them, for
        // the rows kept only (`m.idMod7` of SQ5's `WHERE m.id % 1113 = 7`
        // for 1 row in 1,113 instead of every row).
        let mine = own_slots(n);
        let mut filtered = HashSet::new();
        for v in pending.iter().flatten().map(expr_slots) {
            if v.iter().all(|s| mine.contains(s)) {
                filtered.extend(v);
            }
        }
        let (early, late): (Vec<_>, Vec<_>) = n
            .properties
            .iter()
            .cloned()
            .partition(|p| filtered.contains(&p.1));
        let selective = self.estimates.ready_selectivity(0, bit(start)) <= LATE_READ_SELECTIVITY;
        let (scan_reads, late) = if !filtered.is_empty() && !late.is_empty() && selective {
            (early, late)
        } else {
            (n.properties.clone(), Vec::new())
        };
        available.extend(scan_reads.iter().map(|p| p.1));
        place_filters(available, pending, steps);
        if !late.is_empty() {
            steps.push(Step::ScanProperties {
                node: n.id_slot,
                table: self.node_tables[start],
                properties: reads(self.catalog, self.node_tables[start], &late)?,
            });
            available.extend(late.iter().map(|p| p.1));
            place_filters(available, pending, steps);
        }
        bound[start] = true;
        self.extend_all(bound, done, available, pending, steps)?;
        // From one tuple to the scan's rows.
        let scanned = self.chosen.take().and_then(|o| {
            let intersect =
                |y, set: u64| self.intersect_rels(y, &|n| set & bit(n) != 0, &|_| false);
            self.estimates.evaluate(self.g, 0, &o.order, &intersect)
        });
        self.chosen.replace(scanned);
        Ok(Source::ScanNodes {
            table: self.node_tables[start],
            id_slot: n.id_slot,
            properties: reads(self.catalog, self.node_tables[start], &scan_reads)?,
        })
    }

    /// The primary-key equality `n.pk = key` among `pending` of unbound node
    /// `i` whose key reads only `available` slots (and can equal a key of
    /// the primary key's type), if any; or, when nothing is bound yet, a
    /// membership `n.pk IN list` whose list reads no slot (a literal or a
    /// parameter: `WHERE a.id IN $ids`), each of its items looked up.
    fn lookup_key(
        &self,
        i: usize,
        available: &HashSet<SlotId>,
        pending: &[Option<BoundExpr>],
    ) -> Option<LookupKey> {
        use crate::expr::{BinaryOp, BoundExprKind};
        let table = self.node_tables[i];
        if table == NO_TABLE {
            return None;
        }
        let entry = self.catalog.table(table)?;
        let pk = entry.primary_key().filter(|p| !entry.is_serial_key(p))?;
        let pk_slot = self.g.nodes[i]
            .properties
            .iter()
            .find(|p| p.0 == pk.name)
            .map(|p| p.1)?;
        let fits = |ty: &LogicalType| {
            *ty == LogicalType::Any
                || (pk.ty.is_integer() && ty.is_numeric())
                || (*ty == pk.ty && matches!(ty, LogicalType::String | LogicalType::Date))
        };
        let reads_only = |key: &BoundExpr, allowed: &HashSet<SlotId>| {
            let mut slots = Vec::new();
            key.slots(&mut slots);
            slots.iter().all(|s| allowed.contains(s)) && !key.calls("rand")
        };
        pending.iter().flatten().find_map(|e| match &e.kind {
            BoundExprKind::Binary(BinaryOp::Eq, l, r) => {
                let key = match (&l.kind, &r.kind) {
                    (BoundExprKind::Slot(s), _) if *s == pk_slot => r,
                    (_, BoundExprKind::Slot(s)) if *s == pk_slot => l,
                    _ => return None,
                };
                (reads_only(key, available) && fits(&key.ty)).then(|| LookupKey {
                    key: (**key).clone(),
                    each_item: false,
                })
            }
            BoundExprKind::Binary(BinaryOp::In, l, r)
                if matches!(l.kind, BoundExprKind::Slot(s) if s == pk_slot)
                    && available.is_empty() =>
            {
                let item_fits = match &r.ty {
                    LogicalType::List(item) => fits(item),
                    t => *t == LogicalType::Any,
                };
                (item_fits && reads_only(r, &HashSet::new())).then(|| LookupKey {
                    key: (**r).clone(),
                    each_item: true,
                })
            }
            _ => None,
        })
    }

    /// The first unbound node with a [`ExtendCtx::lookup_key`].
    fn find_lookup(
        &self,
        bound: &[bool],
        available: &HashSet<SlotId>,
        pending: &[Option<BoundExpr>],
    ) -> Option<(usize, LookupKey)> {
        (0..self.g.nodes.len())
            .filter(|&i| !bound[i])
            .find_map(|i| self.lookup_key(i, available, pending).map(|k| (i, k)))
    }

    /// Binds node `i` by a primary-key lookup of `key`, then adds
    /// everything connected to it.
    #[allow(clippy::too_many_arguments)]
    fn lookup_from(
        &self,
        i: usize,
        key: LookupKey,
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let n = &self.g.nodes[i];
        let table = self.node_tables[i];
        steps.push(Step::LookupNode {
            table,
            key: key.key,
            each_item: key.each_item,
            id_slot: n.id_slot,
        });
        available.insert(n.id_slot);
        if !n.properties.is_empty() {
            steps.push(Step::ScanProperties {
                node: n.id_slot,
                table,
                properties: reads(self.catalog, table, &n.properties)?,
            });
            available.extend(n.properties.iter().map(|p| p.1));
        }
        bound[i] = true;
        place_filters(available, pending, steps);
        self.extend_all(bound, done, available, pending, steps)
    }

    /// Takes the relationship-isomorphism predicates (`r1 <> r2`, see the
    /// binder) between rel `ri`, about to be extended, and rels extended
    /// before it: those whose tables differ in this choice always hold and
    /// are dropped; those whose rel shares the table become the extend's
    /// exclusions.
    fn isomorphism(
        &self,
        ri: usize,
        from_is_src: bool,
        done: &[bool],
        available: &HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
    ) -> Vec<(SlotId, SlotId)> {
        let g = self.g;
        let me = g.rels[ri].id_slot;
        let mut exclude = Vec::new();
        for p in pending.iter_mut() {
            let Some((x, y)) = p.as_ref().and_then(|e| isomorphism_pair(g, e)) else {
                continue;
            };
            let other = match (x == me, y == me) {
                (true, false) => y,
                (false, true) => x,
                _ => continue,
            };
            let Some(j) = g.rels.iter().position(|r| r.id_slot == other) else {
                continue;
            };
            if j == ri || !done[j] || g.rels[j].recursive.is_some() {
                continue;
            }
            if self.rel_tables[j] != self.rel_tables[ri] {
                *p = None;
                continue;
            }
            // The earlier rel is in this extend's range only when its end on
            // this side (its source for a forward extend) is the node
            // extended from.
            let rj = &g.rels[j];
            let (src, dst) = if self.directions[j] == Direction::Left {
                (rj.right, rj.left)
            } else {
                (rj.left, rj.right)
            };
            let gate = g.nodes[if from_is_src { src } else { dst }].id_slot;
            // Both must be in this pipeline (not on a cross product's other
            // side); otherwise the test stays a filter.
            if !available.contains(&other) || !available.contains(&gate) {
                continue;
            }
            exclude.push((other, gate));
            *p = None;
        }
        exclude
    }

    /// The CSR that walks rel `ri` from its end `from`: forward when `from`
    /// is the rel's source in this choice of directions.
    fn direction_from(&self, ri: usize, from: usize) -> ExtendDirection {
        let r = &self.g.rels[ri];
        if (from == r.left) == (self.directions[ri] != Direction::Left) {
            ExtendDirection::Fwd
        } else {
            ExtendDirection::Bwd
        }
    }

    /// Whether rel `ri`'s id must be written: it is read downstream, or by
    /// an isomorphism test with a rel added later (or placed as a filter).
    fn rel_id_needed(&self, ri: usize, pending: &[Option<BoundExpr>]) -> bool {
        let id = self.g.rels[ri].id_slot;
        self.used.contains(&id)
            || pending
                .iter()
                .flatten()
                .any(|e| isomorphism_pair(self.g, e).is_some_and(|(x, y)| x == id || y == id))
    }

    /// Marks node `to` bound (its id just written by a step) and reads its
    /// properties. Late materialization: the properties a filter that becomes
    /// ready here reads are scanned first, the rest only for the tuples that
    /// pass.
    fn bind_node(
        &self,
        to: usize,
        bound: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let (catalog, node_tables) = (self.catalog, self.node_tables);
        bound[to] = true;
        let tn = &self.g.nodes[to];
        // Conjuncts over the new node's properties alone: a mask of the
        // nodes that pass them, built from a scan of the table when enough
        // tuples arrive (sideways information passing); they stay filters.
        let conjuncts: Vec<BoundExpr> = pending.iter().flatten().cloned().collect();
        if let Some(predicate) = recursive::node_predicate(&conjuncts, tn) {
            steps.push(Step::SemiMask {
                node: tn.id_slot,
                table: node_tables[to],
                predicate,
            });
        }
        available.insert(tn.id_slot);
        let mut with_props = available.clone();
        with_props.extend(tn.properties.iter().map(|p| p.1));
        let filtered: HashSet<SlotId> = pending
            .iter()
            .flatten()
            .map(expr_slots)
            .filter(|slots| slots.iter().all(|s| with_props.contains(s)))
            .flatten()
            .collect();
        let (first, rest): (Vec<_>, Vec<_>) = tn
            .properties
            .iter()
            .cloned()
            .partition(|p| filtered.contains(&p.1));
        let batches = if first.is_empty() || rest.is_empty() {
            vec![tn.properties.clone()]
        } else {
            vec![first, rest]
        };
        for props in batches.into_iter().filter(|b| !b.is_empty()) {
            steps.push(Step::ScanProperties {
                node: tn.id_slot,
                table: node_tables[to],
                properties: reads(catalog, node_tables[to], &props)?,
            });
            available.extend(props.iter().map(|p| p.1));
            place_filters(available, pending, steps);
        }
        Ok(())
    }

    /// An unbound node that two or more rels (not yet added, without
    /// property reads) tie to bound nodes, with those rels: bound by
    /// intersecting the bound nodes' neighbour lists instead of extending
    /// one rel and filtering on the others. The node with the most such
    /// rels wins.
    fn intersect_candidate(&self, bound: &[bool], done: &[bool]) -> Option<(usize, Vec<usize>)> {
        (0..self.g.nodes.len())
            .filter(|&x| !bound[x])
            .filter_map(|x| {
                let rels = self.intersect_rels(x, &|n| bound[n], &|i| done[i]);
                (rels.len() >= 2).then_some((x, rels))
            })
            .max_by_key(|(x, rels)| (rels.len(), std::cmp::Reverse(*x)))
    }

    /// Adds the [`Step::Intersect`] that binds node `x` through `rels`.
    #[allow(clippy::too_many_arguments)]
    fn intersect(
        &self,
        x: usize,
        rels: &[usize],
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let g = self.g;
        for &ri in rels {
            done[ri] = true;
        }
        // Relationship isomorphism between these rels and with rels added
        // before: tested by the step (rels of different tables always differ).
        let mut distinct = Vec::new();
        let mut exclude = Vec::new();
        for p in pending.iter_mut() {
            let Some((a, b)) = p.as_ref().and_then(|e| isomorphism_pair(g, e)) else {
                continue;
            };
            let index = |s: SlotId| rels.iter().position(|&ri| g.rels[ri].id_slot == s);
            let (i, other) = match (index(a), index(b)) {
                (Some(i), Some(j)) => {
                    if self.rel_tables[rels[i]] == self.rel_tables[rels[j]] {
                        distinct.push((i, j));
                    }
                    *p = None;
                    continue;
                }
                (Some(i), None) => (i, b),
                (None, Some(i)) => (i, a),
                (None, None) => continue,
            };
            let Some(j) = g.rels.iter().position(|r| r.id_slot == other) else {
                continue;
            };
            if self.rel_tables[j] != self.rel_tables[rels[i]] {
                *p = None;
            } else if done[j] && available.contains(&other) {
                exclude.push((i, other));
                *p = None;
            }
        }
        let mut lists = Vec::with_capacity(rels.len());
        for &ri in rels {
            let r = &g.rels[ri];
            let from = if r.left == x { r.right } else { r.left };
            lists.push(IntersectRel {
                rel_table: self.rel_tables[ri],
                direction: self.direction_from(ri, from),
                from: g.nodes[from].id_slot,
                rel_id: self.rel_id_needed(ri, pending).then_some(r.id_slot),
            });
            available.insert(r.id_slot);
        }
        let directions: Vec<ExtendDirection> = lists.iter().map(|l| l.direction).collect();
        steps.push(Step::Intersect {
            to: g.nodes[x].id_slot,
            to_table: self.node_tables[x],
            rels: lists,
            distinct,
            exclude,
        });
        self.bind_node(x, bound, available, pending, steps)?;
        for (&ri, direction) in rels.iter().zip(directions) {
            let r = &g.rels[ri];
            let from = if r.left == x { r.right } else { r.left };
            alias_ends(g, ri, from, direction, self.used, available, steps);
        }
        place_filters(available, pending, steps);
        Ok(())
    }

    fn extend_all(
        &self,
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let g = self.g;
        // The cheapest order of the nodes reachable from what is bound (None:
        // too many nodes, or nothing to add: the greedy rules below).
        let mask = self.mask(bound);
        let order = self.estimates.best_order(
            g,
            mask,
            self.reachable(mask) & !mask,
            &|order| order.to_vec(),
            &|y, set| self.intersect_rels(y, &|n| set & bit(n) != 0, &|_| false),
        );
        self.chosen.replace(order.clone().map(|o| JoinOrder {
            order: bits(mask).chain(o.order).collect(),
            ..o
        }));
        while done.iter().any(|d| !d) {
            let closing = (0..g.rels.len())
                .any(|i| !done[i] && bound[g.rels[i].left] && bound[g.rels[i].right]);
            // The next node of the order, if any is left.
            let next = order
                .as_ref()
                .and_then(|o| o.order.iter().copied().find(|&y| !bound[y]));
            if !closing {
                let candidate = match next {
                    Some(y) => {
                        let rels = self.intersect_rels(y, &|n| bound[n], &|i| done[i]);
                        (rels.len() >= 2).then_some((y, rels))
                    }
                    None => self.intersect_candidate(bound, done),
                };
                if let Some((x, rels)) = candidate {
                    self.intersect(x, &rels, bound, done, available, pending, steps)?;
                    continue;
                }
            }
            // Prefer closing a cycle (both ends bound), then any rel with one end bound.
            // Then, filter early: a rel after which a predicate (on the new
            // node or the rel) becomes ready before the others.
            let filtered = |i: usize| {
                let r = &g.rels[i];
                let n = &g.nodes[if bound[r.left] { r.right } else { r.left }];
                let new: HashSet<SlotId> = std::iter::once(n.id_slot)
                    .chain(n.properties.iter().map(|p| p.1))
                    .chain(r.properties.iter().map(|p| p.1))
                    .collect();
                pending.iter().flatten().any(|e| {
                    let slots = expr_slots(e);
                    isomorphism_pair(g, e).is_none()
                        && slots.iter().any(|s| new.contains(s))
                        && slots
                            .iter()
                            .all(|s| new.contains(s) || available.contains(s))
                })
            };
            let from_bound = |i: usize| {
                let r = &g.rels[i];
                if bound[r.left] {
                    r.left
                } else {
                    r.right
                }
            };
            let guided = match next {
                // The order's next node, through its rel with the fewest
                // rels per tuple (as the estimate assumed).
                Some(y) if !closing => (0..g.rels.len())
                    .filter(|&i| !done[i])
                    .filter(|&i| {
                        let r = &g.rels[i];
                        (r.left == y && bound[r.right]) || (r.right == y && bound[r.left])
                    })
                    .min_by(|&a, &b| {
                        let degree = |i| self.estimates.degree(g, i, from_bound(i));
                        degree(a).total_cmp(&degree(b)).then(a.cmp(&b))
                    }),
                _ => None,
            };
            let pick = guided.or_else(|| {
                (0..g.rels.len())
                    .filter(|&i| !done[i])
                    .filter(|&i| bound[g.rels[i].left] || bound[g.rels[i].right])
                    .max_by_key(|&i| {
                        let closing = bound[g.rels[i].left] && bound[g.rels[i].right];
                        (closing, !closing && filtered(i), std::cmp::Reverse(i))
                    })
            });
            let Some(ri) = pick else {
                // The rest is not connected to what is bound.
                return Ok(());
            };
            done[ri] = true;
            let r = &g.rels[ri];
            let (used, catalog, node_tables, rel_tables) =
                (self.used, self.catalog, self.node_tables, self.rel_tables);
            // Extend from the bound end; its CSR is forward when it is the source.
            let (from, to) = if bound[r.left] {
                (r.left, r.right)
            } else {
                (r.right, r.left)
            };
            let direction = self.direction_from(ri, from);
            let closes_cycle = bound[to];
            let exclude = self.isomorphism(
                ri,
                direction == ExtendDirection::Fwd,
                done,
                available,
                pending,
            );
            let id_needed = self.rel_id_needed(ri, pending);
            let to_slot = if closes_cycle {
                // A fresh slot for the neighbour, then a filter against the bound id.
                Some(SlotId(u32::MAX - ri as u32))
            } else if used.contains(&g.nodes[to].id_slot)
                || !g.nodes[to].properties.is_empty()
                || g.rels
                    .iter()
                    .filter(|r| r.left == to || r.right == to)
                    .count()
                    > 1
                // A later rel's isomorphism test may read this rel's
                // endpoints (the node it was extended to).
                || id_needed
                // An undirected rel's value names its stored ends.
                || r.ends.is_some_and(|(s, d)| used.contains(&s) || used.contains(&d))
            {
                Some(g.nodes[to].id_slot)
            } else {
                None
            };
            steps.push(Step::Extend {
                rel_table: rel_tables[ri],
                direction,
                from: g.nodes[from].id_slot,
                to: to_slot,
                to_table: node_tables[to],
                rel_id: id_needed.then_some(r.id_slot),
                properties: reads(catalog, rel_tables[ri], &r.properties)?,
                exclude,
                optional: false,
            });
            available.insert(r.id_slot);
            available.extend(r.properties.iter().map(|p| p.1));
            if closes_cycle {
                let (Some(tmp), id) = (to_slot, g.nodes[to].id_slot) else {
                    return Err(Error::internal("cycle extend without a slot"));
                };
                let span = kith_common::Span::new(0, 0);
                steps.push(Step::Filter(BoundExpr {
                    kind: crate::expr::BoundExprKind::Binary(
                        crate::expr::BinaryOp::Eq,
                        Box::new(BoundExpr::slot(tmp, LogicalType::InternalId, span)),
                        Box::new(BoundExpr::slot(id, LogicalType::InternalId, span)),
                    ),
                    ty: LogicalType::Bool,
                    span,
                }));
            } else {
                self.bind_node(to, bound, available, pending, steps)?;
            }
            alias_ends(g, ri, from, direction, used, available, steps);
            place_filters(available, pending, steps);
        }
        Ok(())
    }
}

/// An equality among `pending` between an expression over the bound part
/// (`probe`) and one over a new component (`build`), with hashable types:
/// the cross product with that component becomes a hash join. The equality
/// leaves `pending`: the join index finds exactly the rows it holds for
/// (Cypher's equality, NULL equal to nothing; `hash_join.rs`).
fn hash_join_key(
    probe: &HashSet<SlotId>,
    build: &HashSet<SlotId>,
    pending: &mut [Option<BoundExpr>],
) -> Option<crate::plan::HashJoinKey> {
    use crate::expr::{BinaryOp, BoundExprKind};
    let within = |e: &BoundExpr, side: &HashSet<SlotId>| {
        let mut v = Vec::new();
        e.slots(&mut v);
        !v.is_empty() && v.iter().all(|s| side.contains(s))
    };
    let hashable = |a: &LogicalType, b: &LogicalType| {
        (a.is_numeric() && b.is_numeric())
            || (a == b
                && matches!(
                    a,
                    LogicalType::String
                        | LogicalType::Bool
                        | LogicalType::Date
                        | LogicalType::InternalId
                ))
    };
    let (i, key) = pending.iter().enumerate().find_map(|(i, e)| {
        let BoundExprKind::Binary(BinaryOp::Eq, l, r) = &e.as_ref()?.kind else {
            return None;
        };
        let (p, b) = if within(l, probe) && within(r, build) {
            (l, r)
        } else if within(r, probe) && within(l, build) {
            (r, l)
        } else {
            return None;
        };
        let deterministic = !p.calls("rand") && !b.calls("rand");
        (hashable(&p.ty, &b.ty) && deterministic).then(|| {
            let key = crate::plan::HashJoinKey {
                probe: (**p).clone(),
                build: (**b).clone(),
            };
            (i, key)
        })
    })?;
    pending[i] = None;
    Some(key)
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
