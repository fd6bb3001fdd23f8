//! Steps the driver settles ahead of their events change no statistic.
//!
//! On an `occ` row called through passive policies with no timer, the driver skips the
//! events nothing can interfere with: the read (the write carries its instant) and, after a
//! conflict, the answer, the backoff and the retry's departure (settled at the write that
//! conflicted, counted for the instants they happen at). A deadline far beyond the run keeps
//! a timer on every attempt, which makes the driver take every step as an event; the two runs
//! must agree within their sampling error.

use retrystorm::runner::ExperimentResult;
use serde_json::Value;

use crate::{metric, run_text, scenario_path};

/// The bundled AWS experiment at `clients` clients, `replications` replications, with the
/// policy's deadline set to `deadline` (or none).
fn aws(clients: u64, replications: u64, deadline: Option<&str>) -> ExperimentResult {
    let text = std::fs::read_to_string(scenario_path("aws-backoff-jitter")).expect("bundled");
    let mut doc: Value = serde_json::from_str(&text).expect("bundled JSON");
    doc.as_object_mut().expect("object").remove("sweep");
    doc["clients"]["count"] = clients.into();
    doc["replications"] = replications.into();
    doc["seed"] = 7.into();
    if let Some(d) = deadline {
        doc["policy"]["deadline"] = d.into();
    }
    run_text(&doc.to_string()).1
}

#[test]
fn settling_conflicts_at_the_write_changes_no_statistic() {
    let settled = aws(60, 400, None);
    let events = aws(60, 400, Some("1h"));
    // The two runs took different paths: most of the steps were not events in the first.
    assert!(
        settled.events * 5 < events.events * 2,
        "settled run: {} events, evented run: {}",
        settled.events,
        events.events
    );
    let mut worst = (0.0f64, String::new());
    for (a, b) in settled.points[0]
        .variants
        .iter()
        .zip(&events.points[0].variants)
    {
        assert_eq!(a.name, b.name);
        // Without jitter, latencies bunch at the sums of the backoff's steps and the median
        // falls in a gap between two bunches (about 11.1 s and 13.1 s at 60 clients): a
        // shift of its cumulative share by 0.002 moves it by 2 s, far beyond its interval.
        // The median is compared where the distribution is continuous. Not the p99: its
        // interval, from 400 replications of 60 requests, is narrower than its spread (three
        // seeds of the same path give 4.49-4.89 s for equal jitter against ± 0.07 s).
        let quantiles: &[&str] = if a.name == "exponential" {
            &[]
        } else {
            &["latency_ms.p50"]
        };
        let means = [
            "attempts",
            "retries",
            "makespan_ms",
            "latency_ms.mean",
            "failed.conflict",
        ];
        for &path in means.iter().chain(quantiles) {
            let (ma, ha) = metric(a, path);
            let (mb, hb) = metric(b, path);
            // Half-widths of 95 % intervals to standard errors.
            let se = ((ha / 1.96).powi(2) + (hb / 1.96).powi(2)).sqrt();
            let z = if se == 0.0 {
                if ma == mb { 0.0 } else { f64::INFINITY }
            } else {
                (ma - mb).abs() / se
            };
            if z > worst.0 {
                worst = (z, format!("{} {path}: {ma} ± {ha} vs {mb} ± {hb}", a.name));
            }
        }
    }
    // 29 comparisons of equal values: |z| < 4 each holds with probability 1 - 2e-3.
    assert!(worst.0 < 4.0, "z = {:.2}: {}", worst.0, worst.1);
    println!("largest difference: z = {:.2}: {}", worst.0, worst.1);
}

/// A row contended by clients that give up after 4 attempts, make 5 requests each with a
/// think time between them, and send 5 % bad requests, under three backoffs: the settled
/// path (the default) against the evented one (a deadline far beyond the run).
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
    let events = run_text(&scenario(r#""deadline": "1h","#)).1;
    assert!(
        settled.events * 10 < events.events * 7,
        "settled run: {} events, evented run: {}",
        settled.events,
        events.events
    );
    let mut worst = (0.0f64, String::new());
    for (a, b) in settled.points[0]
        .variants
        .iter()
        .zip(&events.points[0].variants)
    {
        for path in [
            "attempts",
            "retries",
            "success_rate",
            "failed.conflict",
            "failed.permanent",
            "latency_ms.mean",
            "makespan_ms",
        ] {
            let (ma, ha) = metric(a, path);
            let (mb, hb) = metric(b, path);
            let se = ((ha / 1.96).powi(2) + (hb / 1.96).powi(2)).sqrt();
            assert!(se > 0.0, "{} {path}: no spread to compare by", a.name);
            let z = (ma - mb).abs() / se;
            if z > worst.0 {
                worst = (z, format!("{} {path}: {ma} ± {ha} vs {mb} ± {hb}", a.name));
            }
        }
        // Some requests exhaust their attempts: the answer that ends them is an event.
        assert!(metric(a, "failed.conflict").0 > 0.5, "{}", a.name);
    }
    // 21 comparisons of equal values: |z| < 4 each holds with probability 1 - 2e-3.
    assert!(worst.0 < 4.0, "z = {:.2}: {}", worst.0, worst.1);
    println!("largest difference: z = {:.2}: {}", worst.0, worst.1);
}
