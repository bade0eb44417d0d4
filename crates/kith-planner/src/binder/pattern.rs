//! Binding of MATCH patterns: node and rel patterns, labels, inline
//! property maps, OPTIONAL MATCH parts, table calls and fixed-length named paths.

use super::*;

impl Binder<'_> {
    /// `OPTIONAL MATCH`: a part of its own over the rows so far (after an
    /// implicit `WITH *` when needed), projecting every variable, whose
    /// finishing phase pads input rows without a match with NULLs.
    pub(super) fn bind_optional_match(
        &mut self,
        patterns: &[ast::PathPattern],
        where_: Option<&ast::Expr>,
        span: Span,
        mut predicates: Vec<BoundExpr>,
    ) -> Result<Vec<BoundExpr>> {
        let star = ast::Projection {
            is_with: true,
            distinct: false,
            star: true,
            items: Vec::new(),
            order_by: Vec::new(),
            skip: None,
            limit: None,
            where_: None,
            span,
        };
        let fresh = predicates.is_empty()
            && self.graph.nodes.iter().all(|n| n.imported)
            && self.graph.rels.is_empty()
            && self.part.unwinds.is_empty();
        if !fresh {
            predicates = self.bind_projection(&star, predicates)?;
        }
        debug_assert!(predicates.is_empty());
        let inputs: Vec<SlotId> = self.part.inputs.iter().map(|i| i.0).collect();
        // Relationship isomorphism holds within an OPTIONAL MATCH too.
        self.bind_clause_patterns(patterns, &mut predicates)?;
        if let Some(w) = where_ {
            let e = self.bind_expr(w)?;
            split_conjuncts(e, &mut predicates);
        }
        let next = self.bind_projection(&star, predicates)?;
        let row_slot = self.new_slot();
        let part = self
            .parts
            .last_mut()
            .ok_or_else(|| Error::internal("optional match without a part"))?;
        part.optional = Some(
            part.outputs
                .iter()
                .map(|(_, e)| match e.kind {
                    BoundExprKind::Slot(s) => inputs.iter().position(|x| *x == s),
                    _ => None,
                })
                .collect(),
        );
        part.numbers_rows = true;
        part.inputs.push((row_slot, LogicalType::Int64));
        part.order_by.push(BoundSortKey {
            expr: BoundExpr::slot(row_slot, LogicalType::Int64, span),
            descending: false,
        });
        Ok(next)
    }

    /// `OPTIONAL MATCH (a)-[r:R]->(b:T) WHERE ...` where `a` is a node of
    /// this part written bare, `r` and `b` are new, and `r`, `b` and `a`
    /// each have one table: binds `r` and `b` into this part's graph as a
    /// [`OptionalExtend`] (planned as the pipeline's last extend, which
    /// pads a tuple without matches) instead of a part of its own over
    /// numbered rows. False, with nothing bound, for any other pattern.
    pub(super) fn bind_optional_extend(
        &mut self,
        patterns: &[ast::PathPattern],
        where_: Option<&ast::Expr>,
    ) -> Result<bool> {
        let [p] = patterns else {
            return Ok(false);
        };
        let [(rel, end)] = p.chain.as_slice() else {
            return Ok(false);
        };
        let bound_node =
            |name: &ast::Ident| self.graph.nodes.iter().position(|n| n.name == name.name);
        let new_name = |v: &Option<ast::Ident>| self.is_new_name(v);
        // One end bound (and written bare, so the clause cannot narrow it),
        // the other new.
        let from = match (&p.start.variable, &end.variable) {
            (Some(s), e) if is_bare(&p.start) && new_name(e) => bound_node(s),
            (s, Some(e)) if is_bare(end) && new_name(s) => bound_node(e),
            _ => None,
        };
        let Some(from) = from else {
            return Ok(false);
        };
        if p.variable.is_some()
            || p.shortest.is_some()
            || rel.range.is_some()
            || rel.direction == ast::Direction::Both
            || !new_name(&rel.variable)
            || self.holds_optional_step()
            || self.graph.nodes[from].tables.len() != 1
        {
            return Ok(false);
        }
        let (nodes, rels) = (self.graph.nodes.len(), self.graph.rels.len());
        let mut own = Vec::new();
        self.bind_clause_patterns(std::slice::from_ref(p), &mut own)?;
        let single = self.graph.nodes.len() == nodes + 1
            && self.graph.rels.len() == rels + 1
            && self.graph.nodes[nodes].tables.len() == 1
            && self.graph.rels[rels].tables.len() == 1;
        if !self.keep_single_tables(single, (nodes, rels), where_, &mut own)? {
            return Ok(false);
        }
        self.part.optional_extend = Some(OptionalExtend { predicates: own });
        Ok(true)
    }

    /// `OPTIONAL MATCH (a)-[:R]->(b:B)-[:S]->(c:C) WHERE ...`: a chain of two
    /// or more directed single-hop rels from `a`, a node of this part
    /// written bare (with one table), every other variable new and every
    /// variable of one table: binds the chain into this part's graph as an
    /// optional chain ([`OptionalPattern`]) instead of a part of its own
    /// over numbered rows. False, with nothing bound, for any other pattern.
    pub(super) fn bind_optional_chain(
        &mut self,
        patterns: &[ast::PathPattern],
        where_: Option<&ast::Expr>,
    ) -> Result<bool> {
        let [p] = patterns else {
            return Ok(false);
        };
        let Some(start) = &p.start.variable else {
            return Ok(false);
        };
        let new_name = |v: &Option<ast::Ident>| self.is_new_name(v);
        let bare = is_bare(&p.start);
        let from = self.graph.nodes.iter().position(|n| n.name == start.name);
        // Every later node a new name of its own: a chain, no cycle.
        let mut names: Vec<&str> = Vec::new();
        let distinct = p.chain.iter().all(|(_, n)| match &n.variable {
            Some(v) if names.contains(&v.name.as_str()) || v.name == start.name => false,
            Some(v) => {
                names.push(&v.name);
                true
            }
            None => true,
        });
        let Some(from) = from.filter(|_| bare && distinct && p.chain.len() >= 2) else {
            return Ok(false);
        };
        if p.variable.is_some()
            || p.shortest.is_some()
            || p.chain.iter().any(|(r, n)| {
                r.range.is_some()
                    || r.direction == ast::Direction::Both
                    || !new_name(&r.variable)
                    || !new_name(&n.variable)
            })
            || self.graph.nodes[from].tables.len() != 1
            || self.holds_optional_step()
        {
            return Ok(false);
        }
        self.part.optional_chain = self.bind_single_table_pattern(p, where_)?;
        Ok(self.part.optional_chain.is_some())
    }

    /// `OPTIONAL MATCH (a)-[*l..u]->(b)` with no WHERE, where `a` is a node
    /// of this part written bare and the rel, `b` (labels allowed, no
    /// property map) and any path variable are new: binds the pattern into
    /// this part's graph with its variable-length rel marked
    /// [`RecursiveRel::left_outer`], so the clauses after it (the WITH or
    /// RETURN) run in the part after the recursive join, which pads a
    /// source reaching nothing. Properties of `a` they read are then read
    /// once per source before the join, not once per join row after a
    /// pass-through part. False, with nothing bound, for any other pattern.
    pub(super) fn bind_optional_recursive(
        &mut self,
        patterns: &[ast::PathPattern],
        where_: Option<&ast::Expr>,
    ) -> Result<bool> {
        let ([p], None) = (patterns, where_) else {
            return Ok(false);
        };
        let [(rel, end)] = p.chain.as_slice() else {
            return Ok(false);
        };
        let Some(name) = &p.start.variable else {
            return Ok(false);
        };
        let new_name = |v: &Option<ast::Ident>| self.is_new_name(v);
        let start_bound = is_bare(&p.start) && self.graph.nodes.iter().any(|n| n.name == name.name);
        let end_new = end.properties.is_none() && end.where_.is_none() && new_name(&end.variable);
        if !start_bound
            || !end_new
            || rel.range.is_none()
            || rel.where_.is_some()
            || !new_name(&rel.variable)
            || !new_name(&p.variable)
            || self.holds_optional_step()
        {
            return Ok(false);
        }
        let first_rel = self.graph.rels.len();
        let mut own = Vec::new();
        self.bind_clause_patterns(std::slice::from_ref(p), &mut own)?;
        if !own.is_empty() {
            // The checks above leave the pattern nothing to filter by.
            return Err(Error::internal(
                "a left outer variable-length rel with predicates of its own",
            ));
        }
        let Some(spec) = self
            .graph
            .rels
            .get_mut(first_rel)
            .and_then(|r| r.recursive.as_mut())
        else {
            return Err(Error::internal("optional variable-length rel not bound"));
        };
        spec.left_outer = true;
        Ok(true)
    }

    /// `OPTIONAL MATCH (b:B)-[:R]->(c:C) WHERE ...` whose variables are all
    /// new (it shares none with the part: the WHERE or inline maps relate
    /// it to the rest, `b.k = a.k`), whose nodes and rels each have one
    /// table and whose rels are directed single hops: binds the pattern
    /// into this part's graph as an [`OptionalPattern`] (planned as the build
    /// side of a left outer hash join after every other step) instead of a
    /// part of its own over numbered rows. False, with nothing bound, for
    /// any other pattern, and when the part's graph is empty (nothing to
    /// join with) or already holds an optional step or a variable-length rel.
    pub(super) fn bind_optional_join(
        &mut self,
        patterns: &[ast::PathPattern],
        where_: Option<&ast::Expr>,
    ) -> Result<bool> {
        let [p] = patterns else {
            return Ok(false);
        };
        let new_name = |v: &Option<ast::Ident>| self.is_new_name(v);
        let all_new = new_name(&p.start.variable)
            && p.chain
                .iter()
                .all(|(r, n)| new_name(&r.variable) && new_name(&n.variable));
        // Two mentions of one new node (`(b)-[]->(b)`) are a cycle within
        // the pattern: still one component, which the build side plans.
        if !all_new
            || p.variable.is_some()
            || p.shortest.is_some()
            || p.chain
                .iter()
                .any(|(r, _)| r.range.is_some() || r.direction == ast::Direction::Both)
            || self.graph.nodes.is_empty()
            || self.holds_optional_step()
        {
            return Ok(false);
        }
        self.part.optional_join = self.bind_single_table_pattern(p, where_)?;
        Ok(self.part.optional_join.is_some())
    }

    /// Whether an OPTIONAL MATCH's variable (or its absence) names nothing
    /// bound yet: neither a path nor a variable in scope.
    fn is_new_name(&self, v: &Option<ast::Ident>) -> bool {
        v.as_ref()
            .is_none_or(|v| !self.is_path(&v.name) && self.check_new_variable(v).is_ok())
    }

    /// Whether the part already holds an in-pipeline OPTIONAL MATCH step
    /// or a variable-length rel (either keeps a new one out of its pipeline).
    fn holds_optional_step(&self) -> bool {
        self.graph.rels.iter().any(|r| r.recursive.is_some())
            || self.part.optional_extend.is_some()
            || self.part.optional_join.is_some()
            || self.part.optional_chain.is_some()
    }

    /// Binds the pattern of an in-pipeline OPTIONAL MATCH and its WHERE:
    /// the graph sizes before it (where its nodes and rels start) and its
    /// own predicates, or `None`, with nothing bound, when a variable of it
    /// has several tables (the general OPTIONAL MATCH unions them).
    fn bind_single_table_pattern(
        &mut self,
        p: &ast::PathPattern,
        where_: Option<&ast::Expr>,
    ) -> Result<Option<OptionalPattern>> {
        let (nodes, rels) = (self.graph.nodes.len(), self.graph.rels.len());
        let mut own = Vec::new();
        self.bind_clause_patterns(std::slice::from_ref(p), &mut own)?;
        let single = self.graph.nodes[nodes..]
            .iter()
            .all(|n| n.tables.len() == 1)
            && self.graph.rels[rels..]
                .iter()
                .all(|r| r.tables.len() == 1 && r.recursive.is_none());
        if !self.keep_single_tables(single, (nodes, rels), where_, &mut own)? {
            return Ok(None);
        }
        Ok(Some(OptionalPattern {
            first_node: nodes,
            first_rel: rels,
            predicates: own,
        }))
    }

    /// After an in-pipeline OPTIONAL MATCH bound its pattern from graph
    /// sizes `(nodes, rels)`: when the pattern's variables do not each have
    /// one table (`single` false), unbinds them and returns false (the
    /// general OPTIONAL MATCH unions the tables); else binds the clause's
    /// WHERE into `own`.
    fn keep_single_tables(
        &mut self,
        single: bool,
        (nodes, rels): (usize, usize),
        where_: Option<&ast::Expr>,
        own: &mut Vec<BoundExpr>,
    ) -> Result<bool> {
        if !single {
            self.graph.nodes.truncate(nodes);
            self.graph.rels.truncate(rels);
            return Ok(false);
        }
        if let Some(w) = where_ {
            let e = self.bind_expr(w)?;
            split_conjuncts(e, own);
        }
        Ok(true)
    }

    /// Binds the patterns of one MATCH or OPTIONAL MATCH clause, its rels
    /// distinct from each other (relationship isomorphism holds within a
    /// clause, not with the rels of earlier ones).
    pub(super) fn bind_clause_patterns(
        &mut self,
        patterns: &[ast::PathPattern],
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        let first_rel = self.graph.rels.len();
        self.match_first_rel = first_rel;
        let bound = patterns
            .iter()
            .try_for_each(|p| self.bind_pattern(p, predicates));
        self.match_first_rel = 0;
        bound?;
        self.distinct_rels(first_rel, predicates);
        Ok(())
    }

    /// Fails when `name` is already bound in the current scope.
    pub(super) fn check_new_variable(&self, name: &ast::Ident) -> Result<()> {
        let n = &name.name;
        if self.graph.nodes.iter().any(|x| &x.name == n)
            || self.graph.rels.iter().any(|x| &x.name == n)
            || self.values.iter().any(|x| &x.0 == n)
            || self.rels_carried.iter().any(|x| &x.0 == n)
        {
            return Err(Error::at(
                ErrorKind::Semantic,
                name.span,
                format!("variable '{n}' is already defined"),
            ));
        }
        Ok(())
    }

    pub(super) fn node_tables(&self, labels: &ast::LabelExpr, span: Span) -> Result<Vec<TableId>> {
        let names: &[ast::Ident] = match labels {
            ast::LabelExpr::None => return Ok(self.catalog.node_tables().map(|t| t.id).collect()),
            // `:A:B`: the tables whose nodes may carry all of them.
            ast::LabelExpr::All(l) if l.len() > 1 => {
                let _ = span;
                return Ok(self
                    .catalog
                    .node_tables()
                    .filter(|t| l.iter().all(|x| t.may_have_label(&x.name)))
                    .map(|t| t.id)
                    .collect());
            }
            ast::LabelExpr::All(l) | ast::LabelExpr::Any(l) => l,
        };
        // A label no table has matches nothing (openCypher); naming a
        // declared rel table is an error.
        let mut out = Vec::new();
        for n in names {
            let before = out.len();
            for t in self.catalog.node_tables_with_label(&n.name) {
                if !out.contains(&t.id) {
                    out.push(t.id);
                }
            }
            if out.len() == before {
                if let Some(t) = self.catalog.table_by_name(&n.name) {
                    if t.is_rel() && !t.implicit {
                        return Err(Error::at(
                            ErrorKind::Semantic,
                            n.span,
                            format!("'{}' is a rel table, not a node table", n.name),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    pub(super) fn bind_node(
        &mut self,
        n: &ast::NodePattern,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<usize> {
        let tables = self.node_tables(&n.labels, n.span)?;
        if let Some(v) = n.variable.as_ref().filter(|v| self.is_path(&v.name)) {
            return Err(Error::at(
                ErrorKind::Semantic,
                v.span,
                format!(
                    "'{}' is a path, not a node (variable type conflict)",
                    v.name
                ),
            ));
        }
        let idx = match &n.variable {
            Some(v) if self.graph.nodes.iter().any(|q| q.name == v.name) => {
                let idx = self
                    .graph
                    .nodes
                    .iter()
                    .position(|q| q.name == v.name)
                    .unwrap_or(0);
                if !matches!(n.labels, ast::LabelExpr::None) {
                    let existing = &mut self.graph.nodes[idx];
                    existing.tables.retain(|t| tables.contains(t));
                }
                idx
            }
            Some(v)
                if self.values.iter().any(|x| {
                    x.0 == v.name
                        && matches!(
                            x.2,
                            LogicalType::Node | LogicalType::InternalId | LogicalType::Any
                        )
                }) =>
            {
                // A node carried as a value (`UNWIND collect(n) AS m`,
                // `coalesce(a, b) AS x`, `null AS a`): its id, computed by a
                // one-element UNWIND before matching, is the node's id slot;
                // NULL matches nothing.
                let Some(pos) = self.values.iter().position(|x| x.0 == v.name) else {
                    return Err(Error::internal("carried value vanished"));
                };
                let (name, value_slot, value_ty) = self.values.remove(pos);
                let id = BoundExpr {
                    kind: BoundExprKind::Function(
                        "id".to_string(),
                        vec![BoundExpr::slot(value_slot, value_ty, v.span)],
                    ),
                    ty: LogicalType::InternalId,
                    span: v.span,
                };
                let id_slot = self.new_slot();
                self.part.unwinds.push(BoundUnwind {
                    expr: BoundExpr {
                        kind: BoundExprKind::List(vec![id]),
                        ty: LogicalType::List(Box::new(LogicalType::InternalId)),
                        span: v.span,
                    },
                    slot: id_slot,
                    ty: LogicalType::InternalId,
                });
                self.graph.nodes.push(QueryNode {
                    name,
                    tables,
                    id_slot,
                    properties: Vec::new(),
                    imported: true,
                });
                self.graph.nodes.len() - 1
            }
            Some(v)
                if self.values.iter().any(|x| x.0 == v.name)
                    || self.rels_carried.iter().any(|x| x.0 == v.name) =>
            {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    v.span,
                    match self.values.iter().find(|x| x.0 == v.name) {
                        Some((_, _, ty)) => {
                            format!("'{}' is already bound to a {ty} value, not a node", v.name)
                        }
                        None => format!("'{}' is already bound to a rel, not a node", v.name),
                    },
                ));
            }
            Some(v) if self.graph.rels.iter().any(|r| r.name == v.name) => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    v.span,
                    format!("'{}' is already a rel variable", v.name),
                ));
            }
            _ => {
                let name = match &n.variable {
                    Some(v) => v.name.clone(),
                    None => format!("_anon_node_{}", self.graph.nodes.len()),
                };
                let id_slot = self.new_slot();
                self.graph.nodes.push(QueryNode {
                    name,
                    tables,
                    id_slot,
                    properties: Vec::new(),
                    imported: false,
                });
                self.graph.nodes.len() - 1
            }
        };
        let var = self.graph.nodes[idx].name.clone();
        self.label_predicates(&var, &n.labels, n.span, predicates)?;
        self.bind_inline_props(&var, n.properties.as_ref(), n.span, predicates)?;
        if let Some(w) = &n.where_ {
            let e = self.bind_expr(w)?;
            split_conjuncts(e, predicates);
        }
        Ok(idx)
    }

    pub(super) fn bind_inline_props(
        &mut self,
        var: &str,
        props: Option<&ast::Expr>,
        span: Span,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        let Some(props) = props else { return Ok(()) };
        let ExprKind::Map(entries) = &props.kind else {
            return Err(Error::at(
                ErrorKind::Semantic,
                props.span,
                "expected a map of properties",
            ));
        };
        for (key, value) in entries {
            let target = ast::Expr {
                kind: ExprKind::Property(
                    Box::new(ast::Expr {
                        kind: ExprKind::Variable(var.to_string()),
                        span,
                    }),
                    key.clone(),
                ),
                span: key.span,
            };
            let eq = ast::Expr {
                kind: ExprKind::Binary(BinaryOp::Eq, Box::new(target), Box::new(value.clone())),
                span: key.span.to(value.span),
            };
            let e = self.bind_expr(&eq)?;
            predicates.push(e);
        }
        Ok(())
    }

    pub(super) fn bind_pattern(
        &mut self,
        p: &ast::PathPattern,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        let single_recursive = p.chain.len() == 1 && p.chain[0].0.range.is_some();
        let renamed;
        let p = match self.shortest_rel_as_path(p, single_recursive) {
            Some(q) => {
                renamed = q;
                &renamed
            }
            None => p,
        };
        let mut path = self.bind_path_variable(p, single_recursive)?;
        if p.shortest.is_some() && !single_recursive {
            return Err(not_supported(
                p.span,
                "shortestPath/allShortestPaths over anything but one variable-length relationship",
            ));
        }
        let mut left = self.bind_node(&p.start, predicates)?;
        if let Some((_, elems)) = &mut path.fixed {
            elems.push(self.graph.nodes[left].name.clone());
        }
        for (rel, node) in &p.chain {
            left = self.bind_chain_rel(rel, node, left, p.shortest, &mut path, predicates)?;
        }
        if let Some(fixed) = path.fixed {
            self.fixed_paths.push(fixed);
        }
        Ok(())
    }

    /// The rel variable of a shortest path (`-[e* SHORTEST 1..30]->`)
    /// stands for the path, as in Kùzu: the pattern is bound like
    /// `e = (a)-[* SHORTEST]->(b)`, so `length(e)`, `nodes(e)` (the
    /// intermediate nodes only, as Kùzu's recursive rels) and `rels(e)`
    /// work on it. Returns that pattern (None: `p` is not one).
    fn shortest_rel_as_path(
        &mut self,
        p: &ast::PathPattern,
        single_recursive: bool,
    ) -> Option<ast::PathPattern> {
        let (None, Some((rel, _))) = (&p.variable, p.chain.first()) else {
            return None;
        };
        let shortest = p.shortest.is_some()
            || rel.range.as_ref().is_some_and(|r| {
                !matches!(
                    r.kind,
                    ast::RecursiveKind::Walk
                        | ast::RecursiveKind::Trail
                        | ast::RecursiveKind::Acyclic
                )
            });
        if !(single_recursive && rel.variable.is_some() && shortest) {
            return None;
        }
        let mut q = p.clone();
        q.variable = q.chain[0].0.variable.take();
        if let Some(v) = &q.variable {
            self.recursive_rels.push(v.name.clone());
        }
        Some(q)
    }

    /// Checks a pattern's path variable and gives it its slots: a named
    /// path of one variable-length rel is a path value (with a length, or
    /// cost, slot); one of several rels is built from its elements.
    fn bind_path_variable(
        &mut self,
        p: &ast::PathPattern,
        single_recursive: bool,
    ) -> Result<PathBinding> {
        let mut path = PathBinding {
            fixed: None,
            len_slot: None,
            path_slot: None,
        };
        let Some(v) = &p.variable else {
            return Ok(path);
        };
        if self.is_path(&v.name)
            || self.graph.nodes.iter().any(|n| n.name == v.name)
            || self.graph.rels.iter().any(|r| r.name == v.name)
            || self.values.iter().any(|x| x.0 == v.name)
        {
            return Err(Error::at(
                ErrorKind::Semantic,
                v.span,
                format!("variable '{}' is already bound", v.name),
            ));
        }
        if !single_recursive && p.shortest.is_none() {
            path.fixed = Some((v.name.clone(), Vec::new()));
        } else if single_recursive {
            let slot = self.new_slot();
            let weighted = p.chain[0].0.range.as_ref().is_some_and(|r| {
                matches!(
                    r.kind,
                    ast::RecursiveKind::WeightedShortest | ast::RecursiveKind::AllWeightedShortest
                )
            });
            // A path value; `length(p)` is read from the length column
            // instead when the path itself is not needed (the planner
            // rewrites it), so counting queries stay unenumerated.
            let value = self.new_slot();
            self.values
                .push((v.name.clone(), value, RecursiveRel::PATH_TYPE));
            path.path_slot = Some(value);
            if weighted {
                self.costs.push((v.name.clone(), slot));
            }
            path.len_slot = Some(slot);
        }
        Ok(path)
    }

    /// Binds `rel` of a pattern, from node `left` to `node` (bound here,
    /// and returned), adding its predicates to `predicates` and its
    /// elements to a named path's.
    fn bind_chain_rel(
        &mut self,
        rel: &ast::RelPattern,
        node: &ast::NodePattern,
        left: usize,
        shortest: Option<ast::ShortestKind>,
        path: &mut PathBinding,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<usize> {
        let mut recursive = match &rel.range {
            None => None,
            Some(spec) => Some(self.bind_recursive(rel, spec, shortest, path.len_slot)?),
        };
        let spliced = recursive
            .as_mut()
            .and_then(|r| self.recursive_path_slot(r, path));
        let right = self.bind_node(node, predicates)?;
        let tables = self.rel_pattern_tables(rel)?;
        let (name, bound_rel) = match &rel.variable {
            Some(v) => self.bind_rel_variable(v, recursive.as_mut())?,
            None => (format!("_anon_rel_{}", self.graph.rels.len()), None),
        };
        if let (Some(r), Some(spec)) = (&mut recursive, &rel.range) {
            self.bind_recursive_predicate(spec, &tables, r)?;
        }
        let id_slot = self.new_slot();
        let ends = (rel.direction == ast::Direction::Both && recursive.is_none())
            .then(|| (self.new_slot(), self.new_slot()));
        self.graph.rels.push(QueryRel {
            name: name.clone(),
            tables,
            left,
            right,
            direction: rel.direction,
            id_slot,
            properties: Vec::new(),
            self_loops_twice: ends.is_some() && self.var_length == VarLengthSemantics::WalkAll,
            recursive,
            ends,
        });
        if let Some((carried, span)) = bound_rel {
            let id = |slot| BoundExpr::slot(slot, LogicalType::InternalId, span);
            predicates.push(BoundExpr {
                kind: BoundExprKind::Binary(
                    crate::expr::BinaryOp::Eq,
                    Box::new(id(id_slot)),
                    Box::new(id(carried)),
                ),
                ty: LogicalType::Bool,
                span,
            });
        }
        if rel.range.is_none() {
            self.bind_inline_props(&name, rel.properties.as_ref(), rel.span, predicates)?;
        }
        if let Some(w) = rel.where_.as_ref().filter(|_| rel.range.is_none()) {
            let e = self.bind_expr(w)?;
            split_conjuncts(e, predicates);
        }
        if let Some((_, elems)) = &mut path.fixed {
            elems.push(spliced.unwrap_or(name));
            elems.push(self.graph.nodes[right].name.clone());
        }
        Ok(right)
    }

    /// Gives variable-length rel `r` of a pattern its path slot: the named
    /// path's value, or in a longer named path a hidden value of its own,
    /// spliced in (`_path` orients it), whose name is returned.
    fn recursive_path_slot(&mut self, r: &mut RecursiveRel, path: &PathBinding) -> Option<String> {
        r.path_slot = path.path_slot;
        path.fixed.as_ref()?;
        let slot = self.new_slot();
        let name = format!("_anon_path_{}", slot.0);
        self.values
            .push((name.clone(), slot, RecursiveRel::PATH_TYPE));
        r.path_slot = Some(slot);
        Some(name)
    }

    /// The rel tables a rel pattern's types name (every rel table when it
    /// names none), each once (`[:T|T]` gives no duplicate rows).
    fn rel_pattern_tables(&self, rel: &ast::RelPattern) -> Result<Vec<TableId>> {
        if rel.types.is_empty() {
            return Ok(self.catalog.rel_tables().map(|t| t.id).collect());
        }
        let mut out = Vec::new();
        for n in &rel.types {
            let before = out.len();
            for t in self.catalog.rel_tables_typed(&n.name) {
                if !out.contains(&t.id) {
                    out.push(t.id);
                }
            }
            if out.len() == before {
                if let Some(t) = self.catalog.table_by_name(&n.name) {
                    if t.is_node() && !t.implicit {
                        return Err(Error::at(
                            ErrorKind::Semantic,
                            n.span,
                            format!("'{}' is a node table, not a rel table", n.name),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The name rel variable `v` of a pattern gets in the query graph, and,
    /// for a rel bound by an earlier clause, the id slot (and where) the
    /// new rel must equal. `recursive`: the rel is variable-length (`v` is
    /// then the list of its rels).
    fn bind_rel_variable(
        &mut self,
        v: &ast::Ident,
        recursive: Option<&mut RecursiveRel>,
    ) -> Result<(String, Option<(SlotId, Span)>)> {
        if self.is_path(&v.name) {
            return Err(Error::at(
                ErrorKind::Semantic,
                v.span,
                format!("'{}' is a path, not a rel (variable type conflict)", v.name),
            ));
        }
        // Bound by an earlier clause: carried through a WITH, or matched by
        // an earlier MATCH of this part.
        let carried = self
            .rels_carried
            .iter()
            .find(|r| r.0 == v.name)
            .map(|r| r.1)
            .or_else(|| {
                self.graph.rels[..self.match_first_rel.min(self.graph.rels.len())]
                    .iter()
                    .find(|r| r.name == v.name && r.recursive.is_none())
                    .map(|r| r.id_slot)
            });
        if carried.is_none() && recursive.is_none() {
            self.check_rel_not_value(v)?;
        }
        if carried.is_some() && recursive.is_some() {
            return Err(Error::at(
                ErrorKind::Semantic,
                v.span,
                format!(
                    "'{}' is a rel bound earlier, not a list of rels for a variable-length pattern",
                    v.name
                ),
            ));
        }
        if (carried.is_none() && self.graph.rels.iter().any(|r| r.name == v.name))
            || self.graph.nodes.iter().any(|n| n.name == v.name)
        {
            return Err(Error::at(
                ErrorKind::Semantic,
                v.span,
                format!("variable '{}' is already bound", v.name),
            ));
        }
        let anonymous = format!("_anon_rel_{}", self.graph.rels.len());
        match (carried, recursive) {
            // A rel bound by an earlier clause: the pattern matches a new
            // rel that must be the same one.
            (Some(carried), _) => Ok((anonymous, Some((carried, v.span)))),
            (None, Some(r)) => {
                self.bind_rel_list(v, r)?;
                Ok((anonymous, None))
            }
            (None, None) => Ok((v.name.clone(), None)),
        }
    }

    /// A name bound to a value (`WITH 1 AS r`, `UNWIND ... AS r`) is not a
    /// rel: matching it as a new one would silently shadow the value. A rel
    /// handed on as a value (`UNWIND collect(r) AS r2`) would have to match
    /// that rel, which is not supported here.
    fn check_rel_not_value(&self, v: &ast::Ident) -> Result<()> {
        let Some((_, _, ty)) = self.values.iter().find(|x| x.0 == v.name) else {
            return Ok(());
        };
        Err(match ty {
            LogicalType::Rel | LogicalType::InternalId | LogicalType::Any => not_supported(
                v.span,
                "matching a relationship against a rel bound earlier as a value",
            ),
            _ => Error::at(
                ErrorKind::Semantic,
                v.span,
                format!(
                    "'{}' is already bound to a {ty} value, not a rel (variable type conflict)",
                    v.name
                ),
            ),
        })
    }

    /// `-[r*]->`: `r` is the list of the path's rels; of a weighted
    /// shortest path, `cost(r)` reads the cost column.
    fn bind_rel_list(&mut self, v: &ast::Ident, r: &mut RecursiveRel) -> Result<()> {
        if self.values.iter().any(|x| x.0 == v.name) {
            // openCypher allows matching a var-length rel against a list of
            // rels bound earlier.
            return Err(not_supported(
                v.span,
                "matching a variable-length relationship against a list of rels bound earlier",
            ));
        }
        let slot = self.new_slot();
        self.values
            .push((v.name.clone(), slot, RecursiveRel::rels_type()));
        r.rels_slot = Some(slot);
        if r.mode.weighted() {
            let len = match r.len_slot {
                Some(l) => l,
                None => {
                    let l = self.new_slot();
                    r.len_slot = Some(l);
                    l
                }
            };
            self.costs.push((v.name.clone(), len));
        }
        Ok(())
    }

    /// openCypher relationship isomorphism: within one MATCH, two rel
    /// variables never bind the same rel. Adds `r1 <> r2` for every pair of
    /// fixed-length rels bound since `first` whose tables overlap, and for a
    /// trail (a variable-length rel matching trails) that no rel of its list
    /// is another rel of the MATCH or in another trail's list. Walks and
    /// shortest paths are not constrained (Kùzu's semantics), nor, under
    /// `WalkAll`, fixed-length rels.
    pub(super) fn distinct_rels(&mut self, first: usize, predicates: &mut Vec<BoundExpr>) {
        let span = Span::new(0, 0);
        let is_trail = |r: &QueryRel| {
            r.recursive
                .as_ref()
                .is_some_and(|x| x.mode == RecursiveMode::Trail)
        };
        // A trail constrained by another rel reads its rel list.
        let n = self.graph.rels.len();
        for i in first..n {
            let constrained = is_trail(&self.graph.rels[i])
                && (first..n).any(|j| {
                    let (a, b) = (&self.graph.rels[i], &self.graph.rels[j]);
                    j != i
                        && (b.recursive.is_none() || is_trail(b))
                        && a.tables.iter().any(|t| b.tables.contains(t))
                });
            let unnamed = self.graph.rels[i]
                .recursive
                .as_ref()
                .is_some_and(|x| x.rels_slot.is_none());
            if constrained && unnamed {
                let slot = self.new_slot();
                if let Some(r) = self.graph.rels[i].recursive.as_mut() {
                    r.rels_slot = Some(slot);
                }
            }
        }
        let rels_list = |r: &QueryRel| {
            let slot = r.recursive.as_ref().and_then(|x| x.rels_slot)?;
            Some(BoundExpr::slot(slot, RecursiveRel::rels_type(), span))
        };
        let binary = |op, l: BoundExpr, r: BoundExpr| BoundExpr {
            kind: BoundExprKind::Binary(op, Box::new(l), Box::new(r)),
            ty: LogicalType::Bool,
            span,
        };
        let id = |slot| BoundExpr::slot(slot, LogicalType::InternalId, span);
        let local_id = |var| BoundExpr {
            kind: BoundExprKind::Function(
                "id".to_string(),
                vec![BoundExpr {
                    kind: BoundExprKind::Local(var),
                    ty: LogicalType::Rel,
                    span,
                }],
            ),
            ty: LogicalType::InternalId,
            span,
        };
        let quantifier = |kind, var, list, predicate| BoundExpr {
            kind: BoundExprKind::Quantifier {
                kind,
                var,
                list: Box::new(list),
                predicate: Box::new(predicate),
            },
            ty: LogicalType::Bool,
            span,
        };
        let mut added = Vec::new();
        let mut next_local = self.next_local;
        let rels = &self.graph.rels[first..];
        let fixed_distinct = self.var_length != VarLengthSemantics::WalkAll;
        for (i, a) in rels.iter().enumerate() {
            for b in &rels[i + 1..] {
                if !a.tables.iter().any(|t| b.tables.contains(t))
                    || (!fixed_distinct && a.recursive.is_none() && b.recursive.is_none())
                {
                    continue;
                }
                let e = match (a.recursive.is_some(), b.recursive.is_some()) {
                    (false, false) => binary(BinaryOp::Ne, id(a.id_slot), id(b.id_slot)),
                    // `none(x IN list WHERE id(x) = r)`.
                    (true, false) | (false, true) => {
                        let (trail, fixed) = if a.recursive.is_some() {
                            (a, b)
                        } else {
                            (b, a)
                        };
                        let Some(list) = rels_list(trail).filter(|_| is_trail(trail)) else {
                            continue;
                        };
                        let x = next_local;
                        next_local += 1;
                        let same = binary(BinaryOp::Eq, local_id(x), id(fixed.id_slot));
                        quantifier(ast::Quantifier::None, x, list, same)
                    }
                    // `none(x IN l1 WHERE any(y IN l2 WHERE id(x) = id(y)))`.
                    (true, true) => {
                        let (Some(l1), Some(l2)) = (
                            rels_list(a).filter(|_| is_trail(a)),
                            rels_list(b).filter(|_| is_trail(b)),
                        ) else {
                            continue;
                        };
                        let (x, y) = (next_local, next_local + 1);
                        next_local += 2;
                        let same = binary(BinaryOp::Eq, local_id(x), local_id(y));
                        let shared = quantifier(ast::Quantifier::Any, y, l2, same);
                        quantifier(ast::Quantifier::None, x, l1, shared)
                    }
                };
                added.push(e);
            }
        }
        self.next_local = next_local;
        predicates.extend(added);
    }

    /// Where the candidate tables of node `var` keep per-node label lists,
    /// the test that a node really carries the pattern's labels.
    pub(super) fn label_predicates(
        &mut self,
        var: &str,
        labels: &ast::LabelExpr,
        span: Span,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        let tables = self
            .graph
            .nodes
            .iter()
            .find(|n| n.name == var)
            .map(|n| n.tables.clone())
            .unwrap_or_default();
        let labelled = tables
            .iter()
            .filter_map(|t| self.catalog.table(*t))
            .any(|t| t.has_label_column());
        if !labelled {
            return Ok(());
        }
        match labels {
            ast::LabelExpr::None => {}
            ast::LabelExpr::All(l) => {
                let names: Vec<String> = l.iter().map(|x| x.name.clone()).collect();
                predicates.push(self.has_labels(var, &names, span)?);
            }
            ast::LabelExpr::Any(l) => {
                let mut any: Option<BoundExpr> = None;
                for x in l {
                    let t = self.has_labels(var, std::slice::from_ref(&x.name), span)?;
                    any = Some(match any {
                        None => t,
                        Some(a) => BoundExpr {
                            kind: BoundExprKind::Binary(
                                crate::expr::BinaryOp::Or,
                                Box::new(a),
                                Box::new(t),
                            ),
                            ty: LogicalType::Bool,
                            span,
                        },
                    });
                }
                predicates.extend(any);
            }
        }
        Ok(())
    }

    /// Whether `name` is a named path of this part.
    pub(super) fn is_path(&self, name: &str) -> bool {
        self.fixed_paths.iter().any(|p| p.0 == name)
    }

    /// The value of fixed-length path `name`: `_path(node, rel, node, ...)`
    /// over the entity values of its variables.
    pub(super) fn fixed_path_value(&mut self, name: &str, span: Span) -> Result<Option<BoundExpr>> {
        let Some((_, elems)) = self.fixed_paths.iter().find(|p| p.0 == name).cloned() else {
            return Ok(None);
        };
        let mut args = Vec::with_capacity(elems.len());
        for e in &elems {
            let slot = self
                .graph
                .nodes
                .iter()
                .find(|n| n.name == *e)
                .map(|n| n.id_slot)
                .or_else(|| {
                    self.graph
                        .rels
                        .iter()
                        .find(|r| r.name == *e)
                        .map(|r| r.id_slot)
                })
                .or_else(|| self.rels_carried.iter().find(|r| r.0 == *e).map(|r| r.1));
            // A variable-length part: its path value.
            if let (None, Some(&(_, ps, _))) = (slot, self.values.iter().find(|x| x.0 == *e)) {
                args.push(BoundExpr::slot(ps, LogicalType::Path, span));
                continue;
            }
            let slot =
                slot.ok_or_else(|| Error::internal(format!("path element '{e}' is not bound")))?;
            // An element that can match no table: the pattern matches
            // nothing, and the path is NULL wherever it is read.
            let Some(value) = self.entity_value(slot, span)? else {
                return Ok(Some(BoundExpr::literal(Value::Null, span)));
            };
            args.push(value);
        }
        Ok(Some(BoundExpr {
            kind: BoundExprKind::Function("_path".to_string(), args),
            ty: LogicalType::Path,
            span,
        }))
    }
}

/// A node written bare (no labels, property map or WHERE), so the clause
/// cannot narrow a bound node it names.
fn is_bare(n: &ast::NodePattern) -> bool {
    matches!(n.labels, ast::LabelExpr::None) && n.properties.is_none() && n.where_.is_none()
}

/// A pattern's path variable, while its rels are bound.
struct PathBinding {
    /// A named path of several rels (fixed ones, and variable-length ones
    /// whose paths are spliced in), built from its elements: its name and
    /// the variables of its elements so far.
    fixed: Option<(String, Vec<String>)>,
    /// Of a named path of one variable-length rel: the length (or cost)
    /// slot and the path value's slot.
    len_slot: Option<SlotId>,
    path_slot: Option<SlotId>,
}
