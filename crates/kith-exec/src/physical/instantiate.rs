//! One worker's operator chain from a [`PipelineShape`].

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kith_common::{Error, Result};

use crate::operator::join_rows::PartRows;
use crate::operator::scan_counted_rows::{Feed, ScanCountedRows};
use crate::operator::scan_node::{NodeMorsels, ScanNodes};
use crate::operator::scan_rows::ScanRows;
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
        let mut op = self.instantiate_source(feed, worker)?;
        op = self.profiled(op, 0);
        let mut chain = WorkerChain {
            ctx: &self.ctx,
            layout: &self.layout,
            pad_signal: None,
            chain_signal: None,
        };
        for (i, step) in self.steps.iter().enumerate() {
            op = step.instantiate(op, &mut chain)?;
            op = self.profiled(op, i + 1);
        }
        Ok((op, self.builder.result_set()))
    }

    /// `op` counted under PROFILE as operator `i` of the pipeline (the
    /// source is 0), unless it has no counters.
    fn profiled(&self, op: Box<dyn Operator>, i: usize) -> Box<dyn Operator> {
        match self.stats.get(i) {
            Some(Some((stats, last_chunk))) => {
                Box::new(Profiled::new(op, Arc::clone(stats), *last_chunk))
            }
            _ => op,
        }
    }

    /// This worker's source operator.
    fn instantiate_source(
        &self,
        feed: Option<Arc<Feed>>,
        worker: usize,
    ) -> Result<Box<dyn Operator>> {
        let ctx = &self.ctx;
        let op: Box<dyn Operator> = match &self.source {
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
        Ok(op)
    }
}
