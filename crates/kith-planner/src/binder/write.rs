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

/// The hidden RETURN items being collected and the variables created so far.
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

/// A CREATE whose property values read a node or rel an earlier pattern
/// of the same clause creates (`CREATE (a {id: 0}), (b {ref: a.id})`), as
/// consecutive CREATE clauses that each create before the next reads:
/// CREATE neither filters nor multiplies rows, so the patterns of one
/// clause and of consecutive clauses make the same graph. None when the
/// clause is no such CREATE.
fn split_create(clause: &Clause) -> Option<Vec<Clause>> {
    let Clause::Create { patterns, span } = clause else {
        return None;
    };
    let mut anon = 0;
    let patterns: Vec<ast::PathPattern> = patterns
        .iter()
        .flat_map(|p| split_self_reads(p, &mut anon).unwrap_or_else(|| vec![p.clone()]))
        .collect();
    let mut groups: Vec<Vec<ast::PathPattern>> = vec![Vec::new()];
    let mut names: HashSet<&str> = HashSet::new();
    for p in &patterns {
        let mut values: Vec<&ast::Expr> = p.start.properties.iter().collect();
        for (r, n) in &p.chain {
            values.extend(r.properties.as_ref());
            values.extend(n.properties.as_ref());
        }
        let reads_earlier = values
            .iter()
            .any(|v| mentions(v, &|name| names.contains(name)));
        if reads_earlier {
            groups.push(Vec::new());
            names.clear();
        }
        names.extend(p.start.variable.iter().map(|v| v.name.as_str()));
        for (r, n) in &p.chain {
            names.extend(r.variable.iter().map(|v| v.name.as_str()));
            names.extend(n.variable.iter().map(|v| v.name.as_str()));
        }
        if let Some(g) = groups.last_mut() {
            g.push(p.clone());
        }
    }
    (groups.len() > 1).then(|| {
        groups
            .into_iter()
            .map(|patterns| Clause::Create {
                patterns,
                span: *span,
            })
            .collect()
    })
}

/// The names [`split_self_reads`] gives anonymous nodes: hidden from
/// `RETURN *` like every `_anon_` name, but carried to the clauses after
/// a write like named ones.
const SPLIT_NODE_PREFIX: &str = "_anon_split_";

/// A CREATE pattern whose property values read a node of the same pattern
/// (`(z {v: 1})-[:R {w: z.v}]->(x)`), as one pattern per node (each named,
/// `_anon_split_K` when anonymous) followed by one pattern per rel between
/// those names, so that [`split_create`] creates the nodes before the
/// values reading them. None for other patterns (named paths stay whole).
fn split_self_reads(p: &ast::PathPattern, anon: &mut usize) -> Option<Vec<ast::PathPattern>> {
    if p.variable.is_some() || p.chain.is_empty() {
        return None;
    }
    let nodes: Vec<&ast::NodePattern> = std::iter::once(&p.start)
        .chain(p.chain.iter().map(|(_, n)| n))
        .collect();
    let names: HashSet<&str> = nodes
        .iter()
        .filter_map(|n| n.variable.as_ref())
        .map(|v| v.name.as_str())
        .collect();
    let reads_own = nodes
        .iter()
        .filter_map(|n| n.properties.as_ref())
        .chain(p.chain.iter().filter_map(|(r, _)| r.properties.as_ref()))
        .any(|v| mentions(v, &|name| names.contains(name)));
    if !reads_own {
        return None;
    }
    let named: Vec<ast::NodePattern> = nodes
        .iter()
        .map(|n| {
            let mut n = (*n).clone();
            if n.variable.is_none() {
                n.variable = Some(ast::Ident {
                    name: format!("{SPLIT_NODE_PREFIX}{anon}"),
                    span: n.span,
                });
                *anon += 1;
            }
            n
        })
        .collect();
    let reference = |n: &ast::NodePattern| ast::NodePattern {
        variable: n.variable.clone(),
        labels: ast::LabelExpr::None,
        properties: None,
        where_: None,
        span: n.span,
    };
    let single = |start: ast::NodePattern, chain| ast::PathPattern {
        variable: None,
        shortest: None,
        start,
        chain,
        span: p.span,
    };
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for n in &named {
        let name = n.variable.as_ref().map_or("", |v| v.name.as_str());
        // A name repeated in the pattern is one node, created once.
        if seen.insert(name) {
            out.push(single(n.clone(), Vec::new()));
        }
    }
    for (i, (r, _)) in p.chain.iter().enumerate() {
        let chain = vec![(r.clone(), reference(&named[i + 1]))];
        out.push(single(reference(&named[i]), chain));
    }
    Some(out)
}

/// A DELETE expression of type `ty` can hold something to delete.
fn check_deletable(ty: &LogicalType, span: Span) -> Result<()> {
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
        let mut scope = WriteScope {
            items: Vec::new(),
            created: HashSet::new(),
            created_rels: Vec::new(),
            anon: 0,
            written: HashSet::new(),
            after_write: Vec::new(),
            deleted_values: Vec::new(),
            dirty: HashSet::new(),
            paths: Vec::new(),
        };
        if !self.continuation {
            self.check_bare_creates(clauses, &scope)?;
        }
        let pieces: Vec<Option<Vec<Clause>>> = clauses.iter().map(split_create).collect();
        let split: Vec<Clause>;
        let clauses = if pieces.iter().any(Option::is_some) {
            split = clauses
                .iter()
                .zip(pieces)
                .flat_map(|(c, p)| p.unwrap_or_else(|| vec![c.clone()]))
                .collect();
            &split[..]
        } else {
            clauses
        };
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
            match clause {
                Clause::Create { patterns, .. } => {
                    out.push(self.bind_create(patterns, &mut scope)?);
                }
                Clause::Merge {
                    pattern,
                    on_create,
                    on_match,
                    span,
                } => {
                    let merge = self.bind_merge(pattern, on_create, on_match, *span, &mut scope)?;
                    if let WriteClause::MergeNode { on_match, .. } = &merge {
                        scope.written.extend(on_match.iter().map(|p| p.0.clone()));
                    }
                    out.push(merge);
                }
                Clause::Set { items, .. } => {
                    out.extend(self.bind_set_items(items, &mut scope)?);
                }
                Clause::Remove { items, span } => {
                    let mut sets = Vec::new();
                    let mut others = Vec::new();
                    for item in items {
                        match item {
                            ast::RemoveItem::Property(target) => {
                                let (target, property) = self.set_target(target, &mut scope)?;
                                let value = scope.column(ast::Expr {
                                    kind: ExprKind::Literal(ast::Literal::Null),
                                    span: *span,
                                });
                                sets.push(SetProperty {
                                    target,
                                    property,
                                    value,
                                });
                            }
                            ast::RemoveItem::Labels { variable, labels } => {
                                others.push(self.set_labels(variable, labels, true, &mut scope)?);
                            }
                        }
                    }
                    scope
                        .written
                        .extend(sets.iter().map(|s| s.property.clone()));
                    if !sets.is_empty() {
                        out.push(WriteClause::Set(sets));
                    }
                    out.extend(others);
                }
                Clause::Delete { detach, exprs, .. } => {
                    out.push(self.bind_delete(*detach, exprs, &mut scope)?);
                }
                Clause::Projection(_)
                | Clause::Match { .. }
                | Clause::Unwind { .. }
                | Clause::Call { .. } => {
                    continuation = Some(self.continuation(&clauses[idx..], &mut scope));
                    break;
                }
            }
        }
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
        if let Some(part) = self.parts.last() {
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
        }
        Ok(BoundStatement::Write(Box::new(BoundWrite {
            query: BoundQuery {
                parts: std::mem::take(&mut self.parts),
                num_slots: self.next_slot,
                subqueries: std::mem::take(&mut self.subqueries),
            },
            clauses: out,
            continuation,
        })))
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

    /// `MERGE (a)-[r:T {..}]->(b)` with `a` and `b` bound.
    fn bind_merge_rel(
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

    /// The items of a SET (or of ON CREATE / ON MATCH bound in general):
    /// one `Set` of the property items, then the label and map items.
    fn bind_set_items(
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

    /// ON CREATE / ON MATCH items that are not all `x.p = v`: bound as SET
    /// clauses once the merged variable is in scope.
    fn merge_then(
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
    fn merge_items(
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

    /// `SET n:A:B` (`remove`: `REMOVE n:A:B`).
    fn set_labels(
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

    /// `CREATE (a)` with `a` already bound creates nothing; openCypher
    /// rejects it (VariableAlreadyBound) instead of ignoring it. Checked on
    /// the clauses as written, before [`split_create`] adds such patterns
    /// of its own.
    fn check_bare_creates(&self, clauses: &[Clause], scope: &WriteScope) -> Result<()> {
        let mut earlier: HashSet<&str> = HashSet::new();
        // Until a WITH narrows the scope, the variables bound before the
        // writes are in it too.
        let mut outer = true;
        for clause in clauses {
            let (patterns, create): (&[ast::PathPattern], bool) =
                match clause {
                    Clause::Create { patterns, .. } => (patterns, true),
                    Clause::Merge { pattern, .. } => (std::slice::from_ref(pattern), false),
                    Clause::Unwind { alias, .. } => {
                        earlier.insert(&alias.name);
                        continue;
                    }
                    Clause::Projection(p) => {
                        if !p.star {
                            outer = false;
                            earlier.clear();
                        }
                        earlier.extend(p.items.iter().filter_map(|i| {
                            match (&i.alias, &i.expr.kind) {
                                (Some(a), _) => Some(a.name.as_str()),
                                (None, ExprKind::Variable(v)) => Some(v.as_str()),
                                _ => None,
                            }
                        }));
                        continue;
                    }
                    _ => continue,
                };
            for p in patterns {
                if let (true, true, Some(v)) = (create, p.chain.is_empty(), &p.start.variable) {
                    if earlier.contains(v.name.as_str()) || (outer && self.is_bound(&v.name, scope))
                    {
                        return Err(semantic(
                            v.span,
                            format!(
                                "variable '{}' is already bound: CREATE needs a new node or a rel",
                                v.name
                            ),
                        ));
                    }
                }
                earlier.extend(
                    p.variable
                        .iter()
                        .chain(&p.start.variable)
                        .map(|v| v.name.as_str()),
                );
                for (r, n) in &p.chain {
                    earlier.extend(
                        r.variable
                            .iter()
                            .chain(&n.variable)
                            .map(|v| v.name.as_str()),
                    );
                }
            }
        }
        Ok(())
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

    /// `[DETACH] DELETE e, ...`: node and rel variables by reference, any
    /// other expression (a path, `list[0]`, `map.key`) by its value, which
    /// must be a node, rel or path.
    fn bind_delete(
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
    fn delete_value(&self, e: &ast::Expr, scope: &mut WriteScope) -> usize {
        let c = scope.column(e.clone());
        scope.deleted_values.push((c, e.span));
        c
    }

    /// `x.prop` of a SET or REMOVE.
    fn set_target(
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
    fn entity_target(&self, name: &str, span: Span, scope: &mut WriteScope) -> Result<SetTarget> {
        if scope.created_rels.iter().any(|r| r == name) {
            return Ok(SetTarget::CreatedRel(name.to_string()));
        }
        Ok(match self.rel_ref(name, span, scope)? {
            Some(r) => SetTarget::Rel(r),
            None => SetTarget::Node(self.node_ref(name, span, scope)?),
        })
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

    /// The property map of a MERGE pattern: a literal map (a parameter
    /// would hide which properties the MERGE matches on).
    fn merge_properties(
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

    /// A node of a CREATE pattern: a reference to a bound variable, or a new node.
    fn create_node(
        &self,
        node: &ast::NodePattern,
        nodes: &mut Vec<CreateNode>,
        scope: &mut WriteScope,
    ) -> Result<NodeRef> {
        if let Some(w) = &node.where_ {
            return Err(semantic(w.span, "WHERE is not allowed in a CREATE pattern"));
        }
        if let Some(v) = &node.variable {
            if self.is_bound(&v.name, scope) {
                if node.properties.is_some() || !matches!(node.labels, ast::LabelExpr::None) {
                    return Err(semantic(
                        v.span,
                        format!("variable '{}' is already defined", v.name),
                    ));
                }
                return self.node_ref(&v.name, v.span, scope);
            }
        }
        let new = self.new_node(node, false, scope)?;
        let var = new.var.clone();
        scope.created.insert(var.clone());
        nodes.push(new);
        Ok(NodeRef::Created(var))
    }

    /// A node a CREATE makes, or a MERGE matches and makes (`merge`): its
    /// table, labels, properties and variable (hidden when anonymous).
    fn new_node(
        &self,
        node: &ast::NodePattern,
        merge: bool,
        scope: &mut WriteScope,
    ) -> Result<CreateNode> {
        let clause = if merge { "MERGE" } else { "CREATE" };
        if let Some(w) = &node.where_ {
            return Err(semantic(
                w.span,
                format!("WHERE is not allowed in a {clause} pattern"),
            ));
        }
        let table = self.write_label(node)?;
        let properties = if merge {
            self.merge_properties(node.properties.as_ref(), scope)?
        } else {
            self.write_properties(node.properties.as_ref(), scope)?
        };
        self.check_properties(&table, &properties, node.span)?;
        let var = match &node.variable {
            Some(v) => v.name.clone(),
            None => {
                scope.anon += 1;
                format!("_anon_{}_{}", clause.to_lowercase(), scope.anon)
            }
        };
        Ok(CreateNode {
            var,
            table,
            labels: node_labels(node),
            properties,
        })
    }

    fn bind_create(
        &self,
        patterns: &[ast::PathPattern],
        scope: &mut WriteScope,
    ) -> Result<WriteClause> {
        let mut nodes = Vec::new();
        let mut rels = Vec::new();
        for p in patterns {
            let path = self.path_name(p, scope)?;
            let mut elems = Vec::new();
            let mut left = self.create_node(&p.start, &mut nodes, scope)?;
            elems.push(node_ref_name(&left, &p.start));
            for (i, (rel, node)) in p.chain.iter().enumerate() {
                let right = self.create_node(node, &mut nodes, scope)?;
                if rel.range.is_some() {
                    return Err(semantic(
                        rel.span,
                        "CREATE cannot make a variable-length rel",
                    ));
                }
                if let Some(v) = &rel.variable {
                    if self.is_bound(&v.name, scope) {
                        return Err(semantic(
                            v.span,
                            format!("variable '{}' is already defined", v.name),
                        ));
                    }
                }
                let [ty] = rel.types.as_slice() else {
                    return Err(semantic(
                        rel.span,
                        "a rel to create needs exactly one rel type",
                    ));
                };
                let table = self.write_rel_type(ty)?;
                let (src, dst) = match rel.direction {
                    Direction::Right => (left.clone(), right.clone()),
                    Direction::Left => (right.clone(), left.clone()),
                    _ => return Err(semantic(rel.span, "a rel to create needs a direction")),
                };
                let properties = self.write_properties(rel.properties.as_ref(), scope)?;
                self.check_properties(&table, &properties, rel.span)?;
                let var = path_rel_var(rel, path.as_deref(), i);
                if let Some(v) = &var {
                    scope.created_rels.push(v.clone());
                    elems.push(v.clone());
                }
                elems.push(node_ref_name(&right, node));
                rels.push(CreateRel {
                    var,
                    table,
                    src,
                    dst,
                    properties,
                });
                left = right;
            }
            if let Some(name) = path {
                scope.paths.push((name, elems));
            }
        }
        Ok(WriteClause::Create { nodes, rels })
    }

    /// The name of path pattern `p` when it is named (checked to be new).
    fn path_name(&self, p: &ast::PathPattern, scope: &WriteScope) -> Result<Option<String>> {
        let Some(v) = &p.variable else {
            return Ok(None);
        };
        if self.is_bound(&v.name, scope) {
            return Err(semantic(
                v.span,
                format!("variable '{}' is already defined", v.name),
            ));
        }
        Ok(Some(v.name.clone()))
    }

    fn bind_merge(
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
    fn bind_merge_path(
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
}
