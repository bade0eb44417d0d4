//! Random read queries: a small AST that renders to Cypher, and a
//! generator that keeps every expression well typed over the schema.
//!
//! The AST is only as structured as the oracles and the minimizer need:
//! clauses, projections with their aggregates, and expressions as trees of
//! text pieces whose children the minimizer can hoist or replace.

use std::collections::BTreeSet;
use std::fmt;

use crate::graph::Graph;
use crate::rng::Rng;
use crate::schema::{common_node_props, common_rel_props, Lit, Prop, Schema, Ty};

/// A construct the generator can leave out (`--skip NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Construct {
    OptionalMatch,
    VarLength,
    VarLengthRelVar,
    NamedPath,
    NamedVarLengthPath,
    Undirected,
    MultiTypeRel,
    Unwind,
    With,
    WithWhereNewVar,
    Aggregation,
    Distinct,
    OrderLimit,
    Union,
    ListComprehension,
    PatternComprehension,
    PatternComprehensionNewVar,
    PatternComprehensionCorrelated,
    ExistsSubquery,
    CountSubquery,
    NestedSubquery,
    PatternPredicate,
    ListPredicate,
    Case,
}

impl Construct {
    pub const ALL: &'static [Construct] = &[
        Construct::OptionalMatch,
        Construct::VarLength,
        Construct::VarLengthRelVar,
        Construct::NamedPath,
        Construct::NamedVarLengthPath,
        Construct::Undirected,
        Construct::MultiTypeRel,
        Construct::Unwind,
        Construct::With,
        Construct::WithWhereNewVar,
        Construct::Aggregation,
        Construct::Distinct,
        Construct::OrderLimit,
        Construct::Union,
        Construct::ListComprehension,
        Construct::PatternComprehension,
        Construct::PatternComprehensionNewVar,
        Construct::PatternComprehensionCorrelated,
        Construct::ExistsSubquery,
        Construct::CountSubquery,
        Construct::NestedSubquery,
        Construct::PatternPredicate,
        Construct::ListPredicate,
        Construct::Case,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Construct::OptionalMatch => "optional-match",
            Construct::VarLength => "var-length",
            Construct::VarLengthRelVar => "var-length-rel-var",
            Construct::NamedPath => "named-path",
            Construct::NamedVarLengthPath => "named-var-length-path",
            Construct::Undirected => "undirected",
            Construct::MultiTypeRel => "multi-type-rel",
            Construct::Unwind => "unwind",
            Construct::With => "with",
            Construct::WithWhereNewVar => "with-where-new-var",
            Construct::Aggregation => "aggregation",
            Construct::Distinct => "distinct",
            Construct::OrderLimit => "order-limit",
            Construct::Union => "union",
            Construct::ListComprehension => "list-comprehension",
            Construct::PatternComprehension => "pattern-comprehension",
            Construct::PatternComprehensionNewVar => "pattern-comprehension-new-var",
            Construct::PatternComprehensionCorrelated => "pattern-comprehension-correlated",
            Construct::ExistsSubquery => "exists-subquery",
            Construct::CountSubquery => "count-subquery",
            Construct::NestedSubquery => "nested-subquery",
            Construct::PatternPredicate => "pattern-predicate",
            Construct::ListPredicate => "list-predicate",
            Construct::Case => "case",
        }
    }

    pub fn parse(name: &str) -> Option<Construct> {
        Construct::ALL.iter().copied().find(|c| c.name() == name)
    }
}

/// The constructs the CI campaigns skip, each for an engine bug it
/// currently hits within seconds of fuzzing. Empty: the var-length crashes
/// and the correlated subqueries' cross products it held are fixed (issue
/// 51); put a construct back here, with its bug, rather than let CI fail
/// on every run.
pub const CI_SKIP: &[Construct] = &[];

/// Which constructs the generator may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    pub skip: BTreeSet<Construct>,
}

impl Features {
    pub fn on(&self, c: Construct) -> bool {
        !self.skip.contains(&c)
    }

    /// What the CI campaigns leave out: constructs with open engine bugs
    /// that would fail every run (see the crate README for each bug).
    /// Shrink this list as the bugs are fixed.
    pub fn ci() -> Features {
        Features {
            skip: CI_SKIP.iter().copied().collect(),
        }
    }

    /// `a,b,c` into a set of constructs to skip.
    pub fn parse_skip(list: &str) -> Result<Features, String> {
        let mut skip = BTreeSet::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let c = Construct::parse(name).ok_or_else(|| {
                let known: Vec<&str> = Construct::ALL.iter().map(|c| c.name()).collect();
                format!("unknown construct '{name}' (known: {})", known.join(", "))
            })?;
            skip.insert(c);
        }
        Ok(Features { skip })
    }
}

/// An expression: text pieces interleaved with typed children.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub ty: Ty,
    pub kind: ExprKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// A literal, variable or property access.
    Atom(String),
    /// `parts[0] args[0] parts[1] ... parts[n]` (`parts.len() == args.len() + 1`).
    /// `binds`: the construct introduces variables its children use, so a
    /// child cannot stand in for it.
    Op {
        parts: Vec<String>,
        args: Vec<Expr>,
        binds: bool,
    },
}

impl Expr {
    pub fn atom(ty: Ty, text: impl Into<String>) -> Expr {
        Expr {
            ty,
            kind: ExprKind::Atom(text.into()),
        }
    }

    pub fn op(ty: Ty, parts: &[&str], args: Vec<Expr>) -> Expr {
        debug_assert_eq!(parts.len(), args.len() + 1);
        Expr {
            ty,
            kind: ExprKind::Op {
                parts: parts.iter().map(|s| s.to_string()).collect(),
                args,
                binds: false,
            },
        }
    }

    fn binder(ty: Ty, parts: Vec<String>, args: Vec<Expr>) -> Expr {
        debug_assert_eq!(parts.len(), args.len() + 1);
        Expr {
            ty,
            kind: ExprKind::Op {
                parts,
                args,
                binds: true,
            },
        }
    }

    pub fn negate(e: Expr) -> Expr {
        Expr::op(Ty::Bool, &["(NOT ", ")"], vec![e])
    }

    pub fn is_null(e: Expr) -> Expr {
        Expr::op(Ty::Bool, &["(", " IS NULL)"], vec![e])
    }

    /// A constant of the type, for the minimizer.
    pub fn simplest(ty: &Ty) -> Expr {
        let text = match ty {
            Ty::Int => "0",
            Ty::Dbl => "0.0",
            Ty::Str => "''",
            Ty::Bool => "true",
            Ty::List(e) if **e == Ty::Str => "['']",
            Ty::List(_) => "[0]",
        };
        Expr::atom(ty.clone(), text)
    }

    /// Number of nodes in the tree.
    pub fn size(&self) -> usize {
        match &self.kind {
            ExprKind::Atom(_) => 1,
            ExprKind::Op { args, .. } => 1 + args.iter().map(Expr::size).sum::<usize>(),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Atom(s) => write!(f, "{s}"),
            ExprKind::Op { parts, args, .. } => {
                for (i, p) in parts.iter().enumerate() {
                    write!(f, "{p}")?;
                    if let Some(a) = args.get(i) {
                        write!(f, "{a}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    CountStar,
    Count,
    CountDistinct,
    Sum,
    Min,
    Max,
    Avg,
    Collect,
}

/// What a projection item holds, for the oracles' and the generator's
/// bookkeeping.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemKind {
    /// A value of this type.
    Value(Ty),
    /// A node, rel or path variable passed through (`WITH n` / `RETURN n`).
    Entity(VarKind),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The expression, or an aggregate's argument (`count(*)`: ignored).
    pub expr: Expr,
    pub agg: Option<Agg>,
    pub alias: String,
    pub kind: ItemKind,
}

impl Item {
    pub fn render(&self) -> String {
        let body = match self.agg {
            None => self.expr.to_string(),
            Some(Agg::CountStar) => "count(*)".to_string(),
            Some(Agg::Count) => format!("count({})", self.expr),
            Some(Agg::CountDistinct) => format!("count(DISTINCT {})", self.expr),
            Some(Agg::Sum) => format!("sum({})", self.expr),
            Some(Agg::Min) => format!("min({})", self.expr),
            Some(Agg::Max) => format!("max({})", self.expr),
            Some(Agg::Avg) => format!("avg({})", self.expr),
            Some(Agg::Collect) => format!("collect({})", self.expr),
        };
        if body == self.alias {
            body
        } else {
            format!("{body} AS {}", self.alias)
        }
    }

    /// Scalar items can be ordered and compared exactly.
    pub fn is_scalar(&self) -> bool {
        matches!(&self.kind, ItemKind::Value(t) if !matches!(t, Ty::List(_)))
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Projection {
    pub distinct: bool,
    pub items: Vec<Item>,
    /// Item indexes and descending flags.
    pub order: Vec<(usize, bool)>,
    pub skip: Option<u32>,
    pub limit: Option<u32>,
}

impl Projection {
    pub fn has_agg(&self) -> bool {
        self.items.iter().any(|i| i.agg.is_some())
    }

    /// Every item is in the ORDER BY: the row order is total up to equal
    /// rows, so results compare as lists.
    pub fn fully_ordered(&self) -> bool {
        !self.items.is_empty() && (0..self.items.len()).all(|i| self.order.iter().any(|o| o.0 == i))
    }

    fn render(&self, keyword: &str) -> String {
        let mut s = format!("{keyword} ");
        if self.distinct {
            s.push_str("DISTINCT ");
        }
        let items: Vec<String> = self.items.iter().map(Item::render).collect();
        s.push_str(&items.join(", "));
        if !self.order.is_empty() {
            let keys: Vec<String> = self
                .order
                .iter()
                .map(|(i, desc)| {
                    format!(
                        "{}{}",
                        self.items[*i].alias,
                        if *desc { " DESC" } else { "" }
                    )
                })
                .collect();
            s.push_str(&format!(" ORDER BY {}", keys.join(", ")));
        }
        if let Some(k) = self.skip {
            s.push_str(&format!(" SKIP {k}"));
        }
        if let Some(k) = self.limit {
            s.push_str(&format!(" LIMIT {k}"));
        }
        s
    }

    /// Rows pass through one by one: no aggregate, DISTINCT, SKIP or LIMIT.
    pub fn is_row_wise(&self) -> bool {
        !self.distinct && !self.has_agg() && self.skip.is_none() && self.limit.is_none()
    }
}

/// One pattern of a MATCH, already rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    pub text: String,
    pub var_length: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Clause {
    Match {
        optional: bool,
        patterns: Vec<Pattern>,
        conds: Vec<Expr>,
    },
    Unwind {
        list: Expr,
        var: String,
    },
    With {
        proj: Projection,
        conds: Vec<Expr>,
    },
}

fn render_conds(conds: &[Expr]) -> String {
    match conds {
        [] => String::new(),
        [c] => format!(" WHERE {c}"),
        cs => {
            let parts: Vec<String> = cs.iter().map(|c| format!("({c})")).collect();
            format!(" WHERE {}", parts.join(" AND "))
        }
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clause::Match {
                optional,
                patterns,
                conds,
            } => {
                let pats: Vec<&str> = patterns.iter().map(|p| p.text.as_str()).collect();
                write!(
                    f,
                    "{}MATCH {}{}",
                    if *optional { "OPTIONAL " } else { "" },
                    pats.join(", "),
                    render_conds(conds)
                )
            }
            Clause::Unwind { list, var } => write!(f, "UNWIND {list} AS {var}"),
            Clause::With { proj, conds } => {
                write!(f, "{}{}", proj.render("WITH"), render_conds(conds))
            }
        }
    }
}

/// What a variable is bound to.
#[derive(Debug, Clone, PartialEq)]
pub enum VarKind {
    /// A node; the table when its label is written.
    Node(Option<usize>),
    /// A rel; the table when it has one type.
    Rel(Option<usize>),
    /// A variable-length rel (`-[r*1..2]->`).
    VarRel,
    /// A node from `UNWIND nodes(p)`: the engine treats it as a value, so
    /// only its properties are used (not in patterns or subqueries).
    UnwoundNode,
    Path,
    Value(Ty),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    pub name: String,
    pub kind: VarKind,
}

/// The variables visible at a point of a query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scope {
    pub vars: Vec<Var>,
}

impl Scope {
    fn nodes(&self) -> Vec<&Var> {
        self.vars
            .iter()
            .filter(|v| matches!(v.kind, VarKind::Node(_)))
            .collect()
    }

    fn with(&self, extra: &[Var]) -> Scope {
        let mut s = self.clone();
        s.vars.extend(extra.iter().cloned());
        s
    }
}

/// The node and rel variables of `scope`: what a subquery or a pattern
/// comprehension may use from outside (the engine decorrelates them on
/// entities only).
fn entities(scope: &Scope) -> Scope {
    Scope {
        vars: scope
            .vars
            .iter()
            .filter(|v| matches!(v.kind, VarKind::Node(_) | VarKind::Rel(_)))
            .cloned()
            .collect(),
    }
}

/// A read query: clauses, the final RETURN, and perhaps a UNION branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub clauses: Vec<Clause>,
    pub ret: Projection,
    /// `(all, branch)`: `UNION ALL` when `all`.
    pub union: Option<(bool, Box<Query>)>,
    /// The scope after each clause (same length as `clauses`).
    pub scopes: Vec<Scope>,
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.clauses {
            write!(f, "{c} ")?;
        }
        write!(f, "{}", self.ret.render("RETURN"))?;
        if let Some((all, q)) = &self.union {
            write!(f, " UNION {}{q}", if *all { "ALL " } else { "" })?;
        }
        Ok(())
    }
}

impl Query {
    /// Whether some expression of the query (subquery bodies and every
    /// branch of a UNION included) satisfies `hit`.
    pub fn any_expr(&self, hit: &dyn Fn(&Expr) -> bool) -> bool {
        fn deep(e: &Expr, hit: &dyn Fn(&Expr) -> bool) -> bool {
            hit(e)
                || match &e.kind {
                    ExprKind::Atom(_) => false,
                    ExprKind::Op { args, .. } => args.iter().any(|a| deep(a, hit)),
                }
        }
        let items = |p: &Projection| p.items.iter().any(|i| deep(&i.expr, hit));
        let here = self.clauses.iter().any(|c| match c {
            Clause::Match { conds, .. } => conds.iter().any(|e| deep(e, hit)),
            Clause::Unwind { list, .. } => deep(list, hit),
            Clause::With { proj, conds } => items(proj) || conds.iter().any(|e| deep(e, hit)),
        }) || items(&self.ret);
        here || self.union.as_ref().is_some_and(|(_, q)| q.any_expr(hit))
    }

    pub fn has_var_length(&self) -> bool {
        let here = self.clauses.iter().any(|c| match c {
            Clause::Match { patterns, .. } => patterns.iter().any(|p| p.var_length),
            _ => false,
        });
        here || self.union.as_ref().is_some_and(|(_, q)| q.has_var_length())
    }

    /// Results compare as lists (the whole query is ordered on every column).
    pub fn ordered(&self) -> bool {
        self.union.is_none() && self.ret.fully_ordered()
    }

    /// Clause indexes where a predicate filters whole rows and everything
    /// after passes rows through one by one (MATCH, OPTIONAL MATCH, UNWIND,
    /// plain WITH): the TLP and NoREC oracles put their predicate there.
    pub fn filter_points(&self) -> Vec<usize> {
        if self.union.is_some() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for i in (0..self.clauses.len()).rev() {
            match &self.clauses[i] {
                Clause::Match {
                    optional: false, ..
                } => out.push(i),
                Clause::With { proj, .. } => {
                    out.push(i);
                    if !proj.is_row_wise() {
                        break;
                    }
                }
                _ => {}
            }
        }
        out.reverse();
        out
    }

    /// True when no WITH follows clause `at` (its variables are still in
    /// scope at the RETURN).
    pub fn no_with_after(&self, at: usize) -> bool {
        !self.clauses[at + 1..]
            .iter()
            .any(|c| matches!(c, Clause::With { .. }))
    }

    /// Adds a condition to the WHERE of clause `at` (a MATCH or a WITH).
    pub fn add_cond(&mut self, at: usize, cond: Expr) {
        match &mut self.clauses[at] {
            Clause::Match { conds, .. } | Clause::With { conds, .. } => conds.push(cond),
            Clause::Unwind { .. } => {}
        }
    }
}

/// Generates queries over one graph.
pub struct Gen<'a> {
    schema: &'a Schema,
    graph: &'a Graph,
    features: &'a Features,
    pub rng: Rng,
    next_var: usize,
    /// Hops in the query so far (keeps results small).
    hops: usize,
    /// Generating the WHERE of a clause: pattern predicates are allowed.
    in_where: bool,
    /// Inside a subquery or pattern comprehension.
    nested: u32,
    /// The outer variable the last subquery pattern starts from.
    last_anchor: Option<Var>,
}

const CMP_OPS: &[&str] = &["=", "<>", "<", "<=", ">", ">="];

impl<'a> Gen<'a> {
    pub fn new(graph: &'a Graph, features: &'a Features, seed: u64) -> Gen<'a> {
        Gen {
            schema: &graph.schema,
            graph,
            features,
            rng: Rng::new(seed),
            next_var: 0,
            hops: 0,
            in_where: false,
            nested: 0,
            last_anchor: None,
        }
    }

    /// Subqueries and pattern comprehensions are allowed here.
    fn subquery_ok(&self) -> bool {
        self.nested == 0 || self.on(Construct::NestedSubquery) && self.nested < 2
    }

    fn on(&self, c: Construct) -> bool {
        self.features.on(c)
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next_var += 1;
        format!("{prefix}{}", self.next_var)
    }

    // ----- queries and clauses -----

    pub fn query(&mut self) -> Query {
        self.hops = 0;
        let mut q = self.single_query(None);
        if self.on(Construct::Union) && self.rng.chance(0.08) {
            let kinds: Vec<Ty> = q
                .ret
                .items
                .iter()
                .map(|i| match &i.kind {
                    ItemKind::Value(t) => t.clone(),
                    ItemKind::Entity(_) => Ty::Int,
                })
                .collect();
            if q.ret.items.iter().all(|i| i.is_scalar()) && q.ret.order.is_empty() {
                self.hops = 0;
                let aliases: Vec<String> = q.ret.items.iter().map(|i| i.alias.clone()).collect();
                let branch = self.single_query(Some((&kinds, &aliases)));
                q.ret.skip = None;
                q.ret.limit = None;
                q.union = Some((self.rng.chance(0.5), Box::new(branch)));
            }
        }
        q
    }

    /// A query without UNION; `shape`: the RETURN column types and aliases
    /// a UNION branch must have.
    fn single_query(&mut self, shape: Option<(&[Ty], &[String])>) -> Query {
        let mut scope = Scope::default();
        let mut clauses = Vec::new();
        let mut scopes = Vec::new();
        let n = 1 + self.rng.weighted(&[4, 4, 2, 1]);
        for i in 0..n {
            let clause = if i == 0 {
                if self.on(Construct::Unwind) && self.rng.chance(0.07) {
                    self.unwind(&mut scope)
                } else {
                    self.match_clause(&mut scope, false)
                }
            } else {
                let w = [
                    35,
                    if self.on(Construct::OptionalMatch) {
                        30
                    } else {
                        0
                    },
                    if self.on(Construct::With) { 20 } else { 0 },
                    if self.on(Construct::Unwind) { 12 } else { 0 },
                ];
                match self.rng.weighted(&w) {
                    0 => self.match_clause(&mut scope, false),
                    1 => self.match_clause(&mut scope, true),
                    2 => self.with_clause(&mut scope),
                    _ => self.unwind(&mut scope),
                }
            };
            clauses.push(clause);
            scopes.push(scope.clone());
        }
        let ret = match shape {
            Some((types, aliases)) => {
                let items = types
                    .iter()
                    .zip(aliases)
                    .map(|(t, a)| Item {
                        expr: self.expr(&scope, t, 2),
                        agg: None,
                        alias: a.clone(),
                        kind: ItemKind::Value(t.clone()),
                    })
                    .collect();
                Projection {
                    items,
                    ..Projection::default()
                }
            }
            None => self.projection(&scope, true).0,
        };
        Query {
            clauses,
            ret,
            union: None,
            scopes,
        }
    }

    fn match_clause(&mut self, scope: &mut Scope, optional: bool) -> Clause {
        let mut new_vars = Vec::new();
        let mut patterns = vec![self.pattern(scope, &mut new_vars, true)];
        if self.hops < 3 && self.rng.chance(0.25) {
            let s = scope.with(&new_vars);
            let mut more = Vec::new();
            patterns.push(self.pattern(&s, &mut more, true));
            new_vars.extend(more);
        }
        scope.vars.extend(new_vars);
        let mut conds = Vec::new();
        self.in_where = true;
        if self.rng.chance(0.55) {
            conds.push(self.expr(scope, &Ty::Bool, 3));
            if self.rng.chance(0.2) {
                conds.push(self.expr(scope, &Ty::Bool, 2));
            }
        }
        self.in_where = false;
        Clause::Match {
            optional,
            patterns,
            conds,
        }
    }

    fn unwind(&mut self, scope: &mut Scope) -> Clause {
        let paths: Vec<String> = scope
            .vars
            .iter()
            .filter(|v| v.kind == VarKind::Path)
            .map(|v| v.name.clone())
            .collect();
        let var = self.fresh("u");
        if !paths.is_empty() && self.rng.chance(0.3) {
            let p = self.rng.pick(&paths).clone();
            scope.vars.push(Var {
                name: var.clone(),
                kind: VarKind::UnwoundNode,
            });
            return Clause::Unwind {
                list: Expr::atom(Ty::List(Box::new(Ty::Int)), format!("nodes({p})")),
                var,
            };
        }
        let elem = if self.rng.chance(0.7) {
            Ty::Int
        } else {
            Ty::Str
        };
        let list = self.expr(scope, &Ty::List(Box::new(elem.clone())), 2);
        scope.vars.push(Var {
            name: var.clone(),
            kind: VarKind::Value(elem),
        });
        Clause::Unwind { list, var }
    }

    fn with_clause(&mut self, scope: &mut Scope) -> Clause {
        let (proj, new_scope) = self.projection(scope, false);
        let passed: Vec<Var> = new_scope
            .vars
            .iter()
            .filter(|v| {
                proj.items
                    .iter()
                    .any(|i| i.agg.is_none() && i.expr.to_string() == v.name)
            })
            .cloned()
            .collect();
        *scope = new_scope;
        let mut conds = Vec::new();
        if self.rng.chance(0.35) {
            let cond_scope = if self.on(Construct::WithWhereNewVar) {
                scope.clone()
            } else {
                Scope { vars: passed }
            };
            if !cond_scope.vars.is_empty() {
                self.in_where = true;
                conds.push(self.expr(&cond_scope, &Ty::Bool, 2));
                self.in_where = false;
            }
        }
        Clause::With { proj, conds }
    }

    /// A RETURN (`final_`) or WITH projection over `scope` and the scope
    /// after it.
    fn projection(&mut self, scope: &Scope, final_: bool) -> (Projection, Scope) {
        let mut items: Vec<Item> = Vec::new();
        let mut out = Scope::default();
        let aggregate = self.on(Construct::Aggregation) && self.rng.chance(0.3);
        let entities: Vec<Var> = scope
            .vars
            .iter()
            .filter(|v| !matches!(v.kind, VarKind::Value(_)))
            .cloned()
            .collect();
        // WITH passes some entities through so later clauses can use them.
        if !final_ {
            for v in &entities {
                if matches!(v.kind, VarKind::Node(_)) && self.rng.chance(0.6)
                    || !matches!(v.kind, VarKind::Node(_)) && self.rng.chance(0.2)
                {
                    items.push(Item {
                        expr: Expr::atom(Ty::Int, v.name.clone()),
                        agg: None,
                        alias: v.name.clone(),
                        kind: ItemKind::Entity(v.kind.clone()),
                    });
                    out.vars.push(v.clone());
                }
            }
        } else if !entities.is_empty() && !aggregate && self.rng.chance(0.1) {
            let v = self.rng.pick(&entities).clone();
            items.push(Item {
                expr: Expr::atom(Ty::Int, v.name.clone()),
                agg: None,
                alias: v.name.clone(),
                kind: ItemKind::Entity(v.kind.clone()),
            });
        }
        let keys = if aggregate {
            self.rng.below(3)
        } else {
            1 + self.rng.below(3)
        };
        for _ in 0..keys {
            let ty = self.value_type(!aggregate);
            let expr = self.expr(scope, &ty, 2);
            let alias = self.fresh("v");
            items.push(Item {
                expr,
                agg: None,
                alias: alias.clone(),
                kind: ItemKind::Value(ty.clone()),
            });
            out.vars.push(Var {
                name: alias,
                kind: VarKind::Value(ty),
            });
        }
        if aggregate {
            for _ in 0..1 + self.rng.below(2) {
                let (agg, arg, ty) = self.aggregate(scope, final_);
                let alias = self.fresh("v");
                items.push(Item {
                    expr: arg,
                    agg: Some(agg),
                    alias: alias.clone(),
                    kind: ItemKind::Value(ty.clone()),
                });
                out.vars.push(Var {
                    name: alias,
                    kind: VarKind::Value(ty),
                });
            }
        }
        let mut proj = Projection {
            items,
            ..Projection::default()
        };
        // DISTINCT only over scalars: lists of unspecified order could
        // differ between runs and split groups.
        if self.on(Construct::Distinct)
            && !aggregate
            && proj.items.iter().all(|i| i.is_scalar())
            && self.rng.chance(0.15)
        {
            proj.distinct = true;
        }
        if self.on(Construct::OrderLimit)
            && proj.items.iter().all(|i| i.is_scalar())
            && self.rng.chance(0.3)
        {
            let mut idx: Vec<usize> = (0..proj.items.len()).collect();
            for i in (1..idx.len()).rev() {
                let j = self.rng.below(i + 1);
                idx.swap(i, j);
            }
            proj.order = idx.into_iter().map(|i| (i, self.rng.chance(0.4))).collect();
            if self.rng.chance(0.3) {
                proj.skip = Some(self.rng.below(4) as u32);
            }
            if self.rng.chance(0.6) {
                proj.limit = Some(self.rng.below(10) as u32);
            }
        }
        (proj, out)
    }

    fn aggregate(&mut self, scope: &Scope, final_: bool) -> (Agg, Expr, Ty) {
        let choice = self
            .rng
            .weighted(&[4, 3, 1, 3, 2, 2, 2, if final_ { 2 } else { 0 }]);
        match choice {
            0 => (Agg::CountStar, Expr::atom(Ty::Int, "*"), Ty::Int),
            1 | 2 => {
                let ty = self.value_type(false);
                let e = self.expr(scope, &ty, 2);
                let agg = if choice == 1 {
                    Agg::Count
                } else {
                    Agg::CountDistinct
                };
                (agg, e, Ty::Int)
            }
            3 | 6 => {
                let ty = if self.rng.chance(0.6) {
                    Ty::Int
                } else {
                    Ty::Dbl
                };
                let e = self.expr(scope, &ty, 2);
                if choice == 3 {
                    (Agg::Sum, e, ty)
                } else {
                    (Agg::Avg, e, Ty::Dbl)
                }
            }
            4 | 5 => {
                let ty = self.value_type(false);
                let e = self.expr(scope, &ty, 2);
                (if choice == 4 { Agg::Min } else { Agg::Max }, e, ty)
            }
            _ => {
                let ty = self.value_type(false);
                let e = self.expr(scope, &ty, 1);
                (Agg::Collect, e, Ty::List(Box::new(ty)))
            }
        }
    }

    /// A scalar type, or sometimes a list.
    fn value_type(&mut self, lists: bool) -> Ty {
        match self.rng.weighted(&[5, 2, 3, 2, if lists { 1 } else { 0 }]) {
            0 => Ty::Int,
            1 => Ty::Dbl,
            2 => Ty::Str,
            3 => Ty::Bool,
            _ => Ty::List(Box::new(Ty::Int)),
        }
    }

    // ----- patterns -----

    /// A node pattern for a node of `table` (`None`: any table); returns
    /// its text and the table whose label it wrote.
    fn node_pattern(
        &mut self,
        table: Option<usize>,
        name: Option<&str>,
    ) -> (String, Option<usize>) {
        let label = match table {
            Some(t) if self.rng.chance(0.6) => Some(t),
            None if self.rng.chance(0.6) => Some(self.rng.below(self.schema.nodes.len())),
            _ => None,
        };
        let mut s = String::from("(");
        if let Some(n) = name {
            s.push_str(n);
        }
        if let Some(t) = label {
            s.push(':');
            s.push_str(&self.schema.nodes[t].name);
            if self.rng.chance(0.1) {
                let ids = self.graph.ids(t);
                if !ids.is_empty() && self.rng.chance(0.7) {
                    s.push_str(&format!(" {{id: {}}}", self.rng.pick(&ids)));
                } else {
                    s.push_str(&format!(" {{a: {}}}", self.rng.range(-10, 30)));
                }
            }
        }
        s.push(')');
        (s, label)
    }

    fn pattern(&mut self, scope: &Scope, new_vars: &mut Vec<Var>, allow_path: bool) -> Pattern {
        let reusable: Vec<Var> = scope.nodes().into_iter().cloned().collect();
        let mut text = String::new();
        // The start: an existing node variable or a new one.
        let (mut cur_table, start) = if !reusable.is_empty() && self.rng.chance(0.75) {
            let v = self.rng.pick(&reusable).clone();
            let t = match v.kind {
                VarKind::Node(t) => t,
                _ => None,
            };
            (t, format!("({})", v.name))
        } else {
            let name = self.fresh("n");
            let (s, label) = self.node_pattern(None, Some(&name));
            new_vars.push(Var {
                name,
                kind: VarKind::Node(label),
            });
            (label, s)
        };
        text.push_str(&start);
        let hops = 1 + self.rng.weighted(&[6, 3, 1]);
        let hops = if self.hops >= 3 { 1 } else { hops };
        let mut var_length = false;
        for _ in 0..hops {
            self.hops += 1;
            let (rel, next_table, vl) = self.rel_pattern(cur_table, new_vars);
            var_length |= vl;
            text.push_str(&rel);
            // The end: sometimes an existing variable (cycles, self loops).
            let reuse: Vec<Var> = reusable
                .iter()
                .chain(new_vars.iter())
                .filter(|v| match v.kind {
                    VarKind::Node(t) => t.is_none() || t == next_table || next_table.is_none(),
                    _ => false,
                })
                .cloned()
                .collect();
            if !reuse.is_empty() && self.rng.chance(0.12) {
                let v = self.rng.pick(&reuse).clone();
                text.push_str(&format!("({})", v.name));
                cur_table = match v.kind {
                    VarKind::Node(t) => t.or(next_table),
                    _ => next_table,
                };
            } else if self.rng.chance(0.75) {
                let name = self.fresh("n");
                let (s, label) = self.node_pattern(next_table, Some(&name));
                text.push_str(&s);
                new_vars.push(Var {
                    name,
                    kind: VarKind::Node(label),
                });
                cur_table = label.or(next_table);
            } else {
                let (s, label) = self.node_pattern(next_table, None);
                text.push_str(&s);
                cur_table = label.or(next_table);
            }
        }
        let named_ok = if var_length {
            self.on(Construct::NamedVarLengthPath)
        } else {
            self.on(Construct::NamedPath)
        };
        if allow_path && named_ok && self.rng.chance(0.2) {
            let p = self.fresh("p");
            text = format!("{p} = {text}");
            new_vars.push(Var {
                name: p,
                kind: VarKind::Path,
            });
        }
        Pattern { text, var_length }
    }

    /// A rel pattern leaving a node of `cur` (`None`: unknown table): its
    /// text, the table of the node it reaches (when known) and whether it
    /// is variable-length.
    fn rel_pattern(
        &mut self,
        cur: Option<usize>,
        new_vars: &mut Vec<Var>,
    ) -> (String, Option<usize>, bool) {
        // (rel table, direction 0:-> 1:<- 2:-, next table)
        let mut options: Vec<(usize, u8, Option<usize>)> = Vec::new();
        for (i, rt) in self.schema.rels.iter().enumerate() {
            if cur.is_none() || cur == Some(rt.from) {
                options.push((i, 0, Some(rt.to)));
            }
            if cur.is_none() || cur == Some(rt.to) {
                options.push((i, 1, Some(rt.from)));
            }
            if self.on(Construct::Undirected) {
                if cur == Some(rt.from) {
                    options.push((i, 2, Some(rt.to)));
                } else if cur == Some(rt.to) {
                    options.push((i, 2, Some(rt.from)));
                } else if cur.is_none() {
                    options.push((i, 2, if rt.from == rt.to { Some(rt.to) } else { None }));
                }
            }
        }
        let arrows = |dir: u8| match dir {
            0 => ("-", "->"),
            1 => ("<-", "-"),
            _ => ("-", "-"),
        };
        let var_length = self.on(Construct::VarLength) && self.rng.chance(0.2);
        let kind = self.rng.weighted(&[
            8,
            1,
            if self.on(Construct::MultiTypeRel) {
                1
            } else {
                0
            },
        ]);
        let (types, table, dir, next) = if kind == 0 && !options.is_empty() {
            let (t, dir, next) = *self.rng.pick(&options);
            (format!(":{}", self.schema.rels[t].name), Some(t), dir, next)
        } else if kind == 2 && self.schema.rels.len() >= 2 {
            let a = self.rng.below(self.schema.rels.len());
            let b = (a + 1 + self.rng.below(self.schema.rels.len() - 1)) % self.schema.rels.len();
            let dir = self
                .rng
                .below(if self.on(Construct::Undirected) { 3 } else { 2 })
                as u8;
            (
                format!(":{}|{}", self.schema.rels[a].name, self.schema.rels[b].name),
                None,
                dir,
                None,
            )
        } else {
            let dir = self
                .rng
                .below(if self.on(Construct::Undirected) { 3 } else { 2 })
                as u8;
            (String::new(), None, dir, None)
        };
        let (left, right) = arrows(dir);
        let mut inner = String::new();
        if var_length {
            let lo = if self.rng.chance(0.3) { 0 } else { 1 };
            let hi = 1 + self.rng.below(if self.hops > 2 { 1 } else { 2 });
            let hi = hi.max(lo.max(1));
            if self.on(Construct::VarLengthRelVar) && self.rng.chance(0.25) {
                let name = self.fresh("r");
                inner.push_str(&name);
                new_vars.push(Var {
                    name,
                    kind: VarKind::VarRel,
                });
            }
            inner.push_str(&types);
            inner.push_str(&format!("*{lo}..{hi}"));
        } else {
            if self.rng.chance(0.45) {
                let name = self.fresh("r");
                inner.push_str(&name);
                new_vars.push(Var {
                    name,
                    kind: VarKind::Rel(table),
                });
            }
            inner.push_str(&types);
            if self.rng.chance(0.08) {
                inner.push_str(&format!(" {{w: {}}}", self.rng.range(-10, 30)));
            }
        }
        let text = if inner.is_empty() && self.rng.chance(0.3) {
            format!("{left}{right}")
        } else {
            format!("{left}[{inner}]{right}")
        };
        (text, next, var_length)
    }

    // ----- expressions -----

    fn node_props(&self, table: Option<usize>) -> Vec<Prop> {
        match table {
            Some(t) => self.schema.nodes[t].props.clone(),
            None => common_node_props(),
        }
    }

    fn rel_props(&self, table: Option<usize>) -> Vec<Prop> {
        match table {
            Some(t) => self.schema.rels[t].props.clone(),
            None => common_rel_props(),
        }
    }

    /// Variables, properties and path lengths of type `ty` in `scope`.
    fn atoms(&self, scope: &Scope, ty: &Ty) -> Vec<String> {
        let mut out = Vec::new();
        for v in &scope.vars {
            match &v.kind {
                VarKind::Node(_) | VarKind::UnwoundNode => {
                    let t = match v.kind {
                        VarKind::Node(t) => t,
                        _ => None,
                    };
                    for p in self.node_props(t) {
                        if &p.ty == ty {
                            out.push(format!("{}.{}", v.name, p.name));
                        }
                    }
                }
                VarKind::Rel(t) => {
                    for p in self.rel_props(*t) {
                        if &p.ty == ty {
                            out.push(format!("{}.{}", v.name, p.name));
                        }
                    }
                }
                VarKind::Path if *ty == Ty::Int => out.push(format!("length({})", v.name)),
                VarKind::VarRel if *ty == Ty::Int => out.push(format!("length({})", v.name)),
                VarKind::Value(t) if t == ty => out.push(v.name.clone()),
                _ => {}
            }
        }
        out
    }

    fn literal(&mut self, ty: &Ty) -> Expr {
        match ty {
            Ty::List(e) => {
                let n = self.rng.below(4);
                let items: Vec<String> = (0..n)
                    .map(|_| Lit::random_or_null(&mut self.rng, e, 0.1).to_string())
                    .collect();
                if items.is_empty() {
                    // An empty literal has no element type; give it one.
                    return Expr::atom(ty.clone(), if **e == Ty::Str { "['a']" } else { "[1]" });
                }
                Expr::atom(ty.clone(), format!("[{}]", items.join(", ")))
            }
            Ty::Int if self.rng.chance(0.3) => {
                // A key that exists, so equalities hit.
                let ids: Vec<i64> = self.graph.nodes.iter().map(|n| n.id).collect();
                Expr::atom(Ty::Int, self.rng.pick(&ids).to_string())
            }
            _ => Expr::atom(ty.clone(), Lit::random(&mut self.rng, ty).to_string()),
        }
    }

    /// An expression of type `ty` over `scope`, at most `depth` deep.
    pub fn expr(&mut self, scope: &Scope, ty: &Ty, depth: u32) -> Expr {
        if depth == 0 || self.rng.chance(0.25) {
            return self.leaf(scope, ty);
        }
        let d = depth - 1;
        match ty {
            Ty::Int => self.int_expr(scope, d),
            Ty::Dbl => self.dbl_expr(scope, d),
            Ty::Str => self.str_expr(scope, d),
            Ty::Bool => self.bool_expr(scope, d),
            Ty::List(e) => self.list_expr(scope, e, d),
        }
    }

    fn leaf(&mut self, scope: &Scope, ty: &Ty) -> Expr {
        let atoms = self.atoms(scope, ty);
        if !atoms.is_empty() && self.rng.chance(0.7) {
            let a = self.rng.pick(&atoms).clone();
            return Expr::atom(ty.clone(), a);
        }
        if *ty == Ty::Bool && self.rng.chance(0.05) {
            return Expr::atom(Ty::Bool, "NULL");
        }
        self.literal(ty)
    }

    fn case(&mut self, scope: &Scope, ty: &Ty, d: u32) -> Expr {
        let c = self.expr(scope, &Ty::Bool, d);
        let a = self.expr(scope, ty, d);
        if self.rng.chance(0.3) {
            return Expr::op(ty.clone(), &["CASE WHEN ", " THEN ", " END"], vec![c, a]);
        }
        let b = self.expr(scope, ty, d);
        Expr::op(
            ty.clone(),
            &["CASE WHEN ", " THEN ", " ELSE ", " END"],
            vec![c, a, b],
        )
    }

    fn int_expr(&mut self, scope: &Scope, d: u32) -> Expr {
        let w = [
            4,                                            // arithmetic
            1,                                            // modulo
            1,                                            // abs/sign
            1,                                            // size(string)
            1,                                            // size(list)
            1,                                            // coalesce
            if self.on(Construct::Case) { 1 } else { 0 }, // CASE
            if self.on(Construct::CountSubquery) && self.subquery_ok() && !scope.nodes().is_empty()
            {
                1
            } else {
                0
            },
            1, // unary minus / toInteger
        ];
        match self.rng.weighted(&w) {
            0 => {
                let op = *self.rng.pick(&[" + ", " - ", " * "]);
                let a = self.expr(scope, &Ty::Int, d);
                let b = if op == " * " {
                    self.leaf(scope, &Ty::Int)
                } else {
                    self.expr(scope, &Ty::Int, d)
                };
                Expr::op(Ty::Int, &["(", op, ")"], vec![a, b])
            }
            1 => {
                let a = self.expr(scope, &Ty::Int, d);
                let k = *self.rng.pick(&[2, 3, 5, -3]);
                let op = if self.rng.chance(0.5) { " % " } else { " / " };
                Expr::op(Ty::Int, &["(", &format!("{op}{k})")], vec![a])
            }
            2 => {
                let f = *self.rng.pick(&["abs(", "sign("]);
                let a = self.expr(scope, &Ty::Int, d);
                Expr::op(Ty::Int, &[f, ")"], vec![a])
            }
            3 => {
                let a = self.expr(scope, &Ty::Str, d);
                Expr::op(Ty::Int, &["size(", ")"], vec![a])
            }
            4 => {
                let e = if self.rng.chance(0.7) {
                    Ty::Int
                } else {
                    Ty::Str
                };
                let a = self.expr(scope, &Ty::List(Box::new(e)), d);
                Expr::op(Ty::Int, &["size(", ")"], vec![a])
            }
            5 => {
                let a = self.expr(scope, &Ty::Int, d);
                let b = self.literal(&Ty::Int);
                Expr::op(Ty::Int, &["coalesce(", ", ", ")"], vec![a, b])
            }
            6 => self.case(scope, &Ty::Int, d),
            7 => self.count_subquery(scope, d),
            _ => {
                if self.rng.chance(0.5) {
                    let a = self.expr(scope, &Ty::Int, d);
                    Expr::op(Ty::Int, &["(- ", ")"], vec![a])
                } else {
                    let a = self.expr(scope, &Ty::Dbl, d);
                    Expr::op(Ty::Int, &["toInteger(", ")"], vec![a])
                }
            }
        }
    }

    fn dbl_expr(&mut self, scope: &Scope, d: u32) -> Expr {
        match self
            .rng
            .weighted(&[4, 1, 1, 1, 1, if self.on(Construct::Case) { 1 } else { 0 }])
        {
            0 => {
                let op = *self.rng.pick(&[" + ", " - ", " * "]);
                let a = self.expr(scope, &Ty::Dbl, d);
                let bt = if self.rng.chance(0.3) {
                    Ty::Int
                } else {
                    Ty::Dbl
                };
                let b = if op == " * " {
                    self.leaf(scope, &bt)
                } else {
                    self.expr(scope, &bt, d)
                };
                if self.rng.chance(0.5) {
                    Expr::op(Ty::Dbl, &["(", op, ")"], vec![a, b])
                } else {
                    Expr::op(Ty::Dbl, &["(", op, ")"], vec![b, a])
                }
            }
            1 => {
                let a = self.expr(scope, &Ty::Dbl, d);
                let k = *self.rng.pick(&["2", "0.5", "-4.0"]);
                Expr::op(Ty::Dbl, &["(", &format!(" / {k})")], vec![a])
            }
            2 => {
                let a = self.expr(scope, &Ty::Dbl, d);
                Expr::op(Ty::Dbl, &["abs(", ")"], vec![a])
            }
            3 => {
                let a = self.expr(scope, &Ty::Int, d);
                Expr::op(Ty::Dbl, &["toFloat(", ")"], vec![a])
            }
            4 => {
                let a = self.expr(scope, &Ty::Dbl, d);
                let b = self.literal(&Ty::Dbl);
                Expr::op(Ty::Dbl, &["coalesce(", ", ", ")"], vec![a, b])
            }
            _ => self.case(scope, &Ty::Dbl, d),
        }
    }

    fn str_expr(&mut self, scope: &Scope, d: u32) -> Expr {
        match self.rng.weighted(&[
            3,
            2,
            2,
            2,
            1,
            1,
            if self.on(Construct::Case) { 1 } else { 0 },
        ]) {
            0 => {
                let f = *self
                    .rng
                    .pick(&["upper(", "lower(", "trim(", "reverse(", "ltrim("]);
                let a = self.expr(scope, &Ty::Str, d);
                Expr::op(Ty::Str, &[f, ")"], vec![a])
            }
            1 => {
                let a = self.expr(scope, &Ty::Str, d);
                let (s, l) = (self.rng.below(3), self.rng.below(4));
                if self.rng.chance(0.5) {
                    Expr::op(Ty::Str, &["substring(", &format!(", {s}, {l})")], vec![a])
                } else {
                    let f = *self.rng.pick(&["left(", "right("]);
                    Expr::op(Ty::Str, &[f, &format!(", {l})")], vec![a])
                }
            }
            2 => {
                let a = self.expr(scope, &Ty::Str, d);
                let b = self.expr(scope, &Ty::Str, d);
                Expr::op(Ty::Str, &["(", " + ", ")"], vec![a, b])
            }
            3 => {
                let a = self.expr(scope, &Ty::Int, d);
                Expr::op(Ty::Str, &["toString(", ")"], vec![a])
            }
            4 => {
                let a = self.expr(scope, &Ty::Str, d);
                let b = self.literal(&Ty::Str);
                Expr::op(Ty::Str, &["coalesce(", ", ", ")"], vec![a, b])
            }
            5 => {
                let a = self.expr(scope, &Ty::Str, d);
                let (from, to) = (
                    *self.rng.pick(&["a", "b", " "]),
                    *self.rng.pick(&["", "z", "bb"]),
                );
                Expr::op(
                    Ty::Str,
                    &["replace(", &format!(", '{from}', '{to}')")],
                    vec![a],
                )
            }
            _ => self.case(scope, &Ty::Str, d),
        }
    }

    fn bool_expr(&mut self, scope: &Scope, d: u32) -> Expr {
        let has_nodes = !scope.nodes().is_empty();
        let w = [
            6, // comparison
            2, // IS [NOT] NULL
            4, // AND/OR/XOR
            2, // NOT
            2, // IN
            2, // string predicates
            if self.on(Construct::PatternPredicate) && has_nodes && self.in_where {
                1
            } else {
                0
            },
            if self.on(Construct::ExistsSubquery) && self.subquery_ok() && has_nodes {
                1
            } else {
                0
            },
            if self.on(Construct::ListPredicate) {
                1
            } else {
                0
            },
            if self.on(Construct::Case) { 1 } else { 0 },
        ];
        match self.rng.weighted(&w) {
            0 => {
                let t = match self.rng.weighted(&[5, 2, 3, 1]) {
                    0 => Ty::Int,
                    1 => Ty::Dbl,
                    2 => Ty::Str,
                    _ => Ty::Bool,
                };
                let a = self.expr(scope, &t, d);
                let bt = match t {
                    Ty::Int if self.rng.chance(0.2) => Ty::Dbl,
                    Ty::Dbl if self.rng.chance(0.3) => Ty::Int,
                    _ => t.clone(),
                };
                let b = self.expr(scope, &bt, d);
                let op = *self.rng.pick(CMP_OPS);
                Expr::op(Ty::Bool, &["(", &format!(" {op} "), ")"], vec![a, b])
            }
            1 => {
                let t = self.value_type(true);
                let a = self.expr(scope, &t, d);
                let s = if self.rng.chance(0.5) {
                    " IS NULL)"
                } else {
                    " IS NOT NULL)"
                };
                Expr::op(Ty::Bool, &["(", s], vec![a])
            }
            2 => {
                let op = *self.rng.pick(&[" AND ", " OR ", " XOR ", " AND ", " OR "]);
                let a = self.expr(scope, &Ty::Bool, d);
                let b = self.expr(scope, &Ty::Bool, d);
                Expr::op(Ty::Bool, &["(", op, ")"], vec![a, b])
            }
            3 => {
                let a = self.expr(scope, &Ty::Bool, d);
                Expr::negate(a)
            }
            4 => {
                let t = if self.rng.chance(0.7) {
                    Ty::Int
                } else {
                    Ty::Str
                };
                let a = self.expr(scope, &t, d);
                let l = self.expr(scope, &Ty::List(Box::new(t)), d);
                Expr::op(Ty::Bool, &["(", " IN ", ")"], vec![a, l])
            }
            5 => {
                let op = *self
                    .rng
                    .pick(&[" STARTS WITH ", " ENDS WITH ", " CONTAINS "]);
                let a = self.expr(scope, &Ty::Str, d);
                let b = if self.rng.chance(0.7) {
                    self.literal(&Ty::Str)
                } else {
                    self.expr(scope, &Ty::Str, d)
                };
                Expr::op(Ty::Bool, &["(", op, ")"], vec![a, b])
            }
            6 => self.pattern_predicate(scope),
            7 => self.exists_subquery(scope, d),
            8 => self.list_predicate(scope, d),
            _ => self.case(scope, &Ty::Bool, d),
        }
    }

    fn list_expr(&mut self, scope: &Scope, elem: &Ty, d: u32) -> Expr {
        let ty = Ty::List(Box::new(elem.clone()));
        let has_nodes = !scope.nodes().is_empty();
        let has_paths = scope.vars.iter().any(|v| v.kind == VarKind::Path);
        let w = [
            3,                                    // [a, b]
            if *elem == Ty::Int { 2 } else { 0 }, // range
            if self.on(Construct::ListComprehension) {
                2
            } else {
                0
            },
            if self.on(Construct::PatternComprehension) && self.subquery_ok() && has_nodes {
                2
            } else {
                0
            },
            if has_paths { 1 } else { 0 },        // over nodes(p)
            if *elem == Ty::Str { 1 } else { 0 }, // split
        ];
        match self.rng.weighted(&w) {
            0 => {
                let n = 1 + self.rng.below(3);
                let items: Vec<Expr> = (0..n).map(|_| self.expr(scope, elem, d)).collect();
                let mut parts = vec!["[".to_string()];
                parts.extend(std::iter::repeat_n(", ".to_string(), n - 1));
                parts.push("]".to_string());
                Expr {
                    ty,
                    kind: ExprKind::Op {
                        parts,
                        args: items,
                        binds: false,
                    },
                }
            }
            1 => {
                let lo = self.rng.range(-2, 3);
                let hi = self.rng.range(lo - 1, lo + 4);
                if self.rng.chance(0.3) {
                    let a = self.expr(scope, &Ty::Int, d);
                    Expr::op(
                        ty,
                        &[&format!("range({lo}, (abs(coalesce("), ", 0)) % 5))"],
                        vec![a],
                    )
                } else {
                    Expr::atom(ty, format!("range({lo}, {hi})"))
                }
            }
            2 => {
                let src_elem = if self.rng.chance(0.7) {
                    Ty::Int
                } else {
                    Ty::Str
                };
                let src = self.expr(scope, &Ty::List(Box::new(src_elem.clone())), d);
                let x = self.fresh("x");
                let inner = scope.with(&[Var {
                    name: x.clone(),
                    kind: VarKind::Value(src_elem.clone()),
                }]);
                let filter = self.rng.chance(0.6);
                let map = *elem != src_elem || self.rng.chance(0.6);
                let mut parts = vec![format!("[{x} IN ")];
                let mut args = vec![src];
                if filter {
                    parts.push(" WHERE ".to_string());
                    args.push(self.expr(&inner, &Ty::Bool, d));
                }
                if map {
                    parts.push(" | ".to_string());
                    args.push(self.expr(&inner, elem, d));
                }
                parts.push("]".to_string());
                Expr::binder(ty, parts, args)
            }
            3 => self.pattern_comprehension(scope, elem, d),
            4 => {
                let paths: Vec<String> = scope
                    .vars
                    .iter()
                    .filter(|v| v.kind == VarKind::Path)
                    .map(|v| v.name.clone())
                    .collect();
                let p = self.rng.pick(&paths).clone();
                let x = self.fresh("x");
                let inner = scope.with(&[Var {
                    name: x.clone(),
                    kind: VarKind::Node(None),
                }]);
                let map = self.expr(&inner, elem, d);
                Expr::binder(
                    ty,
                    vec![format!("[{x} IN nodes({p}) | "), "]".to_string()],
                    vec![map],
                )
            }
            _ => {
                let a = self.expr(scope, &Ty::Str, d);
                let sep = *self.rng.pick(&["a", "b", " "]);
                Expr::op(ty, &["split(", &format!(", '{sep}')")], vec![a])
            }
        }
    }

    fn list_predicate(&mut self, scope: &Scope, d: u32) -> Expr {
        let f = *self.rng.pick(&["any", "all", "none", "single"]);
        let elem = if self.rng.chance(0.7) {
            Ty::Int
        } else {
            Ty::Str
        };
        let src = self.expr(scope, &Ty::List(Box::new(elem.clone())), d);
        let x = self.fresh("x");
        let inner = scope.with(&[Var {
            name: x.clone(),
            kind: VarKind::Value(elem),
        }]);
        let cond = self.expr(&inner, &Ty::Bool, d);
        Expr::binder(
            Ty::Bool,
            vec![
                format!("{f}({x} IN "),
                " WHERE ".to_string(),
                ")".to_string(),
            ],
            vec![src, cond],
        )
    }

    /// A pattern from an existing node variable, for subqueries and
    /// comprehensions; returns the text and the new variables it binds.
    fn sub_pattern(&mut self, scope: &Scope, named_end: bool) -> (String, Vec<Var>) {
        let starts = scope.nodes();
        let start = (*self.rng.pick(&starts)).clone();
        self.last_anchor = Some(start.clone());
        let cur = match start.kind {
            VarKind::Node(t) => t,
            _ => None,
        };
        let saved = self.hops;
        self.hops = 3; // one hop, no var-length blow-up
        let mut new_vars = Vec::new();
        let (rel, next, _) = self.rel_pattern(cur, &mut new_vars);
        self.hops = saved;
        let end = if named_end {
            let name = self.fresh("m");
            let (s, label) = self.node_pattern(next, Some(&name));
            new_vars.push(Var {
                name,
                kind: VarKind::Node(label),
            });
            s
        } else {
            self.node_pattern(next, None).0
        };
        (format!("({}){rel}{end}", start.name), new_vars)
    }

    fn pattern_predicate(&mut self, scope: &Scope) -> Expr {
        let starts = scope.nodes();
        let start = (*self.rng.pick(&starts)).clone();
        let cur = match start.kind {
            VarKind::Node(t) => t,
            _ => None,
        };
        let saved = self.hops;
        self.hops = 3;
        let mut unused = Vec::new();
        let (mut rel, next, _) = self.rel_pattern(cur, &mut unused);
        self.hops = saved;
        if !unused.is_empty() {
            // A pattern predicate binds nothing: drop the rel variable.
            rel = rel.replace(&unused[0].name, "");
        }
        let (end, _) = self.node_pattern(next, None);
        let text = format!("({}){rel}{end}", start.name);
        if self.rng.chance(0.3) {
            Expr::atom(Ty::Bool, format!("(NOT {text})"))
        } else {
            Expr::atom(Ty::Bool, text)
        }
    }

    fn subquery_body(&mut self, scope: &Scope, d: u32) -> (Vec<String>, Vec<Expr>) {
        let (pat, vars) = self.sub_pattern(scope, true);
        // Outer variables besides the anchor in the WHERE make every one
        // a key the subquery matches over the whole graph (the open
        // performance finding behind `pattern-comprehension-correlated`).
        let outer = if self.on(Construct::PatternComprehensionCorrelated) {
            entities(scope)
        } else {
            Scope {
                vars: self.last_anchor.iter().cloned().collect(),
            }
        };
        let inner = outer.with(&vars);
        if self.rng.chance(0.6) {
            self.nested += 1;
            let cond = self.expr(&inner, &Ty::Bool, d.min(2));
            self.nested -= 1;
            (
                vec![format!("MATCH {pat} WHERE "), " }".to_string()],
                vec![cond],
            )
        } else {
            (vec![format!("MATCH {pat} }}")], vec![])
        }
    }

    fn exists_subquery(&mut self, scope: &Scope, d: u32) -> Expr {
        let (mut parts, args) = self.subquery_body(scope, d);
        parts[0] = format!("EXISTS {{ {}", parts[0]);
        Expr::binder(Ty::Bool, parts, args)
    }

    fn count_subquery(&mut self, scope: &Scope, d: u32) -> Expr {
        let (mut parts, args) = self.subquery_body(scope, d);
        parts[0] = format!("COUNT {{ {}", parts[0]);
        Expr::binder(Ty::Int, parts, args)
    }

    fn pattern_comprehension(&mut self, scope: &Scope, elem: &Ty, d: u32) -> Expr {
        let ty = Ty::List(Box::new(elem.clone()));
        let new_var = self.on(Construct::PatternComprehensionNewVar) && self.rng.chance(0.7);
        let (pat, vars) = if new_var {
            self.sub_pattern(scope, true)
        } else {
            // No new variable: drop a rel variable the pattern may name.
            let (mut pat, vars) = self.sub_pattern(scope, false);
            for v in &vars {
                pat = pat.replace(&v.name, "");
            }
            (pat, Vec::new())
        };
        // Uncorrelated: the body sees the anchor and its own variables only.
        let outer = if self.on(Construct::PatternComprehensionCorrelated) {
            entities(scope)
        } else {
            Scope {
                vars: self.last_anchor.iter().cloned().collect(),
            }
        };
        let inner = outer.with(&vars);
        let mut parts = vec![format!("[{pat}")];
        let mut args = Vec::new();
        self.nested += 1;
        if self.rng.chance(0.4) {
            parts[0].push_str(" WHERE ");
            args.push(self.expr(&inner, &Ty::Bool, d.min(1)));
            parts.push(" | ".to_string());
        } else {
            parts[0].push_str(" | ");
        }
        args.push(self.expr(&inner, elem, d.min(1)));
        self.nested -= 1;
        parts.push("]".to_string());
        Expr::binder(ty, parts, args)
    }

    /// A predicate over `scope` for the TLP and NoREC oracles; `in_where`:
    /// it only goes into a WHERE (so it may hold pattern predicates).
    pub fn predicate(&mut self, scope: &Scope, in_where: bool) -> Expr {
        self.in_where = in_where;
        let p = self.expr(scope, &Ty::Bool, 3);
        self.in_where = false;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_deterministic_per_seed() {
        let g = Graph::generate(&mut Rng::new(9));
        let f = Features::default();
        for seed in 0..50 {
            let a = Gen::new(&g, &f, seed).query().to_string();
            let b = Gen::new(&g, &f, seed).query().to_string();
            assert_eq!(a, b);
        }
        let a = Gen::new(&g, &f, 1).query().to_string();
        let b = Gen::new(&g, &f, 2).query().to_string();
        assert_ne!(a, b);
    }

    #[test]
    fn skip_list_parses() {
        let f = Features::parse_skip("union, var-length").expect("known names");
        assert!(!f.on(Construct::Union));
        assert!(!f.on(Construct::VarLength));
        assert!(f.on(Construct::With));
        assert!(Features::parse_skip("nonsense").is_err());
    }

    #[test]
    fn skipped_constructs_do_not_appear() {
        let g = Graph::generate(&mut Rng::new(5));
        let f =
            Features::parse_skip("union,var-length,optional-match,exists-subquery,count-subquery")
                .expect("known names");
        for seed in 0..300 {
            let q = Gen::new(&g, &f, seed).query().to_string();
            assert!(!q.contains("UNION"), "{q}");
            assert!(!q.contains("*0..") && !q.contains("*1.."), "{q}");
            assert!(!q.contains("OPTIONAL"), "{q}");
            assert!(!q.contains("EXISTS") && !q.contains("COUNT {"), "{q}");
        }
    }
}
