//! The serde mirror of a scenario file: what the JSON may say, before any rule is checked.
//!
//! Every struct rejects unknown keys, so a misspelt key is an error rather than a silently
//! ignored setting. Values whose rules serde cannot express well (durations, "unlimited"
//! counts, ranges) are kept as they came and judged in `validate`, which can then report every
//! problem at once with its JSON path. These types also generate the JSON Schema printed by
//! `retrystorm schema`; their doc comments are the descriptions editors show.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::clients::{
    RawClientGroup, RawClients, RawClosed, RawOpen, RawRateStep, RawWorkload,
};
pub use super::policy::breaker::{RawBreaker, RawBreakerMode, RawBreakerWindow};
pub use super::policy::budget::{
    RawBudget, RawEnvoyRetryBudget, RawRatio, RawRetryQuota, RawTokenBucket,
};
pub use super::policy::bulkhead::RawBulkhead;
pub use super::policy::fallback::RawFallback;
pub use super::policy::hedge::RawHedge;
pub use super::policy::idempotency_key::{RawIdempotencyKey, RawKeySettings};
pub use super::policy::retry::{
    NoneWord, RawAttemptOutcome, RawBackoff, RawEnvoyBackoff, RawEnvoyIntervals, RawExponential,
    RawHostPredicate, RawJitter, RawRetry, RawRetryAfter,
};
pub use super::policy::throttle::{RawAdaptiveThrottle, RawThrottleSettings};
pub use super::server::RawServerKind;
pub use super::server::balancer::{
    RawBalancer, RawBalancerSettings, RawBalancerWord, RawLeastRequest, RawSees,
};
pub use super::server::discipline::{
    RawAdaptiveLifo, RawCodel, RawDiscipline, RawDisciplineSettings, RawDisciplineWord,
};
pub use super::server::faults::{RawFault, RawOutage};
pub use super::server::outlier::RawOutlierDetection;
pub use super::server::rate_limit::RawRateLimit;

/// A whole scenario file.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// Editors may point at the JSON Schema here; retrystorm ignores it.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Names the scenario and its output folder (letters, digits, '.', '_' and '-').
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$"))]
    pub name: String,
    /// What the scenario models, in a sentence or two; shown in reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Master seed (default 1). Replication i of every variant uses streams derived from
    /// (seed, i).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Independent replications of every variant (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub replications: Option<u64>,
    /// New logical requests stop at this time; everything in flight then drains.
    pub duration: DurationText,
    /// Hard stop: the run ends here even if requests are still in flight ("truncated").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time: Option<DurationText>,
    /// The sources of logical requests.
    pub clients: RawClients,
    /// One-way message delays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<RawNetwork>,
    /// The server the clients call (a file has `server` or `services`, not both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<RawServer>,
    /// A call graph: services by name, each a server that may call others (instead of
    /// `server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<RawServices>,
    /// The clients' timeout, deadline and retry policy (towards the entry service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<RawPolicy>,
    /// Variants of the scenario, each the base with a JSON merge patch applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub variants: Option<Vec<RawVariant>>,
    /// Runs every variant at every value of one setting (or every pair of values of two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<RawSweep>,
    /// Time-series settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<RawMetrics>,
    /// Safety limits that stop a run which would otherwise grow without bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<RawLimits>,
}

/// A distribution of durations.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawDist {
    /// Always the same duration.
    Constant(DurationText),
    /// Exponential with the given mean.
    Exponential {
        /// Mean duration.
        mean: DurationText,
    },
    /// Uniform between min and max.
    Uniform {
        /// Smallest duration.
        min: DurationText,
        /// Largest duration.
        max: DurationText,
    },
    /// Folded normal |X| with X ~ Normal(mean, sd).
    Normal {
        /// Mean of X.
        mean: DurationText,
        /// Standard deviation of X.
        sd: DurationText,
    },
    /// Log-normal with the given median and shape sigma.
    Lognormal {
        /// Median duration.
        median: DurationText,
        /// Standard deviation of the logarithm (dimensionless).
        #[schemars(range(min = 0.0))]
        sigma: f64,
    },
    /// A weighted mixture, e.g. bimodal service times.
    Mixture(Vec<RawMixturePart>),
}

/// One component of a mixture distribution.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMixturePart {
    /// Relative weight (positive; weights need not sum to 1).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub weight: f64,
    /// The component distribution.
    pub dist: RawDist,
}

/// `network`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawNetwork {
    /// Delay of every one-way message, drawn independently per hop (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<RawDist>,
}

/// Declares a struct with every key of a server followed by `extra` keys: `server` and each
/// service of `services` share one list of server settings (and the serde attributes that go
/// with them), so a new server setting is written once and reaches both.
macro_rules! with_server_keys {
    ($(#[$attr:meta])* pub struct $name:ident { $($extra:tt)* }) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// "queue" (default) or "occ".
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub kind: Option<RawServerKind>,
            /// Workers: an integer >= 1 or "unlimited" (default 1).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(schema_with = "count_from_one")]
            pub concurrency: Option<Count>,
            /// Waiting places: an integer >= 0 or "unlimited" (default "unlimited").
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub queue_limit: Option<Count>,
            /// Order in which waiting attempts are served, and which are shed: "fifo"
            /// (default), "lifo", "codel" or "adaptive_lifo", or {"codel": {"target",
            /// "interval"}} or {"adaptive_lifo": {"interval"}}.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub discipline: Option<RawDiscipline>,
            /// Time one attempt keeps a worker busy (required for a queue server).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub service_time: Option<RawDist>,
            /// Extra service time per attempt already in service when one starts.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub slowdown_per_inflight: Option<DurationText>,
            /// Probability that a served attempt ends `error` (default 0).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 0.0, max = 1.0))]
            pub error_rate: Option<f64>,
            /// Probability that a logical request (for a service other than the entry: a call
            /// to it) is bad: every attempt ends `permanent` (default 0).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 0.0, max = 1.0))]
            pub permanent_error_rate: Option<f64>,
            /// Discard attempts whose caller has already given up, at arrival and at dequeue
            /// (and, for a service, before each downstream call; default false).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub drop_expired: Option<bool>,
            /// An admission token bucket that answers `throttled`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub rate_limit: Option<RawRateLimit>,
            /// Windows of trouble: outages, error bursts, slowdowns, stalls.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub faults: Option<Vec<RawFault>>,
            /// Replicas, each with its own workers, queue, rate limit and faults (default 1).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1, max = 1024))]
            pub replicas: Option<u64>,
            /// How callers spread attempts over the replicas: "random", "round_robin"
            /// (default), "least_request", "least_outstanding" or {"least_request":
            /// {"choice_count"}}.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub balancer: Option<RawBalancer>,
            /// Every attempt of a logical call goes to the replica its first went to
            /// (default false: each attempt is balanced anew).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub sticky: Option<bool>,
            /// What a least_request or least_outstanding balancer compares: "outstanding"
            /// (default: the attempts its caller has out to each replica) or "queue" (what
            /// each replica holds, waiting or in service, whoever sent it).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub balancer_sees: Option<RawSees>,
            /// Each caller's outlier detection over the replicas, as Envoy's: consecutive
            /// failures eject a replica from the caller's balancer for a while.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub outlier_detection: Option<RawOutlierDetection>,
            $($extra)*
        }
    };
}

with_server_keys! {
    /// `server`.
    pub struct RawServer {}
}

with_server_keys! {
    /// `services.<name>`: one service of a call graph: every key of a server, and the calls
    /// each attempt it serves makes.
    pub struct RawService {
        /// "sequential" (default: one call after another, stopping at the first that fails
        /// for good) or "parallel" (all at once, waiting for all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub call_mode: Option<RawCallMode>,
        /// Downstream calls, in order: a list of calls, or an object of calls by name (a
        /// variant's patch reaches one call by its name).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub calls: Option<RawCalls>,
    }
}

impl RawService {
    /// The service's server settings, as `server` would hold them.
    pub fn server(&self) -> RawServer {
        RawServer {
            kind: self.kind,
            concurrency: self.concurrency,
            queue_limit: self.queue_limit,
            discipline: self.discipline.clone(),
            service_time: self.service_time.clone(),
            slowdown_per_inflight: self.slowdown_per_inflight.clone(),
            error_rate: self.error_rate,
            permanent_error_rate: self.permanent_error_rate,
            drop_expired: self.drop_expired,
            rate_limit: self.rate_limit.clone(),
            faults: self.faults.clone(),
            replicas: self.replicas,
            balancer: self.balancer.clone(),
            sticky: self.sticky,
            balancer_sees: self.balancer_sees,
            outlier_detection: self.outlier_detection.clone(),
        }
    }

    /// Puts `server`'s settings back, as validation filled them in.
    pub fn set_server(&mut self, server: RawServer) {
        self.kind = server.kind;
        self.concurrency = server.concurrency;
        self.queue_limit = server.queue_limit;
        self.discipline = server.discipline;
        self.service_time = server.service_time;
        self.slowdown_per_inflight = server.slowdown_per_inflight;
        self.error_rate = server.error_rate;
        self.permanent_error_rate = server.permanent_error_rate;
        self.drop_expired = server.drop_expired;
        self.rate_limit = server.rate_limit;
        self.faults = server.faults;
        self.replicas = server.replicas;
        self.balancer = server.balancer;
        self.sticky = server.sticky;
        self.balancer_sees = server.balancer_sees;
        self.outlier_detection = server.outlier_detection;
    }
}

/// `services.<name>.call_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawCallMode {
    /// One call after another, stopping at the first that fails for good.
    Sequential,
    /// Every call at once; the attempt waits for all of them.
    Parallel,
}

/// `services.<name>.calls[i]` (or `calls.<call>`): one downstream call.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCall {
    /// The name of the service called (another service of `services`). Required in a list of
    /// calls; in an object of calls by name, the call's name is the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Share of the caller's attempts that make this call, above 0 and at most 1 (default
    /// 1). Calls with a fraction below 1 are exclusive routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0))]
    pub fraction: Option<f64>,
    /// The caller's policy on this call: every key of `policy`, and `bulkhead` and
    /// `propagate_deadline` (default: no timeout, 3 attempts, immediate retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<RawPolicy>,
    /// The caller's balancer over the replicas of the service called, in place of that
    /// service's `balancer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balancer: Option<RawBalancer>,
    /// The caller's `sticky`, in place of the service's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sticky: Option<bool>,
}

/// `services.<name>.calls`: the calls of a service in order, written as a list
/// (`[{"to": "db"}]`) or as an object of calls by name (`{"db": {}}`), which a variant's merge
/// patch reaches call by call. A call's name is the service it calls unless its `to` says
/// otherwise (two calls to one service need two names).
#[derive(Debug, Clone, Default)]
pub struct RawCalls {
    /// Whether the file writes them as an object by name (else as a list).
    pub named: bool,
    /// The calls in order, each with its name where they are written by name.
    pub calls: Vec<(Option<String>, RawCall)>,
}

impl RawCalls {
    /// The name of the service that a call (with `name` in an object of calls) calls.
    pub fn target<'a>(name: Option<&'a str>, call: &'a RawCall) -> Option<&'a str> {
        call.to.as_deref().or(name)
    }
}

impl<'de> Deserialize<'de> for RawCalls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawCalls;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of calls or an object of calls by name")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawCalls, A::Error> {
                let mut calls = Vec::new();
                while let Some(call) = seq.next_element::<RawCall>()? {
                    // In a list, a call has no name to stand for the service it calls.
                    if call.to.is_none() {
                        return Err(de::Error::missing_field("to"));
                    }
                    calls.push((None, call));
                }
                Ok(RawCalls {
                    named: false,
                    calls,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawCalls, A::Error> {
                let mut calls = Vec::new();
                while let Some((name, call)) = map.next_entry::<String, RawCall>()? {
                    calls.push((Some(name), call));
                }
                Ok(RawCalls { named: true, calls })
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for RawCalls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        if self.named {
            let mut map = s.serialize_map(Some(self.calls.len()))?;
            for (name, call) in &self.calls {
                map.serialize_entry(name.as_deref().unwrap_or_default(), call)?;
            }
            map.end()
        } else {
            let mut seq = s.serialize_seq(Some(self.calls.len()))?;
            for (_, call) in &self.calls {
                seq.serialize_element(call)?;
            }
            seq.end()
        }
    }
}

impl JsonSchema for RawCalls {
    fn schema_name() -> Cow<'static, str> {
        "Calls".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let by_name = generator.subschema_for::<RawCall>();
        // In a list each call names its service: the call's schema with `to` required.
        let mut listed = RawCall::json_schema(generator);
        listed.insert("required".into(), serde_json::json!(["to"]));
        if let Some(to) = listed
            .get_mut("properties")
            .and_then(|p| p.get_mut("to"))
            .and_then(Value::as_object_mut)
        {
            to.insert("type".into(), "string".into());
        }
        json_schema!({
            "description": "The calls in order: a list of calls, each with `to`; or an object of calls by name, whose `to` defaults to the name, so that a variant's merge patch reaches one call by name and removes one with null",
            "oneOf": [
                { "type": "array", "items": listed, "maxItems": 64 },
                {
                    "type": "object",
                    "additionalProperties": by_name,
                    "propertyNames": { "pattern": NAME_PATTERN },
                    "maxProperties": 64
                }
            ]
        })
    }
}

/// `services`: the services of a call graph under their names, in the order the file writes
/// them (serde_json keeps the order of an object's keys).
#[derive(Debug, Clone, Default)]
pub struct RawServices(pub Vec<(String, RawService)>);

impl<'de> Deserialize<'de> for RawServices {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawServices;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of services by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawServices, A::Error> {
                let mut services = Vec::new();
                while let Some((name, service)) = map.next_entry::<String, RawService>()? {
                    services.push((name, service));
                }
                Ok(RawServices(services))
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for RawServices {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, service) in &self.0 {
            map.serialize_entry(name, service)?;
        }
        map.end()
    }
}

impl JsonSchema for RawServices {
    fn schema_name() -> Cow<'static, str> {
        "Services".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let service = generator.subschema_for::<RawService>();
        json_schema!({
            "type": "object",
            "description": "Services by name (at most 64), each a server that may call others; the clients call the one clients.entry names",
            "additionalProperties": service,
            "propertyNames": { "pattern": NAME_PATTERN },
            "minProperties": 1,
            "maxProperties": 64
        })
    }
}

/// `policy`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    /// A client library's retry policy by name, which the other keys of this policy are
    /// written over as a JSON merge patch (e.g. "aws_sdk_legacy").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<crate::scenario::policy::preset::RawPreset>,
    /// Per-attempt timeout: the client abandons an attempt after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<DurationText>,
    /// Per-request deadline: no attempt starts after start + deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DurationText>,
    /// Retry settings (default: 3 attempts, immediate retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RawRetry>,
    /// A retry budget that can deny retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<RawBudget>,
    /// A circuit breaker that can refuse attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<RawBreaker>,
    /// A semaphore bulkhead on the call (in a call's policy only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulkhead: Option<RawBulkhead>,
    /// Answers a call that fails for good after a latency instead: the request ends
    /// `degraded` rather than failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<RawFallback>,
    /// Bound the call's deadline by the time its caller still waits (in a call's policy
    /// only; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagate_deadline: Option<bool>,
    /// Hedged requests: after `delay` without an answer, another attempt of the same call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge: Option<RawHedge>,
    /// Whether executing the call more than once is harmless (default true); with false,
    /// every execution after the first counts as a duplicate side effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Idempotency keys: true (the defaults), false (none) or {"ttl", "cost"}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<RawIdempotencyKey>,
    /// Client-side adaptive throttling (Google SRE book): true (the defaults), false (none)
    /// or {"k", "window"}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_throttle: Option<RawAdaptiveThrottle>,
    /// A gRPC service config file whose retryPolicy, hedgingPolicy, timeout and
    /// retryThrottling give this policy's settings; settings written beside it win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_service_config: Option<crate::scenario::grpc_config::RawGrpcServiceConfig>,
    /// An Envoy YAML file whose route `retry_policy` and cluster `circuit_breakers` give this
    /// policy's settings; settings written beside it win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envoy_config: Option<crate::scenario::envoy_config::RawEnvoyConfig>,
    /// The AWS SDKs' `adaptive` retry mode's client-side rate limiter (botocore's
    /// `ClientRateLimiter`): true or false (default false), or `{"token_wait": ...}` for the
    /// way an SDK that diverged from botocore waited for a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_rate_limiter:
        Option<crate::scenario::policy::client_rate_limiter::RawClientRateLimiter>,
}

/// Who shares a budget or breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawScope {
    /// Each client has its own.
    PerClient,
    /// All clients share one.
    Shared,
}

/// One variant: a name and a JSON merge patch (RFC 7396) applied to the base scenario.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    /// Shown in tables, charts and summary.json: not blank, no control characters, unique.
    #[schemars(regex(pattern = LABEL_PATTERN))]
    pub name: String,
    /// A JSON merge patch (RFC 7396) of the base scenario: an object merges key by key (a
    /// service's calls written by name, call by call), any other value replaces what is there
    /// (a list whole), and `null` removes a key. It may not set name, seed, replications,
    /// variants, sweep or $schema. Null or absent: the base scenario itself.
    #[serde(default, deserialize_with = "patch_object")]
    #[schemars(schema_with = "patch_schema")]
    pub patch: Value,
}

/// A variant's patch as serde reads it: an object, or null (the walk of `shape` says so
/// first, in the format's words).
fn patch_object<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    match Value::deserialize(d)? {
        patch @ (Value::Object(_) | Value::Null) => Ok(patch),
        _ => Err(de::Error::custom("a variant's patch must be an object")),
    }
}

/// `sweep`: run every variant at every value of one setting, or at every pair of values of
/// two settings (with `second`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    /// Dotted keys into the scenario, e.g. "clients.count".
    pub path: String,
    /// The axis' name in figures and report.md, e.g. "offered load (req/s)". Default: the
    /// path's last two keys (and list indices among them) with underscores as spaces, e.g.
    /// "clients.count" -> "clients count", "server.faults.0.to" -> "faults 0 to".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = LABEL_PATTERN))]
    pub label: Option<String>,
    /// The values to put there, in order.
    #[schemars(length(min = 1))]
    pub values: Vec<Value>,
    /// The value whose point the figures and tables of a single sweep value show (the
    /// comparison and over-time figures, report.md's Results, timeseries.csv); one of
    /// `values`. Default: the scenario's own value at `path` if it is one of them, else the
    /// middle one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<Value>,
    /// A second setting to sweep: every variant runs at every (value, second value) pair,
    /// `values` outer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second: Option<RawAxis>,
}

/// `sweep.second`: the second axis of a two-axis sweep.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAxis {
    /// Dotted keys into the scenario, e.g. "policy.retry.max_attempts"; not the same setting
    /// as `sweep.path`.
    pub path: String,
    /// The axis' name in figures and report.md; default made from the path as for
    /// `sweep.label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = LABEL_PATTERN))]
    pub label: Option<String>,
    /// The values to put there, in order.
    #[schemars(length(min = 1))]
    pub values: Vec<Value>,
}

/// `metrics`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    /// Width of a time-series bucket (default duration / 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<DurationText>,
}

/// `limits`: stop a run that would grow without bound, with a clear message.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Events one replication may process (default 2,000,000,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_events: Option<u64>,
    /// Logical requests that may be in flight at once (default 5,000,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_in_flight: Option<u64>,
    /// The memory a run may take, in MiB (default 4096); a file whose estimate is larger is
    /// refused before it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_mb: Option<u64>,
}

/// The schema of a variant's `patch`: an object (or null, for the base scenario itself).
fn patch_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["object", "null"],
        "propertyNames": { "not": { "enum": ["name", "seed", "replications", "variants", "sweep", "$schema"] } }
    })
}

/// A variant's name or a sweep axis' label: not blank, and no control character, which would
/// break the lines of the tables and CSV files it is written into.
const LABEL_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$";

/// The names of services, and of calls written by name: what a path such as
/// `services.<name>.concurrency` can hold (1 to 64 characters, none a control character, '.',
/// '[' or ']').
const NAME_PATTERN: &str = r"^[^.\[\]\u0000-\u001f\u007f-\u009f]{1,64}$";

/// A duration's pattern, without anchors: what `units::parse_duration` reads (a number in
/// plain digits, a unit, spaces around and between them), leaving its bound to `validate`.
const DURATION_PATTERN: &str = r"\s*\+?([0-9]+\.?[0-9]*|\.[0-9]+)\s*(ns|us|µs|ms|s|m|h)\s*";

/// A percentile's pattern, without anchors: "p" and a number above 0 and below 100 with at
/// most four decimals, as `units::parse_percentile` reads it.
const PERCENTILE_PATTERN: &str = r"\s*p(0*[1-9][0-9]?(\.[0-9]{1,4})?|0*\.([1-9][0-9]{0,3}|0[1-9][0-9]{0,2}|00[1-9][0-9]?|000[1-9]))\s*";

/// The schema of a hedge's `delay`: a duration or a percentile.
pub(super) fn hedge_delay_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "How long an attempt goes unanswered before a hedge: a duration such as \"10ms\", or a percentile of the call's recent latencies such as \"p95\" or \"p99.9\"",
        "pattern": format!("^({DURATION_PATTERN}|{PERCENTILE_PATTERN})$")
    })
}

/// The schema of a count that may be "unlimited", at least `min` and at most `max`.
fn count_schema(min: u64, max: u64) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "integer", "format": "uint64", "minimum": min, "maximum": max },
            { "const": "unlimited" },
            { "type": "null" }
        ]
    })
}

/// The schema of `concurrency`: workers, 1 to 4294967295, or "unlimited".
fn count_from_one(_: &mut SchemaGenerator) -> Schema {
    count_schema(1, u64::from(u32::MAX))
}

/// The schema of `retry.max_attempts`: 1 to 1000, or "unlimited".
pub(super) fn attempts_schema(_: &mut SchemaGenerator) -> Schema {
    count_schema(1, 1000)
}

/// A duration as written: kept as any JSON value so that `validate` can explain what is wrong
/// with it (a bare number, a missing or unknown unit) together with every other problem.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(transparent)]
pub struct DurationText(pub Value);

impl JsonSchema for DurationText {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration with a unit: ns, us (or µs), ms, s, m or h, e.g. \"250us\", \"10ms\", \"1.5s\"; not negative, at most \"1000000s\"",
            "pattern": format!("^{DURATION_PATTERN}$")
        })
    }
}

/// A count that may also be the word "unlimited".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Count {
    /// A whole number.
    Finite(u64),
    /// No limit.
    Unlimited(UnlimitedWord),
}

/// The word "unlimited".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UnlimitedWord(&'static str);

impl Count {
    /// The word "unlimited".
    pub const UNLIMITED: Count = Count::Unlimited(UnlimitedWord("unlimited"));

    /// The finite value, or `None` for "unlimited".
    pub fn finite(self) -> Option<u64> {
        match self {
            Count::Finite(n) => Some(n),
            Count::Unlimited(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#"a whole number or "unlimited""#)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Count, E> {
                Ok(Count::Finite(n))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Count, E> {
                if s == "unlimited" {
                    Ok(Count::Unlimited(UnlimitedWord("unlimited")))
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(s), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Count {
    fn schema_name() -> Cow<'static, str> {
        "CountOrUnlimited".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "oneOf": [
                { "type": "integer", "format": "uint64", "minimum": 0, "maximum": u32::MAX },
                { "const": "unlimited" }
            ]
        })
    }
}
