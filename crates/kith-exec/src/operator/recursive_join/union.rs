//! A recursive join over several rel tables (or both directions): one
//! graph over their union.

use super::*;

/// Rel table `t` walked in direction `d` as a member of a [`UnionCsr`]:
/// the node table numbers walked from and to, the table's storage and its
/// CSR in that direction.
pub(super) fn union_member(
    ctx: &QueryContext,
    t: TableId,
    d: ExtendDirection,
    index_of_table: &dyn Fn(TableId) -> Option<usize>,
) -> Result<(usize, usize, RelTableData, StorageCsr)> {
    let rel = match ctx.version.table(t)?.as_ref() {
        TableData::Rel(r) => r.clone(),
        TableData::Node(_) => return Err(Error::internal("expected rel table storage")),
    };
    let info = ctx
        .version
        .catalog
        .table(t)
        .and_then(|e| e.rel_info().cloned())
        .ok_or_else(|| Error::internal("rel table without endpoints"))?;
    let (from, to, dir) = match d {
        ExtendDirection::Fwd => (info.src, info.dst, RelDirection::Fwd),
        ExtendDirection::Bwd => (info.dst, info.src, RelDirection::Bwd),
    };
    let (Some(from), Some(to)) = (index_of_table(from), index_of_table(to)) else {
        return Err(Error::internal("rel table outside the node space"));
    };
    let csr = StorageCsr::new(&ctx.pager, rel.csr(dir))?;
    Ok((from, to, rel, csr))
}

/// [`recursive_join`] over several rel tables and node tables: one
/// [`UnionCsr`] whose dense node ids concatenate the node tables.
#[allow(clippy::too_many_arguments)]
pub(super) fn union_join(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    sched: &Scheduler,
    threads: usize,
    (lower, upper): (u32, u32),
    settings: &RecursiveSettings,
    forward: Option<Arc<dyn JoinRowsConsumer>>,
) -> Result<RecursiveOutput> {
    let index_of_table = |t: kith_common::TableId| join.node_tables.iter().position(|x| *x == t);
    let (union, graph) = UnionSpace::open(join, ctx, &index_of_table)?;
    let graph = Arc::new(graph);
    let reverse_bound = |mask: &[u64], upper: u32| -> Result<Option<HopBound>> {
        let turned = union.turned(join, ctx, &index_of_table, false)?;
        Ok(hops_to_targets(&turned, mask, upper))
    };
    let (sources, row_src, index_of) = collect_sources(join, rows, |id| {
        index_of_table(id.table()).map(|t| graph.global(t, id.offset()))
    })?;
    let opts = ife_options(
        join,
        settings,
        sources.len(),
        graph.num_nodes(),
        threads,
        ctx,
    );
    // Node table `i` owns the dense ids from `graph.global(i, 0)`.
    let space: Vec<(TableId, u64)> = join
        .node_tables
        .iter()
        .enumerate()
        .map(|(i, t)| (*t, graph.global(i, 0)))
        .collect();
    let weights = union_weights(join, ctx)?;
    let srcs = Sources {
        list: &sources,
        row_src: &row_src,
        index_of: &index_of,
    };
    // Weighted searches keep their paths (per-source Dijkstra), counted
    // from them when the query reads no path.
    if enumerates(join) || weights.is_some() {
        let g = Arc::clone(&graph);
        let node = move |d: u64| {
            let (t, off) = g.local(d);
            InternalId::new(join.node_tables[t], off)
        };
        let ids = PathIds {
            node: &node,
            dst_ok: &|id: InternalId| join.dst_tables.contains(&id.table()),
            space: space.clone(),
            rels: union.rel_space.clone(),
            rel_id_bound: union.rel_ids_end,
        };
        return paths_join(
            join,
            rows,
            ctx,
            sched,
            &opts,
            graph,
            &srcs,
            (lower, upper),
            &ids,
            &reverse_bound,
            weights,
            forward,
        );
    }
    let dst_mask = dst_mask(join, &space, graph.num_nodes(), ctx)?;
    // The search's rows go to the join-row sink as for one table, their
    // destinations numbered as the union numbers them.
    let dst_ids = Some(DstIds::Union {
        starts: space.iter().map(|s| s.1).collect(),
        tables: join
            .node_tables
            .iter()
            .map(|t| join.dst_tables.contains(t).then_some(*t))
            .collect(),
    });
    let n = graph.num_nodes();
    let out = Arc::new(search_sink(
        join, rows, &srcs, n, &dst_mask, &dst_ids, &forward, ctx,
    ));
    let search = CountSearch {
        sched,
        ctx,
        sources: &sources,
        opts: &opts,
        bounds: (lower, upper),
        dst_mask: &dst_mask,
        bound: &reverse_bound,
    };
    let reverse = || union.turned(join, ctx, &index_of_table, true);
    let stats = search.run_union(join.mode, graph, reverse, out.clone())?;
    search_output(join, rows, &out, stats)
}

/// The id spaces of a join's [`UnionCsr`], and what turning its members
/// around needs.
struct UnionSpace {
    /// Each node table's number of nodes.
    sizes: Vec<u64>,
    /// The rel mask of each rel table the join's rel conditions mask.
    masks: Vec<(TableId, Arc<[u64]>)>,
    /// Each rel table's range of dense rel ids (both directions of a table
    /// share one), in first-walked order.
    rel_space: Vec<(TableId, u64)>,
    /// One past the last dense rel id.
    rel_ids_end: u64,
}

impl UnionSpace {
    /// The join's node tables' sizes and its members (each rel table in
    /// each direction it is walked, with its rel mask): the id spaces and
    /// the union graph.
    fn open(
        join: &RecursiveJoin,
        ctx: &QueryContext,
        index_of_table: &dyn Fn(TableId) -> Option<usize>,
    ) -> Result<(UnionSpace, UnionCsr)> {
        let mut sizes = Vec::with_capacity(join.node_tables.len());
        for t in &join.node_tables {
            sizes.push(match ctx.version.table(*t)?.as_ref() {
                TableData::Node(n) => n.num_rows,
                TableData::Rel(_) => return Err(Error::internal("expected node table storage")),
            });
        }
        let mut members = Vec::new();
        let mut masks: Vec<(TableId, Arc<[u64]>)> = Vec::new();
        // Each rel table's range of dense rel ids (both directions of a table
        // share one), in first-walked order.
        let mut rel_space: Vec<(TableId, u64)> = Vec::new();
        let mut rel_ids_end = 0u64;
        for (t, d) in &join.rel_tables {
            let (from, to, rel, mut csr) = union_member(ctx, *t, *d, index_of_table)?;
            let rel_base = match rel_space.iter().find(|(x, _)| x == t) {
                Some(&(_, base)) => base,
                None => {
                    let base = rel_ids_end;
                    rel_space.push((*t, base));
                    rel_ids_end = rel_ids_end.saturating_add(rel_id_bound(&rel));
                    base
                }
            };
            if !join.rel_conditions.is_empty() || join.rel_predicate.is_some() {
                let mask = match masks.iter().find(|m: &&(TableId, Arc<[u64]>)| m.0 == *t) {
                    Some(m) => Arc::clone(&m.1),
                    None => {
                        let m = rel_mask(join, *t, &rel, ctx)?
                            .ok_or_else(|| Error::internal("rel conditions without a mask"))?;
                        masks.push((*t, Arc::clone(&m)));
                        m
                    }
                };
                csr = csr.with_rel_mask(mask);
            }
            members.push(UnionMember {
                from,
                to,
                rel_base,
                csr,
                // Undirected: a self-loop is walked once, forward.
                skip_self_loops: join.undirected && *d == ExtendDirection::Bwd,
            });
        }
        let graph = UnionCsr::new(&sizes, members);
        let space = UnionSpace {
            sizes,
            masks,
            rel_space,
            rel_ids_end,
        };
        Ok((space, graph))
    }

    /// Every member turned around (reading no rel ids: rel base 0), with
    /// the rel masks when `masked` (hop bounds take none: a looser bound).
    fn turned(
        &self,
        join: &RecursiveJoin,
        ctx: &QueryContext,
        index_of_table: &dyn Fn(TableId) -> Option<usize>,
        masked: bool,
    ) -> Result<UnionCsr> {
        let mut back = Vec::with_capacity(join.rel_tables.len());
        for (t, d) in &join.rel_tables {
            let flipped = match d {
                ExtendDirection::Fwd => ExtendDirection::Bwd,
                ExtendDirection::Bwd => ExtendDirection::Fwd,
            };
            let (from, to, _, mut csr) = union_member(ctx, *t, flipped, index_of_table)?;
            if let Some(m) = self.masks.iter().find(|m| masked && m.0 == *t) {
                csr = csr.with_rel_mask(Arc::clone(&m.1));
            }
            back.push(UnionMember {
                from,
                to,
                rel_base: 0,
                csr,
                skip_self_loops: false,
            });
        }
        Ok(UnionCsr::new(&self.sizes, back))
    }
}

/// The weights of a weighted search over a union, by dense rel id; None
/// for other searches. Weighted searches here walk one rel table both ways
/// (the planner refuses a weight over several tables), so rel ids are its
/// offsets.
fn union_weights(join: &RecursiveJoin, ctx: &QueryContext) -> Result<Option<RelWeights>> {
    Ok(match &join.weight {
        Some((prop, ty)) if join.mode.weighted() => {
            if join.rel_tables.iter().any(|(t, _)| *t != join.rel_table) {
                return Err(Error::not_supported(
                    "weighted shortest paths over several rel tables",
                ));
            }
            let rel = match ctx.version.table(join.rel_table)?.as_ref() {
                TableData::Rel(r) => r.clone(),
                TableData::Node(_) => return Err(Error::internal("expected rel table storage")),
            };
            let w = weights_by_rel_id(&rel, *prop, ty.clone(), ctx)?;
            Some(RelWeights::Dense(w))
        }
        _ => None,
    })
}
