//! Physical plans: what the executor runs, in the order it runs it.
//!
//! A query plan is one pipeline — a source, a chain of steps and a sink —
//! followed by a finishing phase (project the sink's rows, DISTINCT, SKIP,
//! LIMIT). Steps read and write *slots*; the executor decides where each slot
//! lives in its factorized result set.

use std::fmt::Write;

use kith_catalog::{Catalog, PropertyId};
use kith_common::{LogicalType, TableId};

use crate::bound::BoundAggregate;
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
    pub property: PropertyId,
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
    },
    /// Reads properties of already-bound nodes by id.
    ScanProperties {
        node: SlotId,
        table: TableId,
        properties: Vec<PropertyRead>,
    },
}

#[derive(Debug, Clone)]
pub enum Sink {
    /// Evaluate the output expressions per tuple and collect the rows.
    Collect { outputs: Vec<BoundExpr> },
    /// Hash aggregation (a single group without keys).
    Aggregate {
        keys: Vec<(BoundExpr, SlotId)>,
        aggregates: Vec<BoundAggregate>,
    },
}

#[derive(Debug, Clone)]
pub struct QueryPlan {
    pub source: Source,
    pub steps: Vec<Step>,
    pub sink: Sink,
    /// Output column names and types, in order.
    pub names: Vec<String>,
    pub types: Vec<LogicalType>,
    /// After an aggregate: the outputs as expressions over key and aggregate
    /// slots. Empty for `Collect` (which evaluates outputs in the pipeline).
    pub final_outputs: Vec<BoundExpr>,
    pub distinct: bool,
    pub skip: Option<u64>,
    pub limit: Option<u64>,
}

impl QueryPlan {
    /// The plan as an indented operator tree (sink first), for EXPLAIN.
    pub fn explain(&self, catalog: &Catalog) -> String {
        let table = |t: TableId| catalog.table(t).map_or("?".to_string(), |e| e.name.clone());
        let props = |p: &[PropertyRead]| -> String {
            if p.is_empty() {
                String::new()
            } else {
                format!(" [{} properties]", p.len())
            }
        };
        let mut lines = Vec::new();
        let mut finish = Vec::new();
        if self.limit.is_some() || self.skip.is_some() {
            finish.push(format!(
                "Limit skip={} limit={}",
                self.skip.unwrap_or(0),
                self.limit.map_or("none".to_string(), |l| l.to_string())
            ));
        }
        if self.distinct {
            finish.push("Distinct".to_string());
        }
        lines.extend(finish);
        match &self.sink {
            Sink::Collect { outputs } => {
                lines.push(format!("Projection ({} columns)", outputs.len()))
            }
            Sink::Aggregate { keys, aggregates } => {
                let names: Vec<&str> = aggregates.iter().map(|a| a.function.as_str()).collect();
                lines.push(format!(
                    "HashAggregate keys={} aggregates=[{}]",
                    keys.len(),
                    names.join(", ")
                ));
            }
        }
        for step in self.steps.iter().rev() {
            lines.push(match step {
                Step::Filter(e) => format!("Filter {}", describe_expr(e)),
                Step::Extend {
                    rel_table,
                    direction,
                    to_table,
                    properties,
                    ..
                } => format!(
                    "Extend {} {:?} -> {}{}",
                    table(*rel_table),
                    direction,
                    table(*to_table),
                    props(properties)
                ),
                Step::ScanProperties {
                    table: t,
                    properties,
                    ..
                } => {
                    format!("ScanProperties {}{}", table(*t), props(properties))
                }
            });
        }
        lines.push(match &self.source {
            Source::Single => "SingleTuple".to_string(),
            Source::ScanNodes {
                table: t,
                properties,
                ..
            } => format!("ScanNodes {}{}", table(*t), props(properties)),
        });
        let mut out = String::new();
        for (depth, line) in lines.iter().enumerate() {
            let _ = writeln!(out, "{}{}", "  ".repeat(depth), line);
        }
        out
    }
}

fn describe_expr(e: &BoundExpr) -> String {
    let mut slots = Vec::new();
    e.slots(&mut slots);
    format!("({} slot reads)", slots.len())
}
