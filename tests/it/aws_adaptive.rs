//! The AWS SDKs' adaptive retry mode: retrystorm's client rate limiter against botocore's own
//! classes, step for step, and the bundled scenario `aws-adaptive-dilution` against what
//! can be derived on paper (docs/reference-results.md, "AWS adaptive mode").
//!
//! `tests/data/aws-adaptive-trajectory.csv` was written by `bench/aws-adaptive/trajectory.py`,
//! which drives botocore's `ClientRateLimiter` with a clock that keeps retrystorm's time
//! (whole nanoseconds; a wait of s seconds lasts ceil(s * 1e9) ns).

use retrystorm::engine::SimTime;
use retrystorm::model::ClientRateLimiter;

/// Every request of the recorded trajectory: the same send instant to the nanosecond, and
/// the same fill rate, measured rate and gate after its answer, to the bit.
#[test]
fn the_limiter_follows_botocore_step_for_step() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/aws-adaptive-trajectory.csv"
    );
    let text = std::fs::read_to_string(path).expect("the recorded trajectory");
    let mut limiter = ClientRateLimiter::new();
    let mut clock = 0u64;
    let mut rows = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let arrival: u64 = f[0].parse().unwrap();
        let sent: u64 = f[1].parse().unwrap();
        let throttled = f[2] == "1";
        let fill: f64 = f[3].parse().unwrap();
        let measured: f64 = f[4].parse().unwrap();
        clock = clock.max(arrival);
        let at = limiter.send_at(SimTime(clock));
        assert_eq!(
            at,
            SimTime(sent),
            "send of the request that arrived at {arrival} ns"
        );
        clock = at.as_nanos();
        limiter.answered(throttled, at);
        assert_eq!(
            limiter.fill_rate().to_bits(),
            fill.to_bits(),
            "fill rate at {sent} ns"
        );
        assert_eq!(
            limiter.measured_rate().to_bits(),
            measured.to_bits(),
            "measured rate at {sent} ns"
        );
        assert_eq!(limiter.enabled, f[5] == "1", "gate at {sent} ns");
        rows += 1;
    }
    assert!(rows > 1000, "{rows} rows");
    assert!(limiter.delayed > 1000 && limiter.enabled);
}

/// The variant `name` at the point `clients.count` = `n` of the bundled scenario.
fn at<'a>(
    result: &'a retrystorm::metrics::ExperimentResult,
    n: u64,
    name: &str,
) -> &'a retrystorm::metrics::VariantResult {
    result
        .points
        .iter()
        .find(|p| p.value.as_ref().and_then(|v| v.as_u64()) == Some(n))
        .unwrap_or_else(|| panic!("no sweep point {n}"))
        .variants
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name:?}"))
}

/// The server admits R = 100 attempts/s (burst 10) for T = 120 s.
const R: f64 = 100.0;
const T: f64 = 120.0;

/// `aws-adaptive-dilution` against the paper (docs/reference-results.md, "AWS adaptive
/// mode"): the server never serves more than R t + burst by time t; one client, throttled as soon as
/// it sends above R, runs CUBIC cycles from 0.7 W back to W ~ R whose mean is
/// W - C K^3 / 4 = (1 - 0.075) W, so it sends about 0.925 R a second; 100 clients each
/// see a hundredth of the throttles and recover between them, so together they overshoot
/// R, and the rate limiters are diluted as per-client budgets are.
#[test]
fn adaptive_mode_learns_the_limit_alone_and_is_diluted_by_many_clients() {
    let options = retrystorm::scenario::LoadOptions::default();
    let (_, result) = crate::run_bundled("aws-adaptive-dilution", &options);
    for n in [1, 10, 100] {
        for name in ["standard", "adaptive"] {
            let v = at(&result, n, name);
            let served = crate::metric(v, "server.served").0;
            let end = v.metrics.makespan_ms / 1e3;
            assert!(
                served <= R * end + 10.0,
                "{n} {name}: served {served} in {end} s"
            );
        }
        assert_eq!(at(&result, n, "standard").metrics.token_waits, 0.0);
        assert!(at(&result, n, "adaptive").metrics.token_waits > 0.0);
    }
    let rate = |n: u64| crate::metric(at(&result, n, "adaptive"), "attempts").0 / T;
    let alone = rate(1);
    assert!(
        (alone - 0.925 * R).abs() <= 0.05 * R,
        "one client sends {alone}/s, the CUBIC cycle's mean is {}/s",
        0.925 * R
    );
    let many = rate(100);
    assert!(
        many > 1.2 * R && many > 1.2 * alone,
        "100 clients send {many}/s"
    );
    // Without the limiter every client sends its offered load and retries: far more.
    let standard = crate::metric(at(&result, 100, "standard"), "attempts").0 / T;
    assert!(standard > many, "standard {standard}/s, adaptive {many}/s");
}

/// `client_rate_limiter.token_wait`: `true` is botocore's way, written or not; the ways
/// aws-sdk-rust (before smithy-rs#4632) and the JavaScript v3 SDK (before
/// smithy-typescript#1973) waited for a token run differently, and report.md names each.
/// The waits themselves are counted by hand in `model::rate_limiter`'s unit tests.
#[test]
fn token_wait_true_is_botocores_and_the_sdks_older_ways_differ() {
    let mut doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::scenario_path("aws-adaptive-dilution")).unwrap(),
    )
    .unwrap();
    doc["replications"] = serde_json::json!(1);
    doc["duration"] = serde_json::json!("30s");
    doc["sweep"] = serde_json::Value::Null;
    doc["clients"]["count"] = serde_json::json!(10);
    let limiter =
        |v: serde_json::Value| serde_json::json!({ "policy": { "client_rate_limiter": v } });
    doc["variants"] = serde_json::json!([
        { "name": "true", "patch": limiter(serde_json::json!(true)) },
        { "name": "recheck", "patch": limiter(serde_json::json!({ "token_wait": "recheck" })) },
        { "name": "before", "patch": limiter(serde_json::json!({ "token_wait": "deduct_before_wait" })) },
        { "name": "after", "patch": limiter(serde_json::json!({ "token_wait": "deduct_after_wait" })) },
    ]);
    let (e, result) = crate::run_text(&doc.to_string());
    let json = |name: &str| serde_json::to_string(&crate::variant(&result, name).metrics).unwrap();
    assert_eq!(json("true"), json("recheck"));
    assert_ne!(json("before"), json("recheck"));
    assert_ne!(json("after"), json("recheck"));
    let words = retrystorm::scenario::words::describe(&e.points[0].variants[2].scenario).join(" ");
    assert!(words.contains("smithy-lang/smithy-rs#4632"), "{words}");
    let words = retrystorm::scenario::words::describe(&e.points[0].variants[3].scenario).join(" ");
    assert!(
        words.contains("smithy-lang/smithy-typescript#1973"),
        "{words}"
    );
}
