//! `policy.breaker`: a circuit breaker, in one place: the raw setting a scenario file writes,
//! the rules and defaults that turn it into the model's [`BreakerConfig`] (validation writes
//! the defaults back into the raw setting). The breaker itself is `crate::model::breaker`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::{BreakerConfig, BreakerMode, BreakerWindow};
use crate::scenario::check::{Caller, Checker, scope, written};
use crate::scenario::error::num;
use crate::scenario::phrase::scope as scope_words;
use crate::scenario::schema::{DurationText, RawScope};

/// `policy.breaker`, with Resilience4j's semantics.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBreaker {
    /// `{"count": n}` or `{"time": D}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<RawBreakerWindow>,
    /// Failure rate in [0, 1] that opens the breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0))]
    pub failure_rate_threshold: Option<f64>,
    /// Calls the window must hold before the rate is judged (default 100; with a count
    /// window of n, at most n: a larger value runs, and is resolved, as n).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = u32::MAX))]
    pub minimum_calls: Option<u64>,
    /// How long the breaker stays open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_duration: Option<DurationText>,
    /// Trial attempts in the half-open state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = u32::MAX))]
    pub half_open_calls: Option<u64>,
    /// A call slower than this counts as slow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_call_duration: Option<DurationText>,
    /// Slow-call rate in [0, 1] that opens the breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0))]
    pub slow_call_rate_threshold: Option<f64>,
    /// "all" (default) or "retries" (first attempts always pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RawBreakerMode>,
    /// "per_client" (default) or "shared".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<RawScope>,
}

/// A breaker's sliding window.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBreakerWindow {
    /// The last n calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = u32::MAX))]
    pub count: Option<u64>,
    /// The calls of the last D.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<DurationText>,
}

/// `policy.breaker.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawBreakerMode {
    /// Every attempt is gated.
    All,
    /// Only retries are gated.
    Retries,
}

/// `window` of the breaker at `p` (default the last 100 calls).
fn breaker_window(c: &mut Checker, p: &str, raw: Option<&RawBreakerWindow>) -> BreakerWindow {
    match raw {
        None => BreakerWindow::Count(100),
        Some(w) => match (w.count, &w.time) {
            (Some(n), None) => {
                BreakerWindow::Count(c.count_u32(&format!("{p}.window.count"), n, 1))
            }
            (None, Some(d)) => BreakerWindow::Time(
                c.positive_duration(&format!("{p}.window.time"), d)
                    .unwrap_or_default(),
            ),
            _ => {
                c.err(
                    &format!("{p}.window"),
                    "needs exactly one of {\"count\": n} (the last n calls) or {\"time\": D} (the calls of the last D)",
                );
                BreakerWindow::Count(100)
            }
        },
    }
}

/// `breaker` of the policy `at`.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut RawBreaker,
    caller: Caller,
) -> BreakerConfig {
    let p = &format!("{at}.breaker");
    let window = breaker_window(c, p, raw.window.as_ref());
    let threshold = |c: &mut Checker, key: &str, v: Option<f64>, default: f64| {
        let v = v.unwrap_or(default);
        if !(v > 0.0 && v <= 1.0) {
            c.err(
                &format!("{p}.{key}"),
                format!(
                    "must be a rate above 0 and at most 1 (got {}); write 50 % as 0.5",
                    num(v)
                ),
            );
        }
        v
    };
    let failure_rate_threshold =
        threshold(c, "failure_rate_threshold", raw.failure_rate_threshold, 0.5);
    let slow_call = if raw.slow_call_duration.is_some() || raw.slow_call_rate_threshold.is_some() {
        let duration = raw
            .slow_call_duration
            .as_ref()
            .map_or(SimDuration::from_secs(60), |d| {
                c.positive_duration(&format!("{p}.slow_call_duration"), d)
                    .unwrap_or_default()
            });
        let rate = threshold(
            c,
            "slow_call_rate_threshold",
            raw.slow_call_rate_threshold,
            1.0,
        );
        Some((duration, rate))
    } else {
        None
    };
    let minimum_calls = c.count_u32(
        &format!("{p}.minimum_calls"),
        raw.minimum_calls.unwrap_or(100),
        1,
    );
    // A count window of n never holds more than n results, so (as Resilience4j does) at
    // most n are awaited: the value that runs, and that resolved.json and report.md show.
    let minimum_calls = match window {
        BreakerWindow::Count(n) => minimum_calls.min(n),
        BreakerWindow::Time(_) => minimum_calls,
    };
    let open_duration = raw
        .open_duration
        .get_or_insert_with(|| written(SimDuration::from_secs(60)));
    let open_duration = c
        .positive_duration(&format!("{p}.open_duration"), open_duration)
        .unwrap_or_default();
    let half_open_calls = c.count_u32(
        &format!("{p}.half_open_calls"),
        *raw.half_open_calls.get_or_insert(10),
        1,
    );
    // What runs, filled in.
    raw.window = Some(match window {
        BreakerWindow::Count(n) => RawBreakerWindow {
            count: Some(u64::from(n)),
            time: None,
        },
        BreakerWindow::Time(d) => RawBreakerWindow {
            count: None,
            time: Some(written(d)),
        },
    });
    raw.failure_rate_threshold = Some(failure_rate_threshold);
    raw.minimum_calls = Some(u64::from(minimum_calls));
    if let Some((duration, rate)) = slow_call {
        raw.slow_call_duration = Some(written(duration));
        raw.slow_call_rate_threshold = Some(rate);
    }
    BreakerConfig {
        window,
        failure_rate_threshold,
        minimum_calls,
        open_duration,
        half_open_calls,
        slow_call,
        mode: match *raw.mode.get_or_insert(RawBreakerMode::All) {
            RawBreakerMode::Retries => BreakerMode::Retries,
            RawBreakerMode::All => BreakerMode::All,
        },
        scope: scope(c, p, &mut raw.scope, caller),
    }
}

/// A circuit breaker in one sentence, for the clients' policy.
pub(in crate::scenario) fn sentence(b: &BreakerConfig) -> String {
    let window = match b.window {
        BreakerWindow::Count(n) => format!("the last {n} attempts"),
        BreakerWindow::Time(d) => format!("the attempts of the last {d}"),
    };
    let slow = match b.slow_call {
        Some((d, rate)) => format!(", or {} % take longer than {d}", 100.0 * rate),
        None => String::new(),
    };
    let gate = match b.mode {
        BreakerMode::All => "An open breaker refuses every attempt",
        BreakerMode::Retries => {
            "First attempts always pass; an open (or half-open) breaker refuses retries"
        }
    };
    format!(
        "Circuit breaker ({}): opens when {} % of {window} fail (once it has seen {}){slow}, stays open {}, then lets {} trial attempts through. {gate}, ending the request `breaker_open`.",
        scope_words(b.scope),
        100.0 * b.failure_rate_threshold,
        b.minimum_calls,
        b.open_duration,
        b.half_open_calls
    )
}
