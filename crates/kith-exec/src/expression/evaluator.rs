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
    pub fn compile(e: &BoundExpr) -> Result<Node> {
        let kind = match &e.kind {
            BoundExprKind::Literal(v) => Kind::Const(v.clone()),
            BoundExprKind::Parameter(p) => Kind::Param(p.clone()),
            BoundExprKind::Slot(s) => Kind::Slot {
                id: *s,
                loc: (0, 0),
            },
            BoundExprKind::Unary(op, x) => Kind::Unary(*op, Box::new(Node::compile(x)?)),
            BoundExprKind::Binary(op, l, r) => {
                let regex = match (&r.kind, op) {
                    (BoundExprKind::Literal(Value::String(p)), BinaryOp::RegexMatch) => {
                        Some(kernels::compile_regex(p).map_err(|err| err.or_span(r.span))?)
                    }
                    _ => None,
                };
                Kind::Binary {
                    op: *op,
                    l: Box::new(Node::compile(l)?),
                    r: Box::new(Node::compile(r)?),
                    regex,
                    scratch: Scratch::default(),
                    in_list: None,
                }
            }
            BoundExprKind::Function(..) if e.path_count().is_some() => {
                let (path, count) = e
                    .path_count()
                    .ok_or_else(|| Error::internal("path count without its path"))?;
                Kind::PathCount(Box::new(Node::compile(path)?), count)
            }
            BoundExprKind::Function(name, args) if date_part_call(name, args).is_some() => {
                let (part, arg) = date_part_call(name, args)
                    .ok_or_else(|| Error::internal("date part call without its part"))?;
                Kind::DatePart(part, Box::new(Node::compile(arg)?))
            }
            BoundExprKind::Function(name, args) => {
                let f = kith_function::scalar(name).ok_or_else(|| {
                    Error::semantic(format!("unknown function '{name}'")).or_span(e.span)
                })?;
                Kind::Function {
                    name: name.clone(),
                    f,
                    args: args.iter().map(Node::compile).collect::<Result<_>>()?,
                    buf: Vec::with_capacity(args.len()),
                    varying: Vec::with_capacity(args.len()),
                }
            }
            BoundExprKind::Cast(x) => Kind::Cast(Box::new(Node::compile(x)?)),
            BoundExprKind::Case {
                operand,
                whens,
                else_,
            } => {
                let mut slots = Vec::new();
                e.slots(&mut slots);
                slots.sort();
                slots.dedup();
                Kind::Case {
                    operand: operand
                        .as_deref()
                        .map(Node::compile)
                        .transpose()?
                        .map(Box::new),
                    whens: whens
                        .iter()
                        .map(|(w, t)| Ok((Node::compile(w)?, Node::compile(t)?)))
                        .collect::<Result<_>>()?,
                    else_: else_
                        .as_deref()
                        .map(Node::compile)
                        .transpose()?
                        .map(Box::new),
                    slots,
                }
            }
            // A list of literals is one constant (built once, and `IN` over
            // it hashes it once per statement).
            BoundExprKind::List(items)
                if items
                    .iter()
                    .all(|i| matches!(i.kind, BoundExprKind::Literal(_))) =>
            {
                let elem = match &e.ty {
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
                Kind::Const(Value::list(values))
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
        };
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

    /// Evaluates the node (and its children) over the current tuples.
    pub fn eval(&mut self, ctx: &EvalContext) -> Result<Mode> {
        match &mut self.kind {
            Kind::Const(_) => Ok(Mode::Flat(0)),
            Kind::Param(name) => {
                let v = ctx
                    .params
                    .get(name.as_str())
                    .ok_or_else(|| Error::runtime(format!("missing parameter ${name}")))?;
                self.out.reset(1);
                let v = coerce(v.clone(), &self.ty)?;
                self.out.set_value(0, &v);
                Ok(Mode::Flat(0))
            }
            Kind::Slot { id, loc } => {
                let (c, v) = ctx.layout.get(*id).ok_or_else(|| {
                    Error::internal(format!("slot {} is not in the result set layout", id.0))
                })?;
                *loc = (c, v);
                let state = &ctx.rs.chunks[c].state;
                Ok(match state.flat_position() {
                    Some(p) => Mode::Flat(p),
                    None => Mode::Unflat(c),
                })
            }
            Kind::Unary(op, x) => {
                let mx = x.eval(ctx)?;
                let src = x.vector(ctx);
                if let Some(m) = bool_unary(&mut self.out, ctx, *op, mx, src) {
                    return Ok(m);
                }
                let (op, ty) = (*op, &self.ty);
                map_rows(&mut self.out, ctx, &[mx], |p| {
                    let v = src.get_value(at(mx, p));
                    coerce(kernels::unary(op, &v)?, ty)
                })
            }
            Kind::Binary {
                op,
                l,
                r,
                regex,
                scratch,
                in_list,
            } => {
                let ml = l.eval(ctx)?;
                let mr = r.eval(ctx)?;
                let (lv, rv) = (l.vector(ctx), r.vector(ctx));
                let op = *op;
                // `x IN <one list for the whole batch>`: hash the list once
                // (once per statement when it is a literal or parameter).
                if let (BinaryOp::In, Mode::Flat(rp)) = (op, mr) {
                    let constant = matches!(r.kind, Kind::Const(_) | Kind::Param(_));
                    let fresh;
                    let set = match in_list {
                        Some(set) if constant => Some(&**set),
                        _ => {
                            fresh = kernels::InList::of(&rv.get_value(rp));
                            match fresh {
                                Some(set) if constant => Some(&**in_list.insert(Box::new(set))),
                                Some(ref set) => Some(set),
                                None => None,
                            }
                        }
                    };
                    if let Some(set) = set {
                        let ty = &self.ty;
                        return map_rows(&mut self.out, ctx, &[ml], |p| {
                            let a = lv.get_value(at(ml, p));
                            coerce(kernels::bool_value(set.test(&a)?), ty)
                        });
                    }
                }
                if let Some(mode) = unflat_of(&[ml, mr])? {
                    let state = &ctx.rs.chunks[mode].state;
                    if typed::binary(
                        op,
                        lv,
                        ml,
                        rv,
                        mr,
                        state,
                        regex.as_ref(),
                        scratch,
                        &mut self.out,
                    )? {
                        return Ok(Mode::Unflat(mode));
                    }
                }
                let (ty, regex) = (&self.ty, regex.as_ref());
                map_rows(&mut self.out, ctx, &[ml, mr], |p| {
                    let a = lv.get_value(at(ml, p));
                    let b = rv.get_value(at(mr, p));
                    coerce(kernels::binary(op, &a, &b, regex)?, ty)
                })
            }
            Kind::Function {
                name,
                f,
                args,
                buf,
                varying,
            } => {
                let mut modes = Vec::with_capacity(args.len());
                for a in args.iter_mut() {
                    modes.push(a.eval(ctx)?);
                }
                // id() of an entity slot (a subquery's key, say): its ids
                // copied as they are, not a value per row.
                if let ("id", [m], [a]) = (name.as_str(), modes.as_slice(), args.as_slice()) {
                    let src = a.vector(ctx);
                    if matches!(src.data, VectorData::Id(_))
                        && matches!(self.out.data, VectorData::Id(_))
                    {
                        return Ok(copy_positions(&mut self.out, ctx, *m, src));
                    }
                }
                // size() of a batch of lists: their lengths, no value per row.
                if let ("size", [Mode::Unflat(u)], [a]) =
                    (name.as_str(), modes.as_slice(), args.as_slice())
                {
                    if let Some(mode) = list_sizes(&mut self.out, ctx, *u, a.vector(ctx)) {
                        return Ok(mode);
                    }
                }
                let mut vecs: Vec<Arg<'_>> = args.iter_mut().map(|a| a.arg(ctx)).collect();
                let (ty, f, name) = (&self.ty, *f, name.as_str());
                // Flat arguments (constants, say) are read once per batch;
                // only the others per row.
                buf.clear();
                buf.extend(vecs.iter().zip(&modes).map(|(v, m)| match m {
                    Mode::Flat(p) => v.get(*p),
                    Mode::Unflat(_) => Value::Null,
                }));
                varying.clear();
                varying.extend((0..modes.len()).filter(|&i| matches!(modes[i], Mode::Unflat(_))));
                map_rows(&mut self.out, ctx, &modes, |p| {
                    for &i in varying.iter() {
                        buf[i] = vecs[i].take(at(modes[i], p));
                    }
                    if f.propagate_nulls && buf.iter().any(Value::is_null) {
                        return Ok(Value::Null);
                    }
                    let v = (f.func)(buf).map_err(|e| {
                        // Internal calls (`_node`, `_live`, ...) are the
                        // binder's rewrites; their names mean nothing to users.
                        if e.message.contains(name) || name.starts_with('_') {
                            e
                        } else {
                            Error::new(e.kind, format!("{name}(): {}", e.message))
                        }
                    })?;
                    coerce(v, ty)
                })
            }
            Kind::DatePart(part, x) => {
                let mx = x.eval(ctx)?;
                let src = x.vector(ctx);
                let part = *part;
                let out = &mut self.out;
                let write = |out: &mut ValueVector, dst: usize, p: usize| -> Result<()> {
                    let v = match &src.data {
                        _ if src.is_null(p) => None,
                        VectorData::I32(d) => Some(part.of_date(d[p])),
                        VectorData::I64(t) => Some(part.of_timestamp(t[p])),
                        _ => return Err(Error::internal("date part of a non-temporal vector")),
                    };
                    // `reset` cleared the nulls.
                    match (v, &mut out.data) {
                        (Some(v), VectorData::I64(o)) => o[dst] = v,
                        (Some(_), _) => {
                            return Err(Error::internal("date part into a non-INT64 vector"))
                        }
                        (None, _) => out.set_null(dst, true),
                    }
                    Ok(())
                };
                match mx {
                    Mode::Flat(p) => {
                        out.reset(1);
                        write(out, 0, p)?;
                        Ok(Mode::Flat(0))
                    }
                    Mode::Unflat(u) => {
                        let state: &ChunkState = &ctx.rs.chunks[u].state;
                        out.reset(state.len);
                        each_pos!(state, p => {
                            write(out, p, p)?;
                        });
                        Ok(Mode::Unflat(u))
                    }
                }
            }
            Kind::Cast(x) => {
                let mx = x.eval(ctx)?;
                let src = x.vector(ctx);
                let ty = &self.ty;
                map_rows(&mut self.out, ctx, &[mx], |p| {
                    cast_value(&src.get_value(at(mx, p)), ty)
                })
            }
            Kind::List(items) => {
                let mut modes = Vec::with_capacity(items.len());
                for a in items.iter_mut() {
                    modes.push(a.eval(ctx)?);
                }
                let vecs: Vec<&ValueVector> = items.iter().map(|a| a.vector(ctx)).collect();
                let ty = &self.ty;
                map_rows(&mut self.out, ctx, &modes, |p| {
                    let l = Value::list(
                        vecs.iter()
                            .zip(&modes)
                            .map(|(v, m)| v.get_value(at(*m, p)))
                            .collect(),
                    );
                    coerce(l, ty)
                })
            }
            Kind::Map(keys, items) => {
                let mut modes = Vec::with_capacity(items.len());
                for a in items.iter_mut() {
                    modes.push(a.eval(ctx)?);
                }
                let vecs: Vec<&ValueVector> = items.iter().map(|a| a.vector(ctx)).collect();
                let ty = &self.ty;
                map_rows(&mut self.out, ctx, &modes, |p| {
                    let m = Value::Struct(
                        keys.iter()
                            .zip(vecs.iter().zip(&modes))
                            .map(|(k, (v, m))| (k.clone(), v.get_value(at(*m, p))))
                            .collect(),
                    );
                    coerce(m, ty)
                })
            }
            Kind::Field(x, key) => {
                let mx = x.eval(ctx)?;
                let src = x.vector(ctx);
                let (ty, key) = (&self.ty, key.as_str());
                map_rows(&mut self.out, ctx, &[mx], |p| {
                    coerce(kernels::field(&src.get_value(at(mx, p)), key)?, ty)
                })
            }
            Kind::Index(x, i) => {
                let (mx, mi) = (x.eval(ctx)?, i.eval(ctx)?);
                let (xv, iv) = (x.vector(ctx), i.vector(ctx));
                let ty = &self.ty;
                map_rows(&mut self.out, ctx, &[mx, mi], |p| {
                    let v = kernels::index(&xv.get_value(at(mx, p)), &iv.get_value(at(mi, p)))?;
                    coerce(v, ty)
                })
            }
            Kind::Slice(x, a, b) => {
                let mx = x.eval(ctx)?;
                let ma = a.as_mut().map(|a| a.eval(ctx)).transpose()?;
                let mb = b.as_mut().map(|b| b.eval(ctx)).transpose()?;
                let xv = x.vector(ctx);
                let av = a.as_ref().map(|a| a.vector(ctx));
                let bv = b.as_ref().map(|b| b.vector(ctx));
                let modes: Vec<Mode> = [Some(mx), ma, mb].into_iter().flatten().collect();
                let ty = &self.ty;
                map_rows(&mut self.out, ctx, &modes, |p| {
                    let bound = |v: Option<&ValueVector>, m: Option<Mode>| match (v, m) {
                        (Some(v), Some(m)) => Some(v.get_value(at(m, p))),
                        _ => None,
                    };
                    let (from, to) = (bound(av, ma), bound(bv, mb));
                    let v = kernels::slice(&xv.get_value(at(mx, p)), from.as_ref(), to.as_ref())?;
                    coerce(v, ty)
                })
            }
            Kind::PathCount(x, count) => {
                let mx = x.eval(ctx)?;
                let xv = x.vector(ctx);
                let count = *count;
                map_rows(&mut self.out, ctx, &[mx], |p| {
                    count_path(count, &xv.get_value(at(mx, p)))
                })
            }
            Kind::Local(i) => Err(Error::internal(format!(
                "comprehension variable #{i} read outside its comprehension"
            ))),
            Kind::Subquery {
                index,
                keys,
                buf,
                ids,
                probe,
            } => {
                let table = subquery_table(ctx, *index)?;
                // One id key probing a table held by offset: typed writes.
                if let [k] = keys.as_mut_slice() {
                    if probe.is_none() {
                        *probe = table.count_probe().map(|(exists, counts)| {
                            Box::new(SubqueryProbe {
                                exists,
                                counts,
                                positions: Vec::new(),
                            })
                        });
                    }
                    if let Some(probe) = probe.as_deref_mut() {
                        let wanted = if probe.exists {
                            LogicalType::Bool
                        } else {
                            LogicalType::Int64
                        };
                        if k.ty == LogicalType::InternalId && self.ty == wanted {
                            let m = k.eval(ctx)?;
                            let keys = k.vector(ctx);
                            return probe_counts(&mut self.out, ctx, m, keys, table, probe);
                        }
                    }
                }
                let mut modes = Vec::with_capacity(keys.len());
                for k in keys.iter_mut() {
                    modes.push(k.eval(ctx)?);
                }
                let vecs: Vec<&ValueVector> = keys.iter().map(|k| k.vector(ctx)).collect();
                let ty = &self.ty;
                map_rows(&mut self.out, ctx, &modes, |p| {
                    buf.clear();
                    buf.extend(vecs.iter().zip(&modes).map(|(v, m)| v.get_value(at(*m, p))));
                    coerce(table.lookup(buf, ids)?, ty)
                })
            }
            Kind::Procedure {
                procedure,
                args,
                buf,
            } => {
                let mut modes = Vec::with_capacity(args.len() + 1);
                for a in args.iter_mut() {
                    modes.push(a.eval(ctx)?);
                }
                // Called once per tuple even with constant arguments: a
                // procedure may have effects (or not be deterministic).
                if unflat_of(&modes)?.is_none() {
                    if let Some(c) = ctx.rs.chunks.iter().position(|c| !c.state.is_flat()) {
                        modes.push(Mode::Unflat(c));
                    }
                }
                let vecs: Vec<&ValueVector> = args.iter().map(|a| a.vector(ctx)).collect();
                map_rows(&mut self.out, ctx, &modes, |p| {
                    buf.clear();
                    buf.extend(vecs.iter().zip(&modes).map(|(v, m)| v.get_value(at(*m, p))));
                    call_procedure(procedure, buf)
                })
            }
            Kind::Nested(n) => {
                let ml = n.list.eval(ctx)?;
                let modes = [ml, slots_mode(ctx, &n.slots)?];
                let mut frame = std::mem::take(&mut n.frame);
                let n: &Nested = n;
                let src = n.list.vector(ctx);
                let ty = &self.ty;
                let r = map_rows(&mut self.out, ctx, &modes, |p| {
                    let list = src.get_value(at(ml, p));
                    coerce(n.apply(ctx, p, list, &mut frame)?, ty)
                });
                if let Kind::Nested(n) = &mut self.kind {
                    n.frame = frame;
                }
                r
            }
            Kind::Case { slots, .. } => {
                let modes = [slots_mode(ctx, slots)?];
                let ty = self.ty.clone();
                let mut out =
                    std::mem::replace(&mut self.out, ValueVector::new(LogicalType::Any, 0));
                let this: &Node = self;
                let mut frame = Vec::new();
                let r = map_rows(&mut out, ctx, &modes, |p| {
                    coerce(this.eval_row(ctx, p, &mut frame)?, &ty)
                });
                self.out = out;
                r
            }
        }
    }

    /// Value-at-a-time evaluation at physical position `p` of the unflat
    /// chunk (flat slots read their current tuple); comprehension variables
    /// are read from `locals`.
    fn eval_row(&self, ctx: &EvalContext, p: usize, locals: &mut Vec<Value>) -> Result<Value> {
        Ok(match &self.kind {
            Kind::Const(v) => v.clone(),
            Kind::Param(name) => ctx
                .params
                .get(name.as_str())
                .cloned()
                .ok_or_else(|| Error::runtime(format!("missing parameter ${name}")))?,
            Kind::Slot { id, .. } => {
                let (c, v) = ctx.layout.get(*id).ok_or_else(|| {
                    Error::internal(format!("slot {} is not in the result set layout", id.0))
                })?;
                let chunk = &ctx.rs.chunks[c];
                chunk.vectors[v].get_value(chunk.state.flat_position().unwrap_or(p))
            }
            Kind::Unary(op, x) => kernels::unary(*op, &x.eval_row(ctx, p, locals)?)?,
            Kind::Binary {
                op, l, r, regex, ..
            } => {
                let a = l.eval_row(ctx, p, locals)?;
                let b = r.eval_row(ctx, p, locals)?;
                kernels::binary(*op, &a, &b, regex.as_ref())?
            }
            Kind::Function { f, args, .. } => {
                let vals = args
                    .iter()
                    .map(|a| a.eval_row(ctx, p, locals))
                    .collect::<Result<Vec<_>>>()?;
                if f.propagate_nulls && vals.iter().any(Value::is_null) {
                    Value::Null
                } else {
                    (f.func)(&vals)?
                }
            }
            Kind::DatePart(part, x) => match x.eval_row(ctx, p, locals)? {
                Value::Date(d) => Value::Int64(part.of_date(d.0)),
                Value::Timestamp(t) => Value::Int64(part.of_timestamp(t.0)),
                Value::Null => Value::Null,
                _ => return Err(Error::internal("date part of a non-temporal value")),
            },
            Kind::Cast(x) => cast_value(&x.eval_row(ctx, p, locals)?, &self.ty)?,
            Kind::List(items) => Value::list(
                items
                    .iter()
                    .map(|a| a.eval_row(ctx, p, locals))
                    .collect::<Result<_>>()?,
            ),
            Kind::Map(keys, items) => {
                let mut fields = Vec::with_capacity(keys.len());
                for (k, v) in keys.iter().zip(items) {
                    fields.push((k.clone(), v.eval_row(ctx, p, locals)?));
                }
                Value::Struct(fields)
            }
            Kind::Field(x, key) => kernels::field(&x.eval_row(ctx, p, locals)?, key)?,
            Kind::Index(x, i) => {
                let v = x.eval_row(ctx, p, locals)?;
                kernels::index(&v, &i.eval_row(ctx, p, locals)?)?
            }
            Kind::Slice(x, a, b) => {
                let v = x.eval_row(ctx, p, locals)?;
                let from = a.as_ref().map(|a| a.eval_row(ctx, p, locals)).transpose()?;
                let to = b.as_ref().map(|b| b.eval_row(ctx, p, locals)).transpose()?;
                kernels::slice(&v, from.as_ref(), to.as_ref())?
            }
            Kind::PathCount(x, count) => count_path(*count, &x.eval_row(ctx, p, locals)?)?,
            Kind::Local(i) => locals.get(*i as usize).cloned().unwrap_or(Value::Null),
            Kind::Subquery { index, keys, .. } => {
                let vals = keys
                    .iter()
                    .map(|k| k.eval_row(ctx, p, locals))
                    .collect::<Result<Vec<_>>>()?;
                let v = subquery_table(ctx, *index)?.lookup(&vals, &mut Vec::new())?;
                coerce(v, &self.ty)?
            }
            Kind::Procedure {
                procedure, args, ..
            } => {
                let vals = args
                    .iter()
                    .map(|a| a.eval_row(ctx, p, locals))
                    .collect::<Result<Vec<_>>>()?;
                call_procedure(procedure, &vals)?
            }
            Kind::Nested(n) => {
                let list = n.list.eval_row(ctx, p, locals)?;
                n.apply(ctx, p, list, locals)?
            }
            Kind::Case {
                operand,
                whens,
                else_,
                ..
            } => {
                let subject = operand
                    .as_ref()
                    .map(|o| o.eval_row(ctx, p, locals))
                    .transpose()?;
                for (w, t) in whens {
                    let wv = w.eval_row(ctx, p, locals)?;
                    let hit = match &subject {
                        Some(s) => kernels::equals(s, &wv) == Some(true),
                        None => kernels::truth(&wv)? == Some(true),
                    };
                    if hit {
                        return t.eval_row(ctx, p, locals);
                    }
                }
                match else_ {
                    Some(e) => e.eval_row(ctx, p, locals)?,
                    None => Value::Null,
                }
            }
        })
    }
}

/// The table of subquery `index` (run before the plan's first part).
fn subquery_table<'a>(
    ctx: &EvalContext<'a>,
    index: usize,
) -> Result<&'a crate::subquery::SubqueryTable> {
    ctx.subqueries.get(index).ok_or_else(|| {
        Error::not_supported(
            "a subquery (EXISTS, COUNT or a pattern) in this clause is not supported yet",
        )
    })
}

/// `size()` of a path's nodes or rels as [`PathCount`] says, for one path
/// value (NULL for NULL): what the lists `nodes()` / `rels()` and the
/// slice would give.
fn count_path(count: PathCount, v: &Value) -> Result<Value> {
    let n = match v {
        Value::Null => return Ok(Value::Null),
        Value::Path(p) if count.rels => p.rel_count() as i64,
        Value::Path(p) => p.node_count() as i64,
        other => {
            return Err(Error::type_error(format!(
                "{}() expects a PATH, got {}",
                if count.rels { "relationships" } else { "nodes" },
                other.logical_type()
            )))
        }
    };
    Ok(Value::Int64(match count.slice {
        None => n,
        Some((from, to)) => {
            let bound = |b: Option<i64>, default: i64| {
                let i = b.unwrap_or(default);
                let i = if i < 0 { i.saturating_add(n) } else { i };
                i.clamp(0, n)
            };
            (bound(to, n) - bound(from, 0)).max(0)
        }
    }))
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

/// Computes `f(p)` for every tuple position: once (at 0) when all inputs are
/// flat, else at each selected position of the unflat chunk.
/// `src` at mode `m` copied into `out` position by position, typed (the
/// two have the same physical type).
fn copy_positions(out: &mut ValueVector, ctx: &EvalContext, m: Mode, src: &ValueVector) -> Mode {
    match m {
        Mode::Flat(p) => {
            out.reset(1);
            out.copy_from(0, src, p);
            Mode::Flat(0)
        }
        Mode::Unflat(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            out.reset(state.len);
            each_pos!(state, p => { out.copy_from(p, src, p); });
            Mode::Unflat(u)
        }
    }
}

/// `size()` over an unflat group of list values (or NULLs), written
/// straight into the INT64 output; None (nothing written) when any value is
/// something else (a string's size is its length in characters, see the
/// function library) or the vectors are not of these kinds.
fn list_sizes(
    out: &mut ValueVector,
    ctx: &EvalContext,
    u: usize,
    src: &ValueVector,
) -> Option<Mode> {
    let VectorData::Value(values) = &src.data else {
        return None;
    };
    if !matches!(out.data, VectorData::I64(_)) {
        return None;
    }
    let state: &ChunkState = &ctx.rs.chunks[u].state;
    let mut lists_only = true;
    each_pos!(state, p => {
        lists_only &= src.is_null(p) || matches!(values[p], Value::List(_) | Value::Null);
    });
    if !lists_only {
        return None;
    }
    out.reset(state.len);
    each_pos!(state, p => {
        match &values[p] {
            // A NULL slot's value may be a stale one.
            Value::List(l) if !src.is_null(p) => {
                if let VectorData::I64(o) = &mut out.data {
                    o[p] = l.len() as i64;
                }
            }
            _ => out.set_null(p, true),
        }
    });
    Some(Mode::Unflat(u))
}

fn map_rows(
    out: &mut ValueVector,
    ctx: &EvalContext,
    modes: &[Mode],
    mut f: impl FnMut(usize) -> Result<Value>,
) -> Result<Mode> {
    match unflat_of(modes)? {
        None => {
            out.reset(1);
            let v = f(0)?;
            out.put_value(0, v);
            Ok(Mode::Flat(0))
        }
        Some(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            out.reset(state.len);
            each_pos!(state, p => {
                let v = f(p)?;
                out.put_value(p, v);
            });
            Ok(Mode::Unflat(u))
        }
    }
}

/// `NOT` of a boolean vector and `IS [NOT] NULL` of any vector over an
/// unflat group, written straight into the boolean output (`NOT EXISTS {
/// ... }` over every node went through a `Value` per node). None for the
/// other cases, which go value by value.
fn bool_unary(
    out: &mut ValueVector,
    ctx: &EvalContext,
    op: UnaryOp,
    m: Mode,
    src: &ValueVector,
) -> Option<Mode> {
    let Mode::Unflat(u) = m else {
        return None;
    };
    if out.ty != LogicalType::Bool
        || !matches!(op, UnaryOp::Not | UnaryOp::IsNull | UnaryOp::IsNotNull)
    {
        return None;
    }
    let input = match (&src.data, op) {
        (VectorData::Bool(b), UnaryOp::Not) => Some(b.as_slice()),
        (_, UnaryOp::Not) => return None,
        _ => None,
    };
    let state: &ChunkState = &ctx.rs.chunks[u].state;
    out.reset(state.len);
    let VectorData::Bool(o) = &mut out.data else {
        return None;
    };
    let nulls = src.nulls.may_have_nulls();
    match input {
        // Every position: one loop over slices cut to the length, which
        // vectorizes.
        Some(b) => match (&state.sel, b.get(..state.len), o.get_mut(..state.len)) {
            (None, Some(b), Some(o)) => o.iter_mut().zip(b).for_each(|(o, b)| *o = !b),
            _ => each_pos!(state, p => { o[p] = !b[p]; }),
        },
        None => {
            let is_null = op == UnaryOp::IsNull;
            each_pos!(state, p => { o[p] = (nulls && src.is_null(p)) == is_null; });
        }
    }
    if nulls && op == UnaryOp::Not {
        each_pos!(state, p => {
            if src.is_null(p) {
                out.set_null(p, true);
            }
        });
    }
    Some(Mode::Unflat(u))
}

/// A [`Kind::Subquery`]'s probe of a table held by offset, and the
/// positions of a batch's non-NULL keys.
pub(super) struct SubqueryProbe {
    exists: bool,
    counts: CountProbe,
    positions: Vec<usize>,
}

/// A one-key subquery probe of `keys` (ids at mode `m`) into a table
/// held by offset: booleans (count above 0) or integers into `out`,
/// whichever type it has; NULL for a NULL key. The counts come a batch at
/// a time, so the writes are one typed loop.
fn probe_counts(
    out: &mut ValueVector,
    ctx: &EvalContext,
    m: Mode,
    keys: &ValueVector,
    table: &SubqueryTable,
    probe: &mut SubqueryProbe,
) -> Result<Mode> {
    let VectorData::Id(ids) = &keys.data else {
        return Err(Error::internal("subquery key is not an id vector"));
    };
    let nulls = keys.nulls.may_have_nulls();
    let positions = &mut probe.positions;
    positions.clear();
    let len = match m {
        Mode::Unflat(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            match (&state.sel, nulls) {
                (None, false) => positions.extend(0..state.len),
                (Some(sel), false) => positions.extend(sel.iter().map(|&p| p as usize)),
                (_, true) => each_pos!(state, p => {
                    if !keys.is_null(p) {
                        positions.push(p);
                    }
                }),
            }
            state.len
        }
        Mode::Flat(src) => {
            if !keys.is_null(src) {
                positions.push(src);
            }
            src + 1
        }
    };
    let counts = probe.counts.counts(table, ids, positions, len)?;
    let other = || Error::internal("subquery count of another type");
    match m {
        Mode::Unflat(u) => {
            let state: &ChunkState = &ctx.rs.chunks[u].state;
            out.reset(state.len);
            let n = state.len;
            match (&mut out.data, &state.sel) {
                (VectorData::Bool(b), None) => {
                    b[..n].iter_mut().zip(counts).for_each(|(b, &c)| *b = c > 0);
                }
                (VectorData::I64(x), None) => {
                    x[..n]
                        .iter_mut()
                        .zip(counts)
                        .for_each(|(x, &c)| *x = c as i64);
                }
                (VectorData::Bool(b), Some(_)) => each_pos!(state, p => { b[p] = counts[p] > 0; }),
                (VectorData::I64(x), Some(_)) => {
                    each_pos!(state, p => { x[p] = counts[p] as i64; })
                }
                _ => return Err(other()),
            }
            if nulls {
                each_pos!(state, p => {
                    if keys.is_null(p) {
                        out.set_null(p, true);
                    }
                });
            }
            Ok(Mode::Unflat(u))
        }
        Mode::Flat(src) => {
            out.reset(1);
            match &mut out.data {
                VectorData::Bool(b) => b[0] = counts[src] > 0,
                VectorData::I64(x) => x[0] = counts[src] as i64,
                _ => return Err(other()),
            }
            if keys.is_null(src) {
                out.set_null(0, true);
            }
            Ok(Mode::Flat(0))
        }
    }
}

/// A function argument's vector ([`Node::arg`]).
enum Arg<'a> {
    Shared(&'a ValueVector),
    Owned(&'a mut ValueVector),
}

impl Arg<'_> {
    fn get(&self, p: usize) -> Value {
        match self {
            Arg::Shared(v) => v.get_value(p),
            Arg::Owned(v) => v.get_value(p),
        }
    }

    /// The value at `p`, moved out of an argument's own vector (a list
    /// is not copied element by element to be read once).
    fn take(&mut self, p: usize) -> Value {
        match self {
            Arg::Shared(v) => v.get_value(p),
            Arg::Owned(v) => v.take_value(p),
        }
    }
}

/// Copies one value, converting when the vector types differ.
fn copy_value(dst: &mut ValueVector, dp: usize, src: &ValueVector, sp: usize) -> Result<()> {
    if dst.ty == src.ty {
        dst.copy_from(dp, src, sp);
    } else {
        let v = coerce(src.get_value(sp), &dst.ty)?;
        dst.set_value(dp, &v);
    }
    Ok(())
}

/// The mode of a value-at-a-time node reading `slots`: the unflat chunk
/// among them, or flat.
fn slots_mode(ctx: &EvalContext, slots: &[SlotId]) -> Result<Mode> {
    let mut unflat = None;
    for s in slots {
        let (c, _) = ctx.layout.get(*s).ok_or_else(|| {
            Error::internal(format!("slot {} is not in the result set layout", s.0))
        })?;
        if !ctx.rs.chunks[c].state.is_flat() {
            unflat = Some(c);
        }
    }
    Ok(unflat.map_or(Mode::Flat(0), Mode::Unflat))
}

impl Nested {
    fn compile(
        op: NestedOp,
        (var, acc): (u32, u32),
        list: &BoundExpr,
        init: Option<&BoundExpr>,
        predicate: Option<&BoundExpr>,
        projection: Option<&BoundExpr>,
    ) -> Result<Nested> {
        let mut slots = Vec::new();
        for e in init.iter().chain(&predicate).chain(&projection) {
            e.slots(&mut slots);
        }
        slots.sort();
        slots.dedup();
        let compile = |e: Option<&BoundExpr>| e.map(Node::compile).transpose();
        Ok(Nested {
            op,
            var,
            acc,
            list: Node::compile(list)?,
            init: compile(init)?,
            predicate: compile(predicate)?,
            projection: compile(projection)?,
            slots,
            frame: Vec::new(),
        })
    }

    /// Evaluates the body over the elements of `list` for tuple position `p`.
    fn apply(
        &self,
        ctx: &EvalContext,
        p: usize,
        list: Value,
        locals: &mut Vec<Value>,
    ) -> Result<Value> {
        let items = match list {
            Value::Null => return Ok(Value::Null),
            // Moves the elements out when this is the list's only holder.
            Value::List(items) => std::sync::Arc::unwrap_or_clone(items).into_values(),
            other => {
                let what = match self.op {
                    NestedOp::Comprehension => "a list comprehension",
                    NestedOp::Quantifier(_) => "a quantifier",
                    NestedOp::Reduce => "reduce()",
                };
                return Err(Error::type_error(format!(
                    "{what} expects a LIST after IN, got {}",
                    other.logical_type()
                )));
            }
        };
        let var = self.var as usize;
        let need = var.max(self.acc as usize) + 1;
        if locals.len() < need {
            locals.resize(need, Value::Null);
        }
        let holds = |node: &Node, locals: &mut Vec<Value>| -> Result<Option<bool>> {
            kernels::truth(&node.eval_row(ctx, p, locals)?)
        };
        match self.op {
            NestedOp::Comprehension => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    locals[var] = item;
                    if let Some(pred) = &self.predicate {
                        if holds(pred, locals)? != Some(true) {
                            continue;
                        }
                    }
                    out.push(match &self.projection {
                        Some(e) => e.eval_row(ctx, p, locals)?,
                        None => std::mem::replace(&mut locals[var], Value::Null),
                    });
                }
                Ok(Value::list(out))
            }
            NestedOp::Quantifier(kind) => {
                let pred = self
                    .predicate
                    .as_ref()
                    .ok_or_else(|| Error::internal("quantifier without a predicate"))?;
                let (mut hits, mut unknown) = (0usize, false);
                for item in items {
                    locals[var] = item;
                    match holds(pred, locals)? {
                        Some(true) => {
                            hits += 1;
                            match kind {
                                Quantifier::Any => return Ok(Value::Bool(true)),
                                Quantifier::None => return Ok(Value::Bool(false)),
                                Quantifier::Single if hits > 1 => return Ok(Value::Bool(false)),
                                _ => {}
                            }
                        }
                        Some(false) if kind == Quantifier::All => return Ok(Value::Bool(false)),
                        Some(false) => {}
                        None => unknown = true,
                    }
                }
                // No element decided the outcome alone: NULL when some
                // predicate was NULL (it might have been either).
                Ok(match kind {
                    _ if unknown => Value::Null,
                    Quantifier::All | Quantifier::None => Value::Bool(true),
                    Quantifier::Any => Value::Bool(false),
                    Quantifier::Single => Value::Bool(hits == 1),
                })
            }
            NestedOp::Reduce => {
                let (init, step) = match (&self.init, &self.projection) {
                    (Some(i), Some(s)) => (i, s),
                    _ => return Err(Error::internal("reduce() without init or step")),
                };
                let acc = self.acc as usize;
                locals[acc] = init.eval_row(ctx, p, locals)?;
                for item in items {
                    locals[var] = item;
                    locals[acc] = step.eval_row(ctx, p, locals)?;
                }
                Ok(std::mem::replace(&mut locals[acc], Value::Null))
            }
        }
    }
}

/// The rows of one procedure call as a list of structs (one field per
/// output; one empty struct when the procedure has no outputs, so that an
/// in-query call keeps its row).
fn call_procedure(procedure: &ProcedureRef, args: &[Value]) -> Result<Value> {
    let p = &procedure.0;
    let rows = p.call(args)?;
    if p.outputs.is_empty() {
        return Ok(Value::list(vec![Value::Struct(Vec::new())]));
    }
    Ok(Value::list(
        rows.into_iter()
            .map(|row| Value::Struct(p.outputs.iter().map(|c| c.name.clone()).zip(row).collect()))
            .collect(),
    ))
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
