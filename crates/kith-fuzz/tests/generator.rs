//! The generators: queries parse and bind (few errors, no syntax errors),
//! and a case is the same for the same seed.

use kith_fuzz::campaign::{run_case, Config, Limit};
use kith_fuzz::exec::{Outcome, Session};
use kith_fuzz::graph::Graph;
use kith_fuzz::query::{Features, Gen};
use kith_fuzz::rng::{derive, Rng};

#[test]
fn generated_queries_parse_and_mostly_bind() {
    let features = Features::default();
    let mut total = 0;
    let mut errors = Vec::new();
    for g in 0..6u64 {
        let graph = Graph::generate(&mut Rng::new(g));
        let mut s = Session::open(None, g).expect("open");
        s.load(&graph).expect("load");
        for k in 0..40u64 {
            let mut gen = Gen::new(&graph, &features, derive(g, k));
            let q = gen.query().to_string();
            total += 1;
            if let Outcome::Err { kind, message } = s.run(&q) {
                assert_ne!(
                    kind,
                    kith::ErrorKind::Syntax,
                    "a generated query does not parse: {message}\n{q}"
                );
                errors.push(format!("{kind:?}: {message}\n  {q}"));
            }
        }
    }
    // Engine limitations and bugs show up as errors; the generator itself
    // must stay well typed.
    assert!(
        errors.len() * 10 < total,
        "{} of {total} generated queries failed:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn a_case_is_the_same_for_the_same_seed() {
    let mut config = Config::new(1, Limit::Queries(1));
    config.queries_per_case = 4;
    config.writes_per_case = 4;
    config.reads_after_writes = 1;
    config.minimize_per_oracle = 0;
    let a = run_case(42, &config, None);
    let b = run_case(42, &config, None);
    assert_eq!(a.queries, b.queries);
    assert_eq!(a.statements, b.statements);
    assert_eq!(a.errors, b.errors);
    assert_eq!(a.checks, b.checks);
    let g1 = Graph::generate(&mut Rng::new(42));
    let g2 = Graph::generate(&mut Rng::new(42));
    assert_eq!(g1.script(), g2.script());
}
