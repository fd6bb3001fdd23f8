//! `policy.budget`: a retry budget, in one place: the raw setting a scenario file writes, the
//! rules and defaults that turn it into the model's [`BudgetConfig`] (validation writes the
//! defaults back into the raw setting). The budget itself is `crate::model::budget`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::{BudgetConfig, BudgetKind, EnvoyLimit};
use crate::scenario::check::{Caller, Checker, scope, written};
use crate::scenario::error::num;
use crate::scenario::phrase::scope as scope_words;
use crate::scenario::schema::{DurationText, RawScope};

/// `policy.budget`: a scope and exactly one kind of budget (`retry_budget` and
/// `max_retries` are an Envoy cluster's two limits on concurrent retries).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBudget {
    /// "per_client" (default) or "shared" (the default of Envoy's `retry_budget` and
    /// `max_retries`: one Envoy in front of every client).
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
    /// Envoy's cluster retry budget: retries in flight below max(budget_percent % of the
    /// attempts active, min_retry_concurrency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_budget: Option<RawEnvoyRetryBudget>,
    /// Envoy's circuit-breaker limit on retries in flight (Envoy's default without a retry
    /// budget: 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1_000_000_000))]
    pub max_retries: Option<u64>,
}

/// `retry_budget`: Envoy's `circuit_breakers.thresholds[].retry_budget`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEnvoyRetryBudget {
    /// Percent of the active attempts that may be retries in flight (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub budget_percent: Option<f64>,
    /// Retries in flight always allowed (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1_000_000_000))]
    pub min_retry_concurrency: Option<u64>,
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
    /// Cost of a retry after a throttling error (default: retry_cost; the AWS SDKs' newer
    /// standard mode: 5, with retry_cost and timeout_cost 14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1e9))]
    pub throttling_cost: Option<f64>,
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
        raw.retry_budget.is_some(),
        raw.max_retries.is_some(),
    ];
    let count = set.iter().filter(|s| **s).count();
    if count != 1 {
        c.err(
            p,
            format!(
                "needs exactly one of \"token_bucket\", \"retry_quota\", \"ratio\", \"retry_budget\" or \"max_retries\" (got {count})"
            ),
        );
    }
    let envoy = raw.retry_budget.is_some() || raw.max_retries.is_some();
    if envoy && raw.scope.is_none() && caller == Caller::Clients {
        // One Envoy in front of every client: its cluster counts all their attempts.
        raw.scope = Some(RawScope::Shared);
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
        retry_quota(c, &format!("{p}.retry_quota"), r)
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
    } else if let Some(r) = &mut raw.retry_budget {
        BudgetKind::Envoy(retry_budget(c, &format!("{p}.retry_budget"), r))
    } else if let Some(n) = raw.max_retries {
        BudgetKind::Envoy(EnvoyLimit::MaxRetries(c.count_u32(
            &format!("{p}.max_retries"),
            n,
            0,
        )))
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

/// `retry_quota` at `q`, its defaults (aws-sdk-go-v2's standard mode) written back, all but
/// `throttling_cost`, which is left out when absent so that files written before it resolve
/// as they did.
fn retry_quota(c: &mut Checker, q: &str, r: &mut RawRetryQuota) -> BudgetKind {
    let initial = *r.initial.get_or_insert(500.0);
    c.positive_number(&format!("{q}.initial"), initial);
    let retry_cost = *r.retry_cost.get_or_insert(5.0);
    c.non_negative(&format!("{q}.retry_cost"), retry_cost);
    let timeout_cost = *r.timeout_cost.get_or_insert(10.0);
    c.non_negative(&format!("{q}.timeout_cost"), timeout_cost);
    let throttling_cost = r.throttling_cost.unwrap_or(retry_cost);
    c.non_negative(&format!("{q}.throttling_cost"), throttling_cost);
    let success_refund = *r.success_refund.get_or_insert(1.0);
    c.non_negative(&format!("{q}.success_refund"), success_refund);
    BudgetKind::RetryQuota {
        initial,
        retry_cost,
        timeout_cost,
        throttling_cost,
        success_refund,
    }
}

/// Envoy's `retry_budget` at `q`, its defaults (20 %, 3: `RetryBudgetImpl::max`) written
/// back.
fn retry_budget(c: &mut Checker, q: &str, r: &mut RawEnvoyRetryBudget) -> EnvoyLimit {
    let budget_percent = *r.budget_percent.get_or_insert(DEFAULT_BUDGET_PERCENT);
    if !(0.0..=100.0).contains(&budget_percent) {
        c.err(
            &format!("{q}.budget_percent"),
            format!(
                "must be a percent between 0 and 100 (got {}); write 20 % as 20, as Envoy does",
                num(budget_percent)
            ),
        );
    }
    let min = *r
        .min_retry_concurrency
        .get_or_insert(u64::from(DEFAULT_MIN_RETRY_CONCURRENCY));
    EnvoyLimit::RetryBudget {
        budget_percent,
        min_retry_concurrency: c.count_u32(&format!("{q}.min_retry_concurrency"), min, 0),
    }
}

/// Envoy's default `retry_budget.budget_percent`.
pub const DEFAULT_BUDGET_PERCENT: f64 = 20.0;
/// Envoy's default `retry_budget.min_retry_concurrency`.
pub const DEFAULT_MIN_RETRY_CONCURRENCY: u32 = 3;

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
            throttling_cost,
            success_refund,
        } => {
            let throttling = if throttling_cost == retry_cost {
                String::new()
            } else {
                format!(", {throttling_cost} after a throttling error")
            };
            format!(
                "a retry quota (AWS SDK standard mode) of {initial}; a retry costs {retry_cost} ({timeout_cost} after a timeout{throttling}), a success refunds what its last retry cost or {success_refund} without retries"
            )
        }
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
        BudgetKind::Envoy(EnvoyLimit::MaxRetries(n)) => format!(
            "Envoy's circuit breaker `max_retries`: at most {n} retries in flight at once (from the retry's decision until its answer or timeout)"
        ),
        BudgetKind::Envoy(EnvoyLimit::RetryBudget {
            budget_percent,
            min_retry_concurrency,
        }) => format!(
            "Envoy's retry budget: retries in flight (from the retry's decision until its answer or timeout) stay below the larger of {budget_percent} % of the attempts outstanding and {min_retry_concurrency}"
        ),
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
        BudgetKind::Envoy(EnvoyLimit::MaxRetries(_)) => "Envoy's max_retries",
        BudgetKind::Envoy(EnvoyLimit::RetryBudget { .. }) => "Envoy's retry budget",
    };
    format!("retries limited by {kind}")
}
