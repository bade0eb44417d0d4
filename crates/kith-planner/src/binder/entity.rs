//! Nodes and rels as values: `RETURN n`, `collect(r)`, `[a, b]`, and the
//! functions that look at a whole node or rel (`id`, `label`/`labels`,
//! `type`, `properties`).
//!
//! Inside a query a node or rel variable is its internal id (joins, filters
//! and WITH carry ids only). Where a projection hands the entity to the user,
//! the binder rewrites the id into a constructor call (`_node`, `_rel`) whose
//! arguments are the id and every property of the table, so the planner
//! reads those properties like any other and the executor only assembles
//! the value.

use kith_common::{Error, LogicalType, Result, Span, TableId, Value};
use kith_parser::ast;

use super::{not_supported, Binder};
use crate::expr::{BoundExpr, BoundExprKind, SlotId};

/// Hidden values carried with a rel through WITH: its endpoint ids. The
/// names cannot be written as Cypher identifiers (they start with a control
/// character), so they never clash with a property.
pub(crate) const CARRIED_SRC: &str = "\u{1}src";
pub(crate) const CARRIED_DST: &str = "\u{1}dst";
/// Hidden value of a node or rel a write statement hands to the clauses
/// after it: whether its writes deleted it (reading its properties or labels
/// is then openCypher's EntityNotFound).
pub(crate) const CARRIED_DELETED: &str = "\u{1}deleted";

/// What a variable that holds an id stands for.
enum Entity {
    Node {
        name: String,
        tables: Vec<TableId>,
    },
    Rel {
        name: String,
        tables: Vec<TableId>,
        src: SlotId,
        dst: SlotId,
    },
}

impl Binder<'_> {
    /// The slot of the stored source of the rel whose id lives in `slot`
    /// (see [`QueryRel::ends`]); None when `slot` holds no rel.
    pub(super) fn rel_source_slot(&self, slot: SlotId, span: Span) -> Result<Option<SlotId>> {
        Ok(match self.entity_of_slot(slot, span)? {
            Some(Entity::Rel { src, .. }) => Some(src),
            _ => None,
        })
    }

    /// The node or rel whose id lives in `slot`, if any.
    fn entity_of_slot(&self, slot: SlotId, span: Span) -> Result<Option<Entity>> {
        if let Some(n) = self.graph.nodes.iter().find(|n| n.id_slot == slot) {
            return Ok(Some(Entity::Node {
                name: n.name.clone(),
                tables: n.tables.clone(),
            }));
        }
        if let Some(r) = self.graph.rels.iter().find(|r| r.id_slot == slot) {
            if r.recursive.is_some() {
                return Err(not_supported(
                    span,
                    "using the rel variable of a variable-length pattern as a value",
                ));
            }
            let (src, dst) = match (r.direction, r.ends) {
                (_, Some(ends)) => ends,
                (ast::Direction::Left, None) => (
                    self.graph.nodes[r.right].id_slot,
                    self.graph.nodes[r.left].id_slot,
                ),
                _ => (
                    self.graph.nodes[r.left].id_slot,
                    self.graph.nodes[r.right].id_slot,
                ),
            };
            return Ok(Some(Entity::Rel {
                name: r.name.clone(),
                tables: r.tables.clone(),
                src,
                dst,
            }));
        }
        if let Some((name, _)) = self.rels_carried.iter().find(|r| r.1 == slot) {
            let hidden = |which: &str| {
                let key = format!("_anon_{name}.{which}");
                self.values.iter().find(|v| v.0 == key).map(|v| v.1)
            };
            let (Some(src), Some(dst)) = (hidden(CARRIED_SRC), hidden(CARRIED_DST)) else {
                return Err(Error::internal(format!(
                    "rel '{name}' was carried without its endpoints"
                )));
            };
            // The table is known from the hidden property values only; a
            // carried rel keeps the tables of the pattern that bound it.
            let tables = self
                .carried_rel_tables
                .iter()
                .find(|t| &t.0 == name)
                .map(|t| t.1.clone())
                .unwrap_or_default();
            return Ok(Some(Entity::Rel {
                name: name.clone(),
                tables,
                src,
                dst,
            }));
        }
        Ok(None)
    }

    /// The candidate tables of rel variable `var` (bound here or carried).
    pub(crate) fn rel_tables_of(&self, var: &str) -> Vec<TableId> {
        if let Some(r) = self.graph.rels.iter().find(|r| r.name == var) {
            return r.tables.clone();
        }
        self.carried_rel_tables
            .iter()
            .find(|t| t.0 == var)
            .map(|t| t.1.clone())
            .unwrap_or_default()
    }

    /// The endpoint ids of rel `var` of this part's graph, as the hidden
    /// values a WITH carries along with it.
    pub(crate) fn rel_endpoints(&self, var: &str) -> Vec<(String, BoundExpr)> {
        let Some(r) = self.graph.rels.iter().find(|r| r.name == var) else {
            return Vec::new();
        };
        // An undirected rel's ends are the ones its pipeline names
        // (`QueryRel::ends`), not the ones written.
        let node = |n: usize| self.graph.nodes[n].id_slot;
        let (src, dst) = match (r.direction, r.ends) {
            (_, Some(ends)) => ends,
            (ast::Direction::Left, None) => (node(r.right), node(r.left)),
            _ => (node(r.left), node(r.right)),
        };
        let span = Span::new(0, 0);
        [(CARRIED_SRC, src), (CARRIED_DST, dst)]
            .into_iter()
            .map(|(name, slot)| {
                (
                    name.to_string(),
                    BoundExpr::slot(slot, LogicalType::InternalId, span),
                )
            })
            .collect()
    }

    /// The hidden deleted flag of node or rel `var`, if it has one.
    pub(crate) fn deleted_flag(&self, var: &str) -> Option<BoundExpr> {
        let key = format!("_anon_{var}.{CARRIED_DELETED}");
        let (_, slot, _) = self.values.iter().find(|v| v.0 == key)?;
        Some(BoundExpr::slot(*slot, LogicalType::Bool, Span::new(0, 0)))
    }

    /// `value`, read from node or rel `var`, guarded by the hidden deleted
    /// flag a write statement's continuation seeds it with (unchanged for a
    /// variable without one).
    pub(crate) fn guard_deleted(&self, var: &str, value: BoundExpr) -> BoundExpr {
        let Some(flag) = self.deleted_flag(var) else {
            return value;
        };
        BoundExpr {
            span: value.span,
            ty: value.ty.clone(),
            kind: BoundExprKind::Function("_live".to_string(), vec![flag, value]),
        }
    }

    /// A list literal of the names of `tables`, indexed by table id (the
    /// executor picks the name from an id's table).
    fn table_names(&self, tables: &[TableId], span: Span) -> Result<BoundExpr> {
        let mut names = Vec::new();
        for t in tables {
            let idx = t.0 as usize;
            if names.len() <= idx {
                names.resize(idx + 1, Value::Null);
            }
            names[idx] = Value::String(self.table_name(*t)?);
        }
        Ok(BoundExpr::literal(Value::list(names), span))
    }

    /// (name, value expression) of every property of `tables` (in table
    /// order, each name once), read through variable `var`; a row from a
    /// table without the property reads NULL.
    fn entity_properties(
        &mut self,
        var: &str,
        tables: &[TableId],
        span: Span,
    ) -> Result<Vec<(String, BoundExpr)>> {
        let names = self.property_names(tables)?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let key = ast::Ident {
                name: name.clone(),
                span,
            };
            out.push((name, self.bind_property(var, &key, span)?));
        }
        Ok(out)
    }

    /// Map projection `base {items}` as the expression it stands for:
    /// `CASE WHEN base IS NULL THEN NULL ELSE {key: value, ...} END`, with
    /// `.key` read as `base.key`, `.*` as every property of the node or
    /// rel `base` (or every field of a map whose fields are known), and a
    /// later item overriding an earlier one of the same key.
    pub(crate) fn map_projection(
        &mut self,
        base: &ast::Expr,
        items: &[ast::MapProjectionItem],
        span: Span,
    ) -> Result<ast::Expr> {
        use ast::{Expr, ExprKind, MapProjectionItem as Item};
        let ExprKind::Variable(var) = &base.kind else {
            return Err(Error::internal("map projection of a non-variable"));
        };
        let at = |kind: ExprKind| Expr { kind, span };
        let property =
            |key: &ast::Ident| at(ExprKind::Property(Box::new(base.clone()), key.clone()));
        let mut entries: Vec<(ast::Ident, Expr)> = Vec::new();
        for item in items {
            let mut add = |key: ast::Ident, value: Expr| {
                entries.retain(|(k, _)| k.name != key.name);
                entries.push((key, value));
            };
            match item {
                Item::Property(key) => add(key.clone(), property(key)),
                Item::Literal(key, value) => add(key.clone(), value.clone()),
                Item::Variable(v) => add(v.clone(), at(ExprKind::Variable(v.name.clone()))),
                Item::AllProperties(star) => {
                    for name in self.projected_keys(var, *star)? {
                        let key = ast::Ident { name, span: *star };
                        add(key.clone(), property(&key));
                    }
                }
            }
        }
        let is_null = at(ExprKind::Unary(
            ast::UnaryOp::IsNull,
            Box::new(base.clone()),
        ));
        Ok(at(ExprKind::Case {
            operand: None,
            whens: vec![(is_null, at(ExprKind::Literal(ast::Literal::Null)))],
            else_: Some(Box::new(at(ExprKind::Map(entries)))),
        }))
    }

    /// The keys `.*` projects from `var`: the properties of its tables for
    /// a node or rel (bound here or carried), the fields of a map value
    /// whose type names them.
    fn projected_keys(&mut self, var: &str, span: Span) -> Result<Vec<String>> {
        let value = self.bind_expr(&ast::Expr {
            kind: ast::ExprKind::Variable(var.to_string()),
            span,
        })?;
        if let BoundExprKind::Slot(slot) = value.kind {
            if let Some(Entity::Node { tables, .. } | Entity::Rel { tables, .. }) =
                self.entity_of_slot(slot, span)?
            {
                return self.property_names(&tables);
            }
        }
        match value.ty {
            LogicalType::Struct(fields) => Ok(fields.into_iter().map(|f| f.0).collect()),
            _ => Err(not_supported(
                span,
                "'.*' in a map projection of a value whose keys are not known before the query runs",
            )),
        }
    }

    /// The visible property names of `tables`, in table order, each once.
    fn property_names(&self, tables: &[TableId]) -> Result<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        for t in tables {
            let entry = self
                .catalog
                .table(*t)
                .ok_or_else(|| Error::internal("table vanished from the catalog"))?;
            for p in &entry.properties {
                if !names.contains(&p.name) && !kith_catalog::is_hidden(&p.name) {
                    names.push(p.name.clone());
                }
            }
        }
        Ok(names)
    }

    /// Whether some of `tables` keeps per-node label lists.
    fn any_label_column(&self, tables: &[TableId]) -> bool {
        tables
            .iter()
            .filter_map(|t| self.catalog.table(*t))
            .any(|t| t.has_label_column())
    }

    /// The hidden label list of node `var` (NULL where its tables keep
    /// none, and for nodes whose labels are their table's).
    fn hidden_labels(&mut self, var: &str, tables: &[TableId], span: Span) -> Result<BoundExpr> {
        if !self.any_label_column(tables) {
            return Ok(BoundExpr::literal(Value::Null, span));
        }
        let key = ast::Ident {
            name: kith_catalog::LABELS_KEY.to_string(),
            span,
        };
        self.bind_property(var, &key, span)
    }

    /// `var:L1:L2...`: whether node `var` carries every label (a rel: has
    /// the type); NULL when `var` is NULL.
    pub(crate) fn has_labels(
        &mut self,
        var: &str,
        labels: &[String],
        span: Span,
    ) -> Result<BoundExpr> {
        let (slot, tables, is_node) =
            if let Some(n) = self.graph.nodes.iter().find(|n| n.name == var) {
                (n.id_slot, n.tables.clone(), true)
            } else if let Some(r) = self.graph.rels.iter().find(|r| r.name == var) {
                (r.id_slot, r.tables.clone(), false)
            } else {
                return Err(not_supported(span, "a label test on this expression"));
            };
        let id = BoundExpr::slot(slot, LogicalType::InternalId, span);
        let names = self.table_names(&tables, span)?;
        let hidden = if is_node {
            self.hidden_labels(var, &tables, span)?
        } else {
            BoundExpr::literal(Value::Null, span)
        };
        let mut args = vec![id, names, hidden];
        args.extend(
            labels
                .iter()
                .map(|l| BoundExpr::literal(Value::String(l.clone()), span)),
        );
        Ok(BoundExpr {
            kind: BoundExprKind::Function("_has_labels".to_string(), args),
            ty: LogicalType::Bool,
            span,
        })
    }

    fn table_name(&self, table: TableId) -> Result<String> {
        self.catalog
            .table(table)
            .map(|t| t.label.clone())
            .ok_or_else(|| Error::internal("table vanished from the catalog"))
    }

    /// The constructor call that turns the id in `slot` into a node or rel
    /// value; `None` when the slot holds no entity.
    pub(super) fn entity_value(&mut self, slot: SlotId, span: Span) -> Result<Option<BoundExpr>> {
        let Some(entity) = self.entity_of_slot(slot, span)? else {
            return Ok(None);
        };
        let id = BoundExpr::slot(slot, LogicalType::InternalId, span);
        let text = |s: &str| BoundExpr::literal(Value::String(s.to_string()), span);
        let (function, ty, mut args, name, tables) = match entity {
            Entity::Node { name, tables } => ("_node", LogicalType::Node, vec![id], name, tables),
            Entity::Rel {
                name,
                tables,
                src,
                dst,
            } => {
                let ends = [src, dst].map(|s| BoundExpr::slot(s, LogicalType::InternalId, span));
                let mut args = vec![id];
                args.extend(ends);
                ("_rel", LogicalType::Rel, args, name, tables)
            }
        };
        if tables.is_empty() {
            // Matches nothing; any value it has is NULL.
            return Ok(None);
        }
        let labelled = function == "_node" && self.any_label_column(&tables);
        args.push(match tables.as_slice() {
            _ if labelled => {
                let names = self.table_names(&tables, span)?;
                let hidden = self.hidden_labels(&name, &tables, span)?;
                BoundExpr {
                    kind: BoundExprKind::Function(
                        "_label_text".to_string(),
                        vec![args[0].clone(), names, hidden],
                    ),
                    ty: LogicalType::String,
                    span,
                }
            }
            [t] => text(&self.table_name(*t)?),
            _ => self.table_names(&tables, span)?,
        });
        for (prop, e) in self.entity_properties(&name, &tables, span)? {
            args.push(text(&prop));
            args.push(e);
        }
        Ok(Some(BoundExpr {
            kind: BoundExprKind::Function(function.to_string(), args),
            ty,
            span,
        }))
    }

    /// Rewrites the entity ids an expression hands out as values (the
    /// expression itself when `top`, list elements, CASE results) into node
    /// and rel values. Ids consumed by operators (`n = m`, `id(n)`) stay ids.
    pub(crate) fn materialize_entities(&mut self, e: BoundExpr, top: bool) -> Result<BoundExpr> {
        let span = e.span;
        match e.kind {
            BoundExprKind::Slot(s) if top && e.ty == LogicalType::InternalId => {
                Ok(self.entity_value(s, span)?.unwrap_or(e))
            }
            // `collect(n)`: the aggregate now collects node values
            // (`materialize_collected`), so its slot has their list type.
            BoundExprKind::Slot(s)
                if e.ty == LogicalType::List(Box::new(LogicalType::InternalId)) =>
            {
                let ty = self
                    .aggregates
                    .as_ref()
                    .and_then(|aggs| aggs.iter().find(|a| a.slot == s))
                    .map_or(e.ty, |a| a.ty.clone());
                Ok(BoundExpr {
                    kind: e.kind,
                    ty,
                    span,
                })
            }
            // `{a: n, r: r}`: entity fields become node/rel values.
            BoundExprKind::Map(fields) => {
                let fields = fields
                    .into_iter()
                    .map(|(k, v)| Ok((k, self.materialize_entities(v, true)?)))
                    .collect::<Result<Vec<_>>>()?;
                let ty = LogicalType::Struct(
                    fields
                        .iter()
                        .map(|(k, v)| (k.clone(), v.ty.clone()))
                        .collect(),
                );
                Ok(BoundExpr {
                    kind: BoundExprKind::Map(fields),
                    ty,
                    span,
                })
            }
            BoundExprKind::List(items) => {
                let items = items
                    .into_iter()
                    .map(|i| self.materialize_entities(i, true))
                    .collect::<Result<Vec<_>>>()?;
                let elem = items
                    .iter()
                    .map(|i| i.ty.clone())
                    .find(|t| *t != LogicalType::Any);
                let ty = match (&e.ty, elem) {
                    (LogicalType::List(old), Some(t)) if **old == LogicalType::InternalId => {
                        LogicalType::List(Box::new(t))
                    }
                    _ => e.ty,
                };
                Ok(BoundExpr {
                    kind: BoundExprKind::List(items),
                    ty,
                    span,
                })
            }
            // `[a] + collect(n) + b`: the operands of a list concatenation
            // or append are list items, so their entities become values too.
            BoundExprKind::Binary(crate::expr::BinaryOp::Add, l, r)
                if matches!(e.ty, LogicalType::List(_)) =>
            {
                let l = self.materialize_entities(*l, true)?;
                let r = self.materialize_entities(*r, true)?;
                let item = |t: &LogicalType| match t {
                    LogicalType::List(x) => (**x).clone(),
                    other => other.clone(),
                };
                let elem = super::expression::list_item_type(&item(&l.ty), &item(&r.ty));
                Ok(BoundExpr {
                    kind: BoundExprKind::Binary(
                        crate::expr::BinaryOp::Add,
                        Box::new(l),
                        Box::new(r),
                    ),
                    ty: LogicalType::List(Box::new(elem.unwrap_or(LogicalType::Any))),
                    span,
                })
            }
            // A CASE whose results are entities, or maps or lists that may
            // hold them (a map projection is a CASE over its map).
            BoundExprKind::Case {
                operand,
                whens,
                else_,
            } if (top && e.ty == LogicalType::InternalId)
                || matches!(e.ty, LogicalType::Struct(_) | LogicalType::List(_)) =>
            {
                let whens = whens
                    .into_iter()
                    .map(|(w, t)| Ok((w, self.materialize_entities(t, true)?)))
                    .collect::<Result<Vec<_>>>()?;
                let else_ = else_
                    .map(|x| self.materialize_entities(*x, true).map(Box::new))
                    .transpose()?;
                let ty = whens
                    .iter()
                    .map(|(_, t)| &t.ty)
                    .chain(else_.as_deref().map(|x| &x.ty))
                    .find(|t| **t != LogicalType::Any)
                    .cloned()
                    .unwrap_or(e.ty);
                Ok(BoundExpr {
                    kind: BoundExprKind::Case {
                        operand,
                        whens,
                        else_,
                    },
                    ty,
                    span,
                })
            }
            kind => Ok(BoundExpr { kind, ..e }),
        }
    }

    /// Materializes the argument of `collect` aggregates registered at index
    /// `from` or later (collecting nodes or rels gives a list of values).
    pub(crate) fn materialize_collected(&mut self, from: usize) -> Result<()> {
        let Some(aggs) = self.aggregates.take() else {
            return Ok(());
        };
        let mut aggs = aggs;
        let mut result = Ok(());
        for a in aggs.iter_mut().skip(from) {
            if a.function != "collect" {
                continue;
            }
            let Some(arg) = a.arg.take() else { continue };
            match self.materialize_entities(arg, true) {
                Ok(arg) => {
                    if matches!(arg.ty, LogicalType::Node | LogicalType::Rel) {
                        a.ty = LogicalType::List(Box::new(arg.ty.clone()));
                    }
                    a.arg = Some(arg);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.aggregates = Some(aggs);
        result
    }

    /// `id(x)`, `label(x)`, `labels(x)`, `type(x)` and `properties(x)` of a
    /// node or rel variable; `None` when `function` is none of them or the
    /// argument is not an entity variable.
    pub(crate) fn bind_entity_function(
        &mut self,
        function: &str,
        arg: &ast::Expr,
        span: Span,
    ) -> Result<Option<BoundExpr>> {
        if !is_entity_function(function) {
            return Ok(None);
        }
        let ast::ExprKind::Variable(var) = &arg.kind else {
            return Ok(None);
        };
        if self.values.iter().any(|v| &v.0 == var) {
            return Ok(None);
        }
        let bound = self.bind_expr(arg)?;
        let BoundExprKind::Slot(slot) = bound.kind else {
            return Ok(None);
        };
        self.entity_function_of_slot(function, slot, span)
    }

    /// [`Self::bind_entity_function`] for the entity whose id is in `slot`
    /// (`None` when the slot holds no entity).
    pub(crate) fn entity_function_of_slot(
        &mut self,
        function: &str,
        slot: SlotId,
        span: Span,
    ) -> Result<Option<BoundExpr>> {
        if !is_entity_function(function) {
            return Ok(None);
        }
        let Some(entity) = self.entity_of_slot(slot, span)? else {
            return Ok(None);
        };
        let is_rel = matches!(entity, Entity::Rel { .. });
        let (name, tables) = match entity {
            Entity::Node { name, tables } | Entity::Rel { name, tables, .. } => (name, tables),
        };
        if function == "keys" {
            // The keys of the entity value (its non-NULL properties).
            let Some(value) = self.entity_value(slot, span)? else {
                return Ok(None);
            };
            return Ok(Some(BoundExpr {
                kind: BoundExprKind::Function("keys".to_string(), vec![value]),
                ty: LogicalType::List(Box::new(LogicalType::String)),
                span,
            }));
        }
        let id = BoundExpr::slot(slot, LogicalType::InternalId, span);
        match function {
            // A call, not the bare slot, so that projections hand out the
            // id itself rather than the entity.
            "id" => Ok(Some(BoundExpr {
                kind: BoundExprKind::Function("id".to_string(), vec![id]),
                ty: LogicalType::InternalId,
                span,
            })),
            "label" | "labels" | "type" => {
                if function == "type" && !is_rel {
                    return Err(Error::at(
                        kith_common::ErrorKind::Type,
                        span,
                        format!("type() expects a rel, but '{name}' is a node"),
                    ));
                }
                let names = self.table_names(&tables, span)?;
                if function == "labels" && !is_rel && self.any_label_column(&tables) {
                    let hidden = self.hidden_labels(&name, &tables, span)?;
                    return Ok(Some(BoundExpr {
                        kind: BoundExprKind::Function(
                            "_labels".to_string(),
                            vec![id, names, hidden],
                        ),
                        ty: LogicalType::List(Box::new(LogicalType::String)),
                        span,
                    }));
                }
                // A rel's type stays readable after DELETE, a node's labels
                // do not.
                let guard = !is_rel;
                let ty = if function == "labels" {
                    LogicalType::List(Box::new(LogicalType::String))
                } else {
                    LogicalType::String
                };
                let f = if function == "labels" {
                    "_labels"
                } else {
                    "_label"
                };
                let value = BoundExpr {
                    kind: BoundExprKind::Function(f.to_string(), vec![id, names]),
                    ty,
                    span,
                };
                Ok(Some(match guard {
                    true => self.guard_deleted(&name, value),
                    false => value,
                }))
            }
            _ => {
                let mut args = vec![id];
                let mut fields = Vec::new();
                for (prop, e) in self.entity_properties(&name, &tables, span)? {
                    fields.push((prop.clone(), e.ty.clone()));
                    args.push(BoundExpr::literal(Value::String(prop), span));
                    args.push(e);
                }
                Ok(Some(BoundExpr {
                    kind: BoundExprKind::Function("_properties".to_string(), args),
                    ty: LogicalType::Struct(fields),
                    span,
                }))
            }
        }
    }
}

/// Whether `function` (lower case) reads a whole node or rel variable (see
/// [`Binder::bind_entity_function`]).
pub(crate) fn is_entity_function(function: &str) -> bool {
    matches!(
        function,
        "id" | "label" | "labels" | "type" | "properties" | "keys"
    )
}
