//! Evaluating a compiled node over the current tuples: one value when its
//! inputs are flat, one per selected position of the unflat chunk
//! otherwise, with typed loops where the types allow.

use super::*;

impl Node {
    /// Evaluates the node (and its children) over the current tuples: one
    /// helper per kind, each writing the node's result vector.
    pub fn eval(&mut self, ctx: &EvalContext) -> Result<Mode> {
        let out = Out {
            ctx,
            ty: &self.ty,
            out: &mut self.out,
        };
        match &mut self.kind {
            Kind::Const(_) => Ok(Mode::Flat(0)),
            Kind::Param(name) => out.param(name),
            Kind::Slot { id, loc } => place_slot(ctx, *id, loc),
            Kind::Unary(op, x) => out.unary(*op, x),
            Kind::Binary {
                op,
                l,
                r,
                regex,
                scratch,
                in_list,
            } => out.binary(*op, l, r, regex.as_ref(), scratch, in_list),
            Kind::Function {
                name,
                f,
                args,
                buf,
                varying,
            } => out.function(name, f, args, buf, varying),
            Kind::DatePart(part, x) => out.date_part(*part, x),
            Kind::Cast(x) => out.cast(x),
            Kind::List(items) => out.list(items),
            Kind::Map(keys, items) => out.map(keys, items),
            Kind::Field(x, key) => out.field(x, key),
            Kind::Index(x, i) => out.index(x, i),
            Kind::Slice(x, a, b) => out.slice(x, a, b),
            Kind::PathCount(x, count) => out.path_count(x, *count),
            Kind::Local(i) => Err(Error::internal(format!(
                "comprehension variable #{i} read outside its comprehension"
            ))),
            Kind::Subquery {
                index,
                keys,
                buf,
                ids,
                probe,
            } => out.subquery(*index, keys, buf, ids, probe),
            Kind::Procedure {
                procedure,
                args,
                buf,
            } => out.procedure(procedure, args, buf),
            Kind::Nested(n) => out.nested(n),
            Kind::Case { slots, .. } => {
                let modes = [slots_mode(ctx, slots)?];
                self.eval_case(ctx, modes)
            }
        }
    }

    /// A CASE, row at a time (see [`Kind::Case`]) at the positions of
    /// `modes`: the node itself is read while its result vector is written.
    fn eval_case(&mut self, ctx: &EvalContext, modes: [Mode; 1]) -> Result<Mode> {
        let ty = self.ty.clone();
        let mut out = std::mem::replace(&mut self.out, ValueVector::new(LogicalType::Any, 0));
        let this: &Node = self;
        let mut frame = Vec::new();
        let r = map_rows(&mut out, ctx, &modes, |p| {
            coerce(this.eval_row(ctx, p, &mut frame)?, &ty)
        });
        self.out = out;
        r
    }

    /// Value-at-a-time evaluation at physical position `p` of the unflat
    /// chunk (flat slots read their current tuple); comprehension variables
    /// are read from `locals`.
    pub(super) fn eval_row(
        &self,
        ctx: &EvalContext,
        p: usize,
        locals: &mut Vec<Value>,
    ) -> Result<Value> {
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

/// Places a slot node: where its vector is in the result set (kept in
/// `loc` for [`Node::vector`]) and whether it is flat there.
fn place_slot(ctx: &EvalContext, id: SlotId, loc: &mut (usize, usize)) -> Result<Mode> {
    let (c, v) = ctx
        .layout
        .get(id)
        .ok_or_else(|| Error::internal(format!("slot {} is not in the result set layout", id.0)))?;
    *loc = (c, v);
    let state = &ctx.rs.chunks[c].state;
    Ok(match state.flat_position() {
        Some(p) => Mode::Flat(p),
        None => Mode::Unflat(c),
    })
}

/// A node's result vector and type, borrowed apart from its kind so that
/// the kind's children can be evaluated while the result is written; with
/// the context they are evaluated in.
struct Out<'a, 'c> {
    ctx: &'a EvalContext<'c>,
    ty: &'a LogicalType,
    out: &'a mut ValueVector,
}

impl<'c> Out<'_, 'c> {
    /// A parameter's value, coerced to the node's type.
    fn param(self, name: &str) -> Result<Mode> {
        let v = self
            .ctx
            .params
            .get(name)
            .ok_or_else(|| Error::runtime(format!("missing parameter ${name}")))?;
        self.out.reset(1);
        let v = coerce(v.clone(), self.ty)?;
        self.out.set_value(0, &v);
        Ok(Mode::Flat(0))
    }

    /// A unary operator: typed over a batch of booleans where it can be,
    /// else value by value.
    fn unary(self, op: UnaryOp, x: &mut Node) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let mx = x.eval(ctx)?;
        let src = x.vector(ctx);
        if let Some(m) = bool_unary(out, ctx, op, mx, src) {
            return Ok(m);
        }
        map_rows(out, ctx, &[mx], |p| {
            let v = src.get_value(at(mx, p));
            coerce(kernels::unary(op, &v)?, ty)
        })
    }

    /// A binary operator: `IN` over one list by its hashed set, the typed
    /// loops where the types allow, else value by value.
    fn binary(
        self,
        op: BinaryOp,
        l: &mut Node,
        r: &mut Node,
        regex: Option<&Regex>,
        scratch: &mut Scratch,
        in_list: &mut Option<Box<kernels::InList>>,
    ) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let ml = l.eval(ctx)?;
        let mr = r.eval(ctx)?;
        let (lv, rv) = (l.vector(ctx), r.vector(ctx));
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
                return map_rows(out, ctx, &[ml], |p| {
                    let a = lv.get_value(at(ml, p));
                    coerce(kernels::bool_value(set.test(&a)?), ty)
                });
            }
        }
        if let Some(mode) = unflat_of(&[ml, mr])? {
            let state = &ctx.rs.chunks[mode].state;
            if typed::binary(op, lv, ml, rv, mr, state, regex, scratch, out)? {
                return Ok(Mode::Unflat(mode));
            }
        }
        map_rows(out, ctx, &[ml, mr], |p| {
            let a = lv.get_value(at(ml, p));
            let b = rv.get_value(at(mr, p));
            coerce(kernels::binary(op, &a, &b, regex)?, ty)
        })
    }

    /// A scalar function call: `id()` of ids and `size()` of lists copied
    /// or counted a batch at a time, else called row by row.
    fn function(
        self,
        name: &str,
        f: &'static ScalarFunction,
        args: &mut [Node],
        buf: &mut Vec<Value>,
        varying: &mut Vec<usize>,
    ) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let mut modes = Vec::with_capacity(args.len());
        for a in args.iter_mut() {
            modes.push(a.eval(ctx)?);
        }
        // id() of an entity slot (a subquery's key, say): its ids
        // copied as they are, not a value per row.
        if let ("id", [m], [a]) = (name, modes.as_slice(), &*args) {
            let src = a.vector(ctx);
            if matches!(src.data, VectorData::Id(_)) && matches!(out.data, VectorData::Id(_)) {
                return Ok(copy_positions(out, ctx, *m, src));
            }
        }
        // size() of a batch of lists: their lengths, no value per row.
        if let ("size", [Mode::Unflat(u)], [a]) = (name, modes.as_slice(), &*args) {
            if let Some(mode) = list_sizes(out, ctx, *u, a.vector(ctx)) {
                return Ok(mode);
            }
        }
        let mut vecs: Vec<Arg<'_>> = args.iter_mut().map(|a| a.arg(ctx)).collect();
        // Flat arguments (constants, say) are read once per batch;
        // only the others per row.
        buf.clear();
        buf.extend(vecs.iter().zip(&modes).map(|(v, m)| match m {
            Mode::Flat(p) => v.get(*p),
            Mode::Unflat(_) => Value::Null,
        }));
        varying.clear();
        varying.extend((0..modes.len()).filter(|&i| matches!(modes[i], Mode::Unflat(_))));
        map_rows(out, ctx, &modes, |p| {
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

    /// A part of a DATE or TIMESTAMP ([`Kind::DatePart`]): one typed loop.
    fn date_part(self, part: DatePart, x: &mut Node) -> Result<Mode> {
        let Out { ctx, out, .. } = self;
        let mx = x.eval(ctx)?;
        let src = x.vector(ctx);
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
                (Some(_), _) => return Err(Error::internal("date part into a non-INT64 vector")),
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

    /// A cast of each value to the node's type.
    fn cast(self, x: &mut Node) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let mx = x.eval(ctx)?;
        let src = x.vector(ctx);
        map_rows(out, ctx, &[mx], |p| {
            cast_value(&src.get_value(at(mx, p)), ty)
        })
    }

    /// A list built of its items' values, per row.
    fn list(self, items: &mut [Node]) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let mut modes = Vec::with_capacity(items.len());
        for a in items.iter_mut() {
            modes.push(a.eval(ctx)?);
        }
        let vecs: Vec<&ValueVector> = items.iter().map(|a| a.vector(ctx)).collect();
        map_rows(out, ctx, &modes, |p| {
            let l = Value::list(
                vecs.iter()
                    .zip(&modes)
                    .map(|(v, m)| v.get_value(at(*m, p)))
                    .collect(),
            );
            coerce(l, ty)
        })
    }

    /// A map literal built of its keys and its items' values, per row.
    fn map(self, keys: &[String], items: &mut [Node]) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let mut modes = Vec::with_capacity(items.len());
        for a in items.iter_mut() {
            modes.push(a.eval(ctx)?);
        }
        let vecs: Vec<&ValueVector> = items.iter().map(|a| a.vector(ctx)).collect();
        map_rows(out, ctx, &modes, |p| {
            let m = Value::Struct(
                keys.iter()
                    .zip(vecs.iter().zip(&modes))
                    .map(|(k, (v, m))| (k.clone(), v.get_value(at(*m, p))))
                    .collect(),
            );
            coerce(m, ty)
        })
    }

    /// A field of each value (`x.key`).
    fn field(self, x: &mut Node, key: &str) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let mx = x.eval(ctx)?;
        let src = x.vector(ctx);
        map_rows(out, ctx, &[mx], |p| {
            coerce(kernels::field(&src.get_value(at(mx, p)), key)?, ty)
        })
    }

    /// An element of each value (`x[i]`).
    fn index(self, x: &mut Node, i: &mut Node) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let (mx, mi) = (x.eval(ctx)?, i.eval(ctx)?);
        let (xv, iv) = (x.vector(ctx), i.vector(ctx));
        map_rows(out, ctx, &[mx, mi], |p| {
            let v = kernels::index(&xv.get_value(at(mx, p)), &iv.get_value(at(mi, p)))?;
            coerce(v, ty)
        })
    }

    /// A slice of each value (`x[a..b]`, either bound optional).
    fn slice(
        self,
        x: &mut Node,
        a: &mut Option<Box<Node>>,
        b: &mut Option<Box<Node>>,
    ) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let mx = x.eval(ctx)?;
        let ma = a.as_mut().map(|a| a.eval(ctx)).transpose()?;
        let mb = b.as_mut().map(|b| b.eval(ctx)).transpose()?;
        let xv = x.vector(ctx);
        let av = a.as_ref().map(|a| a.vector(ctx));
        let bv = b.as_ref().map(|b| b.vector(ctx));
        let modes: Vec<Mode> = [Some(mx), ma, mb].into_iter().flatten().collect();
        map_rows(out, ctx, &modes, |p| {
            let bound = |v: Option<&ValueVector>, m: Option<Mode>| match (v, m) {
                (Some(v), Some(m)) => Some(v.get_value(at(m, p))),
                _ => None,
            };
            let (from, to) = (bound(av, ma), bound(bv, mb));
            let v = kernels::slice(&xv.get_value(at(mx, p)), from.as_ref(), to.as_ref())?;
            coerce(v, ty)
        })
    }

    /// The nodes or rels of each path counted ([`Kind::PathCount`]).
    fn path_count(self, x: &mut Node, count: PathCount) -> Result<Mode> {
        let Out { ctx, out, .. } = self;
        let mx = x.eval(ctx)?;
        let xv = x.vector(ctx);
        map_rows(out, ctx, &[mx], |p| {
            count_path(count, &xv.get_value(at(mx, p)))
        })
    }

    /// A probe of a subquery's table with each row's keys: typed writes for
    /// one id key into a table held by offset, else value by value.
    fn subquery(
        self,
        index: usize,
        keys: &mut [Node],
        buf: &mut Vec<Value>,
        ids: &mut Vec<u64>,
        probe: &mut Option<Box<SubqueryProbe>>,
    ) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let table = subquery_table(ctx, index)?;
        // One id key probing a table held by offset: typed writes.
        if let [k] = &mut *keys {
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
                if k.ty == LogicalType::InternalId && *ty == wanted {
                    let m = k.eval(ctx)?;
                    let keys = k.vector(ctx);
                    return probe_counts(out, ctx, m, keys, table, probe);
                }
            }
        }
        let mut modes = Vec::with_capacity(keys.len());
        for k in keys.iter_mut() {
            modes.push(k.eval(ctx)?);
        }
        let vecs: Vec<&ValueVector> = keys.iter().map(|k| k.vector(ctx)).collect();
        map_rows(out, ctx, &modes, |p| {
            buf.clear();
            buf.extend(vecs.iter().zip(&modes).map(|(v, m)| v.get_value(at(*m, p))));
            coerce(table.lookup(buf, ids)?, ty)
        })
    }

    /// A procedure called with each row's arguments.
    fn procedure(
        self,
        procedure: &ProcedureRef,
        args: &mut [Node],
        buf: &mut Vec<Value>,
    ) -> Result<Mode> {
        let Out { ctx, out, .. } = self;
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
        map_rows(out, ctx, &modes, |p| {
            buf.clear();
            buf.extend(vecs.iter().zip(&modes).map(|(v, m)| v.get_value(at(*m, p))));
            call_procedure(procedure, buf)
        })
    }

    /// A list comprehension, quantifier or `reduce`: the list vectorized,
    /// the body value at a time in the node's frame of locals.
    fn nested(self, n: &mut Nested) -> Result<Mode> {
        let Out { ctx, ty, out } = self;
        let ml = n.list.eval(ctx)?;
        let modes = [ml, slots_mode(ctx, &n.slots)?];
        let mut frame = std::mem::take(&mut n.frame);
        let shared: &Nested = n;
        let src = shared.list.vector(ctx);
        let r = map_rows(out, ctx, &modes, |p| {
            let list = src.get_value(at(ml, p));
            coerce(shared.apply(ctx, p, list, &mut frame)?, ty)
        });
        n.frame = frame;
        r
    }
}
