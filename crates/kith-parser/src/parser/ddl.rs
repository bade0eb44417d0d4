//! Kùzu-style DDL (`CREATE NODE/REL TABLE`, `DROP TABLE`, `ALTER TABLE`) and COPY.

use kith_common::{Error, Result};

use super::pattern::parse_u64;
use super::Parser;
use crate::ast::*;
use crate::lexer::TokenKind;

impl Parser<'_> {
    fn if_not_exists(&mut self) -> Result<bool> {
        if self.is_kw("IF") {
            self.advance();
            self.expect_kw("NOT", " after IF")?;
            self.expect_kw("EXISTS", " after IF NOT")?;
            return Ok(true);
        }
        Ok(false)
    }

    fn if_exists(&mut self) -> Result<bool> {
        if self.is_kw("IF") {
            self.advance();
            self.expect_kw("EXISTS", " after IF")?;
            return Ok(true);
        }
        Ok(false)
    }

    pub(super) fn create_table(&mut self) -> Result<Statement> {
        let start = self.advance().span.start; // CREATE
        let node = self.eat_kw("NODE");
        if !node {
            self.expect_kw("REL", "")?;
            // Kùzu's `CREATE REL TABLE GROUP` takes the same body.
            if self.is_kw("TABLE") && self.is_kw_at(1, "GROUP") {
                self.advance();
            }
        }
        self.expect_kw(
            "TABLE",
            if node {
                " after CREATE NODE"
            } else {
                " after CREATE REL"
            },
        )?;
        self.eat_kw("GROUP");
        let if_not_exists = self.if_not_exists()?;
        let name = self.ident("a table name")?;
        self.expect(&TokenKind::LParen, " after the table name")?;
        let mut columns = Vec::new();
        let mut primary_key: Option<Ident> = None;
        let mut connections = Vec::new();
        let mut multiplicity = None;
        let set_pk = |pk: &mut Option<Ident>, id: Ident| -> Result<()> {
            if pk.is_some() {
                return Err(Error::syntax(
                    id.span,
                    "a table has at most one primary key",
                ));
            }
            *pk = Some(id);
            Ok(())
        };
        loop {
            if node && self.is_kw("PRIMARY") && self.is_kw_at(1, "KEY") {
                let kw = self.advance().span;
                self.advance();
                self.expect(&TokenKind::LParen, " after PRIMARY KEY")?;
                let col = self.ident("a column name in PRIMARY KEY")?;
                self.expect(&TokenKind::RParen, " after the primary key column")?;
                set_pk(
                    &mut primary_key,
                    Ident {
                        span: kw.to(col.span),
                        ..col
                    },
                )?;
            } else if !node && self.is_kw("FROM") {
                self.advance();
                let from = self.ident("a node table name after FROM")?;
                self.expect_kw("TO", " after the FROM table")?;
                let to = self.ident("a node table name after TO")?;
                connections.push((from, to));
            } else if !node
                && matches!(self.kind(), TokenKind::Word(_))
                && matches!(self.kind_at(1), TokenKind::Comma | TokenKind::RParen)
            {
                let m = self.ident("a multiplicity")?;
                if multiplicity.is_some() {
                    return Err(Error::syntax(m.span, "the multiplicity is given twice"));
                }
                multiplicity = Some(m);
            } else {
                let column = self.column_def()?;
                if node && self.is_kw("PRIMARY") {
                    self.advance();
                    self.expect_kw("KEY", " after PRIMARY")?;
                    set_pk(&mut primary_key, column.name.clone())?;
                    if column.default.is_none() && self.eat_kw("DEFAULT") {
                        let d = self.expr()?;
                        columns.push(ColumnDef {
                            default: Some(d),
                            ..column
                        });
                    } else {
                        columns.push(column);
                    }
                } else {
                    columns.push(column);
                }
            }
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        self.expect(&TokenKind::RParen, " or ',' in the table definition")?;
        let span = self.span_from(start);
        if node {
            Ok(Statement::CreateNodeTable(CreateNodeTable {
                name,
                if_not_exists,
                columns,
                primary_key,
                span,
            }))
        } else {
            if connections.is_empty() {
                return Err(Error::syntax(
                    name.span,
                    "a REL table needs at least one 'FROM <node table> TO <node table>'",
                ));
            }
            Ok(Statement::CreateRelTable(CreateRelTable {
                name,
                if_not_exists,
                connections,
                columns,
                multiplicity,
                span,
            }))
        }
    }

    /// `name TYPE [DEFAULT expr]`.
    fn column_def(&mut self) -> Result<ColumnDef> {
        let name = self.ident("a column name")?;
        let ty = self.type_name()?;
        let default = if self.eat_kw("DEFAULT") {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(ColumnDef { name, ty, default })
    }

    /// `INT64`, `STRING[]`, `INT64[3]`, `STRUCT(a INT64, ...)`, `MAP(K, V)`.
    pub(super) fn type_name(&mut self) -> Result<TypeName> {
        self.enter()?;
        let r = self.type_name_inner();
        self.leave();
        r
    }

    fn type_name_inner(&mut self) -> Result<TypeName> {
        let TokenKind::Word(word) = self.kind().clone() else {
            return Err(self.unexpected("a type name"));
        };
        let upper = word.to_ascii_uppercase();
        let mut ty = if upper == "STRUCT" && self.kind_at(1) == &TokenKind::LParen {
            self.advance();
            self.advance();
            let mut fields = Vec::new();
            loop {
                let f = self.ident("a field name in STRUCT")?;
                let t = self.type_name()?;
                fields.push((f, t));
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
            self.expect(&TokenKind::RParen, " or ',' in STRUCT(...)")?;
            TypeName::Struct(fields)
        } else if upper == "MAP" && self.kind_at(1) == &TokenKind::LParen {
            self.advance();
            self.advance();
            let k = self.type_name()?;
            self.expect(&TokenKind::Comma, " between the MAP key and value types")?;
            let v = self.type_name()?;
            self.expect(&TokenKind::RParen, " after the MAP value type")?;
            TypeName::Map(Box::new(k), Box::new(v))
        } else {
            let span = self.advance().span;
            TypeName::Named(upper, span)
        };
        while self.eat(&TokenKind::LBracket) {
            if self.eat(&TokenKind::RBracket) {
                ty = TypeName::List(Box::new(ty));
                continue;
            }
            let TokenKind::Integer(text) = self.kind().clone() else {
                return Err(self.unexpected("']' or an array size"));
            };
            let span = self.advance().span;
            let n = parse_u64(&text)
                .ok_or_else(|| Error::syntax(span, "integer literal out of range"))?;
            self.expect(&TokenKind::RBracket, " after the array size")?;
            ty = TypeName::Array(Box::new(ty), n);
        }
        Ok(ty)
    }

    pub(super) fn drop_table(&mut self) -> Result<Statement> {
        self.advance(); // DROP
        self.expect_kw("TABLE", " after DROP")?;
        let if_exists = self.if_exists()?;
        let name = self.ident("a table name")?;
        Ok(Statement::DropTable { name, if_exists })
    }

    pub(super) fn alter_table(&mut self) -> Result<Statement> {
        self.advance(); // ALTER
        self.expect_kw("TABLE", " after ALTER")?;
        let table = self.ident("a table name")?;
        let action = if self.eat_kw("ADD") {
            self.eat_kw("COLUMN");
            let if_not_exists = self.if_not_exists()?;
            let column = self.column_def()?;
            AlterAction::AddColumn {
                column,
                if_not_exists,
            }
        } else if self.eat_kw("DROP") {
            self.eat_kw("COLUMN");
            let if_exists = self.if_exists()?;
            let name = self.ident("a column name")?;
            AlterAction::DropColumn { name, if_exists }
        } else if self.eat_kw("RENAME") {
            if self.is_kw("TO") && !self.is_kw_at(1, "TO") {
                self.advance();
                let to = self.ident("a new table name")?;
                AlterAction::RenameTable { to }
            } else {
                self.eat_kw("COLUMN");
                let from = self.ident("a column name or TO")?;
                self.expect_kw("TO", " after the column name")?;
                let to = self.ident("a new column name")?;
                AlterAction::RenameColumn { from, to }
            }
        } else {
            return Err(self.unexpected("ADD, DROP or RENAME after ALTER TABLE <name>"));
        };
        Ok(Statement::AlterTable { table, action })
    }

    /// `COPY T [(cols)] FROM source [(opts)]`, `COPY T TO 'file'`,
    /// `COPY (query) TO 'file' [(opts)]`.
    pub(super) fn copy(&mut self) -> Result<Copy> {
        let start = self.advance().span.start; // COPY
        let direction = if self.eat(&TokenKind::LParen) {
            let q = self.query_in(true)?;
            self.expect(&TokenKind::RParen, " to close the COPY subquery")?;
            self.expect_kw("TO", " after the COPY subquery")?;
            let path = self.string_literal("a file path after TO")?;
            CopyDirection::To {
                source: CopyToSource::Query(Box::new(q)),
                path,
            }
        } else {
            let table = self.ident("a table name or '(' after COPY")?;
            let mut columns = Vec::new();
            if self.eat(&TokenKind::LParen) {
                loop {
                    columns.push(self.ident("a column name")?);
                    if !self.eat(&TokenKind::Comma) {
                        break;
                    }
                }
                self.expect(&TokenKind::RParen, " or ',' in the column list")?;
            }
            if columns.is_empty() && self.eat_kw("TO") {
                let path = self.string_literal("a file path after TO")?;
                CopyDirection::To {
                    source: CopyToSource::Table(table),
                    path,
                }
            } else {
                self.expect_kw(
                    "FROM",
                    if columns.is_empty() {
                        " or TO after the table name"
                    } else {
                        " after the column list"
                    },
                )?;
                let source = match self.kind().clone() {
                    TokenKind::Str(s) => {
                        self.advance();
                        CopySource::Files(vec![s])
                    }
                    TokenKind::LBracket => {
                        self.advance();
                        let mut files = Vec::new();
                        loop {
                            files.push(self.string_literal("a file path")?);
                            if !self.eat(&TokenKind::Comma) {
                                break;
                            }
                        }
                        self.expect(&TokenKind::RBracket, " or ',' in the file list")?;
                        CopySource::Files(files)
                    }
                    TokenKind::LParen => {
                        self.advance();
                        let q = self.query_in(true)?;
                        self.expect(&TokenKind::RParen, " to close the COPY subquery")?;
                        CopySource::Query(Box::new(q))
                    }
                    TokenKind::Word(_) | TokenKind::QuotedIdent(_) => {
                        CopySource::Variable(self.ident("a source")?)
                    }
                    _ => {
                        return Err(
                            self.unexpected("a file path, a list of file paths or '(' after FROM")
                        )
                    }
                };
                CopyDirection::From {
                    table,
                    columns,
                    source,
                }
            }
        };
        let mut options = Vec::new();
        if self.eat(&TokenKind::LParen) {
            if !self.check(&TokenKind::RParen) {
                loop {
                    let mut key = self.ident("an option name")?;
                    key.name = key.name.to_ascii_uppercase();
                    self.expect(&TokenKind::Eq, " after the option name")?;
                    let value = self.expr()?;
                    options.push((key, value));
                    if !self.eat(&TokenKind::Comma) {
                        break;
                    }
                }
            }
            self.expect(&TokenKind::RParen, " or ',' in the COPY options")?;
        }
        Ok(Copy {
            direction,
            options,
            span: self.span_from(start),
        })
    }

    fn string_literal(&mut self, what: &str) -> Result<String> {
        if let TokenKind::Str(s) = self.kind().clone() {
            self.advance();
            Ok(s)
        } else {
            Err(self.unexpected(what))
        }
    }
}
