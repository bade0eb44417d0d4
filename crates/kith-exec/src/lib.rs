//! The executor: physical operators, expression evaluation, the function
//! library and the pipeline runner. Operators run morsel-driven on the
//! database's scheduler; every worker runs its own copy of a pipeline's
//! operators and sinks merge thread-local state once at the end. Never plans.

pub mod expression;
pub mod result_set;
pub mod function;
pub mod aggregate_function;
