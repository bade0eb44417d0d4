//! Binding of WITH and RETURN projections: aggregation, DISTINCT, ORDER BY,
//! SKIP and LIMIT, and property access on pattern variables.

use super::*;

/// The hidden column that carries a weighted path's cost through a WITH
/// (`_anon_cost_<name>`; hidden from `RETURN *` like every `_anon_` name).
const COST_PREFIX: &str = "_anon_cost_";

/// What the items of a projection bind: its columns (hidden ones
/// included) and, per column, what it carries into the next part.
#[derive(Default)]
struct ProjectedItems {
    outputs: Vec<(String, BoundExpr)>,
    /// Per column: whether it aggregates.
    has_agg: Vec<bool>,
    /// Per column: the tables of a node variable projected as itself (it
    /// keeps its identity).
    carried_nodes: Vec<Option<Vec<TableId>>>,
    /// Per column: the tables of a rel variable projected as itself by a
    /// WITH (its properties follow as hidden columns).
    carried_rels: Vec<Option<Vec<TableId>>>,
    /// The names before and after of the nodes carried, and the end node
    /// variables of the rels carried (see `carried_rel_ends`).
    node_names: Vec<(String, String)>,
    rel_ends: Vec<(String, Option<RelEnds>)>,
    /// Weighted paths carried by a WITH, whose cost follows as a hidden
    /// column so that `cost()` still reads it.
    carried_costs: Vec<String>,
}

impl ProjectedItems {
    /// Adds a hidden column: no aggregate, no node or rel carried.
    fn push_hidden(&mut self, name: String, e: BoundExpr) {
        self.has_agg.push(false);
        self.carried_nodes.push(None);
        self.carried_rels.push(None);
        self.outputs.push((name, e));
    }
}

/// The grouping keys of an aggregating projection, and what the
/// expressions around its aggregates may read.
struct Grouping {
    keys: Vec<(BoundExpr, SlotId)>,
    /// The keys without spans, to find them in other expressions.
    targets: Vec<BoundExpr>,
    /// The keys that may stand around an aggregate (a variable or a
    /// property): `a.x + b.x + count(*)` with the key `a.x + b.x` is
    /// ambiguous in openCypher. Other keys get a target that matches
    /// nothing.
    simple_targets: Vec<BoundExpr>,
    /// The slots of the keys and of the aggregates.
    allowed: Vec<SlotId>,
}

impl Grouping {
    fn new(keys: Vec<(BoundExpr, SlotId)>, aggregates: &[BoundAggregate]) -> Self {
        let targets = keys.iter().map(|(k, _)| strip(k)).collect();
        let simple_targets = keys
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
        let allowed = keys
            .iter()
            .map(|k| k.1)
            .chain(aggregates.iter().map(|a| a.slot))
            .collect();
        Grouping {
            keys,
            targets,
            simple_targets,
            allowed,
        }
    }

    /// The slot of key `i`, replacing `orig`.
    fn key_slot(&self, i: usize, orig: &BoundExpr) -> BoundExpr {
        BoundExpr::slot(self.keys[i].1, orig.ty.clone(), orig.span)
    }

    /// An item that mixes aggregates with other expressions may only use
    /// grouping keys outside the aggregates.
    fn rewrite_item(&self, e: &mut BoundExpr, what: &str) -> Result<()> {
        *e = substitute(e, &self.simple_targets, &|i, orig| self.key_slot(i, orig));
        if !reads_only(e, &self.allowed) {
            return Err(Error::at(
                ErrorKind::Semantic,
                e.span,
                format!(
                    "an expression in {what} mixes an aggregate with values that are not grouping keys"
                ),
            ));
        }
        Ok(())
    }

    /// After aggregation, a sort key reads only the grouping keys and the
    /// aggregates. `written` is where the key is written, `aggregating`
    /// whether it aggregates.
    fn rewrite_sort_key(
        &self,
        key: &mut BoundSortKey,
        aggregating: bool,
        written: Span,
        what: &str,
    ) -> Result<()> {
        // Around an aggregate, a complex grouping key stands for itself
        // only through its alias (`x + count(*)` with `n.id + 1 AS x`);
        // written out again (`n.id + 1 + count(*)`) it is ambiguous
        // (openCypher's AmbiguousAggregationExpression).
        let accept = |i: usize, e: &BoundExpr| {
            let complex = matches!(self.simple_targets[i].kind, BoundExprKind::Literal(_));
            let spelled_out = written.start <= e.span.start && e.span.end <= written.end;
            !(aggregating && complex && spelled_out)
        };
        key.expr = substitute_if(&key.expr, &self.targets, &accept, &|i, orig| {
            self.key_slot(i, orig)
        });
        if !reads_only(&key.expr, &self.allowed) {
            return Err(Error::at(
                ErrorKind::Semantic,
                key.expr.span,
                format!(
                    "after aggregation, ORDER BY can only use the grouping keys and aggregates of {what}"
                ),
            ));
        }
        Ok(())
    }
}

/// Of an ORDER BY key: whether it aggregates, and where it is written.
type SortKeyOrigin = (bool, Span);

/// Whether `e` reads no slot but those in `allowed`.
fn reads_only(e: &BoundExpr, allowed: &[SlotId]) -> bool {
    let mut slots = Vec::new();
    e.slots(&mut slots);
    slots.iter().all(|s| allowed.contains(s))
}

/// A WHERE's predicate must be a BOOL (or ANY: decided per row).
fn check_where(e: &BoundExpr) -> Result<()> {
    if e.ty != LogicalType::Bool && e.ty != LogicalType::Any {
        return Err(Error::at(
            ErrorKind::Type,
            e.span,
            format!("WHERE expects a BOOL expression, got {}", e.ty),
        ));
    }
    Ok(())
}

/// The column name of a projection item: its alias, or the variable or
/// the text of a RETURN's expression.
fn item_name(proj: &ast::Projection, item: &ast::ProjectionItem) -> Result<String> {
    Ok(match (&item.alias, &item.expr.kind) {
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
    })
}

/// ORDER BY may aggregate only when the projection does, and then only
/// repeat an aggregate of the projection, not add one: the rows it sorts
/// are the projection's groups. The first `projected` aggregates are the
/// projection's.
fn check_order_aggregates(
    proj: &ast::Projection,
    what: &str,
    order_by: &[BoundSortKey],
    aggregates: &[BoundAggregate],
    projected: usize,
) -> Result<()> {
    if projected == 0 && !aggregates.is_empty() {
        let span = order_by.first().map_or(proj.span, |k| k.expr.span);
        return Err(Error::at(
            ErrorKind::Semantic,
            span,
            format!("ORDER BY cannot aggregate when {what} does not (invalid aggregation)"),
        ));
    }
    let (projected, added) = aggregates.split_at(projected.min(aggregates.len()));
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
    Ok(())
}

/// The ends of the rels a WITH carries, kept only where both nodes go
/// along (under their new names, `node_names` maps them): a later part
/// may reuse a dropped name for another node.
fn carried_rel_ends(
    rel_ends: Vec<(String, Option<RelEnds>)>,
    node_names: &[(String, String)],
) -> Vec<(String, RelEnds)> {
    let renamed = |n: &str| {
        node_names
            .iter()
            .find(|(before, _)| before == n)
            .map(|(_, after)| after.clone())
    };
    rel_ends
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
        .collect()
}

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
        predicates.iter().try_for_each(check_where)?;
        let items = self.projection_items(proj)?;
        self.aggregates = Some(Vec::new());
        let mut projected = ProjectedItems::default();
        for item in &items {
            self.bind_projection_item(proj, item, what, &mut projected)?;
        }
        let projected_aggregates = self.aggregate_count();
        let (mut order_by, order_aggregates) = self.bind_order_by(proj, &projected.outputs)?;
        let aggregates = self.aggregates.take().unwrap_or_default();
        let where_done =
            self.bind_early_where(proj, &aggregates, &projected.outputs, &mut predicates)?;
        check_order_aggregates(proj, what, &order_by, &aggregates, projected_aggregates)?;
        let mut group_keys = Vec::new();
        if !aggregates.is_empty() {
            group_keys = self.bind_grouping(
                &mut projected,
                &mut order_by,
                &order_aggregates,
                &aggregates,
                what,
            )?;
        } else if proj.distinct {
            self.check_distinct_order(&items, &projected.outputs, &order_by, what)?;
        }
        let names: Vec<String> = projected.outputs.iter().map(|(n, _)| n.clone()).collect();
        let part = BoundPart {
            predicates,
            group_keys,
            aggregates,
            outputs: std::mem::take(&mut projected.outputs),
            order_by,
            distinct: proj.distinct,
            ..BoundPart::default()
        };
        let next_inputs = self.finish_part(proj, part)?;
        self.values.clear();
        self.rels_carried.clear();
        self.carried_rel_tables.clear();
        self.carried_rel_ends = carried_rel_ends(
            std::mem::take(&mut projected.rel_ends),
            &projected.node_names,
        );
        self.costs.clear();
        self.fixed_paths.clear();
        if !proj.is_with {
            return Ok(Vec::new());
        }
        self.open_next_part(names, next_inputs, projected);
        let mut next = Vec::new();
        if let (false, Some(w)) = (where_done, &proj.where_) {
            let e = self.bind_expr(w)?;
            split_conjuncts(e, &mut next);
        }
        Ok(next)
    }

    /// How many aggregates the expressions bound so far hold.
    fn aggregate_count(&self) -> usize {
        self.aggregates.as_ref().map_or(0, |a| a.len())
    }

    /// The items of a projection, with `*` expanded to every named
    /// variable in scope, in name order.
    fn projection_items(&self, proj: &ast::Projection) -> Result<Vec<ast::ProjectionItem>> {
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
        Ok(items)
    }

    /// Binds one item of a projection into `out`: its column, then the
    /// hidden columns that carry a rel's properties, a deleted node's flag
    /// or a weighted path's cost through a WITH.
    fn bind_projection_item(
        &mut self,
        proj: &ast::Projection,
        item: &ast::ProjectionItem,
        what: &str,
        out: &mut ProjectedItems,
    ) -> Result<()> {
        let (e, aggregating) = self.bind_item_expr(proj, item)?;
        out.has_agg.push(aggregating);
        let name = item_name(proj, item)?;
        if out.outputs.iter().any(|(n, _)| *n == name) {
            return Err(Error::at(
                ErrorKind::Semantic,
                item.expr.span,
                format!("column '{name}' is projected twice in {what}"),
            ));
        }
        let var = match &item.expr.kind {
            ExprKind::Variable(v) => Some(v),
            _ => None,
        };
        let carried_node = var.and_then(|v| {
            self.graph
                .nodes
                .iter()
                .find(|n| &n.name == v && !self.values.iter().any(|x| &x.0 == v))
                .map(|n| n.tables.clone())
        });
        let rel_props = match var {
            Some(v) if proj.is_with => self.carried_rel_properties(v)?,
            _ => None,
        };
        let carried_rel = match (&rel_props, var) {
            (Some(_), Some(v)) => Some(self.rel_tables_of(v)),
            _ => None,
        };
        // A node a write statement deleted stays flagged through WITH (a
        // rel's flag travels with its properties).
        let node_flag = match (var, &carried_node) {
            (Some(v), Some(_)) if proj.is_with => self
                .deleted_flag(v)
                .map(|f| (entity::CARRIED_DELETED.to_string(), f)),
            _ => None,
        };
        if let (Some(v), Some(_)) = (var, &carried_node) {
            out.node_names.push((v.clone(), name.clone()));
        }
        if let (Some(v), Some(_)) = (var, &carried_rel) {
            out.rel_ends.push((name.clone(), self.rel_ends(v)));
        }
        let cost = match var {
            Some(v) if proj.is_with => self.costs.iter().find(|c| &c.0 == v).map(|c| c.1),
            _ => None,
        };
        out.carried_nodes.push(carried_node);
        out.carried_rels.push(carried_rel);
        out.outputs.push((name.clone(), e));
        if let Some(slot) = cost {
            let e = BoundExpr::slot(slot, LogicalType::Double, item.expr.span);
            out.push_hidden(format!("{COST_PREFIX}{name}"), e);
            out.carried_costs.push(name.clone());
        }
        for (prop, e) in rel_props.unwrap_or_default().into_iter().chain(node_flag) {
            out.push_hidden(format!("_anon_{name}.{prop}"), e);
        }
        Ok(())
    }

    /// Binds a projection item's expression, handing out nodes and rels as
    /// values (`RETURN n`, `[a, b]`, `collect(r)`; a WITH of the bare
    /// variable keeps its identity), and says whether it aggregates.
    fn bind_item_expr(
        &mut self,
        proj: &ast::Projection,
        item: &ast::ProjectionItem,
    ) -> Result<(BoundExpr, bool)> {
        let before = self.aggregate_count();
        self.in_projection = true;
        let e = self.bind_expr(&item.expr);
        self.in_projection = false;
        let e = e?;
        let bare = matches!(item.expr.kind, ExprKind::Variable(_));
        let e = if self.ids_projection {
            e
        } else {
            self.materialize_collected(before)?;
            self.materialize_entities(e, !(proj.is_with && bare))?
        };
        Ok((e, self.aggregate_count() > before))
    }

    /// Binds ORDER BY, which sees the projected aliases and (without
    /// aggregation or DISTINCT) the variables before the projection. Per
    /// key also: whether it aggregates, and where it is written (an alias
    /// binds to its item's expression, whose span lies outside this one).
    fn bind_order_by(
        &mut self,
        proj: &ast::Projection,
        outputs: &[(String, BoundExpr)],
    ) -> Result<(Vec<BoundSortKey>, Vec<SortKeyOrigin>)> {
        self.aliases = outputs.to_vec();
        let mut order_aggregates: Vec<SortKeyOrigin> = Vec::new();
        let order: Result<Vec<BoundSortKey>> = proj
            .order_by
            .iter()
            .map(|o| {
                let before = self.aggregate_count();
                let expr = self.bind_expr(&o.expr)?;
                order_aggregates.push((self.aggregate_count() > before, o.expr.span));
                Ok(BoundSortKey {
                    expr,
                    descending: o.descending,
                })
            })
            .collect();
        self.aliases.clear();
        Ok((order?, order_aggregates))
    }

    /// The WHERE of a plain WITH (no aggregate, DISTINCT, ORDER BY, SKIP or
    /// LIMIT) may also use variables the WITH does not project (`WITH c
    /// WHERE r IS NULL`): it filters the rows before the projection, with
    /// the aliases standing for their expressions, its conjuncts added to
    /// `predicates`. Returns whether it was bound so; when it does not
    /// bind (an alias used as a node, say), it is bound after the
    /// projection.
    fn bind_early_where(
        &mut self,
        proj: &ast::Projection,
        aggregates: &[BoundAggregate],
        outputs: &[(String, BoundExpr)],
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<bool> {
        let (true, Some(w)) = (proj.is_with, &proj.where_) else {
            return Ok(false);
        };
        let plain = aggregates.is_empty()
            && !proj.distinct
            && proj.order_by.is_empty()
            && proj.skip.is_none()
            && proj.limit.is_none();
        if !plain {
            return Ok(false);
        }
        self.aliases = outputs.to_vec();
        let early = self.bind_expr(w);
        self.aliases.clear();
        let Ok(e) = early else {
            return Ok(false);
        };
        check_where(&e)?;
        split_conjuncts(e, predicates);
        Ok(true)
    }

    /// With aggregates: the items without one become grouping keys, and
    /// the expressions around the aggregates (in the items and in ORDER BY)
    /// read the keys' slots. Returns the keys.
    fn bind_grouping(
        &mut self,
        projected: &mut ProjectedItems,
        order_by: &mut [BoundSortKey],
        order_aggregates: &[SortKeyOrigin],
        aggregates: &[BoundAggregate],
        what: &str,
    ) -> Result<Vec<(BoundExpr, SlotId)>> {
        // Non-aggregate items become grouping keys computed into slots.
        let mut keys: Vec<(BoundExpr, SlotId)> = Vec::new();
        for (e, aggregating) in projected.outputs.iter_mut().zip(&projected.has_agg) {
            if !aggregating {
                let slot = self.new_slot();
                let (ty, span) = (e.1.ty.clone(), e.1.span);
                let key = std::mem::replace(&mut e.1, BoundExpr::slot(slot, ty, span));
                keys.push((key, slot));
            }
        }
        let readers = projected
            .outputs
            .iter()
            .zip(&projected.has_agg)
            .filter(|(_, aggregating)| **aggregating)
            .map(|((_, e), _)| e)
            .chain(order_by.iter().map(|k| &k.expr));
        self.add_property_keys(&mut keys, readers);
        let grouping = Grouping::new(keys, aggregates);
        for (e, aggregating) in projected.outputs.iter_mut().zip(&projected.has_agg) {
            if *aggregating {
                grouping.rewrite_item(&mut e.1, what)?;
            }
        }
        for (key, &(aggregating, written)) in order_by.iter_mut().zip(order_aggregates) {
            grouping.rewrite_sort_key(key, aggregating, written, what)?;
        }
        Ok(grouping.keys)
    }

    /// The properties of a node or rel grouped on that `readers` read (an
    /// aggregating item, `WITH a, [a] + collect(n)`, where the node is
    /// handed out as a value, or ORDER BY, `RETURN a, count(*) ORDER BY
    /// a.name`) become hidden keys: they depend on the entity's id (read
    /// once per group, not grouped on).
    fn add_property_keys<'e>(
        &mut self,
        keys: &mut Vec<(BoundExpr, SlotId)>,
        readers: impl Iterator<Item = &'e BoundExpr>,
    ) {
        let key_slots: Vec<SlotId> = keys.iter().filter_map(|(k, _)| entity_slot(k)).collect();
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
                let keyed = keys
                    .iter()
                    .any(|(k, _)| matches!(strip(k).kind, BoundExprKind::Slot(x) if x == s));
                if let (Some(p), false) = (property, keyed) {
                    let key = BoundExpr::slot(s, p.2.clone(), e.span);
                    keys.push((key, self.new_slot()));
                }
            }
        }
    }

    /// With DISTINCT, ORDER BY may read only the projected columns, and the
    /// id and properties of a node or rel projected as itself, which a
    /// distinct row fixes (`RETURN DISTINCT n ORDER BY n.name`).
    fn check_distinct_order(
        &self,
        items: &[ast::ProjectionItem],
        outputs: &[(String, BoundExpr)],
        order_by: &[BoundSortKey],
        what: &str,
    ) -> Result<()> {
        let targets: Vec<BoundExpr> = outputs.iter().map(|(_, e)| strip(e)).collect();
        let dependent = self.projected_entity_slots(items);
        for key in order_by {
            let covered = substitute(&key.expr, &targets, &|_, orig| {
                BoundExpr::literal(Value::Null, orig.span)
            });
            if !reads_only(&covered, &dependent) {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    key.expr.span,
                    format!("with DISTINCT, ORDER BY can only use the columns of {what}"),
                ));
            }
        }
        Ok(())
    }

    /// The ids and properties of the node and rel variables `items`
    /// project as themselves.
    fn projected_entity_slots(&self, items: &[ast::ProjectionItem]) -> Vec<SlotId> {
        let mut slots: Vec<SlotId> = Vec::new();
        for item in items {
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
                slots.push(id);
                slots.extend(props.iter().map(|p| p.1));
            }
        }
        slots
    }

    /// Completes the current part with `part` (its predicates, grouping,
    /// columns and order) and the projection's SKIP, LIMIT and, for a
    /// WITH, output slots, and pushes it. Returns the next part's inputs
    /// (a WITH's columns).
    fn finish_part(
        &mut self,
        proj: &ast::Projection,
        part: BoundPart,
    ) -> Result<Vec<(SlotId, LogicalType)>> {
        let (skip, skip_expr) = match &proj.skip {
            Some(e) => self.bind_count(e, "SKIP")?,
            None => (None, None),
        };
        let (limit, limit_expr) = match &proj.limit {
            Some(e) => self.bind_count(e, "LIMIT")?,
            None => (None, None),
        };
        let output_slots: Vec<SlotId> = if proj.is_with {
            part.outputs.iter().map(|_| self.new_slot()).collect()
        } else {
            Vec::new()
        };
        let next_inputs = output_slots
            .iter()
            .zip(&part.outputs)
            .map(|(s, (_, e))| (*s, e.ty.clone()))
            .collect();
        self.parts.push(BoundPart {
            inputs: std::mem::take(&mut self.part.inputs),
            unwinds: std::mem::take(&mut self.part.unwinds),
            graph: std::mem::take(&mut self.graph),
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
            ..part
        });
        Ok(next_inputs)
    }

    /// Opens the part after a WITH: its scope holds the columns `names`
    /// (read from `inputs`); carried nodes keep their identity, carried
    /// rels their tables, weighted paths their cost.
    fn open_next_part(
        &mut self,
        names: Vec<String>,
        inputs: Vec<(SlotId, LogicalType)>,
        projected: ProjectedItems,
    ) {
        for (((name, (slot, ty)), tables), rel_tables) in names
            .into_iter()
            .zip(&inputs)
            .zip(projected.carried_nodes)
            .zip(projected.carried_rels)
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
        for name in projected.carried_costs {
            let hidden = format!("{COST_PREFIX}{name}");
            if let Some(v) = self.values.iter().find(|v| v.0 == hidden) {
                self.costs.push((name, v.1));
            }
        }
        self.part.inputs = inputs;
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
