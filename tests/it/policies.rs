//! Retry budgets, circuit breakers and server throttling against the closed forms and the
//! published comparisons (docs/reference-results.md: budgets at 100 % failures, Brooker's breaker and budget comparison), the client-count effect on
//! per-client budgets, and Retry-After.

use retrystorm::metrics::{ExperimentResult, VariantResult};
use retrystorm::scenario::LoadOptions;
use serde_json::json;

use crate::{assert_close, metric, run_bundled, run_text, variant};

/// The variant `name` at sweep value `value`.
fn at<'a>(result: &'a ExperimentResult, value: serde_json::Value, name: &str) -> &'a VariantResult {
    result
        .points
        .iter()
        .find(|p| p.value.as_ref() == Some(&value))
        .unwrap_or_else(|| panic!("no sweep point {value}"))
        .variants
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name:?}"))
}

fn mean(v: &VariantResult, path: &str) -> f64 {
    metric(v, path).0
}

#[test]
fn budgets_at_a_100_percent_failure_rate_tend_to_their_limits() {
    // 10 clients x 100 calls/s for 1000 s, every attempt fails.
    let (_, result) = run_text(
        r#"{
      "name": "e1-budgets", "seed": 5, "duration": "1000s",
      "clients": { "count": 10, "workload": { "open": { "rate_per_s": 1000 } } },
      "network": { "latency": { "exponential": { "mean": "1ms" } } },
      "server": { "concurrency": "unlimited", "service_time": { "constant": "1ms" }, "error_rate": 1 },
      "policy": { "retry": { "max_attempts": 4 } },
      "variants": [
        { "name": "token bucket", "patch": { "policy": { "budget": { "token_bucket": { "max_tokens": 10, "token_ratio": 0.1 } } } } },
        { "name": "ratio", "patch": { "policy": { "retry": { "max_attempts": 3 }, "budget": { "ratio": { "percent": 0.1 } } } } },
        { "name": "retry quota", "patch": { "policy": { "budget": { "retry_quota": { "initial": 500, "retry_cost": 5, "timeout_cost": 10, "success_refund": 1 } } } } }
      ]
    }"#,
    );
    let requests = mean(variant(&result, "token bucket"), "requests");
    assert!(requests > 990_000.0, "{requests}");

    // gRPC: 3 retries per client, then the bucket sits at half and allows none. Requests in
    // flight at once may each take the fourth token before anyone asks, so 3 or 4.
    let tb = variant(&result, "token bucket");
    let retries = mean(tb, "retries");
    assert!(
        (30.0..=40.0).contains(&retries),
        "{retries} retries for 10 clients"
    );
    assert_close("token bucket load", mean(tb, "amplification"), 1.00, 0.02);

    // Ratio: retries <= 10 % of the requests of the last 10 s (no floor by default), so
    // 1 + 0.1 = 1.10, within the reference's "about 1.11x".
    let ratio = variant(&result, "ratio");
    assert_close("ratio load", mean(ratio, "amplification"), 1.11, 0.02);
    assert_close(
        "ratio load, 1 + p",
        mean(ratio, "amplification"),
        1.10,
        0.002,
    );

    // Retry quota: 500 / 5 = exactly 100 retries per client, never refunded.
    let quota = variant(&result, "retry quota");
    assert_eq!(mean(quota, "retries"), 1000.0);
    assert_close("retry quota load", mean(quota, "amplification"), 1.00, 0.02);
    for v in [tb, ratio, quota] {
        assert_eq!(mean(v, "success_rate"), 0.0);
        assert_eq!(
            mean(v, "budget_denials"),
            mean(v, "failed.budget_exhausted"),
            "{}: every denial ends a request",
            v.name
        );
    }
}

#[test]
fn breaker_and_budget_against_three_retries_at_half_failures() {
    let (_, result) = run_bundled("brooker-2022", &LoadOptions::default());
    let half = json!(0.5);
    let three = at(&result, half.clone(), "3 retries");
    assert_close("3 retries load", mean(three, "amplification"), 1.875, 0.02);
    assert_close(
        "3 retries success",
        mean(three, "success_rate"),
        0.9375,
        0.015,
    );
    let breaker = at(&result, half.clone(), "retry breaker");
    assert_close(
        "retry breaker load",
        mean(breaker, "amplification"),
        1.00,
        0.02,
    );
    assert_close(
        "retry breaker success",
        mean(breaker, "success_rate"),
        0.50,
        0.015,
    );
    assert!(mean(breaker, "breaker.open_fraction") > 0.9);
    let bucket = at(&result, half, "token bucket");
    assert!(mean(bucket, "amplification") < 1.1);

    // Across the sweep, plain retries follow sum f^k and both limits stay near 1x.
    for p in &result.points {
        let f = p
            .value
            .as_ref()
            .and_then(|v| v.as_f64())
            .expect("numeric sweep");
        let expected: f64 = (0..4).map(|k| f.powi(k)).sum();
        let three = p.variants.iter().find(|v| v.name == "3 retries").unwrap();
        assert_close(
            &format!("3 retries load at f = {f}"),
            mean(three, "amplification"),
            expected,
            0.03,
        );
        for name in ["token bucket", "retry breaker"] {
            let v = p.variants.iter().find(|v| v.name == name).unwrap();
            assert!(
                mean(v, "amplification") < 1.11,
                "{name} at f = {f}: {}",
                mean(v, "amplification")
            );
        }
    }
}

#[test]
fn per_client_budgets_weaken_with_more_clients_and_a_shared_one_holds() {
    let (_, result) = run_bundled("retry-budget", &LoadOptions::default());
    let load = |clients: u32, name: &str| mean(at(&result, json!(clients), name), "amplification");
    let plain = load(100, "no budget");
    assert_close("no budget load (20 of 40 s at 3x)", plain, 2.0, 0.02);
    // The same total rate over more clients: more buckets, each allowing its own retries.
    for name in ["token bucket", "retry quota"] {
        let (l10, l100, l1000) = (load(10, name), load(100, name), load(1000, name));
        assert!(
            l10 < l100 && l100 < l1000,
            "{name}: {l10} {l100} {l1000} should grow with the client count"
        );
    }
    // 1000 clients with a 100-retry quota each is no budget at all here.
    assert_close(
        "quota over 1000 clients",
        load(1000, "retry quota"),
        plain,
        0.02,
    );
    for clients in [10, 100, 1000] {
        let shared = load(clients, "shared token bucket");
        assert_close(
            &format!("shared bucket, {clients} clients"),
            shared,
            1.0,
            0.01,
        );
    }
    // A breaker stops sending: fewer attempts than requests during the outage.
    let breaker = at(&result, json!(100), "circuit breaker");
    assert!(mean(breaker, "amplification") < 1.0);
    assert!(mean(breaker, "breaker.refusals") > 0.0);
    assert!(mean(breaker, "breaker.open_fraction") > 0.2);
    // Budgets never block a first attempt.
    for p in &result.points {
        for v in p.variants.iter().filter(|v| v.name != "circuit breaker") {
            assert_eq!(mean(v, "first_attempts"), mean(v, "requests"), "{}", v.name);
        }
    }
}

#[test]
fn throttled_clients_honour_retry_after_or_ignore_it() {
    // One serial client, three requests; the server admits one per second (burst 1) and
    // answers the rest 429 with Retry-After: 1s.
    let text = |retry_after: &str| {
        format!(
            r#"{{
          "name": "retry-after", "duration": "10s",
          "clients": {{ "count": 1, "workload": {{ "closed": {{ "requests_per_client": 3 }} }} }},
          "server": {{ "service_time": {{ "constant": "1ms" }},
                      "rate_limit": {{ "rate_per_s": 1, "burst": 1, "retry_after": "1s" }} }},
          "policy": {{ "retry": {{ "max_attempts": 3, "retry_after": "{retry_after}" }} }}
        }}"#
        )
    };
    let (_, honour) = run_text(&text("honor"));
    let v = &honour.points[0].variants[0];
    // Request 1 passes at 0; requests 2 and 3 are throttled once each and pass 1 s later.
    assert_eq!(mean(v, "success_rate"), 1.0);
    assert_eq!(mean(v, "attempts"), 5.0);
    assert_eq!(mean(v, "server.throttled"), 2.0);
    assert_close("makespan", mean(v, "makespan_ms"), 2003.0, 1e-6);

    let (_, ignore) = run_text(&text("ignore"));
    let v = &ignore.points[0].variants[0];
    // Immediate retries find the bucket empty: requests 2 and 3 fail after 3 attempts.
    assert_eq!(mean(v, "succeeded"), 1.0);
    assert_eq!(mean(v, "failed.throttled"), 2.0);
    assert_eq!(mean(v, "attempts"), 7.0);
}

/// The AWS SDKs' newer standard mode clamps `x-amz-retry-after` to [backoff, backoff + 5 s]
/// (aws-sdk-net's `StandardRetryPolicy.CalculateRetryDelay`). One serial client, two
/// requests, a server admitting one a second that answers the rest 429 with Retry-After
/// 10 s, a constant 100 ms backoff: the second request's retry waits 10 s when honoured and
/// 0.1 + 5 = 5.1 s when clamped (the bucket has refilled either way), so the clamped run
/// ends 4.9 s sooner; a Retry-After shorter than the backoff is clamped up to the backoff.
#[test]
fn clamped_retry_after_waits_at_most_five_seconds_beyond_the_backoff() {
    let text = |retry_after: &str, after: &str| {
        format!(
            r#"{{
          "name": "retry-after-clamp", "duration": "30s",
          "clients": {{ "count": 1, "workload": {{ "closed": {{ "requests_per_client": 2 }} }} }},
          "server": {{ "service_time": {{ "constant": "1ms" }},
                      "rate_limit": {{ "rate_per_s": 1, "burst": 1, "retry_after": "{after}" }} }},
          "policy": {{ "retry": {{ "max_attempts": 2, "retry_after": "{retry_after}",
                                  "backoff": {{ "base": "100ms", "cap": "100ms", "jitter": "none" }} }} }}
        }}"#
        )
    };
    let makespan = |retry_after: &str, after: &str| {
        let (_, r) = run_text(&text(retry_after, after));
        let v = &r.points[0].variants[0];
        assert_eq!(mean(v, "success_rate"), 1.0, "{retry_after} {after}");
        mean(v, "makespan_ms")
    };
    assert_close(
        "honoured minus clamped",
        makespan("honor", "10s") - makespan("clamp", "10s"),
        4900.0,
        1e-9,
    );
    // Retry-After 1 ms, below the 100 ms backoff: clamped up to the backoff, which still
    // finds the bucket empty (one token a second): the request fails, as when ignored.
    let (_, r) = run_text(&text("clamp", "1ms"));
    let (_, i) = run_text(&text("ignore", "1ms"));
    assert_eq!(
        mean(&r.points[0].variants[0], "makespan_ms"),
        mean(&i.points[0].variants[0], "makespan_ms")
    );
}

/// Envoy's limits on retries in flight, worked out on paper. 100 closed clients send one
/// request each at t = 0; every attempt fails after exactly 7 ms (1 ms hops, 5 ms service,
/// no queue), and is retried at once, 3 attempts in all. At 7 ms the 100 failures are decided
/// one after another, each answered attempt still active at its decision, each granted retry
/// sent at once (active again):
/// - `max_retries: 3`: 3 retries granted, 97 denied; at 14 ms each of the 3 releases its
///   retry before asking, so all 3 retry again; at 21 ms their attempts are used up: 6
///   retries, 97 `budget_exhausted`, 3 `error`.
/// - `retry_budget` 20 %, 3: the k-th decision sees 101 - k + g active (g granted so far),
///   a limit of 20 while g < 20, so 20 granted and the other 80 denied (the limit falls as
///   active does). At 14 ms the j-th of the 20 holds 20 - j + g' retries after releasing
///   its own, against max(floor(0.2 (21 - j + g')), 3): granted only from j = 18 on, 3 more.
///   23 retries, 97 denied, 3 `error`.
/// - the same budget per client: each client has one request, its limit 3: nothing is
///   denied, 200 retries, 100 `error`.
#[test]
fn envoy_limits_grant_the_retries_worked_out_on_paper() {
    let (_, result) = run_text(
        r#"{
      "name": "envoy-limits", "seed": 3, "replications": 2, "duration": "10s",
      "clients": { "count": 100, "workload": { "closed": { "requests_per_client": 1 } } },
      "network": { "latency": { "constant": "1ms" } },
      "server": { "concurrency": "unlimited", "service_time": { "constant": "5ms" }, "error_rate": 1 },
      "policy": { "retry": { "max_attempts": 3 } },
      "variants": [
        { "name": "max_retries", "patch": { "policy": { "budget": { "max_retries": 3 } } } },
        { "name": "retry budget", "patch": { "policy": { "budget": { "retry_budget": {} } } } },
        { "name": "per client", "patch": { "policy": { "budget": { "scope": "per_client", "retry_budget": { "budget_percent": 20, "min_retry_concurrency": 3 } } } } }
      ]
    }"#,
    );
    for (name, retries, denied, errors) in [
        ("max_retries", 6.0, 97.0, 3.0),
        ("retry budget", 23.0, 97.0, 3.0),
        ("per client", 200.0, 0.0, 100.0),
    ] {
        let v = variant(&result, name);
        assert_eq!(mean(v, "requests"), 100.0, "{name}");
        assert_eq!(mean(v, "retries"), retries, "{name}: retries");
        assert_eq!(mean(v, "budget_denials"), denied, "{name}: denials");
        assert_eq!(mean(v, "failed.budget_exhausted"), denied, "{name}");
        assert_eq!(mean(v, "failed.error"), errors, "{name}: errors");
    }
}

/// The AWS SDKs' newer standard mode against the older one, 100 % throttling: with a
/// throttling cost of 5 a full quota of 500 pays for floor(500 / 5) = 100 retries per client,
/// and with every retry priced at 14 (no throttling cost of its own) for floor(500 / 14) = 35.
#[test]
fn newer_retry_quota_prices_throttling_retries_apart() {
    let (_, result) = run_text(
        r#"{
      "name": "newer-quota", "seed": 5, "duration": "100s",
      "clients": { "count": 10, "workload": { "open": { "rate_per_s": 1000 } } },
      "network": { "latency": { "exponential": { "mean": "1ms" } } },
      "server": { "concurrency": "unlimited", "service_time": { "constant": "1ms" },
                  "rate_limit": { "rate_per_s": 0, "burst": 1 } },
      "policy": { "retry": { "max_attempts": 4, "retry_after": "ignore",
                             "backoff": { "base": "50ms", "cap": "20s", "jitter": "full", "throttling_base": "1s" } } },
      "variants": [
        { "name": "throttling cost 5", "patch": { "policy": { "budget": { "retry_quota": { "retry_cost": 14, "timeout_cost": 14, "throttling_cost": 5 } } } } },
        { "name": "all 14", "patch": { "policy": { "budget": { "retry_quota": { "retry_cost": 14, "timeout_cost": 14 } } } } }
      ]
    }"#,
    );
    assert_eq!(
        mean(variant(&result, "throttling cost 5"), "retries"),
        1000.0
    );
    assert_eq!(mean(variant(&result, "all 14"), "retries"), 350.0);
}

/// The bundled Envoy storm: without a limit every attempt times out once the slowdown has
/// filled the queue, so requests make all 3 attempts (load between 2 and 3 per request);
/// each of Envoy's limits keeps the extra load small and the server recovers; the default
/// budget, which grows with the attempts active, lets more retries through than 3 in flight
/// or 5 % do, and so recovers later; every denial ends a request `budget_exhausted`.
#[test]
fn envoy_budget_storm_is_ended_by_each_limit_and_sooner_by_the_tighter_ones() {
    let (_, result) = run_bundled("envoy-budget-storm", &LoadOptions::default());
    let none = variant(&result, "no limit");
    let breaker = variant(&result, "max_retries 3 (no budget)");
    let default = variant(&result, "retry budget 20 %, 3");
    let tight = variant(&result, "retry budget 5 %, 1");
    let amplification = mean(none, "amplification");
    assert!((2.0..=3.0).contains(&amplification), "{amplification}");
    for v in [breaker, default, tight] {
        assert!(mean(v, "amplification") < 1.25, "{}", v.name);
        assert_eq!(
            mean(v, "budget_denials"),
            mean(v, "failed.budget_exhausted"),
            "{}: every denial ends a request",
            v.name
        );
        assert!(
            mean(v, "success_rate") > mean(none, "success_rate"),
            "{}",
            v.name
        );
    }
    assert!(mean(default, "retries") > mean(breaker, "retries"));
    assert!(mean(default, "retries") > mean(tight, "retries"));
    assert!(mean(default, "success_rate") < mean(breaker, "success_rate"));
}
