//! Results that hang on one nanosecond or one worker: the rate limit's bucket counts in
//! integers, and utilization is measured against the workers actually in force.

use crate::{metric, run_text, variant};

/// A server of 2 workers whose fault window gives it 10 for the first 50 s, serving constant
/// 100 ms attempts at 5 per second: about half a worker busy, against 10 then 2 in force.
const RAISED: &str = r#"{
  "name": "raised-workers",
  "seed": 3,
  "duration": "100s",
  "clients": { "count": 5, "workload": { "open": { "rate_per_s": 5 } } },
  "network": { "latency": { "constant": "0s" } },
  "server": {
    "concurrency": 2,
    "service_time": { "constant": "100ms" },
    "faults": [ { "from": "0s", "to": "50s", "concurrency": 10 } ]
  },
  "policy": {},
  "variants": [ { "name": "raised", "patch": {} } ]
}"#;

#[test]
fn utilization_counts_the_workers_a_fault_window_adds() {
    let (_, result) = run_text(RAISED);
    let v = variant(&result, "raised");
    let served = metric(v, "server.served").0;
    let horizon_s = metric(v, "server.busy_until_ms").0 / 1000.0;
    assert!(
        horizon_s > 100.0,
        "the server drains after the last arrival"
    );
    // Busy worker-seconds over the worker-seconds in force: 10 workers for 50 s, then 2.
    let expected = served * 0.1 / (10.0 * 50.0 + 2.0 * (horizon_s - 50.0));
    let utilization = metric(v, "server.utilization").0;
    assert!(
        (utilization - expected).abs() < 1e-9,
        "utilization {utilization}, expected {expected} (measured against 2 workers it would be {})",
        served * 0.1 / (2.0 * horizon_s)
    );
    assert!((0.05..0.15).contains(&utilization), "{utilization}");
}

#[test]
fn a_token_due_at_the_nanosecond_an_attempt_arrives_admits_it() {
    // 5 tokens per second, a burst of 1. The first request takes the token at 0; the second
    // starts 16 ms later, is throttled, and retries 184 ms later, at 200 ms: exactly when the
    // next token is due. Counted in floating point, 16 + 184 ms of refill made
    // 0.9999999999999999 of a token and the retry was throttled too.
    let text = r#"{
      "name": "token-tie",
      "seed": 1,
      "duration": "10s",
      "clients": { "count": 1, "workload": { "closed": { "think_time": { "constant": "16ms" }, "requests_per_client": 2 } } },
      "network": { "latency": { "constant": "0s" } },
      "server": {
        "concurrency": 1,
        "service_time": { "constant": "0s" },
        "rate_limit": { "rate_per_s": 5, "burst": 1 }
      },
      "policy": { "retry": { "max_attempts": 2, "backoff": { "base": "184ms", "multiplier": 1, "cap": "184ms", "jitter": "none" } } },
      "variants": [ { "name": "tie", "patch": {} } ]
    }"#;
    let (_, result) = run_text(text);
    let v = variant(&result, "tie");
    assert_eq!(
        metric(v, "server.throttled").0,
        1.0,
        "only the second request's first attempt"
    );
    assert_eq!(metric(v, "success_rate").0, 1.0);
}
