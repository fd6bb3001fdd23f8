//! `policy.preset`: a client library's retry policy by name. A preset runs exactly as the
//! settings it stands for written out by hand, what the file writes beside it wins key by key,
//! its numbers meet the closed forms of its constants, and a wrong name is refused with the
//! names there are.

use retrystorm::scenario::{LoadOptions, load_str};
use serde_json::Value;

use crate::{metric, run_text, variant};

/// 200 requests/s for 20 s against a server of unlimited workers whose every attempt fails
/// `error` with probability 0.3, independently of everything, under `policy`, with `variants`.
fn scenario(policy: &str, variants: &str) -> String {
    format!(
        r#"{{
  "name": "presets", "seed": 11, "replications": 8, "duration": "20s",
  "clients": {{ "count": 20, "workload": {{ "open": {{ "rate_per_s": 200 }} }} }},
  "server": {{ "concurrency": "unlimited", "service_time": {{ "constant": "1ms" }}, "error_rate": 0.3 }},
  "policy": {policy},
  "variants": {variants}
}}"#
    )
}

/// The legacy preset's settings written out by hand from botocore's `_retry.json` and
/// `delay_exponential`: the same run, number for number, under common random numbers.
#[test]
fn a_preset_runs_exactly_as_its_settings_written_by_hand() {
    let text = scenario(
        r#"{ "preset": "aws_sdk_legacy" }"#,
        r#"[ { "name": "preset", "patch": {} },
             { "name": "by hand", "patch": { "policy": { "preset": null, "retry": {
                 "max_attempts": 5, "retry_on": ["timeout", "error", "rejected", "throttled"],
                 "backoff": { "base": "1s", "multiplier": 2, "cap": "24h", "jitter": "full" },
                 "retry_after": "ignore" } } } } ]"#,
    );
    let (_, result) = run_text(&text);
    let numbers = |name: &str| -> Value {
        serde_json::to_value(&variant(&result, name).metrics).expect("metrics serialise")
    };
    assert_eq!(numbers("preset"), numbers("by hand"));
}

/// With failures independent with probability q = 0.3, m attempts succeed with 1 - q^m and
/// make (1 - q^m) / (1 - q) attempts per request: legacy mode's 5 attempts give 0.99757 and
/// 1.42510; written over with 3, 0.973 and 1.39. Tolerances are 4 standard errors of the
/// pooled requests.
#[test]
fn written_settings_win_over_the_preset_and_both_meet_their_closed_forms() {
    let text = scenario(
        r#"{ "preset": "aws_sdk_legacy" }"#,
        r#"[ { "name": "5 attempts", "patch": {} },
             { "name": "3 attempts", "patch": { "policy": { "retry": { "max_attempts": 3 } } } } ]"#,
    );
    let (experiment, result) = run_text(&text);
    let q: f64 = 0.3;
    for (name, m) in [("5 attempts", 5), ("3 attempts", 3)] {
        let v = variant(&result, name);
        let n = metric(v, "requests").0 * f64::from(experiment.replications);
        let p = 1.0 - q.powi(m);
        let se = (p * (1.0 - p) / n).sqrt();
        crate::assert_close(
            &format!("{name}: success"),
            metric(v, "success_rate").0,
            p,
            4.0 * se,
        );
        // The attempts' standard deviation is under 1 for any m with q = 0.3.
        crate::assert_close(
            &format!("{name}: attempts per request"),
            metric(v, "amplification").0,
            p / (1.0 - q),
            4.0 / n.sqrt(),
        );
    }
}

/// The resolved file names the preset beside the settings it stood for, with the file's own
/// written over them.
#[test]
fn the_resolved_policy_holds_the_preset_and_what_it_stood_for() {
    let text = scenario(
        r#"{ "preset": "aws_sdk_legacy", "retry": { "max_attempts": 2 } }"#,
        r#"[ { "name": "only", "patch": {} } ]"#,
    );
    let experiment = load_str(&text, "test", &LoadOptions::default()).expect("valid");
    let raw = &experiment.points[0].variants[0].resolved;
    let policy = serde_json::to_value(raw.policy.as_ref().expect("a policy")).expect("json");
    assert_eq!(policy["preset"], "aws_sdk_legacy");
    assert_eq!(policy["retry"]["max_attempts"], 2);
    assert_eq!(policy["retry"]["backoff"]["base"], "1s");
    assert_eq!(policy["retry"]["retry_after"], "ignore");
}

/// A misspelt preset is refused at its path, with the names there are.
#[test]
fn an_unknown_preset_is_refused_with_the_names_there_are() {
    let text = scenario(
        r#"{ "preset": "aws_sdk_lagacy" }"#,
        r#"[ { "name": "only", "patch": {} } ]"#,
    );
    let err = load_str(&text, "test", &LoadOptions::default())
        .expect_err("an unknown preset")
        .to_string();
    assert!(
        err.contains("policy.preset") && err.contains("aws_sdk_legacy"),
        "{err}"
    );
}

/// Every preset loads as the clients' policy and as a call's, and says its name in words.
#[test]
fn every_preset_loads_wherever_a_policy_is_written() {
    for name in [
        "aws_sdk_legacy",
        "aws_sdk_standard",
        "aws_sdk_adaptive",
        "envoy",
    ] {
        let text = format!(
            r#"{{
  "name": "every-preset", "seed": 1, "replications": 1, "duration": "1s",
  "clients": {{ "count": 2, "entry": "api", "workload": {{ "open": {{ "rate_per_s": 10 }} }} }},
  "services": {{
    "api": {{ "concurrency": 4, "service_time": {{ "constant": "1ms" }},
              "calls": [ {{ "to": "db", "policy": {{ "preset": "{name}", "timeout": "50ms" }} }} ] }},
    "db": {{ "concurrency": 4, "service_time": {{ "constant": "1ms" }} }}
  }},
  "policy": {{ "preset": "{name}" }}
}}"#
        );
        let experiment = load_str(&text, "test", &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let sc = &experiment.points[0].variants[0].scenario;
        let words = retrystorm::scenario::words::describe(sc).join(" ");
        assert!(words.contains(&format!("`{name}`")), "{name}: {words}");
    }
}

/// The AWS SDKs' standard mode: 3 attempts and the retry quota's newer costs. With every
/// attempt failing `error` and nothing ever succeeding, one client's quota of 500 pays for
/// floor(500 / 14) = 35 retries and denies every later one (the older price of 5 would pay
/// for 100).
#[test]
fn the_standard_preset_pays_14_a_retry_from_a_quota_of_500() {
    let text = r#"{
  "name": "standard", "seed": 3, "replications": 1, "duration": "20s",
  "clients": { "count": 1, "workload": { "open": { "rate_per_s": 10 } } },
  "server": { "concurrency": "unlimited", "service_time": { "constant": "1ms" }, "error_rate": 1.0 },
  "policy": { "preset": "aws_sdk_standard" }
}"#;
    let (_, result) = run_text(text);
    let v = &result.points[0].variants[0];
    assert_eq!(metric(v, "retries").0, 35.0);
    // Every request but those that spent all 3 attempts on the quota (at most 17 of them:
    // 2 retries each from 35) asked once more and was denied.
    let requests = metric(v, "requests").0;
    let denials = metric(v, "budget_denials").0;
    assert!(
        denials >= requests - 17.0 && denials < requests,
        "{denials} of {requests}"
    );
}
