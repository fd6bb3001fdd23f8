//! `clients`: how many clients there are and how they issue logical requests (an open
//! workload's rate profile, or a closed workload's requests, think time and start), in one
//! place: the raw settings a scenario file writes, the checked [`Clients`] the simulation
//! takes, the rules and defaults between them (validation writes the defaults back into the
//! raw settings), and the sentence report.md says of them. The sources themselves are
//! `crate::model::workload`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::{Dist, RateProfile, RateStep};
use crate::scenario::check::{Checker, zero_dist};
use crate::scenario::phrase::words;
use crate::scenario::schema::{DurationText, RawDist};
use crate::scenario::{Limits, Policy, Scenario};

/// Most clients of a closed workload: each has its first request scheduled from the start, so
/// memory grows with the count whatever `limits.max_in_flight` says (about 1.2 GB a replication
/// in progress at the bound).
pub const MAX_CLOSED_CLIENTS: u32 = 10_000_000;

/// `clients`: how many clients there are and how they issue logical requests.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClients {
    /// Number of clients (at least 1). Each owns its own budget and breaker state.
    #[schemars(range(min = 1, max = u32::MAX))]
    pub count: u64,
    /// Open (Poisson arrivals) or closed (one request at a time per client).
    pub workload: RawWorkload,
    /// The service the clients call, by name (with `services` only; required with more than
    /// one service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// `clients.workload`.
// Read once per file; boxing the larger variant would only make the schema code noisier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawWorkload {
    /// Independent Poisson sources; the total rate is `rate_per_s`.
    Open(RawOpen),
    /// Each client issues one logical request at a time.
    Closed(RawClosed),
}

/// `clients.workload.open`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOpen {
    /// Total arrival rate of logical requests, per second, over all clients.
    #[schemars(range(min = 0.0, max = 1e9))]
    pub rate_per_s: f64,
    /// Changes of the total rate over time: steps, or linear ramps with `"ramp": true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Vec<RawRateStep>>,
}

/// One point of an open workload's rate profile.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRateStep {
    /// When the new rate applies (or, for a ramp, is reached).
    pub at: DurationText,
    /// Total rate per second from `at` on.
    #[schemars(range(min = 0.0, max = 1e9))]
    pub rate_per_s: f64,
    /// Ramp linearly from the previous point instead of stepping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<bool>,
}

/// `clients.workload.closed`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClosed {
    /// Logical requests per client; omitted: keep going until `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub requests_per_client: Option<u64>,
    /// Wait between the end of one request and the start of the next (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<RawDist>,
    /// Delay of each client's first request (default 0: a thundering herd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<RawDist>,
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

/// A closed workload keeps a request of every client in flight from the start: its client
/// count is bounded by `limits.max_in_flight` and by memory.
pub(in crate::scenario) fn closed_within_limits(
    c: &mut Checker,
    clients: &Clients,
    limits: &Limits,
) {
    if !matches!(clients.workload, Workload::Closed(_)) || c.failed("clients.count") {
        return;
    }
    if !c.failed("limits.max_in_flight") && u64::from(clients.count) > limits.max_in_flight {
        c.err(
            "clients.count",
            format!(
                "a closed workload keeps a request of every client in flight, so {} clients exceed limits.max_in_flight = {}; raise the limit if the machine has the memory",
                clients.count, limits.max_in_flight
            ),
        );
    }
    if !c.failed("clients.count") && clients.count > MAX_CLOSED_CLIENTS {
        c.err(
            "clients.count",
            format!(
                "a closed workload schedules every client's first request at the start (about 115 bytes per client for each replication in progress), so it takes at most {MAX_CLOSED_CLIENTS} clients (got {}); an open workload has no such bound",
                clients.count
            ),
        );
    }
}

/// Under a breaker in mode "all", an endless closed workload without think time would start
/// requests at one instant without end.
pub(in crate::scenario) fn closed_against_breaker(
    c: &mut Checker,
    clients: &Clients,
    policy: &Policy,
) {
    if let Workload::Closed(closed) = &clients.workload
        && closed.requests_per_client.is_none()
        && closed.think_time.is_zero()
        && !c.failed("clients.workload.closed.think_time")
        && policy
            .breaker
            .is_some_and(|b| b.mode == crate::model::BreakerMode::All)
    {
        c.err(
            "clients.workload.closed.think_time",
            "must be longer than zero with a circuit breaker in mode \"all\" and no requests_per_client: an open breaker ends a request at once, so each client would start the next at the same instant without end; set a think time or requests_per_client",
        );
    }
}

/// `clients`: the count and the workload, its defaults written back into `raw`.
pub(in crate::scenario) fn check(c: &mut Checker, raw: &mut RawClients) -> Clients {
    let count = c.count_u32("clients.count", raw.count, 1);
    let workload = match &mut raw.workload {
        RawWorkload::Open(open) => {
            let base = c.rate("clients.workload.open.rate_per_s", open.rate_per_s);
            let mut steps = Vec::new();
            let mut last_at: Option<SimDuration> = None;
            for (i, step) in open.profile.iter_mut().flatten().enumerate() {
                let p = format!("clients.workload.open.profile[{i}]");
                let at = c.duration(&format!("{p}.at"), &step.at);
                if let (Some(prev), Some(at)) = (last_at, at)
                    && at <= prev
                {
                    c.err(
                        &format!("{p}.at"),
                        format!("must be later than the previous point (got {at} after {prev})"),
                    );
                }
                // A point that cannot be read is compared with nothing, before or after.
                last_at = at;
                let rate_per_s = c.rate(&format!("{p}.rate_per_s"), step.rate_per_s);
                steps.push(RateStep {
                    at: at.unwrap_or_default(),
                    rate_per_s,
                    ramp: *step.ramp.get_or_insert(false),
                });
            }
            Workload::Open(RateProfile::new(base, steps))
        }
        RawWorkload::Closed(closed) => {
            let path = "clients.workload.closed";
            if closed.requests_per_client == Some(0) {
                c.err(
                    &format!("{path}.requests_per_client"),
                    "must be at least 1 (got 0); omit it to keep clients busy until duration",
                );
            }
            Workload::Closed(ClosedWorkload {
                requests_per_client: closed.requests_per_client,
                think_time: c.dist(
                    &format!("{path}.think_time"),
                    closed.think_time.get_or_insert_with(zero_dist),
                ),
                start: c.dist(
                    &format!("{path}.start"),
                    closed.start.get_or_insert_with(zero_dist),
                ),
            })
        }
    };
    Clients { count, workload }
}

/// The clients in one sentence: how many, how they send, for how long.
pub(in crate::scenario) fn sentence(s: &Scenario) -> String {
    let n = s.clients.count;
    match &s.clients.workload {
        Workload::Open(p) => {
            let steps = if p.steps.is_empty() {
                String::new()
            } else {
                let parts: Vec<String> = p
                    .steps
                    .iter()
                    .map(|st| {
                        format!(
                            "{} {}/s at {}",
                            if st.ramp { "ramping to" } else { "then" },
                            st.rate_per_s,
                            st.at
                        )
                    })
                    .collect();
                format!(" ({})", parts.join(", "))
            };
            format!(
                "Clients: {n} open-loop clients sending {} requests/s in all as a Poisson stream{steps}, for {}; everything in flight then drains.",
                p.base_rate, s.duration
            )
        }
        Workload::Closed(c) => {
            let k = c
                .requests_per_client
                .map_or(format!("requests until {}", s.duration), |k| {
                    format!("{k} request{}", if k == 1 { "" } else { "s" })
                });
            let start = if c.start.is_zero() {
                "all starting at once".to_string()
            } else {
                format!("starting after {}", words(&c.start))
            };
            let think = if c.think_time.is_zero() {
                String::new()
            } else {
                format!(", thinking {} between requests", words(&c.think_time))
            };
            format!(
                "Clients: {n} closed-loop clients, one request at a time, {k} each, {start}{think}."
            )
        }
    }
}
