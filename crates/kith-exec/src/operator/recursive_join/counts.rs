//! The counting searches of a recursive join (walks, shortest-path
//! lengths and counts, weighted costs): run over one rel table or a union
//! of them, their rows handed to a join-row sink as they go.

use super::*;

/// A counting search from the join's sources: what its runs share.
pub(super) struct CountSearch<'a> {
    pub(super) sched: &'a Scheduler,
    pub(super) ctx: &'a QueryContext,
    pub(super) sources: &'a [u64],
    pub(super) opts: &'a IfeOptions,
    pub(super) bounds: (u32, u32),
    /// The destinations the WHERE leaves, if it rules some out.
    pub(super) dst_mask: &'a Option<Arc<[u64]>>,
    /// The hop bound of walks over the graph turned around.
    pub(super) bound: &'a WalkBound<'a>,
}

impl CountSearch<'_> {
    /// Runs the search of `mode` over one rel table's `graph`, into a sink
    /// made by `sink`; the sink and the run's stats.
    pub(super) fn run_table(
        &self,
        mode: RecursiveMode,
        graph: Arc<StorageCsr>,
        table: &TableGraph,
        weights: Option<RelWeights>,
        sink: impl Fn() -> JoinRowsSink,
    ) -> Result<(Arc<JoinRowsSink>, RunStats)> {
        let CountSearch {
            sched,
            ctx,
            sources,
            opts,
            bounds: (lower, upper),
            dst_mask,
            bound,
        } = *self;
        let cancel = &ctx.cancel;
        // Every search hands its rows to the join-row sink as it goes.
        let (out, stats) = match mode {
            RecursiveMode::Walk => {
                let walks = walk_counts(
                    &*graph,
                    sources.len(),
                    dst_mask.as_ref(),
                    (lower, upper),
                    bound,
                )?;
                let out = Arc::new(sink());
                let (walks, to) = (Arc::new(walks), out.clone());
                let stats = run_ife(sched, graph, walks, sources, opts, cancel, to)?;
                (out, stats)
            }
            RecursiveMode::Shortest => {
                let compute = ShortestLengths {
                    lower,
                    upper,
                    dst_mask: dst_mask.clone(),
                };
                // A one-source search runs its dense levels bottom-up over the
                // reverse CSR (the same rels: the same mask).
                let mut reverse = table.reverse(ctx)?;
                if let Some(mask) = &table.mask {
                    reverse = reverse.with_rel_mask(Arc::clone(mask));
                }
                let (out, reverse) = (Arc::new(sink()), Some(Arc::new(reverse)));
                let (compute, to) = (Arc::new(compute), out.clone());
                let stats = run_ife_with_reverse(
                    sched, graph, reverse, compute, sources, opts, cancel, to,
                )?;
                (out, stats)
            }
            RecursiveMode::AllShortest => {
                let compute = AllShortestCounts {
                    lower,
                    upper,
                    dst_mask: dst_mask.clone(),
                };
                let (out, compute) = (Arc::new(sink()), Arc::new(compute));
                let stats = run_ife(sched, graph, compute, sources, opts, cancel, out.clone())?;
                (out, stats)
            }
            RecursiveMode::WeightedShortest => {
                let weights = weights
                    .ok_or_else(|| Error::internal("weighted shortest path without weights"))?;
                let compute = Arc::new(WeightedShortest::new(weights)?);
                // Dijkstra reaches its source at cost 0: a row only from 0 rels.
                let out = Arc::new(sink().weighted(lower == 0));
                let stats = run_ife(sched, graph, compute, sources, opts, cancel, out.clone())?;
                (out, stats)
            }
            RecursiveMode::AllWeightedShortest => {
                let weights = weights
                    .ok_or_else(|| Error::internal("weighted shortest path without weights"))?;
                let mut compute = AllWeightedCounts::new(weights, lower)?;
                compute.cancel = Some(ctx.cancel.clone());
                compute.dst_mask = dst_mask.clone();
                let out = Arc::new(sink().weighted(true));
                let stats = run_ife(
                    sched,
                    graph,
                    Arc::new(compute),
                    sources,
                    opts,
                    cancel,
                    out.clone(),
                )?;
                (out, stats)
            }
            RecursiveMode::Trail | RecursiveMode::Acyclic => {
                return Err(Error::internal("TRAIL and ACYCLIC paths are enumerated"))
            }
        };
        Ok((out, stats))
    }

    /// Runs the search of `mode` over a union of rel tables' `graph` into
    /// `to`; `reverse` turns the graph around (with the rel masks) for the
    /// dense levels of a one-source shortest-path search.
    pub(super) fn run_union(
        &self,
        mode: RecursiveMode,
        graph: Arc<UnionCsr>,
        reverse: impl FnOnce() -> Result<UnionCsr>,
        to: Arc<JoinRowsSink>,
    ) -> Result<RunStats> {
        let CountSearch {
            sched,
            ctx,
            sources,
            opts,
            bounds: (lower, upper),
            dst_mask,
            bound,
        } = *self;
        let cancel = &ctx.cancel;
        Ok(match mode {
            RecursiveMode::Walk => {
                let walks = walk_counts(
                    &*graph,
                    sources.len(),
                    dst_mask.as_ref(),
                    (lower, upper),
                    bound,
                )?;
                run_ife(sched, graph, Arc::new(walks), sources, opts, cancel, to)?
            }
            RecursiveMode::Shortest => {
                let compute = ShortestLengths {
                    lower,
                    upper,
                    dst_mask: dst_mask.clone(),
                };
                // Dense levels of a one-source search bottom-up.
                let reverse = Some(Arc::new(reverse()?));
                let compute = Arc::new(compute);
                run_ife_with_reverse(sched, graph, reverse, compute, sources, opts, cancel, to)?
            }
            RecursiveMode::AllShortest => {
                let compute = AllShortestCounts {
                    lower,
                    upper,
                    dst_mask: dst_mask.clone(),
                };
                run_ife(sched, graph, Arc::new(compute), sources, opts, cancel, to)?
            }
            RecursiveMode::WeightedShortest | RecursiveMode::AllWeightedShortest => {
                return Err(Error::internal("weighted shortest paths are enumerated"))
            }
            RecursiveMode::Trail | RecursiveMode::Acyclic => {
                return Err(Error::internal("TRAIL and ACYCLIC paths are enumerated"))
            }
        })
    }
}
