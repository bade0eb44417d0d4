//! The shared worker pool and morsel-driven task runner.
//!
//! One [`Scheduler`] per database owns the worker threads. A query (or a bulk
//! load) hands it a [`Task`]; the calling thread always participates as worker
//! 0 and up to `max_threads - 1` pool workers join. Work inside a task is split
//! into morsels by a [`MorselDispenser`], so a late-joining or slow worker never
//! leaves the others waiting. Workers and the caller busy-wait a few hundred
//! microseconds before sleeping, since a small query's tasks follow each
//! other faster than a sleeping thread wakes. Cancellation (interrupt,
//! timeout, a satisfied LIMIT) is cooperative through a [`CancelToken`]
//! checked once per morsel.
//! This crate knows nothing about queries or storage.

mod cancel;
mod map;
mod morsel;
mod pool;

pub use cancel::CancelToken;
pub use morsel::MorselDispenser;
pub use pool::{Scheduler, Task, WorkerContext};
