//! Client-side adaptive throttling (Google's SRE book, "Handling Overload"): against a backend
//! whose rate limit accepts a fixed rate, offered four times that rate, the attempts that
//! reach it settle at about K times what it accepts (docs/reference-results.md, "Adaptive
//! throttling"); a call between services throttles as its caller's client; a local rejection
//! ends the request, is never retried and never reaches the server.

use retrystorm::metrics::Column;
use retrystorm::metrics::VariantResult;

use retrystorm::scenario::LoadOptions;

use crate::{metric, run_bundled, run_text, variant};

/// (attempts that reached the server, attempts it accepted) summed over the buckets that
/// start at or after `from_s`, from a variant's mean time series. Accepted: every answer but
/// `rejected`, `throttled` and a timeout.
fn after_warm_up(v: &VariantResult, from_s: f64) -> (f64, f64) {
    let width = v.bucket.as_nanos() as f64 / 1e9;
    let mut sums = (0.0, 0.0);
    for (i, row) in v.series.iter().enumerate() {
        if i as f64 * width < from_s {
            continue;
        }
        sums.0 += row[Column::Attempts as usize];
        sums.1 += row[Column::AttemptSuccess as usize]
            + row[Column::AttemptError as usize]
            + row[Column::AttemptConflict as usize]
            + row[Column::AttemptPermanent as usize];
    }
    sums
}

#[test]
fn attempts_settle_at_k_times_the_accepts_of_a_rate_limited_backend() {
    // The bundled scenario: 400 requests/s offered to a rate limit of 100/s, 5 minutes,
    // 10 replications; measured after a one-minute warm-up.
    let (_, result) = run_bundled("adaptive-throttling", &LoadOptions::default());
    let none = variant(&result, "no throttling");
    let (sent, accepted) = after_warm_up(none, 60.0);
    // Without throttling every request and its retries go out: far beyond 2x.
    assert!(sent / accepted > 8.0, "no throttling: {sent} / {accepted}");
    assert!(metric(none, "failed.throttled").0 > 0.0);
    for (name, k) in [("adaptive K=2", 2.0), ("adaptive K=1.1", 1.1)] {
        let v = variant(&result, name);
        let (sent, accepted) = after_warm_up(v, 60.0);
        let ratio = sent / accepted;
        eprintln!(
            "{name}: {sent:.0} attempts reached the backend, {accepted:.0} accepted: {ratio:.4} x"
        );
        assert!(
            (ratio / k - 1.0).abs() < 0.10,
            "{name}: attempts / accepts = {ratio:.3}, expected {k} within 10 %"
        );
        // The backend still accepts what its rate limit allows: 100/s, less what a
        // sending rate of K x 100/s leaves unused of the bucket (the limit's tokens go
        // unused only when no attempt arrives for them).
        let per_s = accepted / 240.0;
        assert!((90.0..=101.0).contains(&per_s), "{name}: {per_s} accepts/s");
        // Every local rejection ends a request, and nothing the throttle rejects is retried.
        let (local, half) = metric(v, "failed.throttled_locally");
        assert!(local > 0.0 && half > 0.0, "{name}: {local} ± {half}");
        let (requests, _) = metric(v, "requests");
        let (succeeded, _) = metric(v, "succeeded");
        let (failed, _) = metric(v, "failed.throttled");
        assert!(
            (requests - succeeded - failed - local).abs() < 1e-3 * requests,
            "{name}: every request ends succeeded, throttled or throttled_locally"
        );
    }
    // The optional count is absent where no variant throttles.
    let doc = serde_json::to_value(&none.metrics).unwrap();
    assert!(doc["failed"].get("throttled_locally").is_none());
}

#[test]
fn a_call_between_services_throttles_and_counts_its_local_rejections() {
    // The entry calls a rate-limited backend at four times its rate, without retries.
    let (_, result) = run_text(
        r#"{"name": "t", "seed": 3, "replications": 4, "duration": "60s",
            "clients": {"count": 4, "workload": {"open": {"rate_per_s": 200}}, "entry": "api"},
            "services": {
              "api": {"concurrency": "unlimited", "service_time": {"constant": "1ms"},
                      "calls": [{"to": "db", "policy": {"retry": {"max_attempts": 1},
                                 "adaptive_throttle": {"k": 2, "window": "10s"}}}]},
              "db": {"concurrency": "unlimited", "service_time": {"constant": "1ms"},
                     "rate_limit": {"rate_per_s": 50, "burst": 5}}},
            "policy": {"retry": {"max_attempts": 1}}}"#,
    );
    let v = &result.points[0].variants[0];
    let call = &v.metrics.calls[0];
    let db = &v.metrics.services[1];
    // 200/s offered to 50/s: about 100/s reach the db, the rest are rejected at the api.
    let per_s = db.attempts / 60.0;
    assert!(
        (90.0..=110.0).contains(&per_s),
        "{per_s} attempts/s at the db"
    );
    assert!(call.throttled_locally > 100.0 * 60.0 * 0.8, "{call:?}");
    assert_eq!(call.attempts, db.attempts);
    assert!((call.calls - call.attempts - call.throttled_locally).abs() < 1.0);
    // Each request makes one call, and fails when its call fails: the api answers a call
    // its throttle rejected with `throttled_locally`, as it answers a breaker's refusal with
    // `breaker_open`, and the clients (without a throttle or retries) end the request so.
    let failed = metric(v, "requests").0 * metric(v, "failure_rate").0;
    assert!(
        (failed - call.failed).abs() < 1.0,
        "{failed} against {}",
        call.failed
    );
    let (local, _) = metric(v, "failed.throttled_locally");
    assert!((local - call.throttled_locally).abs() < 1.0, "{local}");
    let doc = serde_json::to_value(&v.metrics).unwrap();
    assert!(doc["calls"][0]["throttled_locally"].as_f64().unwrap() > 0.0);
}
