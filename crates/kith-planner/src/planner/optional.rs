//! OPTIONAL MATCH: an optional extend from a bound node, an optional
//! chain of extends, or a left outer hash join with the pattern planned as
//! the build side; each pads the tuples its pattern does not match.

use super::*;

/// The steps of an optional extend (see [`OptionalExtend`]): the extend
/// from the bound end, the new node's properties, then its predicates as
/// a padding filter.
pub(super) fn optional_steps(
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
pub(super) fn optional_chain_steps(
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
pub(super) fn optional_join_steps(
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
