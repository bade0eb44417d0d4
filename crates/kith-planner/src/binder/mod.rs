//! The binder: resolves names against a catalog snapshot, types expressions and
//! produces a [`BoundStatement`]. Every error names what is wrong and carries the
//! span of the offending text.
//!
//! One file per kind of thing bound: `pattern` (MATCH patterns), `recursive`
//! (variable-length rels), `projection` (WITH / RETURN: aggregation, DISTINCT,
//! ORDER BY, SKIP / LIMIT), `expression`, `subquery` (EXISTS / COUNT / pattern
//! predicates and comprehensions, decorrelated into queries of their own),
//! `union`, `write` (CREATE / MERGE / SET / REMOVE / DELETE), `entity`
//! (nodes and rels as values), `endpoint` (`startNode` / `endNode`) and
//! `cast` (`CAST`).

use std::collections::HashMap;
use std::sync::Arc;

use kith_catalog::{Catalog, Multiplicity, TableEntry};
use kith_common::{Error, ErrorKind, LogicalType, Result, Span, TableId, Value};
use kith_parser::ast::{self, BinaryOp, Clause, Direction, ExprKind, Literal, Statement, UnaryOp};

use crate::bound::*;
use crate::expr::{BoundExpr, BoundExprKind, SlotId};
use crate::functions;
use crate::procedure::Procedures;

use call::{is_catalog_call, CallClause};

static NO_PROCEDURES: Procedures = Procedures::new();

mod call;
mod cast;
mod endpoint;
mod entity;
mod expression;
mod pattern;
mod projection;
mod recursive;
mod subquery;
mod union;
mod write;

use expression::{property_slot, split_conjuncts};

pub struct Binder<'a> {
    catalog: &'a Catalog,
    graph: QueryGraph,
    next_slot: u32,
    /// Aggregates found while binding a projection; `None` when not allowed.
    aggregates: Option<Vec<BoundAggregate>>,
    /// Statement parameters, when known at bind time (types and SKIP/LIMIT).
    params: Option<&'a HashMap<String, Value>>,
    /// Scalar variables in scope (from WITH and UNWIND): name, slot, type.
    values: Vec<(String, SlotId, LogicalType)>,
    /// Rel variables carried through WITH: name and id slot. Their
    /// properties travel as hidden values named `_anon_<name>.<property>`.
    rels_carried: Vec<(String, SlotId)>,
    /// Set while binding the hidden projection of a write statement, whose
    /// columns carry node and rel ids to the write clauses.
    ids_projection: bool,
    /// The candidate tables of each carried rel (to build its value).
    carried_rel_tables: Vec<(String, Vec<TableId>)>,
    /// The end node variables of carried rels whose ends were carried too
    /// (what `startNode(r)` / `endNode(r)` read).
    carried_rel_ends: Vec<(String, RelEnds)>,
    /// Projection aliases visible while binding ORDER BY.
    aliases: Vec<(String, BoundExpr)>,
    /// The part being bound: inputs and unwinds (its graph is `graph`).
    part: BoundPart,
    /// Finished parts.
    parts: Vec<BoundPart>,
    /// Weighted shortest paths bound as values (`p` or the rel variable):
    /// name and the slot holding the cost, which `cost(p)` reads.
    costs: Vec<(String, SlotId)>,
    /// While a MATCH binds its patterns: the rels before this index belong
    /// to earlier MATCH clauses of the part, so naming one again matches
    /// the same rel (0 elsewhere).
    match_first_rel: usize,
    /// Named fixed-length paths of the current part: name and the variables
    /// of its nodes and rels in path order (node, rel, node, ...).
    fixed_paths: Vec<(String, Vec<String>)>,
    /// Rel variables of shortest paths (`-[e* SHORTEST]->`), bound as the
    /// path: Kùzu's recursive rels, whose `nodes(e)` lists only the
    /// intermediate nodes.
    recursive_rels: Vec<String>,
    /// Variables of the comprehensions, quantifiers and `reduce`s being
    /// bound, innermost last: name, local index, type. They shadow every
    /// other name.
    locals: Vec<(String, u32, LogicalType)>,
    /// Local indexes handed out so far in this statement.
    next_local: u32,
    /// The subqueries bound so far (`BoundExprKind::Subquery` indexes).
    subqueries: Vec<BoundSubquery>,
    /// Set while binding projection items, where a pattern predicate is a
    /// syntax error (openCypher allows it in WHERE only).
    in_projection: bool,
    /// The procedures `CALL` may name.
    procedures: &'a Procedures,
    /// While binding a MATCH's WHERE: its top-level conjuncts that read
    /// variables' properties only (candidates to restrict a subquery's keys).
    where_conjuncts: Vec<ast::Expr>,
    /// The patterns of the MATCH clauses since the last WITH:
    /// every outer row's variables match them, so a subquery whose pattern
    /// does not connect its keys takes its keys from them (see
    /// `bind_subquery_expr`).
    /// One entry per clause: a MATCH's rels differ from each other, not
    /// from those of another MATCH.
    outer_patterns: Vec<Vec<ast::PathPattern>>,
    /// Binding the continuation of a write statement: its clauses are the
    /// statement's own, already checked (and split) when it was bound.
    continuation: bool,
    /// What a plain `*l..u` matches.
    var_length: VarLengthSemantics,
}

/// The node variables a rel connects, as its pattern wrote them.
#[derive(Debug, Clone)]
struct RelEnds {
    left: String,
    right: String,
    direction: Direction,
}

fn not_supported(span: Span, what: &str) -> Error {
    Error::at(
        ErrorKind::NotSupported,
        span,
        format!("{what} is not supported yet"),
    )
}

fn literal_value(e: &ast::Expr) -> Result<Value> {
    match &e.kind {
        ExprKind::Literal(l) => Ok(match l {
            Literal::Null => Value::Null,
            Literal::Bool(b) => Value::Bool(*b),
            Literal::Integer(i) => Value::Int64(*i),
            Literal::Float(f) => Value::Double(*f),
            Literal::String(s) => Value::String(s.clone()),
        }),
        ExprKind::Unary(UnaryOp::Neg, inner) => match literal_value(inner)? {
            Value::Int64(i) => Ok(Value::Int64(-i)),
            Value::Double(f) => Ok(Value::Double(-f)),
            _ => Err(Error::at(
                ErrorKind::Semantic,
                e.span,
                "expected a literal value",
            )),
        },
        ExprKind::List(items) => Ok(Value::list(
            items.iter().map(literal_value).collect::<Result<_>>()?,
        )),
        ExprKind::Map(entries) => Ok(Value::Struct(
            entries
                .iter()
                .map(|(k, v)| Ok((k.name.clone(), literal_value(v)?)))
                .collect::<Result<_>>()?,
        )),
        _ => Err(Error::at(
            ErrorKind::Semantic,
            e.span,
            "expected a literal value",
        )),
    }
}

/// The logical type of a DDL type name.
pub fn bind_type(t: &ast::TypeName) -> Result<LogicalType> {
    match t {
        ast::TypeName::Named(name, span) => LogicalType::from_name(name)
            .filter(|t| {
                !matches!(
                    t,
                    LogicalType::Node
                        | LogicalType::Rel
                        | LogicalType::Path
                        | LogicalType::InternalId
                )
            })
            .ok_or_else(|| Error::at(ErrorKind::Semantic, *span, format!("unknown type '{name}'"))),
        ast::TypeName::List(inner) => Ok(LogicalType::List(Box::new(bind_type(inner)?))),
        ast::TypeName::Struct(fields) => {
            let mut bound: Vec<(String, LogicalType)> = Vec::with_capacity(fields.len());
            for (name, ty) in fields {
                if bound.iter().any(|(n, _)| n == &name.name) {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        name.span,
                        format!("STRUCT field '{}' is declared twice", name.name),
                    ));
                }
                bound.push((name.name.clone(), bind_type(ty)?));
            }
            Ok(LogicalType::Struct(bound))
        }
        ast::TypeName::Map(k, v) => Ok(LogicalType::Map(
            Box::new(bind_type(k)?),
            Box::new(bind_type(v)?),
        )),
        ast::TypeName::Array(..) => Err(Error::not_supported(
            "fixed-size ARRAY columns (T[n]) are not supported; declare a LIST (T[]) instead",
        )),
    }
}

fn bind_columns(cols: &[ast::ColumnDef]) -> Result<Vec<(String, LogicalType)>> {
    cols.iter()
        .map(|c| {
            if let Some(d) = &c.default {
                return Err(not_supported(d.span, "DEFAULT"));
            }
            Ok((
                c.name.name.clone(),
                bind_type(&c.ty).map_err(|e| e.or_span(c.name.span))?,
            ))
        })
        .collect()
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a Catalog) -> Binder<'a> {
        Binder {
            catalog,
            graph: QueryGraph::default(),
            next_slot: 0,
            aggregates: None,
            params: None,
            values: Vec::new(),
            rels_carried: Vec::new(),
            carried_rel_tables: Vec::new(),
            carried_rel_ends: Vec::new(),
            ids_projection: false,
            aliases: Vec::new(),
            part: BoundPart::default(),
            parts: Vec::new(),
            costs: Vec::new(),
            match_first_rel: 0,
            fixed_paths: Vec::new(),
            recursive_rels: Vec::new(),
            locals: Vec::new(),
            next_local: 0,
            subqueries: Vec::new(),
            in_projection: false,
            procedures: &NO_PROCEDURES,
            where_conjuncts: Vec::new(),
            outer_patterns: Vec::new(),
            continuation: false,
            var_length: VarLengthSemantics::Walk,
        }
    }

    /// A fresh binder for a nested statement (EXPLAIN's, a subquery's, a
    /// UNION branch's) that sees the same parameters and procedures.
    fn child(&self) -> Binder<'a> {
        let mut b = Binder::new(self.catalog);
        b.params = self.params;
        b.procedures = self.procedures;
        b.var_length = self.var_length;
        b
    }

    fn new_slot(&mut self) -> SlotId {
        let s = SlotId(self.next_slot);
        self.next_slot += 1;
        s
    }

    /// Whether the current part matches patterns or filters, so that a
    /// clause expanding its rows (UNWIND, CALL) must start a new part.
    fn has_pattern_state(&self, predicates: &[BoundExpr]) -> bool {
        !predicates.is_empty() || !self.graph.nodes.is_empty() || !self.graph.rels.is_empty()
    }

    /// Ends the current part with `WITH *, e1 AS h1, ...`: every named
    /// variable and the `hidden` expressions move into a new part, whose
    /// input rows a following UNWIND or CALL expands. Returns the hidden
    /// expressions as variables of the new part.
    fn carry_into_new_part(
        &mut self,
        hidden: Vec<(String, ast::Expr)>,
        span: Span,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<Vec<ast::Expr>> {
        let mut items = Vec::with_capacity(hidden.len());
        let mut vars = Vec::with_capacity(hidden.len());
        for (name, expr) in hidden {
            vars.push(ast::Expr {
                kind: ExprKind::Variable(name.clone()),
                span: expr.span,
            });
            items.push(ast::ProjectionItem {
                alias: Some(ast::Ident {
                    name: name.clone(),
                    span: expr.span,
                }),
                expr,
                text: name,
            });
        }
        let star = ast::Projection::plain(true, true, items, None, span);
        *predicates = self.bind_projection(&star, std::mem::take(predicates))?;
        Ok(vars)
    }

    pub fn bind(mut self, stmt: &Statement) -> Result<BoundStatement> {
        match stmt {
            Statement::CreateNodeTable(t) => {
                let pk = t.primary_key.as_ref().ok_or_else(|| {
                    Error::at(
                        ErrorKind::Semantic,
                        t.name.span,
                        format!("node table '{}' needs a PRIMARY KEY", t.name.name),
                    )
                })?;
                Ok(BoundStatement::CreateNodeTable {
                    name: t.name.name.clone(),
                    columns: bind_columns(&t.columns)?,
                    primary_key: pk.name.clone(),
                    if_not_exists: t.if_not_exists,
                })
            }
            Statement::CreateRelTable(t) => {
                if t.connections.len() != 1 {
                    return Err(not_supported(
                        t.span,
                        "a rel table with several FROM/TO pairs",
                    ));
                }
                let (src, dst) = &t.connections[0];
                let multiplicity = match &t.multiplicity {
                    None => Multiplicity::MANY_MANY,
                    Some(m) => Multiplicity::parse(&m.name).ok_or_else(|| {
                        Error::at(ErrorKind::Semantic, m.span, format!("unknown multiplicity '{}': expected MANY_MANY, MANY_ONE, ONE_MANY or ONE_ONE", m.name))
                    })?,
                };
                Ok(BoundStatement::CreateRelTable {
                    name: t.name.name.clone(),
                    src: src.name.clone(),
                    dst: dst.name.clone(),
                    columns: bind_columns(&t.columns)?,
                    multiplicity,
                    if_not_exists: t.if_not_exists,
                })
            }
            Statement::DropTable { name, if_exists } => Ok(BoundStatement::DropTable {
                name: name.name.clone(),
                if_exists: *if_exists,
            }),
            Statement::Copy(c) => self.bind_copy(c),
            Statement::SetOption { name, value } => Ok(BoundStatement::SetOption {
                name: name.name.to_ascii_lowercase(),
                value: literal_value(value)?,
            }),
            Statement::Explain { profile, inner } => Ok(BoundStatement::Explain {
                profile: *profile,
                inner: Box::new({
                    // EXPLAIN of a parameterized query needs no values.
                    let mut b = self.child();
                    b.params = None;
                    b.bind(inner)?
                }),
            }),
            Statement::Query(q) => self.bind_query(q),
            Statement::AlterTable { table, action } => {
                let t = self.table(table)?;
                let action = match action {
                    ast::AlterAction::AddColumn {
                        column,
                        if_not_exists,
                    } => {
                        let ty = bind_type(&column.ty).map_err(|e| e.or_span(column.name.span))?;
                        let default = match &column.default {
                            None => Value::Null,
                            Some(d) => literal_value(d)?,
                        };
                        BoundAlter::AddColumn {
                            name: column.name.name.clone(),
                            ty,
                            default,
                            if_not_exists: *if_not_exists,
                        }
                    }
                    ast::AlterAction::DropColumn { name, if_exists } => BoundAlter::DropColumn {
                        name: name.name.clone(),
                        if_exists: *if_exists,
                    },
                    ast::AlterAction::RenameColumn { from, to } => BoundAlter::RenameColumn {
                        from: from.name.clone(),
                        to: to.name.clone(),
                    },
                    ast::AlterAction::RenameTable { to } => BoundAlter::RenameTable {
                        to: to.name.clone(),
                    },
                };
                Ok(BoundStatement::AlterTable {
                    table: t.id,
                    action,
                })
            }
            // The connection runs these itself (they change its transaction
            // state, not the graph); they only get here nested, e.g. in EXPLAIN.
            Statement::Begin { .. }
            | Statement::Commit
            | Statement::Rollback
            | Statement::Checkpoint => Err(Error::not_supported(
                "BEGIN, COMMIT, ROLLBACK and CHECKPOINT only as statements of their own",
            )),
        }
    }

    fn bind_copy(&mut self, c: &ast::Copy) -> Result<BoundStatement> {
        let ast::CopyDirection::From {
            table,
            columns,
            source,
        } = &c.direction
        else {
            return Err(not_supported(c.span, "COPY TO"));
        };
        if !columns.is_empty() {
            return Err(not_supported(c.span, "COPY with a column list"));
        }
        let entry = self.table(table)?;
        let files = match source {
            ast::CopySource::Files(f) => f.clone(),
            ast::CopySource::Variable(v) => {
                return Err(not_supported(v.span, "COPY from a variable"))
            }
            ast::CopySource::Query(_) => return Err(not_supported(c.span, "COPY from a subquery")),
        };
        let options = c
            .options
            .iter()
            .map(|(k, v)| Ok((k.name.to_ascii_uppercase(), literal_value(v)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(BoundStatement::CopyFrom(BoundCopy {
            table: entry.id,
            files,
            options,
            span: c.span,
        }))
    }

    fn table(&self, name: &ast::Ident) -> Result<&'a TableEntry> {
        self.catalog.table_by_name(&name.name).ok_or_else(|| {
            Error::at(
                ErrorKind::Semantic,
                name.span,
                format!("table '{}' does not exist", name.name),
            )
        })
    }

    fn bind_query(&mut self, q: &ast::Query) -> Result<BoundStatement> {
        if q.parts.len() != 1 {
            return self.bind_union(q);
        }
        let clauses = &q.parts[0].clauses;
        if let Some(call) = self.bind_call_query(clauses)? {
            return Ok(call);
        }
        let mut predicates = Vec::new();
        let mut returned = false;
        for (idx, clause) in clauses.iter().enumerate() {
            match clause {
                Clause::Match {
                    optional,
                    patterns,
                    where_,
                    span,
                } => {
                    let last = matches!(clauses.get(idx + 1), Some(Clause::Projection(_)));
                    let (where_, span) = (where_.as_ref(), *span);
                    self.bind_match(*optional, patterns, where_, span, last, &mut predicates)?;
                }
                Clause::Unwind { expr, alias, span } => {
                    self.bind_unwind(expr, alias, *span, &mut predicates)?;
                }
                Clause::Projection(p) if p.is_with => {
                    // A WITH may rename or drop what the patterns bound.
                    self.outer_patterns.clear();
                    predicates = self.bind_projection(p, std::mem::take(&mut predicates))?;
                }
                Clause::Projection(p) => {
                    if idx + 1 != clauses.len() {
                        return Err(Error::at(
                            ErrorKind::Semantic,
                            p.span,
                            "RETURN must be the last clause of a query",
                        ));
                    }
                    self.bind_projection(p, std::mem::take(&mut predicates))?;
                    returned = true;
                }
                Clause::Create { .. }
                | Clause::Merge { .. }
                | Clause::Set { .. }
                | Clause::Remove { .. }
                | Clause::Delete { .. } => {
                    return self.bind_writes(
                        &clauses[idx..],
                        std::mem::take(&mut predicates),
                        q.span,
                    );
                }
                Clause::Call { span, .. } => {
                    let call = CallClause::of(clause)
                        .ok_or_else(|| Error::at(ErrorKind::Internal, *span, "not a CALL"))?;
                    self.bind_call(call, false, &mut predicates)?;
                }
            }
        }
        if !returned {
            return Err(Error::at(
                ErrorKind::Semantic,
                q.span,
                "a query must end with RETURN",
            ));
        }
        Ok(BoundStatement::Query(Box::new(self.take_query())))
    }

    /// The query bound so far: its parts, slots and subqueries.
    fn take_query(&mut self) -> BoundQuery {
        BoundQuery {
            parts: std::mem::take(&mut self.parts),
            num_slots: self.next_slot,
            subqueries: std::mem::take(&mut self.subqueries),
        }
    }

    /// A query that is a standalone built-in call (`CALL show_tables()
    /// [RETURN *]`) or procedure call, bound (None: it is not one).
    fn bind_call_query(&mut self, clauses: &[Clause]) -> Result<Option<BoundStatement>> {
        let Some(Clause::Call {
            procedure,
            args,
            span,
            ..
        }) = clauses.first()
        else {
            return Ok(None);
        };
        if is_catalog_call(&procedure.name) {
            if clauses.len() > 2 {
                return Err(not_supported(*span, "CALL followed by further clauses"));
            }
            let args = args.as_deref().unwrap_or_default();
            return self.bind_table_call(procedure, args).map(Some);
        }
        match clauses {
            [only] => match CallClause::of(only) {
                Some(call) => self.bind_standalone_call(call).map(Some),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// Binds a MATCH or OPTIONAL MATCH, its conjuncts into `predicates`.
    /// `last`: a WITH or RETURN follows it.
    fn bind_match(
        &mut self,
        optional: bool,
        patterns: &[ast::PathPattern],
        where_: Option<&ast::Expr>,
        span: Span,
        last: bool,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        // An OPTIONAL MATCH's patterns only when they bind new variables
        // alone: those are NULL where it fails (and a NULL key has no entry
        // in a subquery's table either way), while one bound before keeps
        // its value there.
        let outer = if optional {
            patterns
                .iter()
                .filter(|p| {
                    subquery::pattern_variables(p)
                        .iter()
                        .all(|v| self.outer_entity(v).is_none())
                })
                .cloned()
                .collect()
        } else {
            patterns.to_vec()
        };
        self.outer_patterns.push(outer);
        if optional {
            // Followed by its WITH or RETURN: a single optional extend may
            // join this part's own pipeline.
            if last
                && (self.bind_optional_extend(patterns, where_)?
                    || self.bind_optional_recursive(patterns, where_)?
                    || self.bind_optional_join(patterns, where_)?
                    || self.bind_optional_chain(patterns, where_)?)
            {
                return Ok(());
            }
            *predicates =
                self.bind_optional_match(patterns, where_, span, std::mem::take(predicates))?;
            return Ok(());
        }
        self.bind_clause_patterns(patterns, predicates)?;
        if let Some(w) = where_ {
            // Subqueries in this WHERE may restrict their keys with its
            // conjuncts (see `bind_subquery_expr`).
            self.where_conjuncts = subquery::key_filters(w);
            let e = self.bind_expr(w);
            self.where_conjuncts.clear();
            split_conjuncts(e?, predicates);
        }
        Ok(())
    }

    /// `UNWIND expr AS alias`.
    fn bind_unwind(
        &mut self,
        expr: &ast::Expr,
        alias: &ast::Ident,
        span: Span,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        let mut expr = expr.clone();
        if self.has_pattern_state(predicates) {
            // UNWIND after MATCH (or reading nodes carried by a WITH): carry
            // every named variable and the list into a new part whose input
            // rows it expands.
            let hidden = format!("_anon_unwind_{}", self.next_slot);
            let mut carried = self.carry_into_new_part(vec![(hidden, expr)], span, predicates)?;
            expr = carried
                .pop()
                .ok_or_else(|| Error::at(ErrorKind::Internal, span, "UNWIND list not carried"))?;
        }
        let e = self.bind_expr(&expr)?;
        let ty = match &e.ty {
            LogicalType::List(t) => (**t).clone(),
            other => other.clone(),
        };
        self.check_new_variable(alias)?;
        let slot = self.new_slot();
        self.part.unwinds.push(BoundUnwind {
            expr: e,
            slot,
            ty: ty.clone(),
        });
        self.values.push((alias.name.clone(), slot, ty));
        Ok(())
    }
}

/// Binds a parsed statement against `catalog`.
pub fn bind(catalog: &Catalog, stmt: &Statement) -> Result<BoundStatement> {
    Binder::new(catalog).bind(stmt)
}

/// Binds with the statement's parameter values (their types, SKIP/LIMIT),
/// the procedures `CALL` may name and what a plain variable-length rel
/// matches.
pub fn bind_with_params(
    catalog: &Catalog,
    procedures: &Procedures,
    stmt: &Statement,
    params: &HashMap<String, Value>,
    var_length: VarLengthSemantics,
) -> Result<BoundStatement> {
    let mut b = Binder::new(catalog);
    b.params = Some(params);
    b.procedures = procedures;
    b.var_length = var_length;
    b.bind(stmt)
}

/// Binds `clauses` as a query that starts from input rows holding `vars`
/// (in column order): the continuation of a write statement, bound after
/// its writes against the transaction's catalog.
pub fn bind_continuation(
    catalog: &Catalog,
    procedures: &Procedures,
    vars: &[(String, SeedKind)],
    paths: &[(String, Vec<String>)],
    clauses: &[Clause],
    params: &HashMap<String, Value>,
    var_length: VarLengthSemantics,
) -> Result<BoundStatement> {
    let mut b = Binder::new(catalog);
    b.params = Some(params);
    b.procedures = procedures;
    b.var_length = var_length;
    b.continuation = true;
    for (name, kind) in vars {
        let slot = b.new_slot();
        match kind {
            SeedKind::Node(tables) => {
                b.part.inputs.push((slot, LogicalType::InternalId));
                b.graph.nodes.push(QueryNode {
                    name: name.clone(),
                    tables: tables.clone(),
                    id_slot: slot,
                    properties: Vec::new(),
                    imported: true,
                });
                let s = b.new_slot();
                b.part.inputs.push((s, LogicalType::Bool));
                let flag = format!("_anon_{name}.{}", entity::CARRIED_DELETED);
                b.values.push((flag, s, LogicalType::Bool));
            }
            SeedKind::Rel(tables) => {
                // Like a rel carried through WITH: the id, then hidden
                // values for the endpoints and every property.
                b.part.inputs.push((slot, LogicalType::InternalId));
                b.rels_carried.push((name.clone(), slot));
                b.carried_rel_tables.push((name.clone(), tables.clone()));
                let ends = [entity::CARRIED_SRC, entity::CARRIED_DST];
                let hidden = ends
                    .iter()
                    .map(|e| (e.to_string(), LogicalType::InternalId))
                    .chain(carried_rel_columns(catalog, tables))
                    .chain([(entity::CARRIED_DELETED.to_string(), LogicalType::Bool)]);
                for (prop, ty) in hidden {
                    let s = b.new_slot();
                    b.part.inputs.push((s, ty.clone()));
                    b.values.push((format!("_anon_{name}.{prop}"), s, ty));
                }
            }
            SeedKind::Value(ty) => {
                b.part.inputs.push((slot, ty.clone()));
                b.values.push((name.clone(), slot, ty.clone()));
            }
        }
    }
    // A named path the writes made is read as a fixed-length path of
    // its (seeded) elements.
    b.fixed_paths.extend(paths.iter().cloned());
    let span = clauses.first().map_or(Span::new(0, 0), clause_span);
    b.bind_query(&ast::Query {
        parts: vec![ast::SingleQuery {
            clauses: clauses.to_vec(),
            span,
        }],
        union_all: Vec::new(),
        span,
    })
}

/// The properties a rel of `tables` carries into a continuation, in input
/// column order: every visible property of the tables once, typed ANY where
/// the tables disagree.
pub fn carried_rel_columns(catalog: &Catalog, tables: &[TableId]) -> Vec<(String, LogicalType)> {
    let mut out: Vec<(String, LogicalType)> = Vec::new();
    for t in tables.iter().filter_map(|t| catalog.table(*t)) {
        for p in t
            .properties
            .iter()
            .filter(|p| !kith_catalog::is_hidden(&p.name))
        {
            match out.iter_mut().find(|(n, _)| *n == p.name) {
                Some((_, ty)) if *ty != p.ty => *ty = LogicalType::Any,
                Some(_) => {}
                None => out.push((p.name.clone(), p.ty.clone())),
            }
        }
    }
    out
}

fn clause_span(c: &Clause) -> Span {
    match c {
        Clause::Match { span, .. }
        | Clause::Unwind { span, .. }
        | Clause::Create { span, .. }
        | Clause::Merge { span, .. }
        | Clause::Set { span, .. }
        | Clause::Remove { span, .. }
        | Clause::Delete { span, .. }
        | Clause::Call { span, .. } => *span,
        Clause::Projection(p) => p.span,
    }
}

/// The expression with every span cleared, for structural comparison.
pub(crate) fn strip(e: &BoundExpr) -> BoundExpr {
    let b = |x: &BoundExpr| Box::new(strip(x));
    let kind = match &e.kind {
        BoundExprKind::Unary(op, x) => BoundExprKind::Unary(*op, b(x)),
        BoundExprKind::Binary(op, x, y) => BoundExprKind::Binary(*op, b(x), b(y)),
        BoundExprKind::Function(n, args) => {
            BoundExprKind::Function(n.clone(), args.iter().map(strip).collect())
        }
        BoundExprKind::Cast(x) => BoundExprKind::Cast(b(x)),
        BoundExprKind::Case {
            operand,
            whens,
            else_,
        } => BoundExprKind::Case {
            operand: operand.as_ref().map(|o| b(o)),
            whens: whens.iter().map(|(w, t)| (strip(w), strip(t))).collect(),
            else_: else_.as_ref().map(|o| b(o)),
        },
        BoundExprKind::List(items) => BoundExprKind::List(items.iter().map(strip).collect()),
        _ => e.map_children(&mut strip).kind,
    };
    BoundExpr {
        kind,
        ty: e.ty.clone(),
        span: Span::new(0, 0),
    }
}

/// Replaces every subexpression structurally equal to one of `targets`
/// (already stripped) by `replace(index, original)`.
/// The slot an expression reads an entity's id from: a slot itself, or the
/// node or rel handed out as a value (`_node(slot)`, `_rel(slot)`).
pub(crate) fn entity_slot(e: &BoundExpr) -> Option<SlotId> {
    match &e.kind {
        BoundExprKind::Slot(s) => Some(*s),
        BoundExprKind::Function(f, args) if f == "_node" || f == "_rel" => {
            match args.first().map(|a| &a.kind) {
                Some(BoundExprKind::Slot(s)) => Some(*s),
                _ => None,
            }
        }
        _ => None,
    }
}

pub(crate) fn substitute(
    e: &BoundExpr,
    targets: &[BoundExpr],
    replace: &dyn Fn(usize, &BoundExpr) -> BoundExpr,
) -> BoundExpr {
    substitute_if(e, targets, &|_, _| true, replace)
}

/// [`substitute`], replacing a match of target `i` only where `accept(i,
/// subexpression)` holds.
pub(crate) fn substitute_if(
    e: &BoundExpr,
    targets: &[BoundExpr],
    accept: &dyn Fn(usize, &BoundExpr) -> bool,
    replace: &dyn Fn(usize, &BoundExpr) -> BoundExpr,
) -> BoundExpr {
    let stripped = strip(e);
    if let Some(i) = targets.iter().position(|t| *t == stripped) {
        if accept(i, e) {
            return replace(i, e);
        }
    }
    let sub = |x: &BoundExpr| substitute_if(x, targets, accept, replace);
    let kind = match &e.kind {
        BoundExprKind::Unary(op, x) => BoundExprKind::Unary(*op, Box::new(sub(x))),
        BoundExprKind::Binary(op, x, y) => {
            BoundExprKind::Binary(*op, Box::new(sub(x)), Box::new(sub(y)))
        }
        BoundExprKind::Function(n, args) => {
            BoundExprKind::Function(n.clone(), args.iter().map(sub).collect())
        }
        BoundExprKind::Cast(x) => BoundExprKind::Cast(Box::new(sub(x))),
        BoundExprKind::Case {
            operand,
            whens,
            else_,
        } => BoundExprKind::Case {
            operand: operand.as_ref().map(|o| Box::new(sub(o))),
            whens: whens.iter().map(|(w, t)| (sub(w), sub(t))).collect(),
            else_: else_.as_ref().map(|o| Box::new(sub(o))),
        },
        BoundExprKind::List(items) => BoundExprKind::List(items.iter().map(sub).collect()),
        _ => e.map_children(&mut |x| sub(x)).kind,
    };
    BoundExpr {
        kind,
        ty: e.ty.clone(),
        span: e.span,
    }
}

#[allow(dead_code)]
fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Right => "->",
        Direction::Left => "<-",
        Direction::Both => "-",
    }
}

/// Whether `.key` on a value of this type is a field access (maps and
/// structs, node and rel values, or a type known only at run time).
fn has_fields(t: &LogicalType) -> bool {
    matches!(
        t,
        LogicalType::Struct(_)
            | LogicalType::Map(..)
            | LogicalType::Node
            | LogicalType::Rel
            | LogicalType::Any
    ) || functions::is_temporal(t)
}

/// The element type of a list-typed operand of `IN` in a comprehension,
/// quantifier or `reduce`; a type error for anything but a list.
fn element_type(list: &BoundExpr, what: &str) -> Result<LogicalType> {
    match &list.ty {
        LogicalType::List(e) => Ok((**e).clone()),
        LogicalType::Any => Ok(LogicalType::Any),
        other => Err(Error::at(
            ErrorKind::Type,
            list.span,
            format!("{what} expects a LIST after IN, got {other}"),
        )),
    }
}

/// Checks that a predicate is a BOOL (or of a type known only at run time).
fn check_predicate(p: &BoundExpr, what: &str) -> Result<()> {
    if matches!(p.ty, LogicalType::Bool | LogicalType::Any) {
        Ok(())
    } else {
        Err(Error::at(
            ErrorKind::Type,
            p.span,
            format!("the WHERE of {what} expects a BOOL, got {}", p.ty),
        ))
    }
}

/// Checks the type of a list index or slice bound.
fn check_integer(e: &BoundExpr, what: &str) -> Result<()> {
    if e.ty.is_integer() || e.ty == LogicalType::Any {
        Ok(())
    } else {
        Err(Error::at(
            ErrorKind::Type,
            e.span,
            format!("{what} must be an INTEGER, got {}", e.ty),
        ))
    }
}
