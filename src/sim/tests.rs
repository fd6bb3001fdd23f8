//! Unit tests of the driver.

use super::*;
use crate::engine::SimDuration;

/// Whatever bounds the scenario loader puts on durations: an instant past the end of
/// simulated time ends the run truncated, never as an event at "never".
#[test]
fn an_instant_past_the_end_of_time_truncates_the_run() {
    let text = r#"{"name": "t", "duration": "1s",
      "clients": {"count": 1, "workload": {"closed": {"requests_per_client": 1}}},
      "server": {"concurrency": 1, "error_rate": 1, "service_time": {"constant": "1ms"}},
      "policy": {"retry": {"max_attempts": 5, "retry_on": ["error"]}}}"#;
    let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
    let mut sc = e.points[0].variants[0].scenario.clone();
    let year = SimDuration::from_secs(365 * 86_400);
    sc.policy.retry.backoff = crate::model::Backoff::Exponential {
        base: year,
        multiplier: 1000.0,
        cap: SimDuration(u64::MAX),
        jitter: crate::model::Jitter::None,
    };
    let r = run(&sc, 1, 0);
    // Retries after 1 and 1000 years: the second lies past the end.
    assert_eq!(r.counters.attempts, 2);
    assert!(matches!(
        r.truncated,
        Some(Truncation::EndOfTime { in_flight: 1, at }) if at.as_nanos() > year.as_nanos()
    ));
    assert_eq!(r.ended(), 0);
}

/// Per-client budgets and breakers kept for the clients that started a request only run
/// exactly like a vector of all of them: same counts, same outcomes, the same mean budget
/// level to within rounding (it is summed in another order).
#[test]
fn sparse_policy_instances_run_like_a_vector() {
    for budget in ["token_bucket", "retry_quota", "ratio"] {
        let kind = match budget {
            "token_bucket" => r#""token_bucket": {"max_tokens": 4, "token_ratio": 0.5}"#,
            "retry_quota" => r#""retry_quota": {"initial": 10, "retry_cost": 5}"#,
            _ => r#""ratio": {"percent": 0.1, "min_per_s": 1, "window": "1s"}"#,
        };
        let text = format!(
            r#"{{"name": "t", "duration": "20s",
          "clients": {{"count": 300, "workload": {{"open": {{"rate_per_s": 40}}}}}},
          "server": {{"concurrency": 1, "error_rate": 0.4, "service_time": {{"exponential": {{"mean": "20ms"}}}}}},
          "policy": {{"timeout": "50ms", "retry": {{"max_attempts": 4, "retry_on": ["error", "timeout"]}},
            "budget": {{{kind}}},
            "breaker": {{"failure_rate_threshold": 0.5, "window": {{"count": 4}}, "minimum_calls": 2, "open_duration": "500ms"}}}},
          "metrics": {{"bucket": "100ms"}}}}"#
        );
        let e = crate::scenario::load_str(&text, "t", &Default::default()).unwrap();
        let sc = &e.points[0].variants[0].scenario;
        let dense = run_with(sc, 1, 0, DENSE_INSTANCES);
        let sparse = run_with(sc, 1, 0, 0);
        assert!(
            dense.counters.breaker_refusals > 0,
            "{budget}: breakers act"
        );
        assert!(dense.counters.budget_denials > 0, "{budget}: budgets act");
        assert_eq!(dense.counters, sparse.counters, "{budget}");
        assert_eq!(dense.metrics(), sparse.metrics(), "{budget}");
        let level = Column::BudgetLevel as usize;
        for (d, s) in dense.series.rows().iter().zip(sparse.series.rows()) {
            assert!(d[level].abs_diff(s[level]) <= 1, "{budget}");
            let (mut d, mut s) = (*d, *s);
            d[level] = 0;
            s[level] = 0;
            assert_eq!(d, s, "{budget}");
        }
    }
}

#[test]
fn event_stays_small() {
    // The event queue moves events around constantly; keep them compact.
    assert!(std::mem::size_of::<Event>() <= 16);
}
