//! `policy.hedge`: hedged requests, in one place: the raw setting a scenario file writes, the
//! checked [`HedgeConfig`] the simulation takes, and the rules and defaults between them
//! (validation writes the defaults back into the raw setting). The hedging state machines are
//! `crate::model::hedge`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::{HEDGE_MIN_SAMPLES, HedgeDelay};

use crate::scenario::check::Checker;
use crate::scenario::error::{num, short};
use crate::scenario::phrase::percent;
use crate::scenario::units::{parse_duration, parse_percentile};

/// `policy.hedge`: hedged requests.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHedge {
    /// How long an attempt goes unanswered before a hedge: a duration such as "10ms", or a
    /// percentile of the call's recent latencies such as "p95" or "p99.9".
    #[schemars(schema_with = "crate::scenario::schema::hedge_delay_schema")]
    pub delay: String,
    /// Hedges per attempt at most, from 1 to 10 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub max_hedges: Option<u64>,
    /// The service drops abandoned attempts that have not started service (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// At most this share of the calls is hedged, above 0 and at most 1 (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0))]
    pub budget: Option<f64>,
    /// With a percentile delay: the answered attempts it is taken over, from 20 to 1,000,000
    /// (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 20, max = 1_000_000))]
    pub window: Option<u64>,
}

/// `policy.hedge`: hedged requests ("The Tail at Scale"). After `delay` without an answer
/// to an attempt, another attempt of the same call is sent, up to `max_hedges` per attempt;
/// the first answer that ends the call wins and the others are abandoned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgeConfig {
    /// How long an attempt goes unanswered before the next hedge is sent.
    pub delay: HedgeDelay,
    /// Hedges per attempt at most (>= 1): the first attempt and each retry may be hedged
    /// this many times.
    pub max_hedges: u32,
    /// Abandoned attempts that have not started service are dropped by their service
    /// (counted `cancelled`) instead of being served for nobody.
    pub cancel: bool,
    /// At most this share of the calls is hedged, on average: each call puts `budget` into a
    /// bucket that holds at most [`HEDGE_BUDGET_BURST`](crate::model::HEDGE_BUDGET_BURST) hedges, and each hedge takes 1 out.
    /// `None`: unbudgeted.
    pub budget: Option<f64>,
}

/// The most hedges per attempt: each is one more attempt at the service, so 10 already lets
/// one round put 11 times its load on the service; hedging pays with one or two, and a
/// larger count only hides a delay set too short.
pub const MAX_HEDGES: u64 = 10;

/// Default answered attempts a percentile hedge delay is taken over.
pub const DEFAULT_HEDGE_WINDOW: u32 = 1000;

/// The most answered attempts a percentile hedge delay is taken over: the window is kept per
/// call edge, in memory, for the whole run.
pub const MAX_HEDGE_WINDOW: u64 = 1_000_000;

/// `hedge` of the policy `at`.
pub(in crate::scenario) fn check(c: &mut Checker, at: &str, raw: &mut RawHedge) -> HedgeConfig {
    let p = format!("{at}.hedge");
    let delay = match parse_percentile(&raw.delay) {
        Some(quantile) => {
            let quantile = quantile
                .map_err(|e| c.err(&format!("{p}.delay"), e))
                .unwrap_or(0.5);
            let window = match raw.window {
                None => DEFAULT_HEDGE_WINDOW,
                Some(w) if (u64::from(HEDGE_MIN_SAMPLES)..=MAX_HEDGE_WINDOW).contains(&w) => {
                    w as u32
                }
                Some(w) => {
                    c.err(
                        &format!("{p}.window"),
                        format!(
                            "must be at least {HEDGE_MIN_SAMPLES} and at most 1000000 (got {w}): it is how many recent answers the percentile is taken over, and no hedge goes out before {HEDGE_MIN_SAMPLES} answers"
                        ),
                    );
                    DEFAULT_HEDGE_WINDOW
                }
            };
            raw.window = Some(u64::from(window));
            HedgeDelay::Percentile { quantile, window }
        }
        None => {
            let text = serde_json::Value::String(raw.delay.clone());
            let delay = match parse_duration(&text) {
                Ok(d) if d > SimDuration::ZERO => Some(d),
                Ok(_) => {
                    c.err(
                        &format!("{p}.delay"),
                        format!(
                            "must be longer than zero (got {}): a hedge sent at once only doubles the load; write a delay such as \"10ms\" or a percentile such as \"p95\"",
                            short(&text)
                        ),
                    );
                    None
                }
                Err(e) => {
                    c.err(
                        &format!("{p}.delay"),
                        format!(
                            "{e} (a hedge delay is a duration such as \"10ms\" or a percentile such as \"p95\")"
                        ),
                    );
                    None
                }
            };
            if let Some(w) = raw.window {
                c.err(
                    &format!("{p}.window"),
                    format!(
                        "applies to a percentile delay such as \"p95\" only (got {w} with delay {}): a fixed delay needs no window of latencies; remove window, or make the delay a percentile",
                        short(&text)
                    ),
                );
            }
            HedgeDelay::Fixed(delay.unwrap_or(SimDuration::from_nanos(1)))
        }
    };
    let max_hedges = match raw.max_hedges {
        None => 1,
        Some(n @ 1..=MAX_HEDGES) => n as u32,
        Some(n) => {
            c.err(
                &format!("{p}.max_hedges"),
                format!(
                    "must be at least 1 and at most {MAX_HEDGES} (got {n}): each hedge is one more attempt at the service, and {MAX_HEDGES} already make one attempt eleven; remove hedge for none"
                ),
            );
            1
        }
    };
    if let Some(b) = raw.budget
        && !(b > 0.0 && b <= 1.0)
    {
        c.err(
                &format!("{p}.budget"),
                format!(
                    "must be a share above 0 and at most 1 (got {}): the share of calls that may be hedged, 0.05 for 5 %; remove budget for no limit",
                num(b)
            ),
        );
    }
    raw.max_hedges = Some(u64::from(max_hedges));
    HedgeConfig {
        delay,
        max_hedges,
        cancel: *raw.cancel.get_or_insert(false),
        budget: raw.budget,
    }
}

/// Hedging in a phrase: the delay, how many hedges, the budget and cancellation.
pub(in crate::scenario) fn phrase(h: &HedgeConfig) -> String {
    let delay = match h.delay {
        HedgeDelay::Fixed(d) => d.to_string(),
        HedgeDelay::Percentile { quantile, window } => format!(
            "the {} latency of the last {window} answered attempts",
            crate::scenario::percentile_text(quantile)
        ),
    };
    let mut text = format!(
        "hedged after {delay}, at most {} hedge{} per attempt",
        h.max_hedges,
        if h.max_hedges == 1 { "" } else { "s" }
    );
    if let Some(b) = h.budget {
        text.push_str(&format!(", hedges capped at {} % of calls", percent(b)));
    }
    if h.cancel {
        text.push_str(", abandoned attempts cancelled");
    }
    text
}
