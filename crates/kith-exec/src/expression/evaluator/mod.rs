//! The compiled expression tree and its vectorized evaluation.

use kith_common::{Error, LogicalType, Result, Value, ValueVector, VectorData};
use kith_planner::expr::{
    BinaryOp, BoundExpr, BoundExprKind, PathCount, Quantifier, SlotId, UnaryOp,
};
use regex::Regex;

use super::cast::{cast_value, coerce};
use super::typed::{self, Scratch};
use super::{kernels, EvalContext, Evaluated, View};
use crate::result_set::ChunkState;
use crate::subquery::{CountProbe, SubqueryTable};
use kith_function::temporal::DatePart;
use kith_function::ScalarFunction;
use kith_planner::procedure::ProcedureRef;

mod eval;
mod nested;
mod subquery;
mod vectors;
use subquery::*;
use vectors::*;

/// Where a node's values are after evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// One value at this physical position of the node's vector.
    Flat(usize),
    /// Values at the selected positions of unflat chunk `.0`.
    Unflat(usize),
}

pub(super) struct Node {
    pub ty: LogicalType,
    pub kind: Kind,
    /// The node's result (unused by slots, which read the result set).
    pub out: ValueVector,
}

pub(super) enum Kind {
    Const(Value),
    Param(String),
    Slot {
        id: SlotId,
        loc: (usize, usize),
    },
    Unary(UnaryOp, Box<Node>),
    Binary {
        op: BinaryOp,
        l: Box<Node>,
        r: Box<Node>,
        /// Compiled pattern of `=~` with a literal right side.
        regex: Option<Regex>,
        scratch: Scratch,
        /// The hashed list of `x IN <literal or parameter list>`, built on
        /// first use and kept for the statement (a batch may be one row).
        in_list: Option<Box<kernels::InList>>,
    },
    Function {
        name: String,
        f: &'static ScalarFunction,
        args: Vec<Node>,
        buf: Vec<Value>,
        /// The arguments read per row (the unflat ones), reused per batch.
        varying: Vec<usize>,
    },
    Cast(Box<Node>),
    /// `date_part('<part>', x)`, `month(x)`, ... of a DATE or TIMESTAMP
    /// with the part known when compiled: one typed loop (the function path
    /// builds a `Value` per row and matches the part's name per row).
    DatePart(DatePart, Box<Node>),
    /// Evaluated row at a time so untaken branches never run (no spurious
    /// errors such as division by zero).
    Case {
        operand: Option<Box<Node>>,
        whens: Vec<(Node, Node)>,
        else_: Option<Box<Node>>,
        slots: Vec<SlotId>,
    },
    List(Vec<Node>),
    /// A map literal: keys and value nodes.
    Map(Vec<String>, Vec<Node>),
    Field(Box<Node>, String),
    Index(Box<Node>, Box<Node>),
    Slice(Box<Node>, Option<Box<Node>>, Option<Box<Node>>),
    /// `size(nodes(p))`, `size(rels(p))`, also of a slice with constant
    /// bounds (`size(nodes(p)[1..-1])`): counted on the path value, no
    /// list built.
    PathCount(Box<Node>, PathCount),
    /// A comprehension variable: read from the frame of locals (only inside
    /// the body of a [`Nested`], which is evaluated value at a time).
    Local(u32),
    /// A list comprehension, quantifier or `reduce`.
    Nested(Box<Nested>),
    /// A call of a registered procedure with the row's argument values:
    /// its output rows as a list of structs.
    Procedure {
        procedure: ProcedureRef,
        args: Vec<Node>,
        buf: Vec<Value>,
    },
    /// A probe of subquery table `index` with the row's key ids.
    Subquery {
        index: usize,
        keys: Vec<Node>,
        buf: Vec<Value>,
        ids: Vec<u64>,
        /// A one-key table held by offset: this evaluator's probe of it
        /// (made on the first batch).
        probe: Option<Box<SubqueryProbe>>,
    },
}

/// What a [`Nested`] node computes from its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NestedOp {
    Comprehension,
    Quantifier(Quantifier),
    Reduce,
}

/// A list comprehension, quantifier or `reduce`. The list is evaluated
/// vectorized like any other child; then, per tuple, each element is moved
/// into the frame of locals and the body (`predicate`, `projection`)
/// evaluated value at a time against it. The frame is reused across tuples
/// and elements, so the per-element work allocates nothing beyond what the
/// body's own values need.
pub(super) struct Nested {
    op: NestedOp,
    /// Local index of the element variable.
    var: u32,
    /// Local index of `reduce`'s accumulator.
    acc: u32,
    list: Node,
    /// `reduce`'s initial value.
    init: Option<Node>,
    predicate: Option<Node>,
    /// The projection of a comprehension, the step of `reduce`.
    projection: Option<Node>,
    /// Slots the body and `init` read (they decide the tuple positions).
    slots: Vec<SlotId>,
    /// The frame of locals used when this node is evaluated vectorized.
    frame: Vec<Value>,
}

/// Iterates the selected positions of an unflat chunk state.
macro_rules! each_pos {
    ($state:expr, $p:ident => $body:block) => {
        match &$state.sel {
            Some(sel) => {
                for &q in sel.iter() {
                    let $p = q as usize;
                    $body
                }
            }
            None => {
                for $p in 0..$state.len {
                    $body
                }
            }
        }
    };
}
pub(super) use each_pos;

impl Node {
    /// Compiles a bound expression into an evaluator node; a constant's
    /// value is placed in the node's result vector once.
    pub fn compile(e: &BoundExpr) -> Result<Node> {
        let kind = Kind::compile(e)?;
        let mut out = ValueVector::new(e.ty.clone(), 0);
        if let Kind::Const(v) = &kind {
            out.resize(1);
            out.set_value(0, &coerce(v.clone(), &e.ty)?);
        }
        Ok(Node {
            ty: e.ty.clone(),
            kind,
            out,
        })
    }

    /// This node's result as a function argument: a slot's vector is
    /// shared with the rest of the query; any other node's is its own,
    /// read once per row, so its values can be moved out.
    fn arg<'a>(&'a mut self, ctx: &'a EvalContext) -> Arg<'a> {
        match &self.kind {
            Kind::Slot { loc, .. } => Arg::Shared(&ctx.rs.chunks[loc.0].vectors[loc.1]),
            _ => Arg::Owned(&mut self.out),
        }
    }

    /// The vector holding this node's values after `eval`.
    #[inline]
    pub fn vector<'a>(&'a self, ctx: &'a EvalContext) -> &'a ValueVector {
        match &self.kind {
            Kind::Slot { loc, .. } => &ctx.rs.chunks[loc.0].vectors[loc.1],
            _ => &self.out,
        }
    }

    /// Evaluates the root; a root that reads a slot of its own type is not
    /// copied: the view is the slot's vector, a flat value at its position.
    pub fn evaluate_view<'s>(
        &'s mut self,
        ctx: &'s EvalContext,
        out: &'s mut ValueVector,
    ) -> Result<View<'s>> {
        if matches!(self.kind, Kind::Slot { .. }) {
            // `eval` places the slot (sets `loc`) before it is read.
            let mode = self.eval(ctx)?;
            let Kind::Slot { loc, .. } = self.kind else {
                return Err(Error::internal("a slot node changed kind"));
            };
            let src = &ctx.rs.chunks[loc.0].vectors[loc.1];
            if src.ty == self.ty {
                return Ok(match mode {
                    Mode::Flat(p) => View {
                        vector: src,
                        evaluated: Evaluated::Flat,
                        flat_pos: p,
                    },
                    Mode::Unflat(u) => View {
                        vector: src,
                        evaluated: Evaluated::Unflat(u),
                        flat_pos: 0,
                    },
                });
            }
        }
        let evaluated = self.evaluate_root(ctx, out)?;
        Ok(View {
            vector: out,
            evaluated,
            flat_pos: 0,
        })
    }

    /// Evaluates the root into `out` (swapping scratch vectors, no copy).
    pub fn evaluate_root(&mut self, ctx: &EvalContext, out: &mut ValueVector) -> Result<Evaluated> {
        if out.ty != self.ty {
            *out = ValueVector::new(self.ty.clone(), 0);
        }
        match &self.kind {
            Kind::Slot { .. } | Kind::Const(_) | Kind::Param(_) => {
                let mode = self.eval(ctx)?;
                let src = self.vector(ctx);
                Ok(match mode {
                    Mode::Flat(p) => {
                        out.reset(1);
                        copy_value(out, 0, src, p)?;
                        Evaluated::Flat
                    }
                    Mode::Unflat(u) if out.ty == src.ty => {
                        copy_positions(out, ctx, mode, src);
                        Evaluated::Unflat(u)
                    }
                    Mode::Unflat(u) => {
                        let state = &ctx.rs.chunks[u].state;
                        out.reset(state.len);
                        each_pos!(state, p => { copy_value(out, p, src, p)?; });
                        Evaluated::Unflat(u)
                    }
                })
            }
            _ => {
                std::mem::swap(&mut self.out, out);
                let r = self.eval(ctx);
                std::mem::swap(&mut self.out, out);
                Ok(match r? {
                    Mode::Flat(p) => {
                        debug_assert_eq!(p, 0);
                        Evaluated::Flat
                    }
                    Mode::Unflat(u) => Evaluated::Unflat(u),
                })
            }
        }
    }
}

impl Kind {
    /// The kind of node `e` compiles to, its children compiled.
    fn compile(e: &BoundExpr) -> Result<Kind> {
        Ok(match &e.kind {
            BoundExprKind::Literal(v) => Kind::Const(v.clone()),
            BoundExprKind::Parameter(p) => Kind::Param(p.clone()),
            BoundExprKind::Slot(s) => Kind::Slot {
                id: *s,
                loc: (0, 0),
            },
            BoundExprKind::Unary(op, x) => Kind::Unary(*op, Box::new(Node::compile(x)?)),
            BoundExprKind::Binary(op, l, r) => Kind::binary(*op, l, r)?,
            BoundExprKind::Function(name, args) => Kind::function(e, name, args)?,
            BoundExprKind::Cast(x) => Kind::Cast(Box::new(Node::compile(x)?)),
            BoundExprKind::Case {
                operand,
                whens,
                else_,
            } => Kind::case(e, operand.as_deref(), whens, else_.as_deref())?,
            // A list of literals is one constant (built once, and `IN` over
            // it hashes it once per statement).
            BoundExprKind::List(items)
                if items
                    .iter()
                    .all(|i| matches!(i.kind, BoundExprKind::Literal(_))) =>
            {
                Kind::literal_list(&e.ty, items)?
            }
            BoundExprKind::List(items) => {
                Kind::List(items.iter().map(Node::compile).collect::<Result<_>>()?)
            }
            BoundExprKind::Map(items) => Kind::Map(
                items.iter().map(|(k, _)| k.clone()).collect(),
                items
                    .iter()
                    .map(|(_, v)| Node::compile(v))
                    .collect::<Result<_>>()?,
            ),
            BoundExprKind::Field(x, key) => Kind::Field(Box::new(Node::compile(x)?), key.clone()),
            BoundExprKind::Index(x, i) => {
                Kind::Index(Box::new(Node::compile(x)?), Box::new(Node::compile(i)?))
            }
            BoundExprKind::Slice(x, a, b) => {
                let bound = |b: &Option<Box<BoundExpr>>| -> Result<Option<Box<Node>>> {
                    b.as_deref()
                        .map(Node::compile)
                        .transpose()
                        .map(|n| n.map(Box::new))
                };
                Kind::Slice(Box::new(Node::compile(x)?), bound(a)?, bound(b)?)
            }
            BoundExprKind::Local(i) => Kind::Local(*i),
            BoundExprKind::ListComprehension {
                var,
                list,
                predicate,
                projection,
            } => Kind::Nested(Box::new(Nested::compile(
                NestedOp::Comprehension,
                (*var, 0),
                list,
                None,
                predicate.as_deref(),
                projection.as_deref(),
            )?)),
            BoundExprKind::Quantifier {
                kind,
                var,
                list,
                predicate,
            } => Kind::Nested(Box::new(Nested::compile(
                NestedOp::Quantifier(*kind),
                (*var, 0),
                list,
                None,
                Some(predicate),
                None,
            )?)),
            BoundExprKind::Reduce {
                acc,
                init,
                var,
                list,
                expr,
            } => Kind::Nested(Box::new(Nested::compile(
                NestedOp::Reduce,
                (*var, *acc),
                list,
                Some(init),
                None,
                Some(expr),
            )?)),
            BoundExprKind::Procedure { procedure, args } => Kind::Procedure {
                procedure: procedure.clone(),
                args: args.iter().map(Node::compile).collect::<Result<_>>()?,
                buf: Vec::with_capacity(args.len()),
            },
            BoundExprKind::Subquery { index, keys } => Kind::Subquery {
                index: *index,
                keys: keys.iter().map(Node::compile).collect::<Result<_>>()?,
                buf: Vec::with_capacity(keys.len()),
                ids: Vec::with_capacity(keys.len()),
                probe: None,
            },
        })
    }

    /// The call `e` of function `name`: a count of a path's nodes or rels,
    /// a part of a DATE or TIMESTAMP, or a call of the function library.
    fn function(e: &BoundExpr, name: &str, args: &[BoundExpr]) -> Result<Kind> {
        if e.path_count().is_some() {
            let (path, count) = e
                .path_count()
                .ok_or_else(|| Error::internal("path count without its path"))?;
            return Ok(Kind::PathCount(Box::new(Node::compile(path)?), count));
        }
        if date_part_call(name, args).is_some() {
            let (part, arg) = date_part_call(name, args)
                .ok_or_else(|| Error::internal("date part call without its part"))?;
            return Ok(Kind::DatePart(part, Box::new(Node::compile(arg)?)));
        }
        let f = kith_function::scalar(name)
            .ok_or_else(|| Error::semantic(format!("unknown function '{name}'")).or_span(e.span))?;
        Ok(Kind::Function {
            name: name.to_string(),
            f,
            args: args.iter().map(Node::compile).collect::<Result<_>>()?,
            buf: Vec::with_capacity(args.len()),
            varying: Vec::with_capacity(args.len()),
        })
    }

    /// `l op r`; the pattern of a `=~` with a literal right side compiled
    /// once, here.
    fn binary(op: BinaryOp, l: &BoundExpr, r: &BoundExpr) -> Result<Kind> {
        let regex = match (&r.kind, op) {
            (BoundExprKind::Literal(Value::String(p)), BinaryOp::RegexMatch) => {
                Some(kernels::compile_regex(p).map_err(|err| err.or_span(r.span))?)
            }
            _ => None,
        };
        Ok(Kind::Binary {
            op,
            l: Box::new(Node::compile(l)?),
            r: Box::new(Node::compile(r)?),
            regex,
            scratch: Scratch::default(),
            in_list: None,
        })
    }

    /// The CASE `e`, with the slots it reads (they decide the tuple
    /// positions it is evaluated at).
    fn case(
        e: &BoundExpr,
        operand: Option<&BoundExpr>,
        whens: &[(BoundExpr, BoundExpr)],
        else_: Option<&BoundExpr>,
    ) -> Result<Kind> {
        let mut slots = Vec::new();
        e.slots(&mut slots);
        slots.sort();
        slots.dedup();
        Ok(Kind::Case {
            operand: operand.map(Node::compile).transpose()?.map(Box::new),
            whens: whens
                .iter()
                .map(|(w, t)| Ok((Node::compile(w)?, Node::compile(t)?)))
                .collect::<Result<_>>()?,
            else_: else_.map(Node::compile).transpose()?.map(Box::new),
            slots,
        })
    }

    /// A list of literals of type `ty` as one constant, each item coerced
    /// to the element type.
    fn literal_list(ty: &LogicalType, items: &[BoundExpr]) -> Result<Kind> {
        let elem = match ty {
            LogicalType::List(t) => Some(&**t),
            _ => None,
        };
        let values = items
            .iter()
            .map(|i| match (&i.kind, elem) {
                (BoundExprKind::Literal(v), Some(t)) => coerce(v.clone(), t),
                (BoundExprKind::Literal(v), None) => Ok(v.clone()),
                _ => Err(Error::internal("list item is not a literal")),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Kind::Const(Value::list(values)))
    }
}

/// A call [`Kind::DatePart`] serves: the part and the DATE or TIMESTAMP
/// argument.
fn date_part_call<'a>(name: &str, args: &'a [BoundExpr]) -> Option<(DatePart, &'a BoundExpr)> {
    let (part, arg) = match (name, args) {
        ("date_part" | "datepart", [part, arg]) => match &part.kind {
            BoundExprKind::Literal(Value::String(s)) => (DatePart::of(s)?, arg),
            _ => return None,
        },
        ("year" | "month" | "day" | "hour" | "minute" | "second", [arg]) => {
            (DatePart::of(name)?, arg)
        }
        _ => return None,
    };
    matches!(arg.ty, LogicalType::Date | LogicalType::Timestamp).then_some((part, arg))
}

/// Physical position to read for tuple position `p` given a child's mode.
#[inline]
fn at(m: Mode, p: usize) -> usize {
    match m {
        Mode::Flat(fp) => fp,
        Mode::Unflat(_) => p,
    }
}

/// The unflat chunk the children depend on, if any.
pub(super) fn unflat_of(modes: &[Mode]) -> Result<Option<usize>> {
    let mut u = None;
    for m in modes {
        if let Mode::Unflat(c) = m {
            match u {
                Some(prev) if prev != *c => {
                    return Err(Error::internal("expression reads two unflat chunks"));
                }
                _ => u = Some(*c),
            }
        }
    }
    Ok(u)
}

/// A [`Kind::Subquery`]'s probe of a table held by offset, and the
/// positions of a batch's non-NULL keys.
pub(super) struct SubqueryProbe {
    exists: bool,
    counts: CountProbe,
    positions: Vec<usize>,
}

#[cfg(test)]
mod path_count_tests {
    use std::sync::Arc;

    use kith_common::{InternalId, NodeValue, PathValue, RelValue, TableId, Value};

    use super::{count_path, kernels, PathCount};

    /// Counting a path's nodes or rels through a slice gives the size of
    /// the list the slice kernel builds, for every length and bound.
    #[test]
    fn path_counts_match_the_sizes_of_sliced_lists() {
        let node = |i: u64| {
            Arc::new(NodeValue {
                id: InternalId::new(TableId(1), i),
                label: "N".into(),
                properties: Arc::from(Vec::new()),
            })
        };
        for len in 0..5u64 {
            let path = PathValue::new(
                (0..=len).map(node).collect(),
                (0..len)
                    .map(|i| {
                        Arc::new(RelValue {
                            id: InternalId::new(TableId(2), i),
                            label: "R".into(),
                            src: InternalId::new(TableId(1), i),
                            dst: InternalId::new(TableId(1), i + 1),
                            properties: Arc::from(Vec::new()),
                        })
                    })
                    .collect(),
            )
            .unwrap();
            let path = Value::Path(Arc::new(path));
            let Value::Path(p) = &path else {
                unreachable!()
            };
            for rels in [false, true] {
                let n = if rels { p.rel_count() } else { p.node_count() };
                let list = Value::list(vec![Value::Null; n]);
                let bounds = (-8..8).map(Some).chain([None]);
                for from in bounds.clone() {
                    for to in bounds.clone() {
                        let (f, t) = (from.map(Value::Int64), to.map(Value::Int64));
                        let Value::List(want) =
                            kernels::slice(&list, f.as_ref(), t.as_ref()).unwrap()
                        else {
                            panic!("slice of a list is a list");
                        };
                        let count = PathCount {
                            rels,
                            slice: Some((from, to)),
                        };
                        assert_eq!(
                            count_path(count, &path).unwrap(),
                            Value::Int64(want.len() as i64)
                        );
                    }
                }
                let whole = PathCount { rels, slice: None };
                assert_eq!(count_path(whole, &path).unwrap(), Value::Int64(n as i64));
                assert_eq!(count_path(whole, &Value::Null).unwrap(), Value::Null);
                assert!(count_path(whole, &Value::Int64(1)).is_err());
            }
        }
    }
}
