//! Binding of MERGE: a node, a rel between bound nodes or a path, with its
//! ON CREATE and ON MATCH items.

use super::*;

impl Binder<'_> {
    pub(super) fn bind_merge(
        &self,
        pattern: &ast::PathPattern,
        on_create: &[ast::SetItem],
        on_match: &[ast::SetItem],
        span: Span,
        scope: &mut WriteScope,
    ) -> Result<WriteClause> {
        if pattern.shortest.is_some() {
            return Err(semantic(span, "MERGE cannot make a shortest path"));
        }
        let bound = |n: &ast::NodePattern| {
            n.variable
                .as_ref()
                .is_some_and(|v| self.is_bound(&v.name, scope))
        };
        if pattern.chain.len() == 1
            && pattern.variable.is_none()
            && bound(&pattern.start)
            && bound(&pattern.chain[0].1)
        {
            return self.bind_merge_rel(pattern, on_create, on_match, span, scope);
        }
        if !pattern.chain.is_empty() || pattern.variable.is_some() {
            return self.bind_merge_path(pattern, on_create, on_match, scope);
        }
        let node = &pattern.start;
        if let Some(v) = &node.variable {
            if self.is_bound(&v.name, scope) {
                return Err(semantic(
                    v.span,
                    format!("variable '{}' is already defined", v.name),
                ));
            }
        }
        let new = self.new_node(node, true, scope)?;
        let var = new.var.clone();
        // `ON CREATE SET n.p = v` items go with the insert; anything else
        // (labels, maps, other variables) runs as SET clauses afterwards.
        let own_property = |item: &ast::SetItem| {
            matches!(item, ast::SetItem::Property { target, .. }
                if matches!(&target.kind, ExprKind::Property(v, _)
                    if matches!(&v.kind, ExprKind::Variable(n) if *n == var)))
        };
        scope.created.insert(var.clone());
        let direct = on_create.iter().chain(on_match).all(own_property)
            && !items_read_written(on_create, scope)
            && !items_read_written(on_match, scope);
        let (on_create, on_match, then) = if direct {
            let mut sets = |items: &[ast::SetItem]| -> Vec<(String, usize)> {
                let mut out = Vec::new();
                for item in items {
                    if let ast::SetItem::Property { target, value } = item {
                        if let ExprKind::Property(_, key) = &target.kind {
                            out.push((key.name.clone(), scope.column(value.clone())));
                        }
                    }
                }
                out
            };
            let sets = (sets(on_create), sets(on_match));
            self.check_properties(&new.table, &sets.0, span)?;
            self.check_properties(&new.table, &sets.1, span)?;
            (sets.0, sets.1, MergeThen::default())
        } else {
            let then = self.merge_then(on_create, on_match, span, scope)?;
            (Vec::new(), Vec::new(), then)
        };
        Ok(WriteClause::MergeNode {
            node: new,
            on_create,
            on_match,
            then,
        })
    }

    /// `MERGE` of any other pattern with rels: its nodes (bound ones by
    /// reference, new ones by what to match and create) and rels.
    pub(super) fn bind_merge_path(
        &self,
        pattern: &ast::PathPattern,
        on_create: &[ast::SetItem],
        on_match: &[ast::SetItem],
        scope: &mut WriteScope,
    ) -> Result<WriteClause> {
        let path = self.path_name(pattern, scope)?;
        let mut nodes: Vec<MergePathNode> = Vec::new();
        let mut chain = Vec::with_capacity(pattern.chain.len() + 1);
        let mut elems = Vec::new();
        // The variable of each pattern node (hidden for anonymous ones). New
        // variables enter `scope` once the whole pattern is bound: a
        // variable used twice in it is one node, not a bound one.
        let mut names: Vec<String> = Vec::new();
        let node_at = |n: &ast::NodePattern,
                       nodes: &mut Vec<MergePathNode>,
                       names: &mut Vec<String>,
                       scope: &mut WriteScope|
         -> Result<usize> {
            let decorated = n.properties.is_some()
                || n.where_.is_some()
                || !matches!(n.labels, ast::LabelExpr::None);
            if let Some(v) = &n.variable {
                let earlier = names.iter().position(|x| *x == v.name);
                if earlier.is_some() || self.is_bound(&v.name, scope) {
                    if decorated {
                        return Err(semantic(
                            v.span,
                            format!("variable '{}' is already defined", v.name),
                        ));
                    }
                    if let Some(i) = earlier {
                        return Ok(i);
                    }
                    let node = self.node_ref(&v.name, v.span, scope)?;
                    nodes.push(MergePathNode { node, new: None });
                    names.push(v.name.clone());
                    return Ok(nodes.len() - 1);
                }
            }
            let new = self.new_node(n, true, scope)?;
            names.push(new.var.clone());
            nodes.push(MergePathNode {
                node: NodeRef::Created(new.var.clone()),
                new: Some(new),
            });
            Ok(nodes.len() - 1)
        };
        let first = node_at(&pattern.start, &mut nodes, &mut names, scope)?;
        chain.push(first);
        elems.push(names[first].clone());
        let mut rels: Vec<MergePathRel> = Vec::with_capacity(pattern.chain.len());
        for (i, (rel, node)) in pattern.chain.iter().enumerate() {
            let right = node_at(node, &mut nodes, &mut names, scope)?;
            if rel.range.is_some() {
                return Err(semantic(
                    rel.span,
                    "MERGE cannot make a variable-length rel",
                ));
            }
            if let Some(w) = &rel.where_ {
                return Err(semantic(w.span, "WHERE is not allowed in a MERGE pattern"));
            }
            let [ty] = rel.types.as_slice() else {
                return Err(semantic(
                    rel.span,
                    "a rel to merge needs exactly one rel type",
                ));
            };
            if let Some(v) = &rel.variable {
                let in_pattern = names.contains(&v.name)
                    || rels
                        .iter()
                        .any(|r| r.rel.var.as_deref() == Some(v.name.as_str()));
                if in_pattern || self.is_bound(&v.name, scope) {
                    return Err(semantic(
                        v.span,
                        format!("variable '{}' is already defined", v.name),
                    ));
                }
            }
            let table = self.write_rel_type(ty)?;
            let properties = self.merge_properties(rel.properties.as_ref(), scope)?;
            self.check_properties(&table, &properties, rel.span)?;
            let var = path_rel_var(rel, path.as_deref(), i);
            elems.extend(var.clone());
            let left = chain[i];
            let (src, dst) = match rel.direction {
                Direction::Left => (right, left),
                _ => (left, right),
            };
            rels.push(MergePathRel {
                rel: CreateRel {
                    var,
                    table,
                    src: nodes[src].node.clone(),
                    dst: nodes[dst].node.clone(),
                    properties,
                },
                either_direction: rel.direction == Direction::Both,
            });
            chain.push(right);
            elems.push(names[right].clone());
        }
        let new_nodes = nodes.iter().filter_map(|n| n.new.as_ref());
        scope.created.extend(new_nodes.map(|c| c.var.clone()));
        scope
            .created_rels
            .extend(rels.iter().filter_map(|r| r.rel.var.clone()));
        if let Some(name) = path {
            scope.paths.push((name, elems));
        }
        let then = self.merge_then(on_create, on_match, pattern.span, scope)?;
        Ok(WriteClause::MergePath {
            nodes,
            chain,
            rels,
            then,
        })
    }

    /// `MERGE (a)-[r:T {..}]->(b)` with `a` and `b` bound.
    pub(super) fn bind_merge_rel(
        &self,
        pattern: &ast::PathPattern,
        on_create: &[ast::SetItem],
        on_match: &[ast::SetItem],
        span: Span,
        scope: &mut WriteScope,
    ) -> Result<WriteClause> {
        let (rel, right) = &pattern.chain[0];
        let mut ends = Vec::with_capacity(2);
        for n in [&pattern.start, right] {
            let bound = n
                .variable
                .as_ref()
                .filter(|v| self.is_bound(&v.name, scope));
            let Some(v) = bound else {
                return Err(not_supported(
                    n.span,
                    "MERGE of a rel whose end nodes are not bound by earlier clauses",
                ));
            };
            if n.properties.is_some() || !matches!(n.labels, ast::LabelExpr::None) {
                return Err(semantic(
                    v.span,
                    format!("variable '{}' is already defined", v.name),
                ));
            }
            ends.push(self.node_ref(&v.name, v.span, scope)?);
        }
        let [ty] = rel.types.as_slice() else {
            return Err(semantic(
                rel.span,
                "a rel to merge needs exactly one rel type",
            ));
        };
        if rel.range.is_some() {
            return Err(semantic(
                rel.span,
                "MERGE cannot make a variable-length rel",
            ));
        }
        let var = match &rel.variable {
            Some(v) if self.is_bound(&v.name, scope) => {
                return Err(semantic(
                    v.span,
                    format!("variable '{}' is already defined", v.name),
                ))
            }
            Some(v) => Some(v.name.clone()),
            None => None,
        };
        let table = self.write_rel_type(ty)?;
        let properties = self.merge_properties(rel.properties.as_ref(), scope)?;
        self.check_properties(&table, &properties, rel.span)?;
        let (left, right) = (ends[0].clone(), ends[1].clone());
        let (src, dst) = match rel.direction {
            Direction::Left => (right, left),
            _ => (left, right),
        };
        if let Some(v) = &var {
            scope.created_rels.push(v.clone());
        }
        let then = self.merge_then(on_create, on_match, span, scope)?;
        Ok(WriteClause::MergeRel {
            rel: CreateRel {
                var,
                table,
                src,
                dst,
                properties,
            },
            either_direction: rel.direction == Direction::Both,
            then,
        })
    }

    /// ON CREATE / ON MATCH items that are not all `x.p = v`: bound as SET
    /// clauses once the merged variable is in scope.
    pub(super) fn merge_then(
        &self,
        on_create: &[ast::SetItem],
        on_match: &[ast::SetItem],
        span: Span,
        scope: &mut WriteScope,
    ) -> Result<MergeThen> {
        Ok(MergeThen {
            on_create: self.merge_items(on_create, span, scope)?,
            on_match: self.merge_items(on_match, span, scope)?,
        })
    }

    /// ON CREATE or ON MATCH items (the MERGE's variables already in
    /// `scope`): SET clauses over input columns, or, when a value reads
    /// what the writes bound or changed, a SET continuation.
    pub(super) fn merge_items(
        &self,
        items: &[ast::SetItem],
        span: Span,
        scope: &mut WriteScope,
    ) -> Result<MergeItems> {
        if !items_read_written(items, scope) {
            return Ok(MergeItems::Now(self.bind_set_items(items, scope)?));
        }
        let set = Clause::Set {
            items: items.to_vec(),
            span,
        };
        let cont = self.continuation(std::slice::from_ref(&set), scope);
        // Hidden columns after this clause must not read what it may write.
        for item in items {
            match item {
                ast::SetItem::Property { target, .. } => {
                    if let ExprKind::Property(_, key) = &target.kind {
                        scope.written.insert(key.name.clone());
                    }
                }
                ast::SetItem::Replace { .. } | ast::SetItem::Merge { .. } => {
                    scope.written.insert("*".to_string());
                }
                ast::SetItem::Labels { .. } => {}
            }
        }
        Ok(MergeItems::Later(Box::new(cont)))
    }

    /// The property map of a MERGE pattern: a literal map (a parameter
    /// would hide which properties the MERGE matches on).
    pub(super) fn merge_properties(
        &self,
        props: Option<&ast::Expr>,
        scope: &mut WriteScope,
    ) -> Result<Vec<(String, usize)>> {
        if let Some(p) = props.filter(|p| matches!(p.kind, ExprKind::Parameter(_))) {
            return Err(semantic(
                p.span,
                "MERGE needs a literal property map, not a parameter (InvalidParameterUse); write {key: $param.key, ...}",
            ));
        }
        self.write_properties(props, scope)
    }
}
