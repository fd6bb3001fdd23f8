//! `policy.retry`: how many attempts a request or call makes, which attempt outcomes it
//! retries, how long it waits before each retry and whether it honours a server's
//! Retry-After, in one place: the raw setting a scenario file writes, the checked
//! [`RetryPolicy`] the simulation takes, the rules and defaults between them (validation writes
//! the defaults back into the raw setting) and the words report.md says of it. The backoff
//! itself is `crate::model::backoff`.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::{Backoff, Jitter, Outcome, OutcomeSet};
use crate::scenario::check::{Checker, written};
use crate::scenario::error::num;
use crate::scenario::schema::{Count, DurationText};

/// Default number of attempts, including the first.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// The largest finite `policy.retry.max_attempts`: a request's retries cannot outlast
/// simulated time.
pub const MAX_ATTEMPTS: u64 = 1000;

/// Outcome classes of one attempt, as named in `retry_on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawAttemptOutcome {
    /// The attempt succeeded (listing it is an error).
    Success,
    /// 5xx.
    Error,
    /// The server was full (503).
    Rejected,
    /// Rate limited (429).
    Throttled,
    /// The client gave up waiting.
    Timeout,
    /// An optimistic-concurrency write lost.
    Conflict,
    /// 4xx: never retried (listing it is an error).
    Permanent,
    /// A full bulkhead gave no permit within its `max_wait` (not retried by default).
    BulkheadFull,
}

/// `policy.retry.retry_host_predicate[i]`: which replicas a retry avoids, named as Envoy's
/// retry host predicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawHostPredicate {
    /// The replicas this call's earlier attempts went to.
    PreviousHosts,
}

/// The default `host_selection_retry_max_attempts`, as Envoy's.
pub const DEFAULT_HOST_SELECTION_RETRIES: u32 = 1;
/// The largest `host_selection_retry_max_attempts`.
pub const MAX_HOST_SELECTION_RETRIES: u64 = 1000;

/// `policy.retry.retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawRetryAfter {
    /// Wait at least the server's Retry-After.
    Honor,
    /// Ignore Retry-After.
    Ignore,
    /// The AWS SDKs' newer standard mode (`x-amz-retry-after`): the server's delay, clamped
    /// between the backoff and the backoff plus 5 s.
    Clamp,
}

/// `policy.retry`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRetry {
    /// Total attempts including the first (default 3), or "unlimited".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::scenario::schema::attempts_schema")]
    pub max_attempts: Option<Count>,
    /// Attempt outcomes that are retried (default: timeout, error, rejected, throttled,
    /// conflict; bulkhead_full may be added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<RawAttemptOutcome>>,
    /// "none" (retry at once, the default) or exponential backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<RawBackoff>,
    /// "honor" (default), "ignore" the server's Retry-After, or "clamp" it to [backoff,
    /// backoff + 5s] as the AWS SDKs' newer standard mode does with `x-amz-retry-after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<RawRetryAfter>,
    /// ["previous_hosts"]: a retry avoids the replicas the call already tried (default:
    /// none, every attempt is balanced alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_host_predicate: Option<Vec<RawHostPredicate>>,
    /// How many times the balancer picks again while its pick is one the predicate rejects
    /// (default 1, with `retry_host_predicate` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1000))]
    pub host_selection_retry_max_attempts: Option<u64>,
}

/// `policy.retry.backoff`: the string "none" or an exponential schedule.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum RawBackoff {
    /// Retry at once.
    None(NoneWord),
    /// raw(k) = min(cap, base * multiplier^(k-1)), then jitter.
    Exponential(RawExponential),
    /// Envoy's router backoff (`retry_back_off`).
    Envoy(RawEnvoyBackoff),
}

/// `policy.retry.backoff: {"envoy": {...}}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEnvoyBackoff {
    /// Envoy's `retry_back_off`: the k-th retry waits a whole number of milliseconds drawn
    /// uniformly below an interval that starts at `base_interval` and doubles up to
    /// `max_interval`.
    pub envoy: RawEnvoyIntervals,
}

/// Envoy's `retry_back_off` settings, named as in Envoy's route configuration.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEnvoyIntervals {
    /// The first retry's interval, whole milliseconds (default 25ms, Envoy's
    /// `upstream.base_retry_backoff_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_interval: Option<DurationText>,
    /// The largest interval, whole milliseconds (default 10 x base_interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_interval: Option<DurationText>,
}

/// The word "none".
#[derive(Debug, Clone, Copy, Serialize)]
pub struct NoneWord(&'static str);

impl NoneWord {
    /// The word "none".
    pub const NONE: NoneWord = NoneWord("none");
}

/// Exponential backoff settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExponential {
    /// Delay before the first retry (before jitter).
    pub base: DurationText,
    /// Growth factor per retry (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.0))]
    pub multiplier: Option<f64>,
    /// Largest delay (before jitter).
    pub cap: DurationText,
    /// "none", "full", "equal" or "decorrelated".
    pub jitter: RawJitter,
    /// Delay before the first retry after a throttling error (`throttled`), the schedule
    /// growing from it with the same multiplier, cap and jitter (default: none, throttled
    /// retries back off as any other; the AWS SDKs' newer standard mode uses 1s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling_base: Option<DurationText>,
}

/// Jitter kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawJitter {
    /// raw(k).
    None,
    /// U[0, raw(k)].
    Full,
    /// raw(k)/2 + U[0, raw(k)/2].
    Equal,
    /// s_k = min(cap, U[base, 3 s_(k-1)]), s_0 = base.
    Decorrelated,
}

impl<'de> Deserialize<'de> for RawBackoff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawBackoff;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    r#""none", an object {"base", "multiplier", "cap", "jitter"} or {"envoy": {...}}"#,
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawBackoff, E> {
                if s == "none" {
                    Ok(RawBackoff::None(NoneWord("none")))
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(s), &self))
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawBackoff, A::Error> {
                let value =
                    serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                if value.get("envoy").is_some() {
                    RawEnvoyBackoff::deserialize(value)
                        .map(RawBackoff::Envoy)
                        .map_err(de::Error::custom)
                } else {
                    RawExponential::deserialize(value)
                        .map(RawBackoff::Exponential)
                        .map_err(de::Error::custom)
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawBackoff {
    fn schema_name() -> Cow<'static, str> {
        "Backoff".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let exp = generator.subschema_for::<RawExponential>();
        let envoy = generator.subschema_for::<RawEnvoyBackoff>();
        json_schema!({
            "description": "\"none\" (retry at once), exponential backoff with jitter, or Envoy's backoff",
            "oneOf": [ { "const": "none" }, envoy, exp ]
        })
    }
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
    /// Delay before a retry after a throttling error, where it has a base of its own
    /// (`backoff.throttling_base`); `None`: `backoff`.
    pub throttled_backoff: Option<Backoff>,
    /// Whether a server's Retry-After is honoured.
    pub retry_after: RetryAfter,
    /// With `retry_host_predicate: ["previous_hosts"]`, the balancer's picks again while it
    /// picks a replica the call already tried (`host_selection_retry_max_attempts`); `None`:
    /// a retry is balanced as a first attempt is.
    pub previous_hosts: Option<u32>,
}

/// `policy.retry.retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// Wait max(backoff, Retry-After).
    Honor,
    /// Use the backoff alone.
    Ignore,
    /// Wait the Retry-After clamped to [backoff, backoff + 5 s] (aws-sdk-net's
    /// `StandardRetryPolicy.CalculateRetryDelay`, SEP 2.1).
    Clamp,
}

/// How far beyond the backoff a clamped Retry-After may reach (5 s).
pub const RETRY_AFTER_CLAMP: SimDuration = SimDuration::from_secs(5);

/// `retry` of the policy `at`, its defaults written back into `raw`.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut Option<RawRetry>,
) -> RetryPolicy {
    let retry = raw.get_or_insert_with(RawRetry::default);
    let (backoff, throttled_backoff) = backoff(c, at, &mut retry.backoff);
    RetryPolicy {
        max_attempts: max_attempts(c, at, &mut retry.max_attempts),
        retry_on: retry_on(c, at, &mut retry.retry_on),
        backoff,
        throttled_backoff,
        retry_after: match *retry.retry_after.get_or_insert(RawRetryAfter::Honor) {
            RawRetryAfter::Ignore => RetryAfter::Ignore,
            RawRetryAfter::Honor => RetryAfter::Honor,
            RawRetryAfter::Clamp => RetryAfter::Clamp,
        },
        previous_hosts: previous_hosts(c, at, retry),
    }
}

/// `retry.retry_host_predicate` and `retry.host_selection_retry_max_attempts` of the policy
/// `at`: the reselections a retry's pick may make, with the predicate.
fn previous_hosts(c: &mut Checker, at: &str, retry: &mut RawRetry) -> Option<u32> {
    let avoids = retry
        .retry_host_predicate
        .as_ref()
        .is_some_and(|p| p.contains(&RawHostPredicate::PreviousHosts));
    let path = format!("{at}.retry.host_selection_retry_max_attempts");
    match retry.host_selection_retry_max_attempts {
        Some(n) if !avoids => {
            c.err(
                &path,
                format!(
                    "applies only with a retry host predicate (got {n} without one): add \"retry_host_predicate\": [\"previous_hosts\"], or remove it"
                ),
            );
            None
        }
        None if avoids => {
            retry.host_selection_retry_max_attempts =
                Some(u64::from(DEFAULT_HOST_SELECTION_RETRIES));
            Some(DEFAULT_HOST_SELECTION_RETRIES)
        }
        Some(n) if n > MAX_HOST_SELECTION_RETRIES => {
            c.err(
                &path,
                format!("must be at most {MAX_HOST_SELECTION_RETRIES} (got {n})"),
            );
            None
        }
        Some(n) => Some(c.count_u32(&path, n, 0)),
        None => None,
    }
}

/// `retry.max_attempts` of the policy `at`: `None` for unlimited.
fn max_attempts(c: &mut Checker, at: &str, raw: &mut Option<Count>) -> Option<u32> {
    match *raw {
        None => {
            *raw = Some(Count::Finite(u64::from(DEFAULT_MAX_ATTEMPTS)));
            Some(DEFAULT_MAX_ATTEMPTS)
        }
        Some(Count::Unlimited(_)) => None,
        Some(Count::Finite(0)) => {
            c.err(
                &format!("{at}.retry.max_attempts"),
                "must be at least 1 (got 0); it counts the first attempt, so 1 means no retries",
            );
            Some(1)
        }
        Some(Count::Finite(n)) if n > MAX_ATTEMPTS => {
            c.err(
                &format!("{at}.retry.max_attempts"),
                format!(
                    "must be at most 1000 (got {n}), so that a request's retries cannot outlast simulated time; write \"unlimited\" for no limit"
                ),
            );
            None
        }
        Some(Count::Finite(n)) => Some(c.count_u32(&format!("{at}.retry.max_attempts"), n, 1)),
    }
}

/// `retry.retry_on` of the policy `at`.
fn retry_on(c: &mut Checker, at: &str, raw: &mut Option<Vec<RawAttemptOutcome>>) -> OutcomeSet {
    match raw {
        None => {
            let set = OutcomeSet::default_retryable();
            let listed = ATTEMPT_OUTCOMES.iter().copied();
            *raw = Some(
                listed
                    .filter(|o| set.contains(attempt_outcome(*o)))
                    .collect(),
            );
            set
        }
        Some(list) => {
            for (i, o) in list.iter().enumerate() {
                if matches!(o, RawAttemptOutcome::Success | RawAttemptOutcome::Permanent) {
                    c.err(
                        &format!("{at}.retry.retry_on[{i}]"),
                        format!(
                            "{} is never retried; list only timeout, error, rejected, throttled, conflict or bulkhead_full",
                            attempt_outcome(*o)
                        ),
                    );
                }
            }
            list.iter().map(|o| attempt_outcome(*o)).collect()
        }
    }
}

/// `retry.backoff` of the policy `at`, and the schedule of throttled retries where it has
/// a base of its own.
fn backoff(c: &mut Checker, at: &str, raw: &mut Option<RawBackoff>) -> (Backoff, Option<Backoff>) {
    let p = format!("{at}.retry.backoff");
    match raw.get_or_insert(RawBackoff::None(NoneWord::NONE)) {
        RawBackoff::None(_) => (Backoff::None, None),
        RawBackoff::Envoy(e) => (envoy_backoff(c, &p, &mut e.envoy), None),
        RawBackoff::Exponential(e) => {
            let base = c.duration(&format!("{p}.base"), &e.base);
            let cap = c.duration(&format!("{p}.cap"), &e.cap);
            let multiplier = *e.multiplier.get_or_insert(2.0);
            if !multiplier.is_finite() || multiplier < 1.0 {
                c.err(
                    &format!("{p}.multiplier"),
                    format!(
                        "must be a number >= 1 (got {}); backoff never shrinks",
                        num(multiplier)
                    ),
                );
            }
            if let (Some(base), Some(cap)) = (base, cap)
                && cap < base
            {
                c.err(
                    &format!("{p}.cap"),
                    format!("must not be shorter than base (got cap {cap}, base {base})"),
                );
            }
            let jitter = match e.jitter {
                RawJitter::None => Jitter::None,
                RawJitter::Full => Jitter::Full,
                RawJitter::Equal => Jitter::Equal,
                RawJitter::Decorrelated => Jitter::Decorrelated,
            };
            if jitter == Jitter::Decorrelated && base == Some(SimDuration::ZERO) {
                c.err(
                    &format!("{p}.base"),
                    "must be longer than zero for decorrelated jitter, which grows from base",
                );
            }
            let cap = cap.unwrap_or_default();
            let throttled = e.throttling_base.as_ref().and_then(|t| {
                let q = format!("{p}.throttling_base");
                let t = c.duration(&q, t)?;
                if t > cap {
                    c.err(
                        &q,
                        format!("must not be longer than cap (got throttling_base {t}, cap {cap})"),
                    );
                }
                Some(Backoff::exponential(t, multiplier, cap.max(t), jitter))
            });
            let backoff = Backoff::exponential(base.unwrap_or_default(), multiplier, cap, jitter);
            (backoff, throttled)
        }
    }
}

/// `retry.backoff.envoy` at `p`: whole milliseconds, base 25ms and max 10 x base by default
/// (Envoy's `upstream.base_retry_backoff_ms` and `RetryPolicy.RetryBackOff.max_interval`).
fn envoy_backoff(c: &mut Checker, p: &str, raw: &mut RawEnvoyIntervals) -> Backoff {
    let q = format!("{p}.envoy");
    let whole_ms = |c: &mut Checker, name: &str, text: &DurationText| {
        let path = format!("{q}.{name}");
        let d = c.duration(&path, text)?;
        if d.as_nanos() < 1_000_000 || d.as_nanos() % 1_000_000 != 0 {
            c.err(
                &path,
                format!(
                    "must be a whole number of milliseconds, at least 1ms (got {d}): Envoy's backoff counts in milliseconds"
                ),
            );
            return None;
        }
        Some(d)
    };
    let base_text = raw
        .base_interval
        .get_or_insert_with(|| written(SimDuration::from_millis(DEFAULT_ENVOY_BASE_MS)))
        .clone();
    let base = whole_ms(c, "base_interval", &base_text);
    let max_text = match &raw.max_interval {
        Some(m) => m.clone(),
        None => {
            let ten = base.unwrap_or(SimDuration::from_millis(DEFAULT_ENVOY_BASE_MS));
            let m = written(SimDuration::from_nanos(ten.as_nanos().saturating_mul(10)));
            raw.max_interval = Some(m.clone());
            m
        }
    };
    let max = whole_ms(c, "max_interval", &max_text);
    match (base, max) {
        (Some(base), Some(max)) if max < base => {
            c.err(
                &format!("{q}.max_interval"),
                format!("must not be shorter than base_interval (got max_interval {max}, base_interval {base})"),
            );
            Backoff::envoy(base, base)
        }
        (Some(base), Some(max)) => Backoff::envoy(base, max),
        _ => Backoff::envoy(SimDuration::from_millis(1), SimDuration::from_millis(1)),
    }
}

/// Envoy's default base interval in milliseconds (`upstream.base_retry_backoff_ms`).
pub const DEFAULT_ENVOY_BASE_MS: u64 = 25;

/// Every outcome `retry.retry_on` may name, in the order a filled-in default lists them.
const ATTEMPT_OUTCOMES: [RawAttemptOutcome; 8] = [
    RawAttemptOutcome::Success,
    RawAttemptOutcome::Error,
    RawAttemptOutcome::Rejected,
    RawAttemptOutcome::Throttled,
    RawAttemptOutcome::Timeout,
    RawAttemptOutcome::Conflict,
    RawAttemptOutcome::Permanent,
    RawAttemptOutcome::BulkheadFull,
];

fn attempt_outcome(o: RawAttemptOutcome) -> Outcome {
    match o {
        RawAttemptOutcome::Success => Outcome::Success,
        RawAttemptOutcome::Error => Outcome::Error,
        RawAttemptOutcome::Rejected => Outcome::Rejected,
        RawAttemptOutcome::Throttled => Outcome::Throttled,
        RawAttemptOutcome::Timeout => Outcome::Timeout,
        RawAttemptOutcome::Conflict => Outcome::Conflict,
        RawAttemptOutcome::Permanent => Outcome::Permanent,
        RawAttemptOutcome::BulkheadFull => Outcome::BulkheadFull,
    }
}

/// The clients' retries in sentences: how many attempts, then (when there are retries) the
/// backoff.
pub(in crate::scenario) fn sentences(r: &RetryPolicy) -> (String, Option<String>) {
    let attempts = match r.max_attempts {
        Some(1) => "No retries: one attempt per request.".to_string(),
        Some(m) => format!("Up to {m} attempts per request."),
        None => "Unlimited attempts per request.".to_string(),
    };
    let backoff = (r.max_attempts != Some(1)).then(|| {
        let mut words = backoff_words(&r.backoff)
            .map_or("Retries go out at once (no backoff).".to_string(), |w| {
                format!("{}.", crate::scenario::phrase::capitalized(&w))
            });
        if let Some(t) = &r.throttled_backoff {
            words.push_str(&format!(
                " After a throttling error the backoff starts from {} instead.",
                t.raw(1)
            ));
        }
        if let Some(n) = r.previous_hosts {
            words.push_str(&format!(
                " A retry avoids the replicas its request already tried (its balancer picks again {}).",
                times(n)
            ));
        }
        words
    });
    (attempts, backoff)
}

/// A call's retries in phrases: how many attempts, then (when there are retries) the
/// backoff.
pub(in crate::scenario) fn phrases(r: &RetryPolicy) -> Vec<String> {
    let mut parts = vec![match r.max_attempts {
        Some(1) => "no retries".to_string(),
        Some(m) => format!("up to {m} attempts"),
        None => "unlimited attempts".to_string(),
    }];
    if r.max_attempts != Some(1) {
        parts.push(backoff_words(&r.backoff).unwrap_or_else(|| "retries at once".to_string()));
        if let Some(t) = &r.throttled_backoff {
            parts.push(format!("from {} after a throttling error", t.raw(1)));
        }
        if let Some(n) = r.previous_hosts {
            parts.push(format!(
                "a retry avoids the replicas the call tried (picking again {})",
                times(n)
            ));
        }
    }
    parts
}

/// How many times a balancer may pick again, in words.
fn times(n: u32) -> String {
    match n {
        0 => "never".to_string(),
        1 => "at most once".to_string(),
        n => format!("up to {n} times"),
    }
}

/// Exponential backoff in words: "backoff from 10ms, x2 per retry, capped at 1s, with full
/// jitter"; `None` for retries that go out at once.
pub(in crate::scenario) fn backoff_words(b: &Backoff) -> Option<String> {
    if let Backoff::Envoy {
        base_interval,
        max_interval,
        ..
    } = b
    {
        return Some(format!(
            "Envoy's backoff: the k-th retry waits a whole number of milliseconds drawn uniformly below an interval of {base_interval} doubling up to {max_interval}"
        ));
    }
    let Backoff::Exponential {
        base,
        multiplier,
        cap,
        jitter,
        ..
    } = b
    else {
        return None;
    };
    let jitter = match jitter {
        Jitter::None => "without jitter".to_string(),
        j => format!("with {} jitter", j.name()),
    };
    Some(format!(
        "backoff from {base}, x{multiplier} per retry, capped at {cap}, {jitter}"
    ))
}
