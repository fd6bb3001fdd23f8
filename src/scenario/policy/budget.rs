//! `policy.budget`: a retry budget, in one place: the raw setting a scenario file writes, the
//! rules and defaults that turn it into the model's [`BudgetConfig`] (validation writes the
//! defaults back into the raw setting). The budget itself is `crate::model::budget`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::{BudgetConfig, BudgetKind};
use crate::scenario::check::{Caller, Checker, scope, written};
use crate::scenario::error::num;
use crate::scenario::phrase::scope as scope_words;
use crate::scenario::schema::{DurationText, RawScope};

/// `policy.budget`: a scope and exactly one kind of budget.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBudget {
    /// "per_client" (default) or "shared".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<RawScope>,
    /// gRPC retry throttling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_bucket: Option<RawTokenBucket>,
    /// AWS SDK standard-mode retry quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_quota: Option<RawRetryQuota>,
    /// Retries as a fraction of recent requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<RawRatio>,
}

/// `token_bucket` budget.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTokenBucket {
    /// Bucket size; retries are allowed only while tokens > max_tokens / 2.
    #[schemars(range(max = 1e9), extend("exclusiveMinimum" = 0))]
    pub max_tokens: f64,
    /// Tokens a success adds.
    #[schemars(range(min = 0.0, max = 1e9))]
    pub token_ratio: f64,
}

/// `retry_quota` budget.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRetryQuota {
    /// Starting (and largest) quota (default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1e9), extend("exclusiveMinimum" = 0))]
    pub initial: Option<f64>,
    /// Cost of a retry (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1e9))]
    pub retry_cost: Option<f64>,
    /// Cost of a retry after a timeout (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1e9))]
    pub timeout_cost: Option<f64>,
    /// Refund of a success without retries (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1e9))]
    pub success_refund: Option<f64>,
}

/// `ratio` budget.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRatio {
    /// Retries allowed per logical request started in the window.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub percent: f64,
    /// Retries per second always allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1e9))]
    pub min_per_s: Option<f64>,
    /// Length of the sliding window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<DurationText>,
}

/// `budget` of the policy `at`.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut RawBudget,
    caller: Caller,
) -> BudgetConfig {
    let p = &format!("{at}.budget");
    let set = [
        raw.token_bucket.is_some(),
        raw.retry_quota.is_some(),
        raw.ratio.is_some(),
    ];
    let count = set.iter().filter(|s| **s).count();
    if count != 1 {
        c.err(
            p,
            format!(
                "needs exactly one of \"token_bucket\", \"retry_quota\" or \"ratio\" (got {count})"
            ),
        );
    }
    let kind = if let Some(t) = &raw.token_bucket {
        let q = format!("{p}.token_bucket");
        c.positive_number(&format!("{q}.max_tokens"), t.max_tokens);
        c.non_negative(&format!("{q}.token_ratio"), t.token_ratio);
        BudgetKind::TokenBucket {
            max_tokens: t.max_tokens,
            token_ratio: t.token_ratio,
        }
    } else if let Some(r) = &mut raw.retry_quota {
        let q = format!("{p}.retry_quota");
        let initial = *r.initial.get_or_insert(500.0);
        c.positive_number(&format!("{q}.initial"), initial);
        let retry_cost = *r.retry_cost.get_or_insert(5.0);
        c.non_negative(&format!("{q}.retry_cost"), retry_cost);
        let timeout_cost = *r.timeout_cost.get_or_insert(10.0);
        c.non_negative(&format!("{q}.timeout_cost"), timeout_cost);
        let success_refund = *r.success_refund.get_or_insert(1.0);
        c.non_negative(&format!("{q}.success_refund"), success_refund);
        BudgetKind::RetryQuota {
            initial,
            retry_cost,
            timeout_cost,
            success_refund,
        }
    } else if let Some(r) = &mut raw.ratio {
        let q = format!("{p}.ratio");
        if !(0.0..=1.0).contains(&r.percent) {
            c.err(
                &format!("{q}.percent"),
                format!(
                    "must be a fraction between 0 and 1 (got {}); write 10 % as 0.1",
                    num(r.percent)
                ),
            );
        }
        let min_per_s = *r.min_per_s.get_or_insert(0.0);
        c.non_negative(&format!("{q}.min_per_s"), min_per_s);
        let window = r
            .window
            .get_or_insert_with(|| written(SimDuration::from_secs(10)));
        let window = c
            .positive_duration(&format!("{q}.window"), window)
            .unwrap_or_default();
        BudgetKind::Ratio {
            percent: r.percent,
            min_per_s,
            window,
        }
    } else {
        BudgetKind::TokenBucket {
            max_tokens: 1.0,
            token_ratio: 0.0,
        }
    };
    BudgetConfig {
        kind,
        scope: scope(c, p, &mut raw.scope, caller),
    }
}

/// A retry budget in one sentence, for the clients' policy.
pub(in crate::scenario) fn sentence(b: &BudgetConfig) -> String {
    let what = match b.kind {
        BudgetKind::TokenBucket {
            max_tokens,
            token_ratio,
        } => format!(
            "a token bucket (gRPC retry throttling) of {max_tokens} tokens; a failed attempt takes one, a success gives back {token_ratio}, and retries go out only while more than half are left"
        ),
        BudgetKind::RetryQuota {
            initial,
            retry_cost,
            timeout_cost,
            success_refund,
        } => format!(
            "a retry quota (AWS SDK standard mode) of {initial}; a retry costs {retry_cost} ({timeout_cost} after a timeout), a success refunds what its last retry cost or {success_refund} without retries"
        ),
        BudgetKind::Ratio {
            percent,
            min_per_s,
            window,
        } => {
            let floor = if min_per_s > 0.0 {
                format!(" plus {min_per_s} per second")
            } else {
                String::new()
            };
            format!(
                "a ratio budget: retries in the last {window} may not exceed {} % of the requests started in it{floor}",
                100.0 * percent
            )
        }
    };
    format!(
        "Retry budget ({}): {what}. A denied retry ends the request `budget_exhausted`.",
        scope_words(b.scope)
    )
}

/// A retry budget in a phrase, for a call's policy.
pub(in crate::scenario) fn phrase(b: &BudgetConfig) -> String {
    let kind = match b.kind {
        BudgetKind::TokenBucket { .. } => "a token bucket",
        BudgetKind::RetryQuota { .. } => "a retry quota",
        BudgetKind::Ratio { .. } => "a ratio budget",
    };
    format!("retries limited by {kind}")
}
