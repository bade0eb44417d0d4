//! Binding of writing clauses (CREATE, MERGE, SET, REMOVE, DELETE).
//!
//! The reading clauses before the first writing clause become a query whose
//! RETURN projects every value the writes need (node and rel ids, property
//! values) as hidden columns; the writing clauses refer to those columns.

use std::collections::HashSet;

use kith_common::{Error, ErrorKind, LogicalType, Result, Span};
use kith_parser::ast::{self, Clause, Direction, ExprKind};

use super::entity::{CARRIED_DST, CARRIED_SRC};
use super::{not_supported, Binder};
use crate::bound::*;
use crate::expr::{BoundExpr, SlotId};

mod create;
mod merge;
mod set_delete;
use create::*;
use set_delete::*;

/// The hidden RETURN items being collected and the variables created so far.
#[derive(Default)]
struct WriteScope {
    items: Vec<ast::ProjectionItem>,
    created: HashSet<String>,
    /// Named rels a CREATE makes.
    created_rels: Vec<String>,
    /// Counter for the hidden names of anonymous created nodes.
    anon: usize,
    /// Property names a SET, REMOVE or MERGE so far may have changed: the
    /// reading part computes every value before any write, so values added
    /// afterwards must not read those properties (they would see old values).
    written: HashSet<String>,
    /// Columns added after writes, with the property names written before.
    after_write: Vec<(usize, HashSet<String>)>,
    /// Columns of DELETE expressions, checked to be entities once bound.
    deleted_values: Vec<(usize, Span)>,
    /// Variables whose entity a clause so far set, removed from or deleted.
    dirty: HashSet<String>,
    /// Named paths a CREATE or MERGE made, with their element variables.
    paths: Vec<(String, Vec<String>)>,
}

impl WriteScope {
    /// Adds `expr` as a hidden output column and returns its index.
    fn column(&mut self, expr: ast::Expr) -> usize {
        if !self.written.is_empty() {
            self.after_write
                .push((self.items.len(), self.written.clone()));
        }
        let name = format!("_w{}", self.items.len());
        self.items.push(ast::ProjectionItem {
            alias: Some(ast::Ident {
                name: name.clone(),
                span: expr.span,
            }),
            expr,
            text: name,
        });
        self.items.len() - 1
    }

    /// Whether `v` is a rel or path the writes so far made (it has no
    /// input column).
    fn created_rel_or_path(&self, v: &str) -> bool {
        self.created_rels.iter().any(|r| r == v) || self.paths.iter().any(|p| p.0 == v)
    }

    /// Whether the writes so far made `v` or changed its entity: a value
    /// that reads it cannot come from the reading part.
    fn written_var(&self, v: &str) -> bool {
        self.dirty.contains(v) || self.created.contains(v) || self.created_rel_or_path(v)
    }

    fn variable(&mut self, name: &str, span: Span) -> usize {
        self.column(ast::Expr {
            kind: ExprKind::Variable(name.to_string()),
            span,
        })
    }
}

/// The labels of a node to create when there are several (each once, in
/// order); empty for one or none.
fn node_labels(node: &ast::NodePattern) -> Vec<String> {
    let ast::LabelExpr::All(l) = &node.labels else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for x in l {
        if !out.contains(&x.name) {
            out.push(x.name.clone());
        }
    }
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// The variable of a path element a CREATE or MERGE refers to: a created
/// node's (possibly hidden) name, or the bound variable.
fn node_ref_name(r: &NodeRef, node: &ast::NodePattern) -> String {
    match (r, &node.variable) {
        (NodeRef::Created(v), _) => v.clone(),
        (_, Some(v)) => v.name.clone(),
        (_, None) => String::new(),
    }
}

/// The variable of rel `i` of a pattern: its own, or a hidden one when the
/// path is named (a path value needs every rel).
fn path_rel_var(rel: &ast::RelPattern, path: Option<&str>, i: usize) -> Option<String> {
    match (&rel.variable, path) {
        (Some(v), _) => Some(v.name.clone()),
        (None, Some(p)) => Some(format!("_anon_path_{p}_{i}")),
        (None, None) => None,
    }
}

/// The variables whose entities `clause` writes to (SET, REMOVE and DELETE
/// targets, the targets of ON CREATE / ON MATCH items).
fn write_targets(clause: &Clause) -> Vec<String> {
    fn base(e: &ast::Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Variable(v) => Some(v.clone()),
            ExprKind::Property(x, _) => base(x),
            _ => None,
        }
    }
    let set_item = |item: &ast::SetItem| match item {
        ast::SetItem::Property { target, .. } => base(target),
        ast::SetItem::Replace { variable, .. }
        | ast::SetItem::Merge { variable, .. }
        | ast::SetItem::Labels { variable, .. } => Some(variable.name.clone()),
    };
    match clause {
        Clause::Set { items, .. } => items.iter().filter_map(set_item).collect(),
        Clause::Merge {
            on_create,
            on_match,
            ..
        } => on_create
            .iter()
            .chain(on_match)
            .filter_map(set_item)
            .collect(),
        Clause::Remove { items, .. } => items
            .iter()
            .filter_map(|item| match item {
                ast::RemoveItem::Property(target) => base(target),
                ast::RemoveItem::Labels { variable, .. } => Some(variable.name.clone()),
            })
            .collect(),
        Clause::Delete { exprs, .. } => exprs.iter().filter_map(base).collect(),
        _ => Vec::new(),
    }
}

/// Whether `clause` reads what the clauses before it wrote: a value mentions
/// a created, set or deleted variable, or it refers to a created rel at all
/// (a created rel has no input column). Such a clause starts a continuation.
fn reads_written(clause: &Clause, scope: &WriteScope) -> bool {
    let created_rel = |v: &str| scope.created_rel_or_path(v);
    let dirty = |v: &str| scope.written_var(v);
    let mut values: Vec<&ast::Expr> = Vec::new();
    let mut refs: Vec<&ast::Expr> = Vec::new();
    fn pattern<'a>(
        p: &'a ast::PathPattern,
        values: &mut Vec<&'a ast::Expr>,
        created_rel: &dyn Fn(&str) -> bool,
    ) -> bool {
        values.extend(p.start.properties.as_ref());
        let mut rel = false;
        for (r, node) in &p.chain {
            values.extend(r.properties.as_ref());
            values.extend(node.properties.as_ref());
            rel |= r.variable.as_ref().is_some_and(|v| created_rel(&v.name));
        }
        rel
    }
    fn set_items<'a>(
        items: &'a [ast::SetItem],
        values: &mut Vec<&'a ast::Expr>,
        created_rel: &dyn Fn(&str) -> bool,
    ) -> bool {
        let mut rel = false;
        for item in items {
            match item {
                ast::SetItem::Property { target, value } => {
                    rel |= mentions(target, created_rel);
                    values.push(value);
                }
                ast::SetItem::Replace { variable, value }
                | ast::SetItem::Merge { variable, value } => {
                    rel |= created_rel(&variable.name);
                    values.push(value);
                }
                ast::SetItem::Labels { .. } => {}
            }
        }
        rel
    }
    let rel = match clause {
        Clause::Create { patterns, .. } => {
            // Every pattern's values are collected (no short-circuit).
            let mut rel = false;
            for p in patterns {
                rel |= pattern(p, &mut values, &created_rel);
            }
            rel
        }
        Clause::Merge {
            pattern: p,
            on_create,
            on_match,
            ..
        } => {
            let r = pattern(p, &mut values, &created_rel);
            let c = set_items(on_create, &mut values, &created_rel);
            set_items(on_match, &mut values, &created_rel) || c || r
        }
        Clause::Set { items, .. } => set_items(items, &mut values, &created_rel),
        Clause::Remove { items, .. } => {
            for item in items {
                if let ast::RemoveItem::Property(target) = item {
                    refs.push(target);
                }
            }
            false
        }
        Clause::Delete { exprs, .. } => {
            for e in exprs {
                match &e.kind {
                    ExprKind::Variable(_) => refs.push(e),
                    _ => values.push(e),
                }
            }
            false
        }
        _ => false,
    };
    rel || refs.iter().any(|e| mentions(e, &created_rel))
        || values.iter().any(|e| mentions(e, &dirty))
}

/// Whether a value of SET items reads what the writes so far made or
/// changed (a MERGE's own variables among them).
fn items_read_written(items: &[ast::SetItem], scope: &WriteScope) -> bool {
    let dirty = |v: &str| scope.written_var(v);
    items.iter().any(|item| match item {
        ast::SetItem::Property { value, .. }
        | ast::SetItem::Replace { value, .. }
        | ast::SetItem::Merge { value, .. } => mentions(value, &dirty),
        ast::SetItem::Labels { .. } => false,
    })
}

/// Whether expression `e` mentions a variable `hit` accepts (patterns and
/// subqueries count as mentioning every variable).
fn mentions(e: &ast::Expr, hit: &dyn Fn(&str) -> bool) -> bool {
    let any = |items: &mut dyn Iterator<Item = &ast::Expr>| {
        for x in items {
            if mentions(x, hit) {
                return true;
            }
        }
        false
    };
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Parameter(_) => false,
        ExprKind::Variable(v) => hit(v),
        ExprKind::Property(x, _)
        | ExprKind::Unary(_, x)
        | ExprKind::HasLabels(x, _)
        | ExprKind::Cast(x, _) => mentions(x, hit),
        ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => mentions(a, hit) || mentions(b, hit),
        ExprKind::Function { args, .. } | ExprKind::List(args) => any(&mut args.iter()),
        ExprKind::Map(entries) => any(&mut entries.iter().map(|(_, v)| v)),
        ExprKind::MapProjection(base, items) => {
            mentions(base, hit)
                || any(&mut items.iter().filter_map(|i| i.expr()))
                || items
                    .iter()
                    .filter_map(|i| i.variable())
                    .any(|v| hit(&v.name))
        }
        ExprKind::Slice(a, b, c) => {
            mentions(a, hit) || any(&mut b.iter().chain(c).map(|x| x.as_ref()))
        }
        ExprKind::Case {
            operand,
            whens,
            else_,
        } => {
            any(&mut operand.iter().chain(else_).map(|x| x.as_ref()))
                || any(&mut whens.iter().flat_map(|(w, t)| [w, t]))
        }
        ExprKind::ListComprehension {
            list,
            predicate,
            projection,
            ..
        } => {
            mentions(list, hit) || any(&mut predicate.iter().chain(projection).map(|x| x.as_ref()))
        }
        ExprKind::Quantifier {
            list, predicate, ..
        } => mentions(list, hit) || mentions(predicate, hit),
        ExprKind::Reduce {
            init, list, expr, ..
        } => mentions(init, hit) || mentions(list, hit) || mentions(expr, hit),
        ExprKind::PatternPredicate(_)
        | ExprKind::PatternComprehension { .. }
        | ExprKind::Exists(_)
        | ExprKind::CountSubquery(_) => true,
    }
}

/// The names [`split_self_reads`] gives anonymous nodes: hidden from
/// `RETURN *` like every `_anon_` name, but carried to the clauses after
/// a write like named ones.
const SPLIT_NODE_PREFIX: &str = "_anon_split_";

fn semantic(span: Span, msg: impl Into<String>) -> Error {
    Error::at(ErrorKind::Semantic, span, msg.into())
}

impl Binder<'_> {
    /// Binds `clauses` (starting with the first writing clause) after the
    /// reading clauses bound so far (whose conjuncts are `predicates`).
    pub(super) fn bind_writes(
        &mut self,
        clauses: &[Clause],
        predicates: Vec<BoundExpr>,
        span: Span,
    ) -> Result<BoundStatement> {
        let mut scope = WriteScope::default();
        if !self.continuation {
            self.check_bare_creates(clauses, &scope)?;
        }
        let split = split_creates(clauses);
        let clauses = split.as_deref().unwrap_or(clauses);
        let mut out = Vec::new();
        let mut continuation = None;
        for (idx, clause) in clauses.iter().enumerate() {
            if idx > 0 && reads_written(clause, &scope) {
                // Values computed before the writes would be stale: the
                // clause runs on rows read again after them.
                continuation = Some(self.continuation(&clauses[idx..], &mut scope));
                break;
            }
            scope.dirty.extend(write_targets(clause));
            if !self.bind_write_clause(clause, &mut scope, &mut out)? {
                continuation = Some(self.continuation(&clauses[idx..], &mut scope));
                break;
            }
        }
        self.bind_write_columns(&mut scope, predicates, span)?;
        Ok(BoundStatement::Write(Box::new(BoundWrite {
            query: self.take_query(),
            clauses: out,
            continuation,
        })))
    }

    /// Binds writing clause `clause` into `out`; false when it is no
    /// writing clause (the statement continues with reads from it).
    fn bind_write_clause(
        &mut self,
        clause: &Clause,
        scope: &mut WriteScope,
        out: &mut Vec<WriteClause>,
    ) -> Result<bool> {
        match clause {
            Clause::Create { patterns, .. } => {
                out.push(self.bind_create(patterns, scope)?);
            }
            Clause::Merge {
                pattern,
                on_create,
                on_match,
                span,
            } => {
                let merge = self.bind_merge(pattern, on_create, on_match, *span, scope)?;
                if let WriteClause::MergeNode { on_match, .. } = &merge {
                    scope.written.extend(on_match.iter().map(|p| p.0.clone()));
                }
                out.push(merge);
            }
            Clause::Set { items, .. } => {
                out.extend(self.bind_set_items(items, scope)?);
            }
            Clause::Remove { items, span } => {
                out.extend(self.bind_remove(items, *span, scope)?);
            }
            Clause::Delete { detach, exprs, .. } => {
                out.push(self.bind_delete(*detach, exprs, scope)?);
            }
            Clause::Projection(_)
            | Clause::Match { .. }
            | Clause::Unwind { .. }
            | Clause::Call { .. } => return Ok(false),
        }
        Ok(true)
    }

    /// `REMOVE`: a property removed is set to NULL; labels are removed.
    fn bind_remove(
        &self,
        items: &[ast::RemoveItem],
        span: Span,
        scope: &mut WriteScope,
    ) -> Result<Vec<WriteClause>> {
        let mut sets = Vec::new();
        let mut others = Vec::new();
        for item in items {
            match item {
                ast::RemoveItem::Property(target) => {
                    let (target, property) = self.set_target(target, scope)?;
                    let value = scope.column(ast::Expr {
                        kind: ExprKind::Literal(ast::Literal::Null),
                        span,
                    });
                    sets.push(SetProperty {
                        target,
                        property,
                        value,
                    });
                }
                ast::RemoveItem::Labels { variable, labels } => {
                    others.push(self.set_labels(variable, labels, true, scope)?);
                }
            }
        }
        scope
            .written
            .extend(sets.iter().map(|s| s.property.clone()));
        let mut out = Vec::new();
        if !sets.is_empty() {
            out.push(WriteClause::Set(sets));
        }
        out.extend(others);
        Ok(out)
    }

    /// Binds the hidden RETURN of the reading part: the columns the writes
    /// read (ids and values), at least one. Checks that what DELETE deletes
    /// is a node, rel or path, and that no column added after a write reads
    /// a property it may have changed.
    fn bind_write_columns(
        &mut self,
        scope: &mut WriteScope,
        predicates: Vec<BoundExpr>,
        span: Span,
    ) -> Result<()> {
        if scope.items.is_empty() {
            scope.column(ast::Expr {
                kind: ExprKind::Literal(ast::Literal::Integer(1)),
                span,
            });
        }
        let proj = ast::Projection {
            is_with: false,
            distinct: false,
            star: false,
            items: std::mem::take(&mut scope.items),
            order_by: Vec::new(),
            skip: None,
            limit: None,
            where_: None,
            span,
        };
        let after_write = std::mem::take(&mut scope.after_write);
        self.ids_projection = true;
        let bound = self.bind_projection(&proj, predicates);
        self.ids_projection = false;
        bound?;
        let Some(part) = self.parts.last() else {
            return Ok(());
        };
        for (c, span) in std::mem::take(&mut scope.deleted_values) {
            check_deletable(&part.outputs[c].1.ty, span)?;
        }
        let props: Vec<(&str, SlotId)> = part
            .graph
            .nodes
            .iter()
            .flat_map(|n| n.properties.iter())
            .chain(part.graph.rels.iter().flat_map(|r| r.properties.iter()))
            .map(|p| (p.0.as_str(), p.1))
            .collect();
        for (c, written) in after_write {
            let e = &part.outputs[c].1;
            let mut slots = Vec::new();
            e.slots(&mut slots);
            if props.iter().any(|(name, s)| {
                (written.contains(*name) || written.contains("*")) && slots.contains(s)
            }) {
                return Err(not_supported(
                    e.span,
                    "reading a property after SET, REMOVE or MERGE in the same statement",
                ));
            }
        }
        Ok(())
    }

    /// The clauses after the writes, with every named variable in scope:
    /// matched nodes and values through hidden columns, created nodes by
    /// name, matched, carried and created rels with their endpoints.
    fn continuation(&self, clauses: &[Clause], scope: &mut WriteScope) -> WriteContinuation {
        let mut vars: Vec<ContinuationVar> = Vec::new();
        let named = |n: &str| !n.starts_with("_anon") || n.starts_with(SPLIT_NODE_PREFIX);
        for n in &self.graph.nodes {
            if named(&n.name) && !scope.created.contains(&n.name) {
                vars.push(ContinuationVar {
                    name: n.name.clone(),
                    source: ContinuationSource::Column(scope.variable(&n.name, Span::new(0, 0))),
                    kind: SeedKind::Node(n.tables.clone()),
                });
            }
        }
        let in_path = |n: &str| scope.paths.iter().any(|p| p.1.iter().any(|e| e == n));
        let mut created: Vec<&String> = scope
            .created
            .iter()
            .filter(|n| named(n) || in_path(n))
            .collect();
        created.sort();
        for name in created {
            vars.push(ContinuationVar {
                name: name.clone(),
                source: ContinuationSource::Created(name.clone()),
                kind: SeedKind::Node(Vec::new()),
            });
        }
        for r in &self.graph.rels {
            if !named(&r.name) || r.recursive.is_some() {
                continue;
            }
            let (src, dst) = match r.direction {
                Direction::Left => (r.right, r.left),
                _ => (r.left, r.right),
            };
            let span = Span::new(0, 0);
            let source = ContinuationSource::Rel {
                rel: scope.variable(&r.name, span),
                src: scope.variable(&self.graph.nodes[src].name, span),
                dst: scope.variable(&self.graph.nodes[dst].name, span),
            };
            vars.push(ContinuationVar {
                name: r.name.clone(),
                source,
                kind: SeedKind::Rel(r.tables.clone()),
            });
        }
        let carried: Vec<String> = self.rels_carried.iter().map(|r| r.0.clone()).collect();
        for name in carried {
            let span = Span::new(0, 0);
            if !named(&name) || vars.iter().any(|v| v.name == name) {
                continue;
            }
            // A carried rel always has its hidden endpoints.
            let Ok(Some(rel)) = self.rel_ref(&name, span, scope) else {
                continue;
            };
            vars.push(ContinuationVar {
                kind: SeedKind::Rel(self.rel_tables_of(&name)),
                name,
                source: ContinuationSource::Rel {
                    rel: rel.rel,
                    src: rel.src,
                    dst: rel.dst,
                },
            });
        }
        for name in &scope.created_rels {
            vars.push(ContinuationVar {
                name: name.clone(),
                source: ContinuationSource::CreatedRel(name.clone()),
                kind: SeedKind::Rel(Vec::new()),
            });
        }
        let all_nodes: Vec<kith_common::TableId> =
            self.catalog.node_tables().map(|t| t.id).collect();
        for (name, _, ty) in &self.values {
            if named(name) && !vars.iter().any(|v| v.name == *name) && *ty == LogicalType::Node {
                // A node value continues as the node itself (by its id), so
                // what the writes changed is read back, not the old value.
                let span = Span::new(0, 0);
                let id = ast::Expr {
                    kind: ExprKind::Function {
                        name: ast::Ident {
                            name: "id".to_string(),
                            span,
                        },
                        distinct: false,
                        star: false,
                        args: vec![ast::Expr {
                            kind: ExprKind::Variable(name.clone()),
                            span,
                        }],
                    },
                    span,
                };
                vars.push(ContinuationVar {
                    name: name.clone(),
                    source: ContinuationSource::Column(scope.column(id)),
                    kind: SeedKind::Node(all_nodes.clone()),
                });
            } else if named(name) && !vars.iter().any(|v| v.name == *name) {
                let ty = ty.clone();
                vars.push(ContinuationVar {
                    name: name.clone(),
                    source: ContinuationSource::Column(scope.variable(name, Span::new(0, 0))),
                    kind: SeedKind::Value(ty),
                });
            }
        }
        WriteContinuation {
            clauses: clauses.to_vec(),
            vars,
            paths: scope.paths.clone(),
        }
    }

    /// Whether `name` is a node or rel the reading clauses bound.
    fn is_read_entity(&self, name: &str) -> bool {
        self.graph.nodes.iter().any(|n| n.name == name)
            || self.graph.rels.iter().any(|r| r.name == name)
            || self.rels_carried.iter().any(|r| r.0 == name)
    }

    /// Whether `name` is bound (by the reading clauses or created).
    fn is_bound(&self, name: &str, scope: &WriteScope) -> bool {
        scope.created.contains(name)
            || scope.created_rels.iter().any(|r| r == name)
            || scope.paths.iter().any(|p| p.0 == name)
            || self.graph.nodes.iter().any(|n| n.name == name)
            || self.graph.rels.iter().any(|r| r.name == name)
            || self.values.iter().any(|v| v.0 == name)
            || self.rels_carried.iter().any(|r| r.0 == name)
            || self.is_path(name)
    }

    fn node_ref(&self, name: &str, span: Span, scope: &mut WriteScope) -> Result<NodeRef> {
        if scope.created.contains(name) {
            return Ok(NodeRef::Created(name.to_string()));
        }
        if self.graph.nodes.iter().any(|n| n.name == name) {
            return Ok(NodeRef::Column(scope.variable(name, span)));
        }
        // A node value (collected and unwound, say): its column holds the node.
        if self
            .values
            .iter()
            .any(|v| v.0 == name && matches!(v.2, LogicalType::Node | LogicalType::Any))
        {
            return Ok(NodeRef::Column(scope.variable(name, span)));
        }
        if self.is_bound(name, scope) {
            return Err(Error::at(
                ErrorKind::Type,
                span,
                format!("'{name}' is not a node"),
            ));
        }
        Err(semantic(span, format!("variable '{name}' is not defined")))
    }

    /// The matched rel `name` (None when `name` is not a rel variable):
    /// one of this part's pattern (matched in either direction: the
    /// executor orients an undirected one) or one carried through WITH (its
    /// endpoints are hidden values).
    fn rel_ref(&self, name: &str, span: Span, scope: &mut WriteScope) -> Result<Option<RelRef>> {
        if self.rels_carried.iter().any(|r| r.0 == name) {
            let [src, dst] = [CARRIED_SRC, CARRIED_DST].map(|end| format!("_anon_{name}.{end}"));
            if !self.values.iter().any(|v| v.0 == src) || !self.values.iter().any(|v| v.0 == dst) {
                return Err(Error::internal(format!(
                    "rel '{name}' was carried without its endpoints"
                )));
            }
            return Ok(Some(RelRef {
                rel: scope.variable(name, span),
                src: scope.variable(&src, span),
                dst: scope.variable(&dst, span),
                oriented: false,
            }));
        }
        let Some(rel) = self.graph.rels.iter().find(|r| r.name == name) else {
            return Ok(None);
        };
        if rel.recursive.is_some() {
            return Err(not_supported(span, "writing a variable-length rel"));
        }
        let left = self.graph.nodes[rel.left].name.clone();
        let right = self.graph.nodes[rel.right].name.clone();
        let (src, dst) = match rel.direction {
            Direction::Left => (right, left),
            _ => (left, right),
        };
        Ok(Some(RelRef {
            rel: scope.variable(name, span),
            src: scope.variable(&src, span),
            dst: scope.variable(&dst, span),
            oriented: rel.direction != Direction::Both,
        }))
    }

    /// Checks that every property given for a declared table exists (an
    /// implicit table gains missing properties at run time).
    fn check_properties(
        &self,
        table: &WriteTable,
        props: &[(String, usize)],
        span: Span,
    ) -> Result<()> {
        let WriteTable::Declared(table) = table else {
            return Ok(());
        };
        let entry = self
            .catalog
            .table(*table)
            .ok_or_else(|| Error::internal("write table vanished"))?;
        for (name, _) in props {
            if entry.property(name).is_none() {
                return Err(semantic(
                    span,
                    format!(
                        "table '{}' has no property '{name}' (declared tables are not extended implicitly; use ALTER TABLE)",
                        entry.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The table a node pattern of CREATE or MERGE writes to: the declared
    /// node table of its label, else the implicit table of the label (no
    /// label: the table of unlabelled nodes).
    fn write_label(&self, node: &ast::NodePattern) -> Result<WriteTable> {
        let label = match &node.labels {
            // Several labels: the node goes to the table of the first; the
            // others are kept per node (`CreateNode::labels`).
            ast::LabelExpr::All(l) if !l.is_empty() => &l[0],
            ast::LabelExpr::None => return Ok(WriteTable::Implicit(String::new())),
            _ => {
                return Err(semantic(
                    node.span,
                    "a node to create needs labels joined by ':', not alternatives",
                ))
            }
        };
        self.write_target(label, true)
    }

    /// The table a rel of CREATE writes to (see [`Binder::write_label`]).
    fn write_rel_type(&self, ty: &ast::Ident) -> Result<WriteTable> {
        self.write_target(ty, false)
    }

    /// The declared table of label (`node`) or rel type `name`, else its
    /// implicit table; naming a declared table of the other kind is an error.
    fn write_target(&self, name: &ast::Ident, node: bool) -> Result<WriteTable> {
        let declared = self
            .catalog
            .tables()
            .iter()
            .find(|t| t.label == name.name && t.is_node() == node && !t.implicit);
        if let Some(t) = declared {
            return Ok(WriteTable::Declared(t.id));
        }
        if let Some(t) = self.catalog.table_by_name(&name.name) {
            if t.is_node() != node && !t.implicit {
                let (is, not) = if node {
                    ("rel", "node")
                } else {
                    ("node", "rel")
                };
                return Err(semantic(
                    name.span,
                    format!("'{}' is a {is} table, not a {not} table", name.name),
                ));
            }
        }
        Ok(WriteTable::Implicit(name.name.clone()))
    }

    /// The `{k: v, ...}` map of a pattern, as (key, column) pairs.
    fn write_properties(
        &self,
        props: Option<&ast::Expr>,
        scope: &mut WriteScope,
    ) -> Result<Vec<(String, usize)>> {
        let Some(p) = props else {
            return Ok(Vec::new());
        };
        let ExprKind::Map(entries) = &p.kind else {
            return Err(not_supported(
                p.span,
                "a property map that is not a literal map",
            ));
        };
        let mut out: Vec<(String, usize)> = Vec::new();
        for (k, v) in entries {
            if out.iter().any(|(n, _)| *n == k.name) {
                return Err(semantic(
                    k.span,
                    format!("property '{}' is given twice", k.name),
                ));
            }
            out.push((k.name.clone(), scope.column(v.clone())));
        }
        Ok(out)
    }
}

/// `clauses` with each CREATE split in pieces where [`split_create`]
/// splits it (None: none is).
fn split_creates(clauses: &[Clause]) -> Option<Vec<Clause>> {
    let pieces: Vec<Option<Vec<Clause>>> = clauses.iter().map(split_create).collect();
    if !pieces.iter().any(Option::is_some) {
        return None;
    }
    Some(
        clauses
            .iter()
            .zip(pieces)
            .flat_map(|(c, p)| p.unwrap_or_else(|| vec![c.clone()]))
            .collect(),
    )
}
