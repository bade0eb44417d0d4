//! From a bound query to a [`QueryPlan`]: chooses where the pipeline starts,
//! the order and direction of extends, and where each predicate runs.
//!
//! The start node is the one with the most predicates of its own (ties: the
//! smallest table); rels are then added breadth-first, each predicate placed
//! right after the step that makes its last slot available. A cost-based DP
//! join order comes with the join operators.

use std::collections::HashSet;

use kith_catalog::{Catalog, TableEntry};
use kith_common::{Error, ErrorKind, LogicalType, Result, TableId};
use kith_parser::ast::Direction;

use crate::bound::{BoundQuery, QueryGraph};
use crate::expr::{BoundExpr, SlotId};
use crate::plan::{ExtendDirection, PropertyRead, QueryPlan, Sink, Source, Step};

fn single_table(tables: &[TableId], what: &str, name: &str, span_name: &str) -> Result<TableId> {
    match tables {
        [t] => Ok(*t),
        [] => Err(Error::new(
            ErrorKind::Semantic,
            format!("no {what} table can match '{name}'{span_name}"),
        )),
        _ => Err(Error::not_supported(format!(
            "{what} pattern '{name}' matching several tables is not supported yet; give it a single label"
        ))),
    }
}

fn display_name(name: &str) -> &str {
    if name.starts_with("_anon_") {
        "(anonymous)"
    } else {
        name
    }
}

fn reads(
    catalog: &Catalog,
    table: TableId,
    props: &[(String, SlotId, LogicalType)],
) -> Result<Vec<PropertyRead>> {
    let entry: &TableEntry = catalog
        .table(table)
        .ok_or_else(|| Error::internal(format!("table {table:?} vanished from the catalog")))?;
    props
        .iter()
        .map(|(name, slot, ty)| {
            let p = entry.property(name).ok_or_else(|| {
                Error::semantic(format!(
                    "property '{name}' does not exist in table '{}'",
                    entry.name
                ))
            })?;
            Ok(PropertyRead {
                property: p.id,
                slot: *slot,
                ty: ty.clone(),
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
    let g: &QueryGraph = &q.graph;
    let node_tables = g
        .nodes
        .iter()
        .map(|n| single_table(&n.tables, "node", display_name(&n.name), ""))
        .collect::<Result<Vec<_>>>()?;
    let rel_tables = g
        .rels
        .iter()
        .map(|r| single_table(&r.tables, "rel", display_name(&r.name), ""))
        .collect::<Result<Vec<_>>>()?;
    for (r, &t) in g.rels.iter().zip(&rel_tables) {
        if r.direction == Direction::Both {
            return Err(Error::not_supported(
                "undirected relationship patterns are not supported yet",
            ));
        }
        let entry = catalog
            .table(t)
            .ok_or_else(|| Error::internal("rel table vanished"))?;
        let info = entry
            .rel_info()
            .ok_or_else(|| Error::internal("rel table without endpoints"))?;
        let (src, dst) = match r.direction {
            Direction::Left => (r.right, r.left),
            _ => (r.left, r.right),
        };
        if node_tables[src] != info.src || node_tables[dst] != info.dst {
            let name = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
            return Err(Error::semantic(format!(
                "rel table '{}' connects {} to {}, but the pattern uses it from {} to {}",
                entry.name,
                name(info.src),
                name(info.dst),
                name(node_tables[src]),
                name(node_tables[dst])
            )));
        }
    }

    // Slots something downstream reads.
    let mut used: HashSet<SlotId> = HashSet::new();
    let mut collect = |e: &BoundExpr| {
        let mut v = Vec::new();
        e.slots(&mut v);
        used.extend(v);
    };
    q.predicates.iter().for_each(&mut collect);
    q.group_keys.iter().for_each(|(e, _)| collect(e));
    q.aggregates
        .iter()
        .filter_map(|a| a.arg.as_ref())
        .for_each(&mut collect);
    q.outputs.iter().for_each(|(_, e)| collect(e));
    let node_degree = |i: usize| {
        g.rels
            .iter()
            .filter(|r| r.left == i || r.right == i)
            .count()
    };

    let mut available: HashSet<SlotId> = HashSet::new();
    let mut pending: Vec<Option<BoundExpr>> = q.predicates.iter().cloned().map(Some).collect();
    let mut steps = Vec::new();
    let place_filters = |available: &HashSet<SlotId>,
                         pending: &mut Vec<Option<BoundExpr>>,
                         steps: &mut Vec<Step>| {
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
    };

    let source = if g.nodes.is_empty() {
        Source::Single
    } else {
        // Connectedness: a cross product needs a join operator.
        let mut seen = vec![false; g.nodes.len()];
        let mut stack = vec![0];
        seen[0] = true;
        while let Some(n) = stack.pop() {
            for r in &g.rels {
                for (a, b) in [(r.left, r.right), (r.right, r.left)] {
                    if a == n && !seen[b] {
                        seen[b] = true;
                        stack.push(b);
                    }
                }
            }
        }
        if seen.iter().any(|s| !s) {
            return Err(Error::not_supported(
                "disconnected patterns (a Cartesian product) are not supported yet",
            ));
        }
        let own_predicates = |i: usize| {
            let n = &g.nodes[i];
            let mine: HashSet<SlotId> = std::iter::once(n.id_slot)
                .chain(n.properties.iter().map(|p| p.1))
                .collect();
            q.predicates
                .iter()
                .filter(|e| {
                    let mut v = Vec::new();
                    e.slots(&mut v);
                    !v.is_empty() && v.iter().all(|s| mine.contains(s))
                })
                .count()
        };
        let start = (0..g.nodes.len())
            .min_by_key(|&i| {
                (
                    std::cmp::Reverse(own_predicates(i)),
                    cardinality(node_tables[i]),
                    i,
                )
            })
            .unwrap_or(0);
        let n = &g.nodes[start];
        available.insert(n.id_slot);
        available.extend(n.properties.iter().map(|p| p.1));
        place_filters(&available, &mut pending, &mut steps);
        let mut bound = vec![false; g.nodes.len()];
        bound[start] = true;
        let mut done = vec![false; g.rels.len()];
        while done.iter().any(|d| !d) {
            // Prefer closing a cycle (both ends bound), then any rel with one end bound.
            let pick = (0..g.rels.len())
                .filter(|&i| !done[i])
                .filter(|&i| bound[g.rels[i].left] || bound[g.rels[i].right])
                .max_by_key(|&i| {
                    (
                        bound[g.rels[i].left] && bound[g.rels[i].right],
                        std::cmp::Reverse(i),
                    )
                });
            let Some(ri) = pick else {
                return Err(Error::internal("planner could not reach every rel"));
            };
            done[ri] = true;
            let r = &g.rels[ri];
            // Extend from the bound end; its CSR is forward when it is the source.
            let (from, to) = if bound[r.left] {
                (r.left, r.right)
            } else {
                (r.right, r.left)
            };
            let from_is_src = (from == r.left) == (r.direction != Direction::Left);
            let direction = if from_is_src {
                ExtendDirection::Fwd
            } else {
                ExtendDirection::Bwd
            };
            let closes_cycle = bound[to];
            let to_slot = if closes_cycle {
                // A fresh slot for the neighbour, then a filter against the bound id.
                Some(SlotId(u32::MAX - ri as u32))
            } else if used.contains(&g.nodes[to].id_slot)
                || !g.nodes[to].properties.is_empty()
                || node_degree(to) > 1
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
                rel_id: used.contains(&r.id_slot).then_some(r.id_slot),
                properties: reads(catalog, rel_tables[ri], &r.properties)?,
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
                bound[to] = true;
                let tn = &g.nodes[to];
                available.insert(tn.id_slot);
                if !tn.properties.is_empty() {
                    steps.push(Step::ScanProperties {
                        node: tn.id_slot,
                        table: node_tables[to],
                        properties: reads(catalog, node_tables[to], &tn.properties)?,
                    });
                    available.extend(tn.properties.iter().map(|p| p.1));
                }
            }
            place_filters(&available, &mut pending, &mut steps);
        }
        Source::ScanNodes {
            table: node_tables[start],
            id_slot: n.id_slot,
            properties: reads(catalog, node_tables[start], &n.properties)?,
        }
    };
    if let Some(e) = pending.iter().flatten().next() {
        return Err(Error::internal(format!(
            "predicate at {:?} could not be placed",
            e.span
        )));
    }

    let names: Vec<String> = q.outputs.iter().map(|(n, _)| n.clone()).collect();
    let types: Vec<LogicalType> = q.outputs.iter().map(|(_, e)| e.ty.clone()).collect();
    for (name, e) in &q.outputs {
        if e.ty == LogicalType::InternalId {
            return Err(Error::at(
                ErrorKind::NotSupported,
                e.span,
                format!("returning a whole node or rel ('{name}') is not supported yet; return its properties"),
            ));
        }
    }
    let outputs: Vec<BoundExpr> = q.outputs.into_iter().map(|(_, e)| e).collect();
    let aggregating = !q.aggregates.is_empty();
    let (sink, final_outputs) = if aggregating {
        (
            Sink::Aggregate {
                keys: q.group_keys,
                aggregates: q.aggregates,
            },
            outputs,
        )
    } else {
        (Sink::Collect { outputs }, Vec::new())
    };
    Ok(QueryPlan {
        source,
        steps,
        sink,
        names,
        types,
        final_outputs,
        distinct: q.distinct,
        skip: q.skip,
        limit: q.limit,
    })
}
