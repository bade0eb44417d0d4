//! The built-in functions, each defined once: its names, its type rule (the
//! result type for given argument types, or a type error, asked by the
//! binder) and its implementation on [`Value`]s (called by the executor's
//! evaluator once per tuple). Scalar functions live in one table per family
//! ([`registry`] lists the families); aggregates are named here with their
//! type rule and an [`AggregateKind`] whose per-group states the executor
//! implements, matching on the kind exhaustively.
//!
//! Also here, because both the functions and the executor's operators use
//! them: Cypher's ordering and equality of values ([`comparison`]) and value
//! conversion ([`cast`]).
//!
//! Boundaries: this crate knows values and types only (`kith-common`); it
//! does not parse, bind, plan or see vectors. Adding a function is one
//! entry in a family's table (CONTRIBUTING.md).

use kith_common::{Error, Result, Value};

pub mod aggregate;
mod arguments;
pub mod cast;
pub mod comparison;
pub mod registry;
pub mod signature;

pub mod conversion;
pub mod graph;
pub mod list;
pub mod numeric;
pub mod string;
pub mod temporal;

pub use aggregate::{AggregateFunction, AggregateKind};
pub use registry::{scalar, ScalarFn, ScalarFunction};

/// Calls function `lower_name` on `args`, looking it up each time (for
/// tests; the evaluator resolves a name once per call site).
pub fn call(lower_name: &str, args: &[Value]) -> Result<Value> {
    let f = scalar(lower_name)
        .ok_or_else(|| Error::semantic(format!("unknown function '{lower_name}'")))?;
    if f.propagate_nulls && args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    (f.func)(args)
}
