//! Cypher text → spanned AST.
//!
//! A hand-written lexer with a keyword table (Cypher keywords are mostly
//! non-reserved, so words lex as identifiers and are classified in context) and a
//! recursive-descent parser with precedence climbing for expressions. Depends on
//! `kith-common` only; knows nothing of the catalog. Entry point: [`parse`].

pub mod ast;
pub mod lexer;
mod parser;

pub use parser::{parse, parse_one, parse_type};

#[cfg(test)]
mod tests;
