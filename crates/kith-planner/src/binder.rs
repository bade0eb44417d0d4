//! The binder: resolves names against a catalog snapshot, types expressions and
//! produces a [`BoundStatement`]. Every error names what is wrong and carries the
//! span of the offending text.

use std::collections::HashMap;

use kith_catalog::{Catalog, Multiplicity, TableEntry};
use kith_common::{Error, ErrorKind, LogicalType, Result, Span, TableId, Value};
use kith_parser::ast::{self, BinaryOp, Clause, Direction, ExprKind, Literal, Statement, UnaryOp};

use crate::bound::*;
use crate::expr::{BoundExpr, BoundExprKind, SlotId};
use crate::functions;

#[path = "bind_write.rs"]
mod bind_write;

#[path = "bind_entity.rs"]
mod bind_entity;

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
    /// Projection aliases visible while binding ORDER BY.
    aliases: Vec<(String, BoundExpr)>,
    /// The part being bound: inputs and unwinds (its graph is `graph`).
    part: BoundPart,
    /// Finished parts.
    parts: Vec<BoundPart>,
    /// Named paths of the current part (`p = (a)-[*]->(b)`): name and the
    /// slot holding the path length (the cost for weighted shortest paths,
    /// flagged true).
    paths: Vec<(String, SlotId, bool)>,
    /// Named fixed-length paths of the current part: name and the variables
    /// of its nodes and rels in path order (node, rel, node, ...).
    fixed_paths: Vec<(String, Vec<String>)>,
    /// Variables of the comprehensions, quantifiers and `reduce`s being
    /// bound, innermost last: name, local index, type. They shadow every
    /// other name.
    locals: Vec<(String, u32, LogicalType)>,
    /// Local indexes handed out so far in this statement.
    next_local: u32,
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
        ExprKind::List(items) => Ok(Value::List(
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
        ast::TypeName::List(_)
        | ast::TypeName::Array(..)
        | ast::TypeName::Struct(_)
        | ast::TypeName::Map(..) => Err(Error::not_supported(
            "LIST, ARRAY, STRUCT and MAP columns are not supported yet",
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
            ids_projection: false,
            aliases: Vec::new(),
            part: BoundPart::default(),
            parts: Vec::new(),
            paths: Vec::new(),
            fixed_paths: Vec::new(),
            locals: Vec::new(),
            next_local: 0,
        }
    }

    fn new_slot(&mut self) -> SlotId {
        let s = SlotId(self.next_slot);
        self.next_slot += 1;
        s
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
                inner: Box::new(Binder::new(self.catalog).bind(inner)?),
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
        // A standalone built-in call: `CALL show_tables() [RETURN *]`.
        if let Some(Clause::Call {
            procedure,
            args,
            span,
            ..
        }) = clauses.first()
        {
            if clauses.len() > 2 {
                return Err(not_supported(*span, "CALL followed by further clauses"));
            }
            return self.bind_table_call(procedure, args);
        }
        let mut predicates = Vec::new();
        let mut returned = false;
        for (idx, clause) in clauses.iter().enumerate() {
            if returned {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    q.span,
                    "RETURN must be the last clause of a query",
                ));
            }
            match clause {
                Clause::Match {
                    optional,
                    patterns,
                    where_,
                    span,
                } => {
                    if *optional {
                        predicates = self.bind_optional_match(
                            patterns,
                            where_.as_ref(),
                            *span,
                            std::mem::take(&mut predicates),
                        )?;
                        continue;
                    }
                    let first_rel = self.graph.rels.len();
                    for p in patterns {
                        self.bind_pattern(p, &mut predicates)?;
                    }
                    self.distinct_rels(first_rel, &mut predicates);
                    if let Some(w) = where_ {
                        let e = self.bind_expr(w)?;
                        split_conjuncts(e, &mut predicates);
                    }
                }
                Clause::Unwind { expr, alias, span } => {
                    let mut expr = expr.clone();
                    if !predicates.is_empty()
                        || !self.graph.nodes.is_empty()
                        || !self.graph.rels.is_empty()
                    {
                        // UNWIND after MATCH (or reading nodes carried by a
                        // WITH): carry every named variable and the list into
                        // a new part whose input rows it expands.
                        let hidden = format!("_anon_unwind_{}", self.next_slot);
                        let item = ast::ProjectionItem {
                            expr: expr.clone(),
                            alias: Some(ast::Ident {
                                name: hidden.clone(),
                                span: expr.span,
                            }),
                            text: hidden.clone(),
                        };
                        expr = ast::Expr {
                            kind: ExprKind::Variable(hidden),
                            span: expr.span,
                        };
                        let star = ast::Projection {
                            is_with: true,
                            distinct: false,
                            star: true,
                            items: vec![item],
                            order_by: Vec::new(),
                            skip: None,
                            limit: None,
                            where_: None,
                            span: *span,
                        };
                        predicates =
                            self.bind_projection(&star, std::mem::take(&mut predicates))?;
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
                }
                Clause::Projection(p) if p.is_with => {
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
                    return Err(not_supported(*span, "CALL inside a query"))
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
        Ok(BoundStatement::Query(Box::new(BoundQuery {
            parts: std::mem::take(&mut self.parts),
            num_slots: self.next_slot,
        })))
    }

    /// `OPTIONAL MATCH`: a part of its own over the rows so far (after an
    /// implicit `WITH *` when needed), projecting every variable, whose
    /// finishing phase pads input rows without a match with NULLs.
    fn bind_optional_match(
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
        for p in patterns {
            self.bind_pattern(p, &mut predicates)?;
        }
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
        part.inputs.push((row_slot, LogicalType::Int64));
        part.order_by.push(BoundSortKey {
            expr: BoundExpr::slot(row_slot, LogicalType::Int64, span),
            descending: false,
        });
        Ok(next)
    }

    /// Fails when `name` is already bound in the current scope.
    fn check_new_variable(&self, name: &ast::Ident) -> Result<()> {
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

    fn bind_table_call(
        &mut self,
        procedure: &ast::Ident,
        args: &[ast::Expr],
    ) -> Result<BoundStatement> {
        let call = match procedure.name.to_ascii_lowercase().as_str() {
            "show_tables" if args.is_empty() => TableCall::ShowTables,
            "table_info" if args.len() == 1 => {
                let name = literal_value(&args[0])?;
                let name = name.as_str().ok_or_else(|| {
                    Error::at(
                        ErrorKind::Semantic,
                        args[0].span,
                        "table_info expects a table name string",
                    )
                })?;
                let t = self.catalog.table_by_name(name).ok_or_else(|| {
                    Error::at(
                        ErrorKind::Semantic,
                        args[0].span,
                        format!("table '{name}' does not exist"),
                    )
                })?;
                TableCall::TableInfo(t.id)
            }
            "show_tables" | "table_info" => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    procedure.span,
                    format!("wrong number of arguments for {}()", procedure.name),
                ))
            }
            _ => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    procedure.span,
                    format!("unknown procedure '{}'", procedure.name),
                ))
            }
        };
        Ok(BoundStatement::TableCall(call))
    }

    fn node_tables(&self, labels: &ast::LabelExpr, span: Span) -> Result<Vec<TableId>> {
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

    fn bind_node(
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
                if self.values.iter().any(|x| x.0 == v.name)
                    || self.rels_carried.iter().any(|x| x.0 == v.name) =>
            {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    v.span,
                    format!("'{}' is already bound to a value, not a node", v.name),
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

    fn bind_inline_props(
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

    fn bind_pattern(
        &mut self,
        p: &ast::PathPattern,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        let single_recursive = p.chain.len() == 1 && p.chain[0].0.range.is_some();
        let mut len_slot = None;
        let fixed = p.chain.iter().all(|(r, _)| r.range.is_none()) && p.shortest.is_none();
        let mut fixed_path: Option<(String, Vec<String>)> = None;
        if let Some(v) = &p.variable {
            if !single_recursive && !fixed {
                return Err(not_supported(
                    v.span,
                    "named paths mixing fixed and variable-length relationships",
                ));
            }
            if self.is_path(&v.name) {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    v.span,
                    format!("variable '{}' is already bound", v.name),
                ));
            }
        }
        if let (Some(v), true) = (&p.variable, fixed && !single_recursive) {
            if self.graph.nodes.iter().any(|n| n.name == v.name)
                || self.graph.rels.iter().any(|r| r.name == v.name)
                || self.values.iter().any(|x| x.0 == v.name)
            {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    v.span,
                    format!("variable '{}' is already bound", v.name),
                ));
            }
            fixed_path = Some((v.name.clone(), Vec::new()));
        } else if let Some(v) = &p.variable {
            if self.paths.iter().any(|(n, _, _)| *n == v.name)
                || self.graph.nodes.iter().any(|n| n.name == v.name)
                || self.graph.rels.iter().any(|r| r.name == v.name)
            {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    v.span,
                    format!("variable '{}' is already bound", v.name),
                ));
            }
            let slot = self.new_slot();
            let weighted = p.chain[0].0.range.as_ref().is_some_and(|r| {
                matches!(
                    r.kind,
                    ast::RecursiveKind::WeightedShortest | ast::RecursiveKind::AllWeightedShortest
                )
            });
            self.paths.push((v.name.clone(), slot, weighted));
            len_slot = Some(slot);
        }
        if p.shortest.is_some() && !single_recursive {
            return Err(not_supported(
                p.span,
                "shortestPath/allShortestPaths over anything but one variable-length relationship",
            ));
        }
        let mut left = self.bind_node(&p.start, predicates)?;
        if let Some((_, elems)) = &mut fixed_path {
            elems.push(self.graph.nodes[left].name.clone());
        }
        for (rel, node) in &p.chain {
            let recursive = match &rel.range {
                None => None,
                Some(spec) => Some(self.bind_recursive(rel, spec, p.shortest, len_slot)?),
            };
            let right = self.bind_node(node, predicates)?;
            let tables: Vec<TableId> = if rel.types.is_empty() {
                self.catalog.rel_tables().map(|t| t.id).collect()
            } else {
                let mut out = Vec::new();
                for n in &rel.types {
                    let before = out.len();
                    out.extend(self.catalog.rel_tables_typed(&n.name).map(|t| t.id));
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
                out
            };
            let name = match &rel.variable {
                Some(v) => {
                    if self.is_path(&v.name) {
                        return Err(Error::at(
                            ErrorKind::Semantic,
                            v.span,
                            format!("'{}' is a path, not a rel (variable type conflict)", v.name),
                        ));
                    }
                    if self.rels_carried.iter().any(|r| r.0 == v.name) {
                        return Err(not_supported(
                            v.span,
                            "matching a rel variable bound by an earlier clause",
                        ));
                    }
                    if self.graph.rels.iter().any(|r| r.name == v.name)
                        || self.graph.nodes.iter().any(|n| n.name == v.name)
                    {
                        return Err(Error::at(
                            ErrorKind::Semantic,
                            v.span,
                            format!("variable '{}' is already bound", v.name),
                        ));
                    }
                    v.name.clone()
                }
                None => format!("_anon_rel_{}", self.graph.rels.len()),
            };
            let id_slot = self.new_slot();
            self.graph.rels.push(QueryRel {
                name: name.clone(),
                tables,
                left,
                right,
                direction: rel.direction,
                id_slot,
                properties: Vec::new(),
                recursive,
            });
            self.bind_inline_props(&name, rel.properties.as_ref(), rel.span, predicates)?;
            if let Some(w) = &rel.where_ {
                let e = self.bind_expr(w)?;
                split_conjuncts(e, predicates);
            }
            if let Some((_, elems)) = &mut fixed_path {
                elems.push(name);
                elems.push(self.graph.nodes[right].name.clone());
            }
            left = right;
        }
        if let Some(path) = fixed_path {
            self.fixed_paths.push(path);
        }
        Ok(())
    }

    /// openCypher relationship isomorphism: within one MATCH, two rel
    /// variables never bind the same rel. Adds `r1 <> r2` for every pair of
    /// fixed-length rels bound since `first` whose tables overlap.
    fn distinct_rels(&self, first: usize, predicates: &mut Vec<BoundExpr>) {
        let rels = &self.graph.rels[first..];
        let span = Span::new(0, 0);
        for (i, a) in rels.iter().enumerate() {
            for b in &rels[i + 1..] {
                if a.recursive.is_some()
                    || b.recursive.is_some()
                    || !a.tables.iter().any(|t| b.tables.contains(t))
                {
                    continue;
                }
                let id = |slot| BoundExpr::slot(slot, LogicalType::InternalId, span);
                predicates.push(BoundExpr {
                    kind: BoundExprKind::Binary(
                        crate::expr::BinaryOp::Ne,
                        Box::new(id(a.id_slot)),
                        Box::new(id(b.id_slot)),
                    ),
                    ty: LogicalType::Bool,
                    span,
                });
            }
        }
    }

    /// Where the candidate tables of node `var` keep per-node label lists,
    /// the test that a node really carries the pattern's labels.
    fn label_predicates(
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
    fn is_path(&self, name: &str) -> bool {
        self.paths.iter().any(|p| p.0 == name) || self.fixed_paths.iter().any(|p| p.0 == name)
    }

    /// The value of fixed-length path `name`: `_path(node, rel, node, ...)`
    /// over the entity values of its variables.
    fn fixed_path_value(&mut self, name: &str, span: Span) -> Result<Option<BoundExpr>> {
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
                .ok_or_else(|| Error::internal(format!("path element '{e}' is not bound")))?;
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

    /// Checks a variable-length rel pattern and resolves its kind and bounds
    /// (the rel table and endpoints are checked by the planner).
    fn bind_recursive(
        &self,
        rel: &ast::RelPattern,
        spec: &ast::RecursiveSpec,
        shortest: Option<ast::ShortestKind>,
        len_slot: Option<SlotId>,
    ) -> Result<RecursiveRel> {
        use ast::RecursiveKind as K;
        let kind = match (shortest, spec.kind) {
            (Some(ast::ShortestKind::Shortest), K::Walk | K::Shortest) => RecursiveMode::Shortest,
            (Some(ast::ShortestKind::AllShortest), K::Walk | K::AllShortest) => {
                RecursiveMode::AllShortest
            }
            (Some(_), _) => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    spec.span,
                    "shortestPath/allShortestPaths cannot be combined with another path mode",
                ))
            }
            (None, K::Walk) => RecursiveMode::Walk,
            (None, K::Shortest) => RecursiveMode::Shortest,
            (None, K::AllShortest) => RecursiveMode::AllShortest,
            (None, K::Trail) => return Err(not_supported(spec.span, "TRAIL paths")),
            (None, K::Acyclic) => return Err(not_supported(spec.span, "ACYCLIC paths")),
            (None, K::WeightedShortest) => RecursiveMode::WeightedShortest,
            (None, K::AllWeightedShortest) => {
                return Err(not_supported(
                    spec.span,
                    "ALL WSHORTEST (all weighted shortest paths)",
                ))
            }
        };
        if spec.predicate.is_some() || spec.rel_var.is_some() || spec.node_var.is_some() {
            return Err(not_supported(
                spec.span,
                "predicates inside a variable-length relationship",
            ));
        }
        if let Some(v) = &rel.variable {
            return Err(not_supported(
                v.span,
                "binding the variable of a variable-length relationship",
            ));
        }
        if rel.properties.is_some() || rel.where_.is_some() {
            return Err(not_supported(
                rel.span,
                "property conditions on a variable-length relationship",
            ));
        }
        if rel.types.len() > 1 {
            return Err(not_supported(
                rel.span,
                "variable-length relationships over several rel types",
            ));
        }
        if rel.direction == ast::Direction::Both {
            return Err(not_supported(
                rel.span,
                "undirected variable-length relationships",
            ));
        }
        let weight = match (kind, &spec.weight) {
            (RecursiveMode::WeightedShortest, Some(w)) => Some(w.name.clone()),
            (RecursiveMode::WeightedShortest, None) => {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    spec.span,
                    "WSHORTEST needs a weight property: * WSHORTEST(weight)",
                ))
            }
            _ => None,
        };
        if weight.is_some() && (spec.max.is_some() || spec.min.is_some_and(|m| m > 1)) {
            return Err(not_supported(
                spec.span,
                "length bounds on weighted shortest paths (only 0 or 1 as the lower bound)",
            ));
        }
        let lower = spec.min.unwrap_or(1);
        if let Some(u) = spec.max {
            if u < lower {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    spec.span,
                    format!("the lower bound {lower} is greater than the upper bound {u}"),
                ));
            }
        }
        Ok(RecursiveRel {
            mode: kind,
            lower,
            upper: spec.max,
            len_slot,
            weight,
        })
    }

    /// Binds a WITH or RETURN, finishing the current part. For a WITH, opens
    /// the next part (its scope holds exactly the projected names) and returns
    /// the predicates of its WHERE.
    fn bind_projection(
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
        for item in &items {
            let before = self.aggregates.as_ref().map_or(0, |a| a.len());
            let e = self.bind_expr(&item.expr)?;
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
            outputs.push((name.clone(), e));
            for (prop, e) in rel_props.unwrap_or_default() {
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
        let order: Result<Vec<BoundSortKey>> = proj
            .order_by
            .iter()
            .map(|o| {
                Ok(BoundSortKey {
                    expr: self.bind_expr(&o.expr)?,
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
            for key in &mut order_by {
                key.expr = substitute(&key.expr, &targets, &|i, orig| {
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
            for key in &order_by {
                let covered = substitute(&key.expr, &targets, &|_, orig| {
                    BoundExpr::literal(Value::Null, orig.span)
                });
                let mut slots = Vec::new();
                covered.slots(&mut slots);
                if !slots.is_empty() {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        key.expr.span,
                        format!("with DISTINCT, ORDER BY can only use the columns of {what}"),
                    ));
                }
            }
        }
        let skip = proj
            .skip
            .as_ref()
            .map(|e| self.bind_count(e, "SKIP"))
            .transpose()?;
        let limit = proj
            .limit
            .as_ref()
            .map(|e| self.bind_count(e, "LIMIT"))
            .transpose()?;
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
            output_slots,
            optional: None,
        });
        self.values.clear();
        self.rels_carried.clear();
        self.carried_rel_tables.clear();
        self.paths.clear();
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
    fn carried_rel_properties(&mut self, var: &str) -> Result<Option<Vec<(String, BoundExpr)>>> {
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
        let props: Vec<(String, ast::Ident)> = match rel.tables.as_slice() {
            [t] => self
                .catalog
                .table(*t)
                .map(|e| {
                    e.properties
                        .iter()
                        .map(|p| {
                            (
                                p.name.clone(),
                                ast::Ident {
                                    name: p.name.clone(),
                                    span: Span::new(0, 0),
                                },
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        for (name, ident) in props {
            out.push((name, self.bind_property(var, &ident, Span::new(0, 0))?));
        }
        out.extend(self.rel_endpoints(var));
        Ok(Some(out))
    }

    fn bind_count(&self, e: &ast::Expr, what: &str) -> Result<u64> {
        let v = match (&e.kind, self.params) {
            (ExprKind::Parameter(name), Some(params)) => params.get(name).cloned(),
            _ => literal_value(e).ok(),
        };
        match v.as_ref().and_then(|v| v.as_i64()) {
            Some(n) if n >= 0 => Ok(n as u64),
            _ => Err(Error::at(
                ErrorKind::Semantic,
                e.span,
                format!("{what} expects a non-negative integer literal or parameter"),
            )),
        }
    }

    /// Binds `var.key`, registering the property on the variable.
    fn bind_property(&mut self, var: &str, key: &ast::Ident, span: Span) -> Result<BoundExpr> {
        let catalog = self.catalog;
        let lookup = |tables: &[TableId]| -> Result<LogicalType> {
            let mut ty = None;
            for t in tables {
                if let Some(entry) = catalog.table(*t) {
                    if let Some(p) = entry.property(&key.name) {
                        match &ty {
                            None => ty = Some(p.ty.clone()),
                            Some(existing) if *existing != p.ty => {
                                return Err(not_supported(
                                    key.span,
                                    "a property with different types in different tables",
                                ))
                            }
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
            return match self.values.iter().find(|v| v.0 == hidden) {
                Some((_, slot, ty)) => Ok(BoundExpr::slot(*slot, ty.clone(), span)),
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

    pub fn bind_expr(&mut self, e: &ast::Expr) -> Result<BoundExpr> {
        let span = e.span;
        if let Some(local) = self.bind_local(e) {
            return Ok(local);
        }
        match &e.kind {
            ExprKind::Literal(_) => Ok(BoundExpr::literal(literal_value(e)?, span)),
            ExprKind::Parameter(name) => {
                let ty = match self.params {
                    None => LogicalType::Any,
                    Some(p) => match p.get(name) {
                        Some(v) => v.logical_type(),
                        None => {
                            return Err(Error::at(
                                ErrorKind::Semantic,
                                span,
                                format!("parameter ${name} was not given a value"),
                            ))
                        }
                    },
                };
                Ok(BoundExpr {
                    kind: BoundExprKind::Parameter(name.clone()),
                    ty,
                    span,
                })
            }
            ExprKind::Variable(name) => {
                if let Some((_, e)) = self.aliases.iter().find(|a| &a.0 == name) {
                    return Ok(e.clone());
                }
                if let Some(path) = self.fixed_path_value(name, span)? {
                    return Ok(path);
                }
                if self.paths.iter().any(|p| &p.0 == name) {
                    return Err(not_supported(
                        span,
                        "using a path value (only length(p) is supported)",
                    ));
                }
                if let Some(n) = self.graph.nodes.iter().find(|n| &n.name == name) {
                    return Ok(BoundExpr::slot(n.id_slot, LogicalType::InternalId, span));
                }
                if let Some(r) = self.graph.rels.iter().find(|r| &r.name == name) {
                    return Ok(BoundExpr::slot(r.id_slot, LogicalType::InternalId, span));
                }
                if let Some((_, slot, ty)) = self.values.iter().find(|v| &v.0 == name) {
                    return Ok(BoundExpr::slot(*slot, ty.clone(), span));
                }
                if let Some((_, slot)) = self.rels_carried.iter().find(|r| &r.0 == name) {
                    return Ok(BoundExpr::slot(*slot, LogicalType::InternalId, span));
                }
                Err(Error::at(
                    ErrorKind::Semantic,
                    span,
                    format!("variable '{name}' is not defined"),
                ))
            }
            ExprKind::Property(target, key) => match &target.kind {
                ExprKind::Variable(var) if !self.is_value_variable(var) => {
                    self.bind_property(var, key, span)
                }
                _ => self.bind_field(target, key, span),
            },
            ExprKind::Unary(op, inner) => {
                let inner = self.bind_expr(inner)?;
                let ty = match op {
                    UnaryOp::Not | UnaryOp::IsNull | UnaryOp::IsNotNull => LogicalType::Bool,
                    UnaryOp::Neg | UnaryOp::Plus => {
                        if !inner.ty.is_numeric()
                            && inner.ty != LogicalType::Any
                            && inner.ty != LogicalType::Interval
                            && inner.ty != LogicalType::Duration
                        {
                            return Err(Error::at(
                                ErrorKind::Type,
                                span,
                                format!("cannot negate a value of type {}", inner.ty),
                            ));
                        }
                        if inner.ty.is_integer() {
                            LogicalType::Int64
                        } else {
                            inner.ty.clone()
                        }
                    }
                };
                if *op == UnaryOp::Not && !matches!(inner.ty, LogicalType::Bool | LogicalType::Any)
                {
                    return Err(Error::at(
                        ErrorKind::Type,
                        span,
                        format!("NOT expects a BOOL, got {}", inner.ty),
                    ));
                }
                Ok(BoundExpr {
                    kind: BoundExprKind::Unary(*op, Box::new(inner)),
                    ty,
                    span,
                })
            }
            ExprKind::Binary(op, l, r) => {
                let l = self.bind_expr(l)?;
                let r = self.bind_expr(r)?;
                let ty = binary_type(*op, &l.ty, &r.ty).map_err(|e| e.or_span(span))?;
                Ok(BoundExpr {
                    kind: BoundExprKind::Binary(*op, Box::new(l), Box::new(r)),
                    ty,
                    span,
                })
            }
            ExprKind::Function {
                name,
                distinct,
                star,
                args,
            } => {
                let lname = name.name.to_ascii_lowercase();
                // percentileDisc/percentileCont(x, p): the exact percentile of
                // the group's values, computed from collect(x).
                if let ("percentiledisc" | "percentilecont", [x, p], false) =
                    (lname.as_str(), args.as_slice(), *star)
                {
                    let collected = self.bind_expr(&ast::Expr {
                        kind: ExprKind::Function {
                            name: ast::Ident {
                                name: "collect".to_string(),
                                span: name.span,
                            },
                            distinct: *distinct,
                            star: false,
                            args: vec![x.clone()],
                        },
                        span,
                    })?;
                    let elem = match &collected.ty {
                        LogicalType::List(t) => (**t).clone(),
                        _ => LogicalType::Any,
                    };
                    if !(elem.is_numeric() || elem == LogicalType::Any) {
                        return Err(Error::at(
                            ErrorKind::Type,
                            x.span,
                            format!("{}() expects numbers, got {elem}", name.name),
                        ));
                    }
                    let p = self.bind_expr(p)?;
                    let (f, ty) = if lname == "percentiledisc" {
                        ("_percentile_disc", elem)
                    } else {
                        ("_percentile_cont", LogicalType::Double)
                    };
                    return Ok(BoundExpr {
                        kind: BoundExprKind::Function(f.to_string(), vec![collected, p]),
                        ty,
                        span,
                    });
                }
                // openCypher allows a pattern as an expression only as a
                // predicate (WHERE, EXISTS), not as a value.
                if let Some(p) = args
                    .iter()
                    .find(|a| matches!(a.kind, ExprKind::PatternPredicate(_)))
                    .filter(|_| lname != "exists")
                {
                    return Err(Error::at(
                        ErrorKind::Syntax,
                        p.span,
                        format!("a pattern cannot be an argument of {}(); use it as a predicate (unexpected syntax)", name.name),
                    ));
                }
                if let ([arg], false, false) = (args.as_slice(), *distinct, *star) {
                    if let Some(e) = self.bind_entity_function(&lname, arg, span)? {
                        return Ok(e);
                    }
                }
                if let [ast::Expr {
                    kind: ExprKind::Variable(v),
                    ..
                }] = args.as_slice()
                {
                    if let Some(path) = self.fixed_path_value(v, span)? {
                        let list = |ty: LogicalType, items: Vec<BoundExpr>| BoundExpr {
                            kind: BoundExprKind::List(items),
                            ty: LogicalType::List(Box::new(ty)),
                            span,
                        };
                        let BoundExprKind::Function(_, items) = path.kind.clone() else {
                            return Err(Error::internal("path constructor expected"));
                        };
                        match lname.as_str() {
                            "length" | "size" => {
                                return Ok(BoundExpr {
                                    kind: BoundExprKind::Function("length".into(), vec![path]),
                                    ty: LogicalType::Int64,
                                    span,
                                })
                            }
                            "nodes" => {
                                let nodes = items.into_iter().step_by(2).collect();
                                return Ok(list(LogicalType::Node, nodes));
                            }
                            "relationships" | "rels" => {
                                let rels = items.into_iter().skip(1).step_by(2).collect();
                                return Ok(list(LogicalType::Rel, rels));
                            }
                            _ => {}
                        }
                    }
                    if let Some(&(_, slot, weighted)) = self.paths.iter().find(|p| &p.0 == v) {
                        return match lname.as_str() {
                            "length" if !weighted => {
                                Ok(BoundExpr::slot(slot, LogicalType::Int64, span))
                            }
                            "cost" if weighted => {
                                Ok(BoundExpr::slot(slot, LogicalType::Double, span))
                            }
                            "length" => Err(not_supported(
                                span,
                                "length() of a weighted shortest path (use cost(p))",
                            )),
                            _ => Err(not_supported(
                                span,
                                &format!("{}() of a path (only length(p))", name.name),
                            )),
                        };
                    }
                }
                if functions::is_aggregate(&lname) {
                    if self.aggregates.is_none() {
                        return Err(Error::at(
                            ErrorKind::Semantic,
                            span,
                            format!("aggregate function {}() is not allowed here", name.name),
                        ));
                    }
                    let arg = match (star, args.as_slice()) {
                        (true, []) if lname == "count" => None,
                        (false, [a]) => {
                            let saved = self.aggregates.take();
                            let bound = self.bind_expr(a);
                            self.aggregates = saved;
                            let bound = bound?;
                            if calls_function(&bound, "rand") {
                                return Err(Error::at(
                                    ErrorKind::Semantic,
                                    a.span,
                                    format!(
                                        "the argument of {}() must not call rand() (aggregating a random value)",
                                        name.name
                                    ),
                                ));
                            }
                            Some(bound)
                        }
                        _ => {
                            return Err(Error::at(
                                ErrorKind::Semantic,
                                span,
                                format!("{}() takes exactly one argument", name.name),
                            ))
                        }
                    };
                    let ty = functions::aggregate_type(&lname, arg.as_ref().map(|a| &a.ty))
                        .map_err(|e| e.or_span(span))?;
                    let slot = self.new_slot();
                    if let Some(aggs) = &mut self.aggregates {
                        aggs.push(BoundAggregate {
                            function: lname,
                            distinct: *distinct,
                            arg,
                            slot,
                            ty: ty.clone(),
                        });
                    }
                    return Ok(BoundExpr::slot(slot, ty, span));
                }
                if *distinct || *star {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        span,
                        format!(
                            "DISTINCT and * are only allowed in aggregates, not in {}()",
                            name.name
                        ),
                    ));
                }
                let args = args
                    .iter()
                    .map(|a| self.bind_expr(a))
                    .collect::<Result<Vec<_>>>()?;
                let types: Vec<LogicalType> = args.iter().map(|a| a.ty.clone()).collect();
                let ty =
                    functions::scalar_type(&lname, &types).map_err(|e| e.or_span(name.span))?;
                Ok(BoundExpr {
                    kind: BoundExprKind::Function(lname, args),
                    ty,
                    span,
                })
            }
            ExprKind::List(items) => {
                let items = items
                    .iter()
                    .map(|a| self.bind_expr(a))
                    .collect::<Result<Vec<_>>>()?;
                // The common element type (numeric widening); ANY when the
                // elements disagree.
                let elem = items
                    .iter()
                    .try_fold(LogicalType::Any, |acc, i| unify(&acc, &i.ty))
                    .unwrap_or(LogicalType::Any);
                Ok(BoundExpr {
                    kind: BoundExprKind::List(items),
                    ty: LogicalType::List(Box::new(elem)),
                    span,
                })
            }
            ExprKind::Case {
                operand,
                whens,
                else_,
            } => {
                let operand = operand
                    .as_ref()
                    .map(|o| self.bind_expr(o))
                    .transpose()?
                    .map(Box::new);
                let mut bound_whens = Vec::new();
                let mut ty = LogicalType::Any;
                for (w, t) in whens {
                    let w = self.bind_expr(w)?;
                    let t = self.bind_expr(t)?;
                    ty = unify(&ty, &t.ty).ok_or_else(|| {
                        Error::at(
                            ErrorKind::Type,
                            t.span,
                            "CASE branches have incompatible types",
                        )
                    })?;
                    bound_whens.push((w, t));
                }
                let else_ = else_.as_ref().map(|e| self.bind_expr(e)).transpose()?;
                if let Some(e) = &else_ {
                    ty = unify(&ty, &e.ty).ok_or_else(|| {
                        Error::at(
                            ErrorKind::Type,
                            e.span,
                            "CASE branches have incompatible types",
                        )
                    })?;
                }
                Ok(BoundExpr {
                    kind: BoundExprKind::Case {
                        operand,
                        whens: bound_whens,
                        else_: else_.map(Box::new),
                    },
                    ty,
                    span,
                })
            }
            ExprKind::Map(_)
            | ExprKind::Index(..)
            | ExprKind::Slice(..)
            | ExprKind::ListComprehension { .. }
            | ExprKind::Quantifier { .. }
            | ExprKind::Reduce { .. } => self.bind_nested_expr(e),
            ExprKind::HasLabels(inner, labels) => {
                let names: Vec<String> = labels.iter().map(|l| l.name.clone()).collect();
                match &inner.kind {
                    ExprKind::Variable(v)
                        if self.graph.nodes.iter().any(|n| &n.name == v)
                            || self.graph.rels.iter().any(|r| &r.name == v) =>
                    {
                        self.has_labels(v, &names, span)
                    }
                    _ => {
                        let x = self.bind_expr(inner)?;
                        if x.ty == LogicalType::Any
                            && matches!(x.kind, BoundExprKind::Literal(Value::Null))
                        {
                            return Ok(BoundExpr::literal(Value::Null, span));
                        }
                        Err(not_supported(span, "a label test on this expression"))
                    }
                }
            }
            _ => Err(not_supported(span, "this expression")),
        }
    }
}

/// The common type of two branch types (numeric widening; ANY yields the other).
fn unify(a: &LogicalType, b: &LogicalType) -> Option<LogicalType> {
    if a == b || *b == LogicalType::Any {
        return Some(a.clone());
    }
    if *a == LogicalType::Any {
        return Some(b.clone());
    }
    if a.is_integer() && b.is_integer() {
        return Some(LogicalType::Int64);
    }
    if a.is_numeric() && b.is_numeric() {
        return Some(LogicalType::Double);
    }
    None
}

fn binary_type(op: BinaryOp, l: &LogicalType, r: &LogicalType) -> Result<LogicalType> {
    use LogicalType as T;
    let any = |t: &T| *t == T::Any;
    Ok(match op {
        BinaryOp::Or | BinaryOp::Xor | BinaryOp::And => {
            for t in [l, r] {
                if !matches!(t, T::Bool | T::Any) {
                    return Err(Error::type_error(format!(
                        "{op:?} expects BOOL operands, got {t}"
                    )));
                }
            }
            T::Bool
        }
        // Any two values compare: equality of different kinds is false (or
        // NULL), ordering them is NULL (Cypher), decided per value at run time.
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            T::Bool
        }
        BinaryOp::In => T::Bool,
        BinaryOp::RegexMatch | BinaryOp::StartsWith | BinaryOp::EndsWith | BinaryOp::Contains => {
            T::Bool
        }
        BinaryOp::Add
            if (*l == T::String || any(l))
                && (*r == T::String || any(r))
                && (*l == T::String || *r == T::String) =>
        {
            T::String
        }
        BinaryOp::Add
        | BinaryOp::Sub
        | BinaryOp::Mul
        | BinaryOp::Div
        | BinaryOp::Mod
        | BinaryOp::Pow => match (l, r) {
            _ if op == BinaryOp::Pow
                && (l.is_numeric() || any(l))
                && (r.is_numeric() || any(r)) =>
            {
                T::Double
            }
            (a, b)
                if (a.is_integer() || any(a))
                    && (b.is_integer() || any(b))
                    && !(any(a) && any(b)) =>
            {
                T::Int64
            }
            (a, b) if (a.is_numeric() || any(a)) && (b.is_numeric() || any(b)) => {
                if any(a) && any(b) {
                    T::Any
                } else {
                    T::Double
                }
            }
            (T::Date, T::Interval) | (T::Interval, T::Date)
                if matches!(op, BinaryOp::Add | BinaryOp::Sub) =>
            {
                T::Date
            }
            (T::Timestamp, T::Interval) | (T::Interval, T::Timestamp)
                if matches!(op, BinaryOp::Add | BinaryOp::Sub) =>
            {
                T::Timestamp
            }
            (T::Interval, T::Interval) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
                T::Interval
            }
            (T::Date, T::Date) if op == BinaryOp::Sub => T::Int64,
            (T::Timestamp, T::Timestamp) if op == BinaryOp::Sub => T::Interval,
            (a, b) if functions::temporal_arith_type(op, a, b).is_some() => {
                functions::temporal_arith_type(op, a, b).unwrap_or(T::Any)
            }
            (T::List(a), T::List(b)) if op == BinaryOp::Add => {
                T::List(Box::new(unify(a, b).unwrap_or(T::Any)))
            }
            // Appending or prepending one element.
            (T::List(a), b) | (b, T::List(a)) if op == BinaryOp::Add => {
                T::List(Box::new(unify(a, b).unwrap_or(T::Any)))
            }
            _ => {
                return Err(Error::type_error(format!(
                    "cannot apply {op:?} to {l} and {r}"
                )))
            }
        },
    })
}

/// The slot of property `name` in a variable's read list, added (with a fresh
/// slot) the first time the query reads it.
fn property_slot(
    properties: &mut Vec<(String, SlotId, LogicalType)>,
    next_slot: &mut u32,
    name: &str,
    ty: &LogicalType,
) -> SlotId {
    if let Some(p) = properties.iter().find(|p| p.0 == name) {
        return p.1;
    }
    let s = SlotId(*next_slot);
    *next_slot += 1;
    properties.push((name.to_string(), s, ty.clone()));
    s
}

fn split_conjuncts(e: BoundExpr, out: &mut Vec<BoundExpr>) {
    match e.kind {
        BoundExprKind::Binary(BinaryOp::And, l, r) => {
            split_conjuncts(*l, out);
            split_conjuncts(*r, out);
        }
        kind => out.push(BoundExpr { kind, ..e }),
    }
}

/// Binds a parsed statement against `catalog`.
pub fn bind(catalog: &Catalog, stmt: &Statement) -> Result<BoundStatement> {
    Binder::new(catalog).bind(stmt)
}

/// Binds with the statement's parameter values (their types, SKIP/LIMIT).
pub fn bind_with_params(
    catalog: &Catalog,
    stmt: &Statement,
    params: &HashMap<String, Value>,
) -> Result<BoundStatement> {
    let mut b = Binder::new(catalog);
    b.params = Some(params);
    b.bind(stmt)
}

/// Binds `clauses` as a query that starts from input rows holding `vars`
/// (in column order): the continuation of a write statement, bound after
/// its writes against the transaction's catalog.
pub fn bind_continuation(
    catalog: &Catalog,
    vars: &[(String, SeedKind)],
    clauses: &[Clause],
    params: &HashMap<String, Value>,
) -> Result<BoundStatement> {
    let mut b = Binder::new(catalog);
    b.params = Some(params);
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
            }
            SeedKind::Rel(tables) => {
                // Like a rel carried through WITH: the id, then hidden
                // values for the endpoints and every property.
                b.part.inputs.push((slot, LogicalType::InternalId));
                b.rels_carried.push((name.clone(), slot));
                b.carried_rel_tables.push((name.clone(), tables.clone()));
                let ends = [bind_entity::CARRIED_SRC, bind_entity::CARRIED_DST];
                let hidden = ends
                    .iter()
                    .map(|e| (e.to_string(), LogicalType::InternalId))
                    .chain(carried_rel_columns(catalog, tables));
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
fn strip(e: &BoundExpr) -> BoundExpr {
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
fn substitute(
    e: &BoundExpr,
    targets: &[BoundExpr],
    replace: &dyn Fn(usize, &BoundExpr) -> BoundExpr,
) -> BoundExpr {
    let stripped = strip(e);
    if let Some(i) = targets.iter().position(|t| *t == stripped) {
        return replace(i, e);
    }
    let sub = |x: &BoundExpr| substitute(x, targets, replace);
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

/// Binding of nested values and comprehensions: map literals, field access,
/// indexing, slicing, list comprehensions, quantifiers and `reduce`.
impl Binder<'_> {
    /// A reference to a comprehension variable (these shadow every other name).
    fn bind_local(&self, e: &ast::Expr) -> Option<BoundExpr> {
        let ExprKind::Variable(name) = &e.kind else {
            return None;
        };
        let (_, idx, ty) = self.locals.iter().rev().find(|l| &l.0 == name)?;
        Some(BoundExpr {
            kind: BoundExprKind::Local(*idx),
            ty: ty.clone(),
            span: e.span,
        })
    }

    /// Whether `var.key` reads a field of a value (a comprehension variable,
    /// a map or node value carried by WITH, a projection alias) rather than a
    /// property of a node or rel variable of the pattern.
    fn is_value_variable(&self, var: &str) -> bool {
        if self.locals.iter().any(|l| l.0 == var) {
            return true;
        }
        if self.graph.nodes.iter().any(|n| n.name == var)
            || self.graph.rels.iter().any(|r| r.name == var)
            || self.rels_carried.iter().any(|r| r.0 == var)
        {
            return false;
        }
        if let Some((_, e)) = self.aliases.iter().find(|a| a.0 == var) {
            return has_fields(&e.ty);
        }
        self.values.iter().any(|v| v.0 == var && has_fields(&v.2))
    }

    /// `expr.key` on a value: a map's entry, a node's or rel's property.
    fn bind_field(
        &mut self,
        target: &ast::Expr,
        key: &ast::Ident,
        span: Span,
    ) -> Result<BoundExpr> {
        let target = self.bind_expr(target)?;
        let ty = match &target.ty {
            LogicalType::Struct(fields) => fields
                .iter()
                .find(|f| f.0 == key.name)
                .map_or(LogicalType::Any, |f| f.1.clone()),
            LogicalType::Map(_, v) => (**v).clone(),
            LogicalType::Node | LogicalType::Rel | LogicalType::Any => LogicalType::Any,
            t if functions::is_temporal(t) => {
                functions::temporal_field_type(t, &key.name).unwrap_or(LogicalType::Any)
            }
            LogicalType::InternalId => {
                return Err(not_supported(
                    span,
                    "property access on a node or rel that is not a pattern variable",
                ))
            }
            other => {
                return Err(Error::at(
                    ErrorKind::Type,
                    span,
                    format!(
                        "cannot read '{}' of a {other} value (expected a map, node or rel)",
                        key.name
                    ),
                ))
            }
        };
        Ok(BoundExpr {
            kind: BoundExprKind::Field(Box::new(target), key.name.clone()),
            ty,
            span,
        })
    }

    /// Binds `body` with `vars` (name, type) in scope as fresh locals and
    /// aggregates disallowed; returns the locals' indexes and the result.
    fn with_locals<T>(
        &mut self,
        vars: &[(&ast::Ident, LogicalType)],
        body: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<(Vec<u32>, T)> {
        let mut idxs = Vec::with_capacity(vars.len());
        for (name, ty) in vars {
            let idx = self.next_local;
            self.next_local += 1;
            self.locals.push((name.name.clone(), idx, ty.clone()));
            idxs.push(idx);
        }
        let saved = self.aggregates.take();
        let r = body(self);
        self.aggregates = saved;
        self.locals.truncate(self.locals.len() - vars.len());
        Ok((idxs, r?))
    }

    fn bind_nested_expr(&mut self, e: &ast::Expr) -> Result<BoundExpr> {
        let span = e.span;
        let (kind, ty) = match &e.kind {
            ExprKind::Map(entries) => {
                let mut fields: Vec<(String, BoundExpr)> = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let v = self.bind_expr(v)?;
                    // A repeated key keeps the last value.
                    match fields.iter_mut().find(|f| f.0 == k.name) {
                        Some(f) => f.1 = v,
                        None => fields.push((k.name.clone(), v)),
                    }
                }
                let ty = LogicalType::Struct(
                    fields
                        .iter()
                        .map(|(k, v)| (k.clone(), v.ty.clone()))
                        .collect(),
                );
                (BoundExprKind::Map(fields), ty)
            }
            ExprKind::Index(target, index) => {
                let target = self.bind_expr(target)?;
                let index = self.bind_expr(index)?;
                let ty = match &target.ty {
                    LogicalType::List(elem) => {
                        check_integer(&index, "a list index")?;
                        (**elem).clone()
                    }
                    LogicalType::Struct(_)
                    | LogicalType::Map(..)
                    | LogicalType::Node
                    | LogicalType::Rel => {
                        if !matches!(index.ty, LogicalType::String | LogicalType::Any) {
                            return Err(Error::at(
                                ErrorKind::Type,
                                index.span,
                                format!("a map key must be a STRING, got {}", index.ty),
                            ));
                        }
                        match (&target.ty, &index.kind) {
                            (
                                LogicalType::Struct(fields),
                                BoundExprKind::Literal(Value::String(k)),
                            ) => fields
                                .iter()
                                .find(|f| &f.0 == k)
                                .map_or(LogicalType::Any, |f| f.1.clone()),
                            (LogicalType::Map(_, v), _) => (**v).clone(),
                            _ => LogicalType::Any,
                        }
                    }
                    LogicalType::Any => {
                        if !(index.ty.is_integer()
                            || matches!(index.ty, LogicalType::String | LogicalType::Any))
                        {
                            return Err(Error::at(
                                ErrorKind::Type,
                                index.span,
                                format!(
                                    "an index must be an INTEGER (lists) or a STRING (maps), got {}",
                                    index.ty
                                ),
                            ));
                        }
                        LogicalType::Any
                    }
                    other => {
                        return Err(Error::at(
                            ErrorKind::Type,
                            target.span,
                            format!("cannot index a {other} value (expected a list or map)"),
                        ))
                    }
                };
                (BoundExprKind::Index(Box::new(target), Box::new(index)), ty)
            }
            ExprKind::Slice(target, from, to) => {
                let target = self.bind_expr(target)?;
                if !matches!(target.ty, LogicalType::List(_) | LogicalType::Any) {
                    return Err(Error::at(
                        ErrorKind::Type,
                        target.span,
                        format!("cannot slice a {} value (expected a list)", target.ty),
                    ));
                }
                let mut bound = |b: &Option<Box<ast::Expr>>| -> Result<Option<Box<BoundExpr>>> {
                    match b {
                        None => Ok(None),
                        Some(b) => {
                            let b = self.bind_expr(b)?;
                            check_integer(&b, "a slice bound")?;
                            Ok(Some(Box::new(b)))
                        }
                    }
                };
                let (from, to) = (bound(from)?, bound(to)?);
                let ty = target.ty.clone();
                (BoundExprKind::Slice(Box::new(target), from, to), ty)
            }
            ExprKind::ListComprehension {
                variable,
                list,
                predicate,
                projection,
            } => {
                let list = self.bind_expr(list)?;
                let elem = element_type(&list, "a list comprehension")?;
                let (vars, (predicate, projection)) =
                    self.with_locals(&[(variable, elem.clone())], |b| {
                        let p = predicate.as_ref().map(|p| b.bind_expr(p)).transpose()?;
                        if let Some(p) = &p {
                            check_predicate(p, "a list comprehension")?;
                        }
                        let q = projection.as_ref().map(|q| b.bind_expr(q)).transpose()?;
                        Ok((p, q))
                    })?;
                let ty =
                    LogicalType::List(Box::new(projection.as_ref().map_or(elem, |q| q.ty.clone())));
                (
                    BoundExprKind::ListComprehension {
                        var: vars[0],
                        list: Box::new(list),
                        predicate: predicate.map(Box::new),
                        projection: projection.map(Box::new),
                    },
                    ty,
                )
            }
            ExprKind::Quantifier {
                kind,
                variable,
                list,
                predicate,
            } => {
                let what = match kind {
                    ast::Quantifier::All => "all()",
                    ast::Quantifier::Any => "any()",
                    ast::Quantifier::None => "none()",
                    ast::Quantifier::Single => "single()",
                };
                let list = self.bind_expr(list)?;
                let elem = element_type(&list, what)?;
                let (vars, predicate) = self.with_locals(&[(variable, elem)], |b| {
                    let p = b.bind_expr(predicate)?;
                    check_predicate(&p, what)?;
                    Ok(p)
                })?;
                (
                    BoundExprKind::Quantifier {
                        kind: *kind,
                        var: vars[0],
                        list: Box::new(list),
                        predicate: Box::new(predicate),
                    },
                    LogicalType::Bool,
                )
            }
            ExprKind::Reduce {
                accumulator,
                init,
                variable,
                list,
                expr,
            } => {
                let init = self.bind_expr(init)?;
                let list = self.bind_expr(list)?;
                let elem = element_type(&list, "reduce()")?;
                // The accumulator's type is the common type of the initial
                // value and the step (bound again when the step widens it).
                let mut acc_ty = init.ty.clone();
                let (vars, step) = loop {
                    let (vars, step) = self.with_locals(
                        &[(accumulator, acc_ty.clone()), (variable, elem.clone())],
                        |b| b.bind_expr(expr),
                    )?;
                    let next = unify(&acc_ty, &step.ty).unwrap_or(LogicalType::Any);
                    if acc_ty == LogicalType::Any || next == acc_ty {
                        break (vars, step);
                    }
                    acc_ty = next;
                };
                (
                    BoundExprKind::Reduce {
                        acc: vars[0],
                        init: Box::new(init),
                        var: vars[1],
                        list: Box::new(list),
                        expr: Box::new(step),
                    },
                    acc_ty,
                )
            }
            _ => return Err(not_supported(span, "this expression")),
        };
        Ok(BoundExpr { kind, ty, span })
    }
}

/// Whether `e` calls scalar function `name` anywhere.
fn calls_function(e: &BoundExpr, name: &str) -> bool {
    match &e.kind {
        BoundExprKind::Function(n, args) => {
            n == name || args.iter().any(|a| calls_function(a, name))
        }
        BoundExprKind::Unary(_, x) | BoundExprKind::Cast(x) => calls_function(x, name),
        BoundExprKind::Binary(_, x, y) => calls_function(x, name) || calls_function(y, name),
        BoundExprKind::List(items) => items.iter().any(|a| calls_function(a, name)),
        BoundExprKind::Case {
            operand,
            whens,
            else_,
        } => {
            operand.iter().chain(else_).any(|x| calls_function(x, name))
                || whens
                    .iter()
                    .any(|(w, t)| calls_function(w, name) || calls_function(t, name))
        }
        _ => {
            let mut found = false;
            e.for_each_child(&mut |c| found = found || calls_function(c, name));
            found
        }
    }
}

impl Binder<'_> {
    /// `q1 UNION [ALL] q2 ...`: each single query bound on its own (fresh
    /// scope and slots); all must be read queries returning the same
    /// column names, joined all by UNION or all by UNION ALL.
    fn bind_union(&mut self, q: &ast::Query) -> Result<BoundStatement> {
        let all = q.union_all.first().copied().unwrap_or(false);
        if q.union_all.iter().any(|a| *a != all) {
            return Err(Error::at(
                ErrorKind::Semantic,
                q.span,
                "UNION and UNION ALL cannot be mixed in one query",
            ));
        }
        let mut queries = Vec::with_capacity(q.parts.len());
        let mut columns: Option<Vec<String>> = None;
        for part in &q.parts {
            let single = ast::Query {
                parts: vec![part.clone()],
                union_all: Vec::new(),
                span: part.span,
            };
            let mut binder = Binder::new(self.catalog);
            binder.params = self.params;
            let query = match binder.bind_query(&single)? {
                BoundStatement::Query(query) => *query,
                _ => {
                    return Err(not_supported(
                        part.span,
                        "UNION of queries with writing clauses or CALL",
                    ))
                }
            };
            let names: Vec<String> = query
                .parts
                .last()
                .map(|p| p.outputs.iter().map(|(n, _)| n.clone()).collect())
                .unwrap_or_default();
            match &columns {
                None => columns = Some(names),
                Some(first) if *first != names => {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        part.span,
                        format!(
                            "all queries of a UNION must return the same columns: ({}) here, ({}) in the first query",
                            names.join(", "),
                            first.join(", ")
                        ),
                    ))
                }
                Some(_) => {}
            }
            queries.push(query);
        }
        Ok(BoundStatement::Union { queries, all })
    }
}
