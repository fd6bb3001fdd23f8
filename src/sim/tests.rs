//! Unit tests of the driver.

use super::*;
use crate::engine::SimDuration;

/// One client, one request, a server that always fails, 5 attempts; retries after a year,
/// then a thousand years (past the end of simulated time, 2^64 - 1 ns), a backoff no
/// scenario file can hold.
fn always_failing_with_yearly_backoff() -> Scenario {
    with_yearly_backoff(
        r#"{"name": "t", "duration": "1s",
      "clients": {"count": 1, "workload": {"closed": {"requests_per_client": 1}}},
      "server": {"concurrency": 1, "error_rate": 1, "service_time": {"constant": "1ms"}},
      "policy": {"retry": {"max_attempts": 5, "retry_on": ["error"]}}}"#,
    )
}

/// The scenario of `text` with retries after a year, then a thousand years.
fn with_yearly_backoff(text: &str) -> Scenario {
    let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
    let mut sc = e.points[0].variants[0].scenario.clone();
    sc.policy.retry.backoff = crate::model::Backoff::exponential(
        SimDuration::from_secs(365 * 86_400),
        1000.0,
        SimDuration(u64::MAX),
        crate::model::Jitter::None,
    );
    sc
}

/// Whatever bounds the scenario loader puts on durations: an instant past the end of
/// simulated time ends the run truncated, never as an event at "never".
#[test]
fn an_instant_past_the_end_of_time_truncates_the_run() {
    let sc = always_failing_with_yearly_backoff();
    let year = SimDuration::from_secs(365 * 86_400);
    let r = run(&sc, 1, 0);
    // Retries after 1 and 1000 years: the second lies past the end.
    assert_eq!(r.entry().attempts, 2);
    assert!(matches!(
        r.truncated,
        Some(Truncation::EndOfTime { in_flight: 1, at }) if at.as_nanos() > year.as_nanos()
    ));
    assert_eq!(r.ended(), 0);
}

/// An `occ` storm whose conflicts are settled at the write (`Sim::retry_at_once`), cut off
/// by `max_time` mid-storm: the counts settled ahead are counted in the buckets of their
/// instants and only up to the end of the run, so the series add up to the counters and
/// nothing lies past the cut.
#[test]
fn steps_settled_ahead_count_in_their_buckets_and_not_past_the_end() {
    let text = r#"{"name": "t", "duration": "1ms", "max_time": "700ms",
      "clients": {"count": 40, "workload": {"closed": {"requests_per_client": 1}}},
      "network": {"latency": {"normal": {"mean": "10ms", "sd": "2ms"}}},
      "server": {"kind": "occ"},
      "metrics": {"bucket": "50ms"},
      "policy": {"retry": {"max_attempts": "unlimited", "retry_on": ["conflict"],
        "backoff": {"base": "10ms", "multiplier": 2, "cap": "2s", "jitter": "full"}}}}"#;
    let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
    let sc = e.points[0].variants[0].scenario.clone();
    for replication in 0..5 {
        let mut sim = Sim::<Full>::new(&sc, 3, replication, TUNING);
        assert!(
            sim.fold_retries,
            "the storm settles its conflicts at the write"
        );
        let truncated = sim.run(COMPACT_MIN);
        let r = sim.finish(truncated);
        assert!(
            matches!(r.truncated, Some(Truncation::MaxTime { .. })),
            "cut off mid-storm: {:?}",
            r.truncated
        );
        let rows = r.series.rows();
        let total = |col: Column| {
            rows.iter()
                .map(|row| u64::from(row[col as usize]))
                .sum::<u64>()
        };
        let conflicts = r.counters.attempt_outcomes[Outcome::Conflict.index()];
        assert!(r.counters.retries > 100 && conflicts > 100);
        assert_eq!(total(Column::Retries), r.counters.retries);
        assert_eq!(total(Column::AttemptConflict), conflicts);
        let succeeded = r.counters.final_outcomes[Outcome::Success.index()];
        assert!(succeeded > 0);
        assert_eq!(total(Column::Succeeded), succeeded);
        // 700 ms in 50 ms buckets: 14 full buckets and the one the cut falls in.
        assert!(rows.len() <= 15, "{} rows", rows.len());
        // Every conflict answered was followed by a retry (none is ever denied), unless the
        // cut fell between the answer and the retry's departure.
        assert!(r.counters.retries <= conflicts);
        assert!(conflicts - r.counters.retries <= 40);
    }
}

/// A row whose second backoff passes the end of simulated time (a year, then a thousand):
/// the run reaches the end of time with the last conflicts' answers and retries settled
/// ahead of any event. Every write that happened was answered before the end, so the answers
/// counted match the writes, on the settled path as on the evented one, and the run ends no
/// earlier than its last answer.
#[test]
fn steps_settled_ahead_of_the_end_of_time_are_counted() {
    let text = r#"{"name": "t", "duration": "1ms",
      "clients": {"count": 10, "workload": {"closed": {"requests_per_client": 1}}},
      "network": {"latency": {"exponential": {"mean": "1ms"}}},
      "server": {"kind": "occ"},
      "policy": {"retry": {"max_attempts": "unlimited", "retry_on": ["conflict"]}}}"#;
    let sc = with_yearly_backoff(text);
    for settled in [true, false] {
        let mut ended = 0;
        for replication in 0..20 {
            let mut sim = Sim::<Full>::new(&sc, 5, replication, TUNING);
            assert!(sim.fold_retries && sim.successes_at_once);
            (sim.fold_retries, sim.successes_at_once) = (settled, settled);
            let truncated = sim.run(COMPACT_MIN);
            let r = sim.finish(truncated);
            let Some(Truncation::EndOfTime { at, .. }) = r.truncated else {
                // Every client's first retry, a year on, won.
                continue;
            };
            ended += 1;
            let answered: u64 = r.counters.attempt_outcomes.iter().sum();
            assert_eq!(answered, r.entry().attempts, "settled: {settled}");
            let conflicts = r.counters.attempt_outcomes[Outcome::Conflict.index()];
            let rows = r.series.rows();
            let total = |col: Column| {
                rows.iter()
                    .map(|row| u64::from(row[col as usize]))
                    .sum::<u64>()
            };
            assert_eq!(total(Column::AttemptConflict), conflicts);
            assert_eq!(total(Column::Retries), r.counters.retries);
            let succeeded = r.counters.final_outcomes[Outcome::Success.index()];
            assert_eq!(total(Column::Succeeded), succeeded);
            assert!(at >= r.counters.makespan, "settled: {settled}");
            assert_eq!(r.counters.end_time, at);
        }
        assert!(
            ended >= 10,
            "settled: {settled}: {ended} of 20 reached the end of time"
        );
    }
}

/// Timers that fall at the end of simulated time and find their attempts answered are
/// skipped there; the run then reports the instant of the last event it handled, not the end
/// of time.
#[test]
fn stale_timers_at_the_end_of_time_do_not_move_the_last_instant() {
    let mut sc = always_failing_with_yearly_backoff();
    let year = SimDuration::from_secs(365 * 86_400);
    // Every attempt's timer falls at the end of time.
    sc.policy.timeout = Some(SimDuration(u64::MAX));
    let r = run(&sc, 1, 0);
    assert_eq!(r.entry().attempts, 2);
    let Some(Truncation::EndOfTime { at, in_flight: 1 }) = r.truncated else {
        panic!("{:?}", r.truncated);
    };
    assert!(
        at > SimTime::ZERO + year && at < SimTime::NEVER,
        "{}",
        at.as_nanos()
    );
    assert_eq!(at, r.counters.end_time);
}

/// Timers of answered attempts are dropped unseen, whether they come up in the loop or a
/// sweep takes them out first: a run that sweeps at every doubling of its queue, however
/// small, gives the same result as one that never sweeps, down to its event count, its last
/// instant and every bucket of its time series. (Counted as events, the timers that
/// come up would make all three depend on when sweeps run.)
#[test]
fn when_stale_timers_are_swept_changes_nothing() {
    let text = r#"{"name": "t", "duration": "20s",
      "clients": {"count": 200, "workload": {"open": {"rate_per_s": 60}}},
      "server": {"concurrency": 1, "queue_limit": 20, "error_rate": 0.3,
        "service_time": {"exponential": {"mean": "15ms"}}},
      "policy": {"timeout": "60ms", "retry": {"max_attempts": 4, "retry_on": ["error", "timeout"]},
        "budget": {"ratio": {"percent": 0.2, "min_per_s": 1, "window": "2s"}},
        "breaker": {"failure_rate_threshold": 0.5, "window": {"count": 4}, "minimum_calls": 2,
          "open_duration": "300ms"}},
      "metrics": {"bucket": "50ms"}}"#;
    let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
    let sc = &e.points[0].variants[0].scenario;
    let mut rarely = run_with(
        sc,
        3,
        0,
        Tuning {
            compact_min: usize::MAX,
            ..TUNING
        },
    );
    let mut often = run_with(
        sc,
        3,
        0,
        Tuning {
            compact_min: 0,
            ..TUNING
        },
    );
    // The one count that depends on sweeps: the most events pending, stale timers included.
    assert!(often.counters.max_pending <= rarely.counters.max_pending);
    (rarely.counters.max_pending, often.counters.max_pending) = (0, 0);
    assert!(rarely.counters.attempt_outcomes[Outcome::Timeout.index()] > 0);
    assert!(rarely.counters.breaker_openings > 0);
    assert_eq!(rarely.counters, often.counters);
    assert_eq!(rarely.metrics(), often.metrics());
    assert_eq!(rarely.series.rows(), often.series.rows());
}

/// A bucket's states are those at its end, however long after it the next event comes: a
/// breaker that opens for 450 ms and sees nothing else for two seconds is open at the ends
/// of the buckets it was open through, and closed (half-open) at the later ones.
#[test]
fn bucket_states_are_read_at_the_bucket_end() {
    let text = r#"{"name": "t", "duration": "1s",
      "clients": {"count": 1, "workload": {"closed": {"requests_per_client": 1}}},
      "network": {"latency": {"constant": "1ms"}},
      "server": {"concurrency": 1, "error_rate": 1, "service_time": {"constant": "8ms"}},
      "policy": {"retry": {"max_attempts": 2, "retry_on": ["error"],
          "backoff": {"base": "2s", "multiplier": 1, "cap": "2s", "jitter": "none"}},
        "breaker": {"failure_rate_threshold": 0.5, "window": {"count": 1}, "minimum_calls": 1,
          "open_duration": "450ms"}},
      "metrics": {"bucket": "100ms"}}"#;
    let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
    let sc = &e.points[0].variants[0].scenario;
    let r = run(sc, 1, 0);
    assert_eq!(r.counters.breaker_openings, 1);
    // The first answer comes back at 10 ms and opens the breaker until 460 ms; the retry
    // leaves at 2.01 s.
    let open = column(&r, Column::BreakersOpen);
    assert_eq!(open[..8], [1, 1, 1, 1, 0, 0, 0, 0]);
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
        let dense = run_with(sc, 1, 0, TUNING);
        let sparse = run_with(
            sc,
            1,
            0,
            Tuning {
                dense_max: 0,
                ..TUNING
            },
        );
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

/// Call graphs built in code from single-server scenarios, so the driver's semantics are
/// tested apart from the scenario format.
mod graph {
    use super::*;
    use crate::metrics::CallCounters;
    use crate::scenario::{Call, Policy, Scenario, Service};

    /// The scenario of a single-server file.
    pub(super) fn single(text: &str) -> Scenario {
        let e = crate::scenario::load_str(text, "t", &Default::default())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        e.points[0].variants[0].scenario.clone()
    }

    /// A policy read from a single-server file's `policy` object.
    pub(super) fn policy(json: &str) -> Policy {
        single(&format!(
            r#"{{"name": "p", "duration": "1s", "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 1}}}}}}, "server": {{"service_time": {{"constant": "1ms"}}}}, "policy": {json}}}"#
        ))
        .policy
    }

    /// A service with the server of a single-server file's `server` object.
    pub(super) fn service(name: &str, server: &str) -> Service {
        let sc = single(&format!(
            r#"{{"name": "s", "duration": "1s", "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 1}}}}}}, "server": {server}}}"#
        ));
        Service {
            name: name.to_owned(),
            ..sc.services[0].clone()
        }
    }

    /// A chain clients -> s0 -> s1 -> ... -> s(layers-1): each caller makes up to
    /// `k_top` (clients) or `k_below` (services) attempts without backoff or timeouts, the
    /// bottom fails with probability `p`, everything else never fails.
    pub(super) fn chain(
        layers: usize,
        k_top: u32,
        k_below: u32,
        p: f64,
        requests: u64,
    ) -> Scenario {
        let mut sc = single(&format!(
            r#"{{"name": "chain", "duration": "1000s",
              "clients": {{"count": 10, "workload": {{"closed": {{"requests_per_client": {requests}}}}}}},
              "network": {{"latency": {{"constant": "1ms"}}}},
              "server": {{"concurrency": "unlimited", "service_time": {{"constant": "1ms"}}}},
              "policy": {{"retry": {{"max_attempts": {k_top}, "backoff": "none", "retry_on": ["error"]}}}}}}"#
        ));
        let below = policy(&format!(
            r#"{{"retry": {{"max_attempts": {k_below}, "backoff": "none", "retry_on": ["error"]}}}}"#
        ));
        let plain = r#"{"concurrency": "unlimited", "service_time": {"constant": "1ms"}}"#;
        let bottom = format!(
            r#"{{"concurrency": "unlimited", "service_time": {{"constant": "1ms"}}, "error_rate": {p}}}"#
        );
        sc.services = (0..layers)
            .map(|i| {
                let mut s = service(
                    &format!("s{i}"),
                    if i + 1 == layers { &bottom } else { plain },
                );
                if i + 1 < layers {
                    s.calls = vec![Call {
                        to: i + 1,
                        fraction: 1.0,
                        policy: below.clone(),
                        balancer: None,
                        sticky: None,
                    }];
                }
                s
            })
            .collect();
        sc
    }

    /// The driver after a whole run, for checks of its state.
    fn run_to_end(sc: &Scenario, seed: u64, replication: u64) -> (RunResult, usize, usize) {
        let mut sim = Sim::<Full>::new(sc, seed, replication, TUNING);
        let truncated = sim.run(COMPACT_MIN);
        let live = sim.live_slots as usize;
        let works = sim.works.len() - sim.free_works.len();
        (sim.finish(truncated), live, works)
    }

    #[test]
    fn retries_at_every_layer_multiply_exactly() {
        for (layers, k, expected) in [(3, 4, 64), (5, 3, 243), (1, 4, 4)] {
            // `layers` layers of retries: the clients' and those of every service but the
            // bottom one.
            let sc = chain(layers, k, k, 1.0, 3);
            let r = run(&sc, 1, 0);
            assert!(r.truncated.is_none());
            let requests = r.counters.requests;
            assert_eq!(requests, 30);
            let bottom = if layers == 1 {
                r.entry().attempts
            } else {
                r.services[layers - 1].attempts
            };
            assert_eq!(
                bottom,
                expected * requests,
                "{layers} layers of {k} attempts"
            );
            assert_eq!(r.succeeded(), 0);
            assert_eq!(r.ended(), requests);
        }
    }

    #[test]
    fn retries_at_the_top_only_add_up() {
        let sc = chain(3, 4, 1, 1.0, 3);
        let r = run(&sc, 1, 0);
        let requests = r.counters.requests;
        for s in &r.services {
            assert_eq!(s.attempts, 4 * requests);
        }
    }

    /// Attempts at the bottom per logical request follow the product of (1 - q^k)/(1 - q)
    /// down the chain, q being the failure probability of the layer below: p at the bottom,
    /// then q^k upwards.
    #[test]
    fn attempts_at_the_bottom_follow_the_closed_form() {
        let (p, k, layers) = (0.5f64, 4u32, 3usize);
        let mut expected = 1.0;
        let mut q = p;
        for _ in 0..layers {
            expected *= (1.0 - q.powi(k as i32)) / (1.0 - q);
            q = q.powi(k as i32);
        }
        let sc = chain(layers, k, k, p, 200);
        let samples: Vec<f64> = (0..20)
            .map(|rep| {
                let r = run(&sc, 7, rep);
                r.services[layers - 1].attempts as f64 / r.counters.requests as f64
            })
            .collect();
        let est = crate::metrics::Estimate::from_samples(&samples);
        assert!(
            (est.mean - expected).abs() <= est.half_width,
            "expected {expected:.4}, simulated {:.4} ± {:.4}",
            est.mean,
            est.half_width
        );
        assert!(est.half_width < 0.05 * expected, "the interval is tight");
    }

    /// A dependency failing 10 % of attempts, retried up to 3 times at one layer: success
    /// above 99 % for about 1.11 dependency calls per request.
    #[test]
    fn one_layer_of_retries_absorbs_a_flaky_dependency() {
        let sc = chain(2, 1, 4, 0.1, 2000);
        let r = run(&sc, 3, 0);
        let requests = r.counters.requests as f64;
        let success = r.succeeded() as f64 / requests;
        assert!(success > 0.99, "success {success}");
        let per_request = r.services[1].attempts as f64 / requests;
        assert!(
            (per_request - 1.111).abs() < 0.02,
            "dependency attempts per request {per_request}"
        );
        assert_eq!(r.calls[0].attempts, r.services[1].attempts);
    }

    /// Every logical request ends exactly once and every attempt at every tier is accounted
    /// for, over random call graphs of up to four tiers with timeouts, retries, deadlines
    /// propagated or not, bulkheads, fallbacks, drop_expired, sequential and parallel calls
    /// and partial routes.
    #[test]
    fn every_request_ends_once_and_every_attempt_is_accounted_for() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(12);
        // What the cases exercised, so the check cannot pass by never meeting a feature.
        let mut seen = CallCounters::default();
        let mut wasted_below = 0;
        let mut dropped_below = 0;
        let (mut duplicates, mut replayed, mut cancelled, mut shed) = (0, 0, 0, 0);
        for case in 0..150 {
            let tiers = rng.random_range(1..=4usize);
            let mut sc = single(
                r#"{"name": "g", "duration": "3s",
                  "clients": {"count": 20, "workload": {"open": {"rate_per_s": 150}}},
                  "network": {"latency": {"exponential": {"mean": "1ms"}}},
                  "server": {"service_time": {"constant": "1ms"}},
                  "policy": {"timeout": "60ms", "deadline": "300ms",
                    "retry": {"max_attempts": 3, "backoff": {"base": "5ms", "cap": "40ms", "jitter": "full"}}}}"#,
            );
            // Services by tier: 1 at the top, up to 2 per tier below.
            let mut tier_of = vec![0usize];
            for t in 1..tiers {
                for _ in 0..rng.random_range(1..=2) {
                    tier_of.push(t);
                }
            }
            let n = tier_of.len();
            sc.services = (0..n)
                .map(|i| {
                    let concurrency = rng.random_range(1..=8);
                    let queue = rng.random_range(0..=20);
                    let error = rng.random_range(0.0..0.3);
                    let drop = rng.random_bool(0.5);
                    let mean = rng.random_range(1..=12);
                    let discipline = [
                        r#""fifo""#,
                        r#""lifo""#,
                        r#"{"codel": {"target": "2ms", "interval": "20ms"}}"#,
                        r#"{"adaptive_lifo": {"interval": "20ms"}}"#,
                    ][rng.random_range(0..4)];
                    service(
                        &format!("s{i}"),
                        &format!(
                            r#"{{"concurrency": {concurrency}, "queue_limit": {queue}, "error_rate": {error},
                              "drop_expired": {drop}, "discipline": {discipline},
                              "service_time": {{"exponential": {{"mean": "{mean}ms"}}}}}}"#
                        ),
                    )
                })
                .collect();
            for i in 0..n {
                let below: Vec<usize> = (0..n).filter(|&j| tier_of[j] == tier_of[i] + 1).collect();
                if below.is_empty() {
                    continue;
                }
                let parallel = rng.random_bool(0.5);
                let partial = below.len() > 1 && rng.random_bool(0.5);
                let mut calls = Vec::new();
                for &j in &below {
                    let timeout = rng.random_range(10..=80);
                    let attempts = rng.random_range(1..=3);
                    let mut p = policy(&format!(
                        r#"{{"timeout": "{timeout}ms", "retry": {{"max_attempts": {attempts}, "backoff": {{"base": "2ms", "cap": "20ms", "jitter": "equal"}}, "retry_on": ["error", "timeout", "rejected"]}}}}"#
                    ));
                    p.retry.retry_on = p
                        .retry
                        .retry_on
                        .iter()
                        .chain([crate::model::Outcome::BulkheadFull])
                        .collect();
                    if rng.random_bool(0.5) {
                        p.bulkhead = Some(crate::scenario::BulkheadConfig {
                            max_concurrent: rng.random_range(1..=4),
                            max_wait: SimDuration::from_millis(rng.random_range(0..=10)),
                        });
                    }
                    if rng.random_bool(0.3) {
                        p.fallback =
                            Some(crate::model::Dist::Constant(SimDuration::from_millis(1)));
                    }
                    p.propagate_deadline = rng.random_bool(0.5);
                    if rng.random_bool(0.4) {
                        p.hedge = Some(random_hedge(&mut rng));
                    }
                    p.idempotent = rng.random_bool(0.5);
                    if rng.random_bool(0.4) {
                        p.idempotency_key = Some(crate::scenario::IdempotencyKey {
                            ttl: SimDuration::from_secs(3600),
                            cost: SimDuration::from_millis(rng.random_range(0..=2)),
                        });
                    }
                    if rng.random_bool(0.3) {
                        p.deadline = Some(SimDuration::from_millis(rng.random_range(20..=200)));
                    }
                    calls.push(Call {
                        to: j,
                        fraction: if partial {
                            1.0 / below.len() as f64
                        } else {
                            1.0
                        },
                        policy: p,
                        balancer: None,
                        sticky: None,
                    });
                }
                sc.services[i].calls = calls;
                sc.services[i].parallel = parallel;
            }
            let (r, live, works) = run_to_end(&sc, case, 0);
            assert!(r.truncated.is_none(), "case {case}");
            let c = &r.counters;
            assert_eq!(
                r.ended(),
                c.requests,
                "case {case}: every request ends once"
            );
            assert_eq!(live, 0, "case {case}: every call slot is freed");
            assert_eq!(works, 0, "case {case}: every work is done");
            if n == 1 {
                continue;
            }
            assert_eq!(
                c.first_attempts + c.retries + c.hedges,
                r.services[0].attempts,
                "case {case}"
            );
            let mut edge = 0;
            for (i, s) in sc.services.iter().enumerate() {
                for call in &s.calls {
                    let _ = (i, call);
                    edge += 1;
                }
            }
            assert_eq!(edge, r.calls.len());
            for (t, s) in r.services.iter().enumerate() {
                let sent: u64 = if t == 0 {
                    c.first_attempts + c.retries + c.hedges
                } else {
                    let mut e = 0;
                    let mut sum = 0;
                    for svc in &sc.services {
                        for call in &svc.calls {
                            if call.to == t {
                                sum += r.calls[e].attempts;
                            }
                            e += 1;
                        }
                    }
                    sum
                };
                assert_eq!(
                    sent, s.attempts,
                    "case {case}: attempts sent to s{t} arrive"
                );
                assert_eq!(
                    s.attempts,
                    s.served
                        + s.rejected
                        + s.throttled
                        + s.outage_rejected
                        + s.outage_dropped
                        + s.expired_dropped
                        + s.cancelled
                        + s.shed
                        + s.replayed,
                    "case {case}: every attempt at s{t} is served or turned away: {s:?}"
                );
                assert!(s.useful + s.wasted <= s.served, "case {case}");
            }
            for e in &r.calls {
                assert_eq!(e.calls, e.succeeded + e.failed, "case {case}: {e:?}");
                assert!(e.degraded <= e.failed);
                seen.bulkhead_full += e.bulkhead_full;
                seen.degraded += e.degraded;
                seen.retries += e.retries;
                seen.failed += e.failed;
                seen.hedges += e.hedges;
                seen.hedge_wins += e.hedge_wins;
            }
            // Duplicates only where a call into the service is not idempotent and sends no
            // keys (they are remembered for longer than the run).
            for (t, s) in r.services.iter().enumerate() {
                let unkeyed_non_idempotent = sc.services.iter().any(|svc| {
                    svc.calls.iter().any(|call| {
                        call.to == t
                            && !call.policy.idempotent
                            && call.policy.idempotency_key.is_none()
                    })
                });
                if !unkeyed_non_idempotent {
                    assert_eq!(s.duplicates, 0, "case {case}: s{t}");
                }
                assert!(s.duplicate_calls <= s.duplicates, "case {case}");
                duplicates += s.duplicates;
                replayed += s.replayed;
                cancelled += s.cancelled;
                shed += s.shed;
            }
            for s in &r.services[1..] {
                wasted_below += s.wasted;
                dropped_below += s.expired_dropped;
            }
        }
        assert!(
            seen.bulkhead_full > 0 && seen.degraded > 0 && seen.retries > 0,
            "{seen:?}"
        );
        assert!(seen.failed > 0 && wasted_below > 0 && dropped_below > 0 && shed > 0);
        assert!(
            seen.hedges > 0
                && seen.hedge_wins > 0
                && duplicates > 0
                && replayed > 0
                && cancelled > 0,
            "hedges {} wins {} duplicates {duplicates} replayed {replayed} cancelled {cancelled}",
            seen.hedges,
            seen.hedge_wins
        );
    }

    /// A random hedging policy.
    pub(super) fn random_hedge(rng: &mut impl rand::RngExt) -> crate::scenario::HedgeConfig {
        use crate::scenario::{HedgeConfig, HedgeDelay};
        HedgeConfig {
            delay: if rng.random_bool(0.5) {
                HedgeDelay::Fixed(SimDuration::from_millis(rng.random_range(1..=20)))
            } else {
                HedgeDelay::Percentile {
                    quantile: rng.random_range(0.5..0.99),
                    window: rng.random_range(20..=200),
                }
            },
            max_hedges: rng.random_range(1..=3),
            cancel: rng.random_bool(0.5),
            budget: rng.random_bool(0.3).then(|| rng.random_range(0.05..0.5)),
        }
    }
}

/// Hedged requests, duplicate side effects and idempotency keys on a single server.
mod hedging {
    use super::graph::single;
    use super::*;
    use crate::metrics::Estimate;
    use crate::scenario::{HedgeConfig, HedgeDelay, IdempotencyKey, Scenario};

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    fn hedge(delay: HedgeDelay, budget: Option<f64>) -> HedgeConfig {
        HedgeConfig {
            delay,
            max_hedges: 1,
            cancel: false,
            budget,
        }
    }

    /// A server with ample workers, service 2 ms on average for 98 % of requests and 1 s
    /// for 2 % (a slow disk, a GC pause).
    fn tail_scenario() -> Scenario {
        single(
            r#"{"name": "tail", "duration": "60s",
              "clients": {"count": 50, "workload": {"open": {"rate_per_s": 200}}},
              "network": {"latency": {"constant": "500us"}},
              "server": {"concurrency": "unlimited", "service_time": {"mixture": [
                 {"weight": 98, "dist": {"exponential": {"mean": "2ms"}}},
                 {"weight": 2, "dist": {"constant": "1s"}}]}},
              "policy": {"retry": {"max_attempts": 1}}}"#,
        )
    }

    /// Hedging once after 10 ms cuts p99.9 from about 1 s to under 50 ms for 3 % more
    /// attempts; waiting for the 95th percentile of the latencies seen instead does the same
    /// for about 5 % more.
    #[test]
    fn hedging_cuts_the_tail_for_little_load() {
        let plain = tail_scenario();
        let r = run(&plain, 1, 0);
        let p999 = r.metrics().latency_ms.p999;
        assert!(
            (950.0..1100.0).contains(&p999),
            "without hedging p99.9 {p999} ms"
        );
        for delay in [
            HedgeDelay::Fixed(ms(10)),
            HedgeDelay::Percentile {
                quantile: 0.95,
                window: 1000,
            },
        ] {
            let mut sc = plain.clone();
            sc.policy.hedge = Some(hedge(delay, None));
            let h = run(&sc, 1, 0);
            let m = h.metrics();
            let (c, s) = (&h.counters, h.entry());
            assert_eq!(c.requests, r.counters.requests, "the same traffic");
            assert_eq!(h.succeeded(), c.requests);
            assert!(
                m.latency_ms.p999 < 50.0,
                "{delay:?}: p99.9 {} ms",
                m.latency_ms.p999
            );
            let extra = c.hedges as f64 / c.first_attempts as f64;
            let expected = match delay {
                // The attempts unanswered after 10 ms: the slow 2 % and the fast ones
                // whose service exceeds 9 ms.
                HedgeDelay::Fixed(_) => 0.02 + 0.98 * (-9.0f64 / 2.0).exp(),
                // The slowest 5 % of answers.
                HedgeDelay::Percentile { quantile, .. } => 1.0 - quantile,
            };
            assert!(
                extra < 0.0535 && (extra - expected).abs() < 0.005,
                "{delay:?}: extra attempts {extra}, expected {expected}"
            );
            assert!(c.hedge_wins > 0 && c.hedge_wins <= c.hedges);
            assert_eq!(s.attempts, c.first_attempts + c.hedges);
        }
    }

    /// A busy server whose service has the same slow tail: hedging every request unanswered
    /// after 10 ms, unbudgeted, adds load that makes queues, which make more hedges, until
    /// the server is overloaded and p99 is many times worse; a hedge budget of 5 % of the
    /// requests prevents that and still cuts p99 several times.
    #[test]
    fn a_hedge_budget_keeps_hedging_from_overloading_a_busy_server() {
        let plain = single(
            r#"{"name": "busy", "duration": "60s",
              "clients": {"count": 50, "workload": {"open": {"rate_per_s": 1800}}},
              "network": {"latency": {"constant": "500us"}},
              "server": {"concurrency": 50, "service_time": {"mixture": [
                 {"weight": 98, "dist": {"exponential": {"mean": "2ms"}}},
                 {"weight": 2, "dist": {"constant": "1s"}}]}},
              "policy": {"retry": {"max_attempts": 1}}}"#,
        );
        let run_p99 = |sc: &Scenario| {
            let r = run(sc, 5, 0);
            (
                r.metrics().latency_ms.p99,
                r.counters.hedges as f64 / r.counters.requests as f64,
            )
        };
        let (base, _) = run_p99(&plain);
        assert!(
            base > 1000.0,
            "without hedging the slow 2 % set p99: {base} ms"
        );
        let mut unbudgeted = plain.clone();
        unbudgeted.policy.hedge = Some(hedge(HedgeDelay::Fixed(ms(10)), None));
        let mut budgeted = plain.clone();
        budgeted.policy.hedge = Some(hedge(HedgeDelay::Fixed(ms(10)), Some(0.05)));
        let ((u, u_extra), (b, b_extra)) = (run_p99(&unbudgeted), run_p99(&budgeted));
        assert!(
            u > 10.0 * base && u_extra > 0.5,
            "unbudgeted: p99 {u} ms against {base} ms, {u_extra} hedges per request"
        );
        assert!(
            b < base / 3.0 && b_extra <= 0.05,
            "budgeted: p99 {b} ms against {base} ms, {b_extra} hedges per request"
        );
    }

    /// Unlimited workers, a constant one-way delay d, exponential service of mean m,
    /// timeout T, up to 2 attempts retried at once on timeout. The first attempt times out
    /// when its service exceeds T - 2d, probability q = exp(-(T - 2d)/m); it is executed
    /// anyway, and so is the retry: the share of requests executed twice is q, and success
    /// is 1 - q^2. With idempotency keys (answered from memory after c) the retry is never
    /// executed: it waits for the first attempt's result if that is still running, or is
    /// answered from memory; success is then 1 - exp(-(2T - 2d - c)/m).
    #[test]
    fn duplicates_and_keys_follow_the_closed_form() {
        let (d, m, t, c) = (1.0f64, 10.0f64, 20.0f64, 1.0f64);
        let mut sc = single(
            r#"{"name": "dup", "duration": "20s",
              "clients": {"count": 20, "workload": {"open": {"rate_per_s": 100}}},
              "network": {"latency": {"constant": "1ms"}},
              "server": {"concurrency": "unlimited", "service_time": {"exponential": {"mean": "10ms"}}},
              "policy": {"timeout": "20ms", "retry": {"max_attempts": 2, "backoff": "none", "retry_on": ["timeout"]}}}"#,
        );
        sc.policy.idempotent = false;
        let q = (-(t - 2.0 * d) / m).exp();
        let reps = 20;
        let estimate = |sc: &Scenario, f: &dyn Fn(&RunResult) -> f64| {
            let samples: Vec<f64> = (0..reps).map(|rep| f(&run(sc, 11, rep))).collect();
            Estimate::from_samples(&samples)
        };
        let share = |r: &RunResult| r.entry().duplicate_calls as f64 / r.counters.requests as f64;
        let success = |r: &RunResult| r.succeeded() as f64 / r.counters.requests as f64;
        let dup = estimate(&sc, &share);
        assert!(
            (dup.mean - q).abs() <= dup.half_width && dup.half_width < 0.1 * q,
            "executed twice: {:.4} ± {:.4}, closed form {q:.4}",
            dup.mean,
            dup.half_width
        );
        let ok = estimate(&sc, &success);
        assert!(
            (ok.mean - (1.0 - q * q)).abs() <= ok.half_width,
            "success {:.4} ± {:.4}, closed form {:.4}",
            ok.mean,
            ok.half_width,
            1.0 - q * q
        );
        sc.policy.idempotency_key = Some(IdempotencyKey {
            ttl: SimDuration::from_secs(3600),
            cost: ms(1),
        });
        let keyed: Vec<RunResult> = (0..reps).map(|rep| run(&sc, 11, rep)).collect();
        for r in &keyed {
            assert_eq!(r.entry().duplicates, 0);
            assert_eq!(r.ended(), r.counters.requests, "every request still ends");
            assert!(r.entry().replayed > 0);
        }
        let samples: Vec<f64> = keyed.iter().map(success).collect();
        let ok = Estimate::from_samples(&samples);
        let expected = 1.0 - (-(2.0 * t - 2.0 * d - c) / m).exp();
        assert!(
            (ok.mean - expected).abs() <= ok.half_width,
            "success with keys {:.4} ± {:.4}, closed form {expected:.4}",
            ok.mean,
            ok.half_width
        );
        // Wasted work is an execution that ends when nobody awaits it: a first attempt that
        // ends after its client's timeout (d + S > T) but before the retry arrives (S < T),
        // whose result only the key memory keeps; or one that ends after the retry, which
        // waited for it, timed out too (d + S > 2T). One that ends while the retry waits
        // answers the retry: not wasted.
        let samples: Vec<f64> = keyed
            .iter()
            .map(|r| r.entry().wasted as f64 / r.counters.requests as f64)
            .collect();
        let wasted = Estimate::from_samples(&samples);
        let expected = (-(t - d) / m).exp() - (-t / m).exp() + (-(2.0 * t - d) / m).exp();
        assert!(
            (wasted.mean - expected).abs() <= wasted.half_width,
            "wasted with keys {:.4} ± {:.4}, closed form {expected:.4}",
            wasted.mean,
            wasted.half_width
        );
    }

    /// Duplicates are counted only for a call that is not idempotent.
    #[test]
    fn an_idempotent_call_has_no_duplicates() {
        let mut sc = tail_scenario();
        sc.policy.timeout = Some(ms(20));
        sc.policy.retry.max_attempts = Some(3);
        sc.policy.retry.retry_on = [crate::model::Outcome::Timeout].into_iter().collect();
        sc.policy.hedge = Some(hedge(HedgeDelay::Fixed(ms(5)), None));
        let r = run(&sc, 1, 0);
        assert!(r.counters.hedges > 0 && r.counters.retries > 0);
        assert_eq!(r.entry().duplicates, 0);
        sc.policy.idempotent = false;
        let r = run(&sc, 1, 0);
        assert!(r.entry().duplicates > 0);
    }

    /// A request ends exactly once however many hedges raced for it, and cancelled hedges
    /// are dropped by the service before they start.
    #[test]
    fn a_request_ends_once_however_many_hedges_it_had() {
        let mut sc = single(
            r#"{"name": "race", "duration": "20s",
              "clients": {"count": 30, "workload": {"open": {"rate_per_s": 300}}},
              "network": {"latency": {"exponential": {"mean": "1ms"}}},
              "server": {"concurrency": 4, "queue_limit": 50, "error_rate": 0.2,
                "service_time": {"exponential": {"mean": "10ms"}}},
              "policy": {"timeout": "80ms", "deadline": "300ms",
                "retry": {"max_attempts": 3, "backoff": {"base": "5ms", "cap": "20ms", "jitter": "full"}}}}"#,
        );
        for (max_hedges, cancel) in [(1, false), (3, true), (5, true)] {
            sc.policy.hedge = Some(HedgeConfig {
                delay: HedgeDelay::Fixed(ms(4)),
                max_hedges,
                cancel,
                budget: None,
            });
            let mut sim = Sim::<Full>::new(&sc, 3, 0, TUNING);
            let truncated = sim.run(COMPACT_MIN);
            let live = sim.live_slots;
            let r = sim.finish(truncated);
            let (c, s) = (&r.counters, r.entry());
            assert!(r.truncated.is_none());
            assert_eq!(
                r.ended(),
                c.requests,
                "{max_hedges} hedges: every request ends once"
            );
            assert_eq!(live, 0, "every slot, hedges' included, is freed");
            assert!(c.hedges > c.requests / 2, "hedges {}", c.hedges);
            assert_eq!(s.attempts, c.first_attempts + c.retries + c.hedges);
            assert_eq!(
                s.attempts,
                s.served + s.rejected + s.expired_dropped + s.cancelled,
                "every attempt is accounted for"
            );
            assert_eq!(cancel, s.cancelled > 0);
        }
    }
}

/// Eighteen short setups of a single service whose answers are settled, most with timers:
/// timeouts or none, deadlines, zero backoff, a rate limit with `retry_after`, outages and
/// fault windows, bad requests, `drop_expired`, CoDel, adaptive LIFO, a fallback, counted
/// executions, `max_time`, an `occ` row with timers, a closed workload, and two where every
/// delay is constant. No jitter; the hops of the first sixteen are drawn from `latency`
/// (a distribution's JSON).
fn settling_setups(latency: &str) -> Vec<(&'static str, String)> {
    let lattice = |workload: &str, timeout: &str| {
        let workload = match workload {
            "closed" => {
                r#"{"closed": {"requests_per_client": 40, "think_time": {"constant": "7ms"}}}"#
            }
            _ => r#"{"open": {"rate_per_s": 300}}"#,
        };
        format!(
            r#"{{"name": "t", "duration": "5s",
              "clients": {{"count": 40, "workload": {workload}}},
              "network": {{"latency": {{"constant": "1ms"}}}},
              "server": {{"concurrency": 2, "queue_limit": 3, "error_rate": 0.3,
                 "service_time": {{"constant": "4ms"}}}},
              "policy": {{"timeout": "{timeout}", "retry": {{"max_attempts": 4,
                  "backoff": {{"base": "5ms", "multiplier": 2, "cap": "200ms", "jitter": "none"}}}}}},
              "metrics": {{"bucket": "50ms"}}}}"#
        )
    };
    // Each setup's extra keys (", key: value, ...") replace or add keys of the server, the
    // policy or the whole scenario: a file writes each key once.
    let base = |server: &str, policy: &str, extra: &str| {
        let mut scenario: serde_json::Value = serde_json::from_str(
            r#"{"name": "t", "duration": "5s",
              "clients": {"count": 30, "workload": {"open": {"rate_per_s": 120}}},
              "network": {"latency": {"exponential": {"mean": "2ms"}}},
              "server": {"concurrency": 1, "queue_limit": 6, "error_rate": 0.3,
                 "service_time": {"exponential": {"mean": "9ms"}}},
              "policy": {"timeout": "35ms", "retry": {"max_attempts": 4,
                  "backoff": {"base": "5ms", "multiplier": 2, "cap": "200ms", "jitter": "none"}}},
              "metrics": {"bucket": "50ms"}}"#,
        )
        .unwrap();
        let keys = |text: &str| -> serde_json::Map<String, serde_json::Value> {
            let text = text.trim().trim_start_matches(',');
            serde_json::from_str(&format!("{{{text}}}")).unwrap()
        };
        for (at, text) in [("server", server), ("policy", policy), ("", extra)] {
            let object = match at {
                "" => &mut scenario,
                _ => &mut scenario[at],
            };
            object.as_object_mut().unwrap().extend(keys(text));
        }
        scenario.to_string()
    };
    vec![
        ("plain", base("", "", "")),
        ("no timeout", base("", r#", "timeout": null"#, "")),
        ("deadline", base("", r#", "deadline": "120ms""#, "")),
        (
            "deadline only",
            base("", r#", "timeout": null, "deadline": "120ms""#, ""),
        ),
        (
            "no backoff",
            base(
                "",
                r#", "retry": {"max_attempts": 4, "backoff": "none"}"#,
                "",
            ),
        ),
        (
            "rate limit",
            base(
                r#", "rate_limit": {"rate_per_s": 60, "burst": 5, "retry_after": "30ms"}"#,
                "",
                "",
            ),
        ),
        (
            "faults",
            base(
                r#", "faults": [{"from": "1s", "to": "1.5s", "outage": "reject"}, {"from": "2s", "to": "2.5s", "outage": "drop"}, {"from": "3s", "to": "3.5s", "concurrency": 0}, {"from": "3.6s", "to": "4s", "error_rate": 0.9}]"#,
                "",
                "",
            ),
        ),
        (
            "permanent",
            base(r#", "permanent_error_rate": 0.1"#, "", ""),
        ),
        ("drop expired", base(r#", "drop_expired": true"#, "", "")),
        (
            "codel",
            base(r#", "discipline": "codel", "queue_limit": 50"#, "", ""),
        ),
        (
            "adaptive lifo",
            base(
                r#", "discipline": "adaptive_lifo", "drop_expired": true, "queue_limit": 50"#,
                "",
                "",
            ),
        ),
        (
            "fallback",
            base("", r#", "fallback": {"latency": {"constant": "1ms"}}"#, ""),
        ),
        ("not idempotent", base("", r#", "idempotent": false"#, "")),
        ("max_time", base("", "", r#", "max_time": "5s""#)),
        (
            "occ timed",
            r#"{"name": "t", "duration": "2s",
              "clients": {"count": 30, "workload": {"open": {"rate_per_s": 80}}},
              "network": {"latency": {"exponential": {"mean": "2ms"}}},
              "server": {"kind": "occ", "permanent_error_rate": 0.05},
              "policy": {"timeout": "9ms", "retry": {"max_attempts": 6,
                  "backoff": {"base": "5ms", "multiplier": 2, "cap": "200ms", "jitter": "none"}}},
              "metrics": {"bucket": "50ms"}}"#
                .to_string(),
        ),
        (
            "closed think",
            r#"{"name": "t", "duration": "5s",
              "clients": {"count": 8, "workload": {"closed": {"requests_per_client": 50,
                "think_time": {"exponential": {"mean": "20ms"}}}}},
              "network": {"latency": {"exponential": {"mean": "2ms"}}},
              "server": {"concurrency": 1, "queue_limit": 3, "error_rate": 0.3,
                 "service_time": {"exponential": {"mean": "9ms"}}},
              "policy": {"timeout": "35ms", "retry": {"max_attempts": 4,
                  "backoff": {"base": "5ms", "multiplier": 2, "cap": "200ms", "jitter": "none"}}},
              "metrics": {"bucket": "50ms"}}"#
                .to_string(),
        ),
        // Every delay constant: instants coincide all the time, and the order of the events
        // of one instant decides (which attempt finds a free place, a free worker).
        ("lattice, closed", lattice("closed", "50ms")),
        ("lattice, open", lattice("open", "50ms")),
    ]
    .into_iter()
    .map(|(name, text)| {
        // As written here, or as `base` writes it (compact).
        let text = text
            .replace(r#"{"exponential": {"mean": "2ms"}}"#, latency)
            .replace(r#"{"exponential":{"mean":"2ms"}}"#, latency);
        (name, text)
    })
    .collect()
}

/// Settling an answer where the service gives it moves no draw when the backoff has no
/// jitter and the hops are constant (with constant hops a settled retry leaves from its own
/// event, in its place among equal times), so the settled path must give exactly what the
/// evented one gives, down to every counter but the events and every bucket of the time
/// series, over the eighteen settling setups, two of them with every delay constant and
/// instants that coincide (sending their settled retries from the answer fails it).
/// (Recording a settled answer in another bucket fails it.)
#[test]
fn settled_answers_equal_evented_ones_without_jitter() {
    let cases = settling_setups(r#"{"constant": "2ms"}"#);
    for (name, text) in &cases {
        let e = crate::scenario::load_str(text, "t", &Default::default())
            .unwrap_or_else(|err| panic!("{name}: {err:?}"));
        let sc = &e.points[0].variants[0].scenario;
        for replication in 0..3 {
            let [mut settled, mut evented] = [true, false].map(|fold| {
                let mut sim = Sim::<Full>::new(sc, 9, replication, TUNING);
                assert!(sim.fold_retries, "{name}: its answers are settled");
                sim.fold_retries = fold;
                let truncated = sim.run(COMPACT_MIN);
                sim.finish(truncated)
            });
            // A settled answer saves its event; with no backoff its retry's event takes its
            // place (`decide` would send the retry at once).
            let fewer = if name == &"no backoff" {
                settled.counters.events == evented.counters.events
            } else {
                settled.counters.events < evented.counters.events
            };
            assert!(fewer, "{name} {replication}: answers were settled");
            for r in [&mut settled, &mut evented] {
                (r.counters.events, r.counters.max_pending) = (0, 0);
            }
            assert_eq!(settled.counters, evented.counters, "{name} {replication}");
            assert_eq!(settled.metrics(), evented.metrics(), "{name} {replication}");
            assert_eq!(
                settled.series.rows(),
                evented.series.rows(),
                "{name} {replication}"
            );
            assert_eq!(settled.truncated, evented.truncated, "{name} {replication}");
        }
    }
}

/// A caller's timer entered into the event list only when its attempt reaches the service
/// (and only if the attempt is still awaited then), in the place it took at the send, runs
/// exactly like one entered at the send: the same events, counters, metrics and time series,
/// over the eighteen settling setups and one where the timer's place among equal times
/// decides. Fewer events wait in the list. (Every bundled scenario, call graphs included, is
/// compared in `run_options_change_no_bundled_scenario`.)
#[test]
fn timers_entered_on_arrival_change_nothing() {
    let mut runs: Vec<(String, Scenario)> = Vec::new();
    for (name, text) in settling_setups(r#"{"exponential": {"mean": "2ms"}}"#) {
        let e = crate::scenario::load_str(&text, "t", &Default::default()).unwrap();
        runs.push((name.to_string(), e.points[0].variants[0].scenario.clone()));
    }
    // Each attempt's service ends at the very instant its timer fires: the timer's place,
    // taken at the send before the service's end was scheduled, decides that the caller gives
    // up first and the work is wasted (entered at the arrival, it would come after: an
    // answer, then a late reply).
    let tie = r#"{"name": "t", "duration": "5s",
      "clients": {"count": 20, "workload": {"open": {"rate_per_s": 40}}},
      "network": {"latency": {"constant": "5ms"}},
      "server": {"concurrency": 100, "service_time": {"constant": "15ms"}},
      "policy": {"timeout": "20ms", "retry": {"max_attempts": 2, "retry_on": ["timeout"]}},
      "metrics": {"bucket": "50ms"}}"#;
    let e = crate::scenario::load_str(tie, "t", &Default::default()).unwrap();
    runs.push(("tie".into(), e.points[0].variants[0].scenario.clone()));
    let (mut timeouts, mut fewer) = (0, 0);
    for (name, sc) in &runs {
        let [on_arrival, at_send] = timers_both_ways(sc, 4, 0);
        assert!(
            on_arrival.counters.max_pending <= at_send.counters.max_pending,
            "{name}"
        );
        fewer += usize::from(on_arrival.counters.max_pending < at_send.counters.max_pending);
        timeouts += on_arrival.counters.attempt_outcomes[Outcome::Timeout.index()];
        assert_same_run(on_arrival, at_send, name);
    }
    assert!(timeouts > 0, "timers fire");
    let (_, tie) = runs.iter().find(|(name, _)| name == "tie").expect("tie");
    let tie = run_with(tie, 4, 0, TUNING);
    assert!(tie.counters.requests > 100 && tie.metrics().success_rate == 0.0);
    assert_eq!(
        tie.entry().wasted,
        2 * tie.counters.requests,
        "the caller gives up first"
    );
    assert!(
        fewer > runs.len() / 2,
        "timers wait less: {fewer} of {}",
        runs.len()
    );
}

/// A request's success settled where its service answers (`Sim::succeed_at_once`) runs
/// exactly like one whose answer travels as an event: the same counters, metrics, time
/// series and truncation, in fewer events, over the eighteen settling setups with random hops
/// (max_time, a closed workload and timers included; the two with constant hops keep their
/// events). (Counting a settled success before the run reaches it fails it, as does reading
/// the requests in flight at a bucket's end without the ones settled for before it.)
#[test]
fn settled_successes_equal_evented_ones() {
    for (name, text) in settling_setups(r#"{"exponential": {"mean": "2ms"}}"#) {
        let e = crate::scenario::load_str(&text, "t", &Default::default()).unwrap();
        let sc = &e.points[0].variants[0].scenario;
        for replication in 0..3 {
            let [settled, evented] = successes_both_ways(sc, 5, replication);
            assert!(settled.counters.final_outcomes[Outcome::Success.index()] > 0);
            if name.starts_with("lattice") {
                // Constant hops: an answer keeps its event.
                assert_eq!(settled.counters.events, evented.counters.events, "{name}");
            } else {
                assert!(
                    settled.counters.events < evented.counters.events,
                    "{name}: successes were settled"
                );
            }
            assert_same_results(settled, evented, &format!("{name} {replication}"));
        }
    }
}

/// A request's success settled where its service answers ends the request when the answer
/// arrives, not before: after the last event, the run goes on to it (its end, the time series'
/// buckets, the request in flight until then), and a `max_time` that falls between the
/// service's answer and its arrival leaves the request in flight, as the answer's event would.
#[test]
fn a_settled_success_ends_its_request_when_its_answer_arrives() {
    let text = |max_time: &str| {
        format!(
            r#"{{"name": "t", "duration": "1ms" {max_time},
              "clients": {{"count": 1, "workload": {{"closed": {{"requests_per_client": 1}}}}}},
              "network": {{"latency": {{"uniform": {{"min": "900us", "max": "1100us"}}}}}},
              "server": {{"concurrency": 1, "service_time": {{"constant": "10ms"}}}},
              "metrics": {{"bucket": "1ms"}}}}"#
        )
    };
    for (max_time, ends) in [("", true), (r#", "max_time": "11.5ms""#, false)] {
        let e = crate::scenario::load_str(&text(max_time), "t", &Default::default()).unwrap();
        let sc = &e.points[0].variants[0].scenario;
        let [settled, evented] = successes_both_ways(sc, 1, 0);
        // The client's start, the arrival, the service's end; the answer's event is saved.
        assert_eq!(settled.counters.events, 3, "{max_time}");
        assert_eq!(evented.counters.events, 4, "{max_time}");
        let c = &settled.counters;
        let in_flight = column(&settled, Column::InFlight);
        let succeeded = c.final_outcomes[Outcome::Success.index()];
        if ends {
            // The answer arrives between 11.8 and 12.2 ms.
            let end = c.end_time.as_nanos();
            assert!((11_800_000..=12_200_000).contains(&end), "{end}");
            assert_eq!((succeeded, c.makespan.as_nanos()), (1, end));
            assert_eq!(settled.truncated, None);
            let last = (end / 1_000_000) as usize;
            assert_eq!(in_flight.len(), last + 1, "{in_flight:?}");
            assert!(in_flight[..last].iter().all(|&n| n == 1), "{in_flight:?}");
            assert_eq!(in_flight[last], 0, "{in_flight:?}");
            assert_eq!(settled.series.rows()[last][Column::Succeeded as usize], 1);
        } else {
            assert_eq!(succeeded, 0);
            assert_eq!(c.end_time, SimTime(11_500_000));
            assert_eq!(
                settled.truncated,
                Some(Truncation::MaxTime {
                    at: SimDuration::from_nanos(11_500_000),
                    in_flight: 1
                })
            );
        }
        assert_same_results(settled, evented, max_time);
    }
}

/// Requests far apart, in 1 ms buckets: the next event after a settled success often lies
/// many buckets after it, and the buckets it passes over have the request in flight up to the
/// success's instant and not after, as the answer's own event would have them.
#[test]
fn a_settled_success_leaves_flight_in_its_own_bucket() {
    let text = r#"{"name": "t", "duration": "2s",
      "clients": {"count": 1, "workload": {"open": {"rate_per_s": 20}}},
      "network": {"latency": {"uniform": {"min": "900us", "max": "1100us"}}},
      "server": {"concurrency": 1, "service_time": {"constant": "10ms"}},
      "metrics": {"bucket": "1ms"}}"#;
    let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
    let sc = &e.points[0].variants[0].scenario;
    let [settled, evented] = successes_both_ways(sc, 2, 0);
    let requests = settled.counters.requests;
    assert!(requests > 20);
    assert_eq!(evented.counters.events - settled.counters.events, requests);
    let busy = settled
        .series
        .rows()
        .iter()
        .filter(|row| row[Column::InFlight as usize] > 0)
        .count() as u64;
    // Each request is in flight at the ends of 11 to 13 buckets (12 ms each).
    assert!((10 * requests..=13 * requests).contains(&busy), "{busy}");
    assert_same_results(settled, evented, "sparse");
}

/// With hop delays that have no atom, a settled retry is sent from where its answer is
/// settled, with no event of its own, and is counted for the instant it leaves: one request
/// that fails at once and retries after 2 s has its retry in the 2 s bucket, not in the
/// bucket of the answer, in six events (its start, two arrivals, two services, the last
/// answer) rather than seven.
#[test]
fn a_settled_departure_is_counted_when_it_leaves() {
    let text = r#"{"name": "t", "duration": "1s",
      "clients": {"count": 1, "workload": {"closed": {"requests_per_client": 1}}},
      "network": {"latency": {"uniform": {"min": "900us", "max": "1100us"}}},
      "server": {"concurrency": 1, "error_rate": 1, "service_time": {"constant": "8ms"}},
      "policy": {"retry": {"max_attempts": 2, "retry_on": ["error"],
          "backoff": {"base": "2s", "multiplier": 1, "cap": "2s", "jitter": "none"}}},
      "metrics": {"bucket": "100ms"}}"#;
    let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
    let sc = &e.points[0].variants[0].scenario;
    let r = run(sc, 1, 0);
    assert_eq!(r.counters.retries, 1);
    assert_eq!(r.counters.events, 6, "the retry left without an event");
    let retries = column(&r, Column::Retries);
    // The answer reaches the client at about 10 ms; the retry leaves 2 s later.
    assert_eq!(retries.iter().sum::<u32>(), 1);
    assert_eq!(retries[20], 1, "{retries:?}");
}

/// Every bundled scenario but bench-10m at its first and last sweep point, every variant, cut
/// to 60 s, with two replications each: the scenario, the replication and a name to report.
fn bundled_cases() -> Vec<(Scenario, u64, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| !p.ends_with("bench-10m.json"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    for path in &paths {
        let e = crate::scenario::load_file(path, &Default::default()).unwrap();
        let last = e.points.len() - 1;
        for point in [0, last] {
            for v in &e.points[point].variants {
                let mut sc = v.scenario.clone();
                sc.duration = sc.duration.min(SimDuration::from_secs(60));
                for replication in 0..2 {
                    let name = format!("{} / {} / {replication}", path.display(), v.name);
                    cases.push((sc.clone(), replication, name));
                }
            }
        }
    }
    cases
}

/// Every bundled scenario but bench-10m, at its first and last sweep point, every variant,
/// two replications, cut to 60 s: timers entered when their attempt reaches the service give
/// exactly what timers entered at the send give, and successes settled where the service
/// answers exactly what answers that travel as events give, in fewer events (idempotency keys,
/// hedges, bulkheads, call graphs, `occ` rows and load shedding included).
#[test]
fn run_options_change_no_bundled_scenario() {
    let cases = bundled_cases();
    for (sc, replication, name) in &cases {
        let [a, b] = timers_both_ways(sc, 11, *replication);
        assert_same_run(a, b, &format!("timers: {name}"));
        let [a, b] = successes_both_ways(sc, 11, *replication);
        assert_same_results(a, b, &format!("successes: {name}"));
    }
    assert!(cases.len() > 150, "{} runs", cases.len());
}

/// Asserts that two runs of one setup, carried out two ways, gave the same result: every
/// counter but the most events pending, every metric, series row, service and call, and the
/// same truncation.
fn assert_same_run(mut a: RunResult, mut b: RunResult, name: &str) {
    (a.counters.max_pending, b.counters.max_pending) = (0, 0);
    assert_eq!(a.counters, b.counters, "{name}");
    assert_eq!(a.metrics(), b.metrics(), "{name}");
    assert_eq!(a.series.rows(), b.series.rows(), "{name}");
    assert_eq!(a.services, b.services, "{name}");
    assert_eq!(a.calls, b.calls, "{name}");
    assert_eq!(a.truncated, b.truncated, "{name}");
}

/// Hops of 1 ms or 1 ms + 1 ns (no atom, but integer nanoseconds) and constant service
/// times: answers, arrivals, clients' starts and buckets' ends fall on the same instants all
/// the time, and a settled success counts among the events of its instant in the place its
/// answer's event would have taken (before a request admitted at that instant sees the
/// requests in flight, or after), so the runs stay exactly equal, `max_in_flight` and its
/// truncation included. (Reaching an end at its instant whatever its place fails it.)
#[test]
fn settled_successes_keep_their_place_among_equal_times() {
    let setup = |workload: &str, limit: &str| {
        format!(
            r#"{{"name": "t", "duration": "2s" {limit},
              "clients": {{"count": 20, "workload": {workload}}},
              "network": {{"latency": {{"uniform": {{"min": "1ms", "max": "1.000001ms"}}}}}},
              "server": {{"concurrency": 4, "service_time": {{"constant": "1ms"}}}},
              "metrics": {{"bucket": "1ms"}}}}"#
        )
    };
    let open = r#"{"open": {"rate_per_s": 2000}}"#;
    let closed = r#"{"closed": {"requests_per_client": 1,
        "start": {"uniform": {"min": "0ms", "max": "40ms"}}}}"#;
    // Clients that start at 0 or 3 ms: the later ones start at the instants of the first
    // ones' answers.
    let closed_ties = r#"{"closed": {"requests_per_client": 1,
        "start": {"mixture": [{"weight": 1, "dist": {"constant": "0ms"}},
                              {"weight": 1, "dist": {"constant": "3ms"}}]}}}"#;
    let (mut truncated, mut runs) = (0, 0);
    for (workload, limit) in [
        (open, ""),
        (open, r#", "limits": {"max_in_flight": 8}"#),
        (closed, ""),
        (closed_ties, ""),
    ] {
        let text = setup(workload, limit);
        let e = crate::scenario::load_str(&text, "t", &Default::default()).unwrap();
        let sc = &e.points[0].variants[0].scenario;
        for replication in 0..5 {
            let [settled, evented] = successes_both_ways(sc, 3, replication);
            assert!(settled.counters.events < evented.counters.events);
            truncated += usize::from(settled.truncated.is_some());
            runs += 1;
            assert_same_results(settled, evented, &format!("{text} {replication}"));
        }
    }
    assert!(truncated > 0 && truncated < runs, "{truncated} of {runs}");
}

/// Column `col` of the main time series of `r`, bucket by bucket.
fn column(r: &RunResult, col: Column) -> Vec<u32> {
    r.series
        .rows()
        .iter()
        .map(|row| row[col as usize])
        .collect()
}

/// A success settled for an instant before `max_time` is counted when the run is cut off
/// there by a later event, and a run that reaches the end of time ends at its last event
/// even when the successes it reaches there came before it, as their events would have it.
#[test]
fn settled_successes_are_reached_at_the_runs_cut() {
    // The answer arrives at about 12 ms; a fault window's edges come at 24 and 26 ms, and
    // no bucket ends before the cut to reach the success.
    let cut = r#"{"name": "t", "duration": "25ms", "max_time": "25ms",
      "clients": {"count": 1, "workload": {"closed": {"requests_per_client": 1}}},
      "network": {"latency": {"uniform": {"min": "900us", "max": "1100us"}}},
      "server": {"concurrency": 1, "service_time": {"constant": "10ms"},
         "faults": [{"from": "24ms", "to": "26ms", "concurrency": 0}]},
      "metrics": {"bucket": "100ms"}}"#;
    let e = crate::scenario::load_str(cut, "t", &Default::default()).unwrap();
    let [settled, evented] = successes_both_ways(&e.points[0].variants[0].scenario, 1, 0);
    let c = &settled.counters;
    assert_eq!(c.final_outcomes[Outcome::Success.index()], 1);
    assert_eq!(
        (c.end_time, &settled.truncated),
        (SimTime(25_000_000), &None)
    );
    assert_same_results(settled, evented, "cut by max_time");
    // The last event is a fault window's end at 60 ms; the answers came well before it.
    let end_of_time = r#"{"name": "t", "duration": "100ms",
      "clients": {"count": 6, "workload": {"closed": {"requests_per_client": 1}}},
      "network": {"latency": {"exponential": {"mean": "1ms"}}},
      "server": {"concurrency": 1, "error_rate": 0.5, "service_time": {"constant": "1ms"},
         "faults": [{"from": "50ms", "to": "60ms", "concurrency": 2}]},
      "metrics": {"bucket": "10s"},
      "policy": {"retry": {"max_attempts": 5, "retry_on": ["error"]}}}"#;
    // A failure's retry waits past the end of time: its event is the next after the fault
    // window's end, and no bucket ends before it to reach the successes.
    let mut sc = with_yearly_backoff(end_of_time);
    sc.policy.retry.backoff = crate::model::Backoff::exponential(
        SimDuration(u64::MAX),
        1000.0,
        SimDuration(u64::MAX),
        crate::model::Jitter::None,
    );
    let mut ended = 0;
    for replication in 0..10 {
        let [settled, evented] = successes_both_ways(&sc, 3, replication);
        if let Some(Truncation::EndOfTime { at, .. }) = settled.truncated {
            assert!(at >= SimTime(60_000_000), "{at:?}");
            ended += 1;
        }
        assert_same_results(settled, evented, &format!("end of time {replication}"));
    }
    assert!(ended > 0);
}

/// A run of `sc` as every run outside the tests is carried out, and one with `other`.
fn both_ways(sc: &Scenario, seed: u64, replication: u64, other: Tuning) -> [RunResult; 2] {
    [TUNING, other].map(|tuning| run_with(sc, seed, replication, tuning))
}

/// A run of `sc` with timers entered when their attempt reaches the service, and one with
/// timers entered at the send.
fn timers_both_ways(sc: &Scenario, seed: u64, replication: u64) -> [RunResult; 2] {
    let at_send = Tuning {
        timers_on_arrival: false,
        ..TUNING
    };
    both_ways(sc, seed, replication, at_send)
}

/// A run of `sc` with successes settled where the service answers, and one where every
/// answer travels as an event.
fn successes_both_ways(sc: &Scenario, seed: u64, replication: u64) -> [RunResult; 2] {
    let evented = Tuning {
        successes_at_once: false,
        ..TUNING
    };
    both_ways(sc, seed, replication, evented)
}

/// [`assert_same_run`] for runs that handle different numbers of events for the same
/// results.
fn assert_same_results(mut a: RunResult, mut b: RunResult, name: &str) {
    (a.counters.events, b.counters.events) = (0, 0);
    assert_same_run(a, b, name);
}

/// The driver built for fewer features (`features::Lean`) gives every bundled scenario that
/// it fits the very results of the full build, byte for byte (their `Debug` text, which holds
/// every count, histogram, series row and truncation); the others run the full build either
/// way.
#[test]
fn feature_builds_give_the_full_builds_results() {
    let cases = bundled_cases();
    let mut lean = 0;
    for (sc, replication, name) in &cases {
        let full = run_as::<Full>(sc, 11, *replication, TUNING);
        let chosen = run_with(sc, 11, *replication, TUNING);
        assert_eq!(format!("{full:?}"), format!("{chosen:?}"), "{name}");
        lean += usize::from(Lean::fits(sc));
    }
    let runs = cases.len();
    assert!(runs > 150, "{runs} runs");
    assert!(lean > 50, "{lean} of {runs} runs fit the lean build");
}
