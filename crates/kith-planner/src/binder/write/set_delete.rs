//! Binding of SET, REMOVE and DELETE: their targets (properties, labels,
//! whole entities) and the values they write.

use super::*;

/// A DELETE expression of type `ty` can hold something to delete.
pub(super) fn check_deletable(ty: &LogicalType, span: Span) -> Result<()> {
    match ty {
        LogicalType::Any
        | LogicalType::InternalId
        | LogicalType::Node
        | LogicalType::Rel
        | LogicalType::Path => Ok(()),
        other => Err(Error::at(
            ErrorKind::Type,
            span,
            format!(
                "DELETE expects a node, rel or path, not a {other} value (InvalidArgumentType)"
            ),
        )),
    }
}

impl Binder<'_> {
    /// The items of a SET (or of ON CREATE / ON MATCH bound in general):
    /// one `Set` of the property items, then the label and map items.
    pub(super) fn bind_set_items(
        &self,
        items: &[ast::SetItem],
        scope: &mut WriteScope,
    ) -> Result<Vec<WriteClause>> {
        let mut sets = Vec::new();
        let mut others = Vec::new();
        for item in items {
            match item {
                ast::SetItem::Property { target, value } => {
                    let (target, property) = self.set_target(target, scope)?;
                    let value = scope.column(value.clone());
                    scope.written.insert(property.clone());
                    sets.push(SetProperty {
                        target,
                        property,
                        value,
                    });
                }
                ast::SetItem::Replace { variable, value }
                | ast::SetItem::Merge { variable, value } => {
                    let replace = matches!(item, ast::SetItem::Replace { .. });
                    let target = self.entity_target(&variable.name, variable.span, scope)?;
                    // `SET b = a` copies a's properties: the write columns
                    // carry entities as ids, so read them as a map.
                    let value = match &value.kind {
                        ExprKind::Variable(v) if self.is_read_entity(v) => ast::Expr {
                            kind: ExprKind::Function {
                                name: ast::Ident {
                                    name: "properties".to_string(),
                                    span: value.span,
                                },
                                distinct: false,
                                star: false,
                                args: vec![value.clone()],
                            },
                            span: value.span,
                        },
                        _ => value.clone(),
                    };
                    let value = scope.column(value);
                    // Every property may change: later values must not
                    // read any.
                    scope.written.insert("*".to_string());
                    others.push(WriteClause::SetMap {
                        target,
                        value,
                        replace,
                    });
                }
                ast::SetItem::Labels { variable, labels } => {
                    others.push(self.set_labels(variable, labels, false, scope)?);
                }
            }
        }
        let mut out = Vec::with_capacity(others.len() + 1);
        if !sets.is_empty() {
            out.push(WriteClause::Set(sets));
        }
        out.extend(others);
        Ok(out)
    }

    /// `SET n:A:B` (`remove`: `REMOVE n:A:B`).
    pub(super) fn set_labels(
        &self,
        variable: &ast::Ident,
        labels: &[ast::Ident],
        remove: bool,
        scope: &mut WriteScope,
    ) -> Result<WriteClause> {
        Ok(WriteClause::SetLabels {
            node: self.node_ref(&variable.name, variable.span, scope)?,
            labels: labels.iter().map(|l| l.name.clone()).collect(),
            remove,
        })
    }

    /// `x.prop` of a SET or REMOVE.
    pub(super) fn set_target(
        &self,
        target: &ast::Expr,
        scope: &mut WriteScope,
    ) -> Result<(SetTarget, String)> {
        let ExprKind::Property(var, key) = &target.kind else {
            return Err(not_supported(target.span, "this SET target"));
        };
        let ExprKind::Variable(v) = &var.kind else {
            return Err(not_supported(target.span, "this SET target"));
        };
        let t = self.entity_target(v, var.span, scope)?;
        Ok((t, key.name.clone()))
    }

    /// The node or rel a SET writes to by variable name.
    pub(super) fn entity_target(
        &self,
        name: &str,
        span: Span,
        scope: &mut WriteScope,
    ) -> Result<SetTarget> {
        if scope.created_rels.iter().any(|r| r == name) {
            return Ok(SetTarget::CreatedRel(name.to_string()));
        }
        Ok(match self.rel_ref(name, span, scope)? {
            Some(r) => SetTarget::Rel(r),
            None => SetTarget::Node(self.node_ref(name, span, scope)?),
        })
    }

    /// `[DETACH] DELETE e, ...`: node and rel variables by reference, any
    /// other expression (a path, `list[0]`, `map.key`) by its value, which
    /// must be a node, rel or path.
    pub(super) fn bind_delete(
        &self,
        detach: bool,
        exprs: &[ast::Expr],
        scope: &mut WriteScope,
    ) -> Result<WriteClause> {
        let mut nodes = Vec::new();
        let mut rels = Vec::new();
        let mut values = Vec::new();
        for e in exprs {
            match &e.kind {
                ExprKind::HasLabels(..) => {
                    return Err(Error::at(
                        ErrorKind::Syntax,
                        e.span,
                        "DELETE takes nodes, rels or paths, not a label test (remove labels with REMOVE n:Label) (InvalidDelete)",
                    ))
                }
                ExprKind::Variable(v) if scope.created_rels.iter().any(|r| r == v) => {
                    return Err(not_supported(
                        e.span,
                        "DELETE of a rel created by the same statement",
                    ))
                }
                ExprKind::Variable(v)
                    if scope.created.contains(v) || self.graph.nodes.iter().any(|n| n.name == *v) =>
                {
                    nodes.push(self.node_ref(v, e.span, scope)?);
                }
                ExprKind::Variable(v) if !self.is_bound(v, scope) && !self.is_path(v) => {
                    return Err(semantic(e.span, format!("variable '{v}' is not defined")));
                }
                ExprKind::Variable(v) => match self.rel_ref(v, e.span, scope)? {
                    Some(r) => rels.push(r),
                    None => values.push(self.delete_value(e, scope)),
                },
                _ => values.push(self.delete_value(e, scope)),
            }
        }
        Ok(WriteClause::Delete {
            detach,
            nodes,
            rels,
            values,
        })
    }

    /// A DELETE expression computed by the reading part.
    pub(super) fn delete_value(&self, e: &ast::Expr, scope: &mut WriteScope) -> usize {
        let c = scope.column(e.clone());
        scope.deleted_values.push((c, e.span));
        c
    }
}
