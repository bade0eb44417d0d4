//! One worker's operator chain from a [`PipelineShape`].

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kith_common::{Error, Result};

use crate::expression::Evaluator;
use crate::operator::cross_product::{CrossProduct, Probe, UniqueProbe};
use crate::operator::csr_pins::CsrPins;
use crate::operator::extend::{Extend, PairCount};
use crate::operator::fill_nulls::FillNulls;
use crate::operator::filter::{ChainEnd, ChainFilter, ChainSignal, Filter, PadFilter, PadSignal};
use crate::operator::intersect::Intersect;
use crate::operator::join_rows::PartRows;
use crate::operator::lookup_node::LookupNode;
use crate::operator::scan_counted_rows::{Feed, ScanCountedRows};
use crate::operator::scan_node::{NodeMorsels, ScanNodes};
use crate::operator::scan_properties::ScanProperties;
use crate::operator::scan_rows::ScanRows;
use crate::operator::semi_mask::SemiMaskFilter;
use crate::operator::single::SingleTuple;
use crate::operator::Operator;
use crate::profile::Profiled;
use crate::result_set::ResultSet;

use crate::physical::*;

impl PipelineShape {
    /// A fresh operator chain and result set for worker number `worker`
    /// (where its scan takes morsels first).
    pub(crate) fn instantiate(&self, worker: usize) -> Result<(Box<dyn Operator>, ResultSet)> {
        self.instantiate_fed(None, worker)
    }

    /// [`PipelineShape::instantiate`] whose scan of a recursive join's
    /// rows reads the batches put into `feed` (a pipelined join).
    pub(crate) fn instantiate_fed(
        &self,
        feed: Option<Arc<Feed>>,
        worker: usize,
    ) -> Result<(Box<dyn Operator>, ResultSet)> {
        let ctx = &self.ctx;
        let mut op: Box<dyn Operator> = match &self.source {
            BuiltSource::Single(taken) => Box::new(SingleTuple {
                taken: Arc::clone(taken),
                multiplicity: 1,
            }),
            BuiltSource::Broadcast => Box::new(SingleTuple {
                taken: Arc::new(AtomicBool::new(false)),
                multiplicity: 1,
            }),
            BuiltSource::Counted(taken, count) => Box::new(SingleTuple {
                taken: Arc::clone(taken),
                multiplicity: *count,
            }),
            BuiltSource::Scan {
                table,
                data,
                morsels,
                id,
                write_ids,
                columns,
                hubs,
            } => Box::new(ScanNodes::new(
                Arc::clone(ctx),
                *table,
                Arc::clone(data),
                match hubs.as_ref().and_then(|h| h.second_run()) {
                    Some(list) => NodeMorsels::Each(Arc::clone(list), 0),
                    None => NodeMorsels::Shared(Arc::clone(morsels), worker),
                },
                (*id, *write_ids),
                columns.clone(),
            )),
            BuiltSource::Rows {
                rows,
                morsels,
                chunk,
                columns,
                counted: true,
            } => Box::new(ScanCountedRows {
                ctx: Arc::clone(ctx),
                rows: rows.clone(),
                path_cache: Default::default(),
                morsels: Arc::clone(morsels),
                worker,
                chunk: *chunk,
                columns: columns.clone(),
                pending: 0..0,
                piece: 0,
                feed: feed.clone(),
            }),
            BuiltSource::Rows {
                rows,
                morsels,
                chunk,
                columns,
                counted: false,
            } => Box::new(ScanRows {
                ctx: Arc::clone(ctx),
                rows: match rows {
                    PartRows::Chunks(c) => Arc::clone(c),
                    PartRows::Join(_) => {
                        return Err(Error::internal("recursive join rows without their counts"))
                    }
                },
                morsels: Arc::clone(morsels),
                worker,
                chunk: *chunk,
                columns: columns.clone(),
            }),
        };
        let profiled = |op: Box<dyn Operator>, i: usize| -> Box<dyn Operator> {
            match self.stats.get(i) {
                Some(Some((stats, last_chunk))) => {
                    Box::new(Profiled::new(op, Arc::clone(stats), *last_chunk))
                }
                _ => op,
            }
        };
        op = profiled(op, 0);
        // The optional extend's signal, read by the padding filter after
        // it, and whether that extend packs its batches.
        // The last optional extend's signal, whether it packs, and the
        // vectors that copy its source (a padded position keeps them).
        let mut pad_signal: Option<(Arc<PadSignal>, bool, Vec<usize>)> = None;
        // The OPTIONAL MATCH chain's signal, this worker's own.
        let mut chain_signal: Option<Arc<ChainSignal>> = None;
        for (i, step) in self.steps.iter().enumerate() {
            op = match step {
                Built::CrossProduct {
                    rows,
                    input_chunk,
                    output_chunk,
                    columns,
                    index,
                    optional,
                    unique,
                } => {
                    let probe = match index {
                        Some((key, index)) => Some(Probe {
                            key: Evaluator::new(key)?,
                            layout: Arc::clone(&self.layout),
                            index: Arc::clone(index),
                        }),
                        None => None,
                    };
                    let mut c = CrossProduct::new(
                        op,
                        Arc::clone(ctx),
                        Arc::clone(rows),
                        *input_chunk,
                        *output_chunk,
                        columns.clone(),
                        probe,
                    );
                    if *unique {
                        c.unique = Some(UniqueProbe::new(*optional));
                    } else if *optional {
                        let signal = Arc::new(PadSignal::default());
                        pad_signal = Some((Arc::clone(&signal), false, Vec::new()));
                        c.pad = Some(signal);
                    }
                    Box::new(c)
                }
                Built::SemiMask { node, mask } => Box::new(SemiMaskFilter::new(
                    op,
                    Arc::clone(ctx),
                    *node,
                    Arc::clone(mask),
                )),
                Built::Filter(e) => Box::new(Filter {
                    child: op,
                    predicate: Evaluator::new(e)?,
                    layout: Arc::clone(&self.layout),
                    ctx: Arc::clone(ctx),
                }),
                Built::ChainFilter(e) => Box::new(ChainFilter {
                    filter: Filter {
                        child: op,
                        predicate: Evaluator::new(e)?,
                        layout: Arc::clone(&self.layout),
                        ctx: Arc::clone(ctx),
                    },
                    signal: chain_signal.clone().ok_or_else(|| {
                        Error::internal("optional chain filter without its start")
                    })?,
                }),
                Built::ChainEnd => Box::new(ChainEnd {
                    child: op,
                    signal: chain_signal
                        .clone()
                        .ok_or_else(|| Error::internal("optional chain end without its start"))?,
                }),
                Built::PadFilter { predicate, chunk } => Box::new(PadFilter::new(
                    op,
                    Evaluator::new(predicate)?,
                    Arc::clone(&self.layout),
                    Arc::clone(ctx),
                    *chunk,
                    pad_signal
                        .as_ref()
                        .map(|s| Arc::clone(&s.0))
                        .ok_or_else(|| Error::internal("optional filter without its extend"))?,
                    pad_signal.as_ref().filter(|s| s.1).map(|s| s.2.clone()),
                )),
                Built::Extend {
                    rel_table,
                    data,
                    fwd,
                    from,
                    input_chunk,
                    output_chunk,
                    to,
                    rel_id,
                    properties,
                    exclude,
                    collapse,
                    degrees,
                    pair,
                    pack,
                    replicas,
                    pad,
                    chain,
                    split,
                    hubs,
                } => {
                    let mut e = Extend::new(
                        op,
                        Arc::clone(ctx),
                        *rel_table,
                        Arc::clone(data),
                        *fwd,
                        *from,
                        *input_chunk,
                        *output_chunk,
                        *to,
                        *rel_id,
                        properties.clone(),
                    );
                    e.exclude = exclude.clone();
                    e.collapse = *collapse;
                    e.degrees = *degrees;
                    e.pack = *pack;
                    e.replicas = replicas.clone();
                    e.split = split.clone();
                    if let Some(h) = hubs {
                        match h.second_run() {
                            Some(_) => e.split = Some(Arc::clone(&h.claims)),
                            None => e.hubs = Some(Arc::clone(h)),
                        }
                    }
                    if let Some(first) = *chain {
                        if first {
                            chain_signal = Some(Arc::new(ChainSignal::default()));
                        }
                        let signal = chain_signal
                            .as_ref()
                            .ok_or_else(|| Error::internal("optional chain without its start"))?;
                        e.chain = Some((Arc::clone(signal), first));
                    }
                    if *pad {
                        let signal = Arc::new(PadSignal::default());
                        let copies = replicas.iter().map(|r| r.1).collect();
                        pad_signal = Some((Arc::clone(&signal), *pack, copies));
                        e.pad = Some(signal);
                    }
                    if let Some(f) = pair {
                        e.pair = Some(PairCount {
                            pins: CsrPins::new(
                                Arc::clone(&f.data),
                                f.fwd,
                                Vec::new(),
                                Arc::clone(&self.ctx.csr_pins),
                            ),
                            shared: f.shared,
                        });
                        e.pair_output = Some(f.output_chunk);
                    }
                    Box::new(e)
                }
                Built::Intersect(spec) => {
                    Box::new(Intersect::new(op, Arc::clone(ctx), spec.clone()))
                }
                Built::ScanProperties {
                    data,
                    node,
                    columns,
                } => Box::new(ScanProperties::new(
                    op,
                    Arc::clone(ctx),
                    Arc::clone(data),
                    *node,
                    columns.clone(),
                )),
                Built::LookupNode {
                    table,
                    data,
                    key,
                    each_item,
                    pk_type,
                    pos,
                } => Box::new(LookupNode::new(
                    op,
                    Arc::clone(ctx),
                    Arc::clone(&self.layout),
                    Evaluator::new(key)?,
                    *table,
                    pk_type.clone(),
                    data.pk_lookup(&ctx.pager)?,
                    *pos,
                    *each_item,
                )),
                Built::FillNulls(vectors) => Box::new(FillNulls {
                    child: op,
                    vectors: vectors.clone(),
                }),
            };
            op = profiled(op, i + 1);
        }
        Ok((op, self.builder.result_set()))
    }
}
