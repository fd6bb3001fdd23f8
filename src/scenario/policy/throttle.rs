//! `policy.adaptive_throttle`: client-side adaptive throttling, in one place: the raw setting
//! a scenario file writes, the checked [`ThrottleConfig`] the simulation takes, and the rules
//! and defaults between them (validation writes the defaults back into the raw setting).
//! The throttle itself is `crate::model::throttle`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::throttle::K_SCALE;

use crate::scenario::check::{Checker, written};
use crate::scenario::error::{num, short};
use crate::scenario::schema::DurationText;

/// `policy.adaptive_throttle`: true (the defaults), false (none) or the settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RawAdaptiveThrottle {
    /// true: adaptive throttling with the default settings; false: none.
    On(bool),
    /// Adaptive throttling with these settings.
    Settings(RawThrottleSettings),
}

/// `policy.adaptive_throttle` as an object.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawThrottleSettings {
    /// The multiplier K: the client sends about K times what the backend accepts, from 1 to
    /// 100 (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.0, max = 100.0))]
    pub k: Option<f64>,
    /// The sliding window requests and accepts are counted over, from "1s" to "24h"
    /// (default "2m").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<DurationText>,
}

/// `policy.adaptive_throttle`: client-side adaptive throttling (Google's SRE book, "Handling
/// Overload"). Each client (on the clients' edge; the calling service on a call between
/// services) counts, over the last `window`, the attempts it tried and the ones the service
/// accepted (answered with anything but `rejected`, `throttled` or no answer in time), and
/// rejects an attempt locally with probability max(0, (requests - K * accepts) /
/// (requests + 1)); the request then ends `throttled_locally`, never retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleConfig {
    /// K in millionths (1 to 100, so 1,000,000 to 100,000,000).
    pub k_micros: u64,
    /// The sliding window (1 s to 24 h).
    pub window: SimDuration,
}

impl ThrottleConfig {
    /// K as a number.
    pub fn k(&self) -> f64 {
        self.k_micros as f64 / crate::model::throttle::K_SCALE as f64
    }
}

/// Default K of an adaptive throttle (the SRE book's).
pub const DEFAULT_THROTTLE_K: u64 = 2;

/// The largest K of an adaptive throttle: beyond, it would hardly ever reject.
pub const MAX_THROTTLE_K: f64 = 100.0;

/// Default window of an adaptive throttle (the SRE book's two minutes).
pub const DEFAULT_THROTTLE_WINDOW: SimDuration = SimDuration::from_secs(120);

/// The shortest window of an adaptive throttle: 60 buckets of at least 1/60 s.
pub const MIN_THROTTLE_WINDOW: SimDuration = SimDuration::from_secs(1);

/// The longest window of an adaptive throttle.
pub const MAX_THROTTLE_WINDOW: SimDuration = SimDuration::from_secs(24 * 3600);

/// `adaptive_throttle` of the policy `at`: `None` for `false`.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut RawAdaptiveThrottle,
) -> Option<ThrottleConfig> {
    let config = read_adaptive_throttle(c, at, raw)?;
    // The throttle that runs, with its settings filled in.
    *raw = RawAdaptiveThrottle::Settings(RawThrottleSettings {
        k: Some(config.k()),
        window: Some(written(config.window)),
    });
    Some(config)
}

/// [`check`], read.
fn read_adaptive_throttle(
    c: &mut Checker,
    at: &str,
    raw: &RawAdaptiveThrottle,
) -> Option<ThrottleConfig> {
    let p = format!("{at}.adaptive_throttle");
    let default = ThrottleConfig {
        k_micros: DEFAULT_THROTTLE_K * K_SCALE,
        window: DEFAULT_THROTTLE_WINDOW,
    };
    let s = match raw {
        RawAdaptiveThrottle::On(false) => return None,
        RawAdaptiveThrottle::On(true) => return Some(default),
        RawAdaptiveThrottle::Settings(s) => s,
    };
    let k_micros = match s.k {
        None => default.k_micros,
        Some(k) if (1.0..=MAX_THROTTLE_K).contains(&k) => (k * K_SCALE as f64).round() as u64,
        Some(k) => {
            c.err(
                &format!("{p}.k"),
                format!(
                    "must be at least 1 and at most 100 (got {}): the client sends about k times what the service accepts, so below 1 it would refuse requests a healthy service takes; 2 is the SRE book's choice, 1.1 throttles harder",
                    num(k)
                ),
            );
            default.k_micros
        }
    };
    let window = match &s.window {
        None => default.window,
        Some(d) => match c.duration(&format!("{p}.window"), d) {
            Some(w) if (MIN_THROTTLE_WINDOW..=MAX_THROTTLE_WINDOW).contains(&w) => w,
            Some(_) => {
                c.err(
                    &format!("{p}.window"),
                    format!(
                        "must be at least 1s and at most 24h (got {}): requests and accepts are counted over it in 60 buckets; the SRE book uses \"2m\"",
                        short(&d.0)
                    ),
                );
                default.window
            }
            None => default.window,
        },
    };
    Some(ThrottleConfig { k_micros, window })
}

/// Adaptive throttling in a phrase, with its rule.
pub(in crate::scenario) fn phrase(t: &ThrottleConfig) -> String {
    format!(
        "adaptive throttling (K = {}, window {}): an attempt is rejected locally, ending its request `throttled_locally`, with probability max(0, (requests - K × accepts) / (requests + 1)) over the window",
        t.k(),
        t.window
    )
}
