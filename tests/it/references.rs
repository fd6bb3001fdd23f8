//! Bundled scenarios against queueing theory, the retry chapter's checks and closed forms
//! (docs/reference-results.md: queueing theory, the backoff schedule, closed-form amplification, open against closed loops).

use retrystorm::metrics::Column;
use retrystorm::scenario::LoadOptions;

use crate::{assert_close, assert_in_ci, metric, run_bundled, variant};

fn factorial(n: u32) -> f64 {
    (1..=n).map(f64::from).product()
}

/// Probability that an arrival waits in M/M/c with offered load `a` = lambda / mu.
fn erlang_c(c: u32, a: f64) -> f64 {
    let head: f64 = (0..c).map(|k| a.powi(k as i32) / factorial(k)).sum();
    let tail = a.powi(c as i32) / factorial(c) * f64::from(c) / (f64::from(c) - a);
    tail / (head + tail)
}

#[test]
fn queueing_theory_lands_inside_its_own_confidence_intervals() {
    let (_, result) = run_bundled("queueing-theory", &LoadOptions::default());
    let mu = 100.0; // 10 ms mean service

    // M/M/1 at lambda = 80: W = 1 / (mu - lambda).
    let mm1 = variant(&result, "M/M/1 rho=0.8");
    assert_in_ci(mm1, "latency_ms.mean", 1000.0 / (mu - 80.0));

    // M/M/4 at lambda = 320: W = C(c, a) / (c mu - lambda) + 1 / mu.
    let mmc = variant(&result, "M/M/4 rho=0.8");
    let wq = erlang_c(4, 3.2) / (4.0 * mu - 320.0);
    assert_in_ci(mmc, "latency_ms.mean", 1000.0 * (wq + 1.0 / mu));

    // M/M/1/K with K = 5 (queue_limit 4) at rho = 0.9: blocking (1-rho) rho^K / (1 - rho^(K+1)).
    let mm1k = variant(&result, "M/M/1/5 rho=0.9");
    let rho: f64 = 0.9;
    let blocking = (1.0 - rho) * rho.powi(5) / (1.0 - rho.powi(6));
    assert_in_ci(mm1k, "success_rate", 1.0 - blocking);

    // M/D/1 at rho = 0.8: Wq = rho / (2 mu (1 - rho)).
    let md1 = variant(&result, "M/D/1 rho=0.8");
    assert_in_ci(
        md1,
        "latency_ms.mean",
        1000.0 * (0.8 / (2.0 * mu * 0.2) + 1.0 / mu),
    );

    // The intervals are narrow enough for the checks to mean something (a few percent).
    for v in [mm1, mmc, md1] {
        let (mean, half) = metric(v, "latency_ms.mean");
        assert!(half / mean < 0.02, "{}: interval too wide to test", v.name);
    }
}

/// Distinct time buckets (10 us wide) in which retries were sent, and the most in one bucket.
fn retry_instants(v: &retrystorm::metrics::VariantResult) -> (usize, f64) {
    let retries: Vec<f64> = v
        .series
        .iter()
        .map(|row| row[Column::Retries as usize])
        .filter(|n| *n > 0.0)
        .collect();
    let most = retries.iter().copied().fold(0.0, f64::max);
    (retries.len(), most)
}

#[test]
fn retry_chapter_herd_retries_together_without_jitter_and_spreads_with_it() {
    let (_, result) = run_bundled("retry-chapter", &LoadOptions::default());

    let none = variant(&result, "no jitter");
    let (instants, most) = retry_instants(none);
    assert_eq!(
        instants, 6,
        "six retries, each at one instant for the whole herd"
    );
    assert_eq!(most, 100.0, "all 100 clients retry in the same instant");
    // The instants are 10, 30, 70, 150, 250 and 350 ms: cumulative 10, 20, 40, 80, 100, 100.
    let when: Vec<usize> = none
        .series
        .iter()
        .enumerate()
        .filter(|(_, row)| row[Column::Retries as usize] > 0.0)
        .map(|(i, _)| i / 100) // 100 buckets of 10 us per millisecond
        .collect();
    assert_eq!(when, vec![10, 30, 70, 150, 250, 350]);

    let full = variant(&result, "full jitter");
    let (instants, most) = retry_instants(full);
    assert!(
        instants >= 50,
        "full jitter spreads the herd over {instants} instants"
    );
    assert!(most < 10.0);
    assert_eq!(
        metric(full, "retries").0,
        600.0,
        "jitter defers retries; it removes none"
    );

    let permanent = variant(&result, "permanent failure");
    assert_eq!(
        metric(permanent, "attempts").0,
        100.0,
        "a 4xx is tried exactly once"
    );
    assert_eq!(metric(permanent, "retries").0, 0.0);
    assert_eq!(metric(permanent, "failed.permanent").0, 100.0);
}

#[test]
fn amplification_matches_the_closed_form() {
    let (_, result) = run_bundled("amplification-closed-form", &LoadOptions::default());
    let amp = |name: &str| metric(variant(&result, name), "amplification").0;
    assert_close("f=1, 4 attempts", amp("f=1, 4 attempts"), 4.0, 1e-9);
    assert_close("f=1, 3 attempts", amp("f=1, 3 attempts"), 3.0, 1e-9);
    let half = variant(&result, "f=0.5, 4 attempts");
    assert_in_ci(half, "amplification", 1.875);
    assert_in_ci(half, "success_rate", 0.9375);
    assert!(metric(half, "amplification").1 < 0.01);
}

#[test]
fn backoff_defers_open_loop_retries_but_slows_serial_clients() {
    let (_, result) = run_bundled("backoff-open-vs-closed", &LoadOptions::default());
    let get = |name: &str, path: &str| metric(variant(&result, name), path).0;
    // Open loop: about 1.87x with or without backoff.
    for name in ["open, no backoff", "open, backoff"] {
        assert_in_ci(variant(&result, name), "amplification", 1.875);
    }
    let open = get("open, no backoff", "attempts");
    assert_close("open-loop attempts", open, 18_750.0, 400.0);
    assert_close(
        "backoff removes no open-loop attempt",
        get("open, backoff", "attempts"),
        open,
        300.0,
    );
    // Serial clients keep ~1.88x per call, but backoff slows them to under half the attempts.
    for name in ["serial, no backoff", "serial, backoff"] {
        assert_in_ci(variant(&result, name), "amplification", 1.875);
    }
    let serial = get("serial, backoff", "attempts");
    assert!(
        serial < open / 2.0,
        "serial with backoff sent {serial}, open {open}"
    );
    assert!(get("serial, no backoff", "attempts") > serial * 1.5);
}

#[test]
fn thundering_herd_without_jitter_keeps_colliding_and_jitter_spreads_it() {
    let (_, result) = run_bundled("thundering-herd", &LoadOptions::default());
    let none = variant(&result, "no jitter");
    let (none_success, _) = metric(none, "success_rate");
    let (none_attempts, _) = metric(none, "attempts");
    assert!(
        none_success < 0.8,
        "without jitter the herd collides: {none_success}"
    );
    for name in ["full jitter", "equal jitter", "decorrelated jitter"] {
        let v = variant(&result, name);
        let (success, half) = metric(v, "success_rate");
        assert!(success - half > none_success + 0.3, "{name}: {success}");
        assert!(
            metric(v, "attempts").0 < none_attempts * 0.75,
            "{name} sends fewer attempts"
        );
        assert!(metric(v, "makespan_ms").0 < metric(none, "makespan_ms").0);
    }
}

/// The AWS comparison at N = 100 (docs/reference-results.md): (strategy, work in writes, completion time in seconds).
const AWS_TABLE: [(&str, f64, f64); 5] = [
    ("no backoff", 2424.0, 2.0),
    ("exponential", 1854.0, 63.0),
    ("full jitter", 796.0, 4.9),
    ("equal jitter", 812.0, 6.7),
    ("decorrelated jitter", 1005.0, 4.6),
];

fn aws_at(clients: u64) -> retrystorm::metrics::ExperimentResult {
    let options = LoadOptions {
        sweep: Some(retrystorm::scenario::Sweep::new(
            "clients.count",
            vec![clients.into()],
        )),
        ..LoadOptions::default()
    };
    run_bundled("aws-backoff-jitter", &options).1
}

#[test]
fn aws_backoff_and_jitter_table_is_reproduced_at_100_clients() {
    let result = aws_at(100);
    for (name, work, seconds) in AWS_TABLE {
        let v = variant(&result, name);
        let (writes, _) = metric(v, "attempts");
        let (makespan_ms, _) = metric(v, "makespan_ms");
        assert_close(&format!("{name}: work"), writes, work, 0.03 * work);
        assert_close(
            &format!("{name}: completion time"),
            makespan_ms / 1000.0,
            seconds,
            0.06 * seconds,
        );
        assert_eq!(
            metric(v, "success_rate").0,
            1.0,
            "{name}: every client succeeds"
        );
    }
}

#[test]
fn aws_orderings_hold_at_50_clients() {
    let result = aws_at(50);
    let get = |name: &str, path: &str| metric(variant(&result, name), path).0;
    let work = |name: &str| get(name, "attempts");
    for (other, _, _) in AWS_TABLE.iter().filter(|(n, _, _)| *n != "full jitter") {
        assert!(
            work("full jitter") < work(other),
            "full jitter does the least work vs {other}"
        );
    }
    let time = |name: &str| get(name, "makespan_ms");
    for (other, _, _) in AWS_TABLE.iter().filter(|(n, _, _)| *n != "exponential") {
        assert!(
            time("exponential") > time(other),
            "no jitter takes the most time vs {other}"
        );
    }
}
