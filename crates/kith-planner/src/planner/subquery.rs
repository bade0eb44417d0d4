//! Subqueries the executor need not run: one that only counts the rels of
//! its one key node in one rel table is answered from the CSR degrees
//! ([`DegreeCount`]).

use crate::bound::SubqueryKind;
use crate::expr::{BoundExpr, BoundExprKind};
use crate::plan::{DegreeCount, ExtendDirection, QueryPlan, Sink, Source, Step};

/// The [`DegreeCount`] of a subquery that only counts the
/// rels of its one key node in one rel table and nothing else: one part,
/// a scan of one end's whole table, one extend to the other end (no rel
/// id, property, filter or isomorphism check) and `count(*)` grouped by
/// the key, which is the scanned node (the extend only counts) or the
/// neighbour. Each key's count is then its degree in that CSR.
pub(super) fn degree_count(
    plan: &QueryPlan,
    kind: SubqueryKind,
    num_keys: usize,
) -> Option<DegreeCount> {
    if num_keys != 1
        || !matches!(kind, SubqueryKind::Exists | SubqueryKind::Count)
        || !plan.subqueries.is_empty()
    {
        return None;
    }
    let [part] = plan.parts.as_slice() else {
        return None;
    };
    let plain = part.recursive.is_none()
        && part.inputs.is_empty()
        && part.unwinds.is_empty()
        && part.optional.is_none()
        && !part.distinct
        && part.skip.is_none()
        && part.limit.is_none()
        && part.skip_expr.is_none()
        && part.limit_expr.is_none();
    let [pipeline] = part.pipelines.as_slice() else {
        return None;
    };
    let Source::ScanNodes {
        table,
        id_slot,
        properties,
    } = &pipeline.source
    else {
        return None;
    };
    let [Step::Extend {
        rel_table,
        direction,
        from,
        to,
        rel_id: None,
        properties: rel_properties,
        exclude,
        to_table,
        optional: false,
    }] = pipeline.steps.as_slice()
    else {
        return None;
    };
    // The key is the scanned node (its rels counted), or the extend's
    // neighbour when the plan scans the other end: then every rel of the
    // key in the other direction is reached once.
    let (key_table, key_node, key_direction) = match to {
        None => (*table, *id_slot, *direction),
        Some(to) => {
            let back = match direction {
                ExtendDirection::Fwd => ExtendDirection::Bwd,
                ExtendDirection::Bwd => ExtendDirection::Fwd,
            };
            (*to_table, *to, back)
        }
    };
    let Sink::Aggregate {
        keys,
        aggregates,
        dependent,
    } = &part.sink
    else {
        return None;
    };
    let [(key, key_slot)] = keys.as_slice() else {
        return None;
    };
    let [count] = aggregates.as_slice() else {
        return None;
    };
    let is_slot = |e: &BoundExpr, slot| matches!(e.kind, BoundExprKind::Slot(s) if s == slot);
    let key_is_node = is_slot(key, key_node)
        || matches!(&key.kind, BoundExprKind::Function(f, a) if f == "id" && a.len() == 1 && is_slot(&a[0], key_node));
    let outputs_ok = matches!(part.final_outputs.as_slice(), [k, c] if is_slot(k, *key_slot) && is_slot(c, count.slot));
    let counts_rels = count.function == "count" && !count.distinct && count.arg.is_none();
    (plain
        && properties.is_empty()
        && from == id_slot
        && rel_properties.is_empty()
        && exclude.is_empty()
        && dependent.is_empty()
        && key_is_node
        && outputs_ok
        && counts_rels)
        .then_some(DegreeCount {
            node_table: key_table,
            rel_table: *rel_table,
            direction: key_direction,
        })
}
