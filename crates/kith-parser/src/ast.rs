//! The abstract syntax tree of KithDB's Cypher dialect (openCypher plus Kùzu's DDL,
//! COPY and recursive-pattern forms). Every node that can be wrong carries a
//! [`Span`] so later layers can point at it.

use kith_common::Span;

/// An identifier as written (case preserved; unescaped backticks removed).
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// One statement of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Query(Query),
    /// `EXPLAIN <stmt>` / `PROFILE <stmt>`.
    Explain {
        profile: bool,
        inner: Box<Statement>,
    },
    CreateNodeTable(CreateNodeTable),
    CreateRelTable(CreateRelTable),
    /// `DROP TABLE name` (`IF EXISTS` allowed).
    DropTable {
        name: Ident,
        if_exists: bool,
    },
    /// `ALTER TABLE t ...`.
    AlterTable {
        table: Ident,
        action: AlterAction,
    },
    Copy(Copy),
    /// `CALL name=value` (a setting) — e.g. `CALL threads=2`.
    SetOption {
        name: Ident,
        value: Expr,
    },
    /// `CALL proc(args) [YIELD ...] [RETURN ...]` standalone or as part of a query;
    /// a standalone call appears as `Statement::Query` with a `Clause::Call`.
    Begin {
        read_only: bool,
    },
    Commit,
    Rollback,
    Checkpoint,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: Ident,
    pub ty: TypeName,
    pub default: Option<Expr>,
}

/// A type as written: `INT64`, `STRING[]`, `STRUCT(a INT64, b STRING)`, `MAP(STRING, INT64)`.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeName {
    /// A simple named type (upper-cased), e.g. `INT64`, `STRING`, `DATE`, `SERIAL`.
    Named(String, Span),
    List(Box<TypeName>),
    /// `T[n]`.
    Array(Box<TypeName>, u64),
    Struct(Vec<(Ident, TypeName)>),
    Map(Box<TypeName>, Box<TypeName>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateNodeTable {
    pub name: Ident,
    pub if_not_exists: bool,
    pub columns: Vec<ColumnDef>,
    /// Either from `PRIMARY KEY(col)` or an inline `col T PRIMARY KEY`.
    pub primary_key: Option<Ident>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateRelTable {
    pub name: Ident,
    pub if_not_exists: bool,
    /// `FROM a TO b` pairs (several for a rel table group: `FROM A TO B, FROM B TO C`).
    pub connections: Vec<(Ident, Ident)>,
    pub columns: Vec<ColumnDef>,
    /// `MANY_MANY` (default), `MANY_ONE`, `ONE_MANY`, `ONE_ONE`.
    pub multiplicity: Option<Ident>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterAction {
    AddColumn {
        column: ColumnDef,
        if_not_exists: bool,
    },
    DropColumn {
        name: Ident,
        if_exists: bool,
    },
    RenameColumn {
        from: Ident,
        to: Ident,
    },
    RenameTable {
        to: Ident,
    },
}

/// `COPY T FROM source (opts)` or `COPY (query) TO 'file' (opts)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Copy {
    pub direction: CopyDirection,
    /// `(key = value, ...)`; keys upper-cased. Values are literal expressions.
    pub options: Vec<(Ident, Expr)>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CopyDirection {
    /// `COPY table [(col, ...)] FROM source`.
    From {
        table: Ident,
        columns: Vec<Ident>,
        source: CopySource,
    },
    /// `COPY (query) TO 'path'` or `COPY table TO 'path'`.
    To { source: CopyToSource, path: String },
}

#[derive(Debug, Clone, PartialEq)]
pub enum CopySource {
    /// One or more file paths (`'a.csv'` or `['a.csv', 'b.csv']`), or a glob.
    Files(Vec<String>),
    /// `COPY T FROM df` — a variable name bound by the host language (Python).
    Variable(Ident),
    /// `COPY T FROM (subquery)`.
    Query(Box<Query>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum CopyToSource {
    Table(Ident),
    Query(Box<Query>),
}

/// A read or write query: one or more single queries joined by UNION [ALL].
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub parts: Vec<SingleQuery>,
    /// `union_all[i]` says whether parts[i] and parts[i+1] are joined by UNION ALL.
    pub union_all: Vec<bool>,
    pub span: Span,
}

/// A sequence of clauses, e.g. `MATCH ... WHERE ... WITH ... RETURN ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct SingleQuery {
    pub clauses: Vec<Clause>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Clause {
    Match {
        optional: bool,
        patterns: Vec<PathPattern>,
        where_: Option<Expr>,
        span: Span,
    },
    Unwind {
        expr: Expr,
        alias: Ident,
        span: Span,
    },
    /// `WITH` (is_with = true) and `RETURN` share one shape.
    Projection(Projection),
    Create {
        patterns: Vec<PathPattern>,
        span: Span,
    },
    Merge {
        pattern: PathPattern,
        on_create: Vec<SetItem>,
        on_match: Vec<SetItem>,
        span: Span,
    },
    Set {
        items: Vec<SetItem>,
        span: Span,
    },
    Remove {
        items: Vec<RemoveItem>,
        span: Span,
    },
    Delete {
        detach: bool,
        exprs: Vec<Expr>,
        span: Span,
    },
    /// `CALL proc(args) [YIELD a [AS b], ...] [WHERE ...]`.
    Call {
        procedure: Ident,
        /// `None` for `CALL proc` without parentheses: the arguments are the
        /// parameters named like the procedure's inputs (standalone only).
        args: Option<Vec<Expr>>,
        /// `YIELD *` (standalone only; the same as no YIELD there).
        yield_star: bool,
        yields: Option<Vec<(Ident, Option<Ident>)>>,
        where_: Option<Expr>,
        span: Span,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub is_with: bool,
    pub distinct: bool,
    /// `RETURN *` / `WITH *` (further items may follow the star).
    pub star: bool,
    pub items: Vec<ProjectionItem>,
    pub order_by: Vec<SortItem>,
    pub skip: Option<Expr>,
    pub limit: Option<Expr>,
    /// `WITH ... WHERE` (always None for RETURN).
    pub where_: Option<Expr>,
    pub span: Span,
}

impl Projection {
    /// A projection without DISTINCT, ORDER BY, SKIP or LIMIT (the binder
    /// builds these for the clauses it rewrites into WITH / RETURN).
    pub fn plain(
        is_with: bool,
        star: bool,
        items: Vec<ProjectionItem>,
        where_: Option<Expr>,
        span: Span,
    ) -> Projection {
        Projection {
            is_with,
            distinct: false,
            star,
            items,
            order_by: Vec::new(),
            skip: None,
            limit: None,
            where_,
            span,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionItem {
    pub expr: Expr,
    pub alias: Option<Ident>,
    /// The text of the expression as written, used as the column name when there is
    /// no alias (Cypher names unaliased columns by their source text).
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SortItem {
    pub expr: Expr,
    pub descending: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetItem {
    /// `n.prop = expr`
    Property { target: Expr, value: Expr },
    /// `n = map` (replace all properties)
    Replace { variable: Ident, value: Expr },
    /// `n += map`
    Merge { variable: Ident, value: Expr },
    /// `n:Label:Other`
    Labels { variable: Ident, labels: Vec<Ident> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum RemoveItem {
    Property(Expr),
    Labels { variable: Ident, labels: Vec<Ident> },
}

/// `p = (a)-[r]->(b)...` or `shortestPath((a)-[*]-(b))`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPattern {
    pub variable: Option<Ident>,
    /// `shortestPath(...)` / `allShortestPaths(...)` wrappers (openCypher forms).
    pub shortest: Option<ShortestKind>,
    pub start: NodePattern,
    pub chain: Vec<(RelPattern, NodePattern)>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortestKind {
    Shortest,
    AllShortest,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodePattern {
    pub variable: Option<Ident>,
    /// `(n:A:B)` — all labels (conjunction); `(n:A|B)` — alternatives.
    pub labels: LabelExpr,
    pub properties: Option<Expr>,
    /// Kùzu-style `(n WHERE n.x > 1)` inline predicate.
    pub where_: Option<Box<Expr>>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum LabelExpr {
    #[default]
    None,
    /// `:A:B` — every label must hold.
    All(Vec<Ident>),
    /// `:A|B` (or `:A|:B`) — any label may hold.
    Any(Vec<Ident>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `-[]->`
    Right,
    /// `<-[]-`
    Left,
    /// `-[]-` or `<-[]->`
    Both,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelPattern {
    pub variable: Option<Ident>,
    /// Rel types; several means alternatives (`:A|B`).
    pub types: Vec<Ident>,
    pub direction: Direction,
    pub properties: Option<Expr>,
    /// Present for variable-length / recursive relationships.
    pub range: Option<RecursiveSpec>,
    pub where_: Option<Box<Expr>>,
    pub span: Span,
}

/// `*`, `*2`, `*1..3`, `*..3`, `*2..`, `* SHORTEST 1..5`, `* ALL SHORTEST`,
/// `* WSHORTEST(w)`, `* ALL WSHORTEST(w)`, `* TRAIL 1..3`, `* ACYCLIC 1..3`,
/// each optionally followed by `(r, n | WHERE pred)` and Kùzu's projection lists.
#[derive(Debug, Clone, PartialEq)]
pub struct RecursiveSpec {
    pub kind: RecursiveKind,
    pub min: Option<u64>,
    pub max: Option<u64>,
    /// Weight property for weighted shortest paths.
    pub weight: Option<Ident>,
    /// `(r, n | WHERE ...)`: variable names for intermediate rel and node and the
    /// predicate over them.
    pub rel_var: Option<Ident>,
    pub node_var: Option<Ident>,
    pub predicate: Option<Box<Expr>>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecursiveKind {
    Walk,
    Trail,
    Acyclic,
    Shortest,
    AllShortest,
    WeightedShortest,
    AllWeightedShortest,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    /// Integer literals keep their text range check for the binder: values that do
    /// not fit i64 are a syntax error at parse time.
    Integer(i64),
    Float(f64),
    String(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    Xor,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    /// `=~`
    RegexMatch,
    StartsWith,
    EndsWith,
    Contains,
    /// `x IN list`
    In,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Neg,
    Plus,
    IsNull,
    IsNotNull,
}

/// One item of a map projection.
#[derive(Debug, Clone, PartialEq)]
pub enum MapProjectionItem {
    /// `.key`: the variable's property `key`.
    Property(Ident),
    /// `.*`: every property of the variable.
    AllProperties(Span),
    /// `key: expr`.
    Literal(Ident, Expr),
    /// `other`: variable `other`'s value, under its own name.
    Variable(Ident),
}

impl MapProjectionItem {
    /// The expression of a `key: expr` item.
    pub fn expr(&self) -> Option<&Expr> {
        match self {
            MapProjectionItem::Literal(_, e) => Some(e),
            _ => None,
        }
    }

    /// The variable of an `other` item.
    pub fn variable(&self) -> Option<&Ident> {
        match self {
            MapProjectionItem::Variable(v) => Some(v),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    /// `$name` or `$1`.
    Parameter(String),
    Variable(String),
    /// `expr.key`
    Property(Box<Expr>, Ident),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Unary(UnaryOp, Box<Expr>),
    /// `f(args)`, `f(DISTINCT args)`, `count(*)` (args empty, star = true).
    /// Namespaced names keep their dots (`date.truncate`).
    Function {
        name: Ident,
        distinct: bool,
        star: bool,
        args: Vec<Expr>,
    },
    List(Vec<Expr>),
    Map(Vec<(Ident, Expr)>),
    /// `v {.key, .*, key: expr, other}`: a map built from variable `v`
    /// (the expression is always a `Variable`).
    MapProjection(Box<Expr>, Vec<MapProjectionItem>),
    /// `list[idx]`
    Index(Box<Expr>, Box<Expr>),
    /// `list[from..to]` (either side optional).
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// `CASE [operand] WHEN .. THEN .. [ELSE ..] END`.
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        else_: Option<Box<Expr>>,
    },
    /// `[x IN list WHERE pred | proj]`.
    ListComprehension {
        variable: Ident,
        list: Box<Expr>,
        predicate: Option<Box<Expr>>,
        projection: Option<Box<Expr>>,
    },
    /// `all/any/none/single(x IN list WHERE pred)`.
    Quantifier {
        kind: Quantifier,
        variable: Ident,
        list: Box<Expr>,
        predicate: Box<Expr>,
    },
    /// `reduce(acc = init, x IN list | expr)`.
    Reduce {
        accumulator: Ident,
        init: Box<Expr>,
        variable: Ident,
        list: Box<Expr>,
        expr: Box<Expr>,
    },
    /// A pattern used as a predicate: `(a)-[:R]->()` in WHERE.
    PatternPredicate(Box<PathPattern>),
    /// `[p = (a)-->(b) WHERE .. | expr]`.
    PatternComprehension {
        pattern: Box<PathPattern>,
        predicate: Option<Box<Expr>>,
        projection: Box<Expr>,
    },
    /// `EXISTS { MATCH ... }` / `EXISTS { (a)-->() WHERE ... }`.
    Exists(Box<SingleQuery>),
    /// `COUNT { ... }`.
    CountSubquery(Box<SingleQuery>),
    /// `n:Label` in an expression (label predicate).
    HasLabels(Box<Expr>, Vec<Ident>),
    /// `CAST(expr AS type)`. Kùzu's `CAST(expr, 'type')` stays a function
    /// call: its type is text the binder parses with [`crate::parse_type`].
    Cast(Box<Expr>, TypeName),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    All,
    Any,
    None,
    Single,
}
