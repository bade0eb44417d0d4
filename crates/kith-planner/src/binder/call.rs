//! `CALL`: the built-in catalog calls (`show_tables()`, `table_info(t)`) and
//! registered procedures, standalone (`CALL p(1)`, `CALL p` with arguments
//! from parameters) or inside a query (`... CALL p(x) YIELD a AS b WHERE
//! ...`). An in-query call becomes an UNWIND of the procedure's rows (a list
//! of structs) into a hidden variable and a `WITH *, row.a AS b WHERE ...`
//! that names the yielded outputs, so it runs per input row like any
//! UNWIND.

use super::*;
use crate::procedure::{Procedure, ProcedureRef};

/// The parts of a `CALL` clause.
pub(super) struct CallClause<'c> {
    pub name: &'c ast::Ident,
    pub args: Option<&'c [ast::Expr]>,
    pub yield_star: bool,
    pub yields: Option<&'c [(ast::Ident, Option<ast::Ident>)]>,
    pub where_: Option<&'c ast::Expr>,
    pub span: Span,
}

impl<'c> CallClause<'c> {
    pub fn of(clause: &'c Clause) -> Option<CallClause<'c>> {
        let Clause::Call {
            procedure,
            args,
            yield_star,
            yields,
            where_,
            span,
        } = clause
        else {
            return None;
        };
        Some(CallClause {
            name: procedure,
            args: args.as_deref(),
            yield_star: *yield_star,
            yields: yields.as_deref(),
            where_: where_.as_ref(),
            span: *span,
        })
    }
}

/// Whether `name` is a built-in catalog call rather than a procedure.
pub(super) fn is_catalog_call(name: &str) -> bool {
    name.eq_ignore_ascii_case("show_tables") || name.eq_ignore_ascii_case("table_info")
}

impl Binder<'_> {
    pub(super) fn bind_table_call(
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

    /// A call that is the whole query: every output (or the yielded ones)
    /// is returned; a procedure without outputs returns no rows.
    pub(super) fn bind_standalone_call(
        &mut self,
        clause: CallClause<'_>,
    ) -> Result<BoundStatement> {
        let mut predicates = Vec::new();
        let call = self.bind_call(clause, true, &mut predicates)?;
        let BoundCall {
            procedure,
            args,
            yielded,
            span,
        } = call;
        if procedure.outputs.is_empty() {
            return Ok(BoundStatement::TableCall(TableCall::Procedure {
                procedure: ProcedureRef(procedure),
                args,
            }));
        }
        let items = yielded
            .into_iter()
            .map(|name| ast::ProjectionItem {
                expr: ast::Expr {
                    kind: ExprKind::Variable(name.clone()),
                    span,
                },
                alias: None,
                text: name,
            })
            .collect();
        let ret = ast::Projection::plain(false, false, items, None, span);
        self.bind_projection(&ret, predicates)?;
        Ok(BoundStatement::Query(Box::new(self.take_query())))
    }

    /// Binds a procedure call clause: checks the arguments against the
    /// signature, unwinds the procedure's rows and binds the yielded outputs
    /// (with their aliases) as variables. A standalone call yields every
    /// output unless it names some; an in-query call only what it yields.
    /// Returns the procedure and the names it yielded, and for a standalone
    /// call of a procedure without outputs its arguments (constants: there
    /// are no input rows; nothing is unwound).
    pub(super) fn bind_call(
        &mut self,
        clause: CallClause<'_>,
        standalone: bool,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<BoundCall> {
        let CallClause {
            name,
            args,
            yield_star,
            yields,
            where_,
            span,
        } = clause;
        if is_catalog_call(&name.name) {
            return Err(not_supported(
                span,
                &format!("{}() inside a query (call it on its own)", name.name),
            ));
        }
        let procedure = Arc::clone(self.procedures.get(&name.name).ok_or_else(|| {
            Error::at(
                ErrorKind::Semantic,
                name.span,
                format!("procedure '{}' does not exist", name.name),
            )
        })?);
        if yield_star && !standalone {
            return Err(Error::at(
                ErrorKind::Syntax,
                span,
                "YIELD * is only allowed when CALL is the whole query; name the outputs to yield",
            ));
        }
        let args = self.call_arguments(&procedure, name, args, standalone)?;
        let yielded = yielded_outputs(&procedure, name, yields, standalone);
        self.check_yielded(&procedure, &yielded)?;
        if standalone && procedure.outputs.is_empty() {
            // Nothing to return: the call runs once, outside any query.
            let call_args = args
                .iter()
                .map(|a| self.bind_expr(a))
                .collect::<Result<Vec<_>>>()?;
            self.check_argument_types(&procedure, &call_args)?;
            return Ok(BoundCall {
                procedure,
                args: call_args,
                yielded: Vec::new(),
                span,
            });
        }
        let row = self.unwind_call(&procedure, args, span, predicates)?;
        if !yielded.is_empty() || where_.is_some() {
            self.project_yielded(row, &yielded, where_, span, predicates)?;
        }
        Ok(BoundCall {
            procedure,
            args: Vec::new(),
            yielded: yielded.into_iter().map(|(_, v)| v.name).collect(),
            span,
        })
    }

    /// The outputs a call yields may not clash with names in scope or each
    /// other.
    fn check_yielded(&self, procedure: &Procedure, yielded: &[(String, ast::Ident)]) -> Result<()> {
        for (i, (out, var)) in yielded.iter().enumerate() {
            if !procedure.outputs.iter().any(|c| &c.name == out) {
                let names: Vec<&str> = procedure.outputs.iter().map(|c| c.name.as_str()).collect();
                return Err(Error::at(
                    ErrorKind::Semantic,
                    var.span,
                    format!(
                        "procedure {} has no output '{out}' (its outputs: {})",
                        procedure.name,
                        names.join(", ")
                    ),
                ));
            }
            self.check_new_variable(var)?;
            if yielded[..i].iter().any(|(_, v)| v.name == var.name) {
                return Err(Error::at(
                    ErrorKind::Semantic,
                    var.span,
                    format!("variable '{}' is yielded twice", var.name),
                ));
            }
        }
        Ok(())
    }

    /// Unwinds the rows of a call of `procedure` with `args` into a hidden
    /// variable, whose name is returned. Arguments over variables of a
    /// pattern are computed in the part that matches it, then the call
    /// expands the next part's rows.
    fn unwind_call(
        &mut self,
        procedure: &Arc<Procedure>,
        mut args: Vec<ast::Expr>,
        span: Span,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<String> {
        if self.has_pattern_state(predicates) {
            // Checked where they are written (no aggregates, known
            // variables) before they become items of the carrying WITH.
            let subqueries = self.subqueries.len();
            for a in &args {
                self.bind_expr(a)?;
            }
            self.subqueries.truncate(subqueries);
            let base = self.next_slot;
            let hidden = args
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("_anon_call_{base}_arg{i}"), a.clone()))
                .collect();
            args = self.carry_into_new_part(hidden, span, predicates)?;
        }
        let bound_args = args
            .iter()
            .map(|a| self.bind_expr(a))
            .collect::<Result<Vec<_>>>()?;
        self.check_argument_types(procedure, &bound_args)?;
        let row_ty = procedure.row_type();
        let slot = self.new_slot();
        let hidden = format!("_anon_call_{}", slot.0);
        self.part.unwinds.push(BoundUnwind {
            expr: BoundExpr {
                kind: BoundExprKind::Procedure {
                    procedure: ProcedureRef(Arc::clone(procedure)),
                    args: bound_args,
                },
                ty: LogicalType::List(Box::new(row_ty.clone())),
                span,
            },
            slot,
            ty: row_ty.clone(),
        });
        self.values.push((hidden.clone(), slot, row_ty));
        Ok(hidden)
    }

    /// `WITH *, row.out AS var ... WHERE ...`: names the `yielded` outputs
    /// of the call's rows (hidden variable `row`) and filters them.
    fn project_yielded(
        &mut self,
        row: String,
        yielded: &[(String, ast::Ident)],
        where_: Option<&ast::Expr>,
        span: Span,
        predicates: &mut Vec<BoundExpr>,
    ) -> Result<()> {
        let row = ast::Expr {
            kind: ExprKind::Variable(row),
            span,
        };
        let items = yielded
            .iter()
            .map(|(out, var)| ast::ProjectionItem {
                expr: ast::Expr {
                    kind: ExprKind::Property(
                        Box::new(row.clone()),
                        ast::Ident {
                            name: out.clone(),
                            span: var.span,
                        },
                    ),
                    span: var.span,
                },
                alias: Some(var.clone()),
                text: var.name.clone(),
            })
            .collect();
        let with = ast::Projection::plain(true, true, items, where_.cloned(), span);
        *predicates = self.bind_projection(&with, std::mem::take(predicates))?;
        Ok(())
    }

    /// The argument expressions of a call: as written, or for `CALL p`
    /// without parentheses (standalone only) the parameters named like the
    /// procedure's inputs.
    fn call_arguments(
        &self,
        procedure: &Procedure,
        name: &ast::Ident,
        args: Option<&[ast::Expr]>,
        standalone: bool,
    ) -> Result<Vec<ast::Expr>> {
        let signature = || {
            let inputs: Vec<String> = procedure
                .inputs
                .iter()
                .map(|c| format!("{} :: {}", c.name, c.ty))
                .collect();
            format!("{}({})", procedure.name, inputs.join(", "))
        };
        let Some(args) = args else {
            if !standalone && !procedure.inputs.is_empty() {
                return Err(Error::at(
                    ErrorKind::Syntax,
                    name.span,
                    format!(
                        "a CALL inside a query passes its arguments explicitly: {}",
                        signature()
                    ),
                ));
            }
            let mut out = Vec::with_capacity(procedure.inputs.len());
            for c in &procedure.inputs {
                if let Some(params) = self.params {
                    if !params.contains_key(&c.name) {
                        return Err(Error::at(
                            ErrorKind::Semantic,
                            name.span,
                            format!(
                                "CALL {} without arguments reads parameter ${}, which was not given a value",
                                procedure.name, c.name
                            ),
                        ));
                    }
                }
                out.push(ast::Expr {
                    kind: ExprKind::Parameter(c.name.clone()),
                    span: name.span,
                });
            }
            return Ok(out);
        };
        if args.len() != procedure.inputs.len() {
            return Err(Error::at(
                ErrorKind::Semantic,
                name.span,
                format!(
                    "{} takes {} argument(s), got {}",
                    signature(),
                    procedure.inputs.len(),
                    args.len()
                ),
            ));
        }
        Ok(args.to_vec())
    }

    fn check_argument_types(&self, procedure: &Procedure, args: &[BoundExpr]) -> Result<()> {
        for (a, c) in args.iter().zip(&procedure.inputs) {
            if !c.ty.accepts_type(&a.ty) {
                return Err(Error::at(
                    ErrorKind::Type,
                    a.span,
                    format!(
                        "argument '{}' of procedure {} expects {}, got {}",
                        c.name, procedure.name, c.ty, a.ty
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A bound procedure call.
pub(super) struct BoundCall {
    procedure: Arc<Procedure>,
    /// The arguments of a standalone call to a procedure without outputs
    /// (otherwise empty: they live in the unwind).
    args: Vec<BoundExpr>,
    /// The variables the call bound, in yield order.
    yielded: Vec<String>,
    span: Span,
}

/// The outputs a call binds, as (output name, variable): those it yields,
/// or for a standalone call without YIELD every output.
fn yielded_outputs(
    procedure: &Procedure,
    name: &ast::Ident,
    yields: Option<&[(ast::Ident, Option<ast::Ident>)]>,
    standalone: bool,
) -> Vec<(String, ast::Ident)> {
    match yields {
        Some(items) => items
            .iter()
            .map(|(out, alias)| (out.name.clone(), alias.clone().unwrap_or(out.clone())))
            .collect(),
        None if standalone => procedure
            .outputs
            .iter()
            .map(|c| {
                let ident = ast::Ident {
                    name: c.name.clone(),
                    span: name.span,
                };
                (c.name.clone(), ident)
            })
            .collect(),
        None => Vec::new(),
    }
}
