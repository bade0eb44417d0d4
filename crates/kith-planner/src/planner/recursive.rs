//! Planning of variable-length rels: a part is split at each one into the part
//! before it, a recursive join (the IFE operator) and the part after it.

use super::*;

/// Splits a part at its first variable-length rel: part A matches everything
/// not only reachable through that rel and outputs the slots read later
/// (the source node id among them); the recursive join adds the destination,
/// length and count columns; part B matches the rest from the destination.
/// Both halves are split further while they hold variable-length rels.
pub(super) fn split_recursive(
    part: BoundPart,
    catalog: &Catalog,
    next_slot: &mut u32,
) -> Result<Vec<(BoundPart, Option<RecursiveJoin>)>> {
    let g = &part.graph;
    let Some(ri) = g.rels.iter().position(|r| r.recursive.is_some()) else {
        return Ok(vec![(part, None)]);
    };
    // OPTIONAL MATCH: taken off here and put back below on the pieces.
    let mut part = part;
    let optional = part.optional.take();
    let numbers_rows = std::mem::take(&mut part.numbers_rows);
    // `length(r)` of every variable-length rel reads its join's length
    // column, not only this one's: a predicate over a later rel's length
    // goes to a later piece, which has the column but not the rels'
    // list (`predicate could not be placed`, issue 51).
    let recursive: Vec<usize> = (0..part.graph.rels.len())
        .filter(|&i| part.graph.rels[i].recursive.is_some())
        .collect();
    let mut part = recursive
        .into_iter()
        .fold(part, |p, i| read_lengths(p, i, next_slot));
    let g = &part.graph;
    let r = &g.rels[ri];
    let spec = r
        .recursive
        .clone()
        .ok_or_else(|| Error::internal("lost spec"))?;
    // A rel type or end label no table has: the pattern matches nothing
    // (as fixed-length patterns do), computed as an empty interval.
    let nothing = r.tables.is_empty()
        || g.nodes[r.left].tables.is_empty()
        || g.nodes[r.right].tables.is_empty();
    let direction = if r.direction == Direction::Left {
        ExtendDirection::Bwd
    } else {
        ExtendDirection::Fwd
    };
    // Undirected: every rel table is walked both ways.
    let undirected = r.direction == Direction::Both;
    // The rel tables and the node tables they connect: one node space.
    let mut node_tables: Vec<TableId> = Vec::new();
    let add_node = |t: TableId, v: &mut Vec<TableId>| {
        if !v.contains(&t) {
            v.push(t);
        }
    };
    for t in &g.nodes[r.left].tables {
        add_node(*t, &mut node_tables);
    }
    // A table named twice (`[:E|E*]`) is walked once.
    let mut rel_tables: Vec<TableId> = Vec::with_capacity(r.tables.len());
    for t in &r.tables {
        if !rel_tables.contains(t) {
            rel_tables.push(*t);
        }
    }
    let mut entries = Vec::with_capacity(rel_tables.len());
    for t in &rel_tables {
        let entry = catalog
            .table(*t)
            .ok_or_else(|| Error::internal("rel table vanished"))?;
        let info = entry
            .rel_info()
            .ok_or_else(|| Error::internal("rel table without endpoints"))?;
        add_node(info.src, &mut node_tables);
        add_node(info.dst, &mut node_tables);
        entries.push(entry);
    }
    let entry = entries.first().copied();
    let rel_table = entry.map_or(NO_TABLE, |e| e.id);
    if let ([l], [rt], [_], false, Some(entry)) = (
        g.nodes[r.left].tables.as_slice(),
        g.nodes[r.right].tables.as_slice(),
        rel_tables.as_slice(),
        undirected,
        entry,
    ) {
        // One table each: the pattern must fit it (a clear error otherwise).
        let info = entry
            .rel_info()
            .ok_or_else(|| Error::internal("rel table without endpoints"))?;
        // `(a)<-[:R*]-(b)` walks R from b to a.
        let (from, to) = match r.direction {
            Direction::Left => (*rt, *l),
            _ => (*l, *rt),
        };
        if info.src != info.dst && (from != info.src || to != info.dst) {
            let name = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
            return Err(Error::semantic(format!(
                "rel table '{}' connects {} to {}, but the pattern uses it between {} and {}",
                entry.name,
                name(info.src),
                name(info.dst),
                name(from),
                name(to)
            )));
        }
    }
    if spec.weight.is_some() && entries.len() > 1 {
        return Err(Error::not_supported(
            "weighted shortest paths over several rel tables",
        ));
    }
    // The component of the right end without this rel.
    let mut right_comp = vec![false; g.nodes.len()];
    right_comp[r.right] = true;
    loop {
        let mut changed = false;
        for (i, o) in g.rels.iter().enumerate() {
            if i != ri && right_comp[o.left] != right_comp[o.right] {
                right_comp[o.left] = true;
                right_comp[o.right] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let separate = !right_comp[r.left]
        && !g
            .nodes
            .iter()
            .enumerate()
            .any(|(i, n)| right_comp[i] && n.imported);
    let in_a: Vec<bool> = (0..g.nodes.len())
        .map(|i| !separate || !right_comp[i])
        .collect();
    let in_b: Vec<bool> = (0..g.nodes.len())
        .map(|i| separate && right_comp[i])
        .collect();
    let graph_a = subgraph(g, &in_a, ri);
    let mut graph_b = subgraph(g, &in_b, ri);
    let types = split_slot_types(&part);
    let mut a_part = BoundPart {
        inputs: part.inputs.clone(),
        unwinds: part.unwinds.clone(),
        graph: graph_a,
        ..BoundPart::default()
    };
    let a_available: HashSet<SlotId> = split_slot_types(&a_part).into_keys().collect();
    let (a_preds, mut b_preds): (Vec<BoundExpr>, Vec<BoundExpr>) = part
        .predicates
        .iter()
        .cloned()
        .partition(|e| expr_slots(e).iter().all(|s| a_available.contains(s)));
    // OPTIONAL MATCH from a bound node to a new one, with nothing else
    // and no WHERE: the join itself is left outer (an input row without a
    // path gets one row with a NULL destination and path), the parts
    // around it pass rows through unchanged, and the row number the
    // optional part would pad by is dropped. Any other OPTIONAL MATCH
    // joins as MATCH does, carrying the row number through the pieces:
    // the first numbers the rows, the last pads those without a match.
    // An OPTIONAL MATCH bound into the part after it (`spec.left_outer`)
    // has the same shape, checked by the binder; the WHERE of a WITH there
    // filters the padded rows after the join, as it should.
    let b_is_dst = separate
        && graph_b.rels.is_empty()
        && graph_b.nodes.len() == 1
        && !g.nodes[r.right].imported;
    if spec.left_outer && (!b_is_dst || optional.is_some()) {
        return Err(Error::internal(
            "a left outer variable-length rel with more after it",
        ));
    }
    let separate_part = optional.is_some() && {
        let a_passes = a_part.graph.rels.is_empty()
            && a_part.graph.nodes.iter().all(|n| n.imported)
            && a_preds.is_empty()
            && part.unwinds.is_empty();
        a_passes && b_is_dst && b_preds.is_empty()
    };
    let left_outer = spec.left_outer || separate_part;
    let padded = if separate_part {
        let row_slot = part
            .inputs
            .pop()
            .ok_or_else(|| Error::internal("optional part without a row number"))?
            .0;
        a_part.inputs.pop();
        part.order_by
            .retain(|k| !expr_slots(&k.expr).contains(&row_slot));
        None
    } else {
        optional.map(|map| (map, numbers_rows))
    };
    let src_slot = g.nodes[r.left].id_slot;
    let dst_slot = if separate {
        g.nodes[r.right].id_slot
    } else {
        let tmp = SlotId(*next_slot);
        *next_slot += 1;
        let span = kith_common::Span::new(0, 0);
        // First: a predicate over a path through this rel may only see
        // rows whose walk ends where the pattern closes (a `_path()` of
        // a walk that ends elsewhere is no path).
        b_preds.insert(
            0,
            BoundExpr {
                kind: crate::expr::BoundExprKind::Binary(
                    crate::expr::BinaryOp::Eq,
                    Box::new(BoundExpr::slot(tmp, LogicalType::InternalId, span)),
                    Box::new(BoundExpr::slot(
                        g.nodes[r.right].id_slot,
                        LogicalType::InternalId,
                        span,
                    )),
                ),
                ty: LogicalType::Bool,
                span,
            },
        );
        tmp
    };
    // Slots read after the join.
    let mut needed: HashSet<SlotId> = HashSet::new();
    needed.insert(src_slot);
    b_preds.iter().for_each(|e| needed.extend(expr_slots(e)));
    part.group_keys
        .iter()
        .for_each(|(e, _)| needed.extend(expr_slots(e)));
    part.aggregates
        .iter()
        .filter_map(|a| a.arg.as_ref())
        .for_each(|e| needed.extend(expr_slots(e)));
    part.outputs
        .iter()
        .for_each(|(_, e)| needed.extend(expr_slots(e)));
    part.order_by
        .iter()
        .for_each(|k| needed.extend(expr_slots(&k.expr)));
    let mut carried: Vec<SlotId> = needed
        .into_iter()
        .filter(|s| a_available.contains(s))
        .collect();
    carried.sort();
    let carried: Vec<(SlotId, LogicalType)> = carried
        .into_iter()
        .map(|s| {
            let ty = types
                .get(&s)
                .cloned()
                .ok_or_else(|| Error::internal(format!("slot {s:?} has no type")))?;
            Ok((s, ty))
        })
        .collect::<Result<_>>()?;
    let src_column = carried
        .iter()
        .position(|c| c.0 == src_slot)
        .ok_or_else(|| Error::internal("source slot not carried"))?;
    let span = kith_common::Span::new(0, 0);
    let a_part = BoundPart {
        predicates: a_preds,
        outputs: carried
            .iter()
            .map(|(s, ty)| {
                (
                    format!("_slot{}", s.0),
                    BoundExpr::slot(*s, ty.clone(), span),
                )
            })
            .collect(),
        output_slots: carried.iter().map(|c| c.0).collect(),
        ..a_part
    };
    // The path and rel list are built (the paths enumerated) only when
    // read after the join.
    let mut reads: HashSet<SlotId> = HashSet::new();
    for_each_expr(&part, &mut |e| reads.extend(expr_slots(e)));
    let with_path = spec.path_slot.filter(|s| reads.contains(s));
    let with_rels = spec.rels_slot.filter(|s| reads.contains(s));
    let mut whole: Vec<SlotId> = Vec::new();
    for_each_expr(&part, &mut |e| slots_read_whole(e, &mut whole));
    let element_properties = [with_path, with_rels]
        .into_iter()
        .flatten()
        .any(|s| whole.contains(&s));
    // Nothing after the join reads the destination: no rel from it, no
    // property, not its id (nor a path, which would hold it).
    let dst_unread = separate
        && graph_b.rels.is_empty()
        && g.nodes[r.right].properties.is_empty()
        && !reads.contains(&dst_slot)
        && with_path.is_none()
        && with_rels.is_none();
    let mut b_inputs = carried.clone();
    b_inputs.push((dst_slot, LogicalType::InternalId));
    if let Some(l) = spec.len_slot {
        b_inputs.push((l, spec.len_type()));
    }
    if let Some(p) = with_path {
        b_inputs.push((p, crate::bound::RecursiveRel::PATH_TYPE));
    }
    if let Some(r) = with_rels {
        b_inputs.push((r, crate::bound::RecursiveRel::rels_type()));
    }
    if let Some(i) = graph_b.nodes.iter().position(|n| n.id_slot == dst_slot) {
        graph_b.nodes[i].imported = true;
    }
    let dst_predicate = if separate && !left_outer {
        node_predicate(&b_preds, &g.nodes[r.right])
    } else {
        None
    };
    let b_part = BoundPart {
        inputs: b_inputs,
        unwinds: Vec::new(),
        graph: graph_b,
        predicates: b_preds,
        ..part
    };
    let weight = match (&spec.weight, entry) {
        (None, _) | (Some(_), None) => None,
        (Some(w), Some(entry)) => {
            let p = entry.property(w).ok_or_else(|| {
                Error::semantic(format!(
                    "property '{w}' does not exist in rel table '{}'",
                    entry.name
                ))
            })?;
            if !p.ty.is_numeric() {
                return Err(Error::semantic(format!(
                    "the weight '{w}' of a weighted shortest path must be numeric, not {}",
                    p.ty
                )));
            }
            Some((p.id, p.ty.clone()))
        }
    };
    let join = RecursiveJoin {
        mode: spec.mode,
        rel_table,
        node_table: node_tables.first().copied().unwrap_or(NO_TABLE),
        direction,
        rel_tables: if undirected {
            rel_tables
                .iter()
                .flat_map(|t| [(*t, ExtendDirection::Fwd), (*t, ExtendDirection::Bwd)])
                .collect()
        } else {
            rel_tables.iter().map(|t| (*t, direction)).collect()
        },
        dst_tables: g.nodes[r.right].tables.clone(),
        node_tables,
        lower: if nothing { 1 } else { spec.lower },
        upper: if nothing { Some(0) } else { spec.upper },
        src_column,
        with_len: spec.len_slot.is_some(),
        weight,
        with_path: with_path.is_some(),
        with_rels: with_rels.is_some(),
        element_properties,
        undirected,
        rel_conditions: spec.rel_conditions.clone(),
        rel_predicate: spec.rel_predicate.clone(),
        node_predicate: spec.node_predicate.clone(),
        dst_predicate,
        left_outer,
        dst_unread,
        policy: None,
    };
    let mut out = split_recursive(a_part, catalog, next_slot)?;
    let mut rest = split_recursive(b_part, catalog, next_slot)?;
    if let Some(first) = rest.first_mut() {
        first.1 = Some(join);
    }
    if let (Some((map, numbers)), Some(first), Some(last)) =
        (padded, out.first_mut(), rest.last_mut())
    {
        first.0.numbers_rows = numbers;
        last.0.optional = Some(map);
    }
    out.append(&mut rest);
    Ok(out)
}

/// The slots a part binds, with the path and rel-list slots of its
/// variable-length rels: a later rel's path is bound by its own join in
/// an earlier piece and must be carried past this one (issue 51: a second
/// var-length rel's list read after the part was lost).
fn split_slot_types(part: &BoundPart) -> HashMap<SlotId, LogicalType> {
    let mut types = slot_types(part);
    for spec in part.graph.rels.iter().filter_map(|r| r.recursive.as_ref()) {
        if let Some(p) = spec.path_slot {
            types.insert(p, crate::bound::RecursiveRel::PATH_TYPE);
        }
        if let Some(r) = spec.rels_slot {
            types.insert(r, crate::bound::RecursiveRel::rels_type());
        }
    }
    types
}

/// Gives the variable-length rel `ri` a length slot when its path or rels
/// are bound, and reads `length(p)`, `size(r)` and `length(r)`
/// from it, so that a query needing only lengths counts its paths instead
/// of enumerating them.
fn read_lengths(mut part: BoundPart, ri: usize, next_slot: &mut u32) -> BoundPart {
    let Some(spec) = part.graph.rels[ri].recursive.as_mut() else {
        return part;
    };
    // A weighted search's length column holds the cost: `length(p)` is
    // read from the path.
    if spec.mode.weighted() {
        return part;
    }
    let targets: Vec<SlotId> = spec
        .path_slot
        .iter()
        .chain(&spec.rels_slot)
        .copied()
        .collect();
    if targets.is_empty() {
        return part;
    }
    let len = match spec.len_slot {
        Some(l) => l,
        None => {
            let l = SlotId(*next_slot);
            *next_slot += 1;
            spec.len_slot = Some(l);
            l
        }
    };
    let f = &mut |e: &BoundExpr| rewrite_length(e, &targets, len);
    for e in part.predicates.iter_mut() {
        *e = f(e);
    }
    for (e, _) in part.group_keys.iter_mut() {
        *e = f(e);
    }
    for a in part.aggregates.iter_mut() {
        if let Some(e) = &mut a.arg {
            *e = f(e);
        }
    }
    for (_, e) in part.outputs.iter_mut() {
        *e = f(e);
    }
    for k in part.order_by.iter_mut() {
        k.expr = f(&k.expr);
    }
    part
}

/// `e` with `length(x)` / `size(x)` of a slot in `targets` replaced by the
/// slot `len`.
fn rewrite_length(e: &BoundExpr, targets: &[SlotId], len: SlotId) -> BoundExpr {
    use crate::expr::BoundExprKind as K;
    let rec = |x: &BoundExpr| rewrite_length(x, targets, len);
    let bx = |x: &BoundExpr| Box::new(rewrite_length(x, targets, len));
    let kind = match &e.kind {
        K::Function(name, args) if matches!(name.as_str(), "length" | "size") => {
            if let [BoundExpr {
                kind: K::Slot(s), ..
            }] = args.as_slice()
            {
                if targets.contains(s) {
                    return BoundExpr::slot(len, LogicalType::Int64, e.span);
                }
            }
            K::Function(name.clone(), args.iter().map(rec).collect())
        }
        K::Function(name, args) => K::Function(name.clone(), args.iter().map(rec).collect()),
        K::List(items) => K::List(items.iter().map(rec).collect()),
        K::Unary(op, x) => K::Unary(*op, bx(x)),
        K::Cast(x) => K::Cast(bx(x)),
        K::Binary(op, a, b) => K::Binary(*op, bx(a), bx(b)),
        K::Case {
            operand,
            whens,
            else_,
        } => K::Case {
            operand: operand.as_deref().map(bx),
            whens: whens.iter().map(|(w, t)| (rec(w), rec(t))).collect(),
            else_: else_.as_deref().map(bx),
        },
        _ => return e.map_children(&mut |c| rewrite_length(c, targets, len)),
    };
    BoundExpr {
        kind,
        ty: e.ty.clone(),
        span: e.span,
    }
}

/// The slots `e` reads as whole values: all it reads but the paths and
/// lists it only measures (`size(x)`, `length(x)`, `size(nodes(x))`,
/// `size(rels(x))`, also through a slice with integer-literal bounds, as
/// `nodes(e)` of a recursive rel is bound), whose elements' properties no
/// one sees.
fn slots_read_whole(e: &BoundExpr, out: &mut Vec<SlotId>) {
    use crate::expr::BoundExprKind as K;
    let is_slot = |x: &BoundExpr| matches!(x.kind, K::Slot(_));
    fn sliced_slot(e: &BoundExpr) -> bool {
        match e.as_literal_slice() {
            Some((x, _)) => sliced_slot(x),
            None => matches!(e.kind, K::Slot(_)),
        }
    }
    match &e.kind {
        _ if e.path_count().is_some_and(|(p, _)| is_slot(p)) => {}
        K::Function(name, args)
            if matches!(name.as_str(), "size" | "length")
                && matches!(args.as_slice(), [x] if sliced_slot(x)) => {}
        K::Slot(s) => out.push(*s),
        _ => e.for_each_operand(&mut |c| slots_read_whole(c, out)),
    }
}

/// Calls `f` on every expression of `part` (predicates, keys, aggregate
/// arguments, outputs, sort keys).
fn for_each_expr(part: &BoundPart, f: &mut dyn FnMut(&BoundExpr)) {
    part.predicates.iter().for_each(&mut *f);
    part.group_keys.iter().for_each(|(e, _)| f(e));
    part.aggregates
        .iter()
        .filter_map(|a| a.arg.as_ref())
        .for_each(&mut *f);
    part.outputs.iter().for_each(|(_, e)| f(e));
    part.order_by.iter().for_each(|k| f(&k.expr));
}

/// The conjuncts of `preds` that read only properties of `dst` (no ids, no
/// other variables, no subqueries, nothing random), as one predicate a
/// node mask can be built from (a recursive join's destinations, a
/// semijoin mask).
pub(super) fn node_predicate(
    preds: &[BoundExpr],
    dst: &crate::bound::QueryNode,
) -> Option<crate::bound::PropertyPredicate> {
    let is_prop = |s: &SlotId| dst.properties.iter().any(|p| p.1 == *s);
    let mut conjuncts: Vec<&BoundExpr> = Vec::new();
    for e in preds {
        let slots = expr_slots(e);
        if !slots.is_empty()
            && slots.iter().all(is_prop)
            && !has_subquery_or_call(e)
            && !e.calls("rand")
        {
            conjuncts.push(e);
        }
    }
    let expr = BoundExpr::and_all(conjuncts.into_iter().cloned())?;
    let read = expr_slots(&expr);
    let properties = dst
        .properties
        .iter()
        .filter(|p| read.contains(&p.1))
        .cloned()
        .collect();
    Some(crate::bound::PropertyPredicate { expr, properties })
}

/// Whether `e` contains a subquery probe or a procedure call (neither can
/// be evaluated over a table's rows outside the query).
fn has_subquery_or_call(e: &BoundExpr) -> bool {
    if matches!(
        e.kind,
        crate::expr::BoundExprKind::Subquery { .. } | crate::expr::BoundExprKind::Procedure { .. }
    ) {
        return true;
    }
    let mut found = false;
    e.for_each_child(&mut |c| found = found || has_subquery_or_call(c));
    found
}
