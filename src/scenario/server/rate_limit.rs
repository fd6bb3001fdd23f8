//! `server.rate_limit`: an admission token bucket that answers `throttled`, in one place: the
//! raw setting, the rules that give the checked [`RateLimit`], and its words in report.md. The
//! bucket itself is `crate::model::rate_limit`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::RateLimit;
use crate::scenario::RetryAfter;
use crate::scenario::check::{Checker, MAX_AMOUNT};
use crate::scenario::error::num;
use crate::scenario::schema::DurationText;

/// `server.rate_limit`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRateLimit {
    /// Tokens added per second.
    #[schemars(range(min = 0.0, max = 1e9))]
    pub rate_per_s: f64,
    /// Bucket size.
    #[schemars(range(min = 1.0, max = 1e9))]
    pub burst: f64,
    /// Retry-After carried by `throttled` answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<DurationText>,
}

/// The rate limit of the server `at`.
pub(in crate::scenario) fn check(c: &mut Checker, at: &str, raw: &RawRateLimit) -> RateLimit {
    let p = format!("{at}.rate_limit");
    let rate_per_s = c.rate(&format!("{p}.rate_per_s"), raw.rate_per_s);
    if !(1.0..=MAX_AMOUNT).contains(&raw.burst) {
        c.err(
            &format!("{p}.burst"),
            format!(
                "must be at least 1 and at most 1e9 (got {}); it is how many attempts pass at once",
                num(raw.burst)
            ),
        );
    }
    RateLimit {
        rate_per_s,
        burst: raw.burst,
        retry_after: raw
            .retry_after
            .as_ref()
            .and_then(|d| c.duration(&format!("{p}.retry_after"), d)),
    }
}

/// A rate limit in one sentence, with whether the callers honour its Retry-After.
pub(in crate::scenario) fn sentence(
    r: &RateLimit,
    retry_after: Option<RetryAfter>,
    who: Option<&str>,
) -> String {
    let after = match (r.retry_after, retry_after) {
        (None, _) => String::new(),
        (Some(d), Some(RetryAfter::Honor)) => {
            format!(" with Retry-After {d}, which clients honour (they wait at least that long)")
        }
        (Some(d), Some(RetryAfter::Ignore)) => {
            format!(" with Retry-After {d}, which clients ignore")
        }
        (Some(d), Some(RetryAfter::Clamp)) => format!(
            " with Retry-After {d}, which clients clamp between their backoff and 5 s beyond it"
        ),
        (Some(d), None) => format!(" with Retry-After {d}"),
    };
    match who {
        None => format!(
            "Rate limit: the server admits {} attempts/s in bursts of up to {}; the rest are answered 429 `throttled` at once{after}.",
            r.rate_per_s, r.burst
        ),
        Some(w) => format!(
            "Rate limit at {w}: it admits {} attempts/s in bursts of up to {}; the rest are answered 429 `throttled` at once{after}.",
            r.rate_per_s, r.burst
        ),
    }
}
