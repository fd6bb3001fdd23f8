//! Property tests over random small scenarios: every logical request ends exactly once, the
//! server never holds more than concurrency + queue_limit attempts, every attempt that
//! reached the server is accounted for, and a budget never blocks a first attempt; over a
//! pool of replicas whose callers detect outliers, never more replicas are ejected than
//! `max_ejection_percent` allows; and every request ends once after a burst has spilled the
//! event list into its buckets of time.

use proptest::prelude::*;
use retrystorm::model::Outcome;
use retrystorm::scenario::{LoadOptions, load_str};

#[derive(Debug, Clone)]
struct Params {
    clients: u32,
    rate: f64,
    closed: bool,
    concurrency: u32,
    queue_limit: Option<u32>,
    lifo: bool,
    service_ms: f64,
    latency_ms: f64,
    error_rate: f64,
    permanent_rate: f64,
    timeout_ms: Option<u32>,
    deadline_ms: Option<u32>,
    max_attempts: u32,
    jitter: Option<&'static str>,
    drop_expired: bool,
    /// 0 none, 1 token bucket, 2 retry quota, 3 ratio.
    budget: u8,
    shared: bool,
    /// 0 none, 1 mode all, 2 mode retries.
    breaker: u8,
    rate_limit: Option<f64>,
    /// 0 none, 1 stall, 2 reject outage, 3 drop outage, 4 error burst, 5 slowdown.
    fault: u8,
}

fn params() -> impl Strategy<Value = Params> {
    (
        (1u32..50, 10.0..2000.0f64, any::<bool>(), 1u32..8),
        (
            prop::option::of(0u32..20),
            any::<bool>(),
            0.1..20.0f64,
            0.0..5.0f64,
        ),
        (
            0.0..1.0f64,
            0.0..0.3f64,
            prop::option::of(5u32..100),
            prop::option::of(20u32..300),
        ),
        (
            1u32..6,
            prop::option::of(prop::sample::select(vec![
                "none",
                "full",
                "equal",
                "decorrelated",
            ])),
            any::<bool>(),
        ),
        (
            0u8..4,
            any::<bool>(),
            0u8..3,
            prop::option::of(20.0..2000.0f64),
            0u8..6,
        ),
    )
        .prop_map(|(a, b, c, d, e)| Params {
            clients: a.0,
            rate: a.1,
            closed: a.2,
            concurrency: a.3,
            queue_limit: b.0,
            lifo: b.1,
            service_ms: b.2,
            latency_ms: b.3,
            error_rate: c.0,
            permanent_rate: c.1,
            timeout_ms: c.2,
            deadline_ms: c.3,
            max_attempts: d.0,
            jitter: d.1,
            drop_expired: d.2,
            budget: e.0,
            shared: e.1,
            breaker: e.2,
            rate_limit: e.3,
            // Without a timeout nobody would ever hear from a dropped attempt.
            fault: if e.4 == 3 && c.2.is_none() { 2 } else { e.4 },
        })
}

fn scenario(p: &Params) -> String {
    let workload = if p.closed {
        r#"{"closed": {"think_time": {"exponential": {"mean": "5ms"}}}}"#.to_string()
    } else {
        format!(r#"{{"open": {{"rate_per_s": {}}}}}"#, p.rate)
    };
    let queue_limit = p
        .queue_limit
        .map_or("\"unlimited\"".to_string(), |q| q.to_string());
    let mut policy = Vec::new();
    if let Some(t) = p.timeout_ms {
        policy.push(format!(r#""timeout": "{t}ms""#));
    }
    if let Some(d) = p.deadline_ms {
        policy.push(format!(r#""deadline": "{d}ms""#));
    }
    let backoff = match p.jitter {
        None => r#""none""#.to_string(),
        Some(j) => format!(r#"{{"base": "2ms", "cap": "50ms", "jitter": "{j}"}}"#),
    };
    policy.push(format!(
        r#""retry": {{"max_attempts": {}, "backoff": {backoff}}}"#,
        p.max_attempts
    ));
    let scope = if p.shared { "shared" } else { "per_client" };
    match p.budget {
        1 => policy.push(format!(
            r#""budget": {{"scope": "{scope}", "token_bucket": {{"max_tokens": 4, "token_ratio": 0.2}}}}"#
        )),
        2 => policy.push(format!(
            r#""budget": {{"scope": "{scope}", "retry_quota": {{"initial": 30}}}}"#
        )),
        3 => policy.push(format!(
            r#""budget": {{"scope": "{scope}", "ratio": {{"percent": 0.2, "min_per_s": 1, "window": "500ms"}}}}"#
        )),
        _ => {}
    }
    if p.breaker > 0 {
        let mode = if p.breaker == 1 { "all" } else { "retries" };
        policy.push(format!(
            r#""breaker": {{"scope": "{scope}", "mode": "{mode}", "window": {{"count": 10}}, "minimum_calls": 5, "open_duration": "100ms", "half_open_calls": 2}}"#
        ));
    }
    let mut extra = Vec::new();
    if let Some(r) = p.rate_limit {
        extra.push(format!(
            r#""rate_limit": {{"rate_per_s": {r}, "burst": 5, "retry_after": "20ms"}}"#
        ));
    }
    let fault = match p.fault {
        1 => r#"{"from": "500ms", "to": "900ms", "concurrency": 0}"#,
        2 => r#"{"from": "500ms", "to": "900ms", "outage": "reject"}"#,
        3 => r#"{"from": "500ms", "to": "900ms", "outage": "drop"}"#,
        4 => r#"{"from": "500ms", "to": "900ms", "error_rate": 0.9}"#,
        5 => r#"{"from": "500ms", "to": "900ms", "service_time_factor": 4}"#,
        _ => "",
    };
    if !fault.is_empty() {
        extra.push(format!(r#""faults": [{fault}]"#));
    }
    let extra: String = extra.iter().map(|e| format!(", {e}")).collect();
    format!(
        r#"{{
          "name": "prop", "duration": "2s",
          "clients": {{"count": {clients}, "workload": {workload}}},
          "network": {{"latency": {{"exponential": {{"mean": "{latency}ms"}}}}}},
          "server": {{"concurrency": {conc}, "queue_limit": {queue_limit},
                      "discipline": "{disc}",
                      "service_time": {{"exponential": {{"mean": "{service}ms"}}}},
                      "error_rate": {err}, "permanent_error_rate": {perm},
                      "drop_expired": {drop} {extra}}},
          "policy": {{ {policy} }}
        }}"#,
        clients = p.clients,
        latency = p.latency_ms.max(0.001),
        conc = p.concurrency,
        disc = if p.lifo { "lifo" } else { "fifo" },
        service = p.service_ms,
        err = p.error_rate,
        perm = p.permanent_rate,
        drop = p.drop_expired,
        policy = policy.join(", "),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_request_ends_once_and_the_server_stays_within_bounds(p in params()) {
        let text = scenario(&p);
        let experiment = load_str(&text, "prop", &LoadOptions::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let sc = &experiment.points[0].variants[0].scenario;
        let r = retrystorm::sim::run(sc, 1, 0);
        let c = &r.counters;
        prop_assert!(r.truncated.is_none(), "{:?}", r.truncated);
        // Every logical request that started ended, exactly once.
        prop_assert_eq!(r.ended(), c.requests);
        // A budget never blocks a first attempt; only a breaker in mode "all" does.
        if p.breaker != 1 {
            prop_assert_eq!(c.first_attempts, c.requests);
        }
        let outcome = |o: Outcome| c.final_outcomes[o.index()];
        prop_assert!(c.first_attempts + outcome(Outcome::BreakerOpen) >= c.requests);
        prop_assert_eq!(c.budget_denials, outcome(Outcome::BudgetExhausted));
        prop_assert_eq!(c.breaker_refusals, outcome(Outcome::BreakerOpen));
        if p.budget == 0 {
            prop_assert_eq!(c.budget_denials, 0);
        }
        if p.breaker == 0 {
            prop_assert_eq!(c.breaker_refusals, 0);
        }
        // Every attempt sent reached the server, and every one that reached it was served,
        // turned away (full, throttled, outage) or discarded as expired.
        let s = r.entry();
        prop_assert_eq!(s.attempts, c.first_attempts + c.retries);
        prop_assert_eq!(
            s.attempts,
            s.served + s.rejected + s.throttled + s.expired_dropped + s.outage_rejected
                + s.outage_dropped
        );
        prop_assert!(s.wasted <= s.served);
        // The server never held more than it has room for.
        prop_assert!(s.max_in_service <= u64::from(p.concurrency));
        if let Some(q) = p.queue_limit {
            prop_assert!(s.max_queue <= u64::from(q));
        }
        // No request made more attempts than allowed.
        prop_assert!(s.attempts <= c.requests * u64::from(p.max_attempts));
        // The last request ended no earlier than the run's events allow.
        prop_assert!(c.makespan <= c.end_time);
        // Percentiles never exceed the exact maximum; a deadline bounds every latency.
        // The mean never exceeds the max either, for every outcome.
        let m = r.metrics();
        for l in [m.latency_ms, m.success_latency_ms, m.failure_latency_ms] {
            prop_assert!(l.p50 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max);
            prop_assert!(l.mean <= l.max);
            if let Some(d) = p.deadline_ms {
                prop_assert!(l.max <= f64::from(d) + 1e-6, "max {} > deadline {d}", l.max);
            }
        }
    }
}

/// Regression: timers of answered attempts used to stay queued until they fired, so with a
/// long timeout the event list grew with finished work instead of with what is in flight.
#[test]
fn stale_timers_do_not_pile_up_with_long_timeouts() {
    let text = r#"{
      "name": "long-timeout", "duration": "200s",
      "clients": {"count": 100, "workload": {"open": {"rate_per_s": 1000}}},
      "server": {"concurrency": 4, "service_time": {"exponential": {"mean": "2ms"}}},
      "policy": {"timeout": "1h"}
    }"#;
    let experiment = load_str(text, "test", &LoadOptions::default()).unwrap();
    let r = retrystorm::sim::run(&experiment.points[0].variants[0].scenario, 1, 0);
    assert!(r.counters.requests > 150_000);
    assert!(
        r.counters.max_pending < 20_000,
        "{} events pending at once for {} requests",
        r.counters.max_pending,
        r.counters.requests
    );
}

/// A burst that spills the event list past 8,192 pending events (into its buckets of time),
/// then a quiet rate, under random service times, timeouts and retries: the shape in which
/// an event pushed into drained buckets once waited unseen. Every request still ends once,
/// and every attempt sent is accounted for.
fn burst_scenario(
    service_s: f64,
    exponential: bool,
    timeout_s: Option<f64>,
    max_attempts: u32,
    quiet_per_s: f64,
) -> String {
    let service = if exponential {
        format!(r#"{{"exponential": {{"mean": "{service_s}s"}}}}"#)
    } else {
        format!(r#"{{"constant": "{service_s}s"}}"#)
    };
    let timeout = timeout_s.map_or(String::new(), |t| format!(r#""timeout": "{t}s","#));
    format!(
        r#"{{"name": "burst", "seed": 1, "duration": "20s",
          "clients": {{"count": 100, "workload": {{"open": {{"rate_per_s": {quiet_per_s},
            "profile": [{{"at": "1s", "rate_per_s": 20000}}, {{"at": "2s", "rate_per_s": {quiet_per_s}}}]}}}}}},
          "network": {{"latency": {{"exponential": {{"mean": "1ms"}}}}}},
          "server": {{"concurrency": "unlimited", "service_time": {service}, "error_rate": 0.05}},
          "policy": {{ {timeout} "retry": {{"max_attempts": {max_attempts},
            "backoff": {{"base": "100ms", "cap": "2s", "jitter": "full"}}}} }}
        }}"#
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_request_ends_once_after_a_burst_spills_the_event_list(
        service_s in 0.5..6.0f64,
        exponential in any::<bool>(),
        timeout_s in prop::option::of(0.2..8.0f64),
        max_attempts in 1u32..4,
        quiet_per_s in 0.2..20.0f64,
    ) {
        let text = burst_scenario(service_s, exponential, timeout_s, max_attempts, quiet_per_s);
        let experiment = load_str(&text, "burst", &LoadOptions::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let r = retrystorm::sim::run(&experiment.points[0].variants[0].scenario, 1, 0);
        let c = &r.counters;
        prop_assert!(c.max_pending > 8_192, "the burst spills: {}", c.max_pending);
        prop_assert!(r.truncated.is_none(), "{:?}", r.truncated);
        prop_assert_eq!(r.ended(), c.requests);
        prop_assert_eq!(c.first_attempts, c.requests);
        let s = r.entry();
        prop_assert_eq!(s.attempts, c.first_attempts + c.retries);
        prop_assert_eq!(s.attempts, s.served + s.rejected);
    }
}

/// Regression: past 8,192 pending events the event list keeps later events in buckets of
/// time; once a burst had made it spill and then drained, an event scheduled past the last
/// bucket while nothing else was pending waited there unseen. Here a second's spike of
/// 20,000 requests (5 s each, all in service at once) spills it, and at one request a second
/// afterwards 46 requests were never sent, never timed out and never ended, while the run
/// reported no truncation. Every request ends now, every one with exactly one attempt.
#[test]
fn every_request_ends_after_a_burst_has_spilled_the_event_list() {
    let text = r#"{
      "name": "spike-then-quiet", "seed": 1, "duration": "60s",
      "clients": {"count": 100, "workload": {"open": {"rate_per_s": 1,
        "profile": [{"at": "1s", "rate_per_s": 20000}, {"at": "2s", "rate_per_s": 1}]}}},
      "network": {"latency": {"constant": "1ms"}},
      "server": {"concurrency": "unlimited", "service_time": {"constant": "5s"}},
      "policy": {"timeout": "10s"}
    }"#;
    let experiment = load_str(text, "test", &LoadOptions::default()).unwrap();
    let r = retrystorm::sim::run(&experiment.points[0].variants[0].scenario, 1, 0);
    assert!(
        r.counters.max_pending > 10_000,
        "{}",
        r.counters.max_pending
    );
    assert!(r.truncated.is_none());
    let requests = r.counters.requests;
    assert!(requests > 20_000, "{requests}");
    let ended: u64 = r.counters.final_outcomes.iter().sum();
    assert_eq!(ended, requests, "requests that never ended");
    let succeeded = r.counters.final_outcomes[Outcome::Success.index()];
    assert_eq!(succeeded, requests);
    assert_eq!(r.entry().attempts, requests);
}

/// Regression: a delayed retry used to enter the event list when it was decided, without a
/// timeout, and when it was sent, with one; equal-time ties then resolved differently, so a
/// timeout that never fires changed the results.
#[test]
fn a_timeout_that_never_fires_changes_nothing() {
    let base = r#"{
      "name": "ties", "duration": "1s",
      "clients": {"count": 2, "workload": {"closed": {"requests_per_client": 2}}},
      "server": {"concurrency": 1, "queue_limit": 0, "service_time": {"constant": "10ms"}},
      "policy": {POLICY "retry": {"max_attempts": 3,
        "backoff": {"base": "20ms", "cap": "1s", "jitter": "none"}}}
    }"#;
    let run = |policy: &str| {
        let text = base.replace("POLICY", policy);
        let e = load_str(&text, "test", &LoadOptions::default()).unwrap();
        retrystorm::sim::run(&e.points[0].variants[0].scenario, 1, 0).metrics()
    };
    assert_eq!(run(""), run(r#""timeout": "1h","#));
}

/// Simulated time ends at 2^64 - 1 ns (about 584 years). Regression: retries far apart reached
/// it; the next instant saturated to "never", and the request ended `deadline_exceeded` at
/// "never" although no deadline was set, with that as its latency. The loader bounds every
/// duration (10^6 s), but unlimited retries of the longest backoff still reach the end after
/// about 18,000 of them: the run ends truncated there, with the request in flight and the
/// reason given.
#[test]
fn time_that_would_pass_its_end_truncates_the_run() {
    let text = |policy: &str| {
        format!(
            r#"{{
          "name": "end-of-time", "duration": "1s",
          "clients": {{"count": 1, "workload": {{"closed": {{"requests_per_client": 1}}}}}},
          "network": {{"latency": {{"constant": "1ms"}}}},
          "server": {{"concurrency": 1, "error_rate": 1, "service_time": {{"constant": "1ms"}}}},
          "policy": {{{policy} "retry": {{"max_attempts": "unlimited", "retry_on": ["error"],
            "backoff": {{"base": "1000000s", "multiplier": 1, "cap": "1000000s", "jitter": "none"}}}}}}
        }}"#
        )
    };
    for policy in ["", r#""timeout": "1s","#] {
        let e = load_str(&text(policy), "test", &LoadOptions::default()).unwrap();
        let r = retrystorm::sim::run(&e.points[0].variants[0].scenario, 1, 0);
        let Some(retrystorm::metrics::Truncation::EndOfTime { at, in_flight }) = &r.truncated
        else {
            panic!("{policy}: expected the end of time, got {:?}", r.truncated);
        };
        assert_eq!(*in_flight, 1, "{policy}");
        assert_eq!(r.ended(), 0, "{policy}: the request is still in flight");
        assert_eq!(
            r.counters.final_outcomes[Outcome::DeadlineExceeded.index()],
            0
        );
        // Each retry comes 10^15 ns (plus 3 ms of network and service) after the last.
        assert_eq!(
            r.entry().attempts,
            u64::MAX / (1_000_000_000_000_000 + 3_000_000) + 1,
            "{policy}: the retries that fit before the end"
        );
        assert!(
            at.as_nanos() >= u64::MAX - 1_000_000_000_000_000,
            "{policy}: {at}"
        );
        assert_eq!(r.counters.end_time, *at, "{policy}");
        let m = r.metrics();
        assert_eq!(m.truncated, 1.0);
        assert_eq!(m.latency_ms.max, 0.0, "{policy}: no latency at 'never'");
        assert!(
            r.truncated
                .as_ref()
                .unwrap()
                .to_string()
                .contains("end of simulated time")
        );
    }
}

/// A pool behind a balancer whose callers detect outliers, with one replica crashed, another
/// failing at random and the clients' policy of the scenarios above.
#[derive(Debug, Clone)]
struct Pool {
    replicas: u32,
    balancer: &'static str,
    sticky: bool,
    previous_hosts: bool,
    consecutive_5xx: u32,
    gateway: Option<u32>,
    interval_ms: u32,
    base_ms: u32,
    percent: u32,
    one: bool,
}

fn pools() -> impl Strategy<Value = Pool> {
    (
        (
            2u32..7,
            prop::sample::select(vec![
                "random",
                "round_robin",
                "least_request",
                "least_outstanding",
            ]),
            any::<bool>(),
            any::<bool>(),
        ),
        (1u32..6, prop::option::of(1u32..4), 20u32..300, 10u32..400),
        (0u32..=100, any::<bool>()),
    )
        .prop_map(|(a, b, c)| Pool {
            replicas: a.0,
            balancer: a.1,
            sticky: a.2,
            previous_hosts: a.3,
            consecutive_5xx: b.0,
            gateway: b.1,
            interval_ms: b.2,
            base_ms: b.3,
            percent: c.0,
            one: c.1,
        })
}

/// The scenario of `p` (a timeout always set, so dropped attempts are heard of) run as the
/// pool `pool`.
fn pooled(p: &Params, pool: &Pool) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&scenario(&Params {
        timeout_ms: Some(p.timeout_ms.unwrap_or(50)),
        fault: 0,
        ..p.clone()
    }))
    .unwrap();
    let server = &mut doc["server"];
    server["replicas"] = pool.replicas.into();
    server["balancer"] = pool.balancer.into();
    server["sticky"] = pool.sticky.into();
    server["faults"] = serde_json::json!([
        {"from": "0s", "to": "3s", "outage": "reject", "replica": 0},
        {"from": "300ms", "to": "1200ms", "outage": "drop", "replica": 1}
    ]);
    let mut o = serde_json::json!({
        "consecutive_5xx": pool.consecutive_5xx,
        "interval": format!("{}ms", pool.interval_ms),
        "base_ejection_time": format!("{}ms", pool.base_ms),
        "max_ejection_percent": pool.percent,
        "always_eject_one_host": pool.one,
    });
    if let Some(g) = pool.gateway {
        o["consecutive_gateway_failure"] = g.into();
    }
    server["outlier_detection"] = o;
    if pool.previous_hosts {
        doc["policy"]["retry"]["retry_host_predicate"] = serde_json::json!(["previous_hosts"]);
    }
    doc.to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// With outlier detection, whatever the balancer and the detector's settings: every
    /// request ends once, every attempt reaches a replica, and at the end of every bucket no
    /// more replicas are out than `max_ejection_percent` allows (Envoy's rule: out x 100 <=
    /// percent x replicas, or one with `always_eject_one_host`); no replica is out longer
    /// than the run.
    #[test]
    fn never_more_than_the_allowed_share_of_replicas_is_ejected(p in params(), pool in pools()) {
        let text = pooled(&p, &pool);
        let experiment = load_str(&text, "prop", &LoadOptions::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let sc = &experiment.points[0].variants[0].scenario;
        let r = retrystorm::sim::run(sc, 1, 0);
        let c = &r.counters;
        prop_assert!(r.truncated.is_none(), "{:?}", r.truncated);
        prop_assert_eq!(r.ended(), c.requests);
        let attempts: u64 = r.replicas.iter().map(|s| s.attempts).sum();
        prop_assert_eq!(attempts, c.first_attempts + c.retries);
        let allowed = pool.percent * pool.replicas / 100;
        let allowed = if pool.one { allowed.max(1) } else { allowed };
        for row in r.series.rows() {
            let out = row[retrystorm::metrics::Column::Ejected as usize];
            prop_assert!(out <= allowed, "{} out of {}: {:?}", out, pool.replicas, pool);
        }
        for s in &r.replicas {
            prop_assert!(s.ejected_nanos <= c.end_time.as_nanos());
            if s.ejections == 0 {
                prop_assert_eq!(s.ejected_nanos, 0);
            }
        }
    }
}
