//! A search's rows: the join-row sink of a counting search, collecting
//! rows under the query's memory charge, and emitting found rows as the
//! join's output.

use super::*;

/// The sources of a join, as [`collect_sources`] returns them.
pub(super) struct Sources<'a> {
    pub(super) list: &'a [u64],
    pub(super) row_src: &'a [Option<u64>],
    pub(super) index_of: &'a HashMap<u64, usize>,
}

/// The join-row sink of a counting, lengths or costs search of `join` from
/// `srcs` over `num_nodes` nodes: rows kept (with room reserved for one
/// per source and node) or handed to `forward` batch by batch.
#[allow(clippy::too_many_arguments)]
pub(super) fn search_sink(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    srcs: &Sources<'_>,
    num_nodes: u64,
    dst_mask: &Option<Arc<[u64]>>,
    dst_ids: &Option<DstIds>,
    forward: &Option<Arc<dyn JoinRowsConsumer>>,
    ctx: &QueryContext,
) -> JoinRowsSink {
    let by_src = SourceRows::new(rows.num_rows, srcs.row_src, srcs.index_of, srcs.list.len());
    // One row per (source, reached node) for the shortest-path searches
    // (walks can have one per length); none kept when forwarded, and rows
    // merged by source and length are few: they grow as they come.
    let expected = match forward.is_some() || join.dst_unread {
        true => 0,
        false => {
            let expected = (srcs.list.len() as u64).saturating_mul(num_nodes);
            reserved_rows(expected, JOIN_ROW_BYTES, ctx)
        }
    };
    let sink = JoinRowsSink::new(
        by_src,
        srcs.index_of,
        dst_mask.clone(),
        dst_ids.clone(),
        join.with_len,
        expected,
        Arc::clone(&ctx.memory),
    )
    .merged(join.dst_unread);
    match forward {
        Some(to) => sink.forward_to(Arc::clone(rows), Arc::clone(to), join.left_outer),
        None => sink,
    }
}

/// Bytes of a join row as a [`JoinRowsSink`] holds it (input row,
/// destination, length).
pub(super) const JOIN_ROW_BYTES: u64 = 20;

/// The rows a search's sink makes room for before the search: the rows
/// `expected`, up to what the memory limit can hold at `row_bytes` a row
/// (more would fail with the out-of-memory error anyway). The room is
/// address space, touched (and charged) only as rows arrive; it saves the
/// copies of growing by doubling, and the pages each copy faults in, which
/// were most of a 64-source search's time on R-MAT scale 20 (64 M rows).
pub(super) fn reserved_rows(expected: u64, row_bytes: u64, ctx: &QueryContext) -> usize {
    let fits = ctx.pager.memory_limit_bytes() / row_bytes.max(1);
    usize::try_from(expected.min(fits)).unwrap_or(usize::MAX)
}

/// Runs a computation over `graph` from `sources` and collects its rows.
pub(super) fn collect_rows<G: Graph, C: Compute>(
    sched: &Scheduler,
    graph: Arc<G>,
    compute: impl Into<Arc<C>>,
    sources: &[u64],
    opts: &IfeOptions,
    ctx: &QueryContext,
) -> Result<(Vec<C::Row>, RunStats)>
where
    C::Row: HeldBytes,
{
    let sink = Arc::new(ChargedCollect::<C::Row>::new(
        sources.len(),
        graph.num_nodes(),
        ctx,
    ));
    let (compute, cancel, out) = (compute.into(), &ctx.cancel, sink.clone());
    let stats = run_ife(sched, graph, compute, sources, opts, cancel, out)?;
    Ok((sink.take(), stats))
}

/// The bytes a kept search row holds, its heap parts included.
pub(super) trait HeldBytes {
    fn held_bytes(&self) -> usize;
}

impl HeldBytes for TreeRow {
    fn held_bytes(&self) -> usize {
        size_of::<TreeRow>()
    }
}

impl HeldBytes for PathRow {
    /// A path's node and rel lists are most of it: 100 bytes for three
    /// rels, beside the row's 72.
    fn held_bytes(&self) -> usize {
        size_of::<PathRow>() + (self.nodes.capacity() + self.rels.capacity()) * size_of::<u64>()
    }
}

/// Collects every row of a search, charging what they hold against the
/// query's memory limit as they arrive (the reserved room is not touched,
/// so not charged, until rows fill it).
pub(super) struct ChargedCollect<R> {
    /// The rows, the bytes they hold, the charge.
    pub(super) rows: Mutex<(Vec<R>, u64, MemoryCharge)>,
    pub(super) memory: Arc<QueryMemory>,
}

impl<R: Send + HeldBytes> ChargedCollect<R> {
    /// With room for one row per (source, reached node), the rows of the
    /// shortest-path searches (walks can have one per length).
    pub(super) fn new(sources: usize, num_nodes: u64, ctx: &QueryContext) -> ChargedCollect<R> {
        let expected = (sources as u64).saturating_mul(num_nodes);
        let row_bytes = size_of::<R>() as u64;
        ChargedCollect {
            rows: Mutex::new((
                room_for(reserved_rows(expected, row_bytes, ctx)),
                0,
                MemoryCharge::default(),
            )),
            memory: Arc::clone(&ctx.memory),
        }
    }

    pub(super) fn take(&self) -> Vec<R> {
        std::mem::take(&mut self.rows.lock().0)
    }
}

impl<R: Send + HeldBytes> Sink<R> for ChargedCollect<R> {
    fn consume(&self, rows: &mut Vec<R>) -> Result<()> {
        let added: usize = rows.iter().map(HeldBytes::held_bytes).sum();
        let mut held = self.rows.lock();
        let (all, bytes, charge) = &mut *held;
        all.append(rows);
        *bytes += added as u64;
        charge.grow_to(&self.memory, *bytes)
    }
}

/// A found row: (source index, destination number, length or cost bits,
/// count).
pub(super) type FoundRow = (usize, u64, u64, u64);

/// The rows a search found.
pub(super) enum FoundList<'a> {
    /// (source index, destination, length or cost bits, count).
    Rows(&'a [FoundRow]),
    /// One row per path (counting 1), read from the paths themselves.
    Paths(&'a FoundPaths),
}

/// What a search found, for [`emit_rows`].
pub(super) struct Found<'a> {
    /// Per input row, its source (None: NULL).
    pub(super) row_src: &'a [Option<u64>],
    pub(super) index_of: &'a HashMap<u64, usize>,
    pub(super) num_sources: usize,
    pub(super) rows: FoundList<'a>,
    pub(super) weighted: bool,
    /// The path and rels columns (as the join asks) hold each found row's
    /// number, for [`LazyPaths`].
    pub(super) path_numbers: bool,
}

/// The join's output: each input row repeated once per destination found
/// from its source, with the destination id, the length (cost) and the
/// count. `dst_id` maps a destination to its id (None: dropped).
pub(super) fn emit_rows(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    ctx: &QueryContext,
    f: &Found<'_>,
    dst_id: &dyn Fn(u64) -> Option<InternalId>,
) -> Result<JoinRows> {
    let index_of = f.index_of;
    let by_src = SourceRows::new(rows.num_rows, f.row_src, index_of, f.num_sources);
    let cap = match f.rows {
        FoundList::Rows(r) => r.len(),
        FoundList::Paths(p) => p.len(),
    };
    let mut out = JoinRows {
        input: Arc::clone(rows),
        input_row: Vec::with_capacity(cap),
        dst: Vec::with_capacity(cap),
        len: Vec::with_capacity(if join.with_len { cap } else { 0 }),
        weighted: f.weighted,
        with_len: join.with_len,
        count: Vec::new(),
        numbers: Vec::new(),
        padded_from: usize::MAX,
        paths: None,
    };
    let mut hit = vec![false; f.num_sources];
    for k in 0..cap {
        let f_row = match f.rows {
            FoundList::Rows(r) => r[k],
            FoundList::Paths(p) => {
                let (src, dst, len) = p.end(k, f.weighted);
                let si = index_of
                    .get(&src)
                    .copied()
                    .ok_or_else(|| Error::internal("recursive result for an unknown source"))?;
                (si, dst, len, 1)
            }
        };
        let rows_of = by_src.rows_of(f_row.0);
        if rows_of.is_empty() {
            continue;
        }
        let Some(dst) = dst_id(f_row.1) else {
            continue;
        };
        hit[f_row.0] = true;
        for &r in rows_of {
            out.input_row.push(r);
            out.dst.push(dst);
            if join.with_len {
                out.len.push(f_row.2);
            }
            out.push_count(f_row.3);
            if f.path_numbers {
                out.push_number(k as u64);
            }
        }
        if k % 65_536 == 0 {
            ctx.cancel.check()?;
        }
    }
    by_src.pad_unmatched(join.left_outer, &hit, &mut out);
    Ok(out)
}

/// The output of a search whose rows went to `out` (see [`search_sink`]).
pub(super) fn search_output(
    join: &RecursiveJoin,
    rows: &Arc<Chunk>,
    out: &JoinRowsSink,
    stats: RunStats,
) -> Result<RecursiveOutput> {
    Ok(RecursiveOutput {
        rows: out.finish(rows, join.left_outer)?,
        stats,
        forwarded: out.forwarded_rows(),
    })
}
