//! `policy.preset`: the retry policy of a client library people run, by name, in one place:
//! the settings each preset stands for, with the source they were read from, how a preset is
//! expanded into a scenario document, and the words report.md says of it.
//!
//! A preset is the base of its policy and what the file writes beside it is a JSON merge
//! patch (RFC 7396) of it, as a variant's patch is of the scenario: a setting written beside
//! it wins key by key, and `null` takes one of the preset's out. Expansion happens on the
//! document, after its shape is checked and before it is read into a `RawScenario`, so every
//! rule, default and word downstream sees ordinary settings, and `scenario.resolved.json`
//! holds the preset's name beside the settings it stood for (rerunning it gives the same
//! result). This file is not where any of those settings is checked: each is in its own file
//! beside this one.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `policy.preset`: a named client library's retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawPreset {
    /// botocore's legacy retry mode, boto3's default: 5 attempts, rand() x 2^(n-1) s.
    AwsSdkLegacy,
    /// The AWS SDKs' standard retry mode as botocore runs it today: 3 attempts, the retry
    /// quota with its newer costs, 50 ms or 1 s backoff bases, the x-amz-retry-after clamp.
    AwsSdkStandard,
    /// Standard mode with the adaptive mode's client-side rate limiter.
    AwsSdkAdaptive,
    /// An Envoy route's retry policy with Envoy's defaults: one retry on 5xx and timeouts,
    /// Envoy's backoff, the cluster circuit breaker's 3 retries in flight.
    Envoy,
}

impl RawPreset {
    /// Every preset, in the order the docs list them.
    pub const ALL: [RawPreset; 4] = [
        RawPreset::AwsSdkLegacy,
        RawPreset::AwsSdkStandard,
        RawPreset::AwsSdkAdaptive,
        RawPreset::Envoy,
    ];

    /// The name a scenario file writes.
    pub fn name(self) -> &'static str {
        match self {
            RawPreset::AwsSdkLegacy => "aws_sdk_legacy",
            RawPreset::AwsSdkStandard => "aws_sdk_standard",
            RawPreset::AwsSdkAdaptive => "aws_sdk_adaptive",
            RawPreset::Envoy => "envoy",
        }
    }

    /// What it is, for report.md.
    pub fn title(self) -> &'static str {
        match self {
            RawPreset::AwsSdkLegacy => {
                "the AWS SDK for Python's legacy retry mode (boto3's default)"
            }
            RawPreset::AwsSdkStandard => "the AWS SDKs' standard retry mode",
            RawPreset::AwsSdkAdaptive => {
                "the AWS SDKs' adaptive retry mode (standard mode and a client-side rate limiter)"
            }
            RawPreset::Envoy => "an Envoy route's retry policy with Envoy's defaults",
        }
    }

    /// Where its settings were read, for report.md and the docs.
    pub fn source(self) -> &'static str {
        match self {
            RawPreset::AwsSdkLegacy => {
                "botocore's data/_retry.json (`__default__`) and retryhandler.py (`delay_exponential`)"
            }
            RawPreset::AwsSdkStandard => {
                "botocore 1.44's retries/standard.py (`ExponentialBackoff`, `RetryQuotaChecker`) and retries/quota.py"
            }
            RawPreset::AwsSdkAdaptive => {
                "botocore's retries/standard.py and retries/adaptive.py, bucket.py and throttling.py"
            }
            RawPreset::Envoy => {
                "Envoy's route.v3.RetryPolicy and cluster.v3.CircuitBreakers defaults (retry_state_impl.cc, backoff_strategy.cc)"
            }
        }
    }

    /// The policy settings it stands for, as a scenario file writes them.
    pub fn settings(self) -> Value {
        match self {
            // `__default__`: max_attempts 5; delay rand() * 2^(attempts - 1) seconds, which
            // is full jitter over 1 s x 2^(k-1); retried on socket errors and read timeouts
            // (timeout), 500/502/504/509 (error), 503 (rejected), 429 and the throttling
            // codes (throttled). Legacy mode has no cap and reads no Retry-After; 24 h lies
            // beyond every delay of up to 17 attempts.
            RawPreset::AwsSdkLegacy => json!({
                "retry": {
                    "max_attempts": 5,
                    "retry_on": ["timeout", "error", "rejected", "throttled"],
                    "backoff": { "base": "1s", "multiplier": 2, "cap": "24h", "jitter": "full" },
                    "retry_after": "ignore"
                }
            }),
            // RetryQuotaChecker: 14 a retry (timeouts too), 5 after a throttling error, 1
            // back for a success without retries, the quota 500; ExponentialBackoff:
            // rand() x min(base_scale x 2^(n-1), 20 s), base_scale 1 s after throttling and
            // 50 ms otherwise; x-amz-retry-after clamped to [t, t + 5 s]; 3 attempts.
            RawPreset::AwsSdkStandard => standard(),
            RawPreset::AwsSdkAdaptive => {
                let mut settings = standard();
                settings["client_rate_limiter"] = json!(true);
                settings
            }
            // num_retries 1; retry_on "5xx" (5xx answers, resets and per-try timeouts);
            // base_interval 25 ms, max_interval 10 x base; no retry budget, so the cluster
            // circuit breaker's max_retries (3) bounds retries in flight for the whole
            // cluster (an Envoy limit's scope is shared by default: one Envoy's counts).
            RawPreset::Envoy => json!({
                "retry": {
                    "max_attempts": 2,
                    "retry_on": ["timeout", "error", "rejected"],
                    "backoff": { "envoy": { "base_interval": "25ms", "max_interval": "250ms" } },
                    "retry_after": "ignore"
                },
                "budget": { "max_retries": 3 }
            }),
        }
    }
}

/// The AWS SDKs' standard mode as botocore runs it.
fn standard() -> Value {
    json!({
        "retry": {
            "max_attempts": 3,
            "retry_on": ["timeout", "error", "rejected", "throttled"],
            "backoff": { "base": "50ms", "throttling_base": "1s", "multiplier": 2, "cap": "20s",
                         "jitter": "full" },
            "retry_after": "clamp"
        },
        "budget": {
            "retry_quota": { "initial": 500, "retry_cost": 14, "timeout_cost": 14,
                             "throttling_cost": 5, "success_refund": 1 }
        }
    })
}

/// `doc` with every policy that names a preset expanded: the top-level `policy`, each group
/// of clients' and each call's. Borrowed as it is where none does.
pub(in crate::scenario) fn expand(doc: &Value) -> Cow<'_, Value> {
    if !names_a_preset(doc) {
        return Cow::Borrowed(doc);
    }
    let mut doc = doc.clone();
    if let Some(policy) = doc.get_mut("policy") {
        expand_policy(policy);
    }
    if let Some(Value::Array(groups)) = doc.get_mut("clients") {
        for group in groups {
            if let Some(policy) = group.get_mut("policy") {
                expand_policy(policy);
            }
        }
    }
    if let Some(Value::Object(services)) = doc.get_mut("services") {
        for service in services.values_mut() {
            let calls: Vec<&mut Value> = match service.get_mut("calls") {
                Some(Value::Array(list)) => list.iter_mut().collect(),
                Some(Value::Object(named)) => named.values_mut().collect(),
                _ => Vec::new(),
            };
            for call in calls {
                if let Some(policy) = call.get_mut("policy") {
                    expand_policy(policy);
                }
            }
        }
    }
    Cow::Owned(doc)
}

/// Whether some object of `doc` has a `preset` key: the cheap test that spares a clone.
fn names_a_preset(doc: &Value) -> bool {
    match doc {
        Value::Object(map) => map.contains_key("preset") || map.values().any(names_a_preset),
        Value::Array(list) => list.iter().any(names_a_preset),
        _ => false,
    }
}

/// One policy object: the preset's settings with the written ones merged over them. An
/// unknown name is left for the shape check, which has already reported it.
fn expand_policy(policy: &mut Value) {
    let Some(preset) = policy
        .get("preset")
        .and_then(|p| serde_json::from_value::<RawPreset>(p.clone()).ok())
    else {
        return;
    };
    let mut expanded = preset.settings();
    crate::scenario::load::merge(&mut expanded, policy);
    *policy = expanded;
}

/// The preset in one sentence, for the clients' policy and a call's.
pub(in crate::scenario) fn sentence(p: RawPreset) -> String {
    format!(
        "Preset `{}`: {}, as {} give it; the file's own settings are written over it.",
        p.name(),
        p.title(),
        p.source()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::schema::RawPolicy;

    #[test]
    fn every_preset_reads_as_a_policy_and_names_itself() {
        for p in RawPreset::ALL {
            let policy: RawPolicy = serde_json::from_value(p.settings())
                .unwrap_or_else(|e| panic!("{}: {e}", p.name()));
            assert!(policy.retry.is_some(), "{}", p.name());
            assert_eq!(serde_json::to_value(p).unwrap(), json!(p.name()));
        }
    }

    #[test]
    fn written_settings_win_key_by_key_and_null_takes_one_out() {
        let doc = json!({
            "policy": { "preset": "aws_sdk_legacy",
                        "retry": { "max_attempts": 3, "retry_after": null } },
            "clients": [ { "name": "a", "policy": { "preset": "aws_sdk_legacy" } } ],
            "services": { "api": { "calls": [ { "to": "db",
                "policy": { "preset": "aws_sdk_legacy", "timeout": "1s" } } ] } }
        });
        let out = expand(&doc);
        let retry = &out["policy"]["retry"];
        assert_eq!(retry["max_attempts"], json!(3));
        assert_eq!(retry["backoff"]["base"], json!("1s"));
        assert!(retry.get("retry_after").is_none());
        assert_eq!(out["policy"]["preset"], json!("aws_sdk_legacy"));
        assert_eq!(
            out["clients"][0]["policy"]["retry"]["max_attempts"],
            json!(5)
        );
        let call = &out["services"]["api"]["calls"][0]["policy"];
        assert_eq!(call["timeout"], json!("1s"));
        assert_eq!(call["retry"]["max_attempts"], json!(5));
    }

    #[test]
    fn a_document_without_presets_is_not_copied() {
        let doc = json!({ "policy": { "retry": { "max_attempts": 2 } } });
        assert!(matches!(expand(&doc), Cow::Borrowed(_)));
    }
}
