//! Shared vocabulary of every KithDB layer: logical types, values, the columnar
//! vector format, errors with source spans and the size constants.
//!
//! This crate does no I/O and depends on nothing else in the workspace.

pub mod constants;
