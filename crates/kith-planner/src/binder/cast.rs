//! Explicit conversions: openCypher's `CAST(x AS type)` and Kùzu's
//! `CAST(x, 'type')`. Both bind to one `Cast` node whose type is the target;
//! the executor converts each value and fails on one that does not convert
//! (unlike `toInteger()` and friends, which give NULL).

use super::*;

impl Binder<'_> {
    /// `CAST(x AS ty)`.
    pub(super) fn bind_cast(
        &mut self,
        x: &ast::Expr,
        ty: &ast::TypeName,
        span: Span,
    ) -> Result<BoundExpr> {
        let target = cast_target(ty)?;
        // startNode(r) / endNode(r) stand for a node, like a variable.
        if super::endpoint::endpoint_call(x).is_some() {
            return Err(entity_cast(x.span, "a node", &target));
        }
        let arg = self.bind_expr(x)?;
        // A node or rel variable is its id inside a query: converting that
        // would hand out the id, not the entity.
        if let BoundExprKind::Slot(slot) = &arg.kind {
            let what = if self.graph.nodes.iter().any(|n| n.id_slot == *slot) {
                Some("a node")
            } else if self.graph.rels.iter().any(|r| r.id_slot == *slot)
                || self.rels_carried.iter().any(|r| r.1 == *slot)
            {
                Some("a rel")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(entity_cast(x.span, what, &target));
            }
        }
        if matches!(
            arg.ty,
            LogicalType::Node | LogicalType::Rel | LogicalType::Path
        ) {
            return Err(Error::at(
                ErrorKind::Type,
                x.span,
                format!("CAST cannot convert a {} value to {target}", arg.ty),
            ));
        }
        Ok(BoundExpr {
            kind: BoundExprKind::Cast(Box::new(arg)),
            ty: target,
            span,
        })
    }

    /// Kùzu's `CAST(x, 'type')`: the type is a string literal, parsed like
    /// the AS form's.
    pub(super) fn bind_cast_call(&mut self, args: &[ast::Expr], span: Span) -> Result<BoundExpr> {
        let [x, ty] = args else {
            return Err(Error::at(
                ErrorKind::Semantic,
                span,
                "CAST takes a value and a type: CAST(x AS INT64) or CAST(x, 'INT64')",
            ));
        };
        let ExprKind::Literal(Literal::String(text)) = &ty.kind else {
            return Err(Error::at(
                ErrorKind::Semantic,
                ty.span,
                "the type of CAST(x, 'type') must be a string literal",
            ));
        };
        // Positions inside the text mean nothing to the user: errors point
        // at the whole literal.
        let parsed = kith_parser::parse_type(text).map_err(|e| {
            Error::at(
                ErrorKind::Semantic,
                ty.span,
                format!("invalid type '{text}' in CAST: {}", e.message),
            )
        })?;
        self.bind_cast(x, &respan(parsed, ty.span), span)
    }
}

/// The type a CAST converts to. Only targets the executor's conversions can
/// produce from another type are accepted, so a query never binds a CAST
/// that fails for every value.
fn cast_target(ty: &ast::TypeName) -> Result<LogicalType> {
    if let ast::TypeName::Named(name, span) = ty {
        if name == "SERIAL" {
            return Err(Error::at(
                ErrorKind::Semantic,
                *span,
                "SERIAL is a column type, not a value type: CAST to INT64 instead",
            ));
        }
    }
    let target = bind_type(ty).map_err(|e| e.or_span(type_span(ty)))?;
    check_target(&target, ty)?;
    Ok(target)
}

fn check_target(target: &LogicalType, written: &ast::TypeName) -> Result<()> {
    use LogicalType as T;
    let hint = match target {
        T::List(elem) => {
            let inner = match written {
                ast::TypeName::List(inner) => inner.as_ref(),
                other => other,
            };
            return check_target(elem, inner);
        }
        t if t.is_numeric() => return Ok(()),
        T::Bool | T::String | T::Date | T::Timestamp | T::Interval => return Ok(()),
        T::LocalTime => " (use localtime())",
        T::Time => " (use time())",
        T::LocalDateTime => " (use localdatetime())",
        T::DateTime => " (use datetime())",
        T::Duration => " (use duration())",
        _ => "",
    };
    Err(Error::at(
        ErrorKind::NotSupported,
        type_span(written),
        format!("CAST to {target} is not supported{hint}"),
    ))
}

/// Where a type name was written (its first named part).
fn type_span(t: &ast::TypeName) -> Span {
    match t {
        ast::TypeName::Named(_, span) => *span,
        ast::TypeName::List(inner) | ast::TypeName::Array(inner, _) => type_span(inner),
        ast::TypeName::Map(k, _) => type_span(k),
        ast::TypeName::Struct(fields) => fields
            .first()
            .map_or(Span::new(0, 0), |(name, _)| name.span),
    }
}

/// `t` with every span replaced by `span`.
fn respan(t: ast::TypeName, span: Span) -> ast::TypeName {
    use ast::TypeName as N;
    match t {
        N::Named(name, _) => N::Named(name, span),
        N::List(inner) => N::List(Box::new(respan(*inner, span))),
        N::Array(inner, n) => N::Array(Box::new(respan(*inner, span)), n),
        N::Struct(fields) => N::Struct(
            fields
                .into_iter()
                .map(|(name, ty)| {
                    let name = ast::Ident {
                        name: name.name,
                        span,
                    };
                    (name, respan(ty, span))
                })
                .collect(),
        ),
        N::Map(k, v) => N::Map(Box::new(respan(*k, span)), Box::new(respan(*v, span))),
    }
}

fn entity_cast(span: Span, what: &str, target: &LogicalType) -> Error {
    Error::at(
        ErrorKind::Type,
        span,
        format!("CAST cannot convert {what} to {target}; convert one of its properties"),
    )
}
