//! PROFILE: per-operator tuple counts and times. When a statement is
//! profiled every operator of every pipeline is wrapped in [`Profiled`],
//! which counts the tuples its batches represent and the time spent inside
//! it (including its children: operators pull). Workers share one counter
//! per operator, so the numbers are totals over all threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use kith_common::Result;
use parking_lot::Mutex;

use crate::operator::Operator;
use crate::result_set::ResultSet;

/// Counters of one operator of one pipeline.
#[derive(Debug)]
pub struct OpStats {
    /// The pipeline (numbered in execution order) and the operator.
    pub pipeline: usize,
    pub label: String,
    pub tuples: AtomicU64,
    /// Time inside `next`, children included, summed over workers.
    pub nanos: AtomicU64,
}

/// Every operator's counters for one statement, in registration order.
#[derive(Debug, Default)]
pub struct Profile {
    ops: Mutex<Vec<Arc<OpStats>>>,
    pipelines: AtomicU64,
    /// The rewrites that fired, by pipeline.
    rewrites: Mutex<Vec<(usize, Vec<&'static str>)>>,
}

impl Profile {
    /// Numbers a new pipeline.
    pub fn next_pipeline(&self) -> usize {
        self.pipelines.fetch_add(1, Ordering::Relaxed) as usize + 1
    }

    pub fn register(&self, pipeline: usize, label: String) -> Arc<OpStats> {
        let s = Arc::new(OpStats {
            pipeline,
            label,
            tuples: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
        });
        self.ops.lock().push(Arc::clone(&s));
        s
    }

    /// A phase that ran outside the pipelines (a recursive join, a hash-join
    /// build) as a pipeline line of its own: `tuples` out, timed from
    /// `started`.
    pub fn record(&self, label: String, tuples: u64, started: Instant) {
        self.record_at(self.next_pipeline(), label, tuples, started);
    }

    /// [`Profile::record`] as pipeline `pipeline`, taken earlier with
    /// [`Profile::next_pipeline`] (a pipelined recursive join ends after
    /// the pipeline it feeds, and is listed before it).
    pub fn record_at(&self, pipeline: usize, label: String, tuples: u64, started: Instant) {
        let s = self.register(pipeline, label);
        s.tuples.store(tuples, Ordering::Relaxed);
        s.nanos
            .store(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// The rewrites that fired in pipeline `pipeline` (see
    /// `physical::REWRITES`), listed under its operators.
    pub fn rewrites(&self, pipeline: usize, names: &[&'static str]) {
        if !names.is_empty() {
            self.rewrites.lock().push((pipeline, names.to_vec()));
        }
    }

    /// One line per operator: pipeline, operator, tuples, inclusive and
    /// own time (inclusive minus the operator it pulls from); after a
    /// pipeline's last operator, the rewrites that fired in it, as
    /// `pipeline N rewrites: a, b` (not a row of the table).
    pub fn report(&self) -> String {
        // In pipeline order; a pipeline's operators in the order they were
        // registered (a stable sort).
        let mut ops = self.ops.lock().clone();
        ops.sort_by_key(|op| op.pipeline);
        let rewrites = self.rewrites.lock().clone();
        let mut out = String::from("pipeline | operator | tuples | time ms (incl.) | own ms\n");
        for (i, op) in ops.iter().enumerate() {
            let incl = op.nanos.load(Ordering::Relaxed);
            let child = match i.checked_sub(1).map(|j| &ops[j]) {
                Some(prev) if prev.pipeline == op.pipeline => prev.nanos.load(Ordering::Relaxed),
                _ => 0,
            };
            out.push_str(&format!(
                "{} | {} | {} | {:.3} | {:.3}\n",
                op.pipeline,
                op.label,
                op.tuples.load(Ordering::Relaxed),
                incl as f64 / 1e6,
                incl.saturating_sub(child) as f64 / 1e6
            ));
            let last_of_pipeline = ops
                .get(i + 1)
                .is_none_or(|next| next.pipeline != op.pipeline);
            if last_of_pipeline {
                for (_, names) in rewrites.iter().filter(|(p, _)| *p == op.pipeline) {
                    out.push_str(&format!(
                        "pipeline {} rewrites: {}\n",
                        op.pipeline,
                        names.join(", ")
                    ));
                }
            }
        }
        out
    }
}

/// Wraps an operator to count its output.
pub struct Profiled {
    child: Box<dyn Operator>,
    stats: Arc<OpStats>,
    /// The operator's output spans chunks `0..=last_chunk`.
    last_chunk: usize,
    /// This worker's counts, added to the shared ones when the chain is
    /// dropped: workers bumping one shared counter per batch fight over its
    /// cache line (a 4-hop expansion ran 4× slower under PROFILE).
    nanos: u64,
    tuples: u64,
}

impl Profiled {
    pub fn new(child: Box<dyn Operator>, stats: Arc<OpStats>, last_chunk: usize) -> Profiled {
        Profiled {
            child,
            stats,
            last_chunk,
            nanos: 0,
            tuples: 0,
        }
    }
}

impl Drop for Profiled {
    fn drop(&mut self) {
        self.stats.nanos.fetch_add(self.nanos, Ordering::Relaxed);
        self.stats.tuples.fetch_add(self.tuples, Ordering::Relaxed);
    }
}

impl Operator for Profiled {
    fn next(&mut self, rs: &mut ResultSet) -> Result<bool> {
        let start = Instant::now();
        let more = self.child.next(rs);
        self.nanos += start.elapsed().as_nanos() as u64;
        if let Ok(true) = more {
            self.tuples += rs.num_tuples_through(self.last_chunk);
        }
        more
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_time_subtracts_the_child_in_the_same_pipeline() {
        let p = Profile::default();
        let n = p.next_pipeline();
        let a = p.register(n, "Scan".into());
        let b = p.register(n, "Filter".into());
        a.nanos.store(2_000_000, Ordering::Relaxed);
        b.nanos.store(5_000_000, Ordering::Relaxed);
        b.tuples.store(7, Ordering::Relaxed);
        let r = p.report();
        assert!(r.contains("1 | Scan | 0 | 2.000 | 2.000"), "{r}");
        assert!(r.contains("1 | Filter | 7 | 5.000 | 3.000"), "{r}");
    }

    #[test]
    fn rewrites_are_listed_after_their_pipeline() {
        let p = Profile::default();
        let (one, two) = (p.next_pipeline(), p.next_pipeline());
        p.register(one, "Scan".into());
        p.register(two, "Scan".into());
        p.register(two, "Extend".into());
        p.rewrites(two, &["count-last-extend", "pack-last-extend"]);
        p.rewrites(one, &[]);
        let r = p.report();
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(
            lines[4], "pipeline 2 rewrites: count-last-extend, pack-last-extend",
            "{r}"
        );
        assert_eq!(r.matches("rewrites").count(), 1, "{r}");
    }
}
