//! Bound statements: the binder's output, with names resolved against the
//! catalog and every expression typed.

use kith_catalog::Multiplicity;
use kith_common::{LogicalType, Span, TableId, Value};
use kith_parser::ast::Direction;

use crate::expr::{BoundExpr, SlotId};

#[derive(Debug, Clone)]
pub enum BoundStatement {
    CreateNodeTable {
        name: String,
        columns: Vec<(String, LogicalType)>,
        primary_key: String,
        if_not_exists: bool,
    },
    CreateRelTable {
        name: String,
        src: String,
        dst: String,
        columns: Vec<(String, LogicalType)>,
        multiplicity: Multiplicity,
        if_not_exists: bool,
    },
    DropTable {
        name: String,
        if_exists: bool,
    },
    CopyFrom(BoundCopy),
    /// `CALL name = value`.
    SetOption {
        name: String,
        value: Value,
    },
    /// A built-in table function such as `show_tables()`.
    TableCall(TableCall),
    Query(Box<BoundQuery>),
    Explain {
        profile: bool,
        inner: Box<BoundStatement>,
    },
}

#[derive(Debug, Clone)]
pub enum TableCall {
    ShowTables,
    TableInfo(TableId),
}

#[derive(Debug, Clone)]
pub struct BoundCopy {
    pub table: TableId,
    pub files: Vec<String>,
    /// Options with upper-cased keys.
    pub options: Vec<(String, Value)>,
    pub span: Span,
}

/// One node variable of the query graph.
#[derive(Debug, Clone)]
pub struct QueryNode {
    pub name: String,
    /// Candidate tables (one for a labelled node; all node tables when unlabelled).
    pub tables: Vec<TableId>,
    pub id_slot: SlotId,
    /// Properties the query reads: (property name, slot, type).
    pub properties: Vec<(String, SlotId, LogicalType)>,
}

/// One rel variable (a single hop) of the query graph.
#[derive(Debug, Clone)]
pub struct QueryRel {
    pub name: String,
    pub tables: Vec<TableId>,
    /// Index into `QueryGraph::nodes` of the left and right endpoints as written.
    pub left: usize,
    pub right: usize,
    /// Direction as written: `Right` means left → right.
    pub direction: Direction,
    pub id_slot: SlotId,
    pub properties: Vec<(String, SlotId, LogicalType)>,
}

#[derive(Debug, Clone, Default)]
pub struct QueryGraph {
    pub nodes: Vec<QueryNode>,
    pub rels: Vec<QueryRel>,
}

/// An aggregate call extracted from a projection; its result is `slot`.
#[derive(Debug, Clone)]
pub struct BoundAggregate {
    /// Lower-case function name (`count`, `sum`, ...); `count(*)` has no argument.
    pub function: String,
    pub distinct: bool,
    pub arg: Option<BoundExpr>,
    pub slot: SlotId,
    pub ty: LogicalType,
}

#[derive(Debug, Clone)]
pub struct BoundQuery {
    pub graph: QueryGraph,
    /// Conjuncts of every WHERE (and inline property maps).
    pub predicates: Vec<BoundExpr>,
    /// Grouping keys (the non-aggregate items when aggregating), each computed
    /// into its slot before aggregation.
    pub group_keys: Vec<(BoundExpr, SlotId)>,
    pub aggregates: Vec<BoundAggregate>,
    /// The returned columns: (name, expression over slots of the graph, the
    /// group keys or the aggregates).
    pub outputs: Vec<(String, BoundExpr)>,
    pub distinct: bool,
    pub skip: Option<u64>,
    pub limit: Option<u64>,
    /// Number of slots allocated.
    pub num_slots: u32,
}
