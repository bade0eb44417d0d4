//! From AST to executable plan: the binder resolves names against the catalog
//! and types expressions; the planner builds a logical plan and chooses join
//! order and extend directions; the result is a physical plan of pipelines the
//! executor runs. Never executes anything.

pub mod binder;
pub mod bound;
pub mod expr;
pub mod functions;
pub mod plan;
pub mod planner;
pub mod procedure;
