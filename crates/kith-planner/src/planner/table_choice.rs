//! The table choices of a pattern: one table per node and rel and a
//! direction per undirected rel, each planned as its own pipeline whose
//! results are unioned; and the check that an explicit pattern names
//! tables that can connect.

use super::*;

/// One way of matching a part's pattern: a table per node and per rel and
/// a direction per rel (undirected rels are tried both ways).
pub(super) struct TableChoice {
    pub(super) node_tables: Vec<TableId>,
    pub(super) rel_tables: Vec<TableId>,
    pub(super) directions: Vec<Direction>,
    /// Predicates this choice adds (an undirected self-loop is matched in
    /// one direction only).
    pub(super) predicates: Vec<BoundExpr>,
}

/// Every consistent assignment of tables (and directions) to the pattern's
/// variables. A pattern written with single tables that do not fit together
/// is an error; otherwise no assignment means no match.
pub(super) fn table_choices(g: &QueryGraph, catalog: &Catalog) -> Result<Vec<TableChoice>> {
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

pub(super) fn too_many_choices() -> Error {
    Error::not_supported(format!(
        "a pattern whose variables match more than {MAX_TABLE_CHOICES} combinations of tables; add labels"
    ))
}

/// `_table_is(id, table)`, or-ed with `id IS NULL` when `with_nulls`.
pub(super) fn table_filter(id: SlotId, table: TableId, with_nulls: bool) -> BoundExpr {
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
pub(super) fn distinct_ends(g: &QueryGraph, r: &crate::bound::QueryRel) -> BoundExpr {
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
pub(super) fn check_explicit_pattern(g: &QueryGraph, catalog: &Catalog) -> Result<()> {
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
