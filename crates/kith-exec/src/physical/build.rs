//! From a pipeline's plan (source and steps) to its [`PipelineShape`]:
//! the slot layout, the resolved steps (one [`PhysicalStep`] each, see
//! [`Resolver::step`]), then the rewrites that apply ([`REWRITES`]). The
//! build sides of its cross products come in as results ([`BuildResults`]):
//! nothing here runs.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kith_common::constants::{MORSEL_SIZE, VECTOR_CAPACITY};
use kith_common::{Chunk, Error, LogicalType, Result};
use kith_planner::bound::PropertyPredicate;
use kith_planner::expr::{BoundExpr, SlotId};
use kith_planner::plan::{
    ExtendDirection, HashJoinKey, IntersectRel as PlanIntersectRel, PropertyRead, Source, Step,
};
use kith_sched::MorselDispenser;

use crate::operator::cross_product::CrossProductSpec;
use crate::operator::extend::ExtendSpec;
use crate::operator::fill_nulls::FillNullsSpec;
use crate::operator::filter::{ChainEndSpec, FilterSpec, PadFilterSpec};
use crate::operator::intersect::{IntersectRel, IntersectSpec};
use crate::operator::join_rows::PartRows;
use crate::operator::lookup_node::LookupNodeSpec;
use crate::operator::scan_properties::ScanPropertiesSpec;
use crate::operator::semi_mask::SemiMaskSpec;
use crate::operator::{Pos, QueryContext};

use crate::physical::*;

/// A step of the plan with its place in an OPTIONAL MATCH chain, if in
/// one: (whether it is the chain's first step, whether its last).
pub(super) type PlacedStep<'a> = (&'a Step, Option<(bool, bool)>);

impl PipelineShape {
    /// Resolves a pipeline against storage and the results of its build
    /// sides (`builds`, in the order of [`PipelinePlan::deps`]), then
    /// applies the rewrites ([`REWRITES`]). Runs nothing: the run layer ran
    /// the build sides before (`run/deps.rs`). `pipeline`: its PROFILE
    /// number, taken by the caller before its build sides took theirs.
    pub(crate) fn build(
        plan: &PipelinePlan<'_>,
        opts: &BuildOptions,
        ctx: &Arc<QueryContext>,
        pipeline: Option<usize>,
        builds: BuildResults,
    ) -> Result<PipelineShape> {
        let mut r = Resolver {
            ctx,
            threads: opts.threads,
            plan_steps: plan.steps,
            b: LayoutBuilder::default(),
            builds,
            note: None,
        };
        let first = r.b.add_chunk();
        let sink_reads = opts.sink_reads.as_ref();
        let (source, source_nulls) =
            r.source(plan.source, opts.rows.clone(), opts.counted, sink_reads)?;
        let mut ops = vec![Some((source_label(plan.source, ctx), first))];
        let mut steps: Vec<Box<dyn PhysicalStep>> = Vec::new();
        if !source_nulls.is_empty() {
            steps.push(Box::new(FillNullsSpec(source_nulls)));
            ops.push(None);
        }
        for (step, place) in flatten_chains(plan.steps) {
            if let Step::Alias { slot, of } = step {
                let at =
                    r.b.layout
                        .get(*of)
                        .ok_or_else(|| Error::internal("alias of an unplaced slot"))?;
                r.b.layout.positions.insert(*slot, at);
                continue;
            }
            let (built, nulls) = r.step(step, place)?;
            let mut label = step_label(step, ctx);
            if let Some(note) = r.note.take() {
                label.push_str(note);
            }
            steps.push(built);
            ops.push(Some((label, r.b.chunks.len() - 1)));
            if !nulls.is_empty() {
                steps.push(Box::new(FillNullsSpec(nulls)));
                ops.push(None);
            }
            if let Some((_, true)) = place {
                steps.push(Box::new(ChainEndSpec));
                ops.push(None);
            }
        }
        let mut draft = Draft {
            source,
            steps,
            ops,
            b: r.b,
            morsel_size: MORSEL_SIZE,
        };
        let rewrites = apply_rewrites(&mut draft, opts);
        let Draft {
            mut source,
            steps,
            ops,
            b,
            morsel_size,
        } = draft;
        if let BuiltSource::Scan { data, morsels, .. } = &mut source {
            *morsels = Arc::new(MorselDispenser::with_regions(
                data.num_rows,
                morsel_size,
                opts.threads,
            ));
        }
        let stats = match (&ctx.profile, pipeline) {
            (Some(profile), Some(n)) => {
                profile.rewrites(n, &rewrites);
                ops.iter()
                    .map(|op| {
                        op.as_ref()
                            .map(|(label, chunk)| (profile.register(n, label.clone()), *chunk))
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        Ok(PipelineShape {
            ctx: Arc::clone(ctx),
            layout: Arc::new(b.layout.clone()),
            builder: b,
            source,
            steps,
            stats,
            labels: ops.into_iter().flatten().map(|(label, _)| label).collect(),
            rewrites,
        })
    }
}

/// The plan's steps with each OPTIONAL MATCH chain's steps in line, each
/// knowing its place (see `Step::OptionalChain`).
pub(super) fn flatten_chains(plan_steps: &[Step]) -> Vec<PlacedStep<'_>> {
    let mut flat = Vec::new();
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
    flat
}

/// Resolves one pipeline's source and steps against storage, growing its
/// layout.
struct Resolver<'a> {
    ctx: &'a Arc<QueryContext>,
    threads: usize,
    /// The pipeline's whole plan (a left outer join looks for its padding
    /// filter).
    plan_steps: &'a [Step],
    b: LayoutBuilder,
    /// The build sides' results, taken by the cross products in turn.
    builds: BuildResults,
    /// What the last resolved step adds to its label (how a hash join
    /// probes).
    note: Option<&'static str>,
}

impl Resolver<'_> {
    /// The position of a slot already placed in the layout.
    fn pos(&self, slot: SlotId, what: &str) -> Result<Pos> {
        self.b
            .layout
            .get(slot)
            .ok_or_else(|| Error::internal(format!("{what} an unplaced slot")))
    }

    /// The pipeline's source in the layout's first chunk, and the vectors
    /// of the properties its table lacks.
    fn source(
        &mut self,
        plan_source: &Source,
        rows: Option<PartRows>,
        counted: bool,
        sink_reads: Option<&HashSet<SlotId>>,
    ) -> Result<(BuiltSource, Vec<Pos>)> {
        let b = &mut self.b;
        let first = 0;
        Ok(match plan_source {
            Source::Single => (
                BuiltSource::Single(Arc::new(AtomicBool::new(false))),
                Vec::new(),
            ),
            Source::ScanNodes {
                table,
                id_slot,
                properties,
            } => {
                let data = node_data(self.ctx, *table)?;
                let id = (first, b.add(first, *id_slot, LogicalType::InternalId));
                let (cols, nulls) = place_reads(b, first, properties, |p| data.column_of(p))?;
                let columns = cols.into_iter().map(|(c, v)| (c, (first, v))).collect();
                // Cut once the steps are known (see `scan_morsel_size`).
                let morsels = Arc::new(MorselDispenser::with_regions(0, 1, 1));
                let source = BuiltSource::Scan {
                    table: *table,
                    data,
                    morsels,
                    id,
                    write_ids: reads_scanned_ids(*id_slot, self.plan_steps, sink_reads),
                    columns,
                    hubs: None,
                };
                (source, nulls)
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
                    self.threads,
                ));
                let source = BuiltSource::Rows {
                    rows,
                    morsels,
                    chunk: first,
                    columns: positions,
                    counted,
                };
                (source, Vec::new())
            }
        })
    }

    /// One plan step resolved, and the vectors of the properties it reads
    /// that its table lacks (filled with NULLs after it). This match is
    /// where a new kind of step is resolved into its operator's spec.
    fn step(
        &mut self,
        step: &Step,
        place: Option<(bool, bool)>,
    ) -> Result<(Box<dyn PhysicalStep>, Vec<Pos>)> {
        let none = Vec::new();
        Ok(match step {
            Step::CrossProduct {
                columns,
                key,
                optional,
                ..
            } => (
                Box::new(self.cross_product(columns, key.as_ref(), *optional)?),
                none,
            ),
            Step::Filter(e) => (
                Box::new(FilterSpec {
                    predicate: e.clone(),
                    chain: place.is_some(),
                }),
                none,
            ),
            Step::OptionalChain(_) => {
                return Err(Error::internal("an optional chain inside another"))
            }
            Step::Alias { .. } => return Err(Error::internal("an alias left among the steps")),
            Step::SemiMask {
                node,
                table,
                predicate,
            } => (Box::new(self.semi_mask(*node, *table, predicate)?), none),
            Step::LookupNode {
                table,
                key,
                each_item,
                id_slot,
            } => (
                Box::new(self.lookup_node(*table, key, *each_item, *id_slot)?),
                none,
            ),
            Step::Extend { .. } => {
                let (spec, nulls) = self.extend(step, place)?;
                (Box::new(spec), nulls)
            }
            Step::PadFilter { predicate, node } => {
                let (chunk, _) = self.pos(*node, "optional filter of")?;
                let spec = PadFilterSpec {
                    predicate: predicate.clone(),
                    chunk,
                };
                (Box::new(spec), none)
            }
            Step::Intersect {
                to,
                to_table,
                rels,
                distinct,
                exclude,
            } => (
                Box::new(self.intersect((*to, *to_table), rels, distinct, exclude)?),
                none,
            ),
            Step::ScanProperties {
                node, properties, ..
            } if properties.iter().all(|p| p.property.is_none()) => {
                // Nothing to read (the table has none of them, or the
                // node matches no table): all NULL.
                let node = self.pos(*node, "property scan of")?;
                let (_, missing) = place_reads(&mut self.b, node.0, properties, |_| None)?;
                (Box::new(FillNullsSpec(missing)), none)
            }
            Step::ScanProperties {
                node,
                table,
                properties,
            } => {
                let (spec, nulls) = self.scan_properties(*node, *table, properties)?;
                (Box::new(spec), nulls)
            }
        })
    }

    /// A cross product or hash join: the rows (and index) of its build
    /// side, which ran before (or, described only, none), and its columns
    /// placed in the layout.
    fn cross_product(
        &mut self,
        columns: &[(SlotId, LogicalType)],
        key: Option<&HashJoinKey>,
        optional: bool,
    ) -> Result<CrossProductSpec> {
        let (rows, index, ran) = match &mut self.builds {
            BuildResults::Ready(results) => {
                let built = results
                    .next()
                    .ok_or_else(|| Error::internal("a cross product without its build side"))?;
                (built.rows, built.index, true)
            }
            BuildResults::NotRun => {
                let types: Vec<LogicalType> = columns.iter().map(|c| c.1.clone()).collect();
                (Arc::new(Chunk::new(&types, 0)), None, false)
            }
        };
        let index = match (key, index) {
            (Some(k), Some(index)) => Some((k.probe.clone(), index)),
            (Some(_), None) if ran => return Err(Error::internal("hash join without its index")),
            _ => None,
        };
        let b = &mut self.b;
        let input_chunk = b.chunks.len() - 1;
        // Unique build keys, and no padding filter to apply per tuple:
        // probed a batch at a time, the build columns written into the
        // input group.
        let padded = optional
            && self
                .plan_steps
                .iter()
                .any(|s| matches!(s, Step::PadFilter { .. }));
        let unique = !padded && index.as_ref().is_some_and(|(_, i)| i.unique());
        self.note = if unique {
            Some(" (unique keys, probed by batch)")
        } else if !ran && key.is_some() && !padded {
            // Uniqueness is a property of the build rows, not yet run.
            Some(" (unique keys: decided at run time)")
        } else {
            None
        };
        let out = if unique { input_chunk } else { b.add_chunk() };
        let vectors: Vec<usize> = columns
            .iter()
            .map(|(slot, ty)| b.add(out, *slot, ty.clone()))
            .collect();
        if vectors.is_empty() && !unique {
            b.add_anonymous(out, LogicalType::InternalId);
        }
        Ok(CrossProductSpec {
            rows,
            input_chunk,
            output_chunk: out,
            columns: vectors,
            index,
            optional,
            unique,
        })
    }

    /// A semijoin mask: the part's shared mask of the node's table.
    fn semi_mask(
        &mut self,
        node: SlotId,
        table: kith_common::TableId,
        predicate: &PropertyPredicate,
    ) -> Result<SemiMaskSpec> {
        let num_nodes = node_data(self.ctx, table)?.num_rows;
        let node = self.pos(node, "semijoin mask of")?;
        Ok(SemiMaskSpec {
            node,
            mask: self.ctx.semi_masks.get_or_add(table, predicate, num_nodes),
        })
    }

    /// A primary-key lookup, its id in the newest chunk (or, for the items
    /// of a list, a new one).
    fn lookup_node(
        &mut self,
        table: kith_common::TableId,
        key: &BoundExpr,
        each_item: bool,
        id_slot: SlotId,
    ) -> Result<LookupNodeSpec> {
        let data = node_data(self.ctx, table)?;
        let pk_type = self
            .ctx
            .version
            .catalog
            .table(table)
            .and_then(|e| e.primary_key())
            .map(|p| p.ty.clone())
            .ok_or_else(|| Error::internal("lookup in a table without a key"))?;
        // Items become a group of their own; one key per tuple fills the
        // newest.
        let b = &mut self.b;
        let chunk = if each_item {
            b.add_chunk()
        } else {
            b.chunks.len() - 1
        };
        let vector = b.add(chunk, id_slot, LogicalType::InternalId);
        Ok(LookupNodeSpec {
            table,
            data,
            key: key.clone(),
            each_item,
            pk_type,
            pos: (chunk, vector),
        })
    }

    /// An extend, its neighbours, rels and properties in a new chunk.
    fn extend(
        &mut self,
        step: &Step,
        place: Option<(bool, bool)>,
    ) -> Result<(ExtendSpec, Vec<Pos>)> {
        let Step::Extend {
            rel_table,
            direction,
            from,
            to,
            to_table,
            rel_id,
            properties,
            exclude,
            optional,
        } = step
        else {
            return Err(Error::internal("an extend expected"));
        };
        let data = rel_data(self.ctx, *rel_table)?;
        let exclude = exclude
            .iter()
            .map(|(rel, gate)| {
                Ok((
                    self.pos(*rel, "extend exclusion of")?,
                    self.pos(*gate, "extend exclusion of")?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let from = self.pos(*from, "extend from")?;
        let b = &mut self.b;
        let input_chunk = b.chunks.len() - 1;
        let out = b.add_chunk();
        let to = to.map(|s| (b.add(out, s, LogicalType::InternalId), *to_table));
        let rel_id = rel_id.map(|s| b.add(out, s, LogicalType::InternalId));
        let (properties, missing) = place_reads(b, out, properties, |p| data.column_of(p))?;
        if to.is_none() && rel_id.is_none() && b.chunks[out].is_empty() {
            // The chunk still needs a vector to carry its length.
            b.add_anonymous(out, LogicalType::InternalId);
        }
        let spec = ExtendSpec {
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
        };
        Ok((spec, missing))
    }

    /// An intersection, the bound node and the rels wanted in a new chunk.
    fn intersect(
        &mut self,
        (to, to_table): (SlotId, kith_common::TableId),
        rels: &[PlanIntersectRel],
        distinct: &[(usize, usize)],
        exclude: &[(usize, SlotId)],
    ) -> Result<IntersectSpec> {
        let what = "intersect reads";
        let exclude = exclude
            .iter()
            .map(|(i, s)| Ok((*i, self.pos(*s, what)?)))
            .collect::<Result<Vec<_>>>()?;
        let froms = rels
            .iter()
            .map(|r| self.pos(r.from, what))
            .collect::<Result<Vec<_>>>()?;
        let b = &mut self.b;
        let input_chunk = b.chunks.len() - 1;
        let out = b.add_chunk();
        let to_vector = b.add(out, to, LogicalType::InternalId);
        let mut built = Vec::with_capacity(rels.len());
        for (r, from) in rels.iter().zip(froms) {
            let rel_id = r.rel_id.map(|s| b.add(out, s, LogicalType::InternalId));
            built.push(IntersectRel {
                rel_table: r.rel_table,
                data: rel_data(self.ctx, r.rel_table)?,
                fwd: r.direction == ExtendDirection::Fwd,
                from,
                rel_id,
            });
        }
        Ok(IntersectSpec {
            rels: built,
            to: to_vector,
            to_table,
            to_nodes: node_data(self.ctx, to_table)?.num_rows,
            input_chunk,
            output_chunk: out,
            distinct: distinct.to_vec(),
            exclude,
        })
    }

    /// Property reads of a bound node, into its own chunk.
    fn scan_properties(
        &mut self,
        node: SlotId,
        table: kith_common::TableId,
        properties: &[PropertyRead],
    ) -> Result<(ScanPropertiesSpec, Vec<Pos>)> {
        let data = node_data(self.ctx, table)?;
        let node = self.pos(node, "property scan of")?;
        let (columns, missing) =
            place_reads(&mut self.b, node.0, properties, |p| data.column_of(p))?;
        let spec = ScanPropertiesSpec {
            data,
            node,
            columns,
        };
        Ok((spec, missing))
    }
}
