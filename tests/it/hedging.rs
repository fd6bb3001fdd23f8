//! Hedged requests and duplicate side effects through the bundled scenarios
//! (docs/reference-results.md, hedged requests and duplicates): hedging cuts a slow tail for
//! little load and overloads a busy server unless budgeted; retries of a call that is not
//! idempotent execute it twice, and idempotency keys stop that; hedging a slow dependency in
//! a chain adds load to it.

use retrystorm::metrics::{ExperimentResult, VariantResult};
use retrystorm::scenario::LoadOptions;
use serde_json::json;

use crate::{run_bundled, variant};

/// The variant `name` at the sweep point whose value is `rate`.
fn at<'a>(result: &'a ExperimentResult, rate: u64, name: &str) -> &'a VariantResult {
    let point = result
        .points
        .iter()
        .find(|p| p.value == Some(json!(rate)))
        .unwrap_or_else(|| panic!("no sweep point {rate}"));
    point
        .variants
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name:?}"))
}

/// Hedges sent per request.
fn extra(v: &VariantResult) -> f64 {
    v.metrics.hedges / v.metrics.requests
}

#[test]
fn tail_at_scale_hedging_cuts_p999_for_a_few_percent_more_attempts() {
    let (_, r) = run_bundled("tail-at-scale", &LoadOptions::default());
    let plain = at(&r, 200, "no hedging");
    // The slow 2 % take 1 s: p99.9 is a second plus the two hops.
    let p999 = plain.metrics.latency_ms.p999;
    assert!(
        (1000.0..1010.0).contains(&p999),
        "no hedging: p99.9 {p999} ms"
    );
    assert_eq!(plain.metrics.hedges, 0.0);
    for name in [
        "hedge after 10 ms",
        "hedge at p95",
        "hedge after 10 ms, budget 5 %",
    ] {
        let v = at(&r, 200, name);
        let m = &v.metrics;
        assert_eq!(
            m.requests, plain.metrics.requests,
            "{name}: the same traffic"
        );
        assert_eq!(m.success_rate, 1.0, "{name}");
        assert!(
            m.latency_ms.p999 < 50.0,
            "{name}: p99.9 {} ms",
            m.latency_ms.p999
        );
        // Every extra attempt is a hedge: no retries here.
        assert!((m.attempts - m.requests - m.hedges).abs() < 1e-6, "{name}");
        assert!(extra(v) < 0.055, "{name}: {} hedges per request", extra(v));
        assert!(m.hedge_wins > 0.0 && m.hedge_wins < m.hedges, "{name}");
    }
    // After 10 ms: the slow 2 % and the fast attempts whose 2 ms exponential service (plus
    // 1 ms of hops) is not done by then.
    let fixed = extra(at(&r, 200, "hedge after 10 ms"));
    let expected = 0.02 + 0.98 * (-9.0f64 / 2.0).exp();
    assert!(
        (fixed - expected).abs() < 0.004,
        "{fixed} against {expected}"
    );
    // At the 95th percentile: the slowest 5 %.
    let p95 = extra(at(&r, 200, "hedge at p95"));
    assert!(
        (p95 - 0.05).abs() < 0.005,
        "{p95} hedges per request at p95"
    );
}

#[test]
fn tail_at_scale_unbudgeted_hedges_overload_a_busy_server_and_a_budget_prevents_it() {
    let (_, r) = run_bundled("tail-at-scale", &LoadOptions::default());
    let base = at(&r, 1800, "no hedging").metrics.latency_ms.p99;
    assert!(
        base > 1000.0,
        "without hedging the slow 2 % set p99: {base} ms"
    );
    for name in ["hedge after 10 ms", "hedge at p95"] {
        let v = at(&r, 1800, name);
        assert!(
            v.metrics.latency_ms.p99 > 10.0 * base && extra(v) > 0.5,
            "{name}: p99 {} ms against {base} ms, {} hedges per request",
            v.metrics.latency_ms.p99,
            extra(v)
        );
    }
    let budgeted = at(&r, 1800, "hedge after 10 ms, budget 5 %");
    let (p99, half) = (
        budgeted.metrics.latency_ms.p99,
        budgeted.ci95.latency_ms.p99,
    );
    assert!(
        p99 + half < base,
        "budgeted: p99 {p99} ± {half} ms against {base} ms"
    );
    assert!(
        extra(budgeted) <= 0.05,
        "{} hedges per request",
        extra(budgeted)
    );
}

#[test]
fn double_charge_retries_execute_twice_and_keys_stop_it() {
    let (_, r) = run_bundled("double-charge", &LoadOptions::default());
    let no_key = variant(&r, "retries, no key");
    let key = variant(&r, "retries with a key");
    let s = no_key.metrics.entry();
    // The slowdown makes clients give up on attempts the server still executes.
    assert!(
        s.duplicate_calls > 1000.0,
        "{} requests executed twice",
        s.duplicate_calls
    );
    assert!(s.duplicates >= s.duplicate_calls);
    assert_eq!(s.replayed, 0.0);
    // With a key: nothing executes twice, the repeats are answered from memory, and the
    // requests whose first attempt came too late get its result instead of failing.
    let k = key.metrics.entry();
    assert_eq!((k.duplicates, k.duplicate_calls), (0.0, 0.0));
    assert!(k.replayed > 0.0);
    assert!(
        key.metrics.success_rate - key.ci95.success_rate
            > no_key.metrics.success_rate + no_key.ci95.success_rate
    );
    assert!(key.metrics.attempts < no_key.metrics.attempts);
    // Hedging a payment without its key adds duplicates of its own; with the key, none.
    let hedged = variant(&r, "hedged, no key");
    assert!(hedged.metrics.hedges > 0.0);
    assert!(hedged.metrics.entry().duplicates > s.duplicates);
    let hedged_key = variant(&r, "hedged with a key");
    assert!(hedged_key.metrics.hedges > 0.0);
    assert_eq!(hedged_key.metrics.entry().duplicates, 0.0);
    // One attempt per request executes once.
    let once = variant(&r, "no retries");
    assert_eq!(once.metrics.entry().duplicates, 0.0);
    assert_eq!(once.metrics.attempts, once.metrics.requests);
}

#[test]
fn hedging_a_slowed_dependency_adds_load_to_it() {
    let (_, r) = run_bundled("tiers-cascading-slowdown", &LoadOptions::default());
    let plain = variant(&r, "deadlines not passed down");
    let hedged = variant(&r, "api hedges its db calls");
    let db = |v: &VariantResult| (v.metrics.services[2].attempts, v.ci95.services[2].attempts);
    let ((p, ph), (h, hh)) = (db(plain), db(hedged));
    assert!(
        h - hh > p + ph,
        "db attempts: {h} ± {hh} hedged, {p} ± {ph} without"
    );
    let call = &hedged.metrics.calls[1];
    assert!(call.hedges > 0.0, "the api → db call hedged");
    assert_eq!(plain.metrics.calls[1].hedges, 0.0);
}
