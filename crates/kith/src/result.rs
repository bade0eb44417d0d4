//! Materialised query results.

use kith_common::{Chunk, LogicalType, Value};

/// The result of one statement: named, typed columns and rows. Statements that
/// only change state (DDL, settings) have no columns unless they report a message.
#[derive(Debug, Clone, Default)]
pub struct QueryResult {
    pub(crate) names: Vec<String>,
    pub(crate) types: Vec<LogicalType>,
    pub(crate) chunks: Vec<Chunk>,
    /// True for statements like `CALL threads=2` whose success prints nothing.
    pub(crate) silent: bool,
}

impl QueryResult {
    pub fn column_names(&self) -> &[String] {
        &self.names
    }

    pub fn column_types(&self) -> &[LogicalType] {
        &self.types
    }

    pub fn num_rows(&self) -> usize {
        self.chunks.iter().map(|c| c.num_rows).sum()
    }

    /// True when the statement produced nothing to print (a setting, say).
    pub fn is_silent(&self) -> bool {
        self.silent
    }

    /// The rows in order.
    pub fn rows(&self) -> impl Iterator<Item = Vec<Value>> + '_ {
        self.chunks
            .iter()
            .flat_map(|c| (0..c.num_rows).map(move |pos| c.row(pos)))
    }

    /// The columnar chunks (for Arrow export and fast consumers).
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }
}
