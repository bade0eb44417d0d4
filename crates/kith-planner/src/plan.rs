//! Physical plans: what the executor runs, in the order it runs it.
//!
//! A query plan is a sequence of parts (one per WITH, then the RETURN). Each
//! part is one pipeline — a source, a chain of steps and a sink — followed by
//! a finishing phase (project the sink's rows, DISTINCT, ORDER BY, SKIP,
//! LIMIT) whose rows are the input of the next part. Steps read and write
//! *slots*; the executor decides where each slot lives in its factorized
//! result set.

use std::fmt::Write;

use kith_catalog::{Catalog, PropertyId};
use kith_common::{LogicalType, TableId};

use crate::bound::{BoundAggregate, BoundUnwind, RecursiveMode, SubqueryKind};
use crate::expr::{BoundExpr, SlotId};

/// Which CSR a step reads: by source (`Fwd`) or by destination (`Bwd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtendDirection {
    Fwd,
    Bwd,
}

/// A property a step reads into a slot.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyRead {
    /// `None` when the table has no such property (the variable may match
    /// several tables): the slot reads NULL.
    pub property: Option<PropertyId>,
    pub slot: SlotId,
    pub ty: LogicalType,
}

#[derive(Debug, Clone)]
pub enum Source {
    /// One empty tuple (a query without MATCH).
    Single,
    /// Every row of a node table, split into morsels across workers.
    ScanNodes {
        table: TableId,
        /// `None` when nothing downstream needs the node id itself.
        id_slot: SlotId,
        properties: Vec<PropertyRead>,
    },
    /// The rows the previous part produced (after this part's UNWINDs),
    /// split into morsels: one column per slot.
    Rows { columns: Vec<(SlotId, LogicalType)> },
}

#[derive(Debug, Clone)]
pub enum Step {
    /// Keep the tuples for which the predicate is TRUE.
    Filter(BoundExpr),
    /// For each tuple, the rels of node `from` in one CSR: writes the
    /// neighbours (and rel properties) as a new unflat group of vectors.
    Extend {
        rel_table: TableId,
        direction: ExtendDirection,
        from: SlotId,
        /// Slot of the neighbour's id; `None` when only the count matters.
        to: Option<SlotId>,
        to_table: TableId,
        rel_id: Option<SlotId>,
        properties: Vec<PropertyRead>,
        /// Relationship isomorphism with rels bound earlier in the
        /// pipeline: (an id slot, the slot of that rel's endpoint on this
        /// extend's side) each. When that endpoint is the node extended
        /// from, the earlier rel may be in the range and is skipped (a
        /// filter would flatten the factorized neighbours).
        exclude: Vec<(SlotId, SlotId)>,
        /// OPTIONAL MATCH: a tuple without rels gets one neighbour, rel
        /// and property of NULL instead of being dropped.
        optional: bool,
    },
    /// The predicates of an OPTIONAL MATCH joined by an optional extend:
    /// keeps the tuples of `node`'s group (the extend's output) for which
    /// `predicate` is TRUE, and when none is left, makes the group one
    /// tuple of NULLs instead of dropping the tuple it extends.
    PadFilter { predicate: BoundExpr, node: SlotId },
    /// For each tuple, every row of `build` (run first and materialized),
    /// written as a new unflat group: a Cartesian product with a part of
    /// the pattern that shares no variable with the rest. With a `key`, a
    /// hash join: only the build rows whose key equals the tuple's.
    CrossProduct {
        build: Box<SubPlan>,
        /// The build side's slots that are read downstream.
        columns: Vec<(SlotId, LogicalType)>,
        key: Option<HashJoinKey>,
        /// Left outer (an OPTIONAL MATCH sharing no variable with the part,
        /// see `bound::OptionalPattern`): a tuple without build rows gets one
        /// row of NULLs, and a [`Step::PadFilter`] after it applies the
        /// clause's predicates.
        optional: bool,
    },
    /// Index nested-loop join: for each tuple, the node of `table` whose
    /// primary key equals `key` (evaluated per tuple, from slots bound
    /// earlier), found through the PK index and written to `id_slot` in the
    /// newest chunk. A tuple whose key finds no node is dropped; the
    /// equality predicate stays as a filter after this step.
    ///
    /// With `each_item`, `key` is a list read from no slot (`n.pk IN
    /// $ids`, only at the start of a pipeline) and the nodes of its
    /// distinct items are written to `id_slot` as a new unflat group; the
    /// membership test stays as a filter.
    LookupNode {
        table: TableId,
        key: BoundExpr,
        each_item: bool,
        id_slot: SlotId,
    },
    /// Binds node `to`, which several rels tie to bound nodes, as the
    /// intersection of those nodes' neighbour lists (a worst-case-optimal
    /// join step for cyclic patterns): one match per node in every list
    /// (per combination of rels where a list holds parallel rels to it),
    /// written as a new unflat group.
    Intersect {
        to: SlotId,
        to_table: TableId,
        rels: Vec<IntersectRel>,
        /// Pairs of `rels` (same table) that must bind different rels.
        distinct: Vec<(usize, usize)>,
        /// A rel of `rels` that must differ from a rel bound earlier (same
        /// table), by that rel's id slot.
        exclude: Vec<(usize, SlotId)>,
    },
    /// A semijoin mask passed sideways: `predicate` reads only properties of
    /// node `node` (of table `table`), which an extend or intersection just
    /// bound. Once enough tuples have reached the step to pay for it, the
    /// predicate is evaluated over the whole table into a node mask (a scan
    /// of its columns) and tuples whose node is not in it are dropped here,
    /// before their properties are gathered one by one. The predicate stays
    /// a filter downstream, so the mask only saves work.
    SemiMask {
        node: SlotId,
        table: TableId,
        predicate: crate::bound::PropertyPredicate,
    },
    /// An OPTIONAL MATCH chain (see `bound::OptionalPattern`): extends,
    /// property reads and filters run as usual, except that an input tuple
    /// none of whose matches passes them all leaves the chain as one tuple
    /// of NULLs (the first extend emits it, flagged, once everything after
    /// it has finished that tuple's batches; the later steps let it through).
    OptionalChain(Vec<Step>),
    /// Names the vector of slot `of` also `slot` (no copy, no operator): an
    /// undirected rel's stored ends after the step that bound it.
    Alias { slot: SlotId, of: SlotId },
    /// Reads properties of already-bound nodes by id.
    ScanProperties {
        node: SlotId,
        table: TableId,
        properties: Vec<PropertyRead>,
    },
}

/// One rel of an [`Step::Intersect`]: the neighbours of bound node `from`.
#[derive(Debug, Clone)]
pub struct IntersectRel {
    pub rel_table: TableId,
    pub direction: ExtendDirection,
    pub from: SlotId,
    /// Slot of the rel's id, when something downstream reads it.
    pub rel_id: Option<SlotId>,
}

impl Step {
    /// Whether a pipeline holding the step may be pulled again after its
    /// input ran dry (the batches of a pipelined join arrive one by one):
    /// the steps that keep nothing but their place in the current input.
    /// An OPTIONAL MATCH's padding and the primary-key lookups are not.
    pub fn restartable(&self) -> bool {
        match self {
            Step::CrossProduct { optional, .. } | Step::Extend { optional, .. } => !optional,
            Step::OptionalChain(_) | Step::PadFilter { .. } | Step::LookupNode { .. } => false,
            Step::Filter(_)
            | Step::Intersect { .. }
            | Step::SemiMask { .. }
            | Step::Alias { .. }
            | Step::ScanProperties { .. } => true,
        }
    }

    /// A one-line name of the step (EXPLAIN's build sides, PROFILE).
    pub fn describe(&self, catalog: &Catalog) -> String {
        let table = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
        match self {
            Step::Filter(_) => "Filter".to_string(),
            Step::Alias { .. } => "Alias".to_string(),
            Step::OptionalChain(_) => "OptionalChain".to_string(),
            Step::PadFilter { .. } => "Filter (optional, pads)".to_string(),
            Step::Extend {
                rel_table,
                direction,
                to_table,
                optional,
                ..
            } => format!(
                "Extend {} {:?} -> {}{}",
                table(*rel_table),
                direction,
                table(*to_table),
                if *optional { " (optional)" } else { "" }
            ),
            Step::Intersect { to_table, rels, .. } => {
                let lists: Vec<String> = rels
                    .iter()
                    .map(|r| format!("{} {:?}", table(r.rel_table), r.direction))
                    .collect();
                format!("Intersect [{}] -> {}", lists.join(", "), table(*to_table))
            }
            Step::SemiMask { table: t, .. } => format!("SemiMask {}", table(*t)),
            Step::ScanProperties { table: t, .. } => format!("ScanProperties {}", table(*t)),
            Step::LookupNode { table: t, .. } => format!("LookupNode {}", table(*t)),
            Step::CrossProduct { key, optional, .. } => format!(
                "{}{}",
                if key.is_some() {
                    "HashJoin"
                } else {
                    "CrossProduct"
                },
                if *optional { " (left outer)" } else { "" }
            ),
        }
    }
}

/// The equality a hash join uses: `probe` reads only slots bound before the
/// join, `build` only slots of its build side; both have hashable types
/// (numbers, strings, booleans, dates, ids). The join index applies
/// Cypher's equality exactly (`1 = 1.0`, NULL and NaN equal nothing), so
/// the equality is not tested again after the join.
#[derive(Debug, Clone)]
pub struct HashJoinKey {
    pub probe: BoundExpr,
    pub build: BoundExpr,
}

#[derive(Debug, Clone)]
pub enum Sink {
    /// Evaluate the output expressions per tuple and collect the rows.
    Collect { outputs: Vec<BoundExpr> },
    /// Hash aggregation (a single group without keys).
    Aggregate {
        keys: Vec<(BoundExpr, SlotId)>,
        aggregates: Vec<BoundAggregate>,
        /// Keys that depend on another key: properties of a node whose
        /// primary key (or id) is grouped on. The node's id is a key in
        /// their place and they are read once per group, by that id, after
        /// the aggregation (not gathered for every tuple nor hashed).
        dependent: Vec<DependentKey>,
    },
}

/// A group key read after aggregation: property `property` of the node
/// whose id is the group key in slot `node`, into `property.slot`.
#[derive(Debug, Clone)]
pub struct DependentKey {
    pub node: SlotId,
    pub table: TableId,
    pub property: PropertyRead,
}

/// A pipeline without a sink: one of a part's pipelines, or the build
/// side of a cross product.
#[derive(Debug, Clone)]
pub struct SubPlan {
    pub source: Source,
    pub steps: Vec<Step>,
    /// The optimizer's estimate of the order its pattern nodes are bound
    /// in (EXPLAIN shows it); None for a single node.
    pub estimate: Option<JoinEstimate>,
}

/// What the cost model expects of a pipeline's joins (see
/// `planner/join_order.rs`).
#[derive(Debug, Clone)]
pub struct JoinEstimate {
    /// Pattern variables in the order they are bound.
    pub order: Vec<String>,
    /// Tuples all its steps produce.
    pub cost: f64,
    /// Tuples after the last join.
    pub rows: f64,
    /// The pipeline starts from a previous part's rows: both are per row.
    pub per_input_row: bool,
}

impl JoinEstimate {
    pub fn describe(&self) -> String {
        let per = if self.per_input_row {
            " per input row"
        } else {
            ""
        };
        format!(
            "join order ({}): est. {} tuples produced, {} out{per}",
            self.order.join(", "),
            round(self.cost),
            round(self.rows)
        )
    }
}

/// A count for EXPLAIN: two significant digits.
fn round(x: f64) -> String {
    if !x.is_finite() || x < 100.0 {
        return format!("{x:.0}");
    }
    let digits = x.log10().floor() as i32 - 1;
    let unit = 10f64.powi(digits);
    format!("{:.0}", (x / unit).round() * unit)
}

/// The recursive join that starts a part: the previous part's rows are
/// joined by their source node column with the destinations the recursive
/// computation reaches from it. Each output row is the input row plus the
/// destination id, the length (when `with_len`) and, last, the number of
/// walks / paths it stands for (read as the row's multiplicity).
#[derive(Debug, Clone)]
pub struct RecursiveJoin {
    pub mode: RecursiveMode,
    pub rel_table: TableId,
    /// The node table of both endpoints.
    pub node_table: TableId,
    pub direction: ExtendDirection,
    /// Every rel table the pattern may walk, with its direction (the first
    /// is `rel_table`); several when it has several types or unlabelled
    /// rels over several tables.
    pub rel_tables: Vec<(TableId, ExtendDirection)>,
    /// The node tables the walk may visit (the first is `node_table`).
    pub node_tables: Vec<TableId>,
    /// The tables the destination may be in (results elsewhere are dropped).
    pub dst_tables: Vec<TableId>,
    pub lower: u64,
    /// `None`: the connection's `var_length_max_depth`.
    pub upper: Option<u64>,
    /// Input column holding the source node id.
    pub src_column: usize,
    pub with_len: bool,
    /// The weight property (rel table column) of weighted shortest paths.
    pub weight: Option<(PropertyId, LogicalType)>,
    /// Output the path value (`PATH`, after the length): the paths are
    /// enumerated, one row each, instead of counted.
    pub with_path: bool,
    /// Output the rels of the path as a `LIST(REL)` (after the path).
    pub with_rels: bool,
    /// Whether anything reads the properties of the path's nodes and rels
    /// (false when the path and rels are only measured: `size(nodes(e))`,
    /// `size(rels(p))`): the values then carry ids, labels and endpoints.
    pub element_properties: bool,
    /// Undirected: every rel table is walked both ways (`rel_tables` lists
    /// each twice); a self-loop is walked once.
    pub undirected: bool,
    /// Every rel of the path has these property values (name, constant).
    pub rel_conditions: Vec<(String, BoundExpr)>,
    /// `(r, _ | WHERE ...)` over rel properties (a rel-id mask).
    pub rel_predicate: Option<crate::bound::PropertyPredicate>,
    /// `(_, n | WHERE ...)` over the properties of intermediate nodes (a
    /// node mask; the paths are then enumerated).
    pub node_predicate: Option<crate::bound::PropertyPredicate>,
    /// The conjuncts of the WHERE that read only properties of the
    /// destination (`b.id IN [...]`): a destination mask, so that paths
    /// and rows are produced only for destinations that can pass. The
    /// conjuncts stay in the filter after the join as well.
    pub dst_predicate: Option<crate::bound::PropertyPredicate>,
    /// Left outer join (OPTIONAL MATCH): an input row without any result
    /// gives one row with a NULL destination (and NULL length and path).
    pub left_outer: bool,
    /// Nothing after the join reads the destination (its id, properties
    /// or rels): the rows of one source (and length) may be merged into
    /// one with their counts summed (`RETURN a.x, count(*)`).
    pub dst_unread: bool,
    /// The dispatch policy (filled in from the connection for EXPLAIN).
    pub policy: Option<String>,
}

impl RecursiveJoin {
    pub fn describe(&self, catalog: &Catalog) -> String {
        let table = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
        let paths = self.with_path || self.with_rels;
        let mode = match (self.mode, paths) {
            (RecursiveMode::Walk, false) => "walks",
            (RecursiveMode::Walk, true) => "walk paths",
            (RecursiveMode::Trail, _) => "trail paths",
            (RecursiveMode::Acyclic, _) => "acyclic paths",
            (RecursiveMode::Shortest, false) => "shortest",
            (RecursiveMode::Shortest, true) => "shortest paths",
            (RecursiveMode::AllShortest, false) => "all shortest",
            (RecursiveMode::AllShortest, true) => "all shortest paths",
            (RecursiveMode::WeightedShortest, false) => "weighted shortest",
            (RecursiveMode::WeightedShortest, true) => "weighted shortest paths",
            (RecursiveMode::AllWeightedShortest, false) => "all weighted shortest",
            (RecursiveMode::AllWeightedShortest, true) => "all weighted shortest paths",
        };
        let mode = match (self.undirected, self.left_outer) {
            (false, false) => mode.to_string(),
            (true, false) => format!("{mode}, undirected"),
            (false, true) => format!("{mode}, optional"),
            (true, true) => format!("{mode}, undirected, optional"),
        };
        let mode = match paths && !self.element_properties {
            true => format!("{mode}, element ids only"),
            false => mode,
        };
        let names =
            |ts: &mut dyn Iterator<Item = TableId>| ts.map(table).collect::<Vec<_>>().join("|");
        format!(
            "RecursiveJoin (IFE {mode}) {} {:?} -> {} *{}..{} policy={}",
            names(&mut self.rel_tables.iter().map(|r| r.0)),
            self.direction,
            names(&mut self.dst_tables.iter().copied()),
            self.lower,
            self.upper
                .map_or("max_depth".to_string(), |u| u.to_string()),
            self.policy.as_deref().unwrap_or("auto"),
        )
    }
}

/// A decorrelated subquery: its rows are the key ids (then the count or
/// list for `Count` / `Collect`).
#[derive(Debug, Clone)]
pub struct SubqueryPlan {
    pub plan: QueryPlan,
    pub kind: SubqueryKind,
    pub num_keys: usize,
    /// Set when the subquery only counts the rels of its key node in one
    /// rel table: the executor reads the degrees instead of running it.
    pub degree: Option<DegreeCount>,
}

/// A subquery answered from degrees: each node of `node_table` counts its
/// rels in `rel_table` walked in `direction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DegreeCount {
    pub node_table: TableId,
    pub rel_table: TableId,
    pub direction: ExtendDirection,
}

/// One part of a query: a pipeline and its finishing phase.
#[derive(Debug, Clone)]
pub struct PartPlan {
    /// Joins the input rows with a recursive computation before anything else.
    pub recursive: Option<RecursiveJoin>,
    /// Columns of the rows this part reads (empty for the first part).
    pub inputs: Vec<(SlotId, LogicalType)>,
    /// Applied to the input rows (one empty row for the first part) before
    /// the pipeline runs.
    pub unwinds: Vec<BoundUnwind>,
    /// Whether the pipelines read the input rows (else they scan or start
    /// from one empty tuple).
    pub from_rows: bool,
    /// The pipelines, all feeding the one sink: one per way of matching
    /// the pattern's variables to tables and undirected rels to directions
    /// (usually one; none when the pattern can match nothing).
    pub pipelines: Vec<SubPlan>,
    pub sink: Sink,
    /// Types of the rows the sink produces: the visible columns, then one
    /// column per ORDER BY key.
    pub types: Vec<LogicalType>,
    pub num_visible: usize,
    /// Per ORDER BY key (the trailing columns): descending?
    pub descending: Vec<bool>,
    /// After an aggregate: the produced columns as expressions over key and
    /// aggregate slots. Empty for `Collect` (which evaluates them in the pipeline).
    pub final_outputs: Vec<BoundExpr>,
    pub distinct: bool,
    pub skip: Option<u64>,
    pub limit: Option<u64>,
    /// See [`crate::bound::BoundPart::skip_expr`].
    pub skip_expr: Option<BoundExpr>,
    pub limit_expr: Option<BoundExpr>,
    /// Left outer semantics (OPTIONAL MATCH): see `BoundPart::optional`.
    pub optional: Option<Vec<Option<usize>>>,
    /// See `BoundPart::numbers_rows`.
    pub numbers_rows: bool,
    /// Set on the last part of a one-key EXISTS or COUNT subquery (its
    /// rows are `id(key), count(*)`): what the subquery's table needs of
    /// each key's count. Its aggregate may then hand the table its counts
    /// by offset as they are, instead of as rows.
    pub key_counts: Option<KeyCounts>,
}

/// What a one-key subquery's table keeps of each key's count
/// ([`PartPlan::key_counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCounts {
    /// The count (COUNT { }).
    Counts,
    /// Whether it is above zero (EXISTS { }): a bit per key node, so the
    /// aggregate need not count.
    Presence,
}

#[derive(Debug, Clone)]
pub struct QueryPlan {
    pub parts: Vec<PartPlan>,
    /// The subqueries its expressions look up, run before its first part.
    pub subqueries: Vec<SubqueryPlan>,
    /// Output column names and types of the last part, in order.
    pub names: Vec<String>,
    pub types: Vec<LogicalType>,
}

impl QueryPlan {
    /// The plan as an indented operator tree (sink first, last part first),
    /// for EXPLAIN.
    pub fn explain(&self, catalog: &Catalog) -> String {
        let mut lines = Vec::new();
        for part in self.parts.iter().rev() {
            part.explain_lines(catalog, &mut lines);
        }
        let mut out = String::new();
        for (depth, line) in lines.iter().enumerate() {
            let _ = writeln!(out, "{}{}", "  ".repeat(depth), line);
        }
        out
    }
}

impl PartPlan {
    fn explain_lines(&self, catalog: &Catalog, lines: &mut Vec<String>) {
        if self.limit.is_some() || self.skip.is_some() {
            lines.push(format!(
                "Limit skip={} limit={}",
                self.skip.unwrap_or(0),
                self.limit.map_or("none".to_string(), |l| l.to_string())
            ));
        }
        if !self.descending.is_empty() {
            let keys: Vec<&str> = self
                .descending
                .iter()
                .map(|d| if *d { "DESC" } else { "ASC" })
                .collect();
            let topk = if self.limit.is_some() { " top-k" } else { "" };
            lines.push(format!("OrderBy [{}]{topk}", keys.join(", ")));
        }
        if self.distinct {
            lines.push("Distinct".to_string());
        }
        if self.optional.is_some() {
            lines.push("LeftOuter (pads rows without a match)".to_string());
        }
        match &self.sink {
            Sink::Collect { outputs } => {
                lines.push(format!("Projection ({} columns)", outputs.len()))
            }
            Sink::Aggregate {
                keys,
                aggregates,
                dependent,
            } => {
                let names: Vec<&str> = aggregates.iter().map(|a| a.function.as_str()).collect();
                let late = match dependent.len() {
                    0 => String::new(),
                    n => format!(" ({n} dependent keys read per group)"),
                };
                lines.push(format!(
                    "HashAggregate keys={} aggregates=[{}]{late}",
                    keys.len(),
                    names.join(", ")
                ));
            }
        }
        if self.pipelines.len() != 1 {
            lines.push(format!(
                "Union of {} pipelines (one per table combination), first: [{}]",
                self.pipelines.len(),
                self.pipelines
                    .first()
                    .map_or("no match possible".to_string(), |p| describe_sub(
                        p, catalog
                    ))
            ));
        } else {
            for p in &self.pipelines {
                p.explain_lines(catalog, lines);
            }
        }
        if let Some(r) = &self.recursive {
            lines.push(r.describe(catalog));
        }
        for _ in &self.unwinds {
            lines.push("Unwind".to_string());
        }
    }
}

impl SubPlan {
    fn explain_lines(&self, catalog: &Catalog, lines: &mut Vec<String>) {
        let table = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
        let props = |p: &[PropertyRead]| -> String {
            if p.is_empty() {
                String::new()
            } else {
                format!(" [{} properties]", p.len())
            }
        };
        for step in self.steps.iter().rev() {
            lines.push(match step {
                Step::Alias { .. } => continue,
                Step::OptionalChain(inner) => format!(
                    "OptionalChain [{}], pads a tuple without a match",
                    inner
                        .iter()
                        .filter(|s| !matches!(s, Step::Alias { .. }))
                        .map(|s| s.describe(catalog))
                        .collect::<Vec<_>>()
                        .join(" -> ")
                ),
                Step::Filter(e) => format!("Filter {}", describe_expr(e)),
                Step::PadFilter { predicate, .. } => {
                    format!("Filter {}, pads with NULLs", describe_expr(predicate))
                }
                Step::Extend {
                    rel_table,
                    direction,
                    to_table,
                    properties,
                    optional,
                    ..
                } => format!(
                    "{}Extend {} {:?} -> {}{}",
                    if *optional { "Optional" } else { "" },
                    table(*rel_table),
                    direction,
                    table(*to_table),
                    props(properties)
                ),
                Step::Intersect { .. } => step.describe(catalog),
                Step::SemiMask {
                    table: t,
                    predicate,
                    ..
                } => format!(
                    "SemiMask {} (sideways from a predicate on {} of its properties)",
                    table(*t),
                    predicate.properties.len()
                ),
                Step::ScanProperties {
                    table: t,
                    properties,
                    ..
                } => {
                    format!("ScanProperties {}{}", table(*t), props(properties))
                }
                Step::LookupNode {
                    table: t,
                    key,
                    each_item,
                    ..
                } => {
                    format!(
                        "LookupNode {} by primary key {}{}",
                        table(*t),
                        if *each_item { "in each item of " } else { "" },
                        describe_expr(key)
                    )
                }
                Step::CrossProduct {
                    build,
                    columns,
                    key,
                    optional,
                } => format!(
                    "{}{} ({} build columns) build: [{}]",
                    if key.is_some() {
                        "HashJoin"
                    } else {
                        "CrossProduct"
                    },
                    if *optional { " (left outer)" } else { "" },
                    columns.len(),
                    describe_sub(build, catalog)
                ),
            });
        }
        lines.push(match &self.source {
            Source::Single => "SingleTuple".to_string(),
            Source::ScanNodes {
                table: t,
                properties,
                ..
            } => format!("ScanNodes {}{}", table(*t), props(properties)),
            Source::Rows { columns } => format!("ScanRows ({} columns)", columns.len()),
        });
        if let Some(e) = &self.estimate {
            let last = lines.len() - 1;
            lines[last] = format!("{}  [{}]", lines[last], e.describe());
        }
    }
}

/// A one-line description of a build pipeline (source first).
fn describe_sub(p: &SubPlan, catalog: &Catalog) -> String {
    let table = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
    let mut parts = vec![match &p.source {
        Source::Single => "SingleTuple".to_string(),
        Source::ScanNodes { table: t, .. } => format!("ScanNodes {}", table(*t)),
        Source::Rows { .. } => "ScanRows".to_string(),
    }];
    parts.extend(
        (p.steps.iter())
            .filter(|s| !matches!(s, Step::Alias { .. }))
            .map(|s| s.describe(catalog)),
    );
    let mut out = parts.join(" -> ");
    if let Some(e) = &p.estimate {
        out = format!("{out}  [{}]", e.describe());
    }
    out
}

fn describe_expr(e: &BoundExpr) -> String {
    let mut slots = Vec::new();
    e.slots(&mut slots);
    format!("({} slot reads)", slots.len())
}
