//! Bound statements: the binder's output, with names resolved against the
//! catalog and every expression typed.

use kith_catalog::Multiplicity;
use kith_common::{LogicalType, Span, TableId, Value};
use kith_parser::ast::{self, Direction};

use crate::expr::{BoundExpr, SlotId};
use crate::procedure::ProcedureRef;

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
    AlterTable {
        table: TableId,
        action: BoundAlter,
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
    /// `q1 UNION [ALL] q2 ...`: the single queries run one after another and
    /// their rows are concatenated (with `all` false, duplicates removed).
    /// Every query returns the same column names.
    Union {
        queries: Vec<BoundQuery>,
        all: bool,
    },
    /// A query with writing clauses (CREATE, MERGE, SET, REMOVE, DELETE).
    Write(Box<BoundWrite>),
    Explain {
        profile: bool,
        inner: Box<BoundStatement>,
    },
}

#[derive(Debug, Clone)]
pub enum TableCall {
    /// A registered procedure without outputs called on its own, with
    /// arguments that read no variable.
    Procedure {
        procedure: ProcedureRef,
        args: Vec<BoundExpr>,
    },
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
    /// Bound by an earlier query part (carried through WITH): its id arrives
    /// in `id_slot` with the part's input rows.
    pub imported: bool,
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
    /// A variable-length pattern (`*l..u`, `* SHORTEST`, ...): computed by
    /// the recursive join between two query parts.
    pub recursive: Option<RecursiveRel>,
    /// An undirected rel's stored source and destination: slots each
    /// pipeline names after the ends it walks the rel between
    /// (`Step::Alias`), which the rel's value reads. `None` when directed.
    pub ends: Option<(SlotId, SlotId)>,
    /// An undirected fixed-length rel matches a self loop in both
    /// directions, twice (Kùzu's walks, `var_length_semantics='walk_all'`);
    /// openCypher matches it once.
    pub self_loops_twice: bool,
}

/// What a variable-length rel without `TRAIL` / `ACYCLIC` / a shortest
/// kind matches (the connection's `var_length_semantics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VarLengthSemantics {
    /// Every walk; rels may repeat (Kùzu's default, and ours).
    #[default]
    Walk,
    /// openCypher's relationship isomorphism: no rel twice in one path, nor
    /// in a path and another rel of the same MATCH.
    Trail,
    /// Every walk, and the fixed-length rels of one MATCH may be the same
    /// rel too: no relationship isomorphism anywhere (Kùzu's semantics).
    WalkAll,
}

/// What a variable-length rel computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecursiveMode {
    /// Every walk (rels may repeat); each walk is one result row.
    Walk,
    /// Every trail (`* TRAIL`: no rel repeats), each one row.
    Trail,
    /// Every acyclic path (`* ACYCLIC`: no node repeats), each one row.
    Acyclic,
    /// One row per reachable destination at its shortest length.
    Shortest,
    /// One row per shortest path (as a multiplicity).
    AllShortest,
    /// One row per reachable destination with its smallest total weight.
    WeightedShortest,
    /// One row per path of the smallest total weight (as a multiplicity).
    AllWeightedShortest,
}

impl RecursiveMode {
    /// Whether the search minimises a weight (its length column holds the
    /// cost).
    pub fn weighted(self) -> bool {
        matches!(
            self,
            RecursiveMode::WeightedShortest | RecursiveMode::AllWeightedShortest
        )
    }
}

#[derive(Debug, Clone)]
pub struct RecursiveRel {
    pub mode: RecursiveMode,
    pub lower: u64,
    /// `None`: up to the connection's `var_length_max_depth`.
    pub upper: Option<u64>,
    /// Slot of the path length (`length(p)` of a named path; `cost(p)`, a
    /// DOUBLE, for weighted shortest paths).
    pub len_slot: Option<SlotId>,
    /// Weight property of weighted shortest paths.
    pub weight: Option<String>,
    /// Slot of the path value (`PATH`) of this segment, source to
    /// destination, when a named path or `nodes(p)` needs it.
    pub path_slot: Option<SlotId>,
    /// Slot of the rel variable (`r` of `-[r*1..3]->`): a `LIST(REL)`.
    pub rels_slot: Option<SlotId>,
    /// `[:R* {k: v}]`: every rel of the path has property `k` equal to
    /// the constant `v` (a literal or a parameter).
    pub rel_conditions: Vec<(String, BoundExpr)>,
    /// `(r, _ | WHERE ...)`: the conjuncts over the properties of `r`; a rel
    /// failing it is never walked.
    pub rel_predicate: Option<PropertyPredicate>,
    /// `(_, n | WHERE ...)`: the conjuncts over the properties of `n`; an
    /// intermediate node failing it is never walked through (the source and
    /// destination are not tested, as in Kùzu).
    pub node_predicate: Option<PropertyPredicate>,
    /// From an OPTIONAL MATCH bound into the part of the clauses after it
    /// (see `bind_optional_recursive`): the join is left outer, an input
    /// row whose source reaches nothing keeps one row with a NULL
    /// destination, path and length.
    pub left_outer: bool,
}

/// A predicate over the properties of one rel or node, evaluated for every
/// rel (node) of the walked tables before the recursive computation.
#[derive(Debug, Clone)]
pub struct PropertyPredicate {
    pub expr: BoundExpr,
    /// The properties it reads: (name, slot in `expr`, type).
    pub properties: Vec<(String, SlotId, LogicalType)>,
}

impl RecursiveRel {
    /// The type of `path_slot`.
    pub const PATH_TYPE: LogicalType = LogicalType::Path;

    /// The type of `rels_slot`.
    pub fn rels_type() -> LogicalType {
        LogicalType::List(Box::new(LogicalType::Rel))
    }

    /// The type of `len_slot`.
    pub fn len_type(&self) -> LogicalType {
        if self.mode.weighted() {
            LogicalType::Double
        } else {
            LogicalType::Int64
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct QueryGraph {
    pub nodes: Vec<QueryNode>,
    pub rels: Vec<QueryRel>,
}

impl QueryGraph {
    /// The type of every slot the pattern defines: node and rel ids, an
    /// undirected rel's stored ends, properties, and a recursive rel's
    /// length.
    pub fn slot_types(&self) -> impl Iterator<Item = (SlotId, LogicalType)> + '_ {
        let nodes = self.nodes.iter().flat_map(|n| {
            std::iter::once((n.id_slot, LogicalType::InternalId))
                .chain(n.properties.iter().map(|p| (p.1, p.2.clone())))
        });
        let rels = self.rels.iter().flat_map(|r| {
            std::iter::once((r.id_slot, LogicalType::InternalId))
                .chain(
                    r.ends
                        .into_iter()
                        .flat_map(|(s, d)| [s, d])
                        .map(|s| (s, LogicalType::InternalId)),
                )
                .chain(r.properties.iter().map(|p| (p.1, p.2.clone())))
                .chain(
                    r.recursive
                        .as_ref()
                        .and_then(|x| x.len_slot.map(|s| (s, x.len_type()))),
                )
        });
        nodes.chain(rels)
    }
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

/// `UNWIND expr AS slot`: one row per element of the list.
#[derive(Debug, Clone)]
pub struct BoundUnwind {
    pub expr: BoundExpr,
    pub slot: SlotId,
    /// Element type.
    pub ty: LogicalType,
}

/// One ORDER BY key over the projection's slots (the graph's slots, or the
/// group keys and aggregates when aggregating).
#[derive(Debug, Clone)]
pub struct BoundSortKey {
    pub expr: BoundExpr,
    pub descending: bool,
}

/// One query part: everything up to and including a WITH or the RETURN.
/// Part `i + 1` reads the rows part `i` produces (its `output_slots`).
#[derive(Debug, Clone, Default)]
pub struct BoundPart {
    /// Slots that arrive with the input rows, in column order (empty for the
    /// first part, which starts from one empty row or a scan).
    pub inputs: Vec<(SlotId, LogicalType)>,
    /// UNWINDs applied to the input rows before matching, in order.
    pub unwinds: Vec<BoundUnwind>,
    pub graph: QueryGraph,
    /// Conjuncts of every WHERE (and inline property maps).
    pub predicates: Vec<BoundExpr>,
    /// Grouping keys (the non-aggregate items when aggregating), each computed
    /// into its slot before aggregation.
    pub group_keys: Vec<(BoundExpr, SlotId)>,
    pub aggregates: Vec<BoundAggregate>,
    /// The projected columns: (name, expression over slots of the graph, the
    /// group keys or the aggregates).
    pub outputs: Vec<(String, BoundExpr)>,
    pub order_by: Vec<BoundSortKey>,
    pub distinct: bool,
    pub skip: Option<u64>,
    pub limit: Option<u64>,
    /// SKIP / LIMIT given as an expression over no variable
    /// (`LIMIT toInteger(ceil(1.7))`): evaluated once when the part runs,
    /// and `skip` / `limit` are then `None`.
    pub skip_expr: Option<BoundExpr>,
    pub limit_expr: Option<BoundExpr>,
    /// For a WITH: the slot each output becomes in the next part.
    pub output_slots: Vec<SlotId>,
    /// An OPTIONAL MATCH part (left outer semantics): per output, the input
    /// column it repeats (`None` for the optional pattern's new variables).
    /// Its one ORDER BY key reads the row number (see `numbers_rows`); an
    /// input row without a match yields one row with NULLs. The rows padded
    /// are those numbered by this part or, when a variable-length rel split
    /// the OPTIONAL MATCH into several parts, by the first of them.
    pub optional: Option<Vec<Option<usize>>>,
    /// The last input column is the number of each input row, added when
    /// the part runs: set on an OPTIONAL MATCH part (the first one, when it
    /// is split), whose `optional` padding finds unmatched rows by it.
    pub numbers_rows: bool,
    /// See [`OptionalExtend`].
    pub optional_extend: Option<OptionalExtend>,
    /// See [`OptionalPattern`]: a left outer hash join.
    pub optional_join: Option<OptionalPattern>,
    /// See [`OptionalPattern`]: a chain of extends.
    pub optional_chain: Option<OptionalPattern>,
}

/// An OPTIONAL MATCH of one rel from a node of the part to a new node,
/// joined in the part's own pipeline instead of a part of its own: the
/// rel and the node are the graph's last, planned as the pipeline's last
/// extend, and `predicates` (the clause's WHERE and inline property maps)
/// decide which matches stay before a tuple left without any is padded
/// with NULLs.
#[derive(Debug, Clone)]
pub struct OptionalExtend {
    pub predicates: Vec<BoundExpr>,
}

/// An OPTIONAL MATCH joined in the part's own pipeline instead of a part
/// of its own, whose pattern's nodes and rels are the graph's last (from
/// `first_node` and `first_rel`), each with one table; `predicates` are
/// the clause's WHERE and inline property maps. Two forms:
///
/// - `BoundPart::optional_join`, a pattern that shares no variable with the
///   part (`MATCH (a:A) OPTIONAL MATCH (b:B)-[:R]->(c:C) WHERE b.k = a.k`):
///   planned as the build side of a left outer hash join (a left outer
///   cross product without an equality to hash) after every other step;
///   the predicates that read only its variables are pushed into the build
///   side, and the rest decide, after the join, which matches stay before
///   a tuple left without any is padded with NULLs.
/// - `BoundPart::optional_chain`, a chain of two or more rels from a node
///   of the part written bare, every other variable new
///   (`OPTIONAL MATCH (a)-[:R]->(b:B)-[:S]->(c:C) WHERE c.x > 5`): planned
///   after every other step as a `Step::OptionalChain` of extends, property
///   reads and filters (the predicates); an input tuple none of whose
///   matches passes them all gets one tuple of NULLs.
#[derive(Debug, Clone)]
pub struct OptionalPattern {
    pub first_node: usize,
    pub first_rel: usize,
    pub predicates: Vec<BoundExpr>,
}

impl OptionalPattern {
    /// Marks the pattern's nodes and rels not yet bound (they are planned
    /// after every other step).
    pub fn unbind(&self, bound: &mut [bool], done: &mut [bool]) {
        bound[self.first_node..].iter_mut().for_each(|b| *b = false);
        done[self.first_rel..].iter_mut().for_each(|d| *d = false);
    }
}

#[derive(Debug, Clone)]
pub struct BoundQuery {
    /// The parts in execution order; the last one ends with RETURN.
    pub parts: Vec<BoundPart>,
    /// Number of slots allocated.
    pub num_slots: u32,
    /// The subqueries its expressions use (`BoundExprKind::Subquery`).
    pub subqueries: Vec<BoundSubquery>,
}

/// What a decorrelated subquery yields per key (the ids of the outer
/// variables it uses); keys it does not produce read the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubqueryKind {
    /// `EXISTS { ... }` and pattern predicates: TRUE when it has rows
    /// (default FALSE). Rows are `keys...`.
    Exists,
    /// `COUNT { ... }`: its number of rows (default 0). Rows are
    /// `keys..., count`.
    Count,
    /// A pattern comprehension: the list of projected values (default an
    /// empty list). Rows are `keys..., list`.
    Collect,
}

/// A subquery of an expression, bound as a query of its own whose rows
/// start with the ids of the correlated outer variables.
#[derive(Debug, Clone)]
pub struct BoundSubquery {
    pub query: BoundQuery,
    pub kind: SubqueryKind,
    pub num_keys: usize,
}

/// A statement with writing clauses. `query` computes the input rows (one per
/// match; a single row without MATCH) whose columns hold every value the
/// clauses need; the clauses are then applied in order, each to every row,
/// in one write transaction.
#[derive(Debug, Clone)]
pub struct BoundWrite {
    pub query: BoundQuery,
    pub clauses: Vec<WriteClause>,
    /// What follows the writes (`... CREATE (n) RETURN n`, `... SET ... WITH
    /// ... MATCH ...`): bound at run time, after the writes, against the
    /// transaction's catalog (the writes may create tables), and run over
    /// the rows the writes leave.
    pub continuation: Option<WriteContinuation>,
}

/// What an ALTER TABLE does.
#[derive(Debug, Clone, PartialEq)]
pub enum BoundAlter {
    /// Existing rows read `default` (NULL without DEFAULT).
    AddColumn {
        name: String,
        ty: LogicalType,
        default: Value,
        if_not_exists: bool,
    },
    DropColumn {
        name: String,
        if_exists: bool,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    RenameTable {
        to: String,
    },
}

/// The clauses after the writes and the variables they see.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteContinuation {
    pub clauses: Vec<ast::Clause>,
    pub vars: Vec<ContinuationVar>,
    /// Named paths a CREATE or MERGE made: the name and the variables of
    /// its nodes and rels in path order (each one of `vars`).
    pub paths: Vec<(String, Vec<String>)>,
}

/// A variable in scope after the writes: where its value comes from and
/// what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct ContinuationVar {
    pub name: String,
    pub source: ContinuationSource,
    pub kind: SeedKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ContinuationSource {
    /// A column of the reading part's rows.
    Column(usize),
    /// A node created or merged by the writes.
    Created(String),
    /// A matched rel: the columns of its id and endpoint ids.
    Rel { rel: usize, src: usize, dst: usize },
    /// A rel created by the writes.
    CreatedRel(String),
}

/// A variable a bound query starts with (see `binder::bind_continuation`).
#[derive(Debug, Clone, PartialEq)]
pub enum SeedKind {
    /// A node of one of these tables: its input columns hold the id, then
    /// whether the writes deleted it (BOOL).
    Node(Vec<TableId>),
    /// A rel of one of these tables: its input columns hold the id, the
    /// source and destination ids, the properties
    /// `binder::carried_rel_columns` lists, then whether the writes deleted
    /// it (BOOL).
    Rel(Vec<TableId>),
    Value(LogicalType),
}

/// A node a writing clause refers to.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeRef {
    /// A matched node: the input column holding its id (NULL: no node).
    Column(usize),
    /// A node created (or merged) by an earlier pattern of this statement.
    Created(String),
}

/// A matched rel: input columns of its id and of its source and destination
/// node ids. Unless `oriented` (false for a rel matched without a direction
/// and for one carried through WITH, whose match direction is unknown here),
/// they are its two end nodes in either order and the executor finds which
/// is the source.
#[derive(Debug, Clone, PartialEq)]
pub struct RelRef {
    pub rel: usize,
    pub src: usize,
    pub dst: usize,
    pub oriented: bool,
}

/// The table a CREATE or MERGE writes to.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteTable {
    /// A declared table: its schema is strict.
    Declared(TableId),
    /// Schema-less: the implicit table of this label (node; "" for no
    /// label) or rel type, found or created at run time, where missing
    /// properties are added too. A rel's table also depends on the tables
    /// of its endpoints.
    Implicit(String),
}

/// A node a CREATE or MERGE makes: property name -> input column.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateNode {
    /// The variable (anonymous nodes get a hidden name).
    pub var: String,
    pub table: WriteTable,
    /// All its labels when they are not just the table's (`:A:B`).
    pub labels: Vec<String>,
    pub properties: Vec<(String, usize)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateRel {
    /// The variable, when named (a continuation may read it).
    pub var: Option<String>,
    pub table: WriteTable,
    pub src: NodeRef,
    pub dst: NodeRef,
    pub properties: Vec<(String, usize)>,
}

/// The target of `SET x.prop = value`.
#[derive(Debug, Clone, PartialEq)]
pub enum SetTarget {
    Node(NodeRef),
    Rel(RelRef),
    /// A rel this statement created or merged (by variable name).
    CreatedRel(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SetProperty {
    pub target: SetTarget,
    pub property: String,
    /// Input column of the new value.
    pub value: usize,
}

/// A node of a path MERGE: one bound by earlier clauses (`new` is None),
/// or one to match by `new`'s table, labels and properties and to create
/// with the path (`node` is then `Created(new.var)`).
#[derive(Debug, Clone, PartialEq)]
pub struct MergePathNode {
    pub node: NodeRef,
    pub new: Option<CreateNode>,
}

/// A rel of a path MERGE between chain positions `i` and `i + 1` (`rel`'s
/// `src` / `dst` say which is its source; left to right when undirected).
#[derive(Debug, Clone, PartialEq)]
pub struct MergePathRel {
    pub rel: CreateRel,
    /// Matched in either direction (an undirected pattern).
    pub either_direction: bool,
}

/// ON CREATE / ON MATCH items bound as SET clauses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MergeThen {
    pub on_create: MergeItems,
    pub on_match: MergeItems,
}

/// The ON CREATE or ON MATCH items of a MERGE.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeItems {
    /// Values computed by the reading part (input columns).
    Now(Vec<WriteClause>),
    /// Items whose values read what the MERGE bound or the writes before
    /// it changed (`ON MATCH SET n.hits = n.hits + 1`): a SET run as a
    /// continuation on the rows that created / matched, read again.
    Later(Box<WriteContinuation>),
}

impl Default for MergeItems {
    fn default() -> Self {
        MergeItems::Now(Vec::new())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum WriteClause {
    /// New nodes first (in pattern order), then the rels between them and
    /// matched nodes.
    Create {
        nodes: Vec<CreateNode>,
        rels: Vec<CreateRel>,
    },
    /// A node matched by primary key (the only property of the pattern) of a
    /// declared table, or by all its properties in an implicit table;
    /// created when absent.
    MergeNode {
        node: CreateNode,
        /// `ON CREATE SET n.p = v` items only: written with the new node.
        on_create: Vec<(String, usize)>,
        on_match: Vec<(String, usize)>,
        /// Any other ON CREATE / ON MATCH items (labels, maps, other
        /// variables), in order, as SET clauses run on the rows that
        /// created / matched once every row is merged (then `on_create`
        /// and `on_match` are empty).
        then: MergeThen,
    },
    Set(Vec<SetProperty>),
    /// `MERGE (a)-[r:T {..}]->(b)` between bound nodes: the rel is matched
    /// (type, endpoints, properties) or created; then the ON MATCH or ON
    /// CREATE items run.
    MergeRel {
        rel: CreateRel,
        /// Also match the rel from `dst` to `src` (an undirected pattern).
        either_direction: bool,
        /// ON CREATE / ON MATCH items; they may target the merged rel.
        then: MergeThen,
    },
    /// Any other MERGE of a pattern with rels (unbound end nodes, longer
    /// chains, named paths): per input row, every match of the whole
    /// pattern is bound (one row each), or, when there is none, its new
    /// nodes and all its rels are created; then `then` runs.
    MergePath {
        /// Distinct pattern nodes (a variable used twice is one node).
        nodes: Vec<MergePathNode>,
        /// Node index of each chain position (rels + 1 of them).
        chain: Vec<usize>,
        /// Rel `i` joins chain positions `i` and `i + 1`.
        rels: Vec<MergePathRel>,
        then: MergeThen,
    },
    /// `SET n:A:B` (`remove`: `REMOVE n:A:B`).
    SetLabels {
        node: NodeRef,
        labels: Vec<String>,
        remove: bool,
    },
    /// `SET x = map` (`replace`: other properties become NULL) and
    /// `SET x += map`; `value` is the input column of the map.
    SetMap {
        target: SetTarget,
        value: usize,
        replace: bool,
    },
    /// `DELETE`: matched or created nodes, matched rels, and `values`:
    /// input columns of other expressions (a node, rel or path value, or
    /// an entity id; NULL deletes nothing).
    Delete {
        detach: bool,
        nodes: Vec<NodeRef>,
        rels: Vec<RelRef>,
        values: Vec<usize>,
    },
}
