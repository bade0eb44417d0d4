//! What a search may use, as bitmasks and weights by dense id: rels that
//! pass the join's property conditions and rel predicate, destinations
//! that pass its node predicate, and rel weights.

use super::*;

/// The rels of `table` that satisfy the join's property conditions
/// (`[:R* {k: v}]`) and its rel predicate (`(r, _ | WHERE ...)`) as a
/// rel-id bitmask; `None` without either. A rel whose property is NULL,
/// or a table without the property, fails a condition.
pub(super) fn rel_mask(
    join: &RecursiveJoin,
    table: TableId,
    rel: &RelTableData,
    ctx: &QueryContext,
) -> Result<Option<Arc<[u64]>>> {
    if join.rel_conditions.is_empty() && join.rel_predicate.is_none() {
        return Ok(None);
    }
    let entry = ctx
        .version
        .catalog
        .table(table)
        .ok_or_else(|| Error::internal("rel table vanished from the catalog"))?;
    let mut wanted = Vec::with_capacity(join.rel_conditions.len());
    let mut columns = Vec::with_capacity(join.rel_conditions.len());
    let mut types = Vec::with_capacity(join.rel_conditions.len());
    let mut mask = vec![0u64; (rel.next_rel_id.max(rel.num_rels) as usize).div_ceil(64)];
    for (name, e) in &join.rel_conditions {
        let value =
            match &e.kind {
                BoundExprKind::Literal(v) => v.clone(),
                BoundExprKind::Parameter(p) => ctx.params.get(p).cloned().ok_or_else(|| {
                    Error::runtime(format!("parameter ${p} was not given a value"))
                })?,
                _ => return Err(Error::internal("rel condition is not a constant")),
            };
        let column = entry.property(name).and_then(|p| {
            types.push(p.ty.clone());
            rel.column_of(p.id)
        });
        match column {
            // NULL never equals anything; a missing property is NULL.
            Some(c) if !value.is_null() => {
                columns.push(c);
                wanted.push(value);
            }
            _ => return Ok(Some(mask.into())),
        }
    }
    let mut pred = match &join.rel_predicate {
        Some(p) => Some(PredicateReader::new(p, entry, |id| rel.column_of(id))?),
        None => None,
    };
    let num_conditions = columns.len();
    if let Some(p) = &pred {
        columns.extend(p.stored_columns());
    }
    let mut ids = Vec::new();
    let mut keep = Vec::new();
    for g in &rel.fwd.groups {
        if g.num_rels == 0 {
            continue;
        }
        let pinned = g.pin(&ctx.pager, &columns)?;
        let n = g.num_rels as usize;
        ids.resize(n, 0);
        pinned.rel_ids()?.read_u64s(0, n, &mut ids);
        keep.clear();
        keep.resize(n, true);
        for &p in pinned.deleted_positions() {
            keep[p as usize] = false;
        }
        let (conds, props) = pinned.properties.split_at(num_conditions);
        for ((col, want), ty) in conds.iter().zip(&wanted).zip(&types) {
            let mut values = ValueVector::new(ty.clone(), n);
            col.read(0, n, &mut values, 0)?;
            for (i, k) in keep.iter_mut().enumerate() {
                if *k && equals(&values.get_value(i), want) != Some(true) {
                    *k = false;
                }
            }
        }
        if let Some(p) = &mut pred {
            p.filter(props, n, &mut keep, ctx)?;
        }
        for (i, &id) in ids.iter().enumerate() {
            if keep[i] {
                let w = mask
                    .get_mut((id / 64) as usize)
                    .ok_or_else(|| Error::internal(format!("rel id {id} out of range")))?;
                *w |= 1 << (id % 64);
            }
        }
        ctx.cancel.check()?;
    }
    Ok(Some(mask.into()))
}

/// The destinations the join's destination predicate lets through (see
/// [`node_mask`]). The predicate is evaluated on every node, also on nodes
/// no path reaches, where the query never evaluates it: an error there
/// (a division by zero, say) means no mask, not a failed query.
pub(super) fn dst_mask(
    join: &RecursiveJoin,
    tables: &[(TableId, u64)],
    num_nodes: u64,
    ctx: &QueryContext,
) -> Result<Option<Arc<[u64]>>> {
    match node_mask(join.dst_predicate.as_ref(), tables, num_nodes, ctx) {
        Ok(mask) => Ok(mask),
        Err(e) if e.kind == kith_common::ErrorKind::Interrupted => Err(e),
        Err(_) => Ok(None),
    }
}

/// The weight property of every rel, indexed by rel id (read from the
/// forward CSR, whose property chunks are in CSR order next to the rel ids);
/// NaN for an id with no live rel (a deleted one), which no search reaches
/// ([`RelWeights::get`] gives it no weight). A live rel's weight is a
/// number. Used for patterns over several rel tables; one table reads its
/// weights beside the neighbours instead.
pub(super) fn weights_by_rel_id(
    rel: &RelTableData,
    prop: kith_catalog::PropertyId,
    ty: LogicalType,
    ctx: &QueryContext,
) -> Result<Arc<[f64]>> {
    let column = rel
        .column_of(prop)
        .ok_or_else(|| Error::internal("weight property has no storage column"))?;
    let mut weights = vec![f64::NAN; rel.next_rel_id.max(rel.num_rels) as usize];
    let mut ids = Vec::new();
    for g in &rel.fwd.groups {
        if g.num_rels == 0 {
            continue;
        }
        let pinned = g.pin(&ctx.pager, &[column])?;
        let n = g.num_rels as usize;
        ids.resize(n, 0);
        pinned.rel_ids()?.read_u64s(0, n, &mut ids);
        let col = pinned
            .properties
            .first()
            .ok_or_else(|| Error::internal("weight column not pinned"))?;
        let mut values = kith_common::ValueVector::new(ty.clone(), n);
        col.read(0, n, &mut values, 0)?;
        let deleted = pinned.deleted_positions();
        for (i, &id) in ids.iter().enumerate() {
            if deleted.binary_search(&(i as u64)).is_ok() {
                continue;
            }
            let v = values.get_value(i);
            let w = match v {
                Value::Null => {
                    return Err(Error::runtime(
                        "weighted shortest path over a rel whose weight is NULL",
                    ))
                }
                v => v
                    .as_f64()
                    .filter(|w| !w.is_nan())
                    .ok_or_else(|| Error::runtime(format!("weight {v} is not a number")))?,
            };
            let slot = weights
                .get_mut(id as usize)
                .ok_or_else(|| Error::internal(format!("rel id {id} out of range")))?;
            *slot = w;
        }
    }
    Ok(weights.into())
}
