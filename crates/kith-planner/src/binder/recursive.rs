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
            (None, K::Walk) => match self.var_length {
                VarLengthSemantics::Walk | VarLengthSemantics::WalkAll => RecursiveMode::Walk,
                VarLengthSemantics::Trail => RecursiveMode::Trail,
            },
            (None, K::Shortest) => RecursiveMode::Shortest,
            (None, K::AllShortest) => RecursiveMode::AllShortest,
            (None, K::Trail) => RecursiveMode::Trail,
            (None, K::Acyclic) => RecursiveMode::Acyclic,
            (None, K::WeightedShortest) => RecursiveMode::WeightedShortest,
            (None, K::AllWeightedShortest) => RecursiveMode::AllWeightedShortest,
        };
        if rel.where_.is_some() {
            return Err(not_supported(
                rel.span,
                "a WHERE inside a variable-length relationship (use (r, n | WHERE ...))",
            ));
        }
        let rel_conditions = self.bind_rel_conditions(rel)?;
        let weight = match (kind, &spec.weight) {
            (m, Some(w)) if m.weighted() => Some(w.name.clone()),
            (m, None) if m.weighted() => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    spec.span,
                    "WSHORTEST needs a weight property: * WSHORTEST(weight)",
                ))
            }
            _ => None,
        };
        // The cheapest path has no hop limit; a bound would need a search
        // by (node, hops), not Dijkstra's.
        if weight.is_some() && spec.max.is_some() {
            return Err(not_supported(
                spec.span,
                "an upper length bound on weighted shortest paths (write * WSHORTEST(w) or * WSHORTEST(w) 1..)",
            ));
        }
        if weight.is_some() && spec.min.is_some_and(|m| m > 1) {
            return Err(not_supported(
                spec.span,
                "a lower length bound above 1 on weighted shortest paths",
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
            rel_predicate: None,
            node_predicate: None,
            left_outer: false,
        })
    }

    /// `(r, n | WHERE p)` of a variable-length rel over `rel_tables`: binds
    /// `p` with `r` and `n` as a rel and a node of the walked tables, and
    /// splits it into the conjuncts over `r`'s properties and those over
    /// `n`'s. Anything else (both at once, outer variables, labels, ids) is
    /// refused as not supported.
    pub(super) fn bind_recursive_predicate(
        &mut self,
        spec: &ast::RecursiveSpec,
        rel_tables: &[TableId],
        recursive: &mut RecursiveRel,
    ) -> Result<()> {
        let Some(pred) = &spec.predicate else {
            return Ok(());
        };
        let mut node_tables: Vec<TableId> = Vec::new();
        for t in rel_tables {
            if let Some(info) = self.catalog.table(*t).and_then(|e| e.rel_info()) {
                for n in [info.src, info.dst] {
                    if !node_tables.contains(&n) {
                        node_tables.push(n);
                    }
                }
            }
        }
        let unused = |i: &Option<ast::Ident>| i.as_ref().map(|v| v.name.clone());
        let (rel_name, node_name) = (unused(&spec.rel_var), unused(&spec.node_var));
        for v in [&spec.rel_var, &spec.node_var].into_iter().flatten() {
            if self.graph.nodes.iter().any(|n| n.name == v.name)
                || self.graph.rels.iter().any(|r| r.name == v.name)
                || self.values.iter().any(|x| x.0 == v.name)
                || self.rels_carried.iter().any(|x| x.0 == v.name)
                || self.is_path(&v.name)
            {
                return Err(not_supported(
                    v.span,
                    "a variable of a recursive predicate that shadows another variable",
                ));
            }
        }
        // Temporary entries: property reads register their slots there.
        let rel_at = self.graph.rels.len();
        let node_at = self.graph.nodes.len();
        let rel_id = self.new_slot();
        let node_id = self.new_slot();
        if let Some(name) = &node_name {
            self.graph.nodes.push(QueryNode {
                name: name.clone(),
                tables: node_tables,
                id_slot: node_id,
                properties: Vec::new(),
                imported: false,
            });
        }
        if let Some(name) = &rel_name {
            self.graph.rels.push(QueryRel {
                name: name.clone(),
                tables: rel_tables.to_vec(),
                left: 0,
                right: 0,
                direction: ast::Direction::Right,
                id_slot: rel_id,
                properties: Vec::new(),
                recursive: None,
                ends: None,
                self_loops_twice: false,
            });
        }
        let bound = self.bind_expr(pred);
        let rel_props = if rel_name.is_some() {
            self.graph.rels.truncate(rel_at + 1);
            self.graph
                .rels
                .pop()
                .map(|r| r.properties)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let node_props = if node_name.is_some() {
            self.graph.nodes.truncate(node_at + 1);
            self.graph
                .nodes
                .pop()
                .map(|n| n.properties)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let bound = bound?;
        if bound.ty != LogicalType::Bool && bound.ty != LogicalType::Any {
            return Err(Error::at(
                ErrorKind::Type,
                pred.span,
                format!("WHERE expects a BOOL expression, got {}", bound.ty),
            ));
        }
        let mut conjuncts = Vec::new();
        split_conjuncts(bound, &mut conjuncts);
        let (mut on_rel, mut on_node) = (Vec::new(), Vec::new());
        for c in conjuncts {
            let mut slots = Vec::new();
            c.slots(&mut slots);
            let of = |props: &[(String, SlotId, LogicalType)]| {
                slots.iter().all(|s| props.iter().any(|p| p.1 == *s))
            };
            if slots.is_empty() || !(of(&rel_props) || of(&node_props)) {
                return Err(not_supported(
                    c.span,
                    "a recursive predicate other than conditions on the properties of the rel or of the node alone",
                ));
            }
            if of(&rel_props) {
                on_rel.push(c);
            } else {
                on_node.push(c);
            }
        }
        let and = |items: Vec<BoundExpr>| {
            items.into_iter().reduce(|a, b| BoundExpr {
                span: a.span,
                kind: BoundExprKind::Binary(BinaryOp::And, Box::new(a), Box::new(b)),
                ty: LogicalType::Bool,
            })
        };
        recursive.rel_predicate = and(on_rel).map(|expr| PropertyPredicate {
            expr,
            properties: rel_props,
        });
        recursive.node_predicate = and(on_node).map(|expr| PropertyPredicate {
            expr,
            properties: node_props,
        });
        Ok(())
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
