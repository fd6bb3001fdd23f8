//! `clients`: how many clients there are and how they issue logical requests (an open
//! workload's rate profile, or a closed workload's requests, think time and start), as one
//! group (an object) or a list of named groups, each with its own workload and, optionally,
//! its own policy, in one place: the raw settings a scenario file writes, the checked
//! [`ClientGroup`]s the simulation takes, the rules and defaults between them (validation
//! writes the defaults back into the raw settings, and the rules between groups are in
//! `validate.rs`), and the sentences report.md says of them. The sources themselves are
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

/// `clients`: one group of clients written as an object, or a list of named groups.
#[derive(Debug, Clone)]
pub struct RawClients {
    /// Whether the file writes a list of groups (else one group as an object).
    pub listed: bool,
    /// The groups, in the file's order (one when written as an object).
    pub groups: Vec<RawClientGroup>,
}

/// One group of clients: how many there are, how they issue logical requests and, where it
/// is not the top-level one, their policy.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClientGroup {
    /// The group's name (required in a list of groups, unique among them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Number of clients (at least 1). Each owns its own budget and breaker state.
    #[schemars(range(min = 1, max = u32::MAX))]
    pub count: u64,
    /// Open (Poisson arrivals) or closed (one request at a time per client).
    pub workload: RawWorkload,
    /// The service the clients call, by name (with `services` only; required with more than
    /// one service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The group's client policy, in place of the top-level `policy` as a whole (in a list
    /// of groups only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::scenario::schema::RawPolicy>,
}

impl<'de> Deserialize<'de> for RawClients {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawClients;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object (one group of clients) or a list of named groups")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawClients, A::Error> {
                let mut groups = Vec::new();
                while let Some(group) = seq.next_element::<RawClientGroup>()? {
                    groups.push(group);
                }
                Ok(RawClients {
                    listed: true,
                    groups,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawClients, A::Error> {
                let group =
                    RawClientGroup::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawClients {
                    listed: false,
                    groups: vec![group],
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for RawClients {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.listed, self.groups.first()) {
            (false, Some(group)) => group.serialize(s),
            _ => self.groups.serialize(s),
        }
    }
}

impl JsonSchema for RawClients {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Clients".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let group = generator.subschema_for::<RawClientGroup>();
        schemars::json_schema!({
            "description": "The sources of logical requests: one group of clients (an object), or a list of named groups, each with its own count, workload and, optionally, policy",
            "oneOf": [
                group,
                { "type": "array", "items": group, "maxItems": MAX_GROUPS }
            ]
        })
    }
}

/// The most groups of clients a file may list.
pub const MAX_GROUPS: usize = 64;

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

/// One group of clients (`clients`, or one item of a list of groups).
#[derive(Debug, Clone)]
pub struct ClientGroup {
    /// Its name: as written in a list of groups, "clients" for a single group.
    pub name: String,
    /// Number of clients (>= 1).
    pub count: u32,
    /// How they issue requests.
    pub workload: Workload,
    /// The group's own policy towards the entry service, where it has one and is not the
    /// only group (a single group's policy is `Scenario::policy`); otherwise it calls with
    /// the top-level one. `Scenario::group_policy` is the one it calls with.
    pub policy: Option<Policy>,
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
/// count is bounded by `limits.max_in_flight` and by memory. `at` is the group's path.
pub(in crate::scenario) fn closed_within_limits(
    c: &mut Checker,
    at: &str,
    group: &ClientGroup,
    limits: &Limits,
) {
    let path = format!("{at}.count");
    if !matches!(group.workload, Workload::Closed(_)) || c.failed(&path) {
        return;
    }
    if !c.failed("limits.max_in_flight") && u64::from(group.count) > limits.max_in_flight {
        c.err(
            &path,
            format!(
                "a closed workload keeps a request of every client in flight, so {} clients exceed limits.max_in_flight = {}; raise the limit if the machine has the memory",
                group.count, limits.max_in_flight
            ),
        );
    }
    if !c.failed(&path) && group.count > MAX_CLOSED_CLIENTS {
        c.err(
            &path,
            format!(
                "a closed workload schedules every client's first request at the start (about 115 bytes per client for each replication in progress), so it takes at most {MAX_CLOSED_CLIENTS} clients (got {}); an open workload has no such bound",
                group.count
            ),
        );
    }
}

/// Under a breaker in mode "all", an endless closed workload without think time would start
/// requests at one instant without end. `at` is the group's path, `policy` the one it calls
/// with.
pub(in crate::scenario) fn closed_against_breaker(
    c: &mut Checker,
    at: &str,
    group: &ClientGroup,
    policy: &Policy,
) {
    let path = format!("{at}.workload.closed.think_time");
    if let Workload::Closed(closed) = &group.workload
        && closed.requests_per_client.is_none()
        && closed.think_time.is_zero()
        && !c.failed(&path)
        && policy
            .breaker
            .is_some_and(|b| b.mode == crate::model::BreakerMode::All)
    {
        c.err(
            &path,
            "must be longer than zero with a circuit breaker in mode \"all\" and no requests_per_client: an open breaker ends a request at once, so each client would start the next at the same instant without end; set a think time or requests_per_client",
        );
    }
}

/// One group at `at` (`clients`, or `clients[i]` in a list): its count and workload, their
/// defaults written back into `raw`.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut RawClientGroup,
) -> (u32, Workload) {
    let count = c.count_u32(&format!("{at}.count"), raw.count, 1);
    let workload = match &mut raw.workload {
        RawWorkload::Open(open) => Workload::Open(open_profile(c, at, open)),
        RawWorkload::Closed(closed) => {
            let path = format!("{at}.workload.closed");
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
    (count, workload)
}

/// An open workload's rate profile, its defaults written back into `open`.
fn open_profile(c: &mut Checker, at: &str, open: &mut RawOpen) -> RateProfile {
    let base = c.rate(&format!("{at}.workload.open.rate_per_s"), open.rate_per_s);
    let mut steps = Vec::new();
    let mut last_at: Option<SimDuration> = None;
    for (i, step) in open.profile.iter_mut().flatten().enumerate() {
        let p = format!("{at}.workload.open.profile[{i}]");
        let step_at = c.duration(&format!("{p}.at"), &step.at);
        if let (Some(prev), Some(t)) = (last_at, step_at)
            && t <= prev
        {
            c.err(
                &format!("{p}.at"),
                format!("must be later than the previous point (got {t} after {prev})"),
            );
        }
        // A point that cannot be read is compared with nothing, before or after.
        last_at = step_at;
        let rate_per_s = c.rate(&format!("{p}.rate_per_s"), step.rate_per_s);
        steps.push(RateStep {
            at: step_at.unwrap_or_default(),
            rate_per_s,
            ramp: *step.ramp.get_or_insert(false),
        });
    }
    RateProfile::new(base, steps)
}

/// The clients in words: one sentence for a single group, one per group for several.
pub(in crate::scenario) fn sentences(s: &Scenario) -> Vec<String> {
    if let [group] = &s.clients[..] {
        return vec![format!("Clients: {}", sentence(s, group))];
    }
    s.clients
        .iter()
        .map(|g| {
            let own = if g.policy.is_some() {
                " (a policy of its own, below)"
            } else {
                ""
            };
            format!(
                "Clients of group **{}**{own}: {}",
                crate::scenario::phrase::escape(&g.name),
                sentence(s, g)
            )
        })
        .collect()
}

/// One group in one sentence, after "Clients: ": how many, how they send, for how long.
fn sentence(s: &Scenario, group: &ClientGroup) -> String {
    let n = group.count;
    match &group.workload {
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
                "{n} open-loop clients sending {} requests/s in all as a Poisson stream{steps}, for {}; everything in flight then drains.",
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
            format!("{n} closed-loop clients, one request at a time, {k} each, {start}{think}.")
        }
    }
}
