//! Graph patterns: `p = (a:L {k: v})-[r:T*1..3]->(b)`, `shortestPath(...)`.

use kith_common::{Error, Result};

use super::Parser;
use crate::ast::*;
use crate::lexer::TokenKind;

impl Parser<'_> {
    /// Comma-separated path patterns.
    pub(super) fn pattern_list(&mut self) -> Result<Vec<PathPattern>> {
        let mut out = vec![self.path_pattern()?];
        while self.eat(&TokenKind::Comma) {
            out.push(self.path_pattern()?);
        }
        Ok(out)
    }

    /// `[p =] (shortestPath|allShortestPaths)(element) | element`.
    pub(super) fn path_pattern(&mut self) -> Result<PathPattern> {
        let start = self.span().start;
        let variable = if self.at_variable() && matches!(self.kind_at(1), TokenKind::Eq) {
            let v = self.variable("a path variable")?;
            self.advance();
            Some(v)
        } else {
            None
        };
        let shortest = if self.is_kw("shortestPath") && matches!(self.kind_at(1), TokenKind::LParen)
        {
            Some(ShortestKind::Shortest)
        } else if self.is_kw("allShortestPaths") && matches!(self.kind_at(1), TokenKind::LParen) {
            Some(ShortestKind::AllShortest)
        } else {
            None
        };
        let mut p = if shortest.is_some() {
            let name = self.advance();
            self.advance();
            let p = self.pattern_element()?;
            let fname = self.source(name.span);
            self.expect(&TokenKind::RParen, &format!(" to close {fname}("))?;
            p
        } else {
            self.pattern_element()?
        };
        p.variable = variable;
        p.shortest = shortest;
        p.span = self.span_from(start);
        Ok(p)
    }

    /// `(node) (rel (node))*`.
    pub(super) fn pattern_element(&mut self) -> Result<PathPattern> {
        self.enter()?;
        let r = self.pattern_element_inner();
        self.leave();
        r
    }

    fn pattern_element_inner(&mut self) -> Result<PathPattern> {
        let start = self.span().start;
        let first = self.node_pattern()?;
        let mut chain = Vec::new();
        while self.at_rel_start() {
            let rel = self.rel_pattern()?;
            let node = self.node_pattern()?;
            chain.push((rel, node));
        }
        Ok(PathPattern {
            variable: None,
            shortest: None,
            start: first,
            chain,
            span: self.span_from(start),
        })
    }

    fn at_rel_start(&self) -> bool {
        match self.kind() {
            TokenKind::Minus => matches!(
                self.kind_at(1),
                TokenKind::LBracket | TokenKind::Minus | TokenKind::Gt
            ),
            TokenKind::Lt => matches!(self.kind_at(1), TokenKind::Minus),
            _ => false,
        }
    }

    /// Try to parse a pattern element at the current position without consuming
    /// anything on failure. Results are memoised per position so that nested
    /// pattern-or-expression ambiguities stay linear.
    pub(super) fn try_pattern(&mut self) -> Option<PathPattern> {
        let pos = self.pos;
        let result = match self.pattern_memo.get(&pos) {
            Some(r) => r.clone(),
            None => {
                let (depth, height) = (self.depth, self.height);
                let r = match self.pattern_element() {
                    Ok(p) => Some((p, self.pos)),
                    Err(_) => None,
                };
                (self.depth, self.height) = (depth, height);
                self.pattern_memo.insert(pos, r.clone());
                r
            }
        };
        match result {
            Some((p, end)) => {
                self.pos = end;
                Some(p)
            }
            None => {
                self.pos = pos;
                None
            }
        }
    }

    /// `(var :Labels {props} WHERE pred)`.
    fn node_pattern(&mut self) -> Result<NodePattern> {
        let start = self
            .expect(&TokenKind::LParen, " to start a node pattern")?
            .start;
        let variable = if self.at_variable() {
            Some(self.variable("a variable")?)
        } else {
            None
        };
        let labels = self.label_expr()?;
        let properties = self.pattern_properties()?;
        let where_ = if self.eat_kw("WHERE") {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        let what = if where_.is_some() {
            " to close the node pattern"
        } else if properties.is_some() {
            " or WHERE in the node pattern"
        } else if !matches!(labels, LabelExpr::None) {
            ", ':', '|', '{' or WHERE in the node pattern"
        } else if variable.is_some() {
            ", ':', '{' or WHERE in the node pattern"
        } else {
            " or a variable, ':' or '{' in the node pattern"
        };
        self.expect(&TokenKind::RParen, what)?;
        Ok(NodePattern {
            variable,
            labels,
            properties,
            where_,
            span: self.span_from(start),
        })
    }

    /// `{k: v, ...}` or `$param` after a node or rel variable / labels.
    fn pattern_properties(&mut self) -> Result<Option<Expr>> {
        match self.kind() {
            TokenKind::LBrace => Ok(Some(self.map_literal()?)),
            TokenKind::Param(name) => {
                let kind = ExprKind::Parameter(name.clone());
                let span = self.advance().span;
                Ok(Some(Expr { kind, span }))
            }
            _ => Ok(None),
        }
    }

    /// `:A:B` → All, `:A|B` / `:A|:B` → Any.
    fn label_expr(&mut self) -> Result<LabelExpr> {
        if !self.eat(&TokenKind::Colon) {
            return Ok(LabelExpr::None);
        }
        let mut labels = vec![self.ident("a label name after ':'")?];
        let mut any = None;
        loop {
            let is_pipe = if self.eat(&TokenKind::Pipe) {
                self.eat(&TokenKind::Colon);
                true
            } else if self.eat(&TokenKind::Colon) {
                false
            } else {
                break;
            };
            if any.is_some_and(|a| a != is_pipe) {
                return Err(Error::syntax(
                    self.toks[self.pos - 1].span,
                    "cannot mix ':' (all labels) and '|' (any label) in one label expression",
                ));
            }
            any = Some(is_pipe);
            labels.push(self.ident("a label name")?);
        }
        Ok(if any == Some(true) {
            LabelExpr::Any(labels)
        } else {
            LabelExpr::All(labels)
        })
    }

    /// `-[...]->`, `<-[...]-`, `-[...]-`, `-->`, `<--`, `--`, `<-->`.
    fn rel_pattern(&mut self) -> Result<RelPattern> {
        let start = self.span().start;
        let left = self.eat(&TokenKind::Lt);
        self.expect(&TokenKind::Minus, " in a relationship pattern")?;
        let mut variable = None;
        let mut types = Vec::new();
        let mut properties = None;
        let mut range = None;
        let mut where_ = None;
        if self.eat(&TokenKind::LBracket) {
            if self.at_variable() {
                variable = Some(self.variable("a variable")?);
            }
            if self.eat(&TokenKind::Colon) {
                types.push(self.ident("a relationship type after ':'")?);
                while self.eat(&TokenKind::Pipe) {
                    self.eat(&TokenKind::Colon);
                    types.push(self.ident("a relationship type after '|'")?);
                }
            }
            properties = self.pattern_properties()?;
            if self.check(&TokenKind::Star) {
                range = Some(self.recursive_spec()?);
                if properties.is_none() {
                    properties = self.pattern_properties()?;
                }
            }
            if self.eat_kw("WHERE") {
                where_ = Some(Box::new(self.expr()?));
            }
            self.expect(&TokenKind::RBracket, " to close the relationship pattern")?;
        }
        self.expect(&TokenKind::Minus, " to end the relationship pattern")?;
        let right = self.eat(&TokenKind::Gt);
        let direction = match (left, right) {
            (false, true) => Direction::Right,
            (true, false) => Direction::Left,
            _ => Direction::Both,
        };
        Ok(RelPattern {
            variable,
            types,
            direction,
            properties,
            range,
            where_,
            span: self.span_from(start),
        })
    }

    fn integer_bound(&mut self) -> Result<Option<u64>> {
        if let TokenKind::Integer(text) = self.kind() {
            let text = text.clone();
            let span = self.advance().span;
            let v = parse_u64(&text)
                .ok_or_else(|| Error::syntax(span, "integer literal out of range"))?;
            return Ok(Some(v));
        }
        Ok(None)
    }

    /// After `*`: `[SHORTEST | ALL SHORTEST | WSHORTEST(w) | ALL WSHORTEST(w) |
    /// TRAIL | ACYCLIC] [min][..[max]] [(r, n | WHERE pred)]`.
    fn recursive_spec(&mut self) -> Result<RecursiveSpec> {
        let start = self.expect(&TokenKind::Star, "")?.start;
        let mut weight = None;
        let kind = if self.eat_kw("SHORTEST") {
            RecursiveKind::Shortest
        } else if self.eat_kw("TRAIL") {
            RecursiveKind::Trail
        } else if self.eat_kw("ACYCLIC") {
            RecursiveKind::Acyclic
        } else if self.eat_kw("WSHORTEST") {
            weight = Some(self.weight_property()?);
            RecursiveKind::WeightedShortest
        } else if self.eat_kw("ALL") {
            if self.eat_kw("SHORTEST") {
                RecursiveKind::AllShortest
            } else if self.eat_kw("WSHORTEST") {
                weight = Some(self.weight_property()?);
                RecursiveKind::AllWeightedShortest
            } else {
                return Err(self.unexpected("SHORTEST or WSHORTEST after ALL"));
            }
        } else {
            RecursiveKind::Walk
        };
        let min = self.integer_bound()?;
        let mut max = None;
        // `*..` is unbounded (openCypher); `*2..1` is an empty interval
        // that matches nothing, not an error.
        if self.eat(&TokenKind::DotDot) {
            max = self.integer_bound()?;
        } else if min.is_some() {
            max = min;
        }
        let mut rel_var = None;
        let mut node_var = None;
        let mut predicate = None;
        if self.eat(&TokenKind::LParen) {
            rel_var = Some(self.ident("a relationship variable in the recursive filter")?);
            self.expect(
                &TokenKind::Comma,
                " between the relationship and node variables",
            )?;
            node_var = Some(self.ident("a node variable in the recursive filter")?);
            if self.eat(&TokenKind::Pipe) {
                self.eat_kw("WHERE");
                predicate = Some(Box::new(self.expr()?));
            }
            self.expect(&TokenKind::RParen, " to close the recursive filter")?;
        }
        Ok(RecursiveSpec {
            kind,
            min,
            max,
            weight,
            rel_var,
            node_var,
            predicate,
            span: self.span_from(start),
        })
    }

    fn weight_property(&mut self) -> Result<Ident> {
        self.expect(&TokenKind::LParen, " after WSHORTEST")?;
        let w = self.ident("a weight property name")?;
        self.expect(&TokenKind::RParen, " after the weight property")?;
        Ok(w)
    }
}

/// Decimal or `0x` hexadecimal digits as u64.
pub(super) fn parse_u64(text: &str) -> Option<u64> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if let Some(oct) = text.strip_prefix("0o").or_else(|| text.strip_prefix("0O")) {
        u64::from_str_radix(oct, 8).ok()
    } else {
        text.parse().ok()
    }
}
