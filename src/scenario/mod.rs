//! Scenario files: the raw JSON mirror, validation, variants and sweeps.
//!
//! Loading goes text -> `serde_json::Value` (syntax errors with line and column) -> one merged
//! document per (sweep value, variant), each walked against the JSON Schema of
//! [`schema::RawScenario`] (`shape`: every unknown key and wrong type, with its path) ->
//! [`schema::RawScenario`] -> [`Scenario`] (every rule checked). Every problem is reported at
//! once, with its line and column where the file writes it (`locate`); many of one kind are
//! summarised. A [`Scenario`] cannot be wrong: the simulation takes it as is and never checks
//! a range again.

mod cautions;
mod check;
mod clients;
mod config_file;
pub mod envoy_config;
pub mod error;
pub mod grpc_config;
mod load;
mod locate;
pub mod phrase;
pub mod policy;
mod read;
pub mod schema;
pub mod server;
mod shape;
mod units;
mod validate;
pub mod words;

/// The hedge delay is a model value; scenario files name it under `policy.hedge`.
pub use crate::model::{HEDGE_BUDGET_BURST, HEDGE_MIN_SAMPLES, HedgeDelay};
pub use cautions::{Caution, cautions};
pub use clients::{ClientGroup, ClosedWorkload, Workload};
pub use error::{Problem, ScenarioError};
pub use load::{LoadOptions, MAX_FILE_BYTES, load_file, load_str, read_text, set_path};
pub use policy::bulkhead::BulkheadConfig;
pub use policy::hedge::HedgeConfig;
pub use policy::idempotency_key::IdempotencyKey;
pub use policy::retry::{RETRY_AFTER_CLAMP, RetryAfter, RetryPolicy};
pub use policy::throttle::ThrottleConfig;
pub use server::{Server, ServerKind};
pub use units::{parse_duration, percentile_text};
pub use validate::label_from_path;

use serde::Serialize;
use serde_json::Value;

use crate::engine::{SimDuration, SimTime};
use crate::model::{BreakerConfig, BudgetConfig, Dist};

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
    /// The swept setting (or two), if any.
    pub sweep: Option<Sweep>,
    /// One point without a sweep; one per swept value (or pair of values, first axis outer)
    /// with one.
    pub points: Vec<Point>,
}

impl Experiment {
    /// Every scenario this experiment simulates: each variant at each point.
    pub fn scenarios(&self) -> impl Iterator<Item = &Scenario> {
        self.points
            .iter()
            .flat_map(|p| &p.variants)
            .map(|v| &v.scenario)
    }

    /// Whether some variant at some point has calls below the entry.
    pub fn any_has_calls(&self) -> bool {
        self.scenarios().any(Scenario::has_calls)
    }

    /// Whether some variant at some point detects outliers: its CSVs of series then have an
    /// `ejected` column (`Column::written`).
    pub fn any_detects_outliers(&self) -> bool {
        self.scenarios().any(Scenario::detects_outliers)
    }
}

/// A sweep: one swept setting (the first axis), or two whose values are crossed. The
/// experiment's points are the cartesian product, first axis outer: (x0, y0), (x0, y1), ...,
/// (x1, y0), ...
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// Dotted keys of the first axis, e.g. "clients.count".
    pub path: String,
    /// The first axis' name for people (figures, report.md): `sweep.label`, else made from
    /// `path` by [`label_from_path`]. Never empty.
    pub label: String,
    /// The first axis' values, in order.
    pub values: Vec<Value>,
    /// The value whose point figures and tables of one sweep value show (filled in by
    /// loading): `sweep.focus` if the file gives one, else the value the scenario itself has
    /// at `path`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_value: Option<Value>,
    /// The second axis of a two-axis sweep (`sweep.second`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second: Option<Axis>,
}

/// The second axis of a two-axis sweep: dotted keys into the scenario and the values put
/// there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    /// Dotted keys, e.g. "policy.retry.max_attempts".
    pub path: String,
    /// The axis' name for people: `sweep.second.label`, else made from `path` by
    /// [`label_from_path`]. Never empty.
    pub label: String,
    /// The values, in order.
    pub values: Vec<Value>,
    /// The value the scenario itself has at `path`, if any (filled in by loading).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_value: Option<Value>,
}

impl Axis {
    /// An axis of `path` over `values`, labelled by [`label_from_path`].
    pub fn new(path: impl Into<String>, values: Vec<Value>) -> Self {
        let path = path.into();
        Axis {
            label: label_from_path(&path),
            path,
            values,
            base_value: None,
        }
    }

    /// This axis with `label` as its name for people.
    pub fn with_label(self, label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            ..self
        }
    }

    /// The index of the value that figures of a single sweep value show: the scenario's own
    /// value, else the middle one.
    pub fn focus(&self) -> usize {
        focus_of(&self.values, self.base_value.as_ref())
    }
}

fn focus_of(values: &[Value], base: Option<&Value>) -> usize {
    base.and_then(|b| values.iter().position(|v| v == b))
        .unwrap_or(values.len() / 2)
}

impl Sweep {
    /// A one-axis sweep of `path` over `values`, labelled by [`label_from_path`].
    pub fn new(path: impl Into<String>, values: Vec<Value>) -> Self {
        let path = path.into();
        Sweep {
            label: label_from_path(&path),
            path,
            values,
            base_value: None,
            second: None,
        }
    }

    /// This sweep with `label` as its first axis' name for people.
    pub fn with_label(self, label: impl Into<String>) -> Self {
        Sweep {
            label: label.into(),
            ..self
        }
    }

    /// This sweep with `second` as its second axis.
    pub fn with_second(self, second: Axis) -> Self {
        Sweep {
            second: Some(second),
            ..self
        }
    }

    /// Values of the second axis (1 without one).
    fn second_len(&self) -> usize {
        self.second.as_ref().map_or(1, |s| s.values.len())
    }

    /// The index of the point at first-axis value `i` and second-axis value `j` (0 without a
    /// second axis).
    pub fn point_index(&self, i: usize, j: usize) -> usize {
        i * self.second_len() + j
    }

    /// The index of the point that figures of a single sweep value show: the point at the
    /// scenario's own value on each axis, else the middle one.
    pub fn focus(&self) -> usize {
        let j = self.second.as_ref().map_or(0, Axis::focus);
        self.point_index(focus_of(&self.values, self.base_value.as_ref()), j)
    }

    /// The indices of the points along the first axis, in order: every point with one axis,
    /// those at the second axis' focus value with two. Figures that draw a metric against
    /// the first axis draw these.
    pub fn first_axis_points(&self) -> Vec<usize> {
        let j = self.second.as_ref().map_or(0, Axis::focus);
        (0..self.values.len())
            .map(|i| self.point_index(i, j))
            .collect()
    }
}

/// Every variant at one sweep value (one pair of values with two axes).
#[derive(Debug, Clone)]
pub struct Point {
    /// The first axis' value (`None` without a sweep).
    pub value: Option<Value>,
    /// The second axis' value (`None` without a second axis).
    pub second_value: Option<Value>,
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
    /// The scenario as the file (with the sweep value and the variant's patch) says it, every
    /// default filled in by validation: what `scenario.resolved.json` shows, and a scenario
    /// file that loads again to `scenario`.
    pub resolved: schema::RawScenario,
}

/// The resolved form of an experiment, for `scenario.resolved.json`: the file-level settings,
/// the sweep (with its second axis, if any), and every variant at the first sweep point, each
/// a whole scenario with every default filled in. It loads again as a scenario
/// (`retrystorm report` does), and each variant runs exactly as it did.
pub fn resolved_json(e: &Experiment) -> Value {
    #[derive(Serialize)]
    struct Resolved<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        seed: u64,
        replications: u32,
        version: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        sweep: Option<&'a Sweep>,
        variants: Vec<ResolvedVariant<'a>>,
    }
    #[derive(Serialize)]
    struct ResolvedVariant<'a> {
        name: &'a str,
        scenario: &'a schema::RawScenario,
    }
    let resolved = Resolved {
        name: &e.name,
        description: e.description.as_deref(),
        seed: e.seed,
        replications: e.replications,
        version: env!("CARGO_PKG_VERSION"),
        sweep: e.sweep.as_ref(),
        variants: e.points[0]
            .variants
            .iter()
            .map(|v| ResolvedVariant {
                name: &v.name,
                scenario: &v.resolved,
            })
            .collect(),
    };
    // Plain structs of strings, numbers and string-keyed maps: serialising cannot fail.
    serde_json::to_value(resolved).expect("a resolved scenario serialises")
}

/// A window of simulated time in which something pushes the system towards overload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    /// Start (inclusive).
    pub from: SimTime,
    /// End (exclusive).
    pub to: SimTime,
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
    /// The sources of logical requests: one group or more, in the file's order, each with
    /// the policy it calls the entry service with.
    pub clients: Vec<ClientGroup>,
    /// One-way message delays.
    pub network: Network,
    /// The services, the entry first: one (a file's `server`), or a file's `services`
    /// with the clients' entry service at index 0 and the others in file order: the order in
    /// which the file writes the keys of `services` (serde_json keeps it, `preserve_order`);
    /// a variant's patch keeps it and appends the services it adds. Never empty.
    pub services: Vec<Service>,
    /// The clients' policy towards the entry service: a single group's, and with several
    /// groups the top-level one, every group's without a policy of its own
    /// (`ClientGroup::policy` is what each group uses).
    pub policy: Policy,
    /// Safety limits.
    pub limits: Limits,
}

impl Scenario {
    /// The entry service's server: the one server of a single-server scenario.
    pub fn server(&self) -> &Server {
        &self.services[0].server
    }

    /// Whether this is a call graph rather than one server: more than one service. Only
    /// call graphs have per-service and per-call results.
    pub fn is_graph(&self) -> bool {
        self.services.len() > 1
    }

    /// Every replica of each service with more than one, as (service index, replica number
    /// from 0), service by service, replica by replica: the order of a run's per-replica
    /// counts and series. Empty without replicas.
    pub fn replicas(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.services
            .iter()
            .enumerate()
            .filter(|(_, s)| s.server.pool.replicas > 1)
            .flat_map(|(i, s)| (0..s.server.pool.replicas).map(move |k| (i, k)))
    }

    /// The policy each group of clients calls the entry with, group by group.
    pub fn client_policies(&self) -> impl Iterator<Item = &Policy> {
        self.clients.iter().map(|g| self.group_policy(g))
    }

    /// The policy group `g` calls the entry with: its own, or the top-level one.
    pub fn group_policy<'a>(&'a self, g: &'a ClientGroup) -> &'a Policy {
        g.policy.as_ref().unwrap_or(&self.policy)
    }

    /// Whether the clients form more than one group.
    pub fn has_groups(&self) -> bool {
        self.clients.len() > 1
    }

    /// Whether some service makes calls: there are services below the entry, and with
    /// them per-service and per-call results. A single server, or a file's `services` with
    /// one service, makes none.
    pub fn has_calls(&self) -> bool {
        self.services.iter().any(|s| !s.calls.is_empty())
    }

    /// Whether some service's callers detect outliers among its replicas
    /// (`outlier_detection`): then its series counts the replicas ejected.
    pub fn detects_outliers(&self) -> bool {
        self.services
            .iter()
            .any(|s| s.server.pool.outlier.is_some())
    }

    /// The triggers of this scenario, sorted by start: every fault window of every service,
    /// and the stretch in which an open workload's profile departs from its base rate and
    /// comes back to it (from the first point whose rate differs from the base to the point
    /// where it returns to the base for good). A profile that ends at another rate changes
    /// the load for good: that is not a trigger, since the goodput before it is no longer the
    /// level to come back to.
    /// Recovery is judged against the goodput before the first trigger, after the last one
    /// ends.
    pub fn triggers(&self) -> Vec<Trigger> {
        // A fault on any service is a trigger: in a call graph, a slow or failing
        // dependency is what the entry's goodput has to come back from.
        let mut triggers: Vec<Trigger> = self
            .services
            .iter()
            .flat_map(|s| s.server.faults.windows())
            .map(|f| Trigger {
                from: f.from,
                to: f.to,
            })
            .collect();
        for group in &self.clients {
            let Workload::Open(profile) = &group.workload else {
                continue;
            };
            let base = profile.base_rate;
            let first = profile.steps.iter().position(|s| s.rate_per_s != base);
            let returns = profile.steps.last().is_some_and(|s| s.rate_per_s == base);
            if let Some(first) = first
                && returns
            {
                // A ramp towards the first different rate starts at the point before it.
                let from = if profile.steps[first].ramp && first > 0 {
                    profile.steps[first - 1].at
                } else if profile.steps[first].ramp {
                    SimDuration::ZERO
                } else {
                    profile.steps[first].at
                };
                let back = profile
                    .steps
                    .iter()
                    .rposition(|s| s.rate_per_s != base)
                    .and_then(|last| profile.steps.get(last + 1))
                    .map_or(profile.steps[first].at, |s| s.at);
                let to = back.max(profile.steps[first].at);
                if to > from {
                    triggers.push(Trigger {
                        from: SimTime::ZERO + from,
                        to: SimTime::ZERO + to,
                    });
                }
            }
        }
        triggers.sort_by_key(|t| (t.from, t.to));
        triggers
    }
}

/// `network`.
#[derive(Debug, Clone)]
pub struct Network {
    /// Delay of every one-way message.
    pub latency: Dist,
}

/// One service of a call graph: a server, and the calls every attempt it serves makes to
/// other services before it answers.
#[derive(Debug, Clone)]
pub struct Service {
    /// The service's name (a key of `services`; `server` for a single-server scenario).
    pub name: String,
    /// Its server settings.
    pub server: Server,
    /// The downstream calls of an attempt, in file order. Their targets are other services
    /// (the graph has no cycles).
    pub calls: Vec<Call>,
    /// `call_mode: parallel`: the calls are made at once and the attempt waits for all of
    /// them; otherwise one after another, stopping at the first that fails for good.
    pub parallel: bool,
}

/// `services.<name>.calls[i]`: one downstream call.
#[derive(Debug, Clone)]
pub struct Call {
    /// Index of the target service in [`Scenario::services`] (never 0, the entry).
    pub to: usize,
    /// Share of the attempts that make this call, in (0, 1]. The calls of a service with a
    /// fraction below 1 are exclusive routes: they take consecutive slices of [0, 1) in file
    /// order (their sum is at most 1), and one draw per logical request and service picks
    /// the slice; calls with fraction 1 are made by every attempt.
    pub fraction: f64,
    /// The caller's policy on this call. Its budget and breaker are one per call edge,
    /// shared by every attempt on it (their `scope` reads `Shared`).
    pub policy: Policy,
    /// The caller's balancer over the target's replicas, where it is not the target's.
    pub balancer: Option<crate::model::BalancerKind>,
    /// The caller's `sticky`, where it is not the target's.
    pub sticky: Option<bool>,
}

/// `policy`.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The client library's policy it was written over, if any (its settings are below).
    pub preset: Option<crate::scenario::policy::preset::RawPreset>,
    /// Per-attempt timeout.
    pub timeout: Option<SimDuration>,
    /// Per-request deadline.
    pub deadline: Option<SimDuration>,
    /// Retry settings.
    pub retry: RetryPolicy,
    /// A retry budget, if any.
    pub budget: Option<BudgetConfig>,
    /// A circuit breaker, if any.
    pub breaker: Option<BreakerConfig>,
    /// A bulkhead on the call (calls between services only).
    pub bulkhead: Option<BulkheadConfig>,
    /// A fallback: a call that fails for good is answered after this latency instead, and
    /// the request ends `degraded` rather than failed.
    pub fallback: Option<Dist>,
    /// The call's deadline is at most the time its caller still waits (calls between
    /// services only): `propagate_deadline`.
    pub propagate_deadline: bool,
    /// Hedged requests, if any.
    pub hedge: Option<HedgeConfig>,
    /// Whether executing an attempt of the call twice is harmless (default true). When
    /// false, every execution of the call after its first is counted as a duplicate side
    /// effect at the service called.
    pub idempotent: bool,
    /// Idempotency keys, if the caller sends them.
    pub idempotency_key: Option<IdempotencyKey>,
    /// Client-side adaptive throttling, if any.
    pub adaptive_throttle: Option<ThrottleConfig>,
    /// What was read from a config file (`grpc_service_config`, `envoy_config`), in words;
    /// its settings are the others'.
    pub read_from: Option<String>,
    /// The AWS SDKs' adaptive-mode client rate limiter (`client_rate_limiter`), if any, and
    /// how its sends wait for a token.
    pub client_rate_limiter: Option<crate::model::TokenWait>,
}

/// `limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Events one replication may process.
    pub max_events: u64,
    /// Logical requests in flight at once.
    pub max_in_flight: u64,
    /// The memory a run may take, in MiB (`crate::memory`).
    pub max_memory_mb: u64,
}

impl Limits {
    /// Default events per replication.
    pub const DEFAULT_MAX_EVENTS: u64 = 2_000_000_000;
    /// Default logical requests in flight.
    pub const DEFAULT_MAX_IN_FLIGHT: u64 = 5_000_000;
}
