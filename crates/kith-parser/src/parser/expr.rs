//! Expressions, by precedence (loosest first):
//! OR < XOR < AND < NOT < comparison (`= <> < <= > >= =~`) < string/list/null
//! predicates (`STARTS WITH`, `ENDS WITH`, `CONTAINS`, `IN`, `IS [NOT] NULL`) <
//! `+ -` < `* / %` < `^` < unary `+ -` < postfix (`.key`, `[i]`, `[a..b]`, `:Label`,
//! a variable's map projection `v {.key, .*}`)
//! < atoms.

use kith_common::{Error, Result, Span};

use super::pattern::parse_u64;
use super::Parser;
use crate::ast::*;
use crate::lexer::TokenKind;

fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    let span = l.span.to(r.span);
    Expr {
        kind: ExprKind::Binary(op, Box::new(l), Box::new(r)),
        span,
    }
}

impl Parser<'_> {
    pub(crate) fn expr(&mut self) -> Result<Expr> {
        self.enter()?;
        let r = self.or_expr();
        self.leave();
        r
    }

    fn or_expr(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.xor_expr()?;
        while self.eat_kw("OR") {
            let r = self.xor_expr()?;
            self.grow()?;
            l = bin(BinaryOp::Or, l, r);
        }
        Ok(self.done(base, l))
    }

    fn xor_expr(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.and_expr()?;
        while self.eat_kw("XOR") {
            let r = self.and_expr()?;
            self.grow()?;
            l = bin(BinaryOp::Xor, l, r);
        }
        Ok(self.done(base, l))
    }

    fn and_expr(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.not_expr()?;
        while self.eat_kw("AND") {
            let r = self.not_expr()?;
            self.grow()?;
            l = bin(BinaryOp::And, l, r);
        }
        Ok(self.done(base, l))
    }

    fn not_expr(&mut self) -> Result<Expr> {
        if self.is_kw("NOT") {
            let start = self.advance().span;
            self.enter()?;
            let inner = self.not_expr();
            self.leave();
            let inner = inner?;
            let span = start.to(inner.span);
            return Ok(Expr {
                kind: ExprKind::Unary(UnaryOp::Not, Box::new(inner)),
                span,
            });
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.predicate_expr()?;
        // `a < b < c` means `a < b AND b < c` (openCypher chains the
        // comparison operators); `prev` is the right operand of the last one.
        let mut prev: Option<Expr> = None;
        loop {
            let op = match self.kind() {
                TokenKind::Eq => BinaryOp::Eq,
                TokenKind::Ne => BinaryOp::Ne,
                TokenKind::Lt => BinaryOp::Lt,
                TokenKind::Le => BinaryOp::Le,
                TokenKind::Gt => BinaryOp::Gt,
                TokenKind::Ge => BinaryOp::Ge,
                TokenKind::RegexMatch => BinaryOp::RegexMatch,
                _ => return Ok(self.done(base, l)),
            };
            self.advance();
            let r = self.predicate_expr()?;
            self.grow()?;
            let chains = !matches!(op, BinaryOp::RegexMatch);
            l = match prev.take() {
                Some(p) if chains => bin(BinaryOp::And, l, bin(op, p, r.clone())),
                _ => bin(op, l, r.clone()),
            };
            prev = chains.then_some(r);
        }
    }

    fn predicate_expr(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.additive()?;
        loop {
            if self.is_kw("IS") {
                self.advance();
                let negated = self.eat_kw("NOT");
                let end = self.expect_kw(
                    "NULL",
                    if negated {
                        " after IS NOT"
                    } else {
                        " or NOT after IS"
                    },
                )?;
                let op = if negated {
                    UnaryOp::IsNotNull
                } else {
                    UnaryOp::IsNull
                };
                let span = l.span.to(end);
                self.grow()?;
                l = Expr {
                    kind: ExprKind::Unary(op, Box::new(l)),
                    span,
                };
                continue;
            }
            let op = if self.is_kw("STARTS") {
                self.advance();
                self.expect_kw("WITH", " after STARTS")?;
                BinaryOp::StartsWith
            } else if self.is_kw("ENDS") {
                self.advance();
                self.expect_kw("WITH", " after ENDS")?;
                BinaryOp::EndsWith
            } else if self.eat_kw("CONTAINS") {
                BinaryOp::Contains
            } else if self.eat_kw("IN") {
                BinaryOp::In
            } else {
                return Ok(self.done(base, l));
            };
            let r = self.additive()?;
            self.grow()?;
            l = bin(op, l, r);
        }
    }

    fn additive(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.multiplicative()?;
        loop {
            let op = match self.kind() {
                TokenKind::Plus => BinaryOp::Add,
                // `+=` belongs to SET.
                TokenKind::Minus => BinaryOp::Sub,
                _ => return Ok(self.done(base, l)),
            };
            if op == BinaryOp::Add && matches!(self.kind_at(1), TokenKind::Eq) {
                return Ok(self.done(base, l));
            }
            self.advance();
            let r = self.multiplicative()?;
            self.grow()?;
            l = bin(op, l, r);
        }
    }

    fn multiplicative(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.power()?;
        loop {
            let op = match self.kind() {
                TokenKind::Star => BinaryOp::Mul,
                TokenKind::Slash => BinaryOp::Div,
                TokenKind::Percent => BinaryOp::Mod,
                _ => return Ok(self.done(base, l)),
            };
            self.advance();
            let r = self.power()?;
            self.grow()?;
            l = bin(op, l, r);
        }
    }

    fn power(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut l = self.unary()?;
        while self.eat(&TokenKind::Caret) {
            let r = self.unary()?;
            self.grow()?;
            l = bin(BinaryOp::Pow, l, r);
        }
        Ok(self.done(base, l))
    }

    fn unary(&mut self) -> Result<Expr> {
        let op = match self.kind() {
            TokenKind::Minus => UnaryOp::Neg,
            TokenKind::Plus => UnaryOp::Plus,
            _ => return self.postfix(),
        };
        let start = self.advance().span;
        // `-9223372036854775808` is the one literal that only fits when negated.
        if op == UnaryOp::Neg {
            if let TokenKind::Integer(text) = self.kind() {
                if parse_u64(text) == Some(1u64 << 63) && !self.postfix_follows(1) {
                    let end = self.advance().span;
                    return Ok(Expr {
                        kind: ExprKind::Literal(Literal::Integer(i64::MIN)),
                        span: start.to(end),
                    });
                }
            }
        }
        self.enter()?;
        let inner = self.unary();
        self.leave();
        let inner = inner?;
        let span = start.to(inner.span);
        Ok(Expr {
            kind: ExprKind::Unary(op, Box::new(inner)),
            span,
        })
    }

    fn postfix_follows(&self, n: usize) -> bool {
        matches!(
            self.kind_at(n),
            TokenKind::Dot | TokenKind::LBracket | TokenKind::Colon | TokenKind::Caret
        )
    }

    fn postfix(&mut self) -> Result<Expr> {
        let base = self.height;
        let mut e = self.atom()?;
        loop {
            match self.kind() {
                TokenKind::Dot => {
                    self.advance();
                    let key = self.ident("a property name after '.'")?;
                    let span = e.span.to(key.span);
                    self.grow()?;
                    e = Expr {
                        kind: ExprKind::Property(Box::new(e), key),
                        span,
                    };
                }
                TokenKind::LBracket => {
                    self.advance();
                    let from = if self.check(&TokenKind::DotDot) {
                        None
                    } else {
                        Some(Box::new(self.expr()?))
                    };
                    if self.eat(&TokenKind::DotDot) {
                        let to = if self.check(&TokenKind::RBracket) {
                            None
                        } else {
                            Some(Box::new(self.expr()?))
                        };
                        let end = self.expect(&TokenKind::RBracket, " to close the slice")?;
                        let span = e.span.to(end);
                        self.grow()?;
                        e = Expr {
                            kind: ExprKind::Slice(Box::new(e), from, to),
                            span,
                        };
                    } else {
                        let end = self.expect(&TokenKind::RBracket, " or '..' in the subscript")?;
                        let span = e.span.to(end);
                        let idx = from.ok_or_else(|| Error::syntax(end, "expected an index"))?;
                        self.grow()?;
                        e = Expr {
                            kind: ExprKind::Index(Box::new(e), idx),
                            span,
                        };
                    }
                }
                TokenKind::LBrace if matches!(e.kind, ExprKind::Variable(_)) => {
                    let items = self.map_projection_items()?;
                    let span = self.span_from(e.span.start);
                    self.grow()?;
                    e = Expr {
                        kind: ExprKind::MapProjection(Box::new(e), items),
                        span,
                    };
                }
                TokenKind::Colon => {
                    let labels = self.label_list()?;
                    let span = self.span_from(e.span.start);
                    self.grow()?;
                    e = Expr {
                        kind: ExprKind::HasLabels(Box::new(e), labels),
                        span,
                    };
                }
                _ => return Ok(self.done(base, e)),
            }
        }
    }

    fn atom(&mut self) -> Result<Expr> {
        let start = self.span();
        let lit = |l: Literal, span: Span| Expr {
            kind: ExprKind::Literal(l),
            span,
        };
        match self.kind().clone() {
            TokenKind::Integer(text) => {
                self.advance();
                let v = parse_u64(&text)
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(|| Error::syntax(start, "integer literal out of range"))?;
                Ok(lit(Literal::Integer(v), start))
            }
            TokenKind::Float(f) => {
                self.advance();
                Ok(lit(Literal::Float(f), start))
            }
            TokenKind::Str(s) => {
                self.advance();
                Ok(lit(Literal::String(s), start))
            }
            TokenKind::Param(name) => {
                self.advance();
                Ok(Expr {
                    kind: ExprKind::Parameter(name),
                    span: start,
                })
            }
            TokenKind::LBracket => self.list_or_comprehension(),
            TokenKind::LBrace => self.map_literal(),
            TokenKind::LParen => self.paren_or_pattern(),
            TokenKind::QuotedIdent(name) => {
                self.advance();
                Ok(Expr {
                    kind: ExprKind::Variable(name),
                    span: start,
                })
            }
            TokenKind::Word(w) => self.word_atom(&w),
            _ => Err(self.unexpected("an expression")),
        }
    }

    fn word_atom(&mut self, w: &str) -> Result<Expr> {
        let start = self.span();
        let upper = w.to_ascii_uppercase();
        let next_is = |p: &Self, k: TokenKind| p.kind_at(1) == &k;
        match upper.as_str() {
            "TRUE" | "FALSE" | "NULL" => {
                self.advance();
                let l = match upper.as_str() {
                    "TRUE" => Literal::Bool(true),
                    "FALSE" => Literal::Bool(false),
                    _ => Literal::Null,
                };
                return Ok(Expr {
                    kind: ExprKind::Literal(l),
                    span: start,
                });
            }
            "CASE" => return self.case_expr(),
            "EXISTS" | "COUNT" if next_is(self, TokenKind::LBrace) => {
                self.advance();
                self.advance();
                let q = self.subquery_body()?;
                let end = self.expect(&TokenKind::RBrace, " to close the subquery")?;
                let kind = if upper == "EXISTS" {
                    ExprKind::Exists(Box::new(q))
                } else {
                    ExprKind::CountSubquery(Box::new(q))
                };
                return Ok(Expr {
                    kind,
                    span: start.to(end),
                });
            }
            "ALL" | "ANY" | "NONE" | "SINGLE"
                if next_is(self, TokenKind::LParen)
                    && self.is_variable_at(2)
                    && self.is_kw_at(3, "IN") =>
            {
                let kind = match upper.as_str() {
                    "ALL" => Quantifier::All,
                    "ANY" => Quantifier::Any,
                    "NONE" => Quantifier::None,
                    _ => Quantifier::Single,
                };
                self.advance();
                self.advance();
                let variable = self.variable("a variable")?;
                self.expect_kw("IN", "")?;
                let list = self.expr()?;
                self.expect_kw("WHERE", &format!(" in {}(...)", w))?;
                let predicate = self.expr()?;
                let end = self.expect(&TokenKind::RParen, &format!(" to close {w}(...)"))?;
                return Ok(Expr {
                    kind: ExprKind::Quantifier {
                        kind,
                        variable,
                        list: Box::new(list),
                        predicate: Box::new(predicate),
                    },
                    span: start.to(end),
                });
            }
            "REDUCE" if next_is(self, TokenKind::LParen) && self.kind_at(3) == &TokenKind::Eq => {
                self.advance();
                self.advance();
                let accumulator = self.variable("an accumulator variable")?;
                self.expect(&TokenKind::Eq, " after the accumulator")?;
                let init = self.expr()?;
                self.expect(&TokenKind::Comma, " after the initial value")?;
                let variable = self.variable("a variable")?;
                self.expect_kw("IN", " after the reduce variable")?;
                let list = self.expr()?;
                self.expect(&TokenKind::Pipe, " in reduce(...)")?;
                let expr = self.expr()?;
                let end = self.expect(&TokenKind::RParen, " to close reduce(...)")?;
                return Ok(Expr {
                    kind: ExprKind::Reduce {
                        accumulator,
                        init: Box::new(init),
                        variable,
                        list: Box::new(list),
                        expr: Box::new(expr),
                    },
                    span: start.to(end),
                });
            }
            _ => {}
        }
        // A function call: `name(` or `ns.name(`.
        let mut n = 1;
        while self.kind_at(n) == &TokenKind::Dot
            && matches!(
                self.kind_at(n + 1),
                TokenKind::Word(_) | TokenKind::QuotedIdent(_)
            )
        {
            n += 2;
        }
        if self.kind_at(n) == &TokenKind::LParen {
            return self.function_call();
        }
        if !self.at_variable() {
            return Err(self.unexpected("an expression"));
        }
        self.advance();
        Ok(Expr {
            kind: ExprKind::Variable(w.to_string()),
            span: start,
        })
    }

    fn function_call(&mut self) -> Result<Expr> {
        let start = self.span();
        let mut name = self.ident("a function name")?;
        while self.eat(&TokenKind::Dot) {
            let part = self.ident("a name after '.'")?;
            name.name.push('.');
            name.name.push_str(&part.name);
            name.span = name.span.to(part.span);
        }
        let fname = name.name.clone();
        self.expect(&TokenKind::LParen, "")?;
        let mut distinct = false;
        let mut star = false;
        let mut args = Vec::new();
        if self.eat(&TokenKind::Star) {
            star = true;
        } else if !self.check(&TokenKind::RParen) {
            distinct = self.eat_kw("DISTINCT");
            args.push(self.expr()?);
            // `CAST(x AS type)`: CAST is no keyword (it stays usable as a
            // name), so the form is recognised by the AS after its one
            // argument, which no other call accepts.
            if !distinct && fname.eq_ignore_ascii_case("cast") && self.eat_kw("AS") {
                let ty = self.type_name()?;
                let end = self.expect(&TokenKind::RParen, " to close CAST(... AS type)")?;
                let inner = args
                    .pop()
                    .ok_or_else(|| Error::internal("CAST without operand"))?;
                return Ok(Expr {
                    kind: ExprKind::Cast(Box::new(inner), ty),
                    span: start.to(end),
                });
            }
            while self.eat(&TokenKind::Comma) {
                args.push(self.expr()?);
            }
        }
        let end = self.expect(
            &TokenKind::RParen,
            &format!(" or ',' after the arguments of {fname}("),
        )?;
        Ok(Expr {
            kind: ExprKind::Function {
                name,
                distinct,
                star,
                args,
            },
            span: start.to(end),
        })
    }

    fn case_expr(&mut self) -> Result<Expr> {
        let start = self.advance().span;
        let operand = if self.is_kw("WHEN") {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut whens = Vec::new();
        while self.eat_kw("WHEN") {
            let w = self.expr()?;
            self.expect_kw("THEN", " after the WHEN condition")?;
            let t = self.expr()?;
            whens.push((w, t));
        }
        if whens.is_empty() {
            return Err(self.unexpected("WHEN in CASE"));
        }
        let else_ = if self.eat_kw("ELSE") {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        let end = self.expect_kw(
            "END",
            if else_.is_some() {
                " to close CASE"
            } else {
                ", WHEN or ELSE in CASE"
            },
        )?;
        Ok(Expr {
            kind: ExprKind::Case {
                operand,
                whens,
                else_,
            },
            span: start.to(end),
        })
    }

    /// The `{...}` of a map projection: `.key`, `.*`, `key: expr` or a
    /// variable, separated by commas.
    fn map_projection_items(&mut self) -> Result<Vec<MapProjectionItem>> {
        self.expect(&TokenKind::LBrace, "")?;
        let mut items = Vec::new();
        if !self.check(&TokenKind::RBrace) {
            loop {
                let item = if self.check(&TokenKind::Dot) {
                    let dot = self.advance().span;
                    if self.check(&TokenKind::Star) {
                        let star = self.advance().span;
                        MapProjectionItem::AllProperties(dot.to(star))
                    } else {
                        MapProjectionItem::Property(self.ident("a property name or '*' after '.'")?)
                    }
                } else {
                    let key = self.ident("'.key', '.*', 'key: value' or a variable")?;
                    if self.eat(&TokenKind::Colon) {
                        MapProjectionItem::Literal(key, self.expr()?)
                    } else {
                        MapProjectionItem::Variable(key)
                    }
                };
                items.push(item);
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
        }
        self.expect(&TokenKind::RBrace, " or ',' in the map projection")?;
        Ok(items)
    }

    /// `{k: v, ...}`.
    pub(super) fn map_literal(&mut self) -> Result<Expr> {
        let start = self.expect(&TokenKind::LBrace, "")?;
        let mut entries = Vec::new();
        if !self.check(&TokenKind::RBrace) {
            loop {
                let key = self.ident("a map key")?;
                self.expect(&TokenKind::Colon, " after the map key")?;
                let value = self.expr()?;
                entries.push((key, value));
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
        }
        let end = self.expect(&TokenKind::RBrace, " or ',' in the map")?;
        Ok(Expr {
            kind: ExprKind::Map(entries),
            span: start.to(end),
        })
    }

    /// `[a, b]`, `[x IN l WHERE p | e]` or `[p = (a)-->(b) WHERE q | e]`.
    fn list_or_comprehension(&mut self) -> Result<Expr> {
        let start = self.expect(&TokenKind::LBracket, "")?;
        // List comprehension.
        if self.at_variable() && self.is_kw_at(1, "IN") {
            let variable = self.variable("a variable")?;
            self.advance();
            let list = self.expr()?;
            let predicate = if self.eat_kw("WHERE") {
                Some(Box::new(self.expr()?))
            } else {
                None
            };
            let projection = if self.eat(&TokenKind::Pipe) {
                Some(Box::new(self.expr()?))
            } else {
                None
            };
            let end = self.expect(&TokenKind::RBracket, " to close the list comprehension")?;
            return Ok(Expr {
                kind: ExprKind::ListComprehension {
                    variable,
                    list: Box::new(list),
                    predicate,
                    projection,
                },
                span: start.to(end),
            });
        }
        // Pattern comprehension.
        let named = self.at_variable()
            && self.kind_at(1) == &TokenKind::Eq
            && self.kind_at(2) == &TokenKind::LParen;
        if named || self.check(&TokenKind::LParen) {
            let save = self.pos;
            let pstart = self.span().start;
            let variable = if named {
                let v = self.variable("a path variable")?;
                self.advance();
                Some(v)
            } else {
                None
            };
            match self.try_pattern() {
                Some(mut pattern)
                    if !pattern.chain.is_empty()
                        && (self.is_kw("WHERE") || self.check(&TokenKind::Pipe)) =>
                {
                    pattern.variable = variable;
                    pattern.span = self.span_from(pstart);
                    let predicate = if self.eat_kw("WHERE") {
                        Some(Box::new(self.expr()?))
                    } else {
                        None
                    };
                    self.expect(&TokenKind::Pipe, " in the pattern comprehension")?;
                    let projection = self.expr()?;
                    let end =
                        self.expect(&TokenKind::RBracket, " to close the pattern comprehension")?;
                    return Ok(Expr {
                        kind: ExprKind::PatternComprehension {
                            pattern: Box::new(pattern),
                            predicate,
                            projection: Box::new(projection),
                        },
                        span: start.to(end),
                    });
                }
                _ => self.pos = save,
            }
        }
        let mut items = Vec::new();
        if !self.check(&TokenKind::RBracket) {
            loop {
                items.push(self.expr()?);
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
        }
        let end = self.expect(&TokenKind::RBracket, " or ',' in the list")?;
        Ok(Expr {
            kind: ExprKind::List(items),
            span: start.to(end),
        })
    }

    /// `( expr )` or a pattern predicate `(a)-[:R]->(b)`.
    fn paren_or_pattern(&mut self) -> Result<Expr> {
        let save = self.pos;
        if let Some(p) = self.try_pattern() {
            if !p.chain.is_empty() {
                let span = p.span;
                return Ok(Expr {
                    kind: ExprKind::PatternPredicate(Box::new(p)),
                    span,
                });
            }
            self.pos = save;
        }
        let start = self.expect(&TokenKind::LParen, "")?;
        let mut inner = self.expr()?;
        let end = self.expect(&TokenKind::RParen, " to close the parenthesised expression")?;
        // The span covers the parentheses so that source text slices stay balanced.
        inner.span = start.to(end);
        Ok(inner)
    }

    /// The body of `EXISTS { ... }` / `COUNT { ... }`: clauses, or patterns with an
    /// optional WHERE (made into a MATCH clause).
    fn subquery_body(&mut self) -> Result<SingleQuery> {
        if self.at_clause_start() {
            return self.single_query(true);
        }
        let start = self.span().start;
        let patterns = self.pattern_list()?;
        let where_ = if self.eat_kw("WHERE") {
            Some(self.expr()?)
        } else {
            None
        };
        let span = self.span_from(start);
        Ok(SingleQuery {
            clauses: vec![Clause::Match {
                optional: false,
                patterns,
                where_,
                span,
            }],
            span,
        })
    }
}
