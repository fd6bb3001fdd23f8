//! `policy.client_rate_limiter`: the AWS SDKs' `adaptive` retry mode's client-side rate
//! limiter, in one place: the raw setting a scenario file writes, its rule, and its words for
//! report.md. The limiter itself is `crate::model::rate_limiter`; which answers count as
//! throttling and what a token wait does to a call are in `crate::sim::policy`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::TokenWait;
use crate::scenario::check::Checker;

/// `policy.client_rate_limiter`: true for botocore's limiter, false (the default) for none,
/// or `{"token_wait": ...}` for the limiter as an SDK that diverged from botocore ran it.
/// Every constant is botocore's (docs/format.md, "client_rate_limiter").
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RawClientRateLimiter {
    /// true or false.
    On(bool),
    /// The limiter, with how a send waits for a token.
    With(RawLimiterSettings),
}

/// `client_rate_limiter: {"token_wait": ...}`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLimiterSettings {
    /// How a send without a token waits: "recheck" (botocore's, the default),
    /// "deduct_before_wait" (aws-sdk-rust before smithy-lang/smithy-rs#4632) or
    /// "deduct_after_wait" (the JavaScript v3 SDK before smithy-lang/smithy-typescript#1973).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_wait: Option<RawTokenWait>,
}

/// How a send without a token waits for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawTokenWait {
    /// Wait, look again, take a token only when there is one (botocore; the SDKs today).
    Recheck,
    /// Take the token at once even when short (the capacity goes below zero), wait, go.
    DeductBeforeWait,
    /// Wait the shortfall seen when asking, then go and take the token whatever is left.
    DeductAfterWait,
}

/// `client_rate_limiter` of the policy `at`: the call's limiter and how its sends wait, or
/// None. A call between services with a bulkhead cannot have one: an attempt would wait for
/// a permit and for a token, and retrystorm does not model the two waits together.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: Option<&mut RawClientRateLimiter>,
    has_bulkhead: bool,
) -> Option<TokenWait> {
    let wait = match raw {
        None | Some(RawClientRateLimiter::On(false)) => return None,
        Some(RawClientRateLimiter::On(true)) => TokenWait::Recheck,
        Some(RawClientRateLimiter::With(s)) => {
            match *s.token_wait.get_or_insert(RawTokenWait::Recheck) {
                RawTokenWait::Recheck => TokenWait::Recheck,
                RawTokenWait::DeductBeforeWait => TokenWait::DeductBeforeWait,
                RawTokenWait::DeductAfterWait => TokenWait::DeductAfterWait,
            }
        }
    };
    if has_bulkhead {
        c.err(
            &format!("{at}.client_rate_limiter"),
            "cannot be combined with a bulkhead on the same call (got a limiter with a bulkhead): an attempt would wait for a bulkhead permit and for a token at once, which retrystorm does not model; remove the bulkhead or set client_rate_limiter to false",
        );
        return None;
    }
    Some(wait)
}

/// The limiter in a phrase, with its rule.
pub(in crate::scenario) fn phrase(wait: TokenWait) -> String {
    let how = match wait {
        TokenWait::Recheck => "",
        TokenWait::DeductBeforeWait => {
            "; a send short of a token takes it at once, leaving a debt the next sends wait for, and goes after its wait without looking again, as aws-sdk-rust did before smithy-lang/smithy-rs#4632"
        }
        TokenWait::DeductAfterWait => {
            "; a send short of a token waits the shortfall it saw and then goes, taking its token whatever is left, as the JavaScript v3 SDK did before smithy-lang/smithy-typescript#1973"
        }
    };
    format!(
        "the AWS SDKs' adaptive-mode client rate limiter (botocore's: from the first `throttled` answer on, every send waits for a token of a bucket whose rate CUBIC sets, C = 0.4, β = 0.7, at most twice the measured send rate, at least 0.5/s{how})"
    )
}
