//! Steps the driver settles ahead of their events change no statistic.
//!
//! On an `occ` row called through passive policies with no timer, the driver skips the
//! events nothing can interfere with: the read (the write carries its instant) and, after a
//! conflict, the answer, the backoff and the retry's departure (settled at the write that
//! conflicted, counted for the instants they happen at). On any single service called
//! through passive policies, an answer the policy retries and that arrives before the
//! attempt's timer needs no event either, nor does its retry's departure (its hop is drawn at
//! the answer). The evented runs add a deadline far beyond the run (a timer on every attempt:
//! the read becomes an event) and a token bucket that never denies (the policies then watch
//! outcomes: every answer and every departure is an event). The runs must agree within their
//! sampling error.

use retrystorm::metrics::{ExperimentResult, VariantResult};
use serde_json::Value;

use crate::{metric, run_text, scenario_path};

/// A token bucket per client of a billion tokens: it never denies a retry, but it makes the
/// policies watch outcomes, so the driver settles nothing.
const NEVER_DENIES: &str = r#"{"token_bucket": {"max_tokens": 1000000000, "token_ratio": 1}}"#;

/// The bundled AWS experiment at `clients` clients, `replications` replications, with the
/// policy's deadline set to `deadline` and a budget that never denies (the evented path), or
/// neither.
fn aws(clients: u64, replications: u64, deadline: Option<&str>) -> ExperimentResult {
    let text = std::fs::read_to_string(scenario_path("aws-backoff-jitter")).expect("bundled");
    let mut doc: Value = serde_json::from_str(&text).expect("bundled JSON");
    doc.as_object_mut().expect("object").remove("sweep");
    doc["clients"]["count"] = clients.into();
    doc["replications"] = replications.into();
    doc["seed"] = 7.into();
    if let Some(d) = deadline {
        doc["policy"]["deadline"] = d.into();
        doc["policy"]["budget"] = serde_json::from_str::<Value>(NEVER_DENIES).expect("JSON");
    }
    run_text(&doc.to_string()).1
}

/// Compares the settled run with the evented one: the settled run handled fewer than
/// `at_most` times the events (the two took different paths), and every metric `paths` names
/// for a variant agrees within sampling error. |z| < 4 holds for each comparison of equal
/// values with probability 1 - 2e-3 (about 30 comparisons per test). Returns the largest |z|
/// with what it was.
fn assert_same_statistics(
    settled: &ExperimentResult,
    evented: &ExperimentResult,
    at_most: f64,
    paths: impl Fn(&VariantResult) -> Vec<&'static str>,
) {
    assert!(
        (settled.events as f64) < at_most * evented.events as f64,
        "settled run: {} events, evented run: {}",
        settled.events,
        evented.events
    );
    let mut worst = (0.0f64, String::new());
    let pairs = settled.points[0]
        .variants
        .iter()
        .zip(&evented.points[0].variants);
    for (a, b) in pairs {
        assert_eq!(a.name, b.name);
        for path in paths(a) {
            let (ma, ha) = metric(a, path);
            let (mb, hb) = metric(b, path);
            // Half-widths of 95 % intervals to standard errors.
            let se = ((ha / 1.96).powi(2) + (hb / 1.96).powi(2)).sqrt();
            // No spread: the value is the same in every replication (every client succeeds).
            let z = match (se > 0.0, ma == mb) {
                (true, _) => (ma - mb).abs() / se,
                (false, true) => 0.0,
                (false, false) => f64::INFINITY,
            };
            if z > worst.0 {
                worst = (z, format!("{} {path}: {ma} ± {ha} vs {mb} ± {hb}", a.name));
            }
        }
    }
    assert!(worst.0 < 4.0, "z = {:.2}: {}", worst.0, worst.1);
    println!("largest difference: z = {:.2}: {}", worst.0, worst.1);
}

#[test]
fn settling_conflicts_at_the_write_changes_no_statistic() {
    let settled = aws(60, 400, None);
    let evented = aws(60, 400, Some("1h"));
    assert_same_statistics(&settled, &evented, 0.4, |v| {
        let mut paths = vec![
            "attempts",
            "retries",
            "makespan_ms",
            "latency_ms.mean",
            "failed.conflict",
        ];
        // Without jitter, latencies bunch at the sums of the backoff's steps and the median
        // falls in a gap between two bunches (about 11.1 s and 13.1 s at 60 clients): a
        // shift of its cumulative share by 0.002 moves it by 2 s, far beyond its interval.
        // The median is compared where the distribution is continuous. Not the p99: its
        // interval, from 400 replications of 60 requests, is narrower than its spread (three
        // seeds of the same path give 4.49-4.89 s for equal jitter against ± 0.07 s).
        if v.name != "exponential" {
            paths.push("latency_ms.p50");
        }
        paths
    });
}

/// A row contended by clients that give up after 4 attempts, make 5 requests each with a
/// think time between them, and send 5 % bad requests, under three backoffs: the settled
/// path (the default) against the evented one (a deadline far beyond the run and a budget
/// that never denies).
#[test]
fn settling_keeps_the_statistics_of_limited_repeated_and_bad_requests() {
    let scenario = |deadline: &str| {
        format!(
            r#"{{"name": "occ-mixed", "seed": 11, "replications": 300, "duration": "60s",
              "clients": {{"count": 30, "workload": {{"closed": {{"requests_per_client": 5,
                "think_time": {{"exponential": {{"mean": "20ms"}}}}}}}}}},
              "network": {{"latency": {{"exponential": {{"mean": "5ms"}}}}}},
              "server": {{"kind": "occ", "permanent_error_rate": 0.05}},
              "policy": {{ {deadline}
                "retry": {{"max_attempts": 4, "retry_on": ["conflict"],
                  "backoff": {{"base": "5ms", "multiplier": 2, "cap": "200ms", "jitter": "none"}}}}}},
              "variants": [
                {{"name": "no backoff", "patch": {{"policy": {{"retry": {{"backoff": "none"}}}}}}}},
                {{"name": "exponential", "patch": {{}}}},
                {{"name": "full jitter", "patch": {{"policy": {{"retry": {{"backoff": {{"jitter": "full"}}}}}}}}}}
              ]}}"#
        )
    };
    let settled = run_text(&scenario("")).1;
    let evented = run_text(&scenario(&format!(
        r#""deadline": "1h", "budget": {NEVER_DENIES},"#
    )))
    .1;
    for v in &settled.points[0].variants {
        // Some requests exhaust their attempts: the answer that ends them is an event.
        assert!(metric(v, "failed.conflict").0 > 0.5, "{}", v.name);
    }
    assert_same_statistics(&settled, &evented, 0.7, |_| {
        vec![
            "attempts",
            "retries",
            "success_rate",
            "failed.conflict",
            "failed.permanent",
            "latency_ms.mean",
            "makespan_ms",
        ]
    });
}

/// A queue server at offered load 1.1 with a short queue, errors and attempt timeouts that
/// fire: rejected and failed attempts whose answer comes back before their timer are settled
/// where the server answers, and their retries sent from there for the instant their backoff
/// ends; the answers after a timer, the timeouts, the successes and the
/// attempts a deadline or `max_attempts` ends take their events. The evented run has a
/// token bucket of a billion tokens per client, which never denies a retry.
#[test]
fn settling_answers_of_a_queue_server_changes_no_statistic() {
    let scenario = |budget: &str| {
        format!(
            r#"{{"name": "queue", "seed": 5, "replications": 200, "duration": "10s",
              "clients": {{"count": 50, "workload": {{"open": {{"rate_per_s": 110}}}}}},
              "network": {{"latency": {{"exponential": {{"mean": "2ms"}}}}}},
              "server": {{"concurrency": 1, "queue_limit": 6, "error_rate": 0.3,
                "service_time": {{"exponential": {{"mean": "10ms"}}}}}},
              "policy": {{ {budget} "timeout": "35ms",
                "retry": {{"max_attempts": 4,
                  "backoff": {{"base": "5ms", "multiplier": 2, "cap": "200ms", "jitter": "full"}}}}}},
              "variants": [
                {{"name": "timeout", "patch": {{}}}},
                {{"name": "no timeout", "patch": {{"policy": {{"timeout": null}}}}}},
                {{"name": "deadline", "patch": {{"policy": {{"deadline": "120ms"}}}}}},
                {{"name": "no backoff", "patch": {{"policy": {{"retry": {{"backoff": "none"}}}}}}}}
              ]}}"#
        )
    };
    let settled = run_text(&scenario("")).1;
    let evented = run_text(&scenario(&format!(r#""budget": {NEVER_DENIES},"#))).1;
    for v in &settled.points[0].variants {
        assert!(metric(v, "failed.rejected").0 > 1.0, "{}", v.name);
    }
    for v in &evented.points[0].variants {
        assert!(metric(v, "budget_denials").0 == 0.0, "{}", v.name);
    }
    assert!(metric(&settled.points[0].variants[0], "timeouts").0 > 10.0);
    assert!(metric(&settled.points[0].variants[2], "failed.deadline_exceeded").0 > 1.0);
    assert_same_statistics(&settled, &evented, 0.9, |_| {
        vec![
            "attempts",
            "retries",
            "success_rate",
            "failed.rejected",
            "failed.error",
            "failed.timeout",
            "failed.deadline_exceeded",
            "timeouts",
            "late_replies",
            "latency_ms.mean",
            "latency_ms.p99",
            "server.rejected",
            "server.wasted",
            "makespan_ms",
        ]
    });
}
