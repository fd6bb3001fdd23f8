//! `policy.grpc_service_config`: a gRPC service config file read as gRFC A6 defines its
//! retryPolicy, hedgingPolicy, timeout and retryThrottling. The expected settings below come
//! from A6 and the status-code table of docs/format.md section 7, not from a run: a policy read
//! from a config runs exactly as the same policy written by hand, maxAttempts above 5 is read
//! as 5, the method lookup goes exact method, then service, then the default name, and each
//! way a config can be wrong stops the run with exit code 2 and a message that names the
//! scenario's JSON path, the file, the path inside it, the rule and the fix.

use std::path::Path;

use retrystorm::engine::SimDuration;
use retrystorm::metrics::{Column, VariantResult};
use retrystorm::model::Outcome;
use retrystorm::scenario::{Experiment, LoadOptions, Policy, load_file, load_str};

use crate::cli::retrystorm;
use crate::{metric, variant};

/// A service config with a service-wide retry policy, a method of its own whose maxAttempts
/// A6 caps, a default entry without retries, and retry throttling.
const CONFIG: &str = r#"{
  "loadBalancingConfig": [{ "round_robin": {} }],
  "methodConfig": [
    { "name": [{ "service": "shop.Cart" }],
      "retryPolicy": { "maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
                       "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"] } },
    { "name": [{ "service": "shop.Cart", "method": "Checkout" }], "timeout": "2s",
      "retryPolicy": { "maxAttempts": 7, "initialBackoff": "0.01s", "maxBackoff": "0.5s",
                       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", 8] } },
    { "name": [{}], "waitForReady": false }
  ],
  "retryThrottling": { "maxTokens": 100, "tokenRatio": 0.1239 }
}"#;

/// One client channel, 1000 requests/s for 20 s against a server that fails a share `q` of
/// its attempts after 1 ms (tests/it/retry_throttling.rs's setup), with `policy`.
fn scenario(q: f64, policy: &str) -> String {
    format!(
        r#"{{
  "name": "grpc", "seed": 16, "replications": 2, "duration": "20s",
  "clients": {{ "count": 1, "workload": {{ "open": {{ "rate_per_s": 1000 }} }} }},
  "network": {{ "latency": {{ "constant": "0ms" }} }},
  "server": {{ "concurrency": "unlimited", "service_time": {{ "constant": "1ms" }}, "error_rate": {q} }},
  "policy": {policy}
}}"#
    )
}

/// Writes `config` as configs/sc.json and `scenario` beside a folder of it, and loads it.
fn load(dir: &Path, config: &str, scenario: &str) -> Result<Experiment, String> {
    std::fs::create_dir_all(dir.join("configs")).unwrap();
    std::fs::write(dir.join("configs/sc.json"), config).unwrap();
    std::fs::write(dir.join("scenario.json"), scenario).unwrap();
    load_file(&dir.join("scenario.json"), &LoadOptions::default()).map_err(|e| e.to_string())
}

/// The policy of method `method` of `service` in [`CONFIG`], with `beside` written next to it.
fn policy_of(service: &str, method: &str, beside: &str) -> Policy {
    let dir = tempfile::tempdir().unwrap();
    let policy = format!(
        r#"{{ {beside} "grpc_service_config": {{ "file": "configs/sc.json", "service": "{service}", "method": "{method}" }} }}"#
    );
    let e = load(dir.path(), CONFIG, &scenario(0.1, &policy)).unwrap();
    e.points[0].variants[0].scenario.policy.clone()
}

#[test]
fn a_policy_read_from_a_config_runs_as_the_same_policy_written_by_hand() {
    // A6: maxAttempts 3; backoff random(0, min(0.001s x 1^(n-1), 0.001s)) is full jitter
    // up to 1 ms; UNAVAILABLE is `rejected` and `error` (docs/format.md section 7);
    // retryThrottling 100 tokens and ratio 0.1239 read to 3 decimals as A6 says: 0.123.
    let by_hand = r#"{ "retry": { "max_attempts": 3, "retry_on": ["rejected", "error"],
        "backoff": { "base": "1ms", "multiplier": 1, "cap": "1ms", "jitter": "full" } },
        "budget": { "token_bucket": { "max_tokens": 100, "token_ratio": 0.123 } } }"#;
    let imported = r#"{ "grpc_service_config": { "file": "configs/sc.json", "service": "shop.Cart", "method": "Get" } }"#;
    for q in [0.06, 0.15] {
        let dir = tempfile::tempdir().unwrap();
        let a = load(dir.path(), CONFIG, &scenario(q, imported)).unwrap();
        let b = load_str(&scenario(q, by_hand), "test", &LoadOptions::default()).unwrap();
        let ra = retrystorm::runner::run(&a, 0, &|| {});
        let rb = retrystorm::runner::run(&b, 0, &|| {});
        let (va, vb) = (variant(&ra, "baseline"), variant(&rb, "baseline"));
        let json = |v: &VariantResult| serde_json::to_string(&v.metrics).unwrap();
        assert_eq!(json(va), json(vb), "q = {q}");
        // The threshold r/(1+r) = 0.123/1.123 = 0.1095: q = 0.06 lies below it (no retry
        // denied), q = 0.15 above (no retry in the last 10 s).
        if q < 0.1 {
            assert_eq!(metric(va, "budget_denials").0, 0.0);
        } else {
            let first = (10_000.0 / va.bucket.as_millis_f64()).round() as usize;
            let late: f64 = va.series[first..]
                .iter()
                .map(|row| row[Column::Retries as usize])
                .sum();
            assert_eq!(late, 0.0, "retries after the first burst");
        }
    }
}

#[test]
fn max_attempts_above_five_is_read_as_five_and_the_method_is_looked_up_as_grpc_does() {
    // Exact method: Checkout's own entry, maxAttempts 7 capped at 5, its 2 s timeout the
    // whole call's deadline, RESOURCE_EXHAUSTED (8) `throttled`.
    let p = policy_of("shop.Cart", "Checkout", "");
    assert_eq!(p.retry.max_attempts, Some(5));
    assert_eq!(p.deadline, Some(SimDuration::from_secs(2)));
    assert!(p.retry.retry_on.contains(Outcome::Throttled));
    let words = p.read_from.unwrap();
    assert!(words.contains("capped from 7"), "{words}");
    assert!(words.contains("its own methodConfig"), "{words}");
    // Another method of the service: the service-wide entry, 3 attempts, no deadline.
    let p = policy_of("shop.Cart", "Get", "");
    assert_eq!(p.retry.max_attempts, Some(3));
    assert_eq!(p.deadline, None);
    assert!(!p.retry.retry_on.contains(Outcome::Throttled));
    assert!(p.read_from.unwrap().contains("the service's methodConfig"));
    // Another service: the default entry, which has no retryPolicy: one attempt.
    let p = policy_of("shop.Other", "Get", "");
    assert_eq!(p.retry.max_attempts, Some(1));
    assert!(p.read_from.unwrap().contains("the default methodConfig"));
    // Settings written beside the config win over it, key by key.
    let p = policy_of(
        "shop.Cart",
        "Checkout",
        r#""retry": { "max_attempts": 2 }, "#,
    );
    assert_eq!(p.retry.max_attempts, Some(2));
    assert!(p.retry.retry_on.contains(Outcome::Throttled), "the file's");
    let budget = p.budget.unwrap();
    assert!(format!("{budget:?}").contains("0.123"), "{budget:?}");
}

/// A scenario naming configs/sc.json, whose text is `config`, run by the binary: exit code 2,
/// no output folder; returns stderr.
fn reject(config: Option<&str>) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("configs")).unwrap();
    if let Some(config) = config {
        std::fs::write(dir.path().join("configs/sc.json"), config).unwrap();
    }
    let policy =
        r#"{ "grpc_service_config": { "file": "configs/sc.json", "service": "shop.Cart" } }"#;
    std::fs::write(dir.path().join("scenario.json"), scenario(0.1, policy)).unwrap();
    let out = retrystorm(dir.path(), &["run", "scenario.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!dir.path().join("output").exists(), "nothing is written");
    stderr
}

/// A config whose only methodConfig, for shop.Cart, has `retry` as its retryPolicy.
fn with_retry(retry: &str) -> String {
    format!(
        r#"{{ "methodConfig": [{{ "name": [{{ "service": "shop.Cart" }}], "retryPolicy": {retry} }}] }}"#
    )
}

#[test]
fn a_wrong_config_names_the_scenario_path_the_file_the_path_inside_the_rule_and_the_fix() {
    let good = r#""initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#;
    let cases: Vec<(Option<String>, Vec<&str>)> = vec![
        (None, vec!["cannot read", "sc.json"]),
        (Some("{ \"methodConfig\": [".into()), vec!["is not valid JSON"]),
        (
            Some(with_retry(&format!(r#"{{ "maxAttempts": 3, "jitter": 1, {good} }}"#))),
            vec!["methodConfig[0].retryPolicy", "unknown field `jitter`"],
        ),
        (
            Some(with_retry(&format!(r#"{{ "maxAttempts": 1, {good} }}"#))),
            vec!["methodConfig[0].retryPolicy.maxAttempts", "is 1", "2 or more", "write 2 to 5"],
        ),
        (
            Some(with_retry(r#"{ "maxAttempts": 3, "initialBackoff": "100ms", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] }"#)),
            vec!["methodConfig[0].retryPolicy.initialBackoff", "\"100ms\"", "protobuf JSON duration"],
        ),
        (
            Some(with_retry(r#"{ "maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILBLE"] }"#)),
            vec!["retryableStatusCodes[0]", "not a gRPC status code"],
        ),
        (
            Some(with_retry(r#"{ "maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2 }"#)),
            vec!["has no retryableStatusCodes", "gRFC A6 requires"],
        ),
        (
            Some(r#"{ "retryThrottling": { "maxTokens": 1001, "tokenRatio": 0.1 } }"#.into()),
            vec!["retryThrottling.maxTokens", "is 1001", "at most 1000"],
        ),
        (
            Some(r#"{ "methodConfig": [{ "name": [{ "service": "shop.Cart" }], "retryPolicy": { "maxAttempts": 3 }, "hedgingPolicy": { "maxAttempts": 2 } }] }"#.into()),
            vec!["methodConfig[0]", "both retryPolicy and hedgingPolicy"],
        ),
        (
            Some(r#"{ "methodConfig": [{ "name": [{ "service": "shop.Cart" }] }, { "name": [{ "service": "shop.Cart" }] }] }"#.into()),
            vec!["methodConfig[1].name[0]", "duplicate"],
        ),
    ];
    for (config, needles) in cases {
        let stderr = reject(config.as_deref());
        for needle in ["policy.grpc_service_config.file", "\"configs/sc.json\""]
            .iter()
            .chain(&needles)
        {
            assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
        }
    }
}

#[test]
fn a_config_that_is_no_regular_file_is_refused_at_once() {
    // The loader is fuzzed: a scenario naming a device, a folder or a missing file gets a
    // problem, never a read that does not end.
    for file in ["/dev/zero", "/dev/stdin", "/", "/nonexistent/x.json"] {
        let policy =
            format!(r#"{{ "grpc_service_config": {{ "file": "{file}", "service": "s" }} }}"#);
        let err = load_str(&scenario(0.1, &policy), "fuzz", &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("policy.grpc_service_config.file"), "{err}");
    }
}

#[test]
fn the_bundled_scenario_reads_its_config() {
    let e = load_file(
        &crate::scenario_path("grpc-throttling"),
        &LoadOptions::default(),
    )
    .unwrap();
    let p = &e.points[0].variants[0].scenario.policy;
    assert_eq!(p.retry.max_attempts, Some(3));
    assert!(p.budget.is_some());
    assert!(
        p.read_from
            .as_ref()
            .unwrap()
            .contains("configs/grpc-service-config.json")
    );
    // The variant without throttling drops the config's budget, keeping its retries.
    let p = &e.points[0].variants[1].scenario.policy;
    assert!(p.budget.is_none());
    assert_eq!(p.retry.max_attempts, Some(3));
}

/// A service config whose shop.Search methods hedge: 3 attempts in all (2 hedges), one every
/// 5 ms, UNAVAILABLE non-fatal.
const HEDGING: &str = r#"{
  "methodConfig": [
    { "name": [{ "service": "shop.Search" }],
      "hedgingPolicy": { "maxAttempts": 3, "hedgingDelay": "0.005s",
                         "nonFatalStatusCodes": ["UNAVAILABLE"] } }
  ]
}"#;

/// Two clients, 400 requests/s in all, against 4 workers of 2 ms exponential service that
/// fail a share 0.05 of attempts: enough slow answers for hedges to go out.
fn hedging_scenario(policy: &str) -> String {
    format!(
        r#"{{
  "name": "hedge", "seed": 5, "replications": 2, "duration": "10s",
  "clients": {{ "count": 2, "workload": {{ "open": {{ "rate_per_s": 400 }} }} }},
  "network": {{ "latency": {{ "constant": "1ms" }} }},
  "server": {{ "concurrency": 4, "service_time": {{ "exponential": {{ "mean": "2ms" }} }}, "error_rate": 0.05 }},
  "policy": {policy}
}}"#
    )
}

#[test]
fn a_hedging_policy_read_from_a_config_runs_as_the_same_hedge_written_by_hand() {
    // A6: maxAttempts 3 is the first attempt and 2 hedges, hedgingDelay 0.005s between them,
    // no retries (hedging or retry, not both); UNAVAILABLE non-fatal is `rejected` and
    // `error` (docs/format.md section 7's table).
    let by_hand = r#"{ "retry": { "max_attempts": 1, "retry_on": ["error", "rejected"] },
        "hedge": { "delay": "5ms", "max_hedges": 2 } }"#;
    let imported = r#"{ "grpc_service_config": { "file": "configs/sc.json", "service": "shop.Search", "method": "Find" } }"#;
    let dir = tempfile::tempdir().unwrap();
    let a = load(dir.path(), HEDGING, &hedging_scenario(imported)).unwrap();
    let b = load_str(&hedging_scenario(by_hand), "test", &LoadOptions::default()).unwrap();
    let p = &a.points[0].variants[0].scenario.policy;
    let words = p.read_from.clone().unwrap();
    assert!(
        words.contains("hedged: 3 attempts, one every 0.005s, no retries"),
        "{words}"
    );
    let ra = retrystorm::runner::run(&a, 0, &|| {});
    let rb = retrystorm::runner::run(&b, 0, &|| {});
    let (va, vb) = (variant(&ra, "baseline"), variant(&rb, "baseline"));
    assert!(metric(va, "hedges").0 > 0.0, "hedges go out");
    let json = |v: &VariantResult| serde_json::to_string(&v.metrics).unwrap();
    assert_eq!(json(va), json(vb));
}

#[test]
fn a_hedging_policy_retrystorm_cannot_run_is_refused() {
    let hedging = |policy: &str| {
        format!(
            r#"{{ "methodConfig": [{{ "name": [{{ "service": "shop.Cart" }}], "hedgingPolicy": {policy} }}] }}"#
        )
    };
    let cases = [
        (
            hedging(r#"{ "maxAttempts": 3, "nonFatalStatusCodes": ["UNAVAILABLE"] }"#),
            vec![
                "methodConfig[0].hedgingPolicy.hedgingDelay",
                "0s",
                "a delay above 0",
            ],
        ),
        (
            hedging(
                r#"{ "maxAttempts": 1, "hedgingDelay": "0.01s", "nonFatalStatusCodes": ["UNAVAILABLE"] }"#,
            ),
            vec![
                "methodConfig[0].hedgingPolicy.maxAttempts",
                "is 1",
                "2 or more",
            ],
        ),
        (
            hedging(r#"{ "maxAttempts": 2, "hedgingDelay": "0.01s", "nonFatalStatusCodes": [] }"#),
            vec![
                "methodConfig[0].hedgingPolicy.nonFatalStatusCodes",
                "non-empty",
            ],
        ),
        (
            hedging(
                r#"{ "maxAttempts": 2, "hedgingDelay": "0.01s", "nonFatalStatusCodes": ["UNAVAILABLE"], "hedgingCap": 1 }"#,
            ),
            vec![
                "methodConfig[0].hedgingPolicy",
                "unknown field `hedgingCap`",
            ],
        ),
    ];
    for (config, needles) in cases {
        let stderr = reject(Some(&config));
        for needle in ["policy.grpc_service_config.file", "\"configs/sc.json\""]
            .iter()
            .chain(&needles)
        {
            assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
        }
    }
}
