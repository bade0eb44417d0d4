//! Shared vocabulary of every KithDB layer: logical types, values, the columnar
//! vector format, identifiers, errors with source spans and the size constants.
//!
//! This crate does no I/O and depends on nothing else in the workspace.

pub mod codec;
pub mod constants;
pub mod error;
pub mod ids;
pub mod list;
pub mod path;
pub mod temporal;
pub mod types;
pub mod value;
pub mod vector;

pub use error::{Error, ErrorKind, Result, Span};
pub use ids::{InternalId, TableId};
pub use list::ListValue;
pub use path::{PathPool, PathPoolHandle, PathValue};
pub use temporal::{Date, Interval, Timestamp};
pub use types::{LogicalType, PhysicalType};
pub use value::{NodeValue, RelValue, Value};
pub use vector::{Chunk, NullMask, StringData, ValueVector, VectorData};
