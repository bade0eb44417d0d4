//! Queries and their clauses.

use kith_common::Result;

use super::{Parser, CLAUSE_KEYWORDS};
use crate::ast::*;
use crate::lexer::TokenKind;

impl Parser<'_> {
    pub(super) fn at_clause_start(&self) -> bool {
        [
            "MATCH", "UNWIND", "WITH", "RETURN", "CREATE", "MERGE", "SET", "REMOVE", "DELETE",
            "CALL",
        ]
        .iter()
        .any(|k| self.is_kw(k))
            || (self.is_kw("OPTIONAL") && self.is_kw_at(1, "MATCH"))
            || (self.is_kw("DETACH") && self.is_kw_at(1, "DELETE"))
    }

    /// `single_query (UNION [ALL] single_query)*`.
    pub(super) fn query(&mut self) -> Result<Query> {
        self.query_in(false)
    }

    /// A query; `in_parens` when it is a `( ... )` subquery (COPY) ending at `)`.
    pub(super) fn query_in(&mut self, in_parens: bool) -> Result<Query> {
        let start = self.span().start;
        let mut parts = vec![self.single_query_in(false, in_parens)?];
        let mut union_all = Vec::new();
        while self.eat_kw("UNION") {
            union_all.push(self.eat_kw("ALL"));
            parts.push(self.single_query_in(false, in_parens)?);
        }
        Ok(Query {
            parts,
            union_all,
            span: self.span_from(start),
        })
    }

    /// A sequence of clauses. Inside `EXISTS { ... }` (`in_braces`) it ends at `}`.
    pub(super) fn single_query(&mut self, in_braces: bool) -> Result<SingleQuery> {
        self.single_query_in(in_braces, false)
    }

    fn single_query_in(&mut self, in_braces: bool, in_parens: bool) -> Result<SingleQuery> {
        let start = self.span().start;
        let mut clauses = Vec::new();
        loop {
            if self.at_clause_start() {
                clauses.push(self.clause()?);
                continue;
            }
            let at_end = self.at_eof()
                || self.check(&TokenKind::Semicolon)
                || self.is_kw("UNION")
                || (in_braces && self.check(&TokenKind::RBrace))
                || (in_parens && self.check(&TokenKind::RParen));
            if at_end && !clauses.is_empty() {
                break;
            }
            let expected = if clauses.is_empty() {
                format!("a clause: {CLAUSE_KEYWORDS}")
            } else if in_braces {
                format!("{CLAUSE_KEYWORDS} or '}}'")
            } else if in_parens {
                format!("{CLAUSE_KEYWORDS}, UNION or ')'")
            } else {
                format!("{CLAUSE_KEYWORDS}, UNION, ';' or end of input")
            };
            return Err(self.unexpected(&expected));
        }
        Ok(SingleQuery {
            clauses,
            span: self.span_from(start),
        })
    }

    fn clause(&mut self) -> Result<Clause> {
        let start = self.span().start;
        if self.is_kw("MATCH") || self.is_kw("OPTIONAL") {
            let optional = self.eat_kw("OPTIONAL");
            self.expect_kw("MATCH", " after OPTIONAL")?;
            let patterns = self.pattern_list()?;
            let where_ = if self.eat_kw("WHERE") {
                Some(self.expr()?)
            } else {
                None
            };
            return Ok(Clause::Match {
                optional,
                patterns,
                where_,
                span: self.span_from(start),
            });
        }
        if self.eat_kw("UNWIND") {
            let expr = self.expr()?;
            self.expect_kw("AS", " after the UNWIND expression")?;
            let alias = self.variable("a variable name after AS")?;
            return Ok(Clause::Unwind {
                expr,
                alias,
                span: self.span_from(start),
            });
        }
        if self.is_kw("WITH") || self.is_kw("RETURN") {
            return self.projection().map(Clause::Projection);
        }
        if self.eat_kw("CREATE") {
            let patterns = self.pattern_list()?;
            return Ok(Clause::Create {
                patterns,
                span: self.span_from(start),
            });
        }
        if self.eat_kw("MERGE") {
            let pattern = self.path_pattern()?;
            let mut on_create = Vec::new();
            let mut on_match = Vec::new();
            while self.eat_kw("ON") {
                let create = if self.eat_kw("CREATE") {
                    true
                } else if self.eat_kw("MATCH") {
                    false
                } else {
                    return Err(self.unexpected("CREATE or MATCH after ON"));
                };
                self.expect_kw(
                    "SET",
                    if create {
                        " after ON CREATE"
                    } else {
                        " after ON MATCH"
                    },
                )?;
                let items = self.set_items()?;
                if create {
                    on_create.extend(items);
                } else {
                    on_match.extend(items);
                }
            }
            return Ok(Clause::Merge {
                pattern,
                on_create,
                on_match,
                span: self.span_from(start),
            });
        }
        if self.eat_kw("SET") {
            let items = self.set_items()?;
            return Ok(Clause::Set {
                items,
                span: self.span_from(start),
            });
        }
        if self.eat_kw("REMOVE") {
            let mut items = Vec::new();
            loop {
                let variable = self.variable("a variable in REMOVE")?;
                if self.check(&TokenKind::Colon) {
                    let labels = self.label_list()?;
                    items.push(RemoveItem::Labels { variable, labels });
                } else if self.check(&TokenKind::Dot) {
                    let target = self.property_chain(variable)?;
                    items.push(RemoveItem::Property(target));
                } else {
                    return Err(self.unexpected("'.' (a property) or ':' (labels) in REMOVE"));
                }
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
            return Ok(Clause::Remove {
                items,
                span: self.span_from(start),
            });
        }
        if self.is_kw("DETACH") || self.is_kw("DELETE") {
            let detach = self.eat_kw("DETACH");
            self.expect_kw("DELETE", " after DETACH")?;
            let mut exprs = vec![self.expr()?];
            while self.eat(&TokenKind::Comma) {
                exprs.push(self.expr()?);
            }
            return Ok(Clause::Delete {
                detach,
                exprs,
                span: self.span_from(start),
            });
        }
        if self.eat_kw("CALL") {
            return self.call_clause(start);
        }
        Err(self.unexpected(&format!("a clause: {CLAUSE_KEYWORDS}")))
    }

    fn call_clause(&mut self, start: u32) -> Result<Clause> {
        let mut procedure = self.ident("a procedure name after CALL")?;
        while self.check(&TokenKind::Dot) {
            self.advance();
            let part = self.ident("a name after '.'")?;
            procedure.name.push('.');
            procedure.name.push_str(&part.name);
            procedure.span = procedure.span.to(part.span);
        }
        let args = if self.eat(&TokenKind::LParen) {
            let mut args = Vec::new();
            if !self.check(&TokenKind::RParen) {
                args.push(self.expr()?);
                while self.eat(&TokenKind::Comma) {
                    args.push(self.expr()?);
                }
            }
            self.expect(&TokenKind::RParen, " after the procedure arguments")?;
            Some(args)
        } else {
            None
        };
        let mut yields = None;
        let mut yield_star = false;
        if self.eat_kw("YIELD") {
            if self.eat(&TokenKind::Star) {
                yield_star = true;
            } else {
                let mut items = Vec::new();
                loop {
                    let name = self.ident("a column name after YIELD")?;
                    let alias = if self.eat_kw("AS") {
                        Some(self.variable("a variable name after AS")?)
                    } else {
                        None
                    };
                    items.push((name, alias));
                    if !self.eat(&TokenKind::Comma) {
                        break;
                    }
                }
                yields = Some(items);
            }
        }
        let where_ = if self.eat_kw("WHERE") {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(Clause::Call {
            procedure,
            args,
            yield_star,
            yields,
            where_,
            span: self.span_from(start),
        })
    }

    /// `WITH ...` / `RETURN ...`.
    fn projection(&mut self) -> Result<Projection> {
        let start = self.span().start;
        let is_with = self.eat_kw("WITH");
        if !is_with {
            self.expect_kw("RETURN", "")?;
        }
        let distinct = self.eat_kw("DISTINCT");
        let mut star = false;
        let mut items = Vec::new();
        if self.eat(&TokenKind::Star) {
            star = true;
            while self.eat(&TokenKind::Comma) {
                items.push(self.projection_item()?);
            }
        } else {
            loop {
                items.push(self.projection_item()?);
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
        }
        let mut order_by = Vec::new();
        if self.eat_kw("ORDER") {
            self.expect_kw("BY", " after ORDER")?;
            loop {
                let expr = self.expr()?;
                let descending = if self.eat_kw("DESC") || self.eat_kw("DESCENDING") {
                    true
                } else {
                    let _ = self.eat_kw("ASC") || self.eat_kw("ASCENDING");
                    false
                };
                order_by.push(SortItem { expr, descending });
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
        }
        let skip = if self.eat_kw("SKIP") {
            Some(self.expr()?)
        } else {
            None
        };
        let limit = if self.eat_kw("LIMIT") {
            Some(self.expr()?)
        } else {
            None
        };
        let where_ = if is_with && self.eat_kw("WHERE") {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(Projection {
            is_with,
            distinct,
            star,
            items,
            order_by,
            skip,
            limit,
            where_,
            span: self.span_from(start),
        })
    }

    fn projection_item(&mut self) -> Result<ProjectionItem> {
        let expr = self.expr()?;
        let text = self.source(expr.span);
        let alias = if self.eat_kw("AS") {
            Some(self.variable("an alias after AS")?)
        } else {
            None
        };
        Ok(ProjectionItem { expr, alias, text })
    }

    /// `n.p = e`, `n = map`, `n += map`, `n:Label`, comma-separated.
    fn set_items(&mut self) -> Result<Vec<SetItem>> {
        let mut items = Vec::new();
        loop {
            let variable = if self.eat(&TokenKind::LParen) {
                // `SET (n).p = e`: a parenthesised variable before a property.
                let v = self.variable("a variable in SET")?;
                self.expect(&TokenKind::RParen, " after the variable in SET")?;
                if !self.check(&TokenKind::Dot) {
                    return Err(self.unexpected("'.' after '(variable)' in SET"));
                }
                v
            } else {
                self.variable("a variable in SET")?
            };
            if self.check(&TokenKind::Dot) {
                let target = self.property_chain(variable)?;
                self.expect(&TokenKind::Eq, " after the property in SET")?;
                let value = self.expr()?;
                items.push(SetItem::Property { target, value });
            } else if self.eat(&TokenKind::Eq) {
                let value = self.expr()?;
                items.push(SetItem::Replace { variable, value });
            } else if self.check(&TokenKind::Plus) && matches!(self.kind_at(1), TokenKind::Eq) {
                self.advance();
                self.advance();
                let value = self.expr()?;
                items.push(SetItem::Merge { variable, value });
            } else if self.check(&TokenKind::Colon) {
                let labels = self.label_list()?;
                items.push(SetItem::Labels { variable, labels });
            } else {
                return Err(self.unexpected("'.', '=', '+=' or ':' in SET"));
            }
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        Ok(items)
    }

    /// `var.a.b` as a property expression.
    fn property_chain(&mut self, variable: Ident) -> Result<Expr> {
        let base = self.height;
        let mut e = Expr {
            span: variable.span,
            kind: ExprKind::Variable(variable.name),
        };
        while self.eat(&TokenKind::Dot) {
            let key = self.ident("a property name after '.'")?;
            let span = e.span.to(key.span);
            self.grow()?;
            e = Expr {
                kind: ExprKind::Property(Box::new(e), key),
                span,
            };
        }
        Ok(self.done(base, e))
    }

    /// `:A:B` (each label may repeat the colon).
    pub(super) fn label_list(&mut self) -> Result<Vec<Ident>> {
        let mut labels = Vec::new();
        while self.eat(&TokenKind::Colon) {
            labels.push(self.ident("a label name after ':'")?);
        }
        Ok(labels)
    }
}
