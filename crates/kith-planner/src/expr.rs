//! Bound expressions: names resolved, types inferred, ready for the executor.

use kith_common::{LogicalType, Span, Value};

use crate::procedure::ProcedureRef;
pub use kith_parser::ast::{BinaryOp, Quantifier, UnaryOp};

/// A value computed by an operator (a property, a node or rel id, an aggregate
/// result, a projected column). Operators write slots into the result set; the
/// physical plan's layout says where each slot lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotId(pub u32);

/// The bounds of a slice with literal bounds (`None`: open).
pub type SliceBounds = (Option<i64>, Option<i64>);

/// What [`BoundExpr::path_count`] counts: a path's nodes or rels, through
/// a slice with these bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathCount {
    pub rels: bool,
    pub slice: Option<SliceBounds>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BoundExpr {
    pub kind: BoundExprKind,
    /// The result type. Binary arithmetic on integers is INT64, on any float
    /// DOUBLE; comparisons and logic are BOOL.
    pub ty: LogicalType,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BoundExprKind {
    Literal(Value),
    /// `$name`; the value is supplied at execution.
    Parameter(String),
    Slot(SlotId),
    Unary(UnaryOp, Box<BoundExpr>),
    Binary(BinaryOp, Box<BoundExpr>, Box<BoundExpr>),
    /// A scalar function by lower-case name (aggregates never appear here: the
    /// planner turns them into slots of an aggregate operator).
    Function(String, Vec<BoundExpr>),
    /// Convert the operand to `ty`.
    Cast(Box<BoundExpr>),
    Case {
        operand: Option<Box<BoundExpr>>,
        whens: Vec<(BoundExpr, BoundExpr)>,
        else_: Option<Box<BoundExpr>>,
    },
    List(Vec<BoundExpr>),
    /// A map literal `{a: 1, b: 'x'}`; evaluates to a `Value::Struct`.
    Map(Vec<(String, BoundExpr)>),
    /// `expr.key` on a map, node or rel value (NULL when the key is absent).
    Field(Box<BoundExpr>, String),
    /// `list[i]` (negative from the end) or `map[key]`.
    Index(Box<BoundExpr>, Box<BoundExpr>),
    /// `list[from..to]`; a missing bound is open.
    Slice(
        Box<BoundExpr>,
        Option<Box<BoundExpr>>,
        Option<Box<BoundExpr>>,
    ),
    /// A variable local to the enclosing comprehension, quantifier or
    /// `reduce` (by index into the evaluator's frame of locals).
    Local(u32),
    /// `[x IN list WHERE predicate | projection]`; `var` is the local `x`.
    ListComprehension {
        var: u32,
        list: Box<BoundExpr>,
        predicate: Option<Box<BoundExpr>>,
        projection: Option<Box<BoundExpr>>,
    },
    /// `all/any/none/single(x IN list WHERE predicate)`.
    Quantifier {
        kind: Quantifier,
        var: u32,
        list: Box<BoundExpr>,
        predicate: Box<BoundExpr>,
    },
    /// `reduce(acc = init, x IN list | expr)`.
    Reduce {
        acc: u32,
        init: Box<BoundExpr>,
        var: u32,
        list: Box<BoundExpr>,
        expr: Box<BoundExpr>,
    },
    /// A subquery in an expression (`EXISTS { ... }`, `COUNT { ... }`, a
    /// pattern predicate or a pattern comprehension), decorrelated: the
    /// query's subquery `index` runs once before the query and yields a table
    /// from the ids of the outer variables it uses (`keys`, node or rel ids)
    /// to its value for them; this looks the row's keys up.
    Subquery {
        index: usize,
        keys: Vec<BoundExpr>,
    },
    /// `CALL proc(args)` inside a query: the procedure's output rows for the
    /// row's argument values, as a list of structs (one field per output);
    /// the binder unwinds it. A procedure without outputs yields one empty
    /// struct per call, so it keeps each row once.
    Procedure {
        procedure: ProcedureRef,
        args: Vec<BoundExpr>,
    },
}

impl BoundExpr {
    /// The conjunction of `conjuncts` (None when there are none), spanning
    /// the first.
    pub fn and_all(conjuncts: impl IntoIterator<Item = BoundExpr>) -> Option<BoundExpr> {
        conjuncts.into_iter().reduce(|acc, e| {
            let span = acc.span;
            BoundExpr {
                kind: BoundExprKind::Binary(BinaryOp::And, Box::new(acc), Box::new(e)),
                ty: LogicalType::Bool,
                span,
            }
        })
    }

    pub fn literal(v: Value, span: Span) -> BoundExpr {
        let ty = v.logical_type();
        BoundExpr {
            kind: BoundExprKind::Literal(v),
            ty,
            span,
        }
    }

    pub fn slot(slot: SlotId, ty: LogicalType, span: Span) -> BoundExpr {
        BoundExpr {
            kind: BoundExprKind::Slot(slot),
            ty,
            span,
        }
    }

    /// The integer a literal (`3`, `-3`) stands for.
    pub fn as_int_literal(&self) -> Option<i64> {
        match &self.kind {
            BoundExprKind::Literal(Value::Int64(i)) => Some(*i),
            BoundExprKind::Unary(UnaryOp::Neg, x) => x.as_int_literal()?.checked_neg(),
            BoundExprKind::Unary(UnaryOp::Plus, x) => x.as_int_literal(),
            _ => None,
        }
    }

    /// `x[a..b]` with integer-literal (or absent) bounds: `x` and the
    /// bounds.
    pub fn as_literal_slice(&self) -> Option<(&BoundExpr, SliceBounds)> {
        let BoundExprKind::Slice(x, from, to) = &self.kind else {
            return None;
        };
        let bound = |b: &Option<Box<BoundExpr>>| match b.as_deref() {
            None => Some(None),
            Some(b) => b.as_int_literal().map(Some),
        };
        Some((x, (bound(from)?, bound(to)?)))
    }

    /// `size(nodes(p))`, `size(rels(p))`, or `size()` of a slice of either
    /// with integer-literal bounds (`nodes(e)` of a recursive rel is bound
    /// as `nodes(e)[1..-1]`): the path `p` and what is counted, which needs
    /// no list.
    pub fn path_count(&self) -> Option<(&BoundExpr, PathCount)> {
        let BoundExprKind::Function(name, args) = &self.kind else {
            return None;
        };
        let [arg] = args.as_slice() else { return None };
        if name != "size" {
            return None;
        }
        let (list, slice) = match arg.as_literal_slice() {
            Some((x, bounds)) => (x, Some(bounds)),
            None => (arg, None),
        };
        let BoundExprKind::Function(f, inner) = &list.kind else {
            return None;
        };
        let [path] = inner.as_slice() else {
            return None;
        };
        let rels = match f.as_str() {
            "nodes" => false,
            "rels" | "relationships" => true,
            _ => return None,
        };
        (path.ty == LogicalType::Path).then_some((path, PathCount { rels, slice }))
    }

    /// Every slot the expression reads.
    /// Whether the expression calls scalar function `name` anywhere.
    pub fn calls(&self, name: &str) -> bool {
        let mut found = matches!(&self.kind, BoundExprKind::Function(f, _) if f == name);
        self.for_each_operand(&mut |c| found = found || c.calls(name));
        found
    }

    pub fn slots(&self, out: &mut Vec<SlotId>) {
        match &self.kind {
            BoundExprKind::Slot(s) => out.push(*s),
            _ => self.for_each_operand(&mut |c| c.slots(out)),
        }
    }

    /// Calls `f` on every direct subexpression, of every kind.
    pub fn for_each_operand(&self, f: &mut dyn FnMut(&BoundExpr)) {
        match &self.kind {
            BoundExprKind::Slot(_)
            | BoundExprKind::Literal(_)
            | BoundExprKind::Parameter(_)
            | BoundExprKind::Local(_) => {}
            BoundExprKind::Unary(_, e) | BoundExprKind::Cast(e) => f(e),
            BoundExprKind::Binary(_, a, b) => {
                f(a);
                f(b);
            }
            BoundExprKind::Function(_, args) | BoundExprKind::List(args) => args.iter().for_each(f),
            BoundExprKind::Case {
                operand,
                whens,
                else_,
            } => {
                operand.iter().for_each(|o| f(o));
                for (w, t) in whens {
                    f(w);
                    f(t);
                }
                else_.iter().for_each(|e| f(e));
            }
            _ => self.for_each_child(f),
        }
    }

    /// Calls `f` on every direct subexpression of the kinds added for nested
    /// values and comprehensions (maps, field access, indexing, slicing,
    /// comprehensions, quantifiers, reduce, subquery keys); other kinds are not
    /// visited.
    pub fn for_each_child(&self, f: &mut dyn FnMut(&BoundExpr)) {
        match &self.kind {
            BoundExprKind::Map(items) => items.iter().for_each(|(_, e)| f(e)),
            BoundExprKind::Field(x, _) => f(x),
            BoundExprKind::Index(x, i) => {
                f(x);
                f(i);
            }
            BoundExprKind::Slice(x, a, b) => {
                f(x);
                a.iter().chain(b).for_each(|e| f(e));
            }
            BoundExprKind::ListComprehension {
                list,
                predicate,
                projection,
                ..
            } => {
                f(list);
                predicate.iter().chain(projection).for_each(|e| f(e));
            }
            BoundExprKind::Quantifier {
                list, predicate, ..
            } => {
                f(list);
                f(predicate);
            }
            BoundExprKind::Reduce {
                init, list, expr, ..
            } => {
                f(init);
                f(list);
                f(expr);
            }
            BoundExprKind::Subquery { keys, .. } => keys.iter().for_each(f),
            BoundExprKind::Procedure { args, .. } => args.iter().for_each(f),
            _ => {}
        }
    }

    /// A copy with `f` applied to every direct subexpression of the kinds
    /// [`BoundExpr::for_each_child`] visits (others are cloned as they are).
    pub fn map_children(&self, f: &mut dyn FnMut(&BoundExpr) -> BoundExpr) -> BoundExpr {
        let mut bx = |e: &BoundExpr| Box::new(f(e));
        let kind = match &self.kind {
            BoundExprKind::Map(items) => {
                BoundExprKind::Map(items.iter().map(|(k, e)| (k.clone(), *bx(e))).collect())
            }
            BoundExprKind::Field(x, k) => BoundExprKind::Field(bx(x), k.clone()),
            BoundExprKind::Index(x, i) => {
                let x = bx(x);
                BoundExprKind::Index(x, bx(i))
            }
            BoundExprKind::Slice(x, a, b) => {
                let x = bx(x);
                let a = a.as_deref().map(&mut bx);
                let b = b.as_deref().map(&mut bx);
                BoundExprKind::Slice(x, a, b)
            }
            BoundExprKind::ListComprehension {
                var,
                list,
                predicate,
                projection,
            } => BoundExprKind::ListComprehension {
                var: *var,
                list: bx(list),
                predicate: predicate.as_deref().map(&mut bx),
                projection: projection.as_deref().map(&mut bx),
            },
            BoundExprKind::Quantifier {
                kind,
                var,
                list,
                predicate,
            } => BoundExprKind::Quantifier {
                kind: *kind,
                var: *var,
                list: bx(list),
                predicate: bx(predicate),
            },
            BoundExprKind::Reduce {
                acc,
                init,
                var,
                list,
                expr,
            } => BoundExprKind::Reduce {
                acc: *acc,
                init: bx(init),
                var: *var,
                list: bx(list),
                expr: bx(expr),
            },
            BoundExprKind::Subquery { index, keys } => BoundExprKind::Subquery {
                index: *index,
                keys: keys.iter().map(|k| *bx(k)).collect(),
            },
            BoundExprKind::Procedure { procedure, args } => BoundExprKind::Procedure {
                procedure: procedure.clone(),
                args: args.iter().map(|a| *bx(a)).collect(),
            },
            other => other.clone(),
        };
        BoundExpr {
            kind,
            ty: self.ty.clone(),
            span: self.span,
        }
    }
}
