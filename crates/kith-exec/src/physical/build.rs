//! From a pipeline's plan (source and steps) to its [`PipelineShape`]:
//! the slot layout, the resolved steps, then the rewrites that apply.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kith_common::constants::VECTOR_CAPACITY;
use kith_common::{Error, LogicalType, Result, Span};
use kith_planner::expr::{BoundExpr, SlotId};
use kith_planner::plan::{ExtendDirection, Source, Step};
use kith_sched::{MorselDispenser, Scheduler};

use crate::operator::intersect::{IntersectRel, IntersectSpec};
use crate::operator::join_rows::PartRows;
use crate::operator::QueryContext;

use crate::physical::*;

impl PipelineShape {
    /// Resolves a pipeline against storage; the build sides of cross
    /// products run (to completion) here.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build(
        plan_source: &Source,
        plan_steps: &[Step],
        ctx: &Arc<QueryContext>,
        rows: Option<PartRows>,
        sched: &Scheduler,
        threads: usize,
        counted: bool,
        sink_reads: Option<&HashSet<SlotId>>,
    ) -> Result<PipelineShape> {
        let mut b = LayoutBuilder::default();
        let first = b.add_chunk();
        let mut source_nulls = Vec::new();
        let source = match plan_source {
            Source::Single => BuiltSource::Single(Arc::new(AtomicBool::new(false))),
            Source::ScanNodes {
                table,
                id_slot,
                properties,
            } => {
                let data = node_data(ctx, *table)?;
                let id = (first, b.add(first, *id_slot, LogicalType::InternalId));
                let (cols, nulls) = place_reads(&mut b, first, properties, |p| data.column_of(p))?;
                source_nulls = nulls;
                let columns = cols.into_iter().map(|(c, v)| (c, (first, v))).collect();
                // Cut once the steps are known (see `scan_morsel_size`).
                let morsels = Arc::new(MorselDispenser::with_regions(0, 1, 1));
                BuiltSource::Scan {
                    table: *table,
                    data,
                    morsels,
                    id,
                    write_ids: reads_scanned_ids(*id_slot, plan_steps, sink_reads),
                    columns,
                    hubs: None,
                }
            }
            Source::Rows { columns } => {
                let rows = rows.ok_or_else(|| Error::internal("row source without rows"))?;
                let positions: Vec<(usize, usize)> = columns
                    .iter()
                    .map(|(slot, ty)| (first, b.add(first, *slot, ty.clone())))
                    .collect();
                if positions.is_empty() {
                    b.add_anonymous(first, LogicalType::InternalId);
                }
                let morsels = Arc::new(MorselDispenser::with_regions(
                    rows.span(),
                    VECTOR_CAPACITY as u64,
                    threads,
                ));
                BuiltSource::Rows {
                    rows,
                    morsels,
                    chunk: first,
                    columns: positions,
                    counted,
                }
            }
        };
        let pipeline = ctx.profile.as_ref().map(|p| p.next_pipeline());
        let register = |label: String, chunk: usize| {
            ctx.profile
                .as_ref()
                .zip(pipeline)
                .map(|(p, n)| (p.register(n, label), chunk))
        };
        let mut stats = vec![register(source_label(plan_source, ctx), first)];
        let mut steps = Vec::new();
        if !source_nulls.is_empty() {
            steps.push(Built::FillNulls(source_nulls));
            stats.push(None);
        }
        // An OPTIONAL MATCH chain's steps run in line, each knowing its
        // place (see `Step::OptionalChain`): (step, (first, last)).
        let mut flat: Vec<(&Step, Option<(bool, bool)>)> = Vec::new();
        for step in plan_steps {
            match step {
                Step::OptionalChain(inner) => {
                    let last = inner
                        .iter()
                        .rposition(|s| !matches!(s, Step::Alias { .. }))
                        .unwrap_or(0);
                    for (i, s) in inner.iter().enumerate() {
                        flat.push((s, Some((i == 0, i == last))));
                    }
                }
                s => flat.push((s, None)),
            }
        }
        for (step, place) in flat {
            if let Step::Alias { slot, of } = step {
                let at = b
                    .layout
                    .get(*of)
                    .ok_or_else(|| Error::internal("alias of an unplaced slot"))?;
                b.layout.positions.insert(*slot, at);
                continue;
            }
            let mut nulls = Vec::new();
            steps.push(match step {
                Step::CrossProduct {
                    build,
                    columns,
                    key,
                    optional,
                } => {
                    let shape = PipelineShape::build(
                        &build.source,
                        &build.steps,
                        ctx,
                        None,
                        sched,
                        threads,
                        false,
                        None,
                    )?;
                    let mut outputs: Vec<BoundExpr> = columns
                        .iter()
                        .map(|(slot, ty)| BoundExpr::slot(*slot, ty.clone(), Span::new(0, 0)))
                        .collect();
                    let mut types: Vec<LogicalType> = columns.iter().map(|c| c.1.clone()).collect();
                    // A hash join's build key is one more output column,
                    // indexed, then dropped.
                    if let Some(k) = key {
                        outputs.push(k.build.clone());
                        types.push(k.build.ty.clone());
                    }
                    let chunks = collect_all(
                        vec![shape],
                        outputs,
                        &types,
                        ctx,
                        sched,
                        threads,
                        None,
                        None,
                        false,
                    )?;
                    let mut rows = concat(chunks, &types);
                    let index = match key {
                        Some(k) => {
                            let keys = rows
                                .columns
                                .pop()
                                .ok_or_else(|| Error::internal("hash join without its key"))?;
                            let index = build_join_index(keys, ctx, sched, threads)?;
                            Some((k.probe.clone(), Arc::new(index)))
                        }
                        None => None,
                    };
                    let rows = Arc::new(rows);
                    let input_chunk = b.chunks.len() - 1;
                    // Unique build keys, and no padding filter to apply per
                    // tuple: probed a batch at a time, the build columns
                    // written into the input group.
                    let padded = *optional
                        && plan_steps
                            .iter()
                            .any(|s| matches!(s, Step::PadFilter { .. }));
                    let unique = !padded && index.as_ref().is_some_and(|(_, i)| i.unique());
                    let out = if unique { input_chunk } else { b.add_chunk() };
                    let vectors: Vec<usize> = columns
                        .iter()
                        .map(|(slot, ty)| b.add(out, *slot, ty.clone()))
                        .collect();
                    if vectors.is_empty() && !unique {
                        b.add_anonymous(out, LogicalType::InternalId);
                    }
                    Built::CrossProduct {
                        rows,
                        input_chunk,
                        output_chunk: out,
                        columns: vectors,
                        index,
                        optional: *optional,
                        unique,
                    }
                }
                Step::Filter(e) => match place {
                    Some(_) => Built::ChainFilter(e.clone()),
                    None => Built::Filter(e.clone()),
                },
                Step::OptionalChain(_) => {
                    return Err(Error::internal("an optional chain inside another"))
                }
                Step::Alias { .. } => return Err(Error::internal("an alias left among the steps")),
                Step::SemiMask {
                    node,
                    table,
                    predicate,
                } => {
                    let num_nodes = node_data(ctx, *table)?.num_rows;
                    let node = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("semijoin mask of an unplaced node"))?;
                    Built::SemiMask {
                        node,
                        mask: ctx.semi_masks.get_or_add(*table, predicate, num_nodes),
                    }
                }
                Step::LookupNode {
                    table,
                    key,
                    each_item,
                    id_slot,
                } => {
                    let data = node_data(ctx, *table)?;
                    let pk_type = ctx
                        .version
                        .catalog
                        .table(*table)
                        .and_then(|e| e.primary_key())
                        .map(|p| p.ty.clone())
                        .ok_or_else(|| Error::internal("lookup in a table without a key"))?;
                    // Items become a group of their own; one key per tuple
                    // fills the newest.
                    let chunk = if *each_item {
                        b.add_chunk()
                    } else {
                        b.chunks.len() - 1
                    };
                    let vector = b.add(chunk, *id_slot, LogicalType::InternalId);
                    Built::LookupNode {
                        table: *table,
                        data,
                        key: key.clone(),
                        each_item: *each_item,
                        pk_type,
                        pos: (chunk, vector),
                    }
                }
                Step::Extend {
                    rel_table,
                    direction,
                    from,
                    to,
                    to_table,
                    rel_id,
                    properties,
                    exclude,
                    optional,
                } => {
                    let data = rel_data(ctx, *rel_table)?;
                    let pos = |s: &SlotId| {
                        b.layout
                            .get(*s)
                            .ok_or_else(|| Error::internal("extend exclusion of an unplaced slot"))
                    };
                    let exclude = exclude
                        .iter()
                        .map(|(rel, gate)| Ok((pos(rel)?, pos(gate)?)))
                        .collect::<Result<Vec<_>>>()?;
                    let from = b
                        .layout
                        .get(*from)
                        .ok_or_else(|| Error::internal("extend from an unplaced slot"))?;
                    let input_chunk = b.chunks.len() - 1;
                    let out = b.add_chunk();
                    let to = to.map(|s| (b.add(out, s, LogicalType::InternalId), *to_table));
                    let rel_id = rel_id.map(|s| b.add(out, s, LogicalType::InternalId));
                    let (properties, missing) =
                        place_reads(&mut b, out, properties, |p| data.column_of(p))?;
                    nulls = missing;
                    if to.is_none() && rel_id.is_none() && b.chunks[out].is_empty() {
                        // The chunk still needs a vector to carry its length.
                        b.add_anonymous(out, LogicalType::InternalId);
                    }
                    Built::Extend {
                        rel_table: *rel_table,
                        data,
                        fwd: *direction == ExtendDirection::Fwd,
                        from,
                        input_chunk,
                        output_chunk: out,
                        to,
                        rel_id,
                        properties,
                        exclude,
                        collapse: false,
                        degrees: false,
                        pair: None,
                        pack: false,
                        replicas: Vec::new(),
                        pad: *optional,
                        chain: place.map(|p| p.0),
                        split: None,
                        hubs: None,
                    }
                }
                Step::PadFilter { predicate, node } => {
                    let (chunk, _) = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("optional filter of an unplaced node"))?;
                    Built::PadFilter {
                        predicate: predicate.clone(),
                        chunk,
                    }
                }
                Step::Intersect {
                    to,
                    to_table,
                    rels,
                    distinct,
                    exclude,
                } => {
                    let pos = |s: &SlotId| {
                        b.layout
                            .get(*s)
                            .ok_or_else(|| Error::internal("intersect reads an unplaced slot"))
                    };
                    let exclude = exclude
                        .iter()
                        .map(|(i, s)| Ok((*i, pos(s)?)))
                        .collect::<Result<Vec<_>>>()?;
                    let froms = rels
                        .iter()
                        .map(|r| pos(&r.from))
                        .collect::<Result<Vec<_>>>()?;
                    let input_chunk = b.chunks.len() - 1;
                    let out = b.add_chunk();
                    let to_vector = b.add(out, *to, LogicalType::InternalId);
                    let mut built = Vec::with_capacity(rels.len());
                    for (r, from) in rels.iter().zip(froms) {
                        let rel_id = r.rel_id.map(|s| b.add(out, s, LogicalType::InternalId));
                        built.push(IntersectRel {
                            rel_table: r.rel_table,
                            data: rel_data(ctx, r.rel_table)?,
                            fwd: r.direction == ExtendDirection::Fwd,
                            from,
                            rel_id,
                        });
                    }
                    Built::Intersect(IntersectSpec {
                        rels: built,
                        to: to_vector,
                        to_table: *to_table,
                        to_nodes: node_data(ctx, *to_table)?.num_rows,
                        input_chunk,
                        output_chunk: out,
                        distinct: distinct.clone(),
                        exclude,
                    })
                }
                Step::ScanProperties {
                    node,
                    table: _,
                    properties,
                } if properties.iter().all(|p| p.property.is_none()) => {
                    // Nothing to read (the table has none of them, or the
                    // node matches no table): all NULL.
                    let node = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("property scan of an unplaced node"))?;
                    let (_, missing) = place_reads(&mut b, node.0, properties, |_| None)?;
                    Built::FillNulls(missing)
                }
                Step::ScanProperties {
                    node,
                    table,
                    properties,
                } => {
                    let data = node_data(ctx, *table)?;
                    let node = b
                        .layout
                        .get(*node)
                        .ok_or_else(|| Error::internal("property scan of an unplaced node"))?;
                    let (columns, missing) =
                        place_reads(&mut b, node.0, properties, |p| data.column_of(p))?;
                    nulls = missing;
                    Built::ScanProperties {
                        data,
                        node,
                        columns,
                    }
                }
            });
            let last_chunk = b.chunks.len() - 1;
            let mut label = step_label(step, ctx);
            if let Some(Built::CrossProduct { unique: true, .. }) = steps.last() {
                label.push_str(" (unique keys, probed by batch)");
            }
            stats.push(register(label, last_chunk));
            if !nulls.is_empty() {
                steps.push(Built::FillNulls(nulls));
                stats.push(None);
            }
            if let Some((_, true)) = place {
                steps.push(Built::ChainEnd);
                stats.push(None);
            }
        }
        // A last extend whose neighbours, and whose input group, the sink
        // never reads only counts (see `Extend::collapse`); one whose input
        // group the sink reads counts per input tuple (`Extend::degrees`).
        if let (
            Some(reads),
            Some(Built::Extend {
                to: None,
                rel_id: None,
                properties,
                input_chunk,
                output_chunk,
                collapse,
                degrees,
                pad,
                ..
            }),
        ) = (sink_reads, steps.last_mut())
        {
            let reads_chunk = |chunk: usize| {
                reads
                    .iter()
                    .any(|s| b.layout.get(*s).is_some_and(|(c, _)| c == chunk))
            };
            if properties.is_empty() && !reads_chunk(*output_chunk) {
                *collapse = !reads_chunk(*input_chunk);
                *degrees = !*collapse && !*pad;
            }
        }
        if let Some(reads) = sink_reads {
            fuse_counted_pair(&mut steps, &mut stats, reads, &b.layout, ctx);
            pack_last_extend(&mut steps, reads, &mut b);
        }
        let mut source = source;
        count_whole_rel_table(&mut source, &mut steps, &mut stats, ctx);
        if let BuiltSource::Scan { data, morsels, .. } = &mut source {
            *morsels = Arc::new(MorselDispenser::with_regions(
                data.num_rows,
                scan_morsel_size(&steps, threads),
                threads,
            ));
        }
        if threads > 1 {
            split_single_source(&mut source, &mut steps);
        }
        Ok(PipelineShape {
            ctx: Arc::clone(ctx),
            layout: Arc::new(b.layout.clone()),
            builder: b,
            source,
            steps,
            stats,
        })
    }
}
