//! Memory follows what is in flight: neither the client count nor the number of replications
//! sets what a run holds.

use crate::run_text;

/// Regression: a budget and a breaker were allocated for every client up front, so
/// 4,294,967,295 clients asked for hundreds of gigabytes and aborted, even at a trickle of
/// requests. Only the clients that start a request have one now: this run is about a hundred
/// requests.
#[test]
fn the_largest_client_count_runs_at_a_low_rate() {
    let (_, result) = run_text(
        r#"{
      "name": "many-clients", "duration": "10s", "replications": 2,
      "clients": {"count": 4294967295, "workload": {"open": {"rate_per_s": 10}}},
      "server": {"concurrency": 1, "error_rate": 0.5, "service_time": {"constant": "1ms"}},
      "policy": {"timeout": "100ms", "retry": {"max_attempts": 3, "retry_on": ["error"]},
        "budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}},
        "breaker": {"failure_rate_threshold": 0.5, "window": {"count": 4}, "minimum_calls": 2,
                    "open_duration": "1s"}},
      "metrics": {"bucket": "1s"}
    }"#,
    );
    let v = &result.points[0].variants[0];
    assert!(v.metrics.requests > 50.0 && v.metrics.requests < 200.0);
    assert!(v.metrics.retries > 0.0);
    assert!(v.metrics.breaker.refusals > 0.0, "the touched breakers act");
    assert!(!v.is_truncated());
}
