//! Shrinks a failing [`Case`] while it still fails the same way: delta
//! debugging over the rels, the nodes, the writes before the check and the
//! write steps; then the query: WHERE conjuncts, RETURN items, ORDER BY /
//! SKIP / LIMIT, and subexpressions replaced by a same-typed child or a
//! constant.

use std::sync::Arc;
use std::time::Instant;

use crate::exec::Slot;
use crate::oracle::{replay, Case, Check, Verdict};
use crate::query::{Clause, Expr, ExprKind, ItemKind, Query};

/// Whether a verdict still shows the failure being minimized (a crash
/// check fails only on the same kind of error).
pub fn still_fails(v: &Verdict) -> bool {
    matches!(v, Verdict::Fail(_))
}

struct Budget {
    deadline: Instant,
    tries: usize,
}

impl Budget {
    fn left(&self) -> bool {
        Instant::now() < self.deadline
    }
}

/// Minimizes `case` until `deadline`; returns the smallest failing case
/// found (the input if nothing smaller fails) and the number of replays.
pub fn minimize(case: &Case, deadline: Instant, slot: Option<Arc<Slot>>) -> (Case, usize) {
    let mut budget = Budget { deadline, tries: 0 };
    let mut best = case.clone();
    let test = |c: &Case, budget: &mut Budget| -> bool {
        if !budget.left() {
            return false;
        }
        budget.tries += 1;
        still_fails(&replay(c, slot.clone()))
    };
    // Rels, then nodes (dropping a node drops its rels).
    let n = best.graph.rels.len();
    let keep = ddmin(n, &mut budget, |mask, b| {
        let mut c = best.clone();
        c.graph = best.graph.retain(&vec![true; best.graph.nodes.len()], mask);
        test(&c, b)
    });
    best.graph = best
        .graph
        .retain(&vec![true; best.graph.nodes.len()], &keep);
    let n = best.graph.nodes.len();
    let keep = ddmin(n, &mut budget, |mask, b| {
        let mut c = best.clone();
        c.graph = best.graph.retain(mask, &vec![true; best.graph.rels.len()]);
        test(&c, b)
    });
    best.graph = best.graph.retain(&keep, &vec![true; best.graph.rels.len()]);
    // The writes before the check.
    let n = best.writes.len();
    let keep = ddmin(n, &mut budget, |mask, b| {
        let mut c = best.clone();
        c.writes = select(&best.writes, mask);
        test(&c, b)
    });
    best.writes = select(&best.writes, &keep);
    // Write steps.
    if let Check::Write { steps } = &best.check {
        let steps = steps.clone();
        let keep = ddmin(steps.len(), &mut budget, |mask, b| {
            let mut c = best.clone();
            c.check = Check::Write {
                steps: select(&steps, mask),
            };
            test(&c, b)
        });
        best.check = Check::Write {
            steps: select(&steps, &keep),
        };
    }
    // The query, greedily, until no candidate fails or time is up.
    loop {
        let mut improved = false;
        for cand in query_candidates(&best.check) {
            if !budget.left() {
                break;
            }
            let mut c = best.clone();
            c.check = cand;
            if test(&c, &mut budget) {
                best = c;
                improved = true;
                break;
            }
        }
        if !improved || !budget.left() {
            break;
        }
    }
    // A smaller graph may do now that the query is smaller.
    let n = best.graph.rels.len();
    let keep = ddmin(n, &mut budget, |mask, b| {
        let mut c = best.clone();
        c.graph = best.graph.retain(&vec![true; best.graph.nodes.len()], mask);
        test(&c, b)
    });
    best.graph = best
        .graph
        .retain(&vec![true; best.graph.nodes.len()], &keep);
    (best, budget.tries)
}

fn select<T: Clone>(items: &[T], mask: &[bool]) -> Vec<T> {
    items
        .iter()
        .zip(mask)
        .filter(|(_, k)| **k)
        .map(|(x, _)| x.clone())
        .collect()
}

/// Delta debugging: the smallest keep-mask over `n` items (that `test`
/// still accepts) found by removing ever smaller chunks.
fn ddmin(
    n: usize,
    budget: &mut Budget,
    mut test: impl FnMut(&[bool], &mut Budget) -> bool,
) -> Vec<bool> {
    let mut keep = vec![true; n];
    let mut chunks = 2usize;
    loop {
        let kept: Vec<usize> = (0..n).filter(|i| keep[*i]).collect();
        if kept.is_empty() || !budget.left() {
            break;
        }
        let chunks_now = chunks.min(kept.len());
        let size = kept.len().div_ceil(chunks_now);
        let mut removed_any = false;
        for chunk in kept.chunks(size) {
            let mut trial = keep.clone();
            for i in chunk {
                trial[*i] = false;
            }
            if test(&trial, budget) {
                keep = trial;
                removed_any = true;
            }
            if !budget.left() {
                break;
            }
        }
        if removed_any {
            chunks = chunks.saturating_sub(1).max(2);
        } else if size == 1 {
            break;
        } else {
            chunks = (chunks * 2).min(kept.len());
        }
    }
    keep
}

/// Smaller versions of the check's query and predicate.
fn query_candidates(check: &Check) -> Vec<Check> {
    let mut out = Vec::new();
    match check {
        Check::Tlp { query, at, pred } | Check::NoRec { query, at, pred } => {
            let remake = |q: Query, at: usize, p: Expr| match check {
                Check::Tlp { .. } => Check::Tlp {
                    query: q,
                    at,
                    pred: p,
                },
                _ => Check::NoRec {
                    query: q,
                    at,
                    pred: p,
                },
            };
            for p in expr_candidates(pred) {
                out.push(remake(query.clone(), *at, p));
            }
            for (q, new_at) in without_clauses(query, Some(*at)) {
                if let Some(a) = new_at {
                    out.push(remake(q, a, pred.clone()));
                }
            }
            for q in smaller_queries(query) {
                out.push(remake(q, *at, pred.clone()));
            }
        }
        Check::Diff { query } => {
            for (q, _) in without_clauses(query, None) {
                out.push(Check::Diff { query: q });
            }
            for q in smaller_queries(query) {
                out.push(Check::Diff { query: q });
            }
        }
        Check::Kuzu { query } => {
            for (q, _) in without_clauses(query, None) {
                out.push(Check::Kuzu { query: q });
            }
            for q in smaller_queries(query) {
                out.push(Check::Kuzu { query: q });
            }
        }
        Check::Write { .. } | Check::Crash { .. } => {}
    }
    out
}

/// The query without one of its clauses (not the first) or without one
/// pattern of a MATCH with several, and where clause `at` went (`None`
/// when it was the one removed). Candidates that leave a variable unbound
/// fail to reproduce and are dropped by the minimizer.
fn without_clauses(q: &Query, at: Option<usize>) -> Vec<(Query, Option<usize>)> {
    let mut out = Vec::new();
    for i in 1..q.clauses.len() {
        let mut c = q.clone();
        c.clauses.remove(i);
        c.scopes.remove(i);
        let new_at = match at {
            Some(a) if a == i => None,
            Some(a) if a > i => Some(a - 1),
            other => other,
        };
        if at.is_none() || new_at.is_some() {
            out.push((c, new_at.or(at)));
        }
    }
    for (i, clause) in q.clauses.iter().enumerate() {
        if let Clause::Match { patterns, .. } = clause {
            for k in 0..patterns.len() {
                if patterns.len() < 2 {
                    break;
                }
                let mut c = q.clone();
                if let Clause::Match { patterns, .. } = &mut c.clauses[i] {
                    patterns.remove(k);
                }
                out.push((c, at));
            }
        }
    }
    out
}

/// Queries with one thing taken out or simplified.
fn smaller_queries(q: &Query) -> Vec<Query> {
    let mut out = Vec::new();
    if let Some((_, branch)) = &q.union {
        let mut c = q.clone();
        c.union = None;
        out.push(c);
        for b in smaller_queries(branch) {
            let mut c = q.clone();
            if let Some((_, br)) = &mut c.union {
                **br = b;
            }
            out.push(c);
        }
    }
    // WHERE conjuncts and their subexpressions.
    for (ci, clause) in q.clauses.iter().enumerate() {
        let conds = match clause {
            Clause::Match { conds, .. } | Clause::With { conds, .. } => conds,
            Clause::Unwind { .. } => continue,
        };
        for k in 0..conds.len() {
            let mut c = q.clone();
            if let Clause::Match { conds, .. } | Clause::With { conds, .. } = &mut c.clauses[ci] {
                conds.remove(k);
            }
            out.push(c);
        }
        for (k, cond) in conds.iter().enumerate() {
            for e in expr_candidates(cond) {
                let mut c = q.clone();
                if let Clause::Match { conds, .. } | Clause::With { conds, .. } = &mut c.clauses[ci]
                {
                    conds[k] = e;
                }
                out.push(c);
            }
        }
    }
    // RETURN: drop ORDER BY / SKIP / LIMIT, then items (not in a UNION,
    // whose branches must keep their columns).
    if q.ret.skip.is_some() || q.ret.limit.is_some() {
        let mut c = q.clone();
        c.ret.skip = None;
        c.ret.limit = None;
        out.push(c);
    }
    if q.union.is_none() && q.ret.items.len() > 1 {
        for k in 0..q.ret.items.len() {
            let mut c = q.clone();
            c.ret.items.remove(k);
            c.ret.order.retain(|(i, _)| *i != k);
            for (i, _) in &mut c.ret.order {
                if *i > k {
                    *i -= 1;
                }
            }
            out.push(c);
        }
    }
    for (k, item) in q.ret.items.iter().enumerate() {
        if matches!(item.kind, ItemKind::Entity(_)) || item.expr.to_string() == "*" {
            continue;
        }
        for e in expr_candidates(&item.expr) {
            let mut c = q.clone();
            c.ret.items[k].expr = e;
            out.push(c);
        }
    }
    out
}

/// Expressions one step simpler than `e`: a same-typed child in its
/// place, a constant, or a child simplified.
pub fn expr_candidates(e: &Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    if let ExprKind::Op { args, binds, parts } = &e.kind {
        if !binds {
            for a in args {
                if a.ty == e.ty {
                    out.push(a.clone());
                }
            }
        }
        let simplest = Expr::simplest(&e.ty);
        if simplest != *e {
            out.push(simplest);
        }
        for (i, a) in args.iter().enumerate() {
            for smaller in expr_candidates(a) {
                let mut args2 = args.clone();
                args2[i] = smaller;
                out.push(Expr {
                    ty: e.ty.clone(),
                    kind: ExprKind::Op {
                        parts: parts.clone(),
                        args: args2,
                        binds: *binds,
                    },
                });
            }
        }
    }
    out.sort_by_key(Expr::size);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Ty;

    #[test]
    fn ddmin_finds_the_culprits() {
        let mut budget = Budget {
            deadline: Instant::now() + std::time::Duration::from_secs(10),
            tries: 0,
        };
        // Fails while items 3 and 17 are both kept.
        let keep = ddmin(40, &mut budget, |m, _| m[3] && m[17]);
        let kept: Vec<usize> = (0..40).filter(|i| keep[*i]).collect();
        assert_eq!(kept, vec![3, 17]);
    }

    #[test]
    fn expression_candidates_are_smaller_and_typed() {
        let a = Expr::atom(Ty::Int, "n1.a");
        let b = Expr::atom(Ty::Int, "3");
        let sum = Expr::op(Ty::Int, &["(", " + ", ")"], vec![a, b]);
        let cmp = Expr::op(
            Ty::Bool,
            &["(", " > ", ")"],
            vec![sum, Expr::atom(Ty::Int, "1")],
        );
        let cands = expr_candidates(&cmp);
        assert!(cands.iter().all(|c| c.ty == Ty::Bool));
        assert!(cands.iter().any(|c| c.to_string() == "(n1.a > 1)"));
        assert!(cands.iter().all(|c| c.size() < cmp.size() || c.size() == 1));
    }
}
