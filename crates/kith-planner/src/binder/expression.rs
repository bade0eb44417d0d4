//! Binding and typing of expressions: operators, functions, CASE, nested
//! values (maps, field access, indexing, slicing) and comprehensions.

use super::endpoint::endpoint_call;
use super::entity::is_entity_function;
use super::*;

impl Binder<'_> {
    /// The string a map/entity key expression names when it is a literal or
    /// a parameter with a value.
    fn constant_key(&self, e: &ast::Expr) -> Option<String> {
        let v = match (&e.kind, self.params) {
            (ExprKind::Parameter(name), Some(params)) => params.get(name).cloned(),
            (ExprKind::Literal(_), _) => literal_value(e).ok(),
            _ => None,
        };
        match v {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    pub fn bind_expr(&mut self, e: &ast::Expr) -> Result<BoundExpr> {
        let span = e.span;
        if let Some(local) = self.bind_local(e) {
            return Ok(local);
        }
        match &e.kind {
            ExprKind::Literal(_) => Ok(BoundExpr::literal(literal_value(e)?, span)),
            ExprKind::Parameter(name) => self.bind_parameter(name, span),
            ExprKind::Variable(name) => self.bind_variable(name, span),
            ExprKind::Property(target, key) => self.bind_property_access(target, key, span),
            ExprKind::Index(target, index) => match self.bind_key_index(target, index, span)? {
                Some(property) => Ok(property),
                None => self.bind_nested_expr(e),
            },
            ExprKind::Unary(op, inner) => self.bind_unary(*op, inner, span),
            ExprKind::Binary(op, l, r) => {
                let l = self.bind_expr(l)?;
                let r = self.bind_expr(r)?;
                let ty = binary_type(*op, &l.ty, &r.ty).map_err(|e| e.or_span(span))?;
                Ok(BoundExpr {
                    kind: BoundExprKind::Binary(*op, Box::new(l), Box::new(r)),
                    ty,
                    span,
                })
            }
            ExprKind::Function {
                name,
                distinct,
                star,
                args,
            } => {
                let call = FunctionCall {
                    name,
                    lname: name.name.to_ascii_lowercase(),
                    distinct: *distinct,
                    star: *star,
                    args,
                    span,
                };
                self.bind_function(e, call)
            }
            ExprKind::List(items) => self.bind_list(items, span),
            ExprKind::Case {
                operand,
                whens,
                else_,
            } => self.bind_case(operand.as_deref(), whens, else_.as_deref(), span),
            ExprKind::MapProjection(base, items) => {
                let map = self.map_projection(base, items, span)?;
                self.bind_expr(&map)
            }
            ExprKind::Map(_)
            | ExprKind::Slice(..)
            | ExprKind::ListComprehension { .. }
            | ExprKind::Quantifier { .. }
            | ExprKind::Reduce { .. } => self.bind_nested_expr(e),
            ExprKind::HasLabels(inner, labels) => self.bind_has_labels(inner, labels, span),
            ExprKind::Exists(_)
            | ExprKind::CountSubquery(_)
            | ExprKind::PatternPredicate(_)
            | ExprKind::PatternComprehension { .. } => self.bind_subquery_expr(e),
            ExprKind::Cast(x, ty) => self.bind_cast(x, ty, span),
        }
    }

    /// `$name`: typed by its value when the parameters are known.
    fn bind_parameter(&self, name: &str, span: Span) -> Result<BoundExpr> {
        let ty = match self.params {
            None => LogicalType::Any,
            Some(p) => match p.get(name) {
                Some(v) => v.logical_type(),
                None => {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        span,
                        format!("parameter ${name} was not given a value"),
                    ))
                }
            },
        };
        Ok(BoundExpr {
            kind: BoundExprKind::Parameter(name.to_string()),
            ty,
            span,
        })
    }

    /// A variable: a projection alias, a named path, a node or rel of the
    /// pattern, a value, or a rel carried by a WITH (in that order).
    fn bind_variable(&mut self, name: &str, span: Span) -> Result<BoundExpr> {
        if let Some((_, e)) = self.aliases.iter().find(|a| a.0 == name) {
            return Ok(e.clone());
        }
        if let Some(path) = self.fixed_path_value(name, span)? {
            return Ok(path);
        }
        if let Some(n) = self.graph.nodes.iter().find(|n| n.name == name) {
            return Ok(BoundExpr::slot(n.id_slot, LogicalType::InternalId, span));
        }
        if let Some(r) = self.graph.rels.iter().find(|r| r.name == name) {
            return Ok(BoundExpr::slot(r.id_slot, LogicalType::InternalId, span));
        }
        if let Some((_, slot, ty)) = self.values.iter().find(|v| v.0 == name) {
            return Ok(BoundExpr::slot(*slot, ty.clone(), span));
        }
        if let Some((_, slot)) = self.rels_carried.iter().find(|r| r.0 == name) {
            return Ok(BoundExpr::slot(*slot, LogicalType::InternalId, span));
        }
        Err(Error::at(
            ErrorKind::Semantic,
            span,
            format!("variable '{name}' is not defined"),
        ))
    }

    /// `target.key`: a property of a node or rel variable (or of the end
    /// `startNode(r)` names), otherwise a field of a value.
    fn bind_property_access(
        &mut self,
        target: &ast::Expr,
        key: &ast::Ident,
        span: Span,
    ) -> Result<BoundExpr> {
        match &target.kind {
            // A projection alias shadows the pattern variable of the same
            // name (`WITH b AS a WHERE a.id = 2`, `RETURN b AS a ORDER BY
            // a.id`): the property is read from what the alias stands for.
            ExprKind::Variable(var)
                if !self.locals.iter().any(|l| &l.0 == var)
                    && self.aliases.iter().any(|a| &a.0 == var) =>
            {
                match self.alias_entity(var) {
                    Some(entity) => self.bind_property(&entity, key, span),
                    None => self.bind_field(target, key, span),
                }
            }
            ExprKind::Variable(var) if !self.is_value_variable(var) => {
                self.bind_property(var, key, span)
            }
            _ if endpoint_call(target).is_some() => {
                let ep = self.resolve_endpoint(target)?;
                self.endpoint_expr(ep, span, |b, n| {
                    let (var, _) = b.graph_node(n);
                    b.bind_property(&var, key, span)
                })
            }
            _ => self.bind_field(target, key, span),
        }
    }

    /// `target[index]` as a property access whose key is known when the
    /// query is bound, if it is one (None: an index into a value).
    fn bind_key_index(
        &mut self,
        target: &ast::Expr,
        index: &ast::Expr,
        span: Span,
    ) -> Result<Option<BoundExpr>> {
        let Some(name) = self.constant_key(index) else {
            return Ok(None);
        };
        let key = ast::Ident {
            name,
            span: index.span,
        };
        // `startNode(r)['name']`: a property of the end's variable.
        if endpoint_call(target).is_some() {
            let ep = self.resolve_endpoint(target)?;
            return self
                .endpoint_expr(ep, span, |b, n| {
                    let (var, _) = b.graph_node(n);
                    b.bind_property(&var, &key, span)
                })
                .map(Some);
        }
        // `n['name']` / `n[$key]` on a node or rel variable.
        match &target.kind {
            ExprKind::Variable(var) if self.is_entity_variable(var) => {
                self.bind_property(var, &key, span).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Whether `var` names a node or rel of the pattern (not a value).
    fn is_entity_variable(&self, var: &str) -> bool {
        !self.is_value_variable(var)
            && (self.graph.nodes.iter().any(|n| n.name == var)
                || self.graph.rels.iter().any(|r| r.name == var))
    }

    fn bind_unary(&mut self, op: UnaryOp, inner: &ast::Expr, span: Span) -> Result<BoundExpr> {
        let inner = self.bind_expr(inner)?;
        let ty = match op {
            UnaryOp::Not | UnaryOp::IsNull | UnaryOp::IsNotNull => LogicalType::Bool,
            UnaryOp::Neg | UnaryOp::Plus => {
                if !inner.ty.is_numeric()
                    && inner.ty != LogicalType::Any
                    && inner.ty != LogicalType::Interval
                    && inner.ty != LogicalType::Duration
                {
                    return Err(Error::at(
                        ErrorKind::Type,
                        span,
                        format!("cannot negate a value of type {}", inner.ty),
                    ));
                }
                if inner.ty.is_integer() {
                    LogicalType::Int64
                } else {
                    inner.ty.clone()
                }
            }
        };
        if op == UnaryOp::Not && !matches!(inner.ty, LogicalType::Bool | LogicalType::Any) {
            return Err(Error::at(
                ErrorKind::Type,
                span,
                format!("NOT expects a BOOL, got {}", inner.ty),
            ));
        }
        Ok(BoundExpr {
            kind: BoundExprKind::Unary(op, Box::new(inner)),
            ty,
            span,
        })
    }

    /// A function call: the special forms first (casts, endpoints,
    /// percentiles, functions of entities and paths), then an aggregate or
    /// a scalar function of the registry.
    fn bind_function(&mut self, e: &ast::Expr, call: FunctionCall<'_>) -> Result<BoundExpr> {
        let span = call.span;
        if call.lname == "cast" && !call.distinct && !call.star {
            return self.bind_cast_call(call.args, span);
        }
        if endpoint_call(e).is_some() {
            let ep = self.resolve_endpoint(e)?;
            return self.endpoint_expr(ep, span, |b, n| {
                let (_, slot) = b.graph_node(n);
                Ok(BoundExpr::slot(slot, LogicalType::InternalId, span))
            });
        }
        if let Some(bound) = self.bind_percentile(&call)? {
            return Ok(bound);
        }
        if let Some(bound) = self.bind_recursive_nodes(&call)? {
            return Ok(bound);
        }
        // openCypher allows a pattern as an expression only as a predicate
        // (WHERE, EXISTS), not as a value.
        if let Some(p) = call
            .args
            .iter()
            .find(|a| matches!(a.kind, ExprKind::PatternPredicate(_)))
            .filter(|_| call.lname != "exists")
        {
            return Err(Error::at(
                ErrorKind::Syntax,
                p.span,
                format!("a pattern cannot be an argument of {}(); use it as a predicate (unexpected syntax)", call.name.name),
            ));
        }
        if let Some(bound) = self.bind_entity_call(&call)? {
            return Ok(bound);
        }
        if let Some(bound) = self.bind_path_call(&call)? {
            return Ok(bound);
        }
        if functions::is_aggregate(&call.lname) {
            return self.bind_aggregate(call);
        }
        self.bind_scalar_function(call)
    }

    /// percentileDisc/percentileCont(x, p): the exact percentile of the
    /// group's values, computed from collect(x).
    fn bind_percentile(&mut self, call: &FunctionCall<'_>) -> Result<Option<BoundExpr>> {
        let ("percentiledisc" | "percentilecont", [x, p], false) =
            (call.lname.as_str(), call.args, call.star)
        else {
            return Ok(None);
        };
        let span = call.span;
        let collected = self.bind_expr(&ast::Expr {
            kind: ExprKind::Function {
                name: ast::Ident {
                    name: "collect".to_string(),
                    span: call.name.span,
                },
                distinct: call.distinct,
                star: false,
                args: vec![x.clone()],
            },
            span,
        })?;
        let elem = match &collected.ty {
            LogicalType::List(t) => (**t).clone(),
            _ => LogicalType::Any,
        };
        if !(elem.is_numeric() || elem == LogicalType::Any) {
            return Err(Error::at(
                ErrorKind::Type,
                x.span,
                format!("{}() expects numbers, got {elem}", call.name.name),
            ));
        }
        let p = self.bind_expr(p)?;
        let (f, ty) = if call.lname == "percentiledisc" {
            ("_percentile_disc", elem)
        } else {
            ("_percentile_cont", LogicalType::Double)
        };
        Ok(Some(BoundExpr {
            kind: BoundExprKind::Function(f.to_string(), vec![collected, p]),
            ty,
            span,
        }))
    }

    /// `nodes(e)` of the rel variable of a shortest path lists its
    /// intermediate nodes (Kùzu's recursive rel), where `nodes(p)` of the
    /// named path lists every node.
    fn bind_recursive_nodes(&mut self, call: &FunctionCall<'_>) -> Result<Option<BoundExpr>> {
        let (
            "nodes",
            [arg @ ast::Expr {
                kind: ExprKind::Variable(v),
                ..
            }],
            false,
        ) = (call.lname.as_str(), call.args, call.star)
        else {
            return Ok(None);
        };
        let Some(i) = self.recursive_rels.iter().position(|n| n == v) else {
            return Ok(None);
        };
        let span = call.span;
        let rel = self.recursive_rels.remove(i);
        let all = self.bind_expr(&ast::Expr {
            kind: ExprKind::Function {
                name: call.name.clone(),
                distinct: false,
                star: false,
                args: vec![arg.clone()],
            },
            span,
        });
        self.recursive_rels.insert(i, rel);
        let all = all?;
        let int = |i: i64| {
            Some(Box::new(BoundExpr {
                kind: BoundExprKind::Literal(Value::Int64(i)),
                ty: LogicalType::Int64,
                span,
            }))
        };
        let ty = all.ty.clone();
        Ok(Some(BoundExpr {
            kind: BoundExprKind::Slice(Box::new(all), int(1), int(-1)),
            ty,
            span,
        }))
    }

    /// `id(n)`, `labels(n)`, `type(r)` and the like of one node or rel,
    /// also of the end `startNode(r)` / `endNode(r)` names.
    fn bind_entity_call(&mut self, call: &FunctionCall<'_>) -> Result<Option<BoundExpr>> {
        let ([arg], false, false) = (call.args, call.distinct, call.star) else {
            return Ok(None);
        };
        let (lname, span) = (call.lname.as_str(), call.span);
        if is_entity_function(lname) {
            if let Some(end) = endpoint_call(arg) {
                if lname == "type" {
                    return Err(Error::at(
                        ErrorKind::Type,
                        span,
                        format!("type() expects a rel, but {}() gives a node", end.name),
                    ));
                }
                let ep = self.resolve_endpoint(arg)?;
                return self
                    .endpoint_expr(ep, span, |b, n| {
                        let (_, slot) = b.graph_node(n);
                        // A variable that matches no table only ever
                        // holds NULL.
                        Ok(b.entity_function_of_slot(lname, slot, span)?
                            .unwrap_or_else(|| BoundExpr::literal(Value::Null, span)))
                    })
                    .map(Some);
            }
        }
        self.bind_entity_function(lname, arg, span)
    }

    /// A function of one path variable: `length(p)`, `nodes(p)` and
    /// `relationships(p)` of a named path built from its elements, and
    /// `cost(p)` of a weighted shortest path.
    fn bind_path_call(&mut self, call: &FunctionCall<'_>) -> Result<Option<BoundExpr>> {
        let [ast::Expr {
            kind: ExprKind::Variable(v),
            ..
        }] = call.args
        else {
            return Ok(None);
        };
        let (lname, span) = (call.lname.as_str(), call.span);
        if let Some(bound) = self.bind_fixed_path_function(lname, v, span)? {
            return Ok(Some(bound));
        }
        if let (Some(&(_, slot)), "cost") = (self.costs.iter().find(|c| &c.0 == v), lname) {
            return Ok(Some(BoundExpr::slot(slot, LogicalType::Double, span)));
        }
        if lname == "cost" && self.values.iter().any(|x| &x.0 == v) {
            return Err(not_supported(
                span,
                "cost() of anything but a weighted shortest path matched in this clause (carry it on with WITH cost(p) AS c)",
            ));
        }
        Ok(None)
    }

    /// `length(p)`, `nodes(p)` and `relationships(p)` of named path `var`
    /// whose elements are known, if it is one.
    fn bind_fixed_path_function(
        &mut self,
        lname: &str,
        var: &str,
        span: Span,
    ) -> Result<Option<BoundExpr>> {
        // With a variable-length part spliced in, the path's elements are
        // only known from its value.
        let path = self.fixed_path_value(var, span)?.filter(|p| {
            !matches!(&p.kind, BoundExprKind::Function(_, items)
                if items.iter().any(|i| i.ty == LogicalType::Path))
        });
        let Some(path) = path else {
            return Ok(None);
        };
        let list = |ty: LogicalType, items: Vec<BoundExpr>| BoundExpr {
            kind: BoundExprKind::List(items),
            ty: LogicalType::List(Box::new(ty)),
            span,
        };
        let items = match path.kind.clone() {
            BoundExprKind::Function(_, items) => items,
            // No path can match (no rel table yet, say): the functions read
            // the NULL path value.
            _ => {
                let ty = match lname {
                    "length" | "size" => LogicalType::Int64,
                    "nodes" => LogicalType::List(Box::new(LogicalType::Node)),
                    "relationships" | "rels" => LogicalType::List(Box::new(LogicalType::Rel)),
                    _ => return Ok(None),
                };
                return Ok(Some(BoundExpr {
                    kind: BoundExprKind::Literal(Value::Null),
                    ty,
                    span,
                }));
            }
        };
        Ok(match lname {
            "length" | "size" => Some(BoundExpr {
                kind: BoundExprKind::Function("length".into(), vec![path]),
                ty: LogicalType::Int64,
                span,
            }),
            "nodes" => Some(list(
                LogicalType::Node,
                items.into_iter().step_by(2).collect(),
            )),
            "relationships" | "rels" => Some(list(
                LogicalType::Rel,
                items.into_iter().skip(1).step_by(2).collect(),
            )),
            _ => None,
        })
    }

    /// An aggregate: its argument is bound (without nested aggregates) and
    /// computed into a fresh slot the expression reads.
    fn bind_aggregate(&mut self, call: FunctionCall<'_>) -> Result<BoundExpr> {
        let (name, span) = (&call.name.name, call.span);
        if self.aggregates.is_none() {
            return Err(Error::at(
                ErrorKind::Semantic,
                span,
                format!("aggregate function {name}() is not allowed here"),
            ));
        }
        let arg = match (call.star, call.args) {
            (true, []) if call.lname == "count" => None,
            (false, [a]) => {
                let saved = self.aggregates.take();
                let bound = self.bind_expr(a);
                self.aggregates = saved;
                let bound = bound?;
                if bound.calls("rand") {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        a.span,
                        format!(
                            "the argument of {name}() must not call rand() (aggregating a random value)"
                        ),
                    ));
                }
                Some(bound)
            }
            _ => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    span,
                    format!("{name}() takes exactly one argument"),
                ))
            }
        };
        let ty = functions::aggregate_type(&call.lname, arg.as_ref().map(|a| &a.ty))
            .map_err(|e| e.or_span(span))?;
        let slot = self.new_slot();
        if let Some(aggs) = &mut self.aggregates {
            aggs.push(BoundAggregate {
                function: call.lname,
                distinct: call.distinct,
                arg,
                slot,
                ty: ty.clone(),
            });
        }
        Ok(BoundExpr::slot(slot, ty, span))
    }

    /// A scalar function of the registry, typed by its arguments.
    fn bind_scalar_function(&mut self, call: FunctionCall<'_>) -> Result<BoundExpr> {
        if call.distinct || call.star {
            return Err(Error::at(
                ErrorKind::Semantic,
                call.span,
                format!(
                    "DISTINCT and * are only allowed in aggregates, not in {}()",
                    call.name.name
                ),
            ));
        }
        let args = call
            .args
            .iter()
            .map(|a| self.bind_expr(a))
            .collect::<Result<Vec<_>>>()?;
        let types: Vec<LogicalType> = args.iter().map(|a| a.ty.clone()).collect();
        let ty =
            functions::scalar_type(&call.lname, &types).map_err(|e| e.or_span(call.name.span))?;
        Ok(BoundExpr {
            kind: BoundExprKind::Function(call.lname, args),
            ty,
            span: call.span,
        })
    }

    /// A list literal, of its items' common type.
    fn bind_list(&mut self, items: &[ast::Expr], span: Span) -> Result<BoundExpr> {
        let items = items
            .iter()
            .map(|a| self.bind_expr(a))
            .collect::<Result<Vec<_>>>()?;
        let elem = items
            .iter()
            .try_fold(LogicalType::Any, |acc, i| list_item_type(&acc, &i.ty))
            .unwrap_or(LogicalType::Any);
        Ok(BoundExpr {
            kind: BoundExprKind::List(items),
            ty: LogicalType::List(Box::new(elem)),
            span,
        })
    }

    /// `CASE`, of its branches' common type.
    fn bind_case(
        &mut self,
        operand: Option<&ast::Expr>,
        whens: &[(ast::Expr, ast::Expr)],
        else_: Option<&ast::Expr>,
        span: Span,
    ) -> Result<BoundExpr> {
        let incompatible = |e: &BoundExpr| {
            Error::at(
                ErrorKind::Type,
                e.span,
                "CASE branches have incompatible types",
            )
        };
        let operand = operand
            .map(|o| self.bind_expr(o))
            .transpose()?
            .map(Box::new);
        let mut bound_whens = Vec::new();
        let mut ty = LogicalType::Any;
        for (w, t) in whens {
            let w = self.bind_expr(w)?;
            let t = self.bind_expr(t)?;
            ty = functions::common_type(&ty, &t.ty).ok_or_else(|| incompatible(&t))?;
            bound_whens.push((w, t));
        }
        let else_ = else_.map(|e| self.bind_expr(e)).transpose()?;
        if let Some(e) = &else_ {
            ty = functions::common_type(&ty, &e.ty).ok_or_else(|| incompatible(e))?;
        }
        Ok(BoundExpr {
            kind: BoundExprKind::Case {
                operand,
                whens: bound_whens,
                else_: else_.map(Box::new),
            },
            ty,
            span,
        })
    }

    /// `x:Label`: a label test of a node or rel variable (or of an end
    /// `startNode(r)` names).
    fn bind_has_labels(
        &mut self,
        inner: &ast::Expr,
        labels: &[ast::Ident],
        span: Span,
    ) -> Result<BoundExpr> {
        let names: Vec<String> = labels.iter().map(|l| l.name.clone()).collect();
        if endpoint_call(inner).is_some() {
            let ep = self.resolve_endpoint(inner)?;
            return self.endpoint_expr(ep, span, |b, n| {
                let (var, _) = b.graph_node(n);
                b.has_labels(&var, &names, span)
            });
        }
        match &inner.kind {
            ExprKind::Variable(v)
                if self.graph.nodes.iter().any(|n| &n.name == v)
                    || self.graph.rels.iter().any(|r| &r.name == v) =>
            {
                self.has_labels(v, &names, span)
            }
            _ => {
                let x = self.bind_expr(inner)?;
                if x.ty == LogicalType::Any && matches!(x.kind, BoundExprKind::Literal(Value::Null))
                {
                    return Ok(BoundExpr::literal(Value::Null, span));
                }
                Err(not_supported(span, "a label test on this expression"))
            }
        }
    }
}

/// The parts of a function call being bound.
struct FunctionCall<'a> {
    name: &'a ast::Ident,
    /// The name in lower case, as functions are looked up.
    lname: String,
    distinct: bool,
    star: bool,
    args: &'a [ast::Expr],
    span: Span,
}

/// The common type of two list items: [`functions::common_type`], except that integers and
/// floats do not widen (None: the list is of ANY), because each item keeps
/// its own type (`[1, 2.0]` is not `[1.0, 2.0]`, and `max()` over
/// `[1, 2.0, 5]` is the integer 5).
pub(super) fn list_item_type(a: &LogicalType, b: &LogicalType) -> Option<LogicalType> {
    let float = |t: &LogicalType| t.is_numeric() && !t.is_integer();
    if (a.is_integer() && float(b)) || (float(a) && b.is_integer()) {
        return None;
    }
    functions::common_type(a, b)
}

pub(super) fn binary_type(op: BinaryOp, l: &LogicalType, r: &LogicalType) -> Result<LogicalType> {
    use LogicalType as T;
    let any = |t: &T| *t == T::Any;
    Ok(match op {
        BinaryOp::Or | BinaryOp::Xor | BinaryOp::And => {
            for t in [l, r] {
                if !matches!(t, T::Bool | T::Any) {
                    return Err(Error::type_error(format!(
                        "{op:?} expects BOOL operands, got {t}"
                    )));
                }
            }
            T::Bool
        }
        // Any two values compare: equality of different kinds is false (or
        // NULL), ordering them is NULL (Cypher), decided per value at run time.
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            T::Bool
        }
        // A right side that cannot be a list is a type error when the query
        // is compiled, not only when a row reaches it (openCypher's
        // InvalidArgumentType): an empty input must not hide it.
        BinaryOp::In if !matches!(r, T::List(_) | T::Any) => {
            return Err(Error::type_error(format!(
                "IN expects a LIST on its right, got {r}"
            )))
        }
        BinaryOp::In => T::Bool,
        BinaryOp::RegexMatch | BinaryOp::StartsWith | BinaryOp::EndsWith | BinaryOp::Contains => {
            T::Bool
        }
        BinaryOp::Add
            if (*l == T::String || any(l))
                && (*r == T::String || any(r))
                && (*l == T::String || *r == T::String) =>
        {
            T::String
        }
        BinaryOp::Add
        | BinaryOp::Sub
        | BinaryOp::Mul
        | BinaryOp::Div
        | BinaryOp::Mod
        | BinaryOp::Pow => match (l, r) {
            _ if op == BinaryOp::Pow
                && (l.is_numeric() || any(l))
                && (r.is_numeric() || any(r)) =>
            {
                T::Double
            }
            (a, b) if a.is_integer() && b.is_integer() => T::Int64,
            // An ANY operand may hold an integer, a float or a string
            // (`UNWIND [1, 2.5] AS x RETURN x + 1`): the result's type is
            // decided per value.
            (a, b) if (a.is_numeric() || any(a)) && (b.is_numeric() || any(b)) => {
                if any(a) || any(b) {
                    T::Any
                } else {
                    T::Double
                }
            }
            (T::Date, T::Interval) | (T::Interval, T::Date)
                if matches!(op, BinaryOp::Add | BinaryOp::Sub) =>
            {
                T::Date
            }
            (T::Timestamp, T::Interval) | (T::Interval, T::Timestamp)
                if matches!(op, BinaryOp::Add | BinaryOp::Sub) =>
            {
                T::Timestamp
            }
            (T::Interval, T::Interval) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
                T::Interval
            }
            (T::Date, T::Date) if op == BinaryOp::Sub => T::Int64,
            (T::Timestamp, T::Timestamp) if op == BinaryOp::Sub => T::Interval,
            (a, b) if functions::temporal_arith_type(op, a, b).is_some() => {
                functions::temporal_arith_type(op, a, b).unwrap_or(T::Any)
            }
            (T::List(a), T::List(b)) if op == BinaryOp::Add => {
                T::List(Box::new(list_item_type(a, b).unwrap_or(T::Any)))
            }
            // Appending or prepending one element.
            (T::List(a), b) | (b, T::List(a)) if op == BinaryOp::Add => {
                T::List(Box::new(list_item_type(a, b).unwrap_or(T::Any)))
            }
            _ => {
                return Err(Error::type_error(format!(
                    "cannot apply {op:?} to {l} and {r}"
                )))
            }
        },
    })
}

/// The slot of property `name` in a variable's read list, added (with a fresh
/// slot) the first time the query reads it.
pub(super) fn property_slot(
    properties: &mut Vec<(String, SlotId, LogicalType)>,
    next_slot: &mut u32,
    name: &str,
    ty: &LogicalType,
) -> SlotId {
    if let Some(p) = properties.iter().find(|p| p.0 == name) {
        return p.1;
    }
    let s = SlotId(*next_slot);
    *next_slot += 1;
    properties.push((name.to_string(), s, ty.clone()));
    s
}

pub(super) fn split_conjuncts(e: BoundExpr, out: &mut Vec<BoundExpr>) {
    match e.kind {
        BoundExprKind::Binary(BinaryOp::And, l, r) => {
            split_conjuncts(*l, out);
            split_conjuncts(*r, out);
        }
        kind => out.push(BoundExpr { kind, ..e }),
    }
}

/// Binding of nested values and comprehensions: map literals, field access,
/// indexing, slicing, list comprehensions, quantifiers and `reduce`.
impl Binder<'_> {
    /// A reference to a comprehension variable (these shadow every other name).
    pub(super) fn bind_local(&self, e: &ast::Expr) -> Option<BoundExpr> {
        let ExprKind::Variable(name) = &e.kind else {
            return None;
        };
        let (_, idx, ty) = self.locals.iter().rev().find(|l| &l.0 == name)?;
        Some(BoundExpr {
            kind: BoundExprKind::Local(*idx),
            ty: ty.clone(),
            span: e.span,
        })
    }

    /// The node or rel variable that projection alias `alias` stands for
    /// (`b AS a`), if any.
    fn alias_entity(&self, alias: &str) -> Option<String> {
        let (_, e) = self.aliases.iter().find(|a| a.0 == alias)?;
        let slot = entity_slot(e)?;
        let nodes = self.graph.nodes.iter().map(|n| (&n.name, n.id_slot));
        let rels = self.graph.rels.iter().map(|r| (&r.name, r.id_slot));
        let carried = self.rels_carried.iter().map(|r| (&r.0, r.1));
        nodes
            .chain(rels)
            .chain(carried)
            .find(|(_, s)| *s == slot)
            .map(|(name, _)| name.clone())
    }

    /// Whether `var.key` reads a field of a value (a comprehension variable,
    /// a map or node value carried by WITH, a projection alias) rather than a
    /// property of a node or rel variable of the pattern.
    pub(super) fn is_value_variable(&self, var: &str) -> bool {
        if self.locals.iter().any(|l| l.0 == var) {
            return true;
        }
        if self.graph.nodes.iter().any(|n| n.name == var)
            || self.graph.rels.iter().any(|r| r.name == var)
            || self.rels_carried.iter().any(|r| r.0 == var)
        {
            return false;
        }
        if let Some((_, e)) = self.aliases.iter().find(|a| a.0 == var) {
            return has_fields(&e.ty);
        }
        self.values.iter().any(|v| v.0 == var && has_fields(&v.2))
    }

    /// `expr.key` on a value: a map's entry, a node's or rel's property.
    pub(super) fn bind_field(
        &mut self,
        target: &ast::Expr,
        key: &ast::Ident,
        span: Span,
    ) -> Result<BoundExpr> {
        let target = self.bind_expr(target)?;
        let ty = match &target.ty {
            LogicalType::Struct(fields) => fields
                .iter()
                .find(|f| f.0 == key.name)
                .map_or(LogicalType::Any, |f| f.1.clone()),
            LogicalType::Map(_, v) => (**v).clone(),
            LogicalType::Node | LogicalType::Rel | LogicalType::Any => LogicalType::Any,
            t if functions::is_temporal(t) => {
                functions::temporal_field_type(t, &key.name).unwrap_or(LogicalType::Any)
            }
            LogicalType::InternalId => {
                return Err(not_supported(
                    span,
                    "property access on a node or rel that is not a pattern variable",
                ))
            }
            other => {
                return Err(Error::at(
                    ErrorKind::Type,
                    span,
                    format!(
                        "cannot read '{}' of a {other} value (expected a map, node or rel)",
                        key.name
                    ),
                ))
            }
        };
        Ok(BoundExpr {
            kind: BoundExprKind::Field(Box::new(target), key.name.clone()),
            ty,
            span,
        })
    }

    /// Binds `body` with `vars` (name, type) in scope as fresh locals and
    /// aggregates disallowed; returns the locals' indexes and the result.
    pub(super) fn with_locals<T>(
        &mut self,
        vars: &[(&ast::Ident, LogicalType)],
        body: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<(Vec<u32>, T)> {
        let mut idxs = Vec::with_capacity(vars.len());
        for (name, ty) in vars {
            let idx = self.next_local;
            self.next_local += 1;
            self.locals.push((name.name.clone(), idx, ty.clone()));
            idxs.push(idx);
        }
        let saved = self.aggregates.take();
        let r = body(self);
        self.aggregates = saved;
        self.locals.truncate(self.locals.len() - vars.len());
        Ok((idxs, r?))
    }

    pub(super) fn bind_nested_expr(&mut self, e: &ast::Expr) -> Result<BoundExpr> {
        let span = e.span;
        let (kind, ty) = match &e.kind {
            ExprKind::Map(entries) => self.bind_map(entries)?,
            ExprKind::Index(target, index) => self.bind_index(target, index)?,
            ExprKind::Slice(target, from, to) => {
                self.bind_slice(target, from.as_deref(), to.as_deref())?
            }
            ExprKind::ListComprehension {
                variable,
                list,
                predicate,
                projection,
            } => self.bind_list_comprehension(
                variable,
                list,
                predicate.as_deref(),
                projection.as_deref(),
            )?,
            ExprKind::Quantifier {
                kind,
                variable,
                list,
                predicate,
            } => self.bind_quantifier(*kind, variable, list, predicate)?,
            ExprKind::Reduce {
                accumulator,
                init,
                variable,
                list,
                expr,
            } => self.bind_reduce(accumulator, init, variable, list, expr)?,
            _ => return Err(not_supported(span, "this expression")),
        };
        Ok(BoundExpr { kind, ty, span })
    }

    /// A map literal: a struct of its entries' types.
    fn bind_map(&mut self, entries: &[(ast::Ident, ast::Expr)]) -> Result<Nested> {
        let mut fields: Vec<(String, BoundExpr)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let v = self.bind_expr(v)?;
            // A repeated key keeps the last value.
            match fields.iter_mut().find(|f| f.0 == k.name) {
                Some(f) => f.1 = v,
                None => fields.push((k.name.clone(), v)),
            }
        }
        let ty = LogicalType::Struct(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), v.ty.clone()))
                .collect(),
        );
        Ok((BoundExprKind::Map(fields), ty))
    }

    /// `target[index]`: a list's element or a map's (node's, rel's) entry.
    fn bind_index(&mut self, target: &ast::Expr, index: &ast::Expr) -> Result<Nested> {
        let entity = matches!(&target.kind, ExprKind::Variable(v) if self.is_entity_variable(v));
        let mut target = self.bind_expr(target)?;
        if entity {
            // `n[key]` with a key computed per row: index the node (or rel)
            // value, which carries every property.
            target = self.materialize_entities(target, true)?;
        }
        let index = self.bind_expr(index)?;
        let ty = index_type(&target, &index)?;
        Ok((BoundExprKind::Index(Box::new(target), Box::new(index)), ty))
    }

    /// `target[from..to]` of a list.
    fn bind_slice(
        &mut self,
        target: &ast::Expr,
        from: Option<&ast::Expr>,
        to: Option<&ast::Expr>,
    ) -> Result<Nested> {
        let target = self.bind_expr(target)?;
        if !matches!(target.ty, LogicalType::List(_) | LogicalType::Any) {
            return Err(Error::at(
                ErrorKind::Type,
                target.span,
                format!("cannot slice a {} value (expected a list)", target.ty),
            ));
        }
        let mut bound = |b: Option<&ast::Expr>| -> Result<Option<Box<BoundExpr>>> {
            match b {
                None => Ok(None),
                Some(b) => {
                    let b = self.bind_expr(b)?;
                    check_integer(&b, "a slice bound")?;
                    Ok(Some(Box::new(b)))
                }
            }
        };
        let (from, to) = (bound(from)?, bound(to)?);
        let ty = target.ty.clone();
        Ok((BoundExprKind::Slice(Box::new(target), from, to), ty))
    }

    /// `[x IN list WHERE predicate | projection]`.
    fn bind_list_comprehension(
        &mut self,
        variable: &ast::Ident,
        list: &ast::Expr,
        predicate: Option<&ast::Expr>,
        projection: Option<&ast::Expr>,
    ) -> Result<Nested> {
        let list = self.bind_expr(list)?;
        let elem = element_type(&list, "a list comprehension")?;
        let (vars, (predicate, projection)) =
            self.with_locals(&[(variable, elem.clone())], |b| {
                let p = predicate.map(|p| b.bind_expr(p)).transpose()?;
                if let Some(p) = &p {
                    check_predicate(p, "a list comprehension")?;
                }
                let q = projection.map(|q| b.bind_expr(q)).transpose()?;
                Ok((p, q))
            })?;
        let ty = LogicalType::List(Box::new(projection.as_ref().map_or(elem, |q| q.ty.clone())));
        let kind = BoundExprKind::ListComprehension {
            var: vars[0],
            list: Box::new(list),
            predicate: predicate.map(Box::new),
            projection: projection.map(Box::new),
        };
        Ok((kind, ty))
    }

    /// `all/any/none/single(x IN list WHERE predicate)`.
    fn bind_quantifier(
        &mut self,
        kind: ast::Quantifier,
        variable: &ast::Ident,
        list: &ast::Expr,
        predicate: &ast::Expr,
    ) -> Result<Nested> {
        let what = match kind {
            ast::Quantifier::All => "all()",
            ast::Quantifier::Any => "any()",
            ast::Quantifier::None => "none()",
            ast::Quantifier::Single => "single()",
        };
        let list = self.bind_expr(list)?;
        let elem = element_type(&list, what)?;
        let (vars, predicate) = self.with_locals(&[(variable, elem)], |b| {
            let p = b.bind_expr(predicate)?;
            check_predicate(&p, what)?;
            Ok(p)
        })?;
        let kind = BoundExprKind::Quantifier {
            kind,
            var: vars[0],
            list: Box::new(list),
            predicate: Box::new(predicate),
        };
        Ok((kind, LogicalType::Bool))
    }

    /// `reduce(accumulator = init, variable IN list | expr)`.
    fn bind_reduce(
        &mut self,
        accumulator: &ast::Ident,
        init: &ast::Expr,
        variable: &ast::Ident,
        list: &ast::Expr,
        expr: &ast::Expr,
    ) -> Result<Nested> {
        let init = self.bind_expr(init)?;
        let list = self.bind_expr(list)?;
        let elem = element_type(&list, "reduce()")?;
        // The accumulator's type is the common type of the initial value
        // and the step (bound again when the step widens it).
        let mut acc_ty = init.ty.clone();
        let (vars, step) = loop {
            let (vars, step) = self.with_locals(
                &[(accumulator, acc_ty.clone()), (variable, elem.clone())],
                |b| b.bind_expr(expr),
            )?;
            let next = functions::common_type(&acc_ty, &step.ty).unwrap_or(LogicalType::Any);
            if acc_ty == LogicalType::Any || next == acc_ty {
                break (vars, step);
            }
            acc_ty = next;
        };
        let kind = BoundExprKind::Reduce {
            acc: vars[0],
            init: Box::new(init),
            var: vars[1],
            list: Box::new(list),
            expr: Box::new(step),
        };
        Ok((kind, acc_ty))
    }
}

/// A nested expression's kind and type, as its binder returns them.
type Nested = (BoundExprKind, LogicalType);

/// The type of `target[index]`, checking the index against what it indexes.
fn index_type(target: &BoundExpr, index: &BoundExpr) -> Result<LogicalType> {
    Ok(match &target.ty {
        LogicalType::List(elem) => {
            check_integer(index, "a list index")?;
            (**elem).clone()
        }
        LogicalType::Struct(_) | LogicalType::Map(..) | LogicalType::Node | LogicalType::Rel => {
            if !matches!(index.ty, LogicalType::String | LogicalType::Any) {
                return Err(Error::at(
                    ErrorKind::Type,
                    index.span,
                    format!("a map key must be a STRING, got {}", index.ty),
                ));
            }
            match (&target.ty, &index.kind) {
                (LogicalType::Struct(fields), BoundExprKind::Literal(Value::String(k))) => fields
                    .iter()
                    .find(|f| &f.0 == k)
                    .map_or(LogicalType::Any, |f| f.1.clone()),
                (LogicalType::Map(_, v), _) => (**v).clone(),
                _ => LogicalType::Any,
            }
        }
        LogicalType::Any => {
            if !(index.ty.is_integer()
                || matches!(index.ty, LogicalType::String | LogicalType::Any))
            {
                return Err(Error::at(
                    ErrorKind::Type,
                    index.span,
                    format!(
                        "an index must be an INTEGER (lists) or a STRING (maps), got {}",
                        index.ty
                    ),
                ));
            }
            LogicalType::Any
        }
        other => {
            return Err(Error::at(
                ErrorKind::Type,
                target.span,
                format!("cannot index a {other} value (expected a list or map)"),
            ))
        }
    })
}
