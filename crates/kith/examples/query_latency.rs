//! Whole-query latency as an embedding application sees it (parse, plan,
//! execute and read every row), the minimum and median of N runs per
//! query: for A/B runs of two builds on a noisy host, where `PROFILE`
//! leaves out the fixed costs and a full `kith-bench` run takes minutes.
//!
//! ```text
//! cargo build --release --example query_latency -p kith --features mimalloc
//! target/release/examples/query_latency DB THREADS N QUERY...
//! ```
//! prints `min_ms median_ms query` per query.

use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("query_latency: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, threads, n, queries @ ..] = args.as_slice() else {
        return Err("usage: query_latency DB THREADS N QUERY...".into());
    };
    let threads: usize = threads.parse().map_err(|e| format!("THREADS: {e}"))?;
    let n: usize = n.parse().map_err(|e| format!("N: {e}"))?;
    if n == 0 {
        return Err("N must be at least 1".into());
    }
    let db = kith::Database::open(db, kith::Config::default()).map_err(|e| e.to_string())?;
    let conn = kith::Connection::new(&db);
    conn.query(&format!("CALL threads={threads}"))
        .map_err(|e| e.to_string())?;
    for q in queries {
        let mut ms = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = Instant::now();
            let rows = conn
                .query(q)
                .map_err(|e| format!("{q}: {e}"))?
                .rows()
                .count();
            std::hint::black_box(rows);
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        ms.sort_by(f64::total_cmp);
        println!("{:.4} {:.4}  {q}", ms[0], ms[n / 2]);
    }
    Ok(())
}
