//! Planning of variable-length rels: a part is split at each one into the part
//! before it, a recursive join (the IFE operator) and the part after it.

use kith_catalog::PropertyId;

use super::*;
use crate::bound::{PropertyPredicate, RecursiveRel};

/// An OPTIONAL MATCH's row map and whether its part numbers the rows,
/// taken off a part split at a variable-length rel and put back on the
/// pieces.
type Padding = (Vec<Option<usize>>, bool);

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
    let Some(ri) = part.graph.rels.iter().position(|r| r.recursive.is_some()) else {
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
    let part = recursive
        .into_iter()
        .fold(part, |p, i| read_lengths(p, i, next_slot));
    let spec = part.graph.rels[ri]
        .recursive
        .clone()
        .ok_or_else(|| Error::internal("lost spec"))?;
    let walk = walk_tables(&part.graph, ri, &spec, catalog)?;
    let padding = optional.map(|map| (map, numbers_rows));
    let pieces = split_pieces(part, ri, &spec, padding, next_slot)?;
    let join = recursive_join(&spec, walk, pieces.columns)?;
    let mut out = split_recursive(pieces.before, catalog, next_slot)?;
    let mut rest = split_recursive(pieces.after, catalog, next_slot)?;
    if let Some(first) = rest.first_mut() {
        first.1 = Some(join);
    }
    if let (Some((map, numbers)), Some(first), Some(last)) =
        (pieces.padded, out.first_mut(), rest.last_mut())
    {
        first.0.numbers_rows = numbers;
        last.0.optional = Some(map);
    }
    out.append(&mut rest);
    Ok(out)
}

/// What a variable-length rel walks, and how.
struct Walk<'c> {
    /// The first rel table (None: the rel has none).
    entry: Option<&'c TableEntry>,
    /// The rel tables, each once (`[:E|E*]` walks E once).
    rel_tables: Vec<TableId>,
    /// The node tables the rel tables connect (one node space), the left
    /// end's first.
    node_tables: Vec<TableId>,
    /// The tables of the right end.
    dst_tables: Vec<TableId>,
    direction: ExtendDirection,
    /// Undirected: every rel table is walked both ways.
    undirected: bool,
    /// A rel type or end label no table has: the pattern matches nothing
    /// (as fixed-length patterns do), computed as an empty interval.
    nothing: bool,
}

/// The tables variable-length rel `ri` walks, checked against the pattern.
fn walk_tables<'c>(
    g: &QueryGraph,
    ri: usize,
    spec: &RecursiveRel,
    catalog: &'c Catalog,
) -> Result<Walk<'c>> {
    let r = &g.rels[ri];
    let mut node_tables: Vec<TableId> = Vec::new();
    let add_node = |t: TableId, v: &mut Vec<TableId>| {
        if !v.contains(&t) {
            v.push(t);
        }
    };
    for t in &g.nodes[r.left].tables {
        add_node(*t, &mut node_tables);
    }
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
    let walk = Walk {
        entry: entries.first().copied(),
        rel_tables,
        node_tables,
        dst_tables: g.nodes[r.right].tables.clone(),
        direction: if r.direction == Direction::Left {
            ExtendDirection::Bwd
        } else {
            ExtendDirection::Fwd
        },
        undirected: r.direction == Direction::Both,
        nothing: r.tables.is_empty()
            || g.nodes[r.left].tables.is_empty()
            || g.nodes[r.right].tables.is_empty(),
    };
    check_single_tables(g, r, &walk, catalog)?;
    if spec.weight.is_some() && entries.len() > 1 {
        return Err(Error::not_supported(
            "weighted shortest paths over several rel tables",
        ));
    }
    Ok(walk)
}

/// With one table for each end and the rel, directed: the pattern must fit
/// the rel table's ends (a clear error otherwise).
fn check_single_tables(
    g: &QueryGraph,
    r: &QueryRel,
    walk: &Walk<'_>,
    catalog: &Catalog,
) -> Result<()> {
    let ([l], [rt], [_], false, Some(entry)) = (
        g.nodes[r.left].tables.as_slice(),
        g.nodes[r.right].tables.as_slice(),
        walk.rel_tables.as_slice(),
        walk.undirected,
        walk.entry,
    ) else {
        return Ok(());
    };
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
    Ok(())
}

/// A part's pattern divided around variable-length rel `ri`.
struct Halves {
    /// Whether the rel's right end, with what hangs off it (not through
    /// the rel), is matched after the join, from the destination;
    /// otherwise everything is matched before the join, and the walk must
    /// end at the right end.
    separate: bool,
    /// The part before the join (inputs, unwinds and its graph so far).
    a_part: BoundPart,
    graph_b: QueryGraph,
    a_preds: Vec<BoundExpr>,
    b_preds: Vec<BoundExpr>,
    /// The slots the part before the join binds.
    a_available: HashSet<SlotId>,
}

/// Divides `part`'s pattern and predicates around variable-length rel `ri`.
fn split_halves(part: &BoundPart, ri: usize) -> Halves {
    let g = &part.graph;
    let r = &g.rels[ri];
    let right_comp = right_component(g, ri);
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
    let a_part = BoundPart {
        inputs: part.inputs.clone(),
        unwinds: part.unwinds.clone(),
        graph: subgraph(g, &in_a, ri),
        ..BoundPart::default()
    };
    let a_available: HashSet<SlotId> = split_slot_types(&a_part).into_keys().collect();
    let (a_preds, b_preds): (Vec<BoundExpr>, Vec<BoundExpr>) = part
        .predicates
        .iter()
        .cloned()
        .partition(|e| expr_slots(e).iter().all(|s| a_available.contains(s)));
    Halves {
        separate,
        a_part,
        graph_b: subgraph(g, &in_b, ri),
        a_preds,
        b_preds,
        a_available,
    }
}

/// The nodes of the component of rel `ri`'s right end without that rel.
fn right_component(g: &QueryGraph, ri: usize) -> Vec<bool> {
    let mut right_comp = vec![false; g.nodes.len()];
    right_comp[g.rels[ri].right] = true;
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
            return right_comp;
        }
    }
}

/// What the split decides about the join's columns.
struct JoinColumns {
    src_column: usize,
    with_path: bool,
    with_rels: bool,
    element_properties: bool,
    dst_predicate: Option<PropertyPredicate>,
    left_outer: bool,
    dst_unread: bool,
}

/// A part split around the join of a variable-length rel.
struct Pieces {
    before: BoundPart,
    after: BoundPart,
    /// The OPTIONAL MATCH's padding for the pieces (None: there is none,
    /// or the join itself is left outer).
    padded: Option<Padding>,
    columns: JoinColumns,
}

/// Splits `part` around variable-length rel `ri` (`spec`).
fn split_pieces(
    mut part: BoundPart,
    ri: usize,
    spec: &RecursiveRel,
    padding: Option<Padding>,
    next_slot: &mut u32,
) -> Result<Pieces> {
    let types = split_slot_types(&part);
    let mut halves = split_halves(&part, ri);
    let (left_outer, padded) = optional_shape(&mut part, &mut halves, ri, spec, padding)?;
    let g = &part.graph;
    let right = &g.nodes[g.rels[ri].right];
    let src_slot = g.nodes[g.rels[ri].left].id_slot;
    let dst_slot = destination_slot(right, halves.separate, &mut halves.b_preds, next_slot);
    let carried = carried_columns(&part, &halves, src_slot, &types)?;
    let src_column = carried
        .iter()
        .position(|c| c.0 == src_slot)
        .ok_or_else(|| Error::internal("source slot not carried"))?;
    let reads = join_reads(&part, spec);
    // Nothing after the join reads the destination: no rel from it, no
    // property, not its id (nor a path, which would hold it).
    let dst_unread = halves.separate
        && halves.graph_b.rels.is_empty()
        && right.properties.is_empty()
        && !reads.slots.contains(&dst_slot)
        && reads.with_path.is_none()
        && reads.with_rels.is_none();
    let dst_predicate = if halves.separate && !left_outer {
        node_predicate(&halves.b_preds, right)
    } else {
        None
    };
    let before = before_join(halves.a_part, halves.a_preds, &carried);
    let columns = JoinColumns {
        src_column,
        with_path: reads.with_path.is_some(),
        with_rels: reads.with_rels.is_some(),
        element_properties: reads.element_properties,
        dst_predicate,
        left_outer,
        dst_unread,
    };
    let mut graph_b = halves.graph_b;
    if let Some(i) = graph_b.nodes.iter().position(|n| n.id_slot == dst_slot) {
        graph_b.nodes[i].imported = true;
    }
    let after = BoundPart {
        inputs: after_inputs(carried, dst_slot, spec, &reads),
        unwinds: Vec::new(),
        graph: graph_b,
        predicates: halves.b_preds,
        ..part
    };
    Ok(Pieces {
        before,
        after,
        padded,
        columns,
    })
}

/// The part before the join: `a_part` with its predicates, outputting the
/// `carried` columns.
fn before_join(
    a_part: BoundPart,
    predicates: Vec<BoundExpr>,
    carried: &[(SlotId, LogicalType)],
) -> BoundPart {
    let span = kith_common::Span::new(0, 0);
    BoundPart {
        predicates,
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
    }
}

/// Where an OPTIONAL MATCH split at the rel pads its rows; returns whether
/// the join is left outer, and the padding left for the pieces.
///
/// OPTIONAL MATCH from a bound node to a new one, with nothing else and no
/// WHERE: the join itself is left outer (an input row without a path gets
/// one row with a NULL destination and path), the parts around it pass
/// rows through unchanged, and the row number the optional part would pad
/// by is dropped. Any other OPTIONAL MATCH joins as MATCH does, carrying
/// the row number through the pieces: the first numbers the rows, the last
/// pads those without a match. An OPTIONAL MATCH bound into the part after
/// it (`spec.left_outer`) has the same shape, checked by the binder; the
/// WHERE of a WITH there filters the padded rows after the join, as it
/// should.
fn optional_shape(
    part: &mut BoundPart,
    halves: &mut Halves,
    ri: usize,
    spec: &RecursiveRel,
    padding: Option<Padding>,
) -> Result<(bool, Option<Padding>)> {
    let right = &part.graph.nodes[part.graph.rels[ri].right];
    let b_is_dst = halves.separate
        && halves.graph_b.rels.is_empty()
        && halves.graph_b.nodes.len() == 1
        && !right.imported;
    if spec.left_outer && (!b_is_dst || padding.is_some()) {
        return Err(Error::internal(
            "a left outer variable-length rel with more after it",
        ));
    }
    let a_part = &mut halves.a_part;
    let separate_part = padding.is_some() && {
        let a_passes = a_part.graph.rels.is_empty()
            && a_part.graph.nodes.iter().all(|n| n.imported)
            && halves.a_preds.is_empty()
            && part.unwinds.is_empty();
        a_passes && b_is_dst && halves.b_preds.is_empty()
    };
    if !separate_part {
        return Ok((spec.left_outer, padding));
    }
    let row_slot = part
        .inputs
        .pop()
        .ok_or_else(|| Error::internal("optional part without a row number"))?
        .0;
    a_part.inputs.pop();
    part.order_by
        .retain(|k| !expr_slots(&k.expr).contains(&row_slot));
    Ok((true, None))
}

/// The slot the join writes its destinations to: the right end's id when
/// the rest is matched from it; otherwise a fresh slot that must equal the
/// right end's id (matched before the join), tested first in `b_preds`.
fn destination_slot(
    right: &QueryNode,
    separate: bool,
    b_preds: &mut Vec<BoundExpr>,
    next_slot: &mut u32,
) -> SlotId {
    if separate {
        return right.id_slot;
    }
    let tmp = SlotId(*next_slot);
    *next_slot += 1;
    let span = kith_common::Span::new(0, 0);
    // First: a predicate over a path through this rel may only see rows
    // whose walk ends where the pattern closes (a `_path()` of a walk that
    // ends elsewhere is no path).
    b_preds.insert(
        0,
        BoundExpr {
            kind: crate::expr::BoundExprKind::Binary(
                crate::expr::BinaryOp::Eq,
                Box::new(BoundExpr::slot(tmp, LogicalType::InternalId, span)),
                Box::new(BoundExpr::slot(
                    right.id_slot,
                    LogicalType::InternalId,
                    span,
                )),
            ),
            ty: LogicalType::Bool,
            span,
        },
    );
    tmp
}

/// The slots read after the join that the part before it binds (the
/// source among them), with their types, in slot order.
fn carried_columns(
    part: &BoundPart,
    halves: &Halves,
    src_slot: SlotId,
    types: &HashMap<SlotId, LogicalType>,
) -> Result<Vec<(SlotId, LogicalType)>> {
    let mut needed: HashSet<SlotId> = HashSet::new();
    needed.insert(src_slot);
    halves
        .b_preds
        .iter()
        .for_each(|e| needed.extend(expr_slots(e)));
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
        .filter(|s| halves.a_available.contains(s))
        .collect();
    carried.sort();
    carried
        .into_iter()
        .map(|s| {
            let ty = types
                .get(&s)
                .cloned()
                .ok_or_else(|| Error::internal(format!("slot {s:?} has no type")))?;
            Ok((s, ty))
        })
        .collect()
}

/// What a part reads of a variable-length rel's columns.
struct JoinReads {
    /// Every slot the part reads.
    slots: HashSet<SlotId>,
    /// The path and the rel list, where read (built, the paths
    /// enumerated, only then).
    with_path: Option<SlotId>,
    with_rels: Option<SlotId>,
    /// Whether the path or list is read whole (not only measured).
    element_properties: bool,
}

fn join_reads(part: &BoundPart, spec: &RecursiveRel) -> JoinReads {
    let mut slots: HashSet<SlotId> = HashSet::new();
    for_each_expr(part, &mut |e| slots.extend(expr_slots(e)));
    let with_path = spec.path_slot.filter(|s| slots.contains(s));
    let with_rels = spec.rels_slot.filter(|s| slots.contains(s));
    let mut whole: Vec<SlotId> = Vec::new();
    for_each_expr(part, &mut |e| slots_read_whole(e, &mut whole));
    let element_properties = [with_path, with_rels]
        .into_iter()
        .flatten()
        .any(|s| whole.contains(&s));
    JoinReads {
        slots,
        with_path,
        with_rels,
        element_properties,
    }
}

/// The inputs of the part after the join: the carried columns, then the
/// join's destination, length, path and rel list.
fn after_inputs(
    carried: Vec<(SlotId, LogicalType)>,
    dst_slot: SlotId,
    spec: &RecursiveRel,
    reads: &JoinReads,
) -> Vec<(SlotId, LogicalType)> {
    let mut inputs = carried;
    inputs.push((dst_slot, LogicalType::InternalId));
    if let Some(l) = spec.len_slot {
        inputs.push((l, spec.len_type()));
    }
    if let Some(p) = reads.with_path {
        inputs.push((p, RecursiveRel::PATH_TYPE));
    }
    if let Some(r) = reads.with_rels {
        inputs.push((r, RecursiveRel::rels_type()));
    }
    inputs
}

/// The join that walks `walk` as `spec` says, with the columns the split
/// decided.
fn recursive_join(
    spec: &RecursiveRel,
    walk: Walk<'_>,
    columns: JoinColumns,
) -> Result<RecursiveJoin> {
    let weight = weight_property(spec, walk.entry)?;
    let rel_tables = if walk.undirected {
        walk.rel_tables
            .iter()
            .flat_map(|t| [(*t, ExtendDirection::Fwd), (*t, ExtendDirection::Bwd)])
            .collect()
    } else {
        walk.rel_tables
            .iter()
            .map(|t| (*t, walk.direction))
            .collect()
    };
    Ok(RecursiveJoin {
        mode: spec.mode,
        rel_table: walk.entry.map_or(NO_TABLE, |e| e.id),
        node_table: walk.node_tables.first().copied().unwrap_or(NO_TABLE),
        direction: walk.direction,
        rel_tables,
        dst_tables: walk.dst_tables,
        node_tables: walk.node_tables,
        lower: if walk.nothing { 1 } else { spec.lower },
        upper: if walk.nothing { Some(0) } else { spec.upper },
        src_column: columns.src_column,
        with_len: spec.len_slot.is_some(),
        weight,
        with_path: columns.with_path,
        with_rels: columns.with_rels,
        element_properties: columns.element_properties,
        undirected: walk.undirected,
        rel_conditions: spec.rel_conditions.clone(),
        rel_predicate: spec.rel_predicate.clone(),
        node_predicate: spec.node_predicate.clone(),
        dst_predicate: columns.dst_predicate,
        left_outer: columns.left_outer,
        dst_unread: columns.dst_unread,
        policy: None,
    })
}

/// The weight property of a weighted shortest path over rel table `entry`.
fn weight_property(
    spec: &RecursiveRel,
    entry: Option<&TableEntry>,
) -> Result<Option<(PropertyId, LogicalType)>> {
    let (Some(w), Some(entry)) = (&spec.weight, entry) else {
        return Ok(None);
    };
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
    Ok(Some((p.id, p.ty.clone())))
}

/// The slots a part binds, with the path and rel-list slots of its
/// variable-length rels: a later rel's path is bound by its own join in
/// an earlier piece and must be carried past this one (issue 51: a second
/// var-length rel's list read after the part was lost).
fn split_slot_types(part: &BoundPart) -> HashMap<SlotId, LogicalType> {
    let mut types = slot_types(part);
    for spec in part.graph.rels.iter().filter_map(|r| r.recursive.as_ref()) {
        if let Some(p) = spec.path_slot {
            types.insert(p, RecursiveRel::PATH_TYPE);
        }
        if let Some(r) = spec.rels_slot {
            types.insert(r, RecursiveRel::rels_type());
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
) -> Option<PropertyPredicate> {
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
    Some(PropertyPredicate { expr, properties })
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
