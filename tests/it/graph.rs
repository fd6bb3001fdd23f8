//! Call graphs against what they must show: retries at every layer multiply exactly, a
//! bulkhead keeps the requests routed to a healthy dependency succeeding while another
//! stalls, propagated deadlines cut the work nobody waits for, and a single server written
//! as a one-service graph is the same scenario.

use retrystorm::scenario::LoadOptions;

use crate::{metric, run_bundled, run_text, variant};

/// Clients -> a -> b -> c, each caller making up to `k` attempts without backoff; c fails
/// every attempt.
fn chain(k_top: u32, k_below: u32) -> String {
    let policy = |k: u32| format!(r#"{{"retry": {{"max_attempts": {k}, "backoff": "none"}}}}"#);
    format!(
        r#"{{"name": "chain", "duration": "10s", "replications": 2,
          "clients": {{"count": 5, "workload": {{"closed": {{"requests_per_client": 4}}}}, "entry": "a"}},
          "policy": {top},
          "services": {{
            "a": {{"concurrency": "unlimited", "service_time": {{"constant": "1ms"}}, "calls": [{{"to": "b", "policy": {below}}}]}},
            "b": {{"concurrency": "unlimited", "service_time": {{"constant": "1ms"}}, "calls": [{{"to": "c", "policy": {below}}}]}},
            "c": {{"concurrency": "unlimited", "service_time": {{"constant": "1ms"}}, "error_rate": 1}}
          }}}}"#,
        top = policy(k_top),
        below = policy(k_below),
    )
}

#[test]
fn three_layers_of_four_attempts_put_64_on_the_bottom_service() {
    let (_, r) = run_text(&chain(4, 4));
    let v = &r.points[0].variants[0];
    assert_eq!(v.metrics.requests, 20.0);
    let per_request: Vec<f64> = v.metrics.services.iter().map(|s| s.amplification).collect();
    assert_eq!(per_request, vec![4.0, 16.0, 64.0]);
    assert_eq!(v.metrics.services[2].attempts, 64.0 * 20.0);
    assert_eq!(v.metrics.success_rate, 0.0);
    let (_, r) = run_text(&chain(4, 1));
    let v = &r.points[0].variants[0];
    let per_request: Vec<f64> = v.metrics.services.iter().map(|s| s.amplification).collect();
    assert_eq!(per_request, vec![4.0, 4.0, 4.0], "retries at the top only");
}

#[test]
fn retries_at_every_layer_storm_where_retries_at_the_top_only_do_not() {
    let (_, r) = run_bundled("tiers-retry-amplification", &LoadOptions::default());
    let every = variant(&r, "retries at every layer");
    let top = variant(&r, "retries at the top only");
    let db = |v: &retrystorm::metrics::VariantResult| v.metrics.services[2];
    assert!(db(every).amplification > 10.0 * db(top).amplification / 2.0);
    assert!(db(top).amplification <= 4.0);
    assert!(db(every).rejected > 0.0 && db(top).rejected == 0.0);
    let (every_success, h1) = metric(every, "success_rate");
    let (top_success, h2) = metric(top, "success_rate");
    assert!(top_success - h2 > every_success + h1 + 0.3);
}

#[test]
fn a_bulkhead_keeps_requests_routed_to_the_healthy_dependency_succeeding() {
    let (_, r) = run_bundled("tiers-bulkhead", &LoadOptions::default());
    let route_to_b = |name: &str| {
        variant(&r, name).metrics.calls[0]
            .route_success_rate
            .expect("a -> b is a route of the entry")
    };
    assert!(
        route_to_b("no bulkhead") < 0.5,
        "{}",
        route_to_b("no bulkhead")
    );
    assert!(route_to_b("bulkhead on a -> c") >= 0.95);
    assert!(route_to_b("bulkhead and fallback on a -> c") >= 0.95);
    // The fallback answers the requests routed to c: degraded, not failed.
    let fallback = variant(&r, "bulkhead and fallback on a -> c");
    let bulkhead = variant(&r, "bulkhead on a -> c");
    assert!(fallback.metrics.degraded > 0.3 * fallback.metrics.requests);
    assert!(fallback.metrics.failure_rate < 0.05);
    assert!(bulkhead.metrics.failed.bulkhead_full > 0.0);
    assert!(bulkhead.metrics.calls[1].bulkhead_full > 0.0);
}

/// A budget and a breaker on the calls between services count at their call, in summary.json's
/// `calls`: each layer's policy can be traced to the layer that acted.
#[test]
fn budgets_and_breakers_on_calls_count_at_their_call() {
    let budget = r#"{"retry": {"max_attempts": 4, "backoff": "none"},
                     "budget": {"ratio": {"percent": 0.1, "window": "1s"}}}"#;
    let breaker = r#"{"retry": {"max_attempts": 4, "backoff": "none"},
                      "breaker": {"failure_rate_threshold": 0.5, "minimum_calls": 5, "open_duration": "1s"}}"#;
    // The policy on b -> c, the call whose every attempt fails; a -> b keeps the plain one.
    let on_b_to_c = |policy: &str| {
        let plain = r#"{"retry": {"max_attempts": 4, "backoff": "none"}}"#;
        let text = chain(1, 4);
        let at = text.rfind(plain).expect("b -> c's policy");
        let text = format!("{}{policy}{}", &text[..at], &text[at + plain.len()..]);
        let (_, r) = run_text(&text);
        r.points[0].variants[0].metrics.calls.clone()
    };
    let calls = on_b_to_c(budget);
    assert!(
        calls[1].budget_denials > 0.0,
        "b -> c's budget: {:?}",
        calls[1]
    );
    assert_eq!(calls[0].budget_denials, 0.0, "a -> b has no budget");
    assert_eq!(calls[1].breaker_refusals, 0.0, "b -> c has no breaker");
    let calls = on_b_to_c(breaker);
    assert!(
        calls[1].breaker_openings > 0.0,
        "b -> c's breaker: {:?}",
        calls[1]
    );
    assert!(calls[1].breaker_refusals > 0.0);
    assert_eq!(calls[0].breaker_openings, 0.0, "a -> b has no breaker");
    assert_eq!(calls[1].budget_denials, 0.0, "b -> c has no budget");
    let (_, plain) = run_text(&chain(1, 4));
    let calls = &plain.points[0].variants[0].metrics.calls;
    assert!(
        calls
            .iter()
            .all(|c| c.budget_denials == 0.0 && c.breaker_openings == 0.0)
    );
}

#[test]
fn propagated_deadlines_at_least_halve_the_wasted_work_at_the_bottom() {
    let (_, r) = run_bundled("tiers-cascading-slowdown", &LoadOptions::default());
    let wasted = |name: &str| variant(&r, name).metrics.services[2].wasted;
    let without = wasted("deadlines not passed down");
    let with = wasted("deadlines propagated");
    assert!(without > 1000.0);
    assert!(with <= without / 2.0, "{with} against {without}");
}

/// The bundled single-server scenarios written as one-service graphs load into the same
/// simulation and give the same numbers.
#[test]
fn a_single_server_written_as_one_service_is_the_same_scenario() {
    for name in ["first-storm", "retry-budget"] {
        let text = std::fs::read_to_string(crate::scenario_path(name)).unwrap();
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let server = doc.as_object_mut().unwrap().shift_remove("server").unwrap();
        doc["services"] = serde_json::json!({ "only": server });
        // Variant patches of `server` become patches of the service.
        if let Some(variants) = doc.get_mut("variants").and_then(|v| v.as_array_mut()) {
            for v in variants {
                let patch = v["patch"].as_object_mut().unwrap();
                if let Some(s) = patch.shift_remove("server") {
                    patch.insert("services".into(), serde_json::json!({ "only": s }));
                }
            }
        }
        let (_, a) = run_bundled(name, &LoadOptions::default());
        let (_, b) = run_text(&doc.to_string());
        for (x, y) in a.points[0].variants.iter().zip(&b.points[0].variants) {
            assert_eq!(x.metrics, y.metrics, "{name}: {}", x.name);
            assert_eq!(x.ci95, y.ci95, "{name}: {}", x.name);
        }
    }
}

/// A service's response time is from an attempt's arrival to its answer: with every time
/// constant and workers to spare, c answers in its 7 ms of service, b in its 3 ms plus the
/// hop to c, c's 7 ms and the hop back (2 ms each way), and the clients' requests take a's
/// time below, plus their own two hops; every bucket's p50 and p99 are the bin holding it.
/// A service that answers only errors has no answered attempt and no percentile.
#[test]
fn each_service_times_its_answers_from_arrival() {
    let text = r#"{"name": "timed", "duration": "4s", "replications": 2,
      "clients": {"count": 4, "workload": {"open": {"rate_per_s": 50}}, "entry": "a"},
      "network": {"latency": {"constant": "2ms"}},
      "metrics": {"bucket": "1s"},
      "services": {
        "a": {"concurrency": "unlimited", "service_time": {"constant": "1ms"}, "calls": [{"to": "b"}]},
        "b": {"concurrency": "unlimited", "service_time": {"constant": "3ms"}, "calls": [{"to": "c"}]},
        "c": {"concurrency": "unlimited", "service_time": {"constant": "7ms"}}
      }}"#;
    let (_, r) = run_text(text);
    let v = &r.points[0].variants[0];
    // Every answer of a series takes the same time, so each percentile lies in that time's
    // latency bin (it is read within the bin, interpolated by rank).
    let in_bin = |x: f64, ms: f64| {
        let edges: Vec<f64> = (0..retrystorm::metrics::LATENCY_BINS)
            .map(retrystorm::metrics::latency_bin_upper_ms)
            .collect();
        let i = edges.iter().position(|e| *e > ms).unwrap();
        edges[i - 1] < x && x <= edges[i]
    };
    let (c, b) = (7.0, 3.0 + 2.0 + 7.0 + 2.0);
    let a = 1.0 + 2.0 + b + 2.0;
    for (series, ms) in v.service_series.iter().zip([a, b, c]) {
        let answered: Vec<_> = series.latency.iter().flatten().collect();
        assert!(answered.len() >= 4, "{ms} ms: {answered:?}");
        for l in answered {
            assert!(
                in_bin(l.p50_ms, ms) && in_bin(l.p99_ms, ms),
                "{ms} ms: {l:?}"
            );
        }
    }
    for l in v.latency.iter().flatten() {
        assert!(in_bin(l.p99_ms, a + 4.0), "the clients' requests: {l:?}");
    }
    let failing = text.replace(
        r#""constant": "7ms"}"#,
        r#""constant": "7ms"}, "error_rate": 1"#,
    );
    let (_, r) = run_text(&failing);
    let v = &r.points[0].variants[0];
    assert!(v.service_series[2].latency.iter().all(Option::is_none));
    assert!(v.latency.iter().all(Option::is_none), "nothing answered");
}
