//! The oracles can fail: each comparison is fed results that differ and
//! must report it, and the same results that agree must not.

use kith::Value;
use kith_fuzz::exec::{Outcome, Session};
use kith_fuzz::graph::Graph;
use kith_fuzz::oracle::{disagreement, norec_compare, tlp_compare, TlpMode};
use kith_fuzz::query::{Agg, Expr, Item, ItemKind, Projection};
use kith_fuzz::results::{Rows, Shape};
use kith_fuzz::rng::Rng;
use kith_fuzz::schema::Ty;
use kith_fuzz::write::{self, Model};

fn int(v: i64) -> Value {
    Value::Int64(v)
}

fn rows(vals: &[i64]) -> Vec<Vec<Value>> {
    vals.iter().map(|v| vec![int(*v)]).collect()
}

fn plain(n: usize) -> Projection {
    Projection {
        items: (0..n)
            .map(|i| Item {
                expr: Expr::atom(Ty::Int, format!("x{i}")),
                agg: None,
                alias: format!("c{i}"),
                kind: ItemKind::Value(Ty::Int),
            })
            .collect(),
        ..Projection::default()
    }
}

#[test]
fn tlp_bag_reports_lost_and_extra_rows() {
    let ret = plain(1);
    let base = rows(&[1, 2, 2, 3]);
    let good = vec![rows(&[1, 2]), rows(&[2]), rows(&[3])];
    assert!(tlp_compare(TlpMode::Bag, &ret, &base, &good).is_none());
    // A row lost (the NULL partition is empty).
    let lost = vec![rows(&[1, 2]), rows(&[2]), rows(&[])];
    assert!(tlp_compare(TlpMode::Bag, &ret, &base, &lost).is_some());
    // A row in two partitions.
    let twice = vec![rows(&[1, 2, 3]), rows(&[2]), rows(&[3])];
    assert!(tlp_compare(TlpMode::Bag, &ret, &base, &twice).is_some());
}

#[test]
fn tlp_set_ignores_duplicates_but_not_missing_values() {
    let ret = Projection {
        distinct: true,
        ..plain(1)
    };
    let base = rows(&[1, 2]);
    let dup = vec![rows(&[1]), rows(&[1, 2]), rows(&[])];
    assert!(tlp_compare(TlpMode::Set, &ret, &base, &dup).is_none());
    let missing = vec![rows(&[1]), rows(&[]), rows(&[])];
    assert!(tlp_compare(TlpMode::Set, &ret, &base, &missing).is_some());
}

#[test]
fn tlp_aggregates_combine_per_group() {
    let agg = |agg, ty: Ty| Item {
        expr: Expr::atom(ty.clone(), "x"),
        agg: Some(agg),
        alias: "a".into(),
        kind: ItemKind::Value(ty),
    };
    let mut ret = plain(1);
    ret.items.push(agg(Agg::CountStar, Ty::Int));
    ret.items.push(agg(Agg::Max, Ty::Int));
    ret.items.push(agg(Agg::Sum, Ty::Dbl));
    let row = |k: i64, c: i64, m: Value, s: Value| vec![int(k), int(c), m, s];
    let base = vec![
        row(1, 3, int(9), Value::Double(1.5)),
        row(2, 1, Value::Null, Value::Null),
    ];
    let parts = vec![
        vec![row(1, 2, int(9), Value::Double(1.0))],
        vec![
            row(1, 1, int(4), Value::Double(0.5)),
            row(2, 1, Value::Null, Value::Null),
        ],
        vec![],
    ];
    assert!(tlp_compare(TlpMode::Aggregate, &ret, &base, &parts).is_none());
    // A count off by one in one partition.
    let mut wrong = parts.clone();
    wrong[0][0][1] = int(3);
    assert!(tlp_compare(TlpMode::Aggregate, &ret, &base, &wrong).is_some());
    // A max that is not the largest partial.
    let mut wrong = parts.clone();
    wrong[1][0][2] = int(10);
    assert!(tlp_compare(TlpMode::Aggregate, &ret, &base, &wrong).is_some());
    // A group missing from every partition.
    let wrong = vec![parts[0].clone(), vec![parts[1][0].clone()], vec![]];
    assert!(tlp_compare(TlpMode::Aggregate, &ret, &base, &wrong).is_some());
}

#[test]
fn norec_reports_different_counts() {
    assert!(norec_compare(&rows(&[4]), &rows(&[4])).is_none());
    assert!(norec_compare(&rows(&[3]), &rows(&[4])).is_some());
    assert!(norec_compare(&[], &rows(&[0])).is_some());
}

#[test]
fn diff_reports_different_rows_order_and_errors() {
    let ok = |v: &[i64]| {
        Outcome::Ok(Rows {
            columns: vec!["c".into()],
            rows: rows(v),
        })
    };
    assert!(disagreement(&ok(&[1, 2]), &ok(&[2, 1]), Shape::Bag).is_none());
    assert!(disagreement(&ok(&[1, 2]), &ok(&[2, 1]), Shape::List).is_some());
    assert!(disagreement(&ok(&[1, 2]), &ok(&[1, 2, 2]), Shape::Bag).is_some());
    let err = Outcome::Err {
        kind: kith::ErrorKind::Runtime,
        message: "overflow".into(),
    };
    assert!(disagreement(&ok(&[1]), &err, Shape::Bag).is_some());
    assert!(disagreement(&err, &err.clone(), Shape::Bag).is_none());
}

/// The TLP comparison on real results: leaving out the `IS NULL`
/// partition of a predicate that is NULL for some rows loses them.
#[test]
fn tlp_catches_a_missing_partition_on_real_data() {
    let graph = Graph::generate(&mut Rng::new(77));
    let mut s = Session::open(None, 77).expect("open");
    s.load(&graph).expect("load");
    let run = |s: &mut Session, q: &str| match s.run(q) {
        Outcome::Ok(r) => r.rows,
        other => panic!("{q}: {}", other.describe()),
    };
    let base = run(&mut s, "MATCH (n:L0) RETURN n.id");
    let p = run(&mut s, "MATCH (n:L0) WHERE n.a > 5 RETURN n.id");
    let not_p = run(&mut s, "MATCH (n:L0) WHERE NOT (n.a > 5) RETURN n.id");
    let null_p = run(&mut s, "MATCH (n:L0) WHERE (n.a > 5) IS NULL RETURN n.id");
    let ret = plain(1);
    let all = vec![p.clone(), not_p.clone(), null_p.clone()];
    assert!(tlp_compare(TlpMode::Bag, &ret, &base, &all).is_none());
    if !null_p.is_empty() {
        let two = vec![p, not_p, Vec::new()];
        assert!(tlp_compare(TlpMode::Bag, &ret, &base, &two).is_some());
    }
}

/// The write oracle against a model of a different graph: the first dump
/// must disagree.
#[test]
fn write_oracle_reports_a_model_that_disagrees() {
    let graph = Graph::generate(&mut Rng::new(5));
    let mut other = graph.clone();
    // The same schema, one node's property changed.
    let n = other
        .nodes
        .iter_mut()
        .find(|n| n.table == 0)
        .expect("a node of L0");
    n.props[0] = kith_fuzz::schema::Lit::Int(12345);
    let mut s = Session::open(None, 5).expect("open");
    s.load(&graph).expect("load");
    let steps = write::generate(&mut Rng::new(1), &graph, 3);
    assert!(
        write::check(&mut s, &other, &steps).is_err(),
        "a wrong model must be reported"
    );
    // And the right model agrees (on a fresh database).
    let mut s = Session::open(None, 5).expect("open");
    s.load(&graph).expect("load");
    let model = Model::new(&graph);
    assert_eq!(model.nodes.len(), graph.nodes.len());
    if let Err(m) = write::check(&mut s, &graph, &steps) {
        panic!("the right model disagrees: {m:?}");
    }
}

/// Crashes that differ only in numbers are one crash; other messages or
/// kinds are not.
#[test]
fn crash_signatures_blank_numbers() {
    use kith::ErrorKind::{Internal, Interrupted};
    use kith_fuzz::oracle::CrashSig;
    let a = CrashSig::of(
        Internal,
        "predicate at Span { start: 96, end: 117 } could not be placed",
    );
    let b = CrashSig::of(
        Internal,
        "predicate at Span { start: 104, end: 125 } could not be placed",
    );
    assert_eq!(a, b);
    assert_ne!(a, CrashSig::of(Internal, "extend from an unplaced slot"));
    assert_ne!(
        a,
        CrashSig::of(
            Interrupted,
            "predicate at Span { start: 96, end: 117 } could not be placed"
        )
    );
    assert!(CrashSig::of(Interrupted, "the query timed out after 5000 ms").is_hang());
}
