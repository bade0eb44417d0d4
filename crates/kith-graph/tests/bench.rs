//! Measurements (ignored by default):
//! `cargo test -p kith-graph --release --test bench -- --ignored --nocapture`

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::{random_edges, Rng};
use kith_graph::*;
use kith_sched::{CancelToken, Scheduler};

/// Counts rows without keeping them.
#[derive(Default)]
struct CountSink(AtomicU64);

impl Sink<LenRow> for CountSink {
    fn consume(&self, rows: &mut Vec<LenRow>) -> kith_common::Result<()> {
        self.0.fetch_add(rows.len() as u64, Ordering::Relaxed);
        rows.clear();
        Ok(())
    }
}

#[test]
#[ignore]
fn bfs_lengths_1m_nodes_16m_edges() {
    let n: u64 = std::env::var("KITH_BENCH_NODES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 20);
    let m = 16 * n as usize;
    let mut rng = Rng(42);
    let t = Instant::now();
    let g = Arc::new(InMemoryCsr::from_edges(n, &random_edges(&mut rng, n, m)));
    println!(
        "graph: {n} nodes, {m} edges, built in {} ms",
        t.elapsed().as_millis()
    );
    let sched = Scheduler::new(2);
    let all: Vec<u64> = (0..64).map(|_| rng.below(n)).collect();
    println!("| sources | policy | threads | ms | rows |");
    for ns in [1usize, 8, 64] {
        for policy in Policy::ALL {
            for threads in [1, 2] {
                let sink = Arc::new(CountSink::default());
                let opts = IfeOptions {
                    policy,
                    threads,
                    k: None,
                    budget: None,
                };
                let t = Instant::now();
                run_ife(
                    &sched,
                    g.clone(),
                    Arc::new(ShortestLengths {
                        lower: 0,
                        upper: 30,
                        dst_mask: None,
                    }),
                    &all[..ns],
                    &opts,
                    &CancelToken::new(),
                    sink.clone(),
                )
                .unwrap();
                let ms = t.elapsed().as_secs_f64() * 1e3;
                println!(
                    "| {ns} | {} | {threads} | {ms:.1} | {} |",
                    policy.name(),
                    sink.0.load(Ordering::Relaxed)
                );
            }
        }
    }
}
