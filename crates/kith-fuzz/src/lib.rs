//! kith-fuzz: a seeded Cypher query fuzzer for KithDB that looks for wrong
//! answers, crashes and hangs.
//!
//! A campaign derives one case seed per iteration from a master seed. A
//! case builds a small random graph in a fresh in-memory database
//! ([`graph`], over a random [`schema`]), generates well-typed read queries
//! ([`query`]) and checks each with the [`oracle`]s: ternary logic
//! partitioning (TLP), non-optimizing reference engine construction
//! (NoREC), differential runs under other settings (threads, plan cache,
//! other join orders through `CALL plan_seed=N`, recursive policy), and
//! crash/hang detection on every statement, and on request against Kùzu
//! ([`kuzu`]); then it
//! runs random writes against a reference model ([`write`]). Failing cases
//! are shrunk ([`minimize`]) and written as self-contained scripts
//! ([`report`]). [`campaign`] runs it all on worker threads with a
//! watchdog; [`dump`] writes result dumps to compare two builds (the
//! normal and the tiny one); `src/main.rs` is the command line.
//!
//! Boundaries: the fuzzer only talks to the engine through the public
//! `kith` API (`Database`, `Connection::query`, `Value`); it never fixes
//! or works around engine bugs — a wrong answer is a finding. Query errors
//! are data (counted by kind), not panics. Constructs with a known,
//! flooding bug can be left out with [`query::Features`] (`--skip`).

pub mod campaign;
pub mod dump;
pub mod exec;
pub mod graph;
pub mod kuzu;
pub mod minimize;
pub mod oracle;
pub mod query;
pub mod report;
pub mod results;
pub mod rng;
pub mod schema;
pub mod write;
