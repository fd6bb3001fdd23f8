//! gRPC retry throttling (the `token_bucket` budget, docs/reference-results.md section 16):
//! with token ratio r, retries stop for good once the share of attempts that fail exceeds
//! r / (1 + r), whatever `max_tokens`; below it they never stop. `max_tokens` sets only how
//! long the first burst of retries lasts.
//!
//! Derivation. Each attempt that fails takes a token and each success adds r, so with
//! independent errors of probability q the bucket moves by d = (1 - q) r - q per attempt on
//! average, whatever share of the attempts are retries: it rises when q < r / (1 + r) and
//! falls when q > r / (1 + r). Below the threshold it stays near full, every retry is
//! allowed, and a request makes q + q^2 retries on average with 3 attempts. Above it, it
//! falls from t to t/2 in about (t/2) / |d| attempts (Wald), retries going out meanwhile
//! after the failures of first and second attempts, and then keeps falling to 0, where it
//! stays: climbing back over t/2 is a rise of t/2 against the drift, with probability about
//! exp(-2 |d| (t/2) / s^2) (s^2 the variance of a step), under 1e-10 here.

use retrystorm::metrics::{Column, ExperimentResult, VariantResult};

use crate::{metric, run_text, variant};

/// One client channel (a shared bucket), 1000 requests/s for 60 s against a server that
/// answers `error` with probability `q` after 1 ms, 3 attempts retried at once; a variant per
/// (name, max_tokens, token_ratio).
fn run(q: f64, variants: &[(&str, f64, f64)]) -> ExperimentResult {
    let variants: Vec<String> = variants
        .iter()
        .map(|(name, t, r)| {
            format!(
                r#"{{ "name": "{name}", "patch": {{ "policy": {{ "budget": {{ "scope": "shared", "token_bucket": {{ "max_tokens": {t}, "token_ratio": {r} }} }} }} }} }}"#
            )
        })
        .collect();
    let text = format!(
        r#"{{
  "name": "retry-throttling", "seed": 16, "replications": 20, "duration": "60s",
  "clients": {{ "count": 1, "workload": {{ "open": {{ "rate_per_s": 1000 }} }} }},
  "network": {{ "latency": {{ "constant": "0ms" }} }},
  "server": {{ "concurrency": "unlimited", "service_time": {{ "constant": "1ms" }}, "error_rate": {q} }},
  "policy": {{ "retry": {{ "max_attempts": 3, "backoff": {{ "base": "0ms", "cap": "0ms", "jitter": "none" }} }} }},
  "variants": [{}]
}}"#,
        variants.join(", ")
    );
    run_text(&text).1
}

/// Retries sent from `from_s` seconds on, as a mean over replications.
fn retries_from(v: &VariantResult, from_s: u64) -> f64 {
    let first = (from_s as f64 * 1000.0 / v.bucket.as_millis_f64()).round() as usize;
    v.series[first..]
        .iter()
        .map(|row| row[Column::Retries as usize])
        .sum()
}

#[test]
fn below_the_threshold_every_retry_is_allowed() {
    // r = 0.1: threshold 1/11 = 0.0909; q = 0.06 lies below it. r = 0.25: threshold 0.2;
    // q = 0.06 lies below it too.
    let q: f64 = 0.06;
    let result = run(q, &[("r 0.1", 100.0, 0.1), ("r 0.25", 100.0, 0.25)]);
    for name in ["r 0.1", "r 0.25"] {
        let v = variant(&result, name);
        assert_eq!(metric(v, "budget_denials").0, 0.0, "{name} denied retries");
        // Retries per request: q + q^2, the requests' count being Poisson(60 000) a
        // replication; the mean over 20 replications has a standard error under 0.3 %.
        let per_request = metric(v, "retries").0 / metric(v, "requests").0;
        let expected = q + q * q;
        assert!(
            (per_request - expected).abs() < 0.015 * expected,
            "{name}: {per_request} retries a request, expected {expected}"
        );
    }
}

#[test]
fn above_the_threshold_retries_stop_whatever_the_bucket_size() {
    // r = 0.1: q = 0.12 lies above 1/11. The bucket falls by d = 0.12 - 0.88 * 0.1 = 0.032 a
    // attempt: from 100 tokens to 50 in about 1 560 attempts (1.6 s), from 1000 to 500 in
    // about 15 600 (15.6 s); after 30 s no retry goes out with either.
    let q: f64 = 0.12;
    let r = 0.1;
    let result = run(q, &[("t 100", 100.0, r), ("t 1000", 1000.0, r)]);
    let d = q - (1.0 - q) * r;
    // s^2: a step is -1 with probability q and +r otherwise.
    let s2 = q + (1.0 - q) * r * r - d * d;
    // A retry follows a failure of a first or second attempt: of the failures in the burst,
    // (q + q^2) / (q + q^2 + q^3) are.
    let retried = (q + q * q) / (q + q * q + q * q * q);
    for (name, t) in [("t 100", 100.0_f64), ("t 1000", 1000.0)] {
        let v = variant(&result, name);
        assert_eq!(retries_from(v, 30), 0.0, "{name}: retries after the burst");
        // The burst: q failures an attempt over the (t/2)/d attempts until half full, with
        // Var(N) = s^2 (t/2) / d^3 for the first passage of a walk with drift d; the mean
        // of 20 replications is held to 3 of its standard errors (and 2 % for the
        // overshoot and the attempts in flight the continuous form leaves out).
        let attempts = t / 2.0 / d;
        let expected = q * attempts * retried;
        let sd = q * (s2 * t / 2.0 / d.powi(3)).sqrt() * retried / 20f64.sqrt();
        let simulated = metric(v, "retries").0;
        assert!(
            (simulated - expected).abs() < 3.0 * sd + 0.02 * expected,
            "{name}: {simulated} retries in the burst, expected {expected} ± {}",
            3.0 * sd
        );
    }
}

#[test]
fn the_threshold_moves_with_the_token_ratio() {
    // q = 0.15 lies above 1/11 (r = 0.1) and below 1/5 (r = 0.25): the same failures stop
    // the retries of one bucket and never those of the other.
    let q: f64 = 0.15;
    let result = run(q, &[("r 0.1", 100.0, 0.1), ("r 0.25", 100.0, 0.25)]);
    let stopped = variant(&result, "r 0.1");
    let going = variant(&result, "r 0.25");
    assert_eq!(retries_from(stopped, 30), 0.0);
    assert_eq!(metric(going, "budget_denials").0, 0.0);
    // Unthrottled, the last 30 s carry half the run's q + q^2 retries a request.
    let expected = 30_000.0 * (q + q * q);
    let late = retries_from(going, 30);
    assert!(
        (late - expected).abs() < 0.015 * expected,
        "{late} retries in the last 30 s, expected {expected}"
    );
}
