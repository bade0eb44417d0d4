//! Generator properties: determinism across thread counts, counts, ranges, skew.

use std::path::{Path, PathBuf};

use kith_bench::gen::{self, ErParams, Rmat, RmatParams};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kith-bench-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

struct Edge {
    from: u64,
    to: u64,
    since: u64,
    weight: String,
}

fn read_edges(dir: &Path) -> Vec<Edge> {
    let text = std::fs::read_to_string(dir.join("knows.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("from,to,since,weight"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 4, "{l}");
            Edge {
                from: f[0].parse().unwrap(),
                to: f[1].parse().unwrap(),
                since: f[2].parse().unwrap(),
                weight: f[3].to_string(),
            }
        })
        .collect()
}

#[test]
fn rmat_is_deterministic_across_thread_counts() {
    let p = RmatParams::graph500(12, 16, 42);
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    gen::generate(&a, &Rmat::new(p.clone()), gen::rmat_meta(&p), 1).unwrap();
    gen::generate(&b, &Rmat::new(p.clone()), gen::rmat_meta(&p), 3).unwrap();
    for f in ["persons.csv", "knows.csv"] {
        let (x, y) = (
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
        );
        assert!(x == y, "{f} differs between 1 and 3 threads");
    }
    // A different seed gives a different graph.
    let mut q = p.clone();
    q.seed = 43;
    let c = tmp("det-c");
    gen::generate(&c, &Rmat::new(q.clone()), gen::rmat_meta(&q), 2).unwrap();
    assert_ne!(
        std::fs::read(a.join("knows.csv")).unwrap(),
        std::fs::read(c.join("knows.csv")).unwrap()
    );
    for d in [a, b, c] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn rmat_counts_ranges_and_skew() {
    // Scale 12 with 2^18-edge chunks: 65,536 edges, one chunk; scale 15 below spans several.
    let p = RmatParams::graph500(15, 16, 7);
    let dir = tmp("counts");
    let s = gen::generate(&dir, &Rmat::new(p.clone()), gen::rmat_meta(&p), 2).unwrap();
    let n = 1u64 << 15;
    assert_eq!(s.edges, 16 * n);
    let edges = read_edges(&dir);
    assert_eq!(edges.len() as u64, 16 * n);
    let mut out_deg = vec![0u64; n as usize];
    let mut in_deg = vec![0u64; n as usize];
    for e in &edges {
        assert!(e.from < n && e.to < n);
        assert!((1990..=2025).contains(&e.since));
        assert!(
            e.weight.starts_with("0.") && e.weight.len() == 8,
            "{}",
            e.weight
        );
        let w: f64 = e.weight.parse().unwrap();
        assert!((0.0..1.0).contains(&w));
        out_deg[e.from as usize] += 1;
        in_deg[e.to as usize] += 1;
    }
    let avg = 16.0;
    // Node 0 is the R-MAT hub: expected out-degree m·(a+b)^scale = 16·2^15·0.76^15 ≈ 8,300.
    assert!(
        out_deg[0] as f64 > 100.0 * avg,
        "node 0 out-degree {}",
        out_deg[0]
    );
    assert!(
        in_deg[0] as f64 > 100.0 * avg,
        "node 0 in-degree {}",
        in_deg[0]
    );
    assert_eq!(out_deg.iter().max(), Some(&out_deg[0]));
    // Persons: header, every id once, name p<id>, ages 18..=80.
    let persons = std::fs::read_to_string(dir.join("persons.csv")).unwrap();
    let mut lines = persons.lines();
    assert_eq!(lines.next(), Some("id,name,age"));
    let mut count = 0u64;
    for (i, l) in lines.enumerate() {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f[0].parse::<u64>().unwrap(), i as u64);
        assert_eq!(f[1], format!("p{i}"));
        let age: u64 = f[2].parse().unwrap();
        assert!((18..=80).contains(&age));
        count += 1;
    }
    assert_eq!(count, n);
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    let meta = kith_bench::json::parse(&meta).unwrap();
    assert_eq!(
        meta.get("edges").and_then(|v| v.as_i64()),
        Some(16 * n as i64)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn erdos_renyi_counts_and_no_hub() {
    let p = ErParams {
        nodes: 10_000,
        degree: 8,
        seed: 1,
    };
    let (a, b) = (tmp("er-a"), tmp("er-b"));
    gen::generate(&a, &p, gen::er_meta(&p), 1).unwrap();
    gen::generate(&b, &p, gen::er_meta(&p), 2).unwrap();
    assert_eq!(
        std::fs::read(a.join("knows.csv")).unwrap(),
        std::fs::read(b.join("knows.csv")).unwrap()
    );
    let edges = read_edges(&a);
    assert_eq!(edges.len(), 80_000);
    let mut deg = vec![0u64; 10_000];
    for e in &edges {
        assert!(e.from < 10_000 && e.to < 10_000);
        deg[e.from as usize] += 1;
    }
    // Binomial(80000, 1e-4): mean 8, max far below an R-MAT hub.
    assert!(*deg.iter().max().unwrap() < 40);
    for d in [a, b] {
        std::fs::remove_dir_all(d).unwrap();
    }
}
