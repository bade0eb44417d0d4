//! `startNode(r)` and `endNode(r)`: the node at one end of a rel.
//!
//! A rel value carries only the ids of its ends and the function library
//! reads no storage, so the binder resolves the call to the node variable at
//! that end of rel variable `r`'s pattern. The result is that variable's id,
//! just like the variable itself: a projection turns it into a node value,
//! and it compares equal to the variable. It is guarded by `r IS NULL`: an
//! OPTIONAL MATCH that found no rel leaves `r` NULL while an end bound
//! earlier is not. An undirected rel may have been matched either way round,
//! so which variable is its source is only known per row: its stored source
//! (the slot its value reads, `QueryRel::ends`, or the one carried with it)
//! equals the pattern's left node or not.
//!
//! A rel carried through WITH (an OPTIONAL MATCH carries everything) keeps
//! its ends where both end variables were carried too (`carried_rel_ends`).
//! Reads through the call (`startNode(r).name`, `labels(startNode(r))`,
//! `startNode(r):L`) are bound per branch exactly as on the variable.
//!
//! Not supported (an error, never a guess): a rel carried without its end
//! variables (only ids travel, and a node value needs its variable), and rel
//! values (from lists, paths, comprehensions).

use super::*;

/// What `startNode(x)` / `endNode(x)` stands for.
pub(super) enum Endpoint {
    /// `x` is NULL.
    Null,
    /// A node variable (index into the graph's nodes): `first`'s when its
    /// condition holds, otherwise `otherwise`; NULL where rel `rel` is.
    Node {
        rel: SlotId,
        first: Option<(BoundExpr, usize)>,
        otherwise: usize,
    },
}

/// The function name when `e` is a call of `startNode` or `endNode`.
pub(super) fn endpoint_call(e: &ast::Expr) -> Option<&ast::Ident> {
    match &e.kind {
        ExprKind::Function { name, .. }
            if name.name.eq_ignore_ascii_case("startnode")
                || name.name.eq_ignore_ascii_case("endnode") =>
        {
            Some(name)
        }
        _ => None,
    }
}

impl Binder<'_> {
    /// Resolves `e`, a call that [`endpoint_call`] accepts.
    pub(super) fn resolve_endpoint(&mut self, e: &ast::Expr) -> Result<Endpoint> {
        let ExprKind::Function {
            name,
            distinct,
            star,
            args,
        } = &e.kind
        else {
            return Err(Error::internal("resolve_endpoint: not a call"));
        };
        let start = name.name.eq_ignore_ascii_case("startnode");
        let fname = if start { "startNode" } else { "endNode" };
        let type_error = |span: Span, message: String| Error::at(ErrorKind::Type, span, message);
        let arg = match (args.as_slice(), distinct, star) {
            ([arg], false, false) => arg,
            _ => {
                return Err(type_error(
                    e.span,
                    format!("{fname}() takes 1 argument, got {}", args.len()),
                ))
            }
        };
        if endpoint_call(arg).is_some() {
            return Err(type_error(
                arg.span,
                format!("{fname}() expects a rel, got a node"),
            ));
        }
        let bound = self.bind_expr(arg)?;
        if matches!(bound.kind, BoundExprKind::Literal(Value::Null)) {
            return Ok(Endpoint::Null);
        }
        if let (BoundExprKind::Slot(slot), LogicalType::InternalId) = (&bound.kind, &bound.ty) {
            let slot = *slot;
            let rel = match self.graph.rels.iter().find(|r| r.id_slot == slot) {
                Some(r) if r.recursive.is_some() => {
                    return Err(type_error(
                        arg.span,
                        format!(
                            "{fname}() expects a rel, but '{}' is a variable-length rel (a list of rels)",
                            r.name
                        ),
                    ))
                }
                Some(r) => Some(r.name.clone()),
                None => self
                    .rels_carried
                    .iter()
                    .find(|r| r.1 == slot)
                    .map(|r| r.0.clone()),
            };
            if let Some(rel) = rel {
                return self.rel_endpoint(&rel, slot, start, fname, arg.span);
            }
            if let Some(n) = self.graph.nodes.iter().find(|n| n.id_slot == slot) {
                return Err(type_error(
                    arg.span,
                    format!("{fname}() expects a rel, but '{}' is a node", n.name),
                ));
            }
        }
        match &bound.ty {
            LogicalType::Rel | LogicalType::Any | LogicalType::InternalId => Err(Error::at(
                ErrorKind::NotSupported,
                arg.span,
                format!(
                    "{fname}() of this expression is not supported; only of a rel variable of a MATCH pattern"
                ),
            )),
            ty => Err(type_error(
                arg.span,
                format!("{fname}() expects a rel, got {ty}"),
            )),
        }
    }

    /// The end node variables of rel variable `var`: of this part's
    /// pattern, or carried through WITH along with its ends.
    pub(super) fn rel_ends(&self, var: &str) -> Option<RelEnds> {
        if let Some(r) = self.graph.rels.iter().find(|r| r.name == var) {
            if r.recursive.is_some() {
                return None;
            }
            return Some(RelEnds {
                left: self.graph.nodes[r.left].name.clone(),
                right: self.graph.nodes[r.right].name.clone(),
                direction: r.direction,
            });
        }
        self.carried_rel_ends
            .iter()
            .find(|e| e.0 == var)
            .map(|e| e.1.clone())
    }

    /// The end of rel variable `rel` (id in `slot`) that `startNode`
    /// (`start`) or `endNode` asks for.
    fn rel_endpoint(
        &mut self,
        rel: &str,
        slot: SlotId,
        start: bool,
        fname: &str,
        span: Span,
    ) -> Result<Endpoint> {
        let node = |b: &Self, name: &str| b.graph.nodes.iter().position(|n| n.name == name);
        let ends = self.rel_ends(rel);
        let Some((ends, left, right)) = ends.and_then(|e| {
            let (l, r) = (node(self, &e.left)?, node(self, &e.right)?);
            Some((e, l, r))
        }) else {
            // Carried without its ends (or seeded after a write clause):
            // only its ids travel, and a node value needs its variable.
            return Err(Error::at(
                ErrorKind::NotSupported,
                span,
                format!(
                    "{fname}({rel}) is not supported where both end nodes of '{rel}' are not variables in scope (a rel carried through WITH without them, or after a write clause); carry them along (WITH a, {rel}, b) or call {fname}() before"
                ),
            ));
        };
        let (src, dst) = match ends.direction {
            Direction::Left => (right, left),
            _ => (left, right),
        };
        let (this, other) = if start { (src, dst) } else { (dst, src) };
        if ends.direction != Direction::Both {
            return Ok(Endpoint::Node {
                rel: slot,
                first: None,
                otherwise: this,
            });
        }
        // Undirected: `this` is the left node for startNode, the right one
        // for endNode, where the stored rel starts on the left: its stored
        // source (the slot its value reads) is the left node's id.
        let src_slot = self
            .rel_source_slot(slot, span)?
            .ok_or_else(|| Error::internal("an undirected rel without its stored source"))?;
        let id = |s: SlotId| Box::new(BoundExpr::slot(s, LogicalType::InternalId, span));
        let cond = BoundExpr {
            kind: BoundExprKind::Binary(
                BinaryOp::Eq,
                id(src_slot),
                id(self.graph.nodes[left].id_slot),
            ),
            ty: LogicalType::Bool,
            span,
        };
        Ok(Endpoint::Node {
            rel: slot,
            first: Some((cond, this)),
            otherwise: other,
        })
    }

    /// `CASE WHEN r IS NULL THEN NULL [WHEN cond THEN f(first)] ELSE
    /// f(otherwise) END`, `f` binding an expression on a node variable.
    pub(super) fn endpoint_expr(
        &mut self,
        ep: Endpoint,
        span: Span,
        mut f: impl FnMut(&mut Self, usize) -> Result<BoundExpr>,
    ) -> Result<BoundExpr> {
        let Endpoint::Node {
            rel,
            first,
            otherwise,
        } = ep
        else {
            return Ok(BoundExpr::literal(Value::Null, span));
        };
        let is_null = BoundExpr {
            kind: BoundExprKind::Unary(
                UnaryOp::IsNull,
                Box::new(BoundExpr::slot(rel, LogicalType::InternalId, span)),
            ),
            ty: LogicalType::Bool,
            span,
        };
        let mut whens = vec![(is_null, BoundExpr::literal(Value::Null, span))];
        let else_ = match first {
            None => f(self, otherwise)?,
            Some((cond, node)) => {
                // Either variable may be the end in some row: a property
                // that only the other one's tables declare reads NULL where
                // this one is the end (as reading a missing property does),
                // but a property neither declares is the usual error.
                let null = || BoundExpr::literal(Value::Null, span);
                let (a, b) = match (f(self, node), f(self, otherwise)) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Ok(a), Err(e)) if e.kind == ErrorKind::Semantic => (a, null()),
                    (Err(e), Ok(b)) if e.kind == ErrorKind::Semantic => (null(), b),
                    (Err(e), _) | (_, Err(e)) => return Err(e),
                };
                whens.push((cond, a));
                b
            }
        };
        let ty = whens[1..]
            .iter()
            .map(|(_, t)| &t.ty)
            .chain([&else_.ty])
            .try_fold(LogicalType::Any, |acc, t| functions::common_type(&acc, t))
            .unwrap_or(LogicalType::Any);
        Ok(BoundExpr {
            kind: BoundExprKind::Case {
                operand: None,
                whens,
                else_: Some(Box::new(else_)),
            },
            ty,
            span,
        })
    }

    /// The name and id slot of node `i` of the graph.
    pub(super) fn graph_node(&self, i: usize) -> (String, SlotId) {
        let n = &self.graph.nodes[i];
        (n.name.clone(), n.id_slot)
    }
}
