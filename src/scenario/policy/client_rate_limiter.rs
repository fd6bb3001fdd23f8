//! `policy.client_rate_limiter`: the AWS SDKs' `adaptive` retry mode's client-side rate
//! limiter, in one place: the raw setting a scenario file writes, its rule, and its words for
//! report.md. The limiter itself is `crate::model::rate_limiter`; which answers count as
//! throttling and what a token wait does to a call are in `crate::sim::policy`.

use crate::scenario::check::Checker;

/// `policy.client_rate_limiter`: true for the limiter, false (the default) for none. It has
/// no settings: every constant is botocore's (docs/format.md, "client_rate_limiter").
pub type RawClientRateLimiter = bool;

/// `client_rate_limiter` of the policy `at`: whether the call has the limiter. A call
/// between services with a bulkhead cannot have one: an attempt would wait for a permit and
/// for a token, and retrystorm does not model the two waits together.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: Option<RawClientRateLimiter>,
    has_bulkhead: bool,
) -> bool {
    let on = raw.unwrap_or(false);
    if on && has_bulkhead {
        c.err(
            &format!("{at}.client_rate_limiter"),
            "cannot be combined with a bulkhead on the same call (got true with a bulkhead): an attempt would wait for a bulkhead permit and for a token at once, which retrystorm does not model; remove the bulkhead or set client_rate_limiter to false",
        );
        return false;
    }
    on
}

/// The limiter in a phrase, with its rule.
pub(in crate::scenario) fn phrase() -> String {
    "the AWS SDKs' adaptive-mode client rate limiter (botocore's: from the first `throttled` answer on, every send waits for a token of a bucket whose rate CUBIC sets, C = 0.4, β = 0.7, at most twice the measured send rate, at least 0.5/s)".to_string()
}
