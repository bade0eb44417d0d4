//! Binding of variable-length rel patterns (`*l..u`, shortest, weighted).

use super::*;

impl Binder<'_> {
    /// Checks a variable-length rel pattern and resolves its kind and bounds
    /// (the rel table and endpoints are checked by the planner).
    pub(super) fn bind_recursive(
        &mut self,
        rel: &ast::RelPattern,
        spec: &ast::RecursiveSpec,
        shortest: Option<ast::ShortestKind>,
        len_slot: Option<SlotId>,
    ) -> Result<RecursiveRel> {
        use ast::RecursiveKind as K;
        let kind = match (shortest, spec.kind) {
            (Some(ast::ShortestKind::Shortest), K::Walk | K::Shortest) => RecursiveMode::Shortest,
            (Some(ast::ShortestKind::AllShortest), K::Walk | K::AllShortest) => {
                RecursiveMode::AllShortest
            }
            (Some(_), _) => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    spec.span,
                    "shortestPath/allShortestPaths cannot be combined with another path mode",
                ))
            }
            (None, K::Walk) => RecursiveMode::Walk,
            (None, K::Shortest) => RecursiveMode::Shortest,
            (None, K::AllShortest) => RecursiveMode::AllShortest,
            (None, K::Trail) => RecursiveMode::Trail,
            (None, K::Acyclic) => RecursiveMode::Acyclic,
            (None, K::WeightedShortest) => RecursiveMode::WeightedShortest,
            (None, K::AllWeightedShortest) => {
                return Err(not_supported(
                    spec.span,
                    "ALL WSHORTEST (all weighted shortest paths)",
                ))
            }
        };
        if spec.predicate.is_some() || spec.rel_var.is_some() || spec.node_var.is_some() {
            return Err(not_supported(
                spec.span,
                "predicates inside a variable-length relationship",
            ));
        }
        if let (Some(v), false) = (&rel.variable, kind.enumerable()) {
            return Err(not_supported(
                v.span,
                "binding the rel variable of a shortest path",
            ));
        }
        if rel.where_.is_some() {
            return Err(not_supported(
                rel.span,
                "a WHERE inside a variable-length relationship (use (r, n | WHERE ...))",
            ));
        }
        let rel_conditions = self.bind_rel_conditions(rel)?;
        if kind == RecursiveMode::WeightedShortest && !rel_conditions.is_empty() {
            return Err(not_supported(
                rel.span,
                "property conditions on a weighted shortest path",
            ));
        }
        if kind == RecursiveMode::WeightedShortest && rel.direction == ast::Direction::Both {
            return Err(not_supported(
                rel.span,
                "undirected weighted shortest paths",
            ));
        }
        let weight = match (kind, &spec.weight) {
            (RecursiveMode::WeightedShortest, Some(w)) => Some(w.name.clone()),
            (RecursiveMode::WeightedShortest, None) => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    spec.span,
                    "WSHORTEST needs a weight property: * WSHORTEST(weight)",
                ))
            }
            _ => None,
        };
        if weight.is_some() && (spec.max.is_some() || spec.min.is_some_and(|m| m > 1)) {
            return Err(not_supported(
                spec.span,
                "length bounds on weighted shortest paths (only 0 or 1 as the lower bound)",
            ));
        }
        // An upper bound below the lower one matches nothing (openCypher).
        let lower = spec.min.unwrap_or(1);
        Ok(RecursiveRel {
            mode: kind,
            lower,
            upper: spec.max,
            len_slot,
            weight,
            path_slot: None,
            rels_slot: None,
            rel_conditions,
        })
    }

    /// `[:R* {k: v}]`: every rel of the path has property `k` equal to `v`,
    /// a constant or a parameter (evaluated once, into a rel-id mask).
    fn bind_rel_conditions(&mut self, rel: &ast::RelPattern) -> Result<Vec<(String, BoundExpr)>> {
        let Some(props) = &rel.properties else {
            return Ok(Vec::new());
        };
        let ExprKind::Map(entries) = &props.kind else {
            return Err(Error::at(
                ErrorKind::Semantic,
                props.span,
                "expected a map of properties",
            ));
        };
        let mut out = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let e = self.bind_expr(value)?;
            if !matches!(
                e.kind,
                BoundExprKind::Literal(_) | BoundExprKind::Parameter(_)
            ) {
                return Err(not_supported(
                    value.span,
                    "a property condition on a variable-length relationship other than a constant or a parameter",
                ));
            }
            out.push((key.name.clone(), e));
        }
        Ok(out)
    }
}
