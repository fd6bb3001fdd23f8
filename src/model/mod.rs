//! The simulated system's parts as plain state machines: distributions, arrival processes,
//! backoff schedules and servers (the `queue` server and the `occ` row).
//!
//! Every function here takes validated values and the current time; none of them checks ranges
//! again, reads a clock, or does I/O. The driver (`crate::simulate`) owns the event loop and
//! calls into these.

pub mod backoff;
pub mod dist;
pub mod occ;
pub mod outcome;
pub mod server;
pub mod workload;

pub use backoff::{Backoff, Jitter};
pub use dist::Dist;
pub use occ::OccServer;
pub use outcome::{Outcome, OutcomeSet};
pub use server::{Admission, Discipline, Job, QueueConfig, QueueServer};
pub use workload::{RateProfile, RateStep};
