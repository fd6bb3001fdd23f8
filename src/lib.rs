//! retrystorm: a fast, exact discrete-event simulator of retry storms.
//!
//! The crate is a library with a thin binary. Reading order: [`scenario`] turns a JSON file
//! into validated [`scenario::Scenario`]s; [`sim`] runs one replication on the
//! [`engine`] with the parts in [`model`], measuring with [`metrics`]; [`runner`] runs every
//! variant and replication in parallel and aggregates; [`report`] writes the results; [`cli`]
//! ties it together. See ARCHITECTURE.md.

pub mod cli;
pub mod engine;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod output;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod shard;
pub mod sim;
pub mod tune;
