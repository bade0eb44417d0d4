//! The recursive join by path enumeration: trails, acyclic paths, node
//! predicates and queries that read the path, one row per path.

use super::*;

/// Maps the dense node and rel ids of a graph to internal ids.
pub(super) struct PathIds<'a> {
    pub(super) node: &'a dyn Fn(u64) -> InternalId,
    /// Whether a destination lies in one of the pattern's tables.
    pub(super) dst_ok: &'a dyn Fn(InternalId) -> bool,
    /// Each node table with the first dense id of its nodes.
    pub(super) space: Vec<(TableId, u64)>,
    /// Each rel table with the first dense id of its rels.
    pub(super) rels: Vec<(TableId, u64)>,
    /// One past the largest rel id the search reports.
    pub(super) rel_id_bound: u64,
}

/// One past the largest rel offset of a rel table (ids of deleted rels
/// included): the size of its range of dense rel ids.
pub(super) fn rel_id_bound(rel: &RelTableData) -> u64 {
    rel.next_rel_id.max(rel.num_rels)
}

/// The recursive join by path enumeration ([`WalkPaths`], or
/// [`ShortestPaths`] from the parents of a BFS): with the path
/// or rels columns one row per path, else one row per (source,
/// destination, length) with the number of paths as its count.
#[allow(clippy::too_many_arguments)]
pub(super) fn paths_join<G: Graph>(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    sched: &Scheduler,
    opts: &IfeOptions,
    graph: Arc<G>,
    srcs: &Sources<'_>,
    (lower, upper): (u32, u32),
    ids: &PathIds<'_>,
    bound: &WalkBound<'_>,
    weights: Option<RelWeights>,
    forward: Option<Arc<dyn JoinRowsConsumer>>,
) -> Result<RecursiveOutput> {
    let dst_mask = dst_mask(join, &ids.space, graph.num_nodes(), ctx)?;
    let node_mask = node_mask(
        join.node_predicate.as_ref(),
        &ids.space,
        graph.num_nodes(),
        ctx,
    )?;
    let run = PathsJoin {
        join,
        rows,
        ctx,
        sched,
        opts,
        srcs,
        ids,
    };
    // One shortest path per destination, its value read: the searches'
    // parent trees are kept and the paths read back from them as they are
    // built, when every parent edge packs in a word (32-bit ids).
    // (Such joins are never forwarded: see `forwards`.)
    let trees = join.mode == RecursiveMode::Shortest
        && (join.with_path || join.with_rels)
        && graph.num_nodes() <= 1 << 32
        && ids.rel_id_bound <= 1 << 32;
    if trees {
        return run.trees(graph, (lower, upper), node_mask, dst_mask);
    }
    let weighted = weights.is_some();
    let search = PathSearch {
        join,
        bounds: (lower, upper),
        node_mask,
        dst_mask,
        weights,
    };
    if let Some(to) = forward {
        return run.forwarded(search, graph, bound, weighted, to);
    }
    let collect = Arc::new(ChargedCollect::<PathRow>::new(
        srcs.list.len(),
        graph.num_nodes(),
        ctx,
    ));
    let stats = search.run(sched, graph, srcs.list, opts, ctx, bound, collect.clone())?;
    let mut found_paths = collect.take();
    // Same order whatever the policy and thread count. The workers hand
    // over sorted runs (a source's destinations in order): a merging sort
    // finds them instead of partitioning 2.6 M rows afresh.
    found_paths.sort();
    ctx.cancel.check()?;
    if join.with_path || join.with_rels {
        // The kept paths, in order; their values are built as the parent
        // pipeline reads them (LazyPaths).
        found_paths.retain(|p| (ids.dst_ok)((ids.node)(p.dst)));
        return run.emit(FoundPaths::Rows(found_paths), weighted, stats);
    }
    run.counted(found_paths, weighted, stats)
}

/// A path-enumerating join's run: what its phases share.
struct PathsJoin<'a> {
    join: &'a RecursiveJoin,
    rows: &'a Arc<Chunk>,
    ctx: &'a QueryContext,
    sched: &'a Scheduler,
    opts: &'a IfeOptions,
    srcs: &'a Sources<'a>,
    ids: &'a PathIds<'a>,
}

impl PathsJoin<'_> {
    /// One row per found path (cost bits for a length when `weighted`).
    fn emit(&self, found: FoundPaths, weighted: bool, stats: RunStats) -> Result<RecursiveOutput> {
        let PathsJoin {
            join,
            rows,
            ctx,
            sched,
            opts,
            srcs,
            ids,
        } = *self;
        let workers = (sched, workers(sched, opts));
        emit_paths(join, rows, ctx, srcs, ids, found, weighted, stats, workers)
    }

    /// One shortest path per destination from each source's parent tree
    /// ([`ShortestTrees`]), the paths read back as their values are built.
    fn trees<G: Graph>(
        &self,
        graph: Arc<G>,
        (lower, upper): (u32, u32),
        node_mask: Option<Arc<[u64]>>,
        dst_mask: Option<Arc<[u64]>>,
    ) -> Result<RecursiveOutput> {
        let PathsJoin {
            ctx,
            sched,
            opts,
            srcs,
            ids,
            ..
        } = *self;
        // Every source's tree is kept until the paths are read: charged
        // for the rest of the query, before the search allocates them.
        let tree_bytes = ShortestTrees::tree_bytes(graph.num_nodes(), srcs.list.len());
        MemoryCharge::default().grow_to(&ctx.memory, tree_bytes)?;
        let mut compute = ShortestTrees::new(lower, upper);
        compute.search.node_mask = node_mask;
        compute.search.dst_mask = dst_mask;
        let compute = Arc::new(compute);
        let (found, stats) = collect_rows::<_, ShortestTrees>(
            sched,
            graph,
            Arc::clone(&compute),
            srcs.list,
            opts,
            ctx,
        )?;
        let mut found = sort_tree_rows(found, sched, workers(sched, opts), &ctx.cancel)?;
        found.retain(|p| (ids.dst_ok)((ids.node)(p.dst)));
        let found_paths = FoundPaths::Trees {
            rows: found,
            trees: compute.take_trees().into_iter().collect(),
        };
        self.emit(found_paths, false, stats)
    }

    /// The search's rows handed on to `to` batch by batch, with their
    /// paths' values; the output's rows are empty.
    fn forwarded<G: Graph>(
        &self,
        search: PathSearch<'_>,
        graph: Arc<G>,
        bound: &WalkBound<'_>,
        weighted: bool,
        to: Arc<dyn JoinRowsConsumer>,
    ) -> Result<RecursiveOutput> {
        let PathsJoin {
            join,
            rows,
            ctx,
            sched,
            opts,
            srcs,
            ids,
        } = *self;
        // The rows go on batch by batch, with their paths' values.
        let by_src = SourceRows::new(rows.num_rows, srcs.row_src, srcs.index_of, srcs.list.len());
        let spec = PathRowsSpec {
            ids: IdSpace {
                nodes: ids.space.clone(),
                rels: ids.rels.clone(),
            },
            dst_tables: (ids.space.len() > 1).then(|| join.dst_tables.clone()),
            columns: path_columns(join, rows),
            walked_back: walked_back(join),
            element_properties: join.element_properties,
            with_len: join.with_len,
            weighted,
            left_outer: join.left_outer,
        };
        let sink = Arc::new(PathRowsSink::new(
            ctx,
            by_src,
            srcs.index_of,
            spec,
            Arc::clone(rows),
            to,
        ));
        let stats = search.run(sched, graph, srcs.list, opts, ctx, bound, sink.clone())?;
        sink.finish()?;
        Ok(RecursiveOutput {
            rows: JoinRows::empty(Arc::clone(rows), join.with_len),
            stats,
            forwarded: Some(sink.forwarded_rows()),
        })
    }

    /// One row per (source, destination, length) of the found paths (a
    /// weighted path's length: its cost bits), the number of paths its
    /// count.
    fn counted(
        &self,
        found_paths: Vec<PathRow>,
        weighted: bool,
        stats: RunStats,
    ) -> Result<RecursiveOutput> {
        let PathsJoin {
            join,
            rows,
            ctx,
            srcs,
            ids,
            ..
        } = *self;
        let src_index = |s: u64| -> Result<usize> {
            srcs.index_of
                .get(&s)
                .copied()
                .ok_or_else(|| Error::internal("recursive result for an unknown source"))
        };
        // Count the paths of each (source, destination, length).
        let mut counts: HashMap<(u64, u64, u64), u64> = HashMap::new();
        for p in &found_paths {
            let len = if weighted {
                p.cost_bits
            } else {
                p.rels.len() as u64
            };
            *counts.entry((p.src, p.dst, len)).or_default() += 1;
        }
        drop(found_paths);
        let mut keyed: Vec<_> = counts.into_iter().collect();
        keyed.sort_unstable();
        let found = keyed
            .into_iter()
            .map(|((s, d, len), count)| Ok((src_index(s)?, d, len, count)))
            .collect::<Result<Vec<FoundRow>>>()?;
        let f = Found {
            row_src: srcs.row_src,
            index_of: srcs.index_of,
            num_sources: srcs.list.len(),
            rows: FoundList::Rows(&found),
            weighted,
            path_numbers: false,
        };
        let dst_id = |d: u64| {
            let id = (ids.node)(d);
            (ids.dst_ok)(id).then_some(id)
        };
        let rows = emit_rows(join, rows, ctx, &f, &dst_id)?;
        Ok(RecursiveOutput {
            rows,
            stats,
            forwarded: None,
        })
    }
}

/// A path-enumerating search of a join: walks (and trails, acyclic
/// paths), shortest paths from the Parents of a BFS, or weighted shortest
/// paths from a per-source Dijkstra, each row a [`PathRow`].
pub(super) struct PathSearch<'a> {
    pub(super) join: &'a RecursiveJoin,
    pub(super) bounds: (u32, u32),
    pub(super) node_mask: Option<Arc<[u64]>>,
    pub(super) dst_mask: Option<Arc<[u64]>>,
    pub(super) weights: Option<RelWeights>,
}

impl PathSearch<'_> {
    /// Runs the search from `sources` over `graph`, its rows to `sink`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run<G: Graph>(
        self,
        sched: &Scheduler,
        graph: Arc<G>,
        sources: &[u64],
        opts: &IfeOptions,
        ctx: &QueryContext,
        bound: &WalkBound<'_>,
        sink: Arc<dyn Sink<PathRow>>,
    ) -> Result<RunStats> {
        let (lower, upper) = self.bounds;
        let cancel = &ctx.cancel;
        match self.join.mode {
            RecursiveMode::Walk | RecursiveMode::Trail | RecursiveMode::Acyclic => {
                let semantics = match self.join.mode {
                    RecursiveMode::Walk => PathSemantics::Walk,
                    RecursiveMode::Trail => PathSemantics::Trail,
                    _ => PathSemantics::Acyclic,
                };
                let mut compute = WalkPaths::new(lower, upper, semantics)?;
                compute.cancel = Some(ctx.cancel.clone());
                compute.node_mask = self.node_mask;
                compute.bound =
                    walk_bound(&*graph, sources.len(), self.dst_mask.as_ref(), upper, bound)?;
                compute.dst_mask = self.dst_mask;
                run_ife(sched, graph, Arc::new(compute), sources, opts, cancel, sink)
            }
            RecursiveMode::Shortest | RecursiveMode::AllShortest => {
                let mode = match self.join.mode {
                    RecursiveMode::Shortest => PathMode::One,
                    _ => PathMode::All,
                };
                let mut compute = ShortestPaths::new(lower, upper, mode);
                compute.node_mask = self.node_mask;
                compute.dst_mask = self.dst_mask;
                run_ife(sched, graph, Arc::new(compute), sources, opts, cancel, sink)
            }
            RecursiveMode::WeightedShortest | RecursiveMode::AllWeightedShortest => {
                let w = self
                    .weights
                    .ok_or_else(|| Error::internal("weighted shortest paths without weights"))?;
                let mode = match self.join.mode {
                    RecursiveMode::WeightedShortest => PathMode::One,
                    _ => PathMode::All,
                };
                let mut compute = WeightedPaths::new(w, lower, mode)?;
                compute.node_mask = self.node_mask;
                compute.cancel = Some(ctx.cancel.clone());
                compute.dst_mask = self.dst_mask;
                run_ife(sched, graph, Arc::new(compute), sources, opts, cancel, sink)
            }
        }
    }
}

/// The rel tables of `join` walked only backward: such a rel was reached
/// from its destination, so its source is the path's next node.
pub(super) fn walked_back(join: &RecursiveJoin) -> Vec<TableId> {
    join.rel_tables
        .iter()
        .map(|&(t, _)| t)
        .filter(|&t| {
            join.rel_tables
                .iter()
                .all(|&(t2, d)| t2 != t || d == ExtendDirection::Bwd)
        })
        .collect()
}

/// The rows of a join that outputs paths: one per kept path, in order,
/// with the path numbers [`LazyPaths`] builds the values of.
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_paths(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    srcs: &Sources<'_>,
    ids: &PathIds<'_>,
    found_paths: FoundPaths,
    weighted: bool,
    stats: RunStats,
    workers: (&Scheduler, usize),
) -> Result<RecursiveOutput> {
    // One row per path, read from the paths (no list of found rows).
    let f = Found {
        row_src: srcs.row_src,
        index_of: srcs.index_of,
        num_sources: srcs.list.len(),
        rows: FoundList::Paths(&found_paths),
        weighted,
        path_numbers: true,
    };
    let mut out = emit_rows(join, rows, ctx, &f, &|d| Some((ids.node)(d)))?;
    let walked_back = walked_back(join);
    let space = IdSpace {
        nodes: ids.space.clone(),
        rels: ids.rels.clone(),
    };
    let columns = path_columns(join, rows);
    out.paths = Some(LazyPaths::new(
        ctx,
        found_paths,
        space,
        columns,
        &walked_back,
        join.element_properties,
        Some(workers),
    )?);
    Ok(RecursiveOutput {
        rows: out,
        stats,
        forwarded: None,
    })
}

/// `rows` by source, then destination (a source reaches each destination
/// once): grouped by source in one pass (a worker's rows come in runs of
/// one source), each source's rows sorted by destination on the workers.
pub(super) fn sort_tree_rows(
    rows: Vec<TreeRow>,
    sched: &Scheduler,
    threads: usize,
    cancel: &kith_sched::CancelToken,
) -> Result<Vec<TreeRow>> {
    let mut groups: Vec<(u64, Vec<TreeRow>)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut last = None;
    for r in rows {
        let g = match last {
            Some((src, g)) if src == r.src => g,
            _ => {
                let g = *index.entry(r.src).or_insert_with(|| {
                    groups.push((r.src, Vec::new()));
                    groups.len() - 1
                });
                last = Some((r.src, g));
                g
            }
        };
        groups[g].1.push(r);
    }
    groups.sort_unstable_by_key(|g| g.0);
    cancel.check()?;
    let sorted: Vec<Vec<TreeRow>> = if threads > 1 && groups.len() > 1 {
        let groups: Arc<Vec<parking_lot::Mutex<Vec<TreeRow>>>> = Arc::new(
            groups
                .into_iter()
                .map(|g| parking_lot::Mutex::new(g.1))
                .collect(),
        );
        let n = groups.len();
        sched.parallel_map(threads, cancel, n, move |i| {
            let mut g = std::mem::take(&mut *groups[i].lock());
            g.sort_unstable_by_key(|r| r.dst);
            Ok(g)
        })?
    } else {
        let mut out = Vec::with_capacity(groups.len());
        for (_, mut g) in groups {
            g.sort_unstable_by_key(|r| r.dst);
            out.push(g);
        }
        out
    };
    let mut out = Vec::with_capacity(sorted.iter().map(Vec::len).sum());
    for g in sorted {
        out.extend_from_slice(&g);
    }
    Ok(out)
}
