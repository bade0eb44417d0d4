//! Subqueries inside expressions: `EXISTS { ... }`, `COUNT { ... }`, pattern
//! predicates `WHERE (a)-[:R]->()` and pattern comprehensions
//! `[(a)-->(b) | b.x]`.
//!
//! Each is decorrelated into a query of its own. The outer node and rel
//! variables it mentions become its *keys*: the subquery matches them like
//! any pattern variable (over the whole graph), carries them through its
//! projections (so an aggregate inside groups per key, as a correlated
//! subquery evaluates per outer row) and returns their ids, then the count
//! or list. It runs once, before the outer query, into a table from key ids
//! to value; the outer expression looks its row's ids up. One hash lookup
//! per row instead of one subquery run per row.

use std::collections::BTreeSet;

use super::*;

/// Whether an outer variable is a node or a rel.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum EntityKind {
    Node,
    Rel,
}

/// A subquery expression as the clauses of a query of its own: what
/// `EXISTS { }`, `COUNT { }`, a pattern predicate or a pattern
/// comprehension stands for.
struct SubqueryForm {
    clauses: Vec<Clause>,
    kind: SubqueryKind,
    /// A pattern comprehension's projection (collected per key).
    projection: Option<ast::Expr>,
}

/// An outer node or rel variable a subquery mentions: its name and kind.
type SubqueryKey = (String, EntityKind);

impl Binder<'_> {
    /// Binds an `Exists`, `CountSubquery`, `PatternPredicate` or
    /// `PatternComprehension` expression.
    pub(super) fn bind_subquery_expr(&mut self, e: &ast::Expr) -> Result<BoundExpr> {
        let span = e.span;
        let SubqueryForm {
            mut clauses,
            kind,
            projection,
        } = self.subquery_form(e)?;
        check_subquery_clauses(&clauses)?;
        let keys = self.subquery_keys(&clauses, projection.as_ref(), span)?;
        let restrict = self.key_restrictions(&keys);
        match_keys_first(&mut clauses, &keys, restrict, span);
        let key_source = self.key_source(&clauses, &keys, span);
        let mut clauses: Vec<Clause> = clauses
            .into_iter()
            .map(|c| match c {
                Clause::Projection(p) => carry_keys(p, &keys).map(Clause::Projection),
                other => Ok(other),
            })
            .collect::<Result<_>>()?;
        if let Some(prefix) = key_source {
            clauses.splice(0..0, prefix);
        }
        clauses.push(Clause::Projection(ast::Projection::plain(
            false,
            false,
            result_items(&keys, kind, projection, span)?,
            None,
            span,
        )));
        let stmt = Statement::Query(ast::Query {
            parts: vec![ast::SingleQuery { clauses, span }],
            union_all: Vec::new(),
            span,
        });
        let inner = self.child();
        let query = match inner.bind(&stmt)? {
            BoundStatement::Query(q) => *q,
            _ => return Err(not_supported(span, "this kind of subquery")),
        };
        let key_exprs = keys
            .iter()
            .map(|(name, _)| self.bind_expr(&variable(name, span)))
            .collect::<Result<Vec<_>>>()?;
        let ty = match kind {
            SubqueryKind::Exists => LogicalType::Bool,
            SubqueryKind::Count => LogicalType::Int64,
            SubqueryKind::Collect => {
                let last = query.parts.last().and_then(|p| p.outputs.last());
                last.map_or(LogicalType::List(Box::new(LogicalType::Any)), |(_, e)| {
                    e.ty.clone()
                })
            }
        };
        let index = self.subqueries.len();
        self.subqueries.push(BoundSubquery {
            query,
            kind,
            num_keys: keys.len(),
        });
        Ok(BoundExpr {
            kind: BoundExprKind::Subquery {
                index,
                keys: key_exprs,
            },
            ty,
            span,
        })
    }

    /// The query subquery expression `e` stands for.
    fn subquery_form(&self, e: &ast::Expr) -> Result<SubqueryForm> {
        let (clauses, kind, projection) = match &e.kind {
            ExprKind::Exists(q) => (q.clauses.clone(), SubqueryKind::Exists, None),
            ExprKind::CountSubquery(q) => (q.clauses.clone(), SubqueryKind::Count, None),
            ExprKind::PatternPredicate(p) => {
                if self.in_projection {
                    return Err(Error::at(
                        ErrorKind::Syntax,
                        e.span,
                        "a pattern predicate is only allowed in WHERE (use EXISTS { ... } or a pattern comprehension to project it)",
                    ));
                }
                self.check_pattern_predicate(p)?;
                (
                    vec![match_clause(vec![(**p).clone()], None, p.span)],
                    SubqueryKind::Exists,
                    None,
                )
            }
            ExprKind::PatternComprehension {
                pattern,
                predicate,
                projection,
            } => (
                vec![match_clause(
                    vec![(**pattern).clone()],
                    predicate.as_deref().cloned(),
                    pattern.span,
                )],
                SubqueryKind::Collect,
                Some((**projection).clone()),
            ),
            _ => return Err(Error::internal("bind_subquery_expr: not a subquery")),
        };
        Ok(SubqueryForm {
            clauses,
            kind,
            projection,
        })
    }

    /// The subquery's keys: the outer node and rel variables it mentions,
    /// over-approximated by every name in it (a local that shadows an outer
    /// entity only adds a key that every row of the subquery has). It may
    /// not use the outer query's values.
    fn subquery_keys(
        &self,
        clauses: &[Clause],
        projection: Option<&ast::Expr>,
        span: Span,
    ) -> Result<Vec<SubqueryKey>> {
        let mut names = BTreeSet::new();
        for c in clauses {
            names_in_clause(c, &mut names);
        }
        if let Some(p) = projection {
            names_in_expr(p, &mut names);
        }
        let mut keys: Vec<SubqueryKey> = Vec::new();
        for name in names {
            // A list comprehension's variable (`[x IN nodes | [(x)-->(b) |
            // b]]`) changes per element, and a subquery runs once before
            // the outer query: it would bind `x` as a new node of its own.
            if self.locals.iter().any(|l| l.0 == name) {
                return Err(not_supported(
                    span,
                    &format!(
                        "using the list comprehension variable '{name}' inside a subquery or pattern comprehension"
                    ),
                ));
            }
            match self.outer_entity(&name) {
                Some(kind) => keys.push((name, kind)),
                None if self.values.iter().any(|v| v.0 == name)
                    || self.is_path(&name)
                    || self.aliases.iter().any(|a| a.0 == name) =>
                {
                    return Err(not_supported(
                        span,
                        &format!(
                            "using the value '{name}' of the outer query inside a subquery (only its node and rel variables)"
                        ),
                    ))
                }
                None => {}
            }
        }
        Ok(keys)
    }

    /// A conjunct of the enclosing WHERE over key variables only holds for
    /// every outer row that reaches the lookup (rows failing it are dropped
    /// by the same WHERE), so the subquery needs rows only for keys that
    /// pass it: `p.id = 9236 AND NOT EXISTS { (p)-[:KNOWS]-(f) }` matches
    /// the KNOWS of one person, not of all. Those conjuncts.
    fn key_restrictions(&self, keys: &[SubqueryKey]) -> Vec<ast::Expr> {
        let key_names: BTreeSet<&str> = keys.iter().map(|k| k.0.as_str()).collect();
        self.where_conjuncts
            .iter()
            .filter(|c| {
                let mut vars = BTreeSet::new();
                names_in_expr(c, &mut vars);
                !vars.is_empty() && vars.iter().all(|v| key_names.contains(v.as_str()))
            })
            .cloned()
            .collect()
    }

    /// When the subquery's own patterns leave its keys unconnected, each
    /// would be matched over the whole graph and the subquery would run
    /// over their cross product (tens of millions of rows for four keys
    /// on a 50-node graph). The outer rows' keys all match the outer
    /// MATCH patterns, so `MATCH <those patterns> WITH DISTINCT <keys>`
    /// in front gives a superset of the outer key tuples, each once, at
    /// the cost of the outer match (see `constant_patterns` for what is
    /// left out: leaving out a constraint only widens the superset). A
    /// MATCH of their own keeps the subquery's rels free to equal the
    /// outer ones.
    fn key_source(
        &self,
        clauses: &[Clause],
        keys: &[SubqueryKey],
        span: Span,
    ) -> Option<Vec<Clause>> {
        if keys.len() < 2 {
            return None;
        }
        // Connected components of the subquery's pattern variables.
        let mut component: Vec<(String, usize)> = Vec::new();
        let mut next = 0;
        for c in clauses {
            let Clause::Match { patterns, .. } = c else {
                continue;
            };
            for p in patterns {
                let vars = pattern_variables(p);
                let found: BTreeSet<usize> = component
                    .iter()
                    .filter(|(n, _)| vars.contains(n))
                    .map(|(_, c)| *c)
                    .collect();
                let id = found.first().copied().unwrap_or_else(|| {
                    next += 1;
                    next
                });
                for entry in component.iter_mut() {
                    if found.contains(&entry.1) {
                        entry.1 = id;
                    }
                }
                for v in vars {
                    if !component.iter().any(|(n, _)| *n == v) {
                        component.push((v, id));
                    }
                }
            }
        }
        let key_components: BTreeSet<Option<usize>> = keys
            .iter()
            .map(|(k, _)| component.iter().find(|(n, _)| n == k).map(|(_, c)| *c))
            .collect();
        if key_components.len() < 2 && !key_components.contains(&None) {
            return None;
        }
        let key_names: BTreeSet<&str> = keys.iter().map(|k| k.0.as_str()).collect();
        let mut prefix = Vec::new();
        let mut bound = BTreeSet::new();
        for clause in &self.outer_patterns {
            let patterns: Vec<ast::PathPattern> = clause
                .iter()
                .flat_map(constant_patterns)
                .filter(|p| {
                    pattern_variables(p)
                        .iter()
                        .any(|v| key_names.contains(v.as_str()))
                })
                .collect();
            if patterns.is_empty() {
                continue;
            }
            patterns
                .iter()
                .for_each(|p| bound.extend(pattern_variables(p)));
            prefix.push(match_clause(patterns, None, span));
        }
        let items: Vec<ast::ProjectionItem> = keys
            .iter()
            .filter(|(k, _)| bound.contains(k))
            .map(|(k, _)| ast::ProjectionItem {
                expr: variable(k, span),
                alias: None,
                text: k.clone(),
            })
            .collect();
        if items.len() < 2 {
            return None;
        }
        let mut with = ast::Projection::plain(true, false, items, None, span);
        with.distinct = true;
        prefix.push(Clause::Projection(with));
        Some(prefix)
    }

    /// A node or rel variable of the outer query by that name.
    pub(super) fn outer_entity(&self, name: &str) -> Option<EntityKind> {
        if self.graph.nodes.iter().any(|n| n.name == name) {
            Some(EntityKind::Node)
        } else if self.graph.rels.iter().any(|r| r.name == name)
            || self.rels_carried.iter().any(|r| r.0 == name)
        {
            Some(EntityKind::Rel)
        } else {
            None
        }
    }

    /// A pattern predicate may not introduce variables: each named one must
    /// be an outer node or rel.
    fn check_pattern_predicate(&self, p: &ast::PathPattern) -> Result<()> {
        if let Some(v) = &p.variable {
            return Err(Error::at(
                ErrorKind::Syntax,
                v.span,
                format!("a pattern predicate cannot name its path ('{}')", v.name),
            ));
        }
        let nodes = std::iter::once(&p.start).chain(p.chain.iter().map(|(_, n)| n));
        let vars = nodes
            .filter_map(|n| n.variable.as_ref())
            .chain(p.chain.iter().filter_map(|(r, _)| r.variable.as_ref()));
        for v in vars {
            if self.outer_entity(&v.name).is_none() {
                return Err(Error::at(
                    ErrorKind::Syntax,
                    v.span,
                    format!(
                        "variable '{}' is not defined (a pattern predicate cannot introduce new variables)",
                        v.name
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn match_clause(patterns: Vec<ast::PathPattern>, where_: Option<ast::Expr>, span: Span) -> Clause {
    Clause::Match {
        optional: false,
        patterns,
        where_,
        span,
    }
}

fn variable(name: &str, span: Span) -> ast::Expr {
    ast::Expr {
        kind: ExprKind::Variable(name.to_string()),
        span,
    }
}

fn call(name: &str, args: Vec<ast::Expr>, span: Span) -> ast::Expr {
    ast::Expr {
        kind: ExprKind::Function {
            name: ast::Ident {
                name: name.to_string(),
                span,
            },
            distinct: false,
            star: false,
            args,
        },
        span,
    }
}

fn item(expr: ast::Expr, alias: &str, span: Span) -> ast::ProjectionItem {
    ast::ProjectionItem {
        expr,
        alias: Some(ast::Ident {
            name: alias.to_string(),
            span,
        }),
        text: alias.to_string(),
    }
}

/// `(name)` for a node key, `()-[name]->()` for a rel key.
fn entity_pattern(name: &str, kind: EntityKind, span: Span) -> ast::PathPattern {
    let ident = Some(ast::Ident {
        name: name.to_string(),
        span,
    });
    let node = |variable| ast::NodePattern {
        variable,
        labels: ast::LabelExpr::None,
        properties: None,
        where_: None,
        span,
    };
    match kind {
        EntityKind::Node => ast::PathPattern {
            variable: None,
            shortest: None,
            start: node(ident),
            chain: Vec::new(),
            span,
        },
        EntityKind::Rel => ast::PathPattern {
            variable: None,
            shortest: None,
            start: node(None),
            chain: vec![(
                ast::RelPattern {
                    variable: ident,
                    types: Vec::new(),
                    direction: ast::Direction::Right,
                    properties: None,
                    range: None,
                    where_: None,
                    span,
                },
                node(None),
            )],
            span,
        },
    }
}

fn names_in_clause(c: &Clause, out: &mut BTreeSet<String>) {
    match c {
        Clause::Match {
            patterns, where_, ..
        } => {
            patterns.iter().for_each(|p| names_in_pattern(p, out));
            where_.iter().for_each(|w| names_in_expr(w, out));
        }
        Clause::Unwind { expr, .. } => names_in_expr(expr, out),
        Clause::Projection(p) => {
            p.items.iter().for_each(|i| names_in_expr(&i.expr, out));
            p.order_by.iter().for_each(|s| names_in_expr(&s.expr, out));
            p.where_.iter().for_each(|w| names_in_expr(w, out));
        }
        _ => {}
    }
}

fn names_in_pattern(p: &ast::PathPattern, out: &mut BTreeSet<String>) {
    let node = |n: &ast::NodePattern, out: &mut BTreeSet<String>| {
        if let Some(v) = &n.variable {
            out.insert(v.name.clone());
        }
        n.properties.iter().for_each(|e| names_in_expr(e, out));
        n.where_.iter().for_each(|e| names_in_expr(e, out));
    };
    node(&p.start, out);
    for (r, n) in &p.chain {
        if let Some(v) = &r.variable {
            out.insert(v.name.clone());
        }
        r.properties.iter().for_each(|e| names_in_expr(e, out));
        r.where_.iter().for_each(|e| names_in_expr(e, out));
        node(n, out);
    }
}

/// The node and rel variables a pattern names (not those its property
/// maps or inline WHERE read).
pub(super) fn pattern_variables(p: &ast::PathPattern) -> BTreeSet<String> {
    let nodes = std::iter::once(&p.start).chain(p.chain.iter().map(|(_, n)| n));
    nodes
        .filter_map(|n| n.variable.as_ref())
        .chain(p.chain.iter().filter_map(|(r, _)| r.variable.as_ref()))
        .map(|v| v.name.clone())
        .collect()
}

/// `p` without its path name, shortest-path wrapper, inline WHERE, the
/// property maps that read variables and its var-length rels (split
/// there): what is left holds for every outer row, reads nothing the
/// subquery cannot see and costs no path search.
fn constant_patterns(p: &ast::PathPattern) -> Vec<ast::PathPattern> {
    let constant = |e: &Option<ast::Expr>| {
        e.as_ref()
            .filter(|e| {
                let mut names = BTreeSet::new();
                names_in_expr(e, &mut names);
                names.is_empty()
            })
            .cloned()
    };
    let node = |n: &ast::NodePattern| ast::NodePattern {
        properties: constant(&n.properties),
        where_: None,
        ..n.clone()
    };
    let start = |n: &ast::NodePattern| ast::PathPattern {
        variable: None,
        shortest: None,
        start: node(n),
        chain: Vec::new(),
        span: p.span,
    };
    let mut out = vec![start(&p.start)];
    for (r, n) in &p.chain {
        if r.range.is_some() {
            out.push(start(n));
            continue;
        }
        let rel = ast::RelPattern {
            properties: constant(&r.properties),
            where_: None,
            ..r.clone()
        };
        if let Some(last) = out.last_mut() {
            last.chain.push((rel, node(n)));
        }
    }
    out
}

fn names_in_query(q: &ast::SingleQuery, out: &mut BTreeSet<String>) {
    q.clauses.iter().for_each(|c| names_in_clause(c, out));
}

/// Every variable name `e` mentions (including those of nested subqueries).
fn names_in_expr(e: &ast::Expr, out: &mut BTreeSet<String>) {
    let mut rec = |x: &ast::Expr| names_in_expr(x, out);
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Parameter(_) => {}
        ExprKind::Variable(v) => {
            out.insert(v.clone());
        }
        ExprKind::Property(x, _)
        | ExprKind::Unary(_, x)
        | ExprKind::HasLabels(x, _)
        | ExprKind::Cast(x, _) => rec(x),
        ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => {
            rec(a);
            rec(b);
        }
        ExprKind::Function { args, .. } | ExprKind::List(args) => args.iter().for_each(rec),
        ExprKind::Map(items) => items.iter().for_each(|(_, x)| rec(x)),
        ExprKind::MapProjection(base, items) => {
            names_in_expr(base, out);
            for item in items {
                if let Some(x) = item.expr() {
                    names_in_expr(x, out);
                }
                if let Some(v) = item.variable() {
                    out.insert(v.name.clone());
                }
            }
        }
        ExprKind::Slice(x, a, b) => {
            rec(x);
            a.iter().chain(b).for_each(|y| rec(y));
        }
        ExprKind::Case {
            operand,
            whens,
            else_,
        } => {
            operand.iter().chain(else_).for_each(|y| rec(y));
            for (w, t) in whens {
                rec(w);
                rec(t);
            }
        }
        ExprKind::ListComprehension {
            list,
            predicate,
            projection,
            ..
        } => {
            rec(list);
            predicate.iter().chain(projection).for_each(|y| rec(y));
        }
        ExprKind::Quantifier {
            list, predicate, ..
        } => {
            rec(list);
            rec(predicate);
        }
        ExprKind::Reduce {
            init, list, expr, ..
        } => {
            rec(init);
            rec(list);
            rec(expr);
        }
        ExprKind::PatternPredicate(p) => names_in_pattern(p, out),
        ExprKind::PatternComprehension {
            pattern,
            predicate,
            projection,
        } => {
            names_in_pattern(pattern, out);
            predicate.iter().for_each(|y| names_in_expr(y, out));
            names_in_expr(projection, out);
        }
        ExprKind::Exists(q) | ExprKind::CountSubquery(q) => names_in_query(q, out),
    }
}

/// The top-level conjuncts of `w` that a subquery may copy to restrict its
/// keys: built from variables, their properties and labels, literals,
/// parameters and deterministic scalar functions only (no subquery, no
/// local variables, no aggregate, no `rand()`).
pub(super) fn key_filters(w: &ast::Expr) -> Vec<ast::Expr> {
    let mut out = Vec::new();
    let mut stack = vec![w];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Binary(BinaryOp::And, a, b) => {
                stack.push(b);
                stack.push(a);
            }
            _ if simple_filter(e) => out.push(e.clone()),
            _ => {}
        }
    }
    out
}

fn simple_filter(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Parameter(_) | ExprKind::Variable(_) => true,
        ExprKind::Property(x, _) | ExprKind::Unary(_, x) | ExprKind::HasLabels(x, _) => {
            simple_filter(x)
        }
        ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => simple_filter(a) && simple_filter(b),
        ExprKind::List(items) => items.iter().all(simple_filter),
        ExprKind::Function {
            name, star, args, ..
        } => {
            let lower = name.name.to_ascii_lowercase();
            // startNode/endNode of an undirected rel look a subquery up
            // (see `endpoint.rs`), which a copy must not restrict.
            !star
                && !functions::is_aggregate(&lower)
                && !matches!(lower.as_str(), "rand" | "startnode" | "endnode")
                && args.iter().all(simple_filter)
        }
        _ => false,
    }
}

/// A subquery may only read: MATCH, WITH, UNWIND and RETURN.
fn check_subquery_clauses(clauses: &[Clause]) -> Result<()> {
    for c in clauses {
        if !matches!(
            c,
            Clause::Match { .. } | Clause::Projection(_) | Clause::Unwind { .. }
        ) {
            return Err(not_supported(
                clause_span(c),
                "a subquery with clauses other than MATCH, WITH, UNWIND and RETURN",
            ));
        }
    }
    Ok(())
}

/// The keys are matched first (by a MATCH of their own in front, when the
/// subquery does not start with one), restricted by `restrict`; they are
/// then carried through every projection (see [`carry_keys`]).
fn match_keys_first(
    clauses: &mut Vec<Clause>,
    keys: &[SubqueryKey],
    restrict: Vec<ast::Expr>,
    span: Span,
) {
    if !matches!(
        clauses.first(),
        Some(Clause::Match {
            optional: false,
            ..
        })
    ) {
        clauses.insert(0, match_clause(Vec::new(), None, span));
    }
    let Clause::Match {
        patterns, where_, ..
    } = &mut clauses[0]
    else {
        return;
    };
    let mut bound = BTreeSet::new();
    for p in patterns.iter() {
        names_in_pattern(p, &mut bound);
    }
    for (name, kind) in keys {
        if !bound.contains(name) {
            patterns.push(entity_pattern(name, *kind, span));
        }
    }
    for c in restrict {
        let span = c.span;
        *where_ = Some(match where_.take() {
            None => c,
            Some(w) => ast::Expr {
                kind: ExprKind::Binary(BinaryOp::And, Box::new(w), Box::new(c)),
                span,
            },
        });
    }
}

/// A projection of the subquery as a WITH that also carries the keys (a
/// final RETURN becomes one: its rows are what the subquery counts or
/// tests).
fn carry_keys(mut p: ast::Projection, keys: &[SubqueryKey]) -> Result<ast::Projection> {
    if !keys.is_empty() && (p.skip.is_some() || p.limit.is_some() || !p.order_by.is_empty()) {
        return Err(not_supported(
            p.span,
            "ORDER BY, SKIP or LIMIT inside a subquery that uses outer variables",
        ));
    }
    if !p.is_with {
        // A WITH needs names: the RETURN's unnamed expressions (`RETURN
        // true`) get hidden ones.
        for (i, it) in p.items.iter_mut().enumerate() {
            let named = it.alias.is_some() || matches!(it.expr.kind, ExprKind::Variable(_));
            if !named {
                it.alias = Some(ast::Ident {
                    name: format!("_ret{i}"),
                    span: it.expr.span,
                });
            }
        }
    }
    p.is_with = true;
    if p.star {
        return Ok(p);
    }
    for (name, _) in keys {
        let projected = p.items.iter().any(|it| {
            let out = it.alias.as_ref().map(|a| &a.name);
            match &it.expr.kind {
                ExprKind::Variable(v) => out.unwrap_or(v) == name,
                _ => out == Some(name),
            }
        });
        if !projected {
            p.items.push(ast::ProjectionItem {
                expr: variable(name, p.span),
                alias: None,
                text: name.clone(),
            });
        }
    }
    Ok(p)
}

/// The items of the subquery's RETURN: `id(key)` of each key, then the
/// count or the list.
fn result_items(
    keys: &[SubqueryKey],
    kind: SubqueryKind,
    projection: Option<ast::Expr>,
    span: Span,
) -> Result<Vec<ast::ProjectionItem>> {
    let mut items: Vec<ast::ProjectionItem> = keys
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            item(
                call("id", vec![variable(name, span)], span),
                &format!("_key{i}"),
                span,
            )
        })
        .collect();
    items.push(match (kind, projection) {
        // A count per key, like COUNT { }: grouping lets the last extend
        // count rels instead of enumerating them (and a key without a
        // match has no row; the table keeps the rows counting more than
        // zero, so a subquery without keys says false on no match).
        (SubqueryKind::Exists | SubqueryKind::Count, _) => item(
            ast::Expr {
                kind: ExprKind::Function {
                    name: ast::Ident {
                        name: "count".to_string(),
                        span,
                    },
                    distinct: false,
                    star: true,
                    args: Vec::new(),
                },
                span,
            },
            "_count",
            span,
        ),
        (SubqueryKind::Collect, Some(p)) => item(call("collect", vec![p], span), "_list", span),
        (SubqueryKind::Collect, None) => {
            return Err(Error::internal("pattern comprehension without projection"))
        }
    });
    Ok(items)
}
