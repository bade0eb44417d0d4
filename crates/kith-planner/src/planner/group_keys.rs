//! Group keys a node's id already determines (its properties when its
//! primary key is a key, or the node's value): grouped on the id and read
//! once per group instead of hashed per tuple.

use super::*;

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
pub(super) fn dependent_keys(
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

/// [`dependent_keys`] for the keys that are node `n`'s value (built from
/// its id, constants and its properties): they leave the keys, its id
/// joins them if not there, and they go to `entity_keys`. Returns the
/// properties those values read, or None when no key is such a value.
pub(super) fn node_value_keys(
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
