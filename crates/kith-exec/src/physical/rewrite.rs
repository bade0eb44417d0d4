//! Rewrites of a resolved pipeline that the plan does not show: counting
//! or packing the last extend, fusing a counted pair of extends, counting a
//! whole rel table, morsel sizes, sharing one source or hub nodes among the
//! workers. Each is a named unit of [`REWRITES`], the one ordered list
//! `PipelineShape::build` applies; PROFILE and EXPLAIN list the names of
//! those that fired.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kith_common::constants::EXPAND_MORSEL_SIZE;
use kith_common::LogicalType;
use kith_planner::expr::{BoundExpr, SlotId};
use kith_planner::plan::Step;

use crate::operator::extend::{ExtendSpec, FusedExtend, SharedRels, SplitClaims};
use crate::operator::hub_split::HubSplit;
use crate::operator::intersect::IntersectSpec;

use crate::physical::*;

/// A rewrite: its name (as PROFILE and EXPLAIN print it) and what applies
/// it to a resolved pipeline, returning whether it fired (changed it).
pub(crate) struct Rewrite {
    pub(crate) name: &'static str,
    pub(crate) apply: fn(&mut Draft, &BuildOptions) -> bool,
}

/// Every rewrite, in the order they apply. The order matters: the counting
/// rewrites decide which extends only count before fusing and packing ask,
/// a whole-table count needs the last extend counting, the morsel size is
/// decided on the steps the earlier rewrites left, and sharing a source or
/// hubs asks for a plain (not counting or packing) first extend.
pub(crate) const REWRITES: &[Rewrite] = &[
    Rewrite {
        name: "count-last-extend",
        apply: count_last_extend,
    },
    Rewrite {
        name: "fuse-counted-pair",
        apply: fuse_counted_pair,
    },
    Rewrite {
        name: "pack-last-extend",
        apply: pack_last_extend,
    },
    Rewrite {
        name: "count-whole-rel-table",
        apply: count_whole_rel_table,
    },
    Rewrite {
        name: "scan-morsel-size",
        apply: scan_morsel_size,
    },
    Rewrite {
        name: "split-single-source",
        apply: split_single_source,
    },
    Rewrite {
        name: "share-hubs",
        apply: share_hubs,
    },
];

/// Applies [`REWRITES`] in order; the names of those that fired.
pub(crate) fn apply_rewrites(draft: &mut Draft, opts: &BuildOptions) -> Vec<&'static str> {
    REWRITES
        .iter()
        .filter(|r| (r.apply)(draft, opts))
        .map(|r| r.name)
        .collect()
}

/// A last extend whose neighbours, and whose input group, an aggregating
/// sink never reads only counts (see `CountMode::Collapse`); one whose
/// input group the sink reads counts per input tuple (`CountMode::Degrees`).
fn count_last_extend(draft: &mut Draft, opts: &BuildOptions) -> bool {
    let Some(reads) = &opts.sink_reads else {
        return false;
    };
    let b = &draft.b;
    let Some(e) = draft
        .steps
        .last_mut()
        .and_then(|s| s.get_mut::<ExtendSpec>())
    else {
        return false;
    };
    if e.to.is_some() || e.rel_id.is_some() {
        return false;
    }
    let reads_chunk = |chunk: usize| {
        reads
            .iter()
            .any(|s| b.layout.get(*s).is_some_and(|(c, _)| c == chunk))
    };
    if e.properties.is_empty() && !reads_chunk(e.output_chunk) {
        e.collapse = !reads_chunk(e.input_chunk);
        e.degrees = !e.collapse && !e.pad;
    }
    e.collapse || e.degrees
}

/// Lets the last extend of an aggregating pipeline fill each output batch
/// from several tuples of its input batch ([`Extend::pack`]) when the steps
/// after it (property reads, filters, masks) do not read its input group:
/// the groups before that one are flat and fixed for the whole input batch,
/// so every packed tuple still stands for its own match. When the sink
/// reads one node id of the input group (`WITH a, collect(b)`), that id is
/// copied along the output ([`Extend::replicas`]) and the sink reads the
/// copy: a node id key finds its group by an array index, so one aggregate
/// call per batch replaces one per source node. Other keys (values hashed
/// per position) keep one call per source.
fn pack_last_extend(draft: &mut Draft, opts: &BuildOptions) -> bool {
    let Some(reads) = &opts.sink_reads else {
        return false;
    };
    let (steps, b) = (&mut draft.steps, &mut draft.b);
    let Some(i) = steps.iter().rposition(|s| s.is::<ExtendSpec>()) else {
        return false;
    };
    // A replica moves its slot to the output group in the pipeline's one
    // layout, where the filters before the extend would then read it too
    // (from an empty group at their turn: `WHERE id(x) <> id(a)` dropped
    // every tuple of `RETURN collect(id(a)), collect(id(b))`, issue 51).
    let mut read_before = Vec::new();
    for step in &steps[..i] {
        if let Some(p) = step.predicate() {
            p.slots(&mut read_before);
        }
    }
    let (head, tail) = steps.split_at_mut(i + 1);
    let Some(extend) = head.last_mut().and_then(|s| s.get_mut::<ExtendSpec>()) else {
        return false;
    };
    if extend.collapse || extend.degrees || extend.pair.is_some() {
        return false;
    }
    let input = extend.input_chunk;
    let layout = &b.layout;
    let in_input = |s: &SlotId| layout.get(*s).is_some_and(|(c, _)| c == input);
    let reads_input = |e: &BoundExpr| {
        let mut v = Vec::new();
        e.slots(&mut v);
        v.iter().any(in_input)
    };
    // An optional extend's padding filter pads per input tuple over the
    // packed batch (`PadSignal`); no other filter may come between.
    let padded = extend.pad;
    let later_ok = tail
        .iter()
        .all(|step| step.keeps_packing(input, padded, &reads_input));
    if !later_ok {
        return false;
    }
    let read: Vec<(SlotId, usize)> = reads
        .iter()
        .filter_map(|s| {
            layout
                .get(*s)
                .filter(|(c, _)| *c == input)
                .map(|p| (*s, p.1))
        })
        .collect();
    match read[..] {
        [] => extend.pack = true,
        [(slot, v)]
            if b.chunks[input][v] == LogicalType::InternalId && !read_before.contains(&slot) =>
        {
            let to = b.add(extend.output_chunk, slot, LogicalType::InternalId);
            extend.replicas.push((v, to));
            extend.pack = true;
        }
        _ => {}
    }
    extend.pack
}

/// Whether a node scan must write its ids: an aggregating sink reads the
/// node (its slot), or a step that is not known to leave them alone follows.
/// A filter over the scanned properties, or the property reads of another
/// node, do not read them; `MATCH (n) RETURN sum(n.x)` then never writes
/// the 2,048 ids of each batch (a tenth of the scan and sum).
pub(crate) fn reads_scanned_ids(
    id_slot: SlotId,
    steps: &[Step],
    sink_reads: Option<&HashSet<SlotId>>,
) -> bool {
    let reads = |e: &BoundExpr| {
        let mut v = Vec::new();
        e.slots(&mut v);
        v.contains(&id_slot)
    };
    sink_reads.is_none_or(|r| r.contains(&id_slot))
        || steps.iter().any(|step| match step {
            Step::Filter(e) => reads(e),
            Step::ScanProperties { node, .. } => *node == id_slot,
            _ => true,
        })
}

/// Rows per morsel of a node scan: [`EXPAND_MORSEL_SIZE`] when several
/// threads run a pipeline that expands its rows (an extend that reads
/// neighbours, an intersection, a cross product), so that a hub's morsel
/// is not most of the work; `MORSEL_SIZE` (the draft's default)
/// otherwise. A counting extend (no neighbour read) costs the same for
/// every row and keeps the larger batches, a fused pair too (its self-loop test scans a node's
/// neighbours, but a vector at a time: 2hop-sel100 on R-MAT 16 runs as fast
/// at 2 threads with the larger morsels). Decided on the built steps, so
/// that an extend fused away or left counting is seen as such. Fires when
/// it picks the smaller size.
fn scan_morsel_size(draft: &mut Draft, opts: &BuildOptions) -> bool {
    let scans = matches!(draft.source, BuiltSource::Scan { .. });
    let expands = draft.steps.iter().any(|step| step.expands());
    let fires = scans && opts.threads > 1 && expands;
    if fires {
        draft.morsel_size = EXPAND_MORSEL_SIZE;
    }
    fires
}

/// A pipeline from one tuple runs on one worker, however much its extends
/// expand (a 4-hop expansion from one node: 6.25 M tuples on seed 004's
/// graph). When the tuple's first extend has another extend after it,
/// every worker produces the tuple, repeats the cheap steps before that
/// extend (lookups, property reads, filters: deterministic, so every worker
/// sees the same tuples), and the workers share the extend's rels
/// ([`Extend::split`]), so everything after it runs in parallel. Only on
/// several threads.
fn split_single_source(draft: &mut Draft, opts: &BuildOptions) -> bool {
    if opts.threads <= 1 || !matches!(draft.source, BuiltSource::Single(_)) {
        return false;
    }
    let Some(extend) = shareable_first_extend(&mut draft.steps) else {
        return false;
    };
    extend.split = Some(Arc::new(SplitClaims::default()));
    draft.source = BuiltSource::Broadcast;
    true
}

/// The first extend of `steps` when the workers may share its rels
/// ([`split_single_source`], [`share_hubs`]): the steps before it are
/// deterministic, so every worker that repeats them sees the same tuples
/// in the same order; another extend or intersection follows, so sharing
/// pays; and it is a plain extend (no exclusion, counting, fusing,
/// packing, padding or chain).
fn shareable_first_extend(steps: &mut [Box<dyn PhysicalStep>]) -> Option<&mut ExtendSpec> {
    let i = steps.iter().position(|s| s.is::<ExtendSpec>())?;
    let before_ok = steps[..i].iter().all(|s| s.repeatable());
    let more = steps[i + 1..]
        .iter()
        .any(|s| s.is::<ExtendSpec>() || s.is::<IntersectSpec>());
    let e = steps[i].get_mut::<ExtendSpec>()?;
    let plain = e.exclude.is_empty()
        && !e.collapse
        && !e.degrees
        && e.pair.is_none()
        && !e.pack
        && !e.pad
        && e.chain.is_none()
        && e.split.is_none()
        && e.hubs.is_none();
    (before_ok && more && plain).then_some(e)
}

/// Lets the workers share the hubs of an aggregating pipeline that scans a
/// node table and extends from the scanned node, then again (see
/// [`HubSplit`]): the first extend defers nodes with many rels, and a
/// second run of the pipeline (`run_pipelines`) scans them on every
/// worker and splits their rels. The sink must allow it
/// ([`BuildOptions::share_hubs`]: it must not count on each scanned node
/// being in one worker's table, see `keyed_by_scanned_node`). Fires when
/// the extend defers hubs; whether there are any is known at run time
/// (PROFILE: `Hubs shared by the workers`).
pub(crate) fn share_hubs(draft: &mut Draft, opts: &BuildOptions) -> bool {
    if !opts.share_hubs {
        return false;
    }
    let BuiltSource::Scan { id, hubs, .. } = &mut draft.source else {
        return false;
    };
    let Some(extend) = shareable_first_extend(&mut draft.steps) else {
        return false;
    };
    if extend.to.is_none() || extend.from != *id {
        return false;
    }
    let shared = Arc::new(HubSplit::default());
    extend.hubs = Some(Arc::clone(&shared));
    *hubs = Some(shared);
    true
}

/// `MATCH (a)-[:R]->(b)-[:R]->(c) RETURN count(*)` started at `b`: the first
/// extend writes every `a` only for the counting extend after it to add
/// `b`'s other degree once per `a`. When nothing reads the `a`s (or `b`'s
/// group) but the isomorphism test between the two rels, the counting
/// extend multiplies `b`'s two degrees instead (`CountExtend::pair`) and the first
/// extend goes; PROFILE shows the two as one operator.
fn fuse_counted_pair(draft: &mut Draft, opts: &BuildOptions) -> bool {
    let Some(reads) = &opts.sink_reads else {
        return false;
    };
    let (steps, layout) = (&mut draft.steps, &draft.b.layout);
    let n = steps.len();
    if n < 2 {
        return false;
    }
    let (head, tail) = steps.split_at_mut(n - 1);
    let (Some(first), Some(second)) = (
        head[n - 2].get::<ExtendSpec>(),
        tail[0].get_mut::<ExtendSpec>(),
    ) else {
        return false;
    };
    if first.collapse || first.pair.is_some() || first.pad || !second.collapse {
        return false;
    }
    let (first_table, data, first_fwd, first_from) =
        (&first.rel_table, &first.data, &first.fwd, &first.from);
    let (first_input, first_output, first_rel) =
        (&first.input_chunk, &first.output_chunk, &first.rel_id);
    let (first_properties, first_exclude) = (&first.properties, &first.exclude);
    let (rel_table, fwd, from) = (&second.rel_table, &second.fwd, &second.from);
    let input_chunk = &mut second.input_chunk;
    let exclude = &mut second.exclude;
    let pair = &mut second.pair;
    let from_input = first_from.0 == *first_input && from == first_from;
    let chained = *input_chunk == *first_output;
    let unread = !reads
        .iter()
        .any(|s| layout.get(*s).is_some_and(|(c, _)| c == *first_input));
    // The counting extend's only exclusions test the first extend's rel.
    let excludes_first = exclude
        .iter()
        .all(|(rel, _)| rel.0 == *first_output && Some(rel.1) == *first_rel);
    if !(from_input
        && chained
        && unread
        && excludes_first
        && first_properties.is_empty()
        && first_exclude.is_empty())
    {
        return false;
    }
    let shared = match (
        exclude.is_empty(),
        first_table == rel_table,
        first_fwd == fwd,
    ) {
        (true, _, _) | (false, false, _) => SharedRels::None,
        (false, true, true) => SharedRels::All,
        // The table's count says whether there is a self loop to look for
        // in the neighbours (which that would pin and scan).
        (false, true, false) if data.self_loops == Some(0) => SharedRels::None,
        (false, true, false) => SharedRels::SelfLoops,
    };
    *pair = Some(FusedExtend {
        data: Arc::clone(data),
        fwd: *first_fwd,
        shared,
        output_chunk: *first_output,
    });
    *input_chunk = *first_input;
    exclude.clear();
    steps.remove(n - 2);
    // ops[i + 1] names steps[i]: one operator, named after both.
    let first = draft.ops.remove(n - 1);
    if let (Some((a, _)), Some(Some((b, _)))) = (first, draft.ops.get_mut(n - 1)) {
        *b = format!("{a} × {b}");
    }
    true
}

/// `MATCH (a:A)-[:R]->(b:B) RETURN count(*)`: a counting extend straight
/// over a scan of every node of one end sums the degree of every node, which
/// is the rel table's number of live rels (a rel table has one table at each
/// end; deleted nodes have no live rels). The pipeline becomes one tuple
/// standing for that many: no scan and no CSR read. PROFILE shows
/// `CountRels`.
fn count_whole_rel_table(draft: &mut Draft, _opts: &BuildOptions) -> bool {
    let (BuiltSource::Scan { id, columns, .. }, [step]) = (&draft.source, &draft.steps[..]) else {
        return false;
    };
    let Some(ExtendSpec {
        data,
        from,
        exclude,
        properties,
        collapse: true,
        pair: None,
        ..
    }) = step.get::<ExtendSpec>()
    else {
        return false;
    };
    if from != id || !columns.is_empty() || !exclude.is_empty() || !properties.is_empty() {
        return false;
    }
    let count = data.num_rels;
    draft.source = BuiltSource::Counted(Arc::new(AtomicBool::new(false)), count);
    draft.steps.clear();
    // ops[0] names the scan, ops[1] the extend: one operator.
    let extend = draft.ops.get(1).cloned().flatten();
    draft.ops = match extend {
        Some((label, chunk)) => {
            let label = format!("CountRels ({count} rels, from the table's size) × {label}");
            vec![Some((label, chunk))]
        }
        None => vec![None],
    };
    true
}
