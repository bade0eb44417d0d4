//! Evaluator tests over factorized result sets.

use std::collections::HashMap;

use kith_common::{ErrorKind, LogicalType as T, Span, Value, ValueVector};
use kith_planner::expr::{BinaryOp, BoundExpr, BoundExprKind, SlotId, UnaryOp};
use proptest::prelude::*;

use super::{kernels, EvalContext, Evaluated, Evaluator};
use crate::result_set::{ChunkState, DataChunk, ResultSet, SlotLayout};

fn slot(id: u32, ty: T) -> BoundExpr {
    BoundExpr::slot(SlotId(id), ty, Span::default())
}

fn lit(v: Value) -> BoundExpr {
    BoundExpr::literal(v, Span::default())
}

fn mk(kind: BoundExprKind, ty: T) -> BoundExpr {
    BoundExpr {
        kind,
        ty,
        span: Span::default(),
    }
}

fn bin(op: BinaryOp, l: BoundExpr, r: BoundExpr, ty: T) -> BoundExpr {
    mk(BoundExprKind::Binary(op, Box::new(l), Box::new(r)), ty)
}

fn func(name: &str, args: Vec<BoundExpr>, ty: T) -> BoundExpr {
    mk(BoundExprKind::Function(name.into(), args), ty)
}

fn vector(ty: T, vals: &[Value]) -> ValueVector {
    let mut v = ValueVector::new(ty, vals.len());
    for (i, x) in vals.iter().enumerate() {
        v.set_value(i, x);
    }
    v
}

fn chunk(vectors: Vec<ValueVector>, flat: Option<usize>, sel: Option<Vec<u32>>) -> DataChunk {
    let len = vectors[0].len();
    DataChunk {
        vectors,
        state: ChunkState {
            len,
            sel,
            flat,
            generation: 0,
        },
    }
}

/// Chunk 0 (flat at selected index 1): slot 0 = INT64 x, slot 1 = STRING s.
/// Chunk 1 (unflat, sel = [0, 2, 3, 4]): slot 2 = INT32 age (NULL at 3),
/// slot 3 = STRING name, slot 4 = BOOL flag (NULL at 4).
fn sample() -> (ResultSet, SlotLayout) {
    let c0 = chunk(
        vec![
            vector(T::Int64, &[Value::Int64(100), Value::Int64(10)]),
            vector(
                T::String,
                &[Value::String("no".into()), Value::String("bo".into())],
            ),
        ],
        Some(1),
        None,
    );
    let ages = [
        Value::Int32(25),
        Value::Int32(99),
        Value::Int32(31),
        Value::Null,
        Value::Int32(40),
    ];
    let names = ["ann", "x", "bob", "cy", "bo"].map(|s| Value::String(s.into()));
    let flags = [
        Value::Bool(true),
        Value::Bool(true),
        Value::Bool(false),
        Value::Bool(true),
        Value::Null,
    ];
    let c1 = chunk(
        vec![
            vector(T::Int32, &ages),
            vector(T::String, &names),
            vector(T::Bool, &flags),
        ],
        None,
        Some(vec![0, 2, 3, 4]),
    );
    let mut layout = SlotLayout::default();
    for (s, loc) in [
        (0, (0, 0)),
        (1, (0, 1)),
        (2, (1, 0)),
        (3, (1, 1)),
        (4, (1, 2)),
    ] {
        layout.positions.insert(SlotId(s), loc);
    }
    (
        ResultSet {
            chunks: vec![c0, c1],
            multiplicity: 1,
            weights: None,
        },
        layout,
    )
}

fn eval(
    e: &BoundExpr,
    rs: &ResultSet,
    layout: &SlotLayout,
) -> kith_common::Result<(Evaluated, Vec<Value>)> {
    eval_with(e, rs, layout, &HashMap::new())
}

fn eval_with(
    e: &BoundExpr,
    rs: &ResultSet,
    layout: &SlotLayout,
    params: &HashMap<String, Value>,
) -> kith_common::Result<(Evaluated, Vec<Value>)> {
    let mut ev = Evaluator::new(e)?;
    let ctx = EvalContext {
        rs,
        layout,
        params,
        subqueries: &[],
    };
    let mut out = ValueVector::new(ev.result_type().clone(), 0);
    // Twice, to exercise scratch reuse.
    ev.evaluate(&ctx, &mut out)?;
    let r = ev.evaluate(&ctx, &mut out)?;
    let vals = match r {
        Evaluated::Flat => vec![out.get_value(0)],
        Evaluated::Unflat(u) => {
            let mut v = Vec::new();
            rs.chunks[u]
                .state
                .for_each_position(|p| v.push(out.get_value(p)));
            v
        }
    };
    Ok((r, vals))
}

#[test]
fn mixed_flat_and_unflat_expression() {
    let (rs, layout) = sample();
    // x + age: x is flat (10), age unflat.
    let e = bin(
        BinaryOp::Add,
        slot(0, T::Int64),
        slot(2, T::Int32),
        T::Int64,
    );
    let (r, vals) = eval(&e, &rs, &layout).unwrap();
    assert_eq!(r, Evaluated::Unflat(1));
    assert_eq!(
        vals,
        vec![
            Value::Int64(35),
            Value::Int64(41),
            Value::Null,
            Value::Int64(50)
        ]
    );
    // Flat only.
    let e = bin(
        BinaryOp::Mul,
        slot(0, T::Int64),
        lit(Value::Int64(3)),
        T::Int64,
    );
    assert_eq!(
        eval(&e, &rs, &layout).unwrap(),
        (Evaluated::Flat, vec![Value::Int64(30)])
    );
    // A bare slot.
    let (r, vals) = eval(&slot(3, T::String), &rs, &layout).unwrap();
    assert_eq!(r, Evaluated::Unflat(1));
    assert_eq!(vals[1], Value::String("bob".into()));
    assert_eq!(
        eval(&slot(1, T::String), &rs, &layout).unwrap().1,
        vec![Value::String("bo".into())]
    );
    // Literal only.
    assert_eq!(
        eval(&lit(Value::Int64(4)), &rs, &layout).unwrap(),
        (Evaluated::Flat, vec![Value::Int64(4)])
    );
    // Mixed int/float.
    let e = bin(
        BinaryOp::Div,
        slot(2, T::Int32),
        lit(Value::Double(2.0)),
        T::Double,
    );
    assert_eq!(eval(&e, &rs, &layout).unwrap().1[0], Value::Double(12.5));
}

#[test]
fn select_narrows_selection() {
    let (mut rs, layout) = sample();
    let params = HashMap::new();
    let e = bin(
        BinaryOp::Gt,
        slot(2, T::Int32),
        lit(Value::Int64(30)),
        T::Bool,
    );
    let mut ev = Evaluator::new(&e).unwrap();
    assert!(ev.select(&mut rs, &layout, &params, &[]).unwrap());
    // 99 at position 1 is not selected; NULL at 3 drops.
    assert_eq!(rs.chunks[1].state.sel, Some(vec![2, 4]));
    // Filter on the flat chunk only: state untouched.
    let e = bin(
        BinaryOp::Eq,
        slot(0, T::Int64),
        lit(Value::Int64(10)),
        T::Bool,
    );
    let mut ev = Evaluator::new(&e).unwrap();
    assert!(ev.select(&mut rs, &layout, &params, &[]).unwrap());
    let e = bin(
        BinaryOp::Eq,
        slot(0, T::Int64),
        lit(Value::Int64(11)),
        T::Bool,
    );
    let mut ev = Evaluator::new(&e).unwrap();
    assert!(!ev.select(&mut rs, &layout, &params, &[]).unwrap());
    assert_eq!(rs.chunks[0].state.flat, Some(1));
    // A predicate nothing passes.
    let e = bin(
        BinaryOp::Lt,
        slot(2, T::Int32),
        lit(Value::Int64(0)),
        T::Bool,
    );
    let mut ev = Evaluator::new(&e).unwrap();
    assert!(!ev.select(&mut rs, &layout, &params, &[]).unwrap());
    assert_eq!(rs.chunks[1].state.sel, Some(vec![]));
    // A non-fast-path predicate (NOT over a nullable bool).
    let (mut rs, layout) = sample();
    let e = mk(
        BoundExprKind::Unary(UnaryOp::Not, Box::new(slot(4, T::Bool))),
        T::Bool,
    );
    let mut ev = Evaluator::new(&e).unwrap();
    assert!(ev.select(&mut rs, &layout, &params, &[]).unwrap());
    assert_eq!(rs.chunks[1].state.sel, Some(vec![2]));
}

#[test]
fn three_valued_logic_over_vectors() {
    let vals = [Value::Bool(true), Value::Bool(false), Value::Null];
    let mut a = Vec::new();
    let mut b = Vec::new();
    for x in &vals {
        for y in &vals {
            a.push(x.clone());
            b.push(y.clone());
        }
    }
    let rs = ResultSet {
        chunks: vec![chunk(
            vec![vector(T::Bool, &a), vector(T::Bool, &b)],
            None,
            None,
        )],
        multiplicity: 1,
        weights: None,
    };
    let mut layout = SlotLayout::default();
    layout.positions.insert(SlotId(0), (0, 0));
    layout.positions.insert(SlotId(1), (0, 1));
    for op in [BinaryOp::And, BinaryOp::Or, BinaryOp::Xor] {
        let e = bin(op, slot(0, T::Bool), slot(1, T::Bool), T::Bool);
        let (_, got) = eval(&e, &rs, &layout).unwrap();
        for i in 0..9 {
            let want = kernels::binary(op, &a[i], &b[i], None).unwrap();
            assert_eq!(got[i], want, "{:?} {op:?} {:?}", a[i], b[i]);
        }
    }
    // Against a flat NULL literal.
    let e = bin(BinaryOp::Or, slot(0, T::Bool), lit(Value::Null), T::Bool);
    let (_, got) = eval(&e, &rs, &layout).unwrap();
    assert_eq!(got[0], Value::Bool(true));
    assert_eq!(got[3], Value::Null);
    let e = mk(
        BoundExprKind::Unary(UnaryOp::IsNull, Box::new(slot(1, T::Bool))),
        T::Bool,
    );
    let (_, got) = eval(&e, &rs, &layout).unwrap();
    assert_eq!(got[2], Value::Bool(true));
    assert_eq!(got[0], Value::Bool(false));
}

#[test]
fn runtime_errors() {
    let (rs, layout) = sample();
    let big = lit(Value::Int64(i64::MAX));
    let e = bin(BinaryOp::Add, slot(2, T::Int32), big, T::Int64);
    let err = eval(&e, &rs, &layout).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Runtime);
    assert!(
        err.message.contains("integer overflow in addition"),
        "{}",
        err.message
    );
    let e = bin(
        BinaryOp::Div,
        slot(2, T::Int32),
        lit(Value::Int64(0)),
        T::Int64,
    );
    assert!(eval(&e, &rs, &layout)
        .unwrap_err()
        .message
        .contains("division by zero"));
    // Overflow hidden under a NULL is no error: position 3 is NULL.
    let e = bin(
        BinaryOp::Mul,
        slot(2, T::Int32),
        lit(Value::Int64(1 << 40)),
        T::Int64,
    );
    assert!(eval(&e, &rs, &layout).is_ok());
    let e = mk(BoundExprKind::Parameter("p".into()), T::Any);
    let err = eval(&e, &rs, &layout).unwrap_err();
    assert_eq!(err.message, "missing parameter $p");
    let mut params = HashMap::new();
    params.insert("p".to_string(), Value::Int64(5));
    let e = bin(
        BinaryOp::Add,
        mk(BoundExprKind::Parameter("p".into()), T::Any),
        slot(2, T::Int32),
        T::Int64,
    );
    assert_eq!(
        eval_with(&e, &rs, &layout, &params).unwrap().1[0],
        Value::Int64(30)
    );
    // Float division by zero is IEEE.
    let e = bin(
        BinaryOp::Div,
        slot(2, T::Int32),
        lit(Value::Double(0.0)),
        T::Double,
    );
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1[0],
        Value::Double(f64::INFINITY)
    );
}

#[test]
fn strings_functions_case_and_lists() {
    let (rs, layout) = sample();
    let name = || slot(3, T::String);
    let s = |x: &str| lit(Value::String(x.into()));
    let e = bin(BinaryOp::StartsWith, name(), s("b"), T::Bool);
    let (_, got) = eval(&e, &rs, &layout).unwrap();
    assert_eq!(got, [false, true, false, true].map(Value::Bool).to_vec());
    let e = bin(BinaryOp::Eq, name(), slot(1, T::String), T::Bool);
    assert_eq!(eval(&e, &rs, &layout).unwrap().1[3], Value::Bool(true));
    let e = bin(BinaryOp::RegexMatch, name(), s("b.*"), T::Bool);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        [false, true, false, true].map(Value::Bool).to_vec()
    );
    let e = bin(BinaryOp::Lt, name(), s("bz"), T::Bool);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        [true, true, false, true].map(Value::Bool).to_vec()
    );
    let e = func("upper", vec![name()], T::String);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1[1],
        Value::String("BOB".into())
    );
    let e = bin(BinaryOp::Add, name(), s("!"), T::String);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1[0],
        Value::String("ann!".into())
    );
    let e = func(
        "coalesce",
        vec![slot(2, T::Int32), lit(Value::Int64(-1))],
        T::Int64,
    );
    assert_eq!(eval(&e, &rs, &layout).unwrap().1[2], Value::Int64(-1));
    // CASE guards a division by zero row by row.
    let age = || slot(2, T::Int32);
    let e = mk(
        BoundExprKind::Case {
            operand: None,
            whens: vec![(
                bin(BinaryOp::Gt, age(), lit(Value::Int64(30)), T::Bool),
                bin(BinaryOp::Div, age(), lit(Value::Int64(0)), T::Int64),
            )],
            else_: Some(Box::new(age())),
        },
        T::Int64,
    );
    assert!(eval(&e, &rs, &layout).is_err());
    let e = mk(
        BoundExprKind::Case {
            operand: Some(Box::new(age())),
            whens: vec![(lit(Value::Int64(31)), s("thirty-one"))],
            else_: Some(Box::new(s("other"))),
        },
        T::String,
    );
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        ["other", "thirty-one", "other", "other"]
            .map(|x| Value::String(x.into()))
            .to_vec()
    );
    // IN over a list literal.
    let list = mk(
        BoundExprKind::List(vec![lit(Value::Int64(25)), lit(Value::Int64(40))]),
        T::List(Box::new(T::Int64)),
    );
    let e = bin(BinaryOp::In, age(), list, T::Bool);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        vec![
            Value::Bool(true),
            Value::Bool(false),
            Value::Null,
            Value::Bool(true)
        ]
    );
    // Cast.
    let e = mk(BoundExprKind::Cast(Box::new(age())), T::String);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1[0],
        Value::String("25".into())
    );
    let e = mk(BoundExprKind::Cast(Box::new(s("12x"))), T::Int64);
    assert!(eval(&e, &rs, &layout).is_err());
    // Date + interval, temporal functions.
    let d = func("date", vec![s("2020-01-31")], T::Date);
    let i = func("interval", vec![s("1 month")], T::Interval);
    let e = func("day", vec![bin(BinaryOp::Add, d, i, T::Date)], T::Int64);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap(),
        (Evaluated::Flat, vec![Value::Int64(29)])
    );
    // Unknown function at compile time.
    assert!(Evaluator::new(&func("nope", vec![], T::Any)).is_err());
}

#[test]
fn evaluators_and_states_are_send() {
    fn assert_send<X: Send>() {}
    assert_send::<Evaluator>();
    assert_send::<crate::aggregate_function::AggregateState>();
}

#[test]
fn temporal_comparison_fast_path() {
    use kith_common::Date;
    let days: Vec<Value> = [10, 20, 30].iter().map(|&d| Value::Date(Date(d))).collect();
    let rs = ResultSet {
        chunks: vec![chunk(vec![vector(T::Date, &days)], None, None)],
        multiplicity: 1,
        weights: None,
    };
    let mut layout = SlotLayout::default();
    layout.positions.insert(SlotId(0), (0, 0));
    let e = bin(
        BinaryOp::Ge,
        slot(0, T::Date),
        lit(Value::Date(Date(20))),
        T::Bool,
    );
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        [false, true, true].map(Value::Bool).to_vec()
    );
    let ts = lit(Value::Timestamp(kith_common::Timestamp(
        20 * 86_400_000_000,
    )));
    let e = bin(BinaryOp::Lt, slot(0, T::Date), ts, T::Bool);
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        [true, false, false].map(Value::Bool).to_vec()
    );
}

/// Reference: Value-at-a-time `a + b > c`.
fn reference(a: &Value, b: &Value, c: &Value) -> kith_common::Result<Value> {
    let s = kernels::binary(BinaryOp::Add, a, b, None)?;
    kernels::binary(BinaryOp::Gt, &s, c, None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn typed_path_matches_reference(
        rows in prop::collection::vec(
            (prop::option::weighted(0.8, any::<i64>()), prop::option::weighted(0.8, any::<i32>()), prop::option::weighted(0.8, -1000i64..1000)),
            1..40,
        ),
        small in any::<bool>(),
        use_sel in any::<bool>(),
        flat_c in any::<bool>(),
    ) {
        let shrink = |x: i64| if small { x % 1000 } else { x };
        let a: Vec<Value> = rows.iter().map(|r| r.0.map_or(Value::Null, |x| Value::Int64(shrink(x)))).collect();
        let b: Vec<Value> = rows.iter().map(|r| r.1.map_or(Value::Null, Value::Int32)).collect();
        let c: Vec<Value> = rows.iter().map(|r| r.2.map_or(Value::Null, Value::Int64)).collect();
        let n = rows.len();
        let sel: Option<Vec<u32>> = use_sel.then(|| (0..n as u32).filter(|i| i % 3 != 1).collect());
        let mut chunks = vec![chunk(vec![vector(T::Int64, &a), vector(T::Int32, &b), vector(T::Int64, &c)], None, sel.clone())];
        // c from a flat chunk (its tuple 0) when flat_c.
        chunks.push(chunk(vec![vector(T::Int64, &c)], Some(0), None));
        let rs = ResultSet { chunks, multiplicity: 1, weights: None };
        let mut layout = SlotLayout::default();
        layout.positions.insert(SlotId(0), (0, 0));
        layout.positions.insert(SlotId(1), (0, 1));
        layout.positions.insert(SlotId(2), if flat_c { (1, 0) } else { (0, 2) });
        let e = bin(
            BinaryOp::Gt,
            bin(BinaryOp::Add, slot(0, T::Int64), slot(1, T::Int32), T::Int64),
            slot(2, T::Int64),
            T::Bool,
        );
        let positions: Vec<usize> = match &sel { Some(s) => s.iter().map(|&p| p as usize).collect(), None => (0..n).collect() };
        let expected: kith_common::Result<Vec<Value>> = positions
            .iter()
            .map(|&p| reference(&a[p], &b[p], if flat_c { &c[0] } else { &c[p] }))
            .collect();
        let got = eval(&e, &rs, &layout).map(|(_, v)| v);
        match (expected, got) {
            (Ok(x), Ok(y)) => prop_assert_eq!(x, y),
            (Err(x), Err(y)) => prop_assert_eq!(x.message, y.message),
            (x, y) => prop_assert!(false, "reference {:?} vs typed {:?}", x, y),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// A column of a narrow integer type compared with a constant (an
    /// INT64 literal, in the type's range or beyond it, on either side;
    /// NULLs; a selection; batches longer than 16 positions for the
    /// cut loop) on the typed path equals the value-at-a-time kernel.
    #[test]
    fn narrow_column_against_constant_matches_reference(
        xs in prop::collection::vec(prop::option::weighted(0.85, -40_000i64..70_000), 1..60),
        c in prop_oneof![-300i64..300, -70_000i64..70_000, Just(i64::MIN), Just(i64::MAX), Just(4_294_967_296i64)],
        ty in 0usize..6,
        op in prop::sample::select(vec![BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge]),
        use_sel in any::<bool>(),
        constant_left in any::<bool>(),
    ) {
        let (t, value): (T, fn(i64) -> Value) = match ty {
            0 => (T::Int8, |x| Value::Int8(x as i8)),
            1 => (T::Int16, |x| Value::Int16(x as i16)),
            2 => (T::Int32, |x| Value::Int32(x as i32)),
            3 => (T::UInt8, |x| Value::UInt8(x as u8)),
            4 => (T::UInt16, |x| Value::UInt16(x as u16)),
            _ => (T::UInt32, |x| Value::UInt32(x as u32)),
        };
        let col: Vec<Value> = xs.iter().map(|x| x.map_or(Value::Null, value)).collect();
        let n = col.len();
        let sel: Option<Vec<u32>> = use_sel.then(|| (0..n as u32).filter(|i| i % 3 != 1).collect());
        let rs = ResultSet { chunks: vec![chunk(vec![vector(t.clone(), &col)], None, sel.clone())], multiplicity: 1, weights: None };
        let mut layout = SlotLayout::default();
        layout.positions.insert(SlotId(0), (0, 0));
        let (l, r) = (slot(0, t), lit(Value::Int64(c)));
        let e = match constant_left {
            true => bin(op, r, l, T::Bool),
            false => bin(op, l, r, T::Bool),
        };
        let positions: Vec<usize> = match &sel { Some(s) => s.iter().map(|&p| p as usize).collect(), None => (0..n).collect() };
        let expected: Vec<Value> = positions
            .iter()
            .map(|&p| match constant_left {
                true => kernels::binary(op, &Value::Int64(c), &col[p], None).unwrap(),
                false => kernels::binary(op, &col[p], &Value::Int64(c), None).unwrap(),
            })
            .collect();
        let got = eval(&e, &rs, &layout).unwrap().1;
        prop_assert_eq!(got, expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Comparisons of node ids (two tables, NULLs, a selection, either
    /// side flat or unflat) on the typed path equal the value-at-a-time
    /// kernel.
    #[test]
    fn id_comparisons_match_reference(
        rows in prop::collection::vec(
            (prop::option::weighted(0.85, (0u32..2, 0u64..4)), prop::option::weighted(0.85, (0u32..2, 0u64..4))),
            1..40,
        ),
        op in prop::sample::select(vec![BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge]),
        use_sel in any::<bool>(),
        flat in 0usize..3,
    ) {
        let id = |x: Option<(u32, u64)>| {
            x.map_or(Value::Null, |(t, o)| Value::InternalId(kith_common::InternalId::new(kith_common::TableId(t), o)))
        };
        let a: Vec<Value> = rows.iter().map(|r| id(r.0)).collect();
        let b: Vec<Value> = rows.iter().map(|r| id(r.1)).collect();
        let n = rows.len();
        let sel: Option<Vec<u32>> = use_sel.then(|| (0..n as u32).filter(|i| i % 3 != 1).collect());
        let chunks = vec![
            chunk(vec![vector(T::InternalId, &a), vector(T::InternalId, &b)], None, sel.clone()),
            chunk(vec![vector(T::InternalId, &a), vector(T::InternalId, &b)], Some(n - 1), None),
        ];
        let rs = ResultSet { chunks, multiplicity: 1, weights: None };
        let mut layout = SlotLayout::default();
        // flat: 0 both unflat, 1 the left one flat (its last row), 2 the right one.
        layout.positions.insert(SlotId(0), if flat == 1 { (1, 0) } else { (0, 0) });
        layout.positions.insert(SlotId(1), if flat == 2 { (1, 1) } else { (0, 1) });
        let e = bin(op, slot(0, T::InternalId), slot(1, T::InternalId), T::Bool);
        let positions: Vec<usize> = match &sel { Some(s) => s.iter().map(|&p| p as usize).collect(), None => (0..n).collect() };
        let expected: Vec<Value> = positions
            .iter()
            .map(|&p| {
                let l = if flat == 1 { &a[n - 1] } else { &a[p] };
                let r = if flat == 2 { &b[n - 1] } else { &b[p] };
                kernels::binary(op, l, r, None).unwrap()
            })
            .collect();
        let got = eval(&e, &rs, &layout).unwrap().1;
        prop_assert_eq!(got, expected);
    }
}

proptest! {
    /// `NOT`, `IS NULL` and `IS NOT NULL` over an unflat group (booleans
    /// and integers, NULLs, selections) equal the value-at-a-time kernel.
    #[test]
    fn boolean_unary_ops_match_reference(
        vals in prop::collection::vec(prop::option::weighted(0.7, any::<bool>()), 1..40),
        use_sel in any::<bool>(),
        op_pick in 0usize..3,
        ints in any::<bool>(),
    ) {
        let op = [UnaryOp::Not, UnaryOp::IsNull, UnaryOp::IsNotNull][op_pick];
        let (ty, values): (T, Vec<Value>) = if ints && op != UnaryOp::Not {
            (T::Int64, vals.iter().map(|v| v.map_or(Value::Null, |b| Value::Int64(b as i64))).collect())
        } else {
            (T::Bool, vals.iter().map(|v| v.map_or(Value::Null, Value::Bool)).collect())
        };
        let n = values.len();
        let sel: Option<Vec<u32>> = use_sel.then(|| (0..n as u32).filter(|i| i % 3 != 1).collect());
        let rs = ResultSet {
            chunks: vec![chunk(vec![vector(ty.clone(), &values)], None, sel.clone())],
            multiplicity: 1,
            weights: None,
        };
        let mut layout = SlotLayout::default();
        layout.positions.insert(SlotId(0), (0, 0));
        let e = mk(BoundExprKind::Unary(op, Box::new(slot(0, ty))), T::Bool);
        let positions: Vec<usize> = match &sel { Some(s) => s.iter().map(|&p| p as usize).collect(), None => (0..n).collect() };
        let want: Vec<Value> = positions.iter().map(|&p| kernels::unary(op, &values[p]).unwrap()).collect();
        let (_, got) = eval(&e, &rs, &layout).unwrap();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Integer `/` and `%` (32- and 64-bit loops and operands at the edge
    /// between them, NULLs, a flat divisor, selections, zero and
    /// `i64::MIN / -1`) against the value-at-a-time
    /// kernel: the same values, or an error the kernel gives for one of
    /// the positions.
    #[test]
    fn division_matches_reference(
        rows in prop::collection::vec(
            (prop::option::weighted(0.9, prop_oneof![any::<i64>(), -100i64..100, Just(i64::MIN), -(1i64 << 33)..(1i64 << 33), (-(1i64 << 30) - 2)..(-(1i64 << 30) + 2), ((1i64 << 30) - 2)..((1i64 << 30) + 2)]),
             prop::option::weighted(0.9, prop_oneof![-9i64..9, any::<i64>(), Just(-1i64), ((1i64 << 30) - 2)..((1i64 << 30) + 2)])),
            1..40,
        ),
        small in any::<bool>(),
        use_sel in any::<bool>(),
        flat_b in any::<bool>(),
        rem in any::<bool>(),
    ) {
        let shrink = |x: i64| if small { x % 100_000 } else { x };
        let a: Vec<Value> = rows.iter().map(|r| r.0.map_or(Value::Null, |x| Value::Int64(if small && x.unsigned_abs() >> 31 == 1 { x } else { shrink(x) }))).collect();
        let b: Vec<Value> = rows.iter().map(|r| r.1.map_or(Value::Null, |x| Value::Int64(shrink(x)))).collect();
        let n = rows.len();
        let sel: Option<Vec<u32>> = use_sel.then(|| (0..n as u32).filter(|i| i % 3 != 1).collect());
        let chunks = vec![
            chunk(vec![vector(T::Int64, &a), vector(T::Int64, &b)], None, sel.clone()),
            chunk(vec![vector(T::Int64, &b)], Some(0), None),
        ];
        let rs = ResultSet { chunks, multiplicity: 1, weights: None };
        let mut layout = SlotLayout::default();
        layout.positions.insert(SlotId(0), (0, 0));
        layout.positions.insert(SlotId(1), if flat_b { (1, 0) } else { (0, 1) });
        let op = if rem { BinaryOp::Mod } else { BinaryOp::Div };
        let e = bin(op, slot(0, T::Int64), slot(1, T::Int64), T::Int64);
        let positions: Vec<usize> = match &sel { Some(s) => s.iter().map(|&p| p as usize).collect(), None => (0..n).collect() };
        let each: Vec<kith_common::Result<Value>> = positions
            .iter()
            .map(|&p| kernels::binary(op, &a[p], if flat_b { &b[0] } else { &b[p] }, None))
            .collect();
        let got = eval(&e, &rs, &layout).map(|(_, v)| v);
        match got {
            Ok(v) => {
                let want: Vec<Value> = each.into_iter().collect::<kith_common::Result<_>>().map_err(|e| TestCaseError::fail(format!("typed gave values where the kernel fails: {}", e.message)))?;
                prop_assert_eq!(v, want);
            }
            Err(e) => prop_assert!(
                each.iter().any(|r| r.as_ref().is_err_and(|x| x.message == e.message)),
                "typed error {:?} that no position gives", e.message
            ),
        }
    }
}

/// Throughput of `age > 30` over an INT32 column (run with `--ignored`).
#[test]
#[ignore]
fn bench_int32_filter() {
    let n: usize = 2048;
    let ages: Vec<Value> = (0..n).map(|i| Value::Int32((i * 7 % 90) as i32)).collect();
    let base = ResultSet {
        chunks: vec![chunk(vec![vector(T::Int32, &ages)], None, None)],
        multiplicity: 1,
        weights: None,
    };
    let mut layout = SlotLayout::default();
    layout.positions.insert(SlotId(0), (0, 0));
    let e = bin(
        BinaryOp::Gt,
        slot(0, T::Int32),
        lit(Value::Int64(30)),
        T::Bool,
    );
    let mut ev = Evaluator::new(&e).unwrap();
    let params = HashMap::new();
    let mut rs = base.clone();
    let iters = 20_000;
    let start = std::time::Instant::now();
    let mut kept = 0;
    for _ in 0..iters {
        rs.chunks[0].state.sel = None;
        ev.select(&mut rs, &layout, &params, &[]).unwrap();
        kept += rs.chunks[0].state.selected_len();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{:.1} M rows/s (kept {kept})",
        (iters * n) as f64 / secs / 1e6
    );
}

fn ints(xs: &[i64]) -> Value {
    Value::list(xs.iter().map(|x| Value::Int64(*x)).collect())
}

fn list_lit(xs: &[i64]) -> BoundExpr {
    lit(ints(xs))
}

fn local(i: u32, ty: T) -> BoundExpr {
    mk(BoundExprKind::Local(i), ty)
}

#[test]
fn index_slice_and_field_kernels() {
    let l = ints(&[1, 2, 3]);
    let i = |x: i64| Value::Int64(x);
    assert_eq!(kernels::index(&l, &i(0)).unwrap(), i(1));
    assert_eq!(kernels::index(&l, &i(-1)).unwrap(), i(3));
    assert_eq!(kernels::index(&l, &i(3)).unwrap(), Value::Null);
    assert_eq!(kernels::index(&l, &i(-4)).unwrap(), Value::Null);
    assert_eq!(kernels::index(&l, &i(i64::MIN)).unwrap(), Value::Null);
    assert_eq!(kernels::index(&l, &Value::Null).unwrap(), Value::Null);
    assert_eq!(kernels::index(&Value::Null, &i(0)).unwrap(), Value::Null);
    let e = kernels::index(&l, &Value::Double(1.0)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    let e = kernels::index(&Value::String("ab".into()), &i(0)).unwrap_err();
    assert!(e.message.contains("cannot index a STRING"), "{}", e.message);

    let sl = |a: Option<Value>, b: Option<Value>| {
        kernels::slice(&ints(&[1, 2, 3, 4, 5]), a.as_ref(), b.as_ref()).unwrap()
    };
    assert_eq!(sl(Some(i(1)), Some(i(3))), ints(&[2, 3]));
    assert_eq!(sl(None, Some(i(-3))), ints(&[1, 2]));
    assert_eq!(sl(Some(i(-2)), None), ints(&[4, 5]));
    assert_eq!(sl(Some(i(3)), Some(i(1))), ints(&[]));
    assert_eq!(sl(Some(i(-100)), Some(i(100))), ints(&[1, 2, 3, 4, 5]));
    assert_eq!(
        sl(Some(i(i64::MIN)), Some(i(i64::MAX))),
        ints(&[1, 2, 3, 4, 5])
    );
    assert_eq!(sl(Some(Value::Null), None), Value::Null);
    assert!(kernels::slice(&i(1), None, None).is_err());

    let m = Value::Struct(vec![("a".into(), i(1)), ("b".into(), Value::Null)]);
    assert_eq!(kernels::field(&m, "a").unwrap(), i(1));
    assert_eq!(kernels::field(&m, "b").unwrap(), Value::Null);
    assert_eq!(kernels::field(&m, "A").unwrap(), Value::Null);
    assert_eq!(kernels::field(&Value::Null, "a").unwrap(), Value::Null);
    assert_eq!(
        kernels::index(&m, &Value::String("a".into())).unwrap(),
        i(1)
    );
    assert_eq!(kernels::index(&m, &i(0)).unwrap_err().kind, ErrorKind::Type);
    assert_eq!(
        kernels::field(&i(1), "a").unwrap_err().kind,
        ErrorKind::Type
    );

    // Map equality ignores key order; ordering maps is undefined.
    let m2 = Value::Struct(vec![("b".into(), Value::Null), ("a".into(), i(1))]);
    assert_eq!(kernels::equals(&m, &m2), None);
    let m3 = Value::Struct(vec![("a".into(), i(1))]);
    assert_eq!(kernels::equals(&m3, &m3.clone()), Some(true));
    assert_eq!(kernels::equals(&m3, &m), Some(false));
    assert_eq!(kernels::comparison(BinaryOp::Lt, &m3, &m3), None);
    // A node value equals its id (a node variable inside a query).
    let id = kith_common::InternalId(7);
    let node = Value::Node(std::sync::Arc::new(kith_common::value::NodeValue {
        id,
        label: "P".into(),
        properties: Vec::new().into(),
    }));
    assert_eq!(kernels::equals(&node, &Value::InternalId(id)), Some(true));
    assert_eq!(kernels::equals(&Value::InternalId(id), &node), Some(true));
    let other = Value::InternalId(kith_common::InternalId(8));
    assert_eq!(kernels::equals(&node, &other), Some(false));
    // NaN orders as false against numbers, NULL against other kinds.
    let nan = Value::Double(f64::NAN);
    assert_eq!(kernels::comparison(BinaryOp::Lt, &nan, &i(1)), Some(false));
    assert_eq!(kernels::comparison(BinaryOp::Ge, &nan, &nan), Some(false));
    assert_eq!(kernels::comparison(BinaryOp::Ne, &nan, &nan), Some(true));
    assert_eq!(
        kernels::comparison(BinaryOp::Lt, &nan, &Value::String("a".into())),
        None
    );
    // Appending and prepending elements.
    assert_eq!(
        kernels::arith(BinaryOp::Add, &ints(&[1]), &i(2)).unwrap(),
        ints(&[1, 2])
    );
    assert_eq!(
        kernels::arith(BinaryOp::Add, &i(0), &ints(&[1])).unwrap(),
        ints(&[0, 1])
    );
}

#[test]
fn comprehension_reads_outer_unflat_slots() {
    let (rs, layout) = sample();
    // [v IN [20, 30, 40] WHERE v < age | v + x]: age is unflat (NULL at 3),
    // x flat (10).
    let list_ty = T::List(Box::new(T::Int64));
    let e = mk(
        BoundExprKind::ListComprehension {
            var: 0,
            list: Box::new(list_lit(&[20, 30, 40])),
            predicate: Some(Box::new(bin(
                BinaryOp::Lt,
                local(0, T::Int64),
                slot(2, T::Int32),
                T::Bool,
            ))),
            projection: Some(Box::new(bin(
                BinaryOp::Add,
                local(0, T::Int64),
                slot(0, T::Int64),
                T::Int64,
            ))),
        },
        list_ty,
    );
    let (mode, vals) = eval(&e, &rs, &layout).unwrap();
    assert_eq!(mode, Evaluated::Unflat(1));
    assert_eq!(
        vals,
        vec![ints(&[30]), ints(&[30, 40]), ints(&[]), ints(&[30, 40])]
    );
    // A list that is not a list is a type error at run time.
    let e = mk(
        BoundExprKind::ListComprehension {
            var: 3,
            list: Box::new(slot(0, T::Int64)),
            predicate: None,
            projection: None,
        },
        T::List(Box::new(T::Any)),
    );
    let err = eval(&e, &rs, &layout).unwrap_err();
    assert!(
        err.message.contains("expects a LIST after IN, got INT64"),
        "{}",
        err.message
    );
}

#[test]
fn quantifiers_three_valued() {
    let (rs, layout) = sample();
    let q = |kind, items: Vec<Value>| {
        // kind(v IN items WHERE v > 1)
        let e = mk(
            BoundExprKind::Quantifier {
                kind,
                var: 0,
                list: Box::new(lit(Value::list(items))),
                predicate: Box::new(bin(
                    BinaryOp::Gt,
                    local(0, T::Int64),
                    lit(Value::Int64(1)),
                    T::Bool,
                )),
            },
            T::Bool,
        );
        eval(&e, &rs, &layout).unwrap().1[0].clone()
    };
    use kith_planner::expr::Quantifier::*;
    let (t, f, n) = (Value::Bool(true), Value::Bool(false), Value::Null);
    let i = |x: i64| Value::Int64(x);
    for (kind, empty, two_three, one, one_null, two_null, two_three_null) in [
        (All, &t, &t, &f, &f, &n, &n),
        (Any, &f, &t, &f, &n, &t, &t),
        (None, &t, &f, &t, &n, &f, &f),
        (Single, &f, &f, &f, &n, &n, &f),
    ] {
        assert_eq!(&q(kind, vec![]), empty, "{kind:?} []");
        assert_eq!(&q(kind, vec![i(2), i(3)]), two_three, "{kind:?} [2, 3]");
        assert_eq!(&q(kind, vec![i(1)]), one, "{kind:?} [1]");
        assert_eq!(
            &q(kind, vec![i(1), n.clone()]),
            one_null,
            "{kind:?} [1, null]"
        );
        assert_eq!(
            &q(kind, vec![i(2), n.clone()]),
            two_null,
            "{kind:?} [2, null]"
        );
        assert_eq!(
            &q(kind, vec![i(2), i(3), n.clone()]),
            two_three_null,
            "{kind:?} [2, 3, null]"
        );
    }
    assert_eq!(q(Single, vec![i(2)]), t);
    assert_eq!(q(All, vec![i(2), n.clone(), i(0)]), f);
}

#[test]
fn reduce_and_nested_comprehensions() {
    let (rs, layout) = sample();
    // reduce(acc = x, v IN [1, 2, 3] | acc * 2 + v) with x = 10 (flat).
    let e = mk(
        BoundExprKind::Reduce {
            acc: 0,
            init: Box::new(slot(0, T::Int64)),
            var: 1,
            list: Box::new(list_lit(&[1, 2, 3])),
            expr: Box::new(bin(
                BinaryOp::Add,
                bin(
                    BinaryOp::Mul,
                    local(0, T::Int64),
                    lit(Value::Int64(2)),
                    T::Int64,
                ),
                local(1, T::Int64),
                T::Int64,
            )),
        },
        T::Int64,
    );
    let (mode, vals) = eval(&e, &rs, &layout).unwrap();
    assert_eq!(mode, Evaluated::Flat);
    assert_eq!(vals, vec![Value::Int64(((10 * 2 + 1) * 2 + 2) * 2 + 3)]);
    // [l IN [[1, 2], [3]] | [v IN l | v * size(l)]]: the inner body reads
    // both variables.
    let lists = lit(Value::list(vec![ints(&[1, 2]), ints(&[3])]));
    let inner = mk(
        BoundExprKind::ListComprehension {
            var: 1,
            list: Box::new(local(0, T::List(Box::new(T::Int64)))),
            predicate: None,
            projection: Some(Box::new(bin(
                BinaryOp::Mul,
                local(1, T::Int64),
                func("size", vec![local(0, T::Any)], T::Int64),
                T::Int64,
            ))),
        },
        T::List(Box::new(T::Int64)),
    );
    let e = mk(
        BoundExprKind::ListComprehension {
            var: 0,
            list: Box::new(lists),
            predicate: None,
            projection: Some(Box::new(inner)),
        },
        T::List(Box::new(T::List(Box::new(T::Int64)))),
    );
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        vec![Value::list(vec![ints(&[2, 4]), ints(&[3])])]
    );
    // Map literal, field access and slicing inside a CASE (value at a time).
    let m = mk(
        BoundExprKind::Map(vec![
            ("name".into(), slot(3, T::String)),
            ("age".into(), slot(2, T::Int32)),
        ]),
        T::Struct(vec![("name".into(), T::String), ("age".into(), T::Int32)]),
    );
    let e = mk(
        BoundExprKind::Case {
            operand: None,
            whens: vec![(
                lit(Value::Bool(true)),
                mk(BoundExprKind::Field(Box::new(m), "name".into()), T::Any),
            )],
            else_: None,
        },
        T::Any,
    );
    assert_eq!(
        eval(&e, &rs, &layout).unwrap().1,
        ["ann", "bob", "cy", "bo"]
            .map(|s| Value::String(s.into()))
            .to_vec()
    );
    let e = mk(
        BoundExprKind::Slice(
            Box::new(list_lit(&[1, 2, 3, 4])),
            Some(Box::new(lit(Value::Int64(1)))),
            None,
        ),
        T::List(Box::new(T::Int64)),
    );
    assert_eq!(eval(&e, &rs, &layout).unwrap().1, vec![ints(&[2, 3, 4])]);
}

/// Year, month, day of `days` since 1970-01-01, the slow way (a reference
/// for the date-part kernel).
fn civil_by_counting(days: i64) -> (i64, i64, i64) {
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let year_len = |y: i64| if leap(y) { 366 } else { 365 };
    let (mut y, mut d) = (1970i64, days);
    while d < 0 {
        y -= 1;
        d += year_len(y);
    }
    while d >= year_len(y) {
        d -= year_len(y);
        y += 1;
    }
    let months = [
        31,
        if leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut m = 0;
    while d >= months[m] {
        d -= months[m];
        m += 1;
    }
    (y, m as i64 + 1, d + 1)
}

proptest! {
    /// `date_part('<part>', x)` and `<part>(x)` over DATE and TIMESTAMP
    /// vectors (unflat with a selection, NULLs, and flat) read what the
    /// calendar says.
    #[test]
    fn date_parts_match_the_calendar(
        days in prop::collection::vec(prop::option::weighted(0.9, -80_000i32..80_000), 1..40),
        micros in prop::collection::vec(prop::option::weighted(0.9, -4_000_000_000_000_000i64..4_000_000_000_000_000), 1..40),
        flat_at in 0usize..40,
    ) {
        use kith_common::{Date, Timestamp};
        let dates: Vec<Value> = days.iter().map(|d| d.map_or(Value::Null, |d| Value::Date(Date(d)))).collect();
        let stamps: Vec<Value> = micros.iter().map(|m| m.map_or(Value::Null, |m| Value::Timestamp(Timestamp(m)))).collect();
        let want = |v: &Value, part: &str| -> Value {
            let (days, micros_of_day) = match v {
                Value::Date(d) => (d.0 as i64, 0),
                Value::Timestamp(t) => (t.0.div_euclid(86_400_000_000), t.0.rem_euclid(86_400_000_000)),
                _ => return Value::Null,
            };
            let (y, m, d) = civil_by_counting(days);
            let secs = micros_of_day / 1_000_000;
            Value::Int64(match part {
                "year" => y,
                "month" => m,
                "day" => d,
                "hour" => secs / 3600,
                "minute" => secs / 60 % 60,
                _ => secs % 60,
            })
        };
        for (ty, vals) in [(T::Date, &dates), (T::Timestamp, &stamps)] {
            let n = vals.len();
            let sel: Vec<u32> = (0..n as u32).filter(|i| i % 3 != 1).collect();
            for flat in [None, Some(flat_at % n)] {
                let flat_sel = flat.map(|f| f.min(sel.len() - 1));
                let rs = ResultSet {
                    chunks: vec![chunk(vec![vector(ty.clone(), vals)], flat_sel, Some(sel.clone()))],
                    multiplicity: 1,
                    weights: None,
                };
                let mut layout = SlotLayout::default();
                layout.positions.insert(SlotId(0), (0, 0));
                let expected: Vec<&Value> = match flat_sel {
                    Some(i) => vec![&vals[sel[i] as usize]],
                    None => sel.iter().map(|&p| &vals[p as usize]).collect(),
                };
                for (part, spelling) in [("year", "YEAR"), ("month", "months"), ("day", "day"),
                                         ("hour", "Hours"), ("minute", "minute"), ("second", "seconds")] {
                    let e = func("date_part", vec![lit(Value::String(spelling.into())), slot(0, ty.clone())], T::Int64);
                    let (_, got) = eval(&e, &rs, &layout).unwrap();
                    let w: Vec<Value> = expected.iter().map(|v| want(v, part)).collect();
                    prop_assert_eq!(&got, &w, "date_part('{}') over {:?}", spelling, ty);
                    let e = func(part, vec![slot(0, ty.clone())], T::Int64);
                    let (_, got) = eval(&e, &rs, &layout).unwrap();
                    prop_assert_eq!(&got, &w, "{}() over {:?}", part, ty);
                }
            }
        }
    }
}

/// A part that no kernel knows takes the function path and says so.
#[test]
fn unknown_date_part_is_an_error() {
    let rs = ResultSet {
        chunks: vec![chunk(
            vec![vector(T::Date, &[Value::Date(kith_common::Date(3))])],
            None,
            None,
        )],
        multiplicity: 1,
        weights: None,
    };
    let mut layout = SlotLayout::default();
    layout.positions.insert(SlotId(0), (0, 0));
    let e = func(
        "date_part",
        vec![lit(Value::String("fortnight".into())), slot(0, T::Date)],
        T::Int64,
    );
    let err = eval(&e, &rs, &layout).unwrap_err();
    assert!(
        err.message.contains("unknown date part 'fortnight'"),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// The eight-at-a-time selection of a batch equals a plain filter of
    /// its positions: runs of all false and all true words, mixed words,
    /// a remainder shorter than a word, and a buffer holding old positions.
    #[test]
    fn dense_selection_matches_reference(
        runs in prop::collection::vec((0u8..3, 1usize..40), 0..12),
        seed in any::<u64>(),
    ) {
        let mut b = Vec::new();
        let mut x = seed | 1;
        for (kind, len) in runs {
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push(match kind {
                    0 => false,
                    1 => true,
                    _ => x & 1 == 1,
                });
            }
        }
        let want: Vec<u32> = (0..b.len() as u32).filter(|&p| b[p as usize]).collect();
        let mut buf = vec![7u32; 5];
        super::select_true_dense(&b, b.len(), &mut buf);
        prop_assert_eq!(&buf, &want);
        // The same buffer again (its slots hold the last selection), and
        // the loop over a selection: every third position.
        let every_third: Vec<u32> = (0..b.len() as u32).step_by(3).collect();
        let want: Vec<u32> = every_third.iter().copied().filter(|&p| b[p as usize]).collect();
        super::select_true(&b, every_third.iter().copied(), every_third.len(), &mut buf);
        prop_assert_eq!(buf, want);
    }
}
