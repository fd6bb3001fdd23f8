//! Scenario files: the raw JSON mirror, validation, variants and sweeps.
//!
//! Loading goes text -> `serde_json::Value` (syntax errors with line and column) -> one merged
//! document per (sweep value, variant) -> [`schema::RawScenario`] (shape errors with their JSON
//! path) -> [`Scenario`] (every rule checked, every problem reported at once). A [`Scenario`]
//! cannot be wrong: the simulation takes it as is and never checks a range again.

pub mod error;
mod load;
mod resolve;
pub mod schema;
mod units;
mod validate;

pub use error::{Problem, ScenarioError};
pub use load::{LoadOptions, load_file, load_str, set_path};
pub use resolve::resolved_json;
pub use units::parse_duration;

use serde_json::Value;

use crate::engine::SimDuration;
use crate::model::{Backoff, Dist, OutcomeSet, QueueConfig, RateProfile};

/// Everything one scenario file asks for: every variant at every sweep value, each replicated.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Names the scenario and its output folder.
    pub name: String,
    /// What the scenario models.
    pub description: Option<String>,
    /// Master seed.
    pub seed: u64,
    /// Replications of every variant at every sweep value (>= 1).
    pub replications: u32,
    /// The swept setting, if any.
    pub sweep: Option<Sweep>,
    /// One point without a sweep; one per swept value with one.
    pub points: Vec<Point>,
}

/// A sweep: dotted keys into the scenario and the values put there.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Dotted keys, e.g. "clients.count".
    pub path: String,
    /// The values, in order.
    pub values: Vec<Value>,
    /// The value the scenario itself has at `path`, if any (filled in by loading). Figures
    /// that show one sweep value show the point with this value.
    pub base_value: Option<Value>,
}

impl Sweep {
    /// A sweep of `path` over `values`.
    pub fn new(path: impl Into<String>, values: Vec<Value>) -> Self {
        Sweep {
            path: path.into(),
            values,
            base_value: None,
        }
    }

    /// The index of the point that figures of a single sweep value show: the point at the
    /// scenario's own value, else the middle one.
    pub fn focus(&self) -> usize {
        self.base_value
            .as_ref()
            .and_then(|b| self.values.iter().position(|v| v == b))
            .unwrap_or(self.values.len() / 2)
    }
}

/// Every variant at one sweep value.
#[derive(Debug, Clone)]
pub struct Point {
    /// The swept value (`None` without a sweep).
    pub value: Option<Value>,
    /// The variants, in file order.
    pub variants: Vec<Variant>,
}

/// A named, fully validated configuration.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Shown in tables, charts and summary.json.
    pub name: String,
    /// What to simulate.
    pub scenario: Scenario,
}

/// One validated configuration of the simulated system.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// New logical requests start only before this time.
    pub duration: SimDuration,
    /// Hard stop, if any.
    pub max_time: Option<SimDuration>,
    /// Width of a time-series bucket (> 0).
    pub bucket: SimDuration,
    /// The sources of logical requests.
    pub clients: Clients,
    /// One-way message delays.
    pub network: Network,
    /// The server.
    pub server: Server,
    /// The clients' policy.
    pub policy: Policy,
    /// Safety limits.
    pub limits: Limits,
}

/// `clients`.
#[derive(Debug, Clone)]
pub struct Clients {
    /// Number of clients (>= 1).
    pub count: u32,
    /// How they issue requests.
    pub workload: Workload,
}

/// `clients.workload`.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Poisson arrivals with a total rate profile.
    Open(RateProfile),
    /// One request at a time per client.
    Closed(ClosedWorkload),
}

/// `clients.workload.closed`.
#[derive(Debug, Clone)]
pub struct ClosedWorkload {
    /// Requests per client; `None`: until `duration`.
    pub requests_per_client: Option<u64>,
    /// Wait between a request's end and the next one's start.
    pub think_time: Dist,
    /// Delay of each client's first request.
    pub start: Dist,
}

/// `network`.
#[derive(Debug, Clone)]
pub struct Network {
    /// Delay of every one-way message.
    pub latency: Dist,
}

/// `server`.
#[derive(Debug, Clone)]
pub struct Server {
    /// What kind of server, with its settings.
    pub kind: ServerKind,
    /// Probability that a logical request is bad (every attempt ends `permanent`).
    pub permanent_error_rate: f64,
}

/// The server kinds.
#[derive(Debug, Clone)]
pub enum ServerKind {
    /// Workers with a waiting room.
    Queue(QueueConfig),
    /// One row written with optimistic concurrency control.
    Occ,
}

/// `policy`.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Per-attempt timeout.
    pub timeout: Option<SimDuration>,
    /// Per-request deadline.
    pub deadline: Option<SimDuration>,
    /// Retry settings.
    pub retry: RetryPolicy,
}

/// `policy.retry`.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Total attempts including the first (>= 1); `None` is unlimited.
    pub max_attempts: Option<u32>,
    /// Attempt outcomes that are retried (never contains `permanent` or `success`).
    pub retry_on: OutcomeSet,
    /// Delay before each retry.
    pub backoff: Backoff,
    /// Whether a server's Retry-After is honoured.
    pub retry_after: RetryAfter,
}

/// `policy.retry.retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// Wait max(backoff, Retry-After).
    Honor,
    /// Use the backoff alone.
    Ignore,
}

/// `limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Events one replication may process.
    pub max_events: u64,
    /// Logical requests in flight at once.
    pub max_in_flight: u64,
}

impl Limits {
    /// Default events per replication.
    pub const DEFAULT_MAX_EVENTS: u64 = 2_000_000_000;
    /// Default logical requests in flight.
    pub const DEFAULT_MAX_IN_FLIGHT: u64 = 5_000_000;
}
