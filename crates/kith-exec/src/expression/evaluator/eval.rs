//! Evaluating a compiled node over the current tuples: one value when its
//! inputs are flat, one per selected position of the unflat chunk
//! otherwise, with typed loops where the types allow.

use super::*;

impl Node {
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
