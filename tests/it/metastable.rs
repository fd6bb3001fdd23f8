//! Metastable failures (docs/reference-results.md: the collapse after a spike and the HotOS stall): a trigger tips some systems into a storm
//! that outlives it; the recovery analysis says which, how often and how fast; the phase
//! diagram's boundary moves as the theory says; and a storm that grows without bound stops at
//! its limits.

use retrystorm::metrics::Metrics;
use retrystorm::metrics::{ExperimentResult, VariantResult};
use retrystorm::scenario::{Experiment, LoadOptions};
use serde_json::{Value, json};

use crate::cli::retrystorm;
use crate::{metric, run_bundled, run_text, scenario_path, variant};

fn recovery(v: &VariantResult, key: &str) -> f64 {
    metric(v, &format!("recovery.{key}")).0
}

/// Each replication's own metrics for the variant `name`, simulated again through the
/// library: a variant's result keeps only its summary.
fn replication_metrics(experiment: &Experiment, name: &str) -> Vec<Metrics> {
    let v = experiment.points[0]
        .variants
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name:?}"));
    (0..experiment.replications)
        .map(|r| retrystorm::sim::run(&v.scenario, experiment.seed, u64::from(r)).metrics())
        .collect()
}

fn replication_values(runs: &[Metrics], key: &str) -> Vec<f64> {
    let k = retrystorm::metrics::Metric::PER_REPLICATION
        .iter()
        .find(|k| k.key == key)
        .unwrap_or_else(|| panic!("no metric {key}"));
    runs.iter().map(|r| k.value(r)).collect()
}

#[test]
fn without_backoff_most_replications_collapse_and_with_jitter_all_recover() {
    let (experiment, result) = run_bundled("collapse-after-spike", &LoadOptions::default());
    let storm = variant(&result, "no backoff");
    assert_eq!(recovery(storm, "replications"), 200.0);
    let collapsed = 1.0 - recovery(storm, "recovered_fraction");
    // Brooker's own simulator: 73-81 %. This model gives 68.5 % (65.6-71.3 %) over 1000
    // replications; counting the starting attempt in the slowdown too (the same as a 1.01 s
    // base) gives 73.6 %. Here: 200 replications, seeded.
    assert!(
        (0.60..=0.80).contains(&collapsed),
        "{collapsed} of the replications collapsed"
    );
    // Bimodal: every replication is either healthy (one attempt per request, nearly all
    // succeed) or collapsed (about three timed-out attempts per request from the spike on).
    let runs = replication_metrics(&experiment, "no backoff");
    let success = replication_values(&runs, "success_rate");
    let load = replication_values(&runs, "amplification");
    let timeouts = replication_values(&runs, "timeouts");
    let requests = replication_values(&runs, "requests");
    let mut collapsed_runs = 0;
    for i in 0..success.len() {
        let healthy = success[i] > 0.97 && load[i] < 1.1;
        let storm = success[i] < 0.6 && load[i] > 2.0 && timeouts[i] / requests[i] > 1.5;
        assert!(
            healthy || storm,
            "replication {i} looks like neither state: success {}, load {}",
            success[i],
            load[i]
        );
        collapsed_runs += usize::from(storm);
    }
    assert_eq!(collapsed_runs as f64 / 200.0, collapsed);
    assert!(recovery(storm, "peak_amplification") > 2.0);

    // Full-jitter backoff: every replication recovers, by about t = 30 s (5 s after the
    // spike ends).
    let jitter = variant(&result, "full jitter");
    assert_eq!(recovery(jitter, "recovered_fraction"), 1.0);
    assert!(recovery(jitter, "max_recovery_s") <= 6.0);
    for name in ["token bucket", "circuit breaker"] {
        assert_eq!(
            recovery(variant(&result, name), "recovered_fraction"),
            1.0,
            "{name}"
        );
    }
}

#[test]
fn a_stall_starts_a_storm_that_only_budgets_and_breakers_end() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("hotos-metastable");
    let out = retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "10",
            "--out",
            "run",
            "--quiet",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/summary.json")).unwrap(),
    )
    .unwrap();
    let get = |name: &str, path: &str| -> f64 {
        let v = summary["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variant {name}"));
        path.split('.')
            .fold(&v["metrics"], |d, k| &d[k])
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: no {path}"))
    };
    for name in ["no budget", "backoff"] {
        // Offered attempts near twice the arrivals, goodput near zero, to the end.
        assert!(get(name, "amplification") > 1.9, "{name}");
        assert!(get(name, "success_rate") < 0.05, "{name}");
        assert_eq!(get(name, "recovery.recovered_fraction"), 0.0, "{name}");
    }
    let bucket = get("token bucket", "recovery.median_recovery_s");
    let quota = get("retry quota", "recovery.median_recovery_s");
    for name in ["token bucket", "retry quota", "circuit breaker", "LIFO"] {
        assert_eq!(get(name, "recovery.recovered_fraction"), 1.0, "{name}");
    }
    // docs/reference-results.md: token bucket within about 200 s, retry quota within about 420 s.
    assert!(
        bucket < quota && bucket <= 200.0 && quota <= 420.0,
        "the quota recovers later than the token bucket, within the run: {bucket} s, {quota} s"
    );
    // A drop outage tips some replications over, not all; the report says how many.
    let dropped = get("drop outage", "recovery.recovered_fraction");
    assert!(dropped > 0.0 && dropped < 1.0, "{dropped}");
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    let k = (dropped * 10.0).round() as u32;
    assert!(
        report.contains(&format!("{k} of 10 replications")),
        "report.md does not say that {k} of 10 replications recovered"
    );
    assert!(report.contains("metastable"));
}

fn fraction(run: &(Experiment, ExperimentResult), load: f64, stall_end: &str, name: &str) -> f64 {
    let (experiment, result) = run;
    let (point, _) = result
        .points
        .iter()
        .zip(&experiment.points)
        .find(|(_, at)| {
            at.value.as_ref().and_then(Value::as_f64) == Some(load)
                && at.second_value.as_ref() == Some(&json!(stall_end))
        })
        .unwrap_or_else(|| panic!("no point ({load}, {stall_end})"));
    recovery(
        point.variants.iter().find(|v| v.name == name).unwrap(),
        "recovered_fraction",
    )
}

#[test]
fn the_phase_boundary_moves_with_load_and_attempts() {
    let options = LoadOptions {
        replications: Some(4),
        ..LoadOptions::default()
    };
    let result = run_bundled("metastable-phase", &options);
    // Short stalls never tip the system; without retries beyond capacity it always drains.
    for load in [80.0, 140.0, 200.0, 290.0] {
        for name in ["2 attempts", "3 attempts"] {
            assert_eq!(
                fraction(&result, load, "20.25s", name),
                1.0,
                "{name} at {load}"
            );
        }
    }
    // A long stall tips the system exactly where attempts x load exceed the 300/s the
    // server can serve: above 150/s with 2 attempts, above 100/s with 3.
    let long = "28s";
    assert_eq!(fraction(&result, 140.0, long, "2 attempts"), 1.0);
    assert_eq!(fraction(&result, 170.0, long, "2 attempts"), 0.0);
    assert_eq!(fraction(&result, 80.0, long, "3 attempts"), 1.0);
    assert_eq!(fraction(&result, 140.0, long, "3 attempts"), 0.0);
    // The longest stall each load survives (the last stall before most replications stay
    // collapsed) shrinks as the load grows, and is never longer with more attempts.
    let loads = [80.0, 110.0, 140.0, 170.0, 200.0, 230.0, 260.0, 290.0];
    let stalls = ["20.25s", "20.5s", "21s", "22s", "24s", "28s", "36s"];
    let critical = |name: &str, load: f64| {
        stalls
            .iter()
            .position(|s| fraction(&result, load, s, name) < 0.5)
            .unwrap_or(stalls.len())
    };
    for name in ["2 attempts", "3 attempts"] {
        let survived: Vec<usize> = loads.iter().map(|l| critical(name, *l)).collect();
        assert!(
            survived.windows(2).all(|w| w[1] <= w[0]),
            "{name}: the stall survived should shrink as load grows: {survived:?}"
        );
        assert!(
            survived[0] > survived[survived.len() - 1],
            "{name}: {survived:?}"
        );
    }
    for load in loads {
        assert!(
            critical("3 attempts", load) <= critical("2 attempts", load),
            "{load}"
        );
    }
}

/// The collapse without a budget, for an hour: the server's backlog grows by about 260
/// attempts a second, all of them abandoned.
const ENDLESS_STORM: &str = r#"{
  "name": "endless", "duration": "3600s", "LIMIT"
  "clients": { "count": 10, "workload": { "open": { "rate_per_s": 280 } } },
  "server": { "concurrency": 30, "service_time": { "exponential": { "mean": "100ms" } },
              "faults": [ { "from": "5s", "to": "15s", "concurrency": 0 } ] },
  "policy": { "timeout": "1s", "retry": { "max_attempts": 2 } }
}"#;

#[test]
fn a_storm_that_grows_without_bound_stops_at_its_limits() {
    let cases = [
        (
            r#""limits": { "max_in_flight": 20000 },"#,
            "limits.max_in_flight = 20000 attempts",
        ),
        (
            r#""limits": { "max_events": 300000 },"#,
            "limits.max_events = 300000",
        ),
        (
            r#""max_time": "3700s", "limits": { "max_in_flight": 20000 },"#,
            "limits.max_in_flight",
        ),
    ];
    for (limit, says) in cases {
        let text = ENDLESS_STORM.replace(r#""LIMIT""#, limit);
        let (_, result) = run_text(&text);
        let v = &result.points[0].variants[0];
        assert_eq!(metric(v, "truncated").0, 1.0, "{limit}");
        let why = &v.truncations.first().expect("a truncation").reason;
        assert!(why.contains(says), "{why}");
        // Stopped early in simulated time, long before an hour.
        assert!(metric(v, "makespan_ms").0 < 600_000.0);
    }
    // max_time alone stops a long drain.
    let text = ENDLESS_STORM.replace(
        r#""duration": "3600s", "LIMIT""#,
        r#""duration": "60s", "max_time": "60s","#,
    );
    let (_, result) = run_text(&text);
    let v = &result.points[0].variants[0];
    let why = &v.truncations.first().expect("stopped at max_time").reason;
    assert!(why.contains("stopped at max_time 1m with"), "{why}");
}
