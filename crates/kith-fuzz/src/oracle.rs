//! The oracles: each [`Check`] runs one or more statements and decides
//! whether the engine contradicted itself (TLP, NoREC, differential), a
//! reference model (writes), or crashed or hung.
//!
//! A [`Case`] is everything needed to rerun one check from nothing: the
//! graph, the writes run before it, and the check; [`replay`] does that for
//! the minimizer and for `--case`.

use std::sync::Arc;

use kith::{ErrorKind, Value};

use crate::exec::{CrashEvent, Outcome, Session, Slot};
use crate::graph::Graph;
use crate::query::{Agg, Expr, ExprKind, Item, ItemKind, Projection, Query};
use crate::results::{canon_row, compare, render, Shape, FINE};
use crate::schema::Ty;
use crate::write::{self, Step};

/// The oracle a check belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Oracle {
    Tlp,
    NoRec,
    Diff,
    Write,
    Crash,
    /// Against Kùzu 0.11 (opt-in: needs its Python package).
    Kuzu,
}

impl Oracle {
    pub const ALL: &'static [Oracle] = &[
        Oracle::Tlp,
        Oracle::NoRec,
        Oracle::Diff,
        Oracle::Write,
        Oracle::Crash,
    ];

    /// The oracles only `--oracle` turns on.
    pub const OPT_IN: &'static [Oracle] = &[Oracle::Kuzu];

    pub fn name(self) -> &'static str {
        match self {
            Oracle::Tlp => "tlp",
            Oracle::NoRec => "norec",
            Oracle::Diff => "diff",
            Oracle::Write => "write",
            Oracle::Crash => "crash",
            Oracle::Kuzu => "kuzu",
        }
    }

    pub fn parse(s: &str) -> Option<Oracle> {
        Oracle::ALL
            .iter()
            .chain(Oracle::OPT_IN)
            .copied()
            .find(|o| o.name() == s)
    }
}

/// One check.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Ternary logic partitioning of `query` on `pred` at clause `at`.
    Tlp { query: Query, at: usize, pred: Expr },
    /// `count(*)` with `pred` at clause `at` against counting where it holds.
    NoRec { query: Query, at: usize, pred: Expr },
    /// The same query under other settings.
    Diff { query: Query },
    /// The same query in Kùzu, on the subset both dialects answer.
    Kuzu { query: Query },
    /// Write steps against the reference model.
    Write { steps: Vec<Step> },
    /// A statement that ended in an internal error (or was interrupted:
    /// a hang) under these settings.
    Crash {
        settings: Vec<String>,
        repeat: bool,
        statement: String,
        kind: ErrorKind,
    },
}

impl Check {
    pub fn oracle(&self) -> Oracle {
        match self {
            Check::Tlp { .. } => Oracle::Tlp,
            Check::NoRec { .. } => Oracle::NoRec,
            Check::Diff { .. } => Oracle::Diff,
            Check::Kuzu { .. } => Oracle::Kuzu,
            Check::Write { .. } => Oracle::Write,
            Check::Crash { .. } => Oracle::Crash,
        }
    }
}

/// What a failed check saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub summary: String,
    /// The statements (after the setup) that show the failure.
    pub statements: Vec<String>,
    pub expected: String,
    pub actual: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass,
    /// The check does not apply or its query failed in an ordinary way
    /// (the reason).
    Skip(String),
    Fail(Failure),
}

/// A check with its base query's error, if it had one (for statistics).
pub struct Ran {
    pub verdict: Verdict,
    pub base_error: Option<(ErrorKind, String)>,
}

/// Everything to rerun a check on a fresh database.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub seed: u64,
    pub graph: Graph,
    /// Statements run after loading and before the check.
    pub writes: Vec<String>,
    pub check: Check,
    /// The case is about a crash (or hang) one of the check's statements
    /// ran into, not about the check's own verdict.
    pub crash: Option<CrashSig>,
}

/// Which crash a case reproduces: the error kind and the first line of
/// the message with numbers blanked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CrashSig {
    pub kind: ErrorKind,
    pub signature: String,
}

impl CrashSig {
    pub fn of(kind: ErrorKind, message: &str) -> CrashSig {
        // Numbers (spans, slots, indexes) blanked: one `#` per run of digits.
        let mut signature = String::new();
        for c in message.lines().next().unwrap_or("").chars() {
            if !c.is_ascii_digit() {
                signature.push(c);
            } else if !signature.ends_with('#') {
                signature.push('#');
            }
        }
        CrashSig { kind, signature }
    }

    pub fn is_hang(&self) -> bool {
        self.kind == ErrorKind::Interrupted
    }
}

impl Case {
    /// The oracle a failure of this case is reported under.
    pub fn oracle(&self) -> Oracle {
        if self.crash.is_some() {
            Oracle::Crash
        } else {
            self.check.oracle()
        }
    }
}

/// Rows above which a timeout is not a hang: the query is just big. (At
/// 2,000,000 a cross product of 1.98 M rows feeding collect(), DISTINCT
/// and a pattern predicate per row timed out honestly at 5 s: the engine
/// met its bound, the generator asked too much.)
pub const BIG: i64 = 250_000;

/// Whether `q` is big enough that a timeout means nothing: the rows after
/// some prefix of its clauses (counted, which the engine does without
/// materializing them) exceed [`BIG`], or counting them times out too.
pub fn is_big(s: &mut Session, q: &Query) -> bool {
    for end in 1..=q.clauses.len() {
        let mut prefix = q.clone();
        prefix.clauses.truncate(end);
        prefix.union = None;
        prefix.ret = count_projection(None);
        match s.run(&prefix.to_string()) {
            Outcome::Ok(r) => {
                let n = r
                    .rows
                    .first()
                    .and_then(|r| r.first())
                    .and_then(Value::as_i64);
                if n.is_some_and(|n| n > BIG) {
                    return true;
                }
            }
            Outcome::Err {
                kind: ErrorKind::Interrupted | ErrorKind::OutOfMemory,
                ..
            } => return true,
            Outcome::Err { .. } => {}
        }
    }
    match &q.union {
        Some((_, branch)) => is_big(s, branch),
        None => false,
    }
}

/// The failure a crash event shows.
pub fn crash_failure(e: &CrashEvent) -> Failure {
    let mut statements = e.settings.clone();
    if e.repeat {
        statements.push(e.statement.clone());
    }
    statements.push(e.statement.clone());
    Failure {
        summary: if e.kind == ErrorKind::Interrupted {
            "the statement did not finish within the timeout (hang)".into()
        } else {
            format!("internal error: {}", first_line(&e.message))
        },
        statements,
        expected: "the statement finishes without an internal error".into(),
        actual: format!("error {:?}: {}", e.kind, e.message),
    }
}

/// Runs a case from nothing: a new database, the graph, the writes, the
/// check.
pub fn replay(case: &Case, slot: Option<Arc<Slot>>) -> Verdict {
    let mut s = match Session::open(slot, case.seed) {
        Ok(s) => s,
        Err(e) => return Verdict::Skip(e),
    };
    if let Err((stmt, out)) = s.load(&case.graph) {
        return Verdict::Skip(format!("loading failed at {stmt}: {}", out.describe()));
    }
    for w in &case.writes {
        s.write(w);
    }
    let verdict = run(&case.check, &mut s, &case.graph).verdict;
    match &case.crash {
        None => verdict,
        Some(sig) => match s
            .events
            .iter()
            .find(|e| CrashSig::of(e.kind, &e.message) == *sig)
        {
            Some(e) => Verdict::Fail(crash_failure(e)),
            None => Verdict::Pass,
        },
    }
}

/// Runs a check on a session that holds the case's graph.
pub fn run(check: &Check, s: &mut Session, graph: &Graph) -> Ran {
    s.reset();
    let ran = match check {
        Check::Tlp { query, at, pred } => tlp(s, query, *at, pred),
        Check::NoRec { query, at, pred } => norec(s, query, *at, pred),
        Check::Diff { query } => diff(s, query),
        Check::Kuzu { query } => kuzu(s, query, graph),
        Check::Write { steps } => Ran {
            verdict: match write::check(s, graph, steps) {
                Ok(()) => Verdict::Pass,
                Err(m) => {
                    let mut statements: Vec<String> = Vec::new();
                    for st in &steps[..=m.step] {
                        statements.push(format!("CALL threads={}", st.threads));
                        statements.push(st.stmt.render(&graph.schema));
                    }
                    Verdict::Fail(Failure {
                        summary: format!(
                            "write step {} disagrees with the model: {}",
                            m.step, m.statement
                        ),
                        statements,
                        expected: m.expected,
                        actual: m.actual,
                    })
                }
            },
            base_error: None,
        },
        Check::Crash {
            settings,
            repeat,
            statement,
            kind,
        } => {
            for st in settings {
                s.run(st);
            }
            if *repeat {
                s.run(statement);
            }
            let out = s.run(statement);
            let verdict = match &out {
                Outcome::Err { kind: k, message } if k == kind => {
                    let mut statements = settings.clone();
                    if *repeat {
                        statements.push(statement.clone());
                    }
                    statements.push(statement.clone());
                    Verdict::Fail(Failure {
                        summary: if *kind == ErrorKind::Interrupted {
                            "the statement did not finish within the timeout (hang)".into()
                        } else {
                            format!("internal error: {}", first_line(message))
                        },
                        statements,
                        expected: "the statement finishes without an internal error".into(),
                        actual: out.describe(),
                    })
                }
                _ => Verdict::Pass,
            };
            Ran {
                verdict,
                base_error: None,
            }
        }
    };
    s.reset();
    ran
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Shape in which to compare results of `q`.
fn shape_of(q: &Query) -> Shape {
    if q.ordered() {
        Shape::List
    } else {
        Shape::Bag
    }
}

// ----- differential -----

/// The same query under other settings must give the same answer (or
/// the same kind of error).
pub fn diff(s: &mut Session, q: &Query) -> Ran {
    let text = q.to_string();
    let shape = shape_of(q);
    let reference = s.run(&text);
    let base_error = reference.error();
    if reference.is_crash_or_hang() {
        return Ran {
            verdict: Verdict::Skip("crashed (reported by the crash oracle)".into()),
            base_error,
        };
    }
    let mut variants: Vec<(Vec<(&str, String)>, String)> = vec![
        (vec![], "the same query again (plan cache hit)".into()),
        (vec![("threads", "1".into())], "threads=1".into()),
        (
            vec![("threads", "2".into()), ("plan_cache", "false".into())],
            "plan_cache=false".into(),
        ),
    ];
    // Other join orders: `plan_seed` skews the table sizes the planner
    // estimates from (two seeds fixed by the query's text, so a finding
    // replays).
    let text_hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    for seed in [1 + text_hash % 997, 1000 + (text_hash >> 20) % 991] {
        variants.push((
            vec![
                ("plan_cache", "true".into()),
                ("plan_seed", seed.to_string()),
            ],
            format!("plan_seed={seed} (another join order)"),
        ));
    }
    if q.has_var_length() {
        for p in ["1T1S", "nT1S", "nTkS", "nTkMS"] {
            variants.push((
                vec![
                    ("plan_seed", "0".into()),
                    ("recursive_policy", format!("'{p}'")),
                ],
                p.to_string(),
            ));
        }
    }
    let mut verdict = Verdict::Pass;
    for (settings, label) in &variants {
        for (name, value) in settings {
            s.set(name, value);
        }
        let out = s.run(&text);
        if out.is_crash_or_hang() {
            continue;
        }
        if let Some((expected, actual)) = disagreement(&reference, &out, shape) {
            let mut statements = vec![text.clone()];
            statements.extend(s.settings());
            statements.push(text.clone());
            verdict = Verdict::Fail(Failure {
                summary: format!("the query answers differently under {label}"),
                statements,
                expected,
                actual,
            });
            break;
        }
    }
    s.set("plan_seed", "0");
    Ran {
        verdict,
        base_error,
    }
}

// ----- against Kùzu -----

/// The query must answer in KithDB (under Kùzu's matching semantics,
/// `var_length_semantics='walk_all'`) as in Kùzu where both answer it with
/// scalars and lists. Errors on either side are skips: the dialects
/// differ (functions, casts, what each supports), and KithDB's own errors
/// are the crash oracle's.
pub fn kuzu(s: &mut Session, q: &Query, graph: &Graph) -> Ran {
    let text = q.to_string();
    // Kùzu's matching: no relationship isomorphism, not even between the
    // fixed-length rels of one MATCH.
    s.set("var_length_semantics", "'walk_all'");
    let ours = s.run(&text);
    let base_error = ours.error();
    let skip = |why: String| Ran {
        verdict: Verdict::Skip(why),
        base_error: base_error.clone(),
    };
    if !s.writes.is_empty() {
        return skip("Kùzu holds the graph as loaded, before writes".into());
    }
    if let Some(why) = kuzu_differs(&text) {
        return skip(why.into());
    }
    if q.any_expr(&|e| {
        e.ty == Ty::Str && matches!(&e.kind, ExprKind::Op { parts, .. } if parts.len() == 3 && parts[1] == " + ")
    }) {
        return skip("Kùzu's string + takes NULL as ''".into());
    }
    let Outcome::Ok(ours) = ours else {
        return skip("KithDB answered with an error".into());
    };
    if let Some(v) = ours.rows.iter().flatten().find(|v| !comparable(v)) {
        return skip(format!("KithDB answered with {v:?}, not compared"));
    }
    let theirs = match crate::kuzu::run(graph, &text) {
        Ok(rows) => rows,
        Err(e) => return skip(e.reason().to_string()),
    };
    // NULL (Kùzu) and 0 or [] (openCypher) for an empty sum or collect
    // sort apart: ordered by such a column, the rows compare as a bag,
    // and a SKIP or LIMIT after it would keep other rows.
    let by_empty_aggregate = q.ret.order.iter().any(|&(i, _)| {
        matches!(
            q.ret.items.get(i).and_then(|it| it.agg),
            Some(Agg::Sum | Agg::Collect)
        )
    });
    if by_empty_aggregate && (q.ret.skip.is_some() || q.ret.limit.is_some()) {
        return skip("ordered by a sum or collect, which is NULL over no values in Kùzu".into());
    }
    let shape = if by_empty_aggregate {
        Shape::Bag
    } else {
        shape_of(q)
    };
    let (theirs, ours_rows) = (empty_aggregates(q, theirs), empty_aggregates(q, ours.rows));
    let verdict = match compare(&theirs, &ours_rows, shape) {
        None => Verdict::Pass,
        Some(d) => Verdict::Fail(Failure {
            summary: "the query answers differently in Kùzu 0.11".into(),
            statements: vec!["CALL var_length_semantics='walk_all'".into(), text],
            expected: format!("(Kùzu) {}", render(&theirs, 30)),
            actual: format!("{}\n{d}", render(&ours_rows, 30)),
        }),
    };
    Ran {
        verdict,
        base_error,
    }
}

/// Where the dialects are known to answer differently, read off the
/// query's text: Kùzu's `substring` counts from 1 (openCypher's from 0),
/// its undirected var-length walks take a self loop both ways, and a
/// subquery of a NULL outer variable (OPTIONAL MATCH) is 0 or false in
/// Kùzu, NULL in KithDB (a NULL key is not looked up).
fn kuzu_differs(text: &str) -> Option<&'static str> {
    if text.contains("substring(") {
        return Some("substring counts from 1 in Kùzu");
    }
    // Kùzu 0.11.3 bugs seen by this oracle (KithDB's answers checked by
    // hand against the rows): over matched rows, `single()` and `none()`
    // answer wrongly and `CASE WHEN` takes the ELSE branch of some rows
    // whose condition holds; `*0..k` counts a path more than `*0..0` and
    // `*1..k` together; `s CONTAINS ''` is false; `x IN [NULL, ...]` is
    // false where openCypher says NULL.
    for quantifier in ["single(", "none(", "any(", "all("] {
        if text.contains(quantifier) {
            return Some("Kùzu 0.11.3's list quantifiers over matched rows (a Kùzu bug)");
        }
    }
    if text.contains("CASE WHEN") {
        return Some("Kùzu 0.11.3's CASE over matched rows (a Kùzu bug)");
    }
    if text.contains("IN [") && text.contains("NULL") {
        return Some("Kùzu 0.11.3's IN over a list holding NULL is false, not NULL");
    }
    if text.contains("*0..") {
        return Some("Kùzu 0.11.3's *0..k counts one path too many (a Kùzu bug)");
    }
    if text.contains("CONTAINS ''") {
        return Some("Kùzu 0.11.3's CONTAINS '' is false (a Kùzu bug)");
    }
    let subquery = ["EXISTS {", "COUNT {", "[("]
        .iter()
        .any(|s| text.contains(s));
    if subquery && text.contains("OPTIONAL MATCH") {
        return Some("a subquery of a NULL outer variable is NULL in KithDB, 0 or false in Kùzu");
    }
    // An undirected var-length rel: `-[...*...]-` with no arrow.
    let mut rest = text;
    while let Some(at) = rest.find("-[") {
        let before = rest[..at].ends_with('<');
        let Some(end) = rest[at..].find(']') else {
            break;
        };
        let body = &rest[at..at + end];
        let after = rest[at + end + 1..].starts_with("->");
        if body.contains('*') && !before && !after {
            return Some("an undirected var-length rel takes self loops both ways in Kùzu");
        }
        rest = &rest[at + end + 1..];
    }
    None
}

/// sum and collect over no values: openCypher's 0 and `[]`, Kùzu's NULL.
/// Those columns compare NULL, 0 and `[]` as one value (a weaker check
/// there, but no false alarm).
fn empty_aggregates(q: &Query, mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    let columns: Vec<usize> = q
        .ret
        .items
        .iter()
        .enumerate()
        .filter(|(_, it)| matches!(it.agg, Some(Agg::Sum | Agg::Collect)))
        .map(|(i, _)| i)
        .collect();
    for row in rows.iter_mut() {
        for &c in &columns {
            if let Some(v) = row.get_mut(c) {
                let empty = match v {
                    Value::Null => true,
                    Value::Int64(0) => true,
                    Value::Double(x) => *x == 0.0,
                    Value::List(items) => items.is_empty(),
                    _ => false,
                };
                if empty {
                    *v = Value::String("<no values: NULL, 0 or []>".into());
                }
            }
        }
    }
    rows
}

/// A value the Kùzu oracle compares: what JSON carries the same way in
/// both (no nodes, rels, paths, maps, temporals).
fn comparable(v: &Value) -> bool {
    match v {
        Value::List(items) => items.iter().all(comparable),
        Value::Null
        | Value::Bool(_)
        | Value::Int8(_)
        | Value::Int16(_)
        | Value::Int32(_)
        | Value::Int64(_)
        | Value::UInt8(_)
        | Value::UInt16(_)
        | Value::UInt32(_)
        | Value::UInt64(_)
        | Value::Float(_)
        | Value::Double(_)
        | Value::String(_) => true,
        _ => false,
    }
}

/// `None` when two outcomes agree; otherwise (expected, actual) texts.
pub fn disagreement(
    reference: &Outcome,
    other: &Outcome,
    shape: Shape,
) -> Option<(String, String)> {
    match (reference, other) {
        (Outcome::Ok(a), Outcome::Ok(b)) => compare(&a.rows, &b.rows, shape)
            .map(|d| (render(&a.rows, 30), format!("{}\n{d}", render(&b.rows, 30)))),
        (Outcome::Err { kind: a, .. }, Outcome::Err { kind: b, .. }) if a == b => None,
        _ => Some((reference.describe(), other.describe())),
    }
}

// ----- TLP -----

/// How a TLP check combines its three partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlpMode {
    /// Rows pass through: multiset union.
    Bag,
    /// `RETURN DISTINCT`: set union.
    Set,
    /// Composable aggregates (count, sum, min, max), grouped by the other
    /// items: combined per group.
    Aggregate,
}

fn composable(i: &Item) -> bool {
    matches!(
        i.agg,
        None | Some(Agg::CountStar | Agg::Count | Agg::Sum | Agg::Min | Agg::Max)
    )
}

/// How the RETURN of `q` lets TLP combine partitions, if it does.
pub fn tlp_mode(ret: &Projection) -> Option<TlpMode> {
    if ret.skip.is_some() || ret.limit.is_some() {
        return None;
    }
    if ret.is_row_wise() {
        return Some(TlpMode::Bag);
    }
    if ret.distinct && !ret.has_agg() {
        return Some(TlpMode::Set);
    }
    if !ret.distinct && ret.items.iter().all(composable) {
        return Some(TlpMode::Aggregate);
    }
    None
}

/// The query itself when its RETURN partitions; otherwise the query with
/// a RETURN that does: no SKIP / LIMIT / ORDER BY, only composable
/// aggregates, `count(*)` when nothing is left.
pub fn tlp_query(q: &Query) -> Query {
    if tlp_mode(&q.ret).is_some() {
        return q.clone();
    }
    let mut t = q.clone();
    t.ret.skip = None;
    t.ret.limit = None;
    t.ret.order.clear();
    t.ret.items.retain(composable);
    if t.ret.has_agg() {
        t.ret.distinct = false;
    }
    if t.ret.items.is_empty() {
        t.ret = count_projection(None);
    }
    t
}

/// The three partition predicates of `p`.
pub fn partitions(p: &Expr) -> [Expr; 3] {
    [p.clone(), Expr::negate(p.clone()), Expr::is_null(p.clone())]
}

pub fn tlp(s: &mut Session, q: &Query, at: usize, pred: &Expr) -> Ran {
    let Some(mode) = tlp_mode(&q.ret) else {
        return Ran {
            verdict: Verdict::Skip("the RETURN does not partition".into()),
            base_error: None,
        };
    };
    let text = q.to_string();
    let base = s.run(&text);
    let base_error = base.error();
    let Outcome::Ok(base_rows) = base else {
        return Ran {
            verdict: Verdict::Skip("the base query failed".into()),
            base_error,
        };
    };
    let mut texts = Vec::new();
    let mut parts = Vec::new();
    for p in partitions(pred) {
        let mut qp = q.clone();
        qp.add_cond(at, p);
        let t = qp.to_string();
        match s.run(&t) {
            Outcome::Ok(rows) => parts.push(rows.rows),
            other => {
                return Ran {
                    verdict: Verdict::Skip(format!("a partition failed: {}", other.describe())),
                    base_error,
                }
            }
        }
        texts.push(t);
    }
    let verdict = match tlp_compare(mode, &q.ret, &base_rows.rows, &parts) {
        None => Verdict::Pass,
        Some((expected, actual)) => {
            let mut statements = vec![text];
            statements.extend(texts);
            Verdict::Fail(Failure {
                summary: format!(
                    "TLP: the query differs from the union of its partitions on {pred} ({mode:?})"
                ),
                statements,
                expected,
                actual,
            })
        }
    };
    Ran {
        verdict,
        base_error,
    }
}

/// Compares a base result with its three partitions; `None` when they
/// agree, else (expected: the base, actual: the union).
pub fn tlp_compare(
    mode: TlpMode,
    ret: &Projection,
    base: &[Vec<Value>],
    parts: &[Vec<Vec<Value>>],
) -> Option<(String, String)> {
    let union: Vec<Vec<Value>> = match mode {
        TlpMode::Bag | TlpMode::Set => parts.iter().flatten().cloned().collect(),
        TlpMode::Aggregate => combine_groups(ret, parts),
    };
    let shape = if mode == TlpMode::Set {
        Shape::Set
    } else {
        Shape::Bag
    };
    compare(base, &union, shape).map(|d| (render(base, 30), format!("{}\n{d}", render(&union, 30))))
}

/// Groups each partition's rows by the non-aggregate items and combines
/// the aggregates of each group over the partitions.
fn combine_groups(ret: &Projection, parts: &[Vec<Vec<Value>>]) -> Vec<Vec<Value>> {
    let keys: Vec<usize> = (0..ret.items.len())
        .filter(|i| ret.items[*i].agg.is_none())
        .collect();
    let mut groups: Vec<(String, Vec<&Vec<Value>>)> = Vec::new();
    for row in parts.iter().flatten() {
        let key_vals: Vec<Value> = keys.iter().filter_map(|k| row.get(*k).cloned()).collect();
        let key = canon_row(&key_vals, FINE);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((key, vec![row])),
        }
    }
    groups
        .into_iter()
        .map(|(_, rows)| {
            (0..ret.items.len())
                .map(|c| {
                    let vals: Vec<&Value> = rows.iter().filter_map(|r| r.get(c)).collect();
                    match ret.items[c].agg {
                        None => vals.first().map(|v| (*v).clone()).unwrap_or(Value::Null),
                        agg => combine(agg, &vals),
                    }
                })
                .collect()
        })
        .collect()
}

/// Combines one aggregate over the partitions.
fn combine(agg: Option<Agg>, vals: &[&Value]) -> Value {
    let present: Vec<&Value> = vals.iter().copied().filter(|v| !v.is_null()).collect();
    match agg {
        Some(Agg::CountStar | Agg::Count) => {
            Value::Int64(vals.iter().filter_map(|v| v.as_i64()).sum())
        }
        Some(Agg::Sum) => {
            if present.is_empty() {
                return Value::Null;
            }
            // Integers sum to an integer, whatever the static type says:
            // the sum of no rows of an ANY-typed product is the integer 0.
            if present.iter().all(|v| matches!(v, Value::Int64(_))) {
                Value::Int64(present.iter().filter_map(|v| v.as_i64()).sum())
            } else {
                Value::Double(present.iter().filter_map(|v| v.as_f64()).sum())
            }
        }
        Some(Agg::Min) => present
            .into_iter()
            .min_by(|a, b| a.total_cmp(b))
            .cloned()
            .unwrap_or(Value::Null),
        Some(Agg::Max) => present
            .into_iter()
            .max_by(|a, b| a.total_cmp(b))
            .cloned()
            .unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

// ----- NoREC -----

pub fn norec(s: &mut Session, q: &Query, at: usize, pred: &Expr) -> Ran {
    let mut filtered = q.clone();
    filtered.add_cond(at, pred.clone());
    filtered.ret = count_projection(None);
    let mut counted = q.clone();
    counted.ret = count_projection(Some(pred));
    let (t1, t2) = (filtered.to_string(), counted.to_string());
    let a = s.run(&t1);
    let base_error = a.error();
    let b = s.run(&t2);
    let verdict = match (&a, &b) {
        (Outcome::Ok(x), Outcome::Ok(y)) => match norec_compare(&x.rows, &y.rows) {
            None => Verdict::Pass,
            Some((expected, actual)) => Verdict::Fail(Failure {
                summary: format!("NoREC: filtering on {pred} and counting where it holds disagree"),
                statements: vec![t1, t2],
                expected,
                actual,
            }),
        },
        _ => Verdict::Skip("a query failed".into()),
    };
    Ran {
        verdict,
        base_error,
    }
}

/// `RETURN count(*)`, or `RETURN count(CASE WHEN p THEN 1 END)`.
fn count_projection(pred: Option<&Expr>) -> Projection {
    let (expr, agg) = match pred {
        None => (Expr::atom(Ty::Int, "*"), Agg::CountStar),
        Some(p) => (
            Expr::op(Ty::Int, &["CASE WHEN ", " THEN 1 END"], vec![p.clone()]),
            Agg::Count,
        ),
    };
    Projection {
        items: vec![Item {
            expr,
            agg: Some(agg),
            alias: "cnt".into(),
            kind: ItemKind::Value(Ty::Int),
        }],
        ..Projection::default()
    }
}

/// `None` when the filtered count equals the counted one; else (expected:
/// the count of rows where the predicate holds, actual: the filtered count).
pub fn norec_compare(filtered: &[Vec<Value>], counted: &[Vec<Value>]) -> Option<(String, String)> {
    let get = |rows: &[Vec<Value>]| rows.first().and_then(|r| r.first()).and_then(Value::as_i64);
    match (get(filtered), get(counted)) {
        (Some(f), Some(c)) if f == c => None,
        _ => Some((render(counted, 5), render(filtered, 5))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dialect_differences_are_skipped() {
        assert!(kuzu_differs("MATCH (a) RETURN substring(a.b, 1, 2) AS v").is_some());
        assert!(kuzu_differs("MATCH (a)-[*1..2]-(b) RETURN a.id AS v").is_some());
        assert!(kuzu_differs("MATCH (a)-[*1..2]->(b) RETURN a.id AS v").is_none());
        let optional = "MATCH (a) OPTIONAL MATCH (a)-->(b) RETURN COUNT { MATCH (b)-->() } AS v";
        assert!(kuzu_differs(optional).is_some());
        assert!(kuzu_differs("MATCH (a) RETURN COUNT { MATCH (a)-->() } AS v").is_none());
    }

    #[test]
    fn any_expr_finds_a_string_concatenation_inside_an_item() {
        let concat = Expr::op(
            Ty::Str,
            &["(", " + ", ")"],
            vec![Expr::atom(Ty::Str, "a.b"), Expr::atom(Ty::Str, "'x'")],
        );
        let item = |expr: Expr| Item {
            expr,
            agg: None,
            alias: "v".into(),
            kind: ItemKind::Value(Ty::Str),
        };
        let query = |e: Expr| Query {
            clauses: Vec::new(),
            ret: Projection {
                items: vec![item(e)],
                ..Projection::default()
            },
            union: None,
            scopes: Vec::new(),
        };
        let is_concat =
            |e: &Expr| matches!(&e.kind, ExprKind::Op { parts, .. } if parts[1] == " + ");
        let wrapped = Expr::op(Ty::Int, &["size(", ")"], vec![concat.clone()]);
        assert!(query(wrapped).any_expr(&is_concat));
        assert!(!query(Expr::atom(Ty::Str, "a.b")).any_expr(&is_concat));
    }
}
