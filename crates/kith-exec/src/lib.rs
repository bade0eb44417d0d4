//! The executor: physical operators, expression evaluation (calling the
//! bodies of `kith-function`'s registry), aggregate states and the pipeline
//! runner. Operators run morsel-driven on the
//! database's scheduler; every worker runs its own copy of a pipeline's
//! operators and sinks merge thread-local state once at the end. Never plans.

pub mod aggregate_function;
pub mod copy;
pub mod ddl;
pub mod expression;
pub mod memory;
pub mod operator;
mod physical;
pub mod profile;
pub mod result_set;
pub mod run;
pub mod subquery;
pub mod write;

pub use operator::QueryContext;
pub use run::execute_query;
