//! Binding of WITH and RETURN projections: aggregation, DISTINCT, ORDER BY,
//! SKIP and LIMIT, and property access on pattern variables.

use super::*;

/// The hidden column that carries a weighted path's cost through a WITH
/// (`_anon_cost_<name>`; hidden from `RETURN *` like every `_anon_` name).
const COST_PREFIX: &str = "_anon_cost_";

impl Binder<'_> {
    /// Binds a WITH or RETURN, finishing the current part. For a WITH, opens
    /// the next part (its scope holds exactly the projected names) and returns
    /// the predicates of its WHERE.
    pub(super) fn bind_projection(
        &mut self,
        proj: &ast::Projection,
        mut predicates: Vec<BoundExpr>,
    ) -> Result<Vec<BoundExpr>> {
        let what = if proj.is_with { "WITH" } else { "RETURN" };
        for p in &predicates {
            if p.ty != LogicalType::Bool && p.ty != LogicalType::Any {
                return Err(Error::at(
                    ErrorKind::Type,
                    p.span,
                    format!("WHERE expects a BOOL expression, got {}", p.ty),
                ));
            }
        }
        // `*` expands to every named variable in scope, in name order.
        let mut items: Vec<ast::ProjectionItem> = Vec::new();
        if proj.star {
            let mut names: Vec<String> = self
                .graph
                .nodes
                .iter()
                .map(|n| n.name.clone())
                .chain(self.graph.rels.iter().map(|r| r.name.clone()))
                .chain(self.values.iter().map(|v| v.0.clone()))
                .chain(self.rels_carried.iter().map(|r| r.0.clone()))
                .chain(self.fixed_paths.iter().map(|p| p.0.clone()))
                .filter(|n| !n.starts_with("_anon_"))
                .collect();
            names.sort();
            names.dedup();
            if names.is_empty() && proj.items.is_empty() && !proj.is_with {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    proj.span,
                    "RETURN * needs at least one variable in scope",
                ));
            }
            for n in names {
                items.push(ast::ProjectionItem {
                    expr: ast::Expr {
                        kind: ExprKind::Variable(n.clone()),
                        span: proj.span,
                    },
                    alias: None,
                    text: n,
                });
            }
        }
        items.extend(proj.items.iter().cloned());
        self.aggregates = Some(Vec::new());
        let mut outputs: Vec<(String, BoundExpr)> = Vec::new();
        let mut has_agg = Vec::new();
        // Node variables projected as themselves keep their identity.
        let mut carried_nodes: Vec<Option<Vec<TableId>>> = Vec::new();
        // Rel variables projected as themselves by a WITH (their properties
        // follow as hidden columns).
        let mut carried_rels: Vec<Option<Vec<TableId>>> = Vec::new();
        // The names before and after of the nodes carried, and the end node
        // variables of the rels carried (see `carried_rel_ends`).
        let mut node_names: Vec<(String, String)> = Vec::new();
        let mut rel_ends: Vec<(String, Option<RelEnds>)> = Vec::new();
        // Weighted paths carried by a WITH, whose cost follows as a hidden
        // column so that `cost()` still reads it.
        let mut carried_costs: Vec<String> = Vec::new();
        for item in &items {
            let before = self.aggregates.as_ref().map_or(0, |a| a.len());
            self.in_projection = true;
            let e = self.bind_expr(&item.expr);
            self.in_projection = false;
            let e = e?;
            // Nodes and rels handed out as values (RETURN n, [a, b],
            // collect(r)); a WITH of the bare variable keeps its identity.
            let bare = matches!(item.expr.kind, ExprKind::Variable(_));
            let e = if self.ids_projection {
                e
            } else {
                self.materialize_collected(before)?;
                self.materialize_entities(e, !(proj.is_with && bare))?
            };
            let after = self.aggregates.as_ref().map_or(0, |a| a.len());
            has_agg.push(after > before);
            let name = match (&item.alias, &item.expr.kind) {
                (Some(a), _) => a.name.clone(),
                (None, ExprKind::Variable(v)) => v.clone(),
                (None, _) if proj.is_with => {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        item.expr.span,
                        "an expression in WITH must be aliased (use AS)",
                    ))
                }
                (None, _) => item.text.clone(),
            };
            if outputs.iter().any(|(n, _)| *n == name) {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    item.expr.span,
                    format!("column '{name}' is projected twice in {what}"),
                ));
            }
            carried_nodes.push(match &item.expr.kind {
                ExprKind::Variable(v) => self
                    .graph
                    .nodes
                    .iter()
                    .find(|n| &n.name == v && !self.values.iter().any(|x| &x.0 == v))
                    .map(|n| n.tables.clone()),
                _ => None,
            });
            let rel_props = match &item.expr.kind {
                ExprKind::Variable(v) if proj.is_with => self.carried_rel_properties(v)?,
                _ => None,
            };
            carried_rels.push(match (&rel_props, &item.expr.kind) {
                (Some(_), ExprKind::Variable(v)) => Some(self.rel_tables_of(v)),
                _ => None,
            });
            // A node a write statement deleted stays flagged through WITH
            // (a rel's flag travels with its properties).
            let node_flag = match (&item.expr.kind, carried_nodes.last()) {
                (ExprKind::Variable(v), Some(Some(_))) if proj.is_with => self
                    .deleted_flag(v)
                    .map(|f| (entity::CARRIED_DELETED.to_string(), f)),
                _ => None,
            };
            if let (ExprKind::Variable(v), Some(Some(_))) = (&item.expr.kind, carried_nodes.last())
            {
                node_names.push((v.clone(), name.clone()));
            }
            if let (ExprKind::Variable(v), Some(Some(_))) = (&item.expr.kind, carried_rels.last()) {
                rel_ends.push((name.clone(), self.rel_ends(v)));
            }
            let cost = match &item.expr.kind {
                ExprKind::Variable(v) if proj.is_with => {
                    self.costs.iter().find(|c| &c.0 == v).map(|c| c.1)
                }
                _ => None,
            };
            outputs.push((name.clone(), e));
            if let Some(slot) = cost {
                has_agg.push(false);
                carried_nodes.push(None);
                carried_rels.push(None);
                let e = BoundExpr::slot(slot, LogicalType::Double, item.expr.span);
                outputs.push((format!("{COST_PREFIX}{name}"), e));
                carried_costs.push(name.clone());
            }
            for (prop, e) in rel_props.unwrap_or_default().into_iter().chain(node_flag) {
                has_agg.push(false);
                carried_nodes.push(None);
                carried_rels.push(None);
                outputs.push((format!("_anon_{name}.{prop}"), e));
            }
        }
        // ORDER BY sees the projected aliases and (without aggregation or
        // DISTINCT) the variables before the projection.
        self.aliases = outputs.clone();
        let projected_aggregates = self.aggregates.as_ref().map_or(0, |a| a.len());
        // Per key: whether it aggregates, and where it is written (an alias
        // binds to its item's expression, whose span lies outside this one).
        let mut order_aggregates: Vec<(bool, Span)> = Vec::new();
        let order: Result<Vec<BoundSortKey>> = proj
            .order_by
            .iter()
            .map(|o| {
                let before = self.aggregates.as_ref().map_or(0, |a| a.len());
                let expr = self.bind_expr(&o.expr)?;
                let after = self.aggregates.as_ref().map_or(0, |a| a.len());
                order_aggregates.push((after > before, o.expr.span));
                Ok(BoundSortKey {
                    expr,
                    descending: o.descending,
                })
            })
            .collect();
        self.aliases.clear();
        let mut order_by = order?;
        let aggregates = self.aggregates.take().unwrap_or_default();
        // The WHERE of a plain WITH (no aggregate, DISTINCT, ORDER BY, SKIP
        // or LIMIT) may also use variables the WITH does not project
        // (`WITH c WHERE r IS NULL`): it filters the rows before the
        // projection, with the aliases standing for their expressions. When
        // that does not bind (an alias used as a node, say), it is bound
        // after the projection below.
        let mut where_done = false;
        if let (true, Some(w)) = (proj.is_with, &proj.where_) {
            let plain = aggregates.is_empty()
                && !proj.distinct
                && proj.order_by.is_empty()
                && proj.skip.is_none()
                && proj.limit.is_none();
            if plain {
                self.aliases = outputs.clone();
                let early = self.bind_expr(w);
                self.aliases.clear();
                if let Ok(e) = early {
                    if e.ty != LogicalType::Bool && e.ty != LogicalType::Any {
                        return Err(Error::at(
                            ErrorKind::Type,
                            e.span,
                            format!("WHERE expects a BOOL expression, got {}", e.ty),
                        ));
                    }
                    split_conjuncts(e, &mut predicates);
                    where_done = true;
                }
            }
        }
        if projected_aggregates == 0 && !aggregates.is_empty() {
            let span = order_by.first().map_or(proj.span, |k| k.expr.span);
            return Err(Error::at(
                ErrorKind::Semantic,
                span,
                format!("ORDER BY cannot aggregate when {what} does not (invalid aggregation)"),
            ));
        }
        // ORDER BY may repeat an aggregate of the projection but not add
        // one: the rows it sorts are the projection's groups.
        let (projected, added) = aggregates.split_at(projected_aggregates.min(aggregates.len()));
        if let Some(a) = added.iter().find(|a| {
            !projected.iter().any(|p| {
                p.function == a.function
                    && p.distinct == a.distinct
                    && p.arg.as_ref().map(strip) == a.arg.as_ref().map(strip)
            })
        }) {
            let span = a.arg.as_ref().map_or(proj.span, |e| e.span);
            return Err(Error::at(
                ErrorKind::Semantic,
                span,
                format!(
                    "ORDER BY uses the aggregate {}() that {what} does not project",
                    a.function
                ),
            ));
        }
        let mut group_keys: Vec<(BoundExpr, SlotId)> = Vec::new();
        if !aggregates.is_empty() {
            // Non-aggregate items become grouping keys computed into slots.
            for (idx, (_, e)) in outputs.iter_mut().enumerate() {
                if !has_agg[idx] {
                    let slot = self.new_slot();
                    let ty = e.ty.clone();
                    let span = e.span;
                    let key = std::mem::replace(e, BoundExpr::slot(slot, ty, span));
                    group_keys.push((key, slot));
                }
            }
            // The properties of a node or rel grouped on, read by an
            // aggregating item (`WITH a, [a] + collect(n)`, where the node
            // is handed out as a value) or by ORDER BY (`RETURN a, count(*)
            // ORDER BY a.name`), become hidden keys: they depend on the
            // entity's id (read once per group, not grouped on).
            let key_slots: Vec<SlotId> = group_keys
                .iter()
                .filter_map(|(k, _)| entity_slot(k))
                .collect();
            let readers = outputs
                .iter()
                .enumerate()
                .filter(|(idx, _)| has_agg[*idx])
                .map(|(_, (_, e))| e)
                .chain(order_by.iter().map(|k| &k.expr));
            for e in readers {
                let mut slots = Vec::new();
                e.slots(&mut slots);
                for s in slots {
                    let nodes = self.graph.nodes.iter().map(|n| (n.id_slot, &n.properties));
                    let rels = self.graph.rels.iter().map(|r| (r.id_slot, &r.properties));
                    let property = nodes
                        .chain(rels)
                        .filter(|(id, _)| key_slots.contains(id))
                        .find_map(|(_, properties)| properties.iter().find(|p| p.1 == s));
                    let keyed = group_keys
                        .iter()
                        .any(|(k, _)| matches!(strip(k).kind, BoundExprKind::Slot(x) if x == s));
                    if let (Some(p), false) = (property, keyed) {
                        let key = BoundExpr::slot(s, p.2.clone(), e.span);
                        group_keys.push((key, self.new_slot()));
                    }
                }
            }
            // Only simple grouping keys (a variable or a property) may be
            // used around an aggregate: `a.x + b.x + count(*)` with the key
            // `a.x + b.x` is ambiguous in openCypher. Other keys get a
            // target that matches nothing.
            let targets: Vec<BoundExpr> = group_keys.iter().map(|(k, _)| strip(k)).collect();
            let simple_targets: Vec<BoundExpr> = group_keys
                .iter()
                .map(|(k, _)| match strip(k) {
                    k @ BoundExpr {
                        kind: BoundExprKind::Slot(_),
                        ..
                    } => k,
                    // A node or rel variable handed out as a value.
                    k if matches!(&k.kind, BoundExprKind::Function(f, _)
                        if f == "_node" || f == "_rel") =>
                    {
                        k
                    }
                    k => BoundExpr::literal(Value::String("\u{1}complex key".into()), k.span),
                })
                .collect();
            let allowed: Vec<SlotId> = group_keys
                .iter()
                .map(|k| k.1)
                .chain(aggregates.iter().map(|a| a.slot))
                .collect();
            // Items that mix aggregates with other expressions may only use
            // grouping keys outside the aggregates.
            for (idx, (_, e)) in outputs.iter_mut().enumerate() {
                if !has_agg[idx] {
                    continue;
                }
                *e = substitute(e, &simple_targets, &|i, orig| {
                    BoundExpr::slot(group_keys[i].1, orig.ty.clone(), orig.span)
                });
                let mut slots = Vec::new();
                e.slots(&mut slots);
                if slots.iter().any(|s| !allowed.contains(s)) {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        e.span,
                        format!(
                            "an expression in {what} mixes an aggregate with values that are not grouping keys"
                        ),
                    ));
                }
            }
            for (key, (aggregating, written)) in order_by.iter_mut().zip(&order_aggregates) {
                // Around an aggregate, a complex grouping key stands for
                // itself only through its alias (`x + count(*)` with `n.id
                // + 1 AS x`); written out again (`n.id + 1 + count(*)`) it is
                // ambiguous (openCypher's AmbiguousAggregationExpression).
                let accept = |i: usize, e: &BoundExpr| {
                    let complex = matches!(simple_targets[i].kind, BoundExprKind::Literal(_));
                    let spelled_out = written.start <= e.span.start && e.span.end <= written.end;
                    !(*aggregating && complex && spelled_out)
                };
                key.expr = substitute_if(&key.expr, &targets, &accept, &|i, orig| {
                    BoundExpr::slot(group_keys[i].1, orig.ty.clone(), orig.span)
                });
                let mut slots = Vec::new();
                key.expr.slots(&mut slots);
                if slots.iter().any(|s| !allowed.contains(s)) {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        key.expr.span,
                        format!(
                            "after aggregation, ORDER BY can only use the grouping keys and aggregates of {what}"
                        ),
                    ));
                }
            }
        } else if proj.distinct {
            let targets: Vec<BoundExpr> = outputs.iter().map(|(_, e)| strip(e)).collect();
            // A node or rel projected as itself fixes its id and properties
            // within a distinct row, so ORDER BY may read them (`RETURN
            // DISTINCT n ORDER BY n.name`).
            let mut dependent: Vec<SlotId> = Vec::new();
            for item in &items {
                let ExprKind::Variable(v) = &item.expr.kind else {
                    continue;
                };
                if self.values.iter().any(|x| &x.0 == v) {
                    continue;
                }
                let entity = self
                    .graph
                    .nodes
                    .iter()
                    .find(|n| &n.name == v)
                    .map(|n| (n.id_slot, &n.properties))
                    .or_else(|| {
                        self.graph
                            .rels
                            .iter()
                            .find(|r| &r.name == v)
                            .map(|r| (r.id_slot, &r.properties))
                    });
                if let Some((id, props)) = entity {
                    dependent.push(id);
                    dependent.extend(props.iter().map(|p| p.1));
                }
            }
            for key in &order_by {
                let covered = substitute(&key.expr, &targets, &|_, orig| {
                    BoundExpr::literal(Value::Null, orig.span)
                });
                let mut slots = Vec::new();
                covered.slots(&mut slots);
                if slots.iter().any(|s| !dependent.contains(s)) {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        key.expr.span,
                        format!("with DISTINCT, ORDER BY can only use the columns of {what}"),
                    ));
                }
            }
        }
        let (skip, skip_expr) = match &proj.skip {
            Some(e) => self.bind_count(e, "SKIP")?,
            None => (None, None),
        };
        let (limit, limit_expr) = match &proj.limit {
            Some(e) => self.bind_count(e, "LIMIT")?,
            None => (None, None),
        };
        let output_slots: Vec<SlotId> = if proj.is_with {
            outputs.iter().map(|_| self.new_slot()).collect()
        } else {
            Vec::new()
        };
        let inputs = std::mem::take(&mut self.part.inputs);
        let unwinds = std::mem::take(&mut self.part.unwinds);
        let next_inputs: Vec<(SlotId, LogicalType)> = output_slots
            .iter()
            .zip(&outputs)
            .map(|(s, (_, e))| (*s, e.ty.clone()))
            .collect();
        let names: Vec<String> = outputs.iter().map(|(n, _)| n.clone()).collect();
        self.parts.push(BoundPart {
            inputs,
            unwinds,
            graph: std::mem::take(&mut self.graph),
            predicates,
            group_keys,
            aggregates,
            outputs,
            order_by,
            distinct: proj.distinct,
            skip,
            limit,
            skip_expr,
            limit_expr,
            output_slots,
            optional: None,
            numbers_rows: false,
            optional_extend: std::mem::take(&mut self.part.optional_extend),
            optional_join: std::mem::take(&mut self.part.optional_join),
            optional_chain: std::mem::take(&mut self.part.optional_chain),
        });
        self.values.clear();
        self.rels_carried.clear();
        self.carried_rel_tables.clear();
        // A carried rel keeps its ends only where both nodes go along (under
        // their new names): a later part may reuse a dropped name for
        // another node.
        let renamed = |n: &str| {
            node_names
                .iter()
                .find(|(before, _)| before == n)
                .map(|(_, after)| after.clone())
        };
        self.carried_rel_ends = rel_ends
            .into_iter()
            .filter_map(|(rel, ends)| {
                let ends = ends?;
                Some((
                    rel,
                    RelEnds {
                        left: renamed(&ends.left)?,
                        right: renamed(&ends.right)?,
                        direction: ends.direction,
                    },
                ))
            })
            .collect();
        self.costs.clear();
        self.fixed_paths.clear();
        if !proj.is_with {
            return Ok(Vec::new());
        }
        // The next part's scope: carried nodes keep their identity.
        for (((name, (slot, ty)), tables), rel_tables) in names
            .into_iter()
            .zip(&next_inputs)
            .zip(carried_nodes)
            .zip(carried_rels)
        {
            match tables {
                Some(tables) => self.graph.nodes.push(QueryNode {
                    name,
                    tables,
                    id_slot: *slot,
                    properties: Vec::new(),
                    imported: true,
                }),
                None => match rel_tables {
                    Some(rel_tables) => {
                        self.carried_rel_tables.push((name.clone(), rel_tables));
                        self.rels_carried.push((name, *slot));
                    }
                    None => self.values.push((name, *slot, ty.clone())),
                },
            }
        }
        for name in carried_costs {
            let hidden = format!("{COST_PREFIX}{name}");
            if let Some(v) = self.values.iter().find(|v| v.0 == hidden) {
                self.costs.push((name, v.1));
            }
        }
        self.part.inputs = next_inputs;
        let mut next = Vec::new();
        if let (false, Some(w)) = (where_done, &proj.where_) {
            let e = self.bind_expr(w)?;
            split_conjuncts(e, &mut next);
        }
        Ok(next)
    }

    /// When `var` names a rel (bound in this part or carried), the
    /// expressions of all its properties, to carry them through a WITH.
    pub(super) fn carried_rel_properties(
        &mut self,
        var: &str,
    ) -> Result<Option<Vec<(String, BoundExpr)>>> {
        if self.values.iter().any(|v| v.0 == var) {
            return Ok(None);
        }
        if self.rels_carried.iter().any(|r| r.0 == var) {
            let prefix = format!("_anon_{var}.");
            let props = self
                .values
                .iter()
                .filter_map(|(n, slot, ty)| {
                    n.strip_prefix(&prefix).map(|p| {
                        (
                            p.to_string(),
                            BoundExpr::slot(*slot, ty.clone(), Span::new(0, 0)),
                        )
                    })
                })
                .collect();
            return Ok(Some(props));
        }
        let Some(rel) = self.graph.rels.iter().find(|r| r.name == var) else {
            return Ok(None);
        };
        // Every property of any of its tables (a table that lacks one reads
        // NULL there, as for a pattern variable).
        let mut names: Vec<String> = Vec::new();
        for e in rel.tables.iter().filter_map(|t| self.catalog.table(*t)) {
            for p in &e.properties {
                if !names.contains(&p.name) {
                    names.push(p.name.clone());
                }
            }
        }
        let props: Vec<(String, ast::Ident)> = names
            .into_iter()
            .map(|name| {
                let ident = ast::Ident {
                    name: name.clone(),
                    span: Span::new(0, 0),
                };
                (name, ident)
            })
            .collect();
        let mut out = Vec::new();
        for (name, ident) in props {
            out.push((name, self.bind_property(var, &ident, Span::new(0, 0))?));
        }
        out.extend(self.rel_endpoints(var));
        Ok(Some(out))
    }

    /// SKIP / LIMIT: a literal or parameter as a count, or another
    /// expression over no variable, evaluated when the part runs.
    pub(super) fn bind_count(
        &mut self,
        e: &ast::Expr,
        what: &str,
    ) -> Result<(Option<u64>, Option<BoundExpr>)> {
        let v = match (&e.kind, self.params) {
            (ExprKind::Parameter(name), Some(params)) => params.get(name).cloned(),
            _ => literal_value(e).ok(),
        };
        let literal = matches!(e.kind, ExprKind::Literal(_) | ExprKind::Parameter(_))
            || matches!(&e.kind, ExprKind::Unary(_, x) if matches!(x.kind, ExprKind::Literal(_)));
        if !literal {
            let saved = self.aggregates.take();
            let bound = self.bind_expr(e);
            self.aggregates = saved;
            let bound = bound?;
            let mut slots = Vec::new();
            bound.slots(&mut slots);
            if !slots.is_empty() {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    e.span,
                    format!("{what} must not depend on variables (NonConstantExpression)"),
                ));
            }
            if !(bound.ty.is_integer() || bound.ty == LogicalType::Any) {
                return Err(Error::at(
                    ErrorKind::Type,
                    e.span,
                    format!("{what} expects an integer, got {}", bound.ty),
                ));
            }
            return Ok((None, Some(bound)));
        }
        match v.as_ref().and_then(|v| v.as_i64()) {
            Some(n) if n >= 0 => Ok((Some(n as u64), None)),
            // A parameter's value is a run-time input: a bad one is a
            // run-time error (openCypher), not a compile-time one.
            _ if matches!(e.kind, ExprKind::Parameter(_)) => Err(Error::at(
                ErrorKind::Runtime,
                e.span,
                format!(
                    "{what} expects a non-negative integer, got {}",
                    v.as_ref().map_or("no value".to_string(), |v| v.to_string())
                ),
            )),
            _ => Err(Error::at(
                ErrorKind::Semantic,
                e.span,
                format!("{what} expects a non-negative integer literal or parameter"),
            )),
        }
    }

    /// Binds `var.key`, registering the property on the variable.
    pub(super) fn bind_property(
        &mut self,
        var: &str,
        key: &ast::Ident,
        span: Span,
    ) -> Result<BoundExpr> {
        let catalog = self.catalog;
        let lookup = |tables: &[TableId]| -> Result<LogicalType> {
            let mut ty = None;
            for t in tables {
                if let Some(entry) = catalog.table(*t) {
                    if let Some(p) = entry.property(&key.name) {
                        match &ty {
                            None => ty = Some(p.ty.clone()),
                            // Different types in different tables: the
                            // variant type, each table's value as it is.
                            Some(existing) if *existing != p.ty => ty = Some(LogicalType::Any),
                            _ => {}
                        }
                    }
                }
            }
            // Schema-less: a property no implicit table has (yet) reads NULL.
            let implicit = tables
                .iter()
                .filter_map(|t| catalog.table(*t))
                .all(|t| t.implicit);
            if ty.is_none() && implicit {
                return Ok(LogicalType::Any);
            }
            ty.ok_or_else(|| {
                let names: Vec<&str> = tables
                    .iter()
                    .filter_map(|t| catalog.table(*t))
                    .map(|t| t.name.as_str())
                    .collect();
                Error::at(
                    ErrorKind::Semantic,
                    key.span,
                    format!(
                        "property '{}' does not exist in table '{}'",
                        key.name,
                        names.join("|")
                    ),
                )
            })
        };
        if let Some(idx) = self.graph.nodes.iter().position(|n| n.name == var) {
            let ty = lookup(&self.graph.nodes[idx].tables)?;
            let slot = property_slot(
                &mut self.graph.nodes[idx].properties,
                &mut self.next_slot,
                &key.name,
                &ty,
            );
            return Ok(BoundExpr::slot(slot, ty, span));
        }
        if let Some(idx) = self.graph.rels.iter().position(|r| r.name == var) {
            let ty = lookup(&self.graph.rels[idx].tables)?;
            let slot = property_slot(
                &mut self.graph.rels[idx].properties,
                &mut self.next_slot,
                &key.name,
                &ty,
            );
            return Ok(BoundExpr::slot(slot, ty, span));
        }
        if self.rels_carried.iter().any(|r| r.0 == var) {
            let hidden = format!("_anon_{var}.{}", key.name);
            let implicit = self
                .carried_rel_tables
                .iter()
                .find(|(n, _)| n == var)
                .is_some_and(|(_, ts)| {
                    ts.iter()
                        .filter_map(|t| self.catalog.table(*t))
                        .all(|t| t.implicit)
                });
            return match self.values.iter().find(|v| v.0 == hidden) {
                Some((_, slot, ty)) => {
                    Ok(self.guard_deleted(var, BoundExpr::slot(*slot, ty.clone(), span)))
                }
                // Schema-less: a property no implicit table has reads NULL.
                None if implicit => Ok(BoundExpr::literal(Value::Null, span)),
                None => Err(Error::at(
                    ErrorKind::Semantic,
                    key.span,
                    format!("property '{}' does not exist on rel '{var}'", key.name),
                )),
            };
        }
        if let Some((_, _, ty)) = self.values.iter().find(|v| v.0 == var) {
            return Err(if *ty == LogicalType::InternalId {
                not_supported(span, "property access on this value")
            } else {
                Error::at(
                    ErrorKind::Type,
                    span,
                    format!("'{var}' is a {ty} value, not a node or rel"),
                )
            });
        }
        Err(Error::at(
            ErrorKind::Semantic,
            span,
            format!("variable '{var}' is not defined"),
        ))
    }
}
