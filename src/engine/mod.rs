//! The discrete-event engine: simulated time, the event queue and seeded random streams.
//!
//! The engine knows nothing about clients, servers or retries. It orders opaque events by
//! (time, insertion sequence) and hands out reproducible random streams; the model in
//! `crate::model` and the driver in `crate::simulate` give the events their meaning.

mod heap;
pub mod queue;
pub mod rng;
mod tiers;
pub mod time;

pub use queue::{EventQueue, Ticket};
pub use rng::Streams;
pub use time::{SimDuration, SimTime};
