//! Recovery after a trigger: the `recovery` object appears only when a scenario has triggers,
//! a healthy system recovers in every replication, and the report re-renders it unchanged.

use crate::cli::retrystorm;
use crate::{metric, run_text, variant};

/// A server with room to spare (20 workers, 100 ms each: 200/s) offered 40/s, with `profile`
/// as the open workload's rate profile (JSON text, or empty for none).
fn healthy(profile: &str, faults: &str) -> String {
    let profile = if profile.is_empty() {
        String::new()
    } else {
        format!(r#", "profile": {profile}"#)
    };
    let faults = if faults.is_empty() {
        String::new()
    } else {
        format!(r#", "faults": {faults}"#)
    };
    format!(
        r#"{{
  "name": "recovery-test",
  "seed": 3,
  "replications": 6,
  "duration": "40s",
  "clients": {{ "count": 10, "workload": {{ "open": {{ "rate_per_s": 40{profile} }} }} }},
  "network": {{ "latency": {{ "constant": "5ms" }} }},
  "server": {{ "concurrency": 20, "service_time": {{ "exponential": {{ "mean": "100ms" }} }}{faults} }},
  "policy": {{ "timeout": "1s", "retry": {{ "max_attempts": 3, "backoff": "none" }} }}
}}"#
    )
}

const SPIKE: &str = r#"[{"at": "10s", "rate_per_s": 80}, {"at": "15s", "rate_per_s": 40}]"#;

#[test]
fn recovery_is_reported_only_when_the_scenario_has_triggers() {
    let (_, result) = run_text(&healthy("", ""));
    let v = variant(&result, "baseline");
    assert!(v.metrics.recovery.is_none(), "{:?}", v.metrics);
    assert!(v.ci95.recovery.is_none());

    // A profile that never leaves its base rate is no trigger either.
    let flat = r#"[{"at": "10s", "rate_per_s": 40}]"#;
    let (_, result) = run_text(&healthy(flat, ""));
    assert!(variant(&result, "baseline").metrics.recovery.is_none());

    // Nor is a profile that moves to another rate for good: the goodput before it is no
    // longer the level to come back to (regression: a healthy system was called metastable).
    let lower = r#"[{"at": "10s", "rate_per_s": 80}, {"at": "15s", "rate_per_s": 20}]"#;
    let (_, result) = run_text(&healthy(lower, ""));
    assert!(variant(&result, "baseline").metrics.recovery.is_none());

    // A fault that lasts until new requests stop leaves nothing to judge.
    let to_the_end = r#"[{"from": "30s", "to": "60s", "error_rate": 0.5}]"#;
    let (_, result) = run_text(&healthy("", to_the_end));
    assert!(variant(&result, "baseline").metrics.recovery.is_none());
}

#[test]
fn a_healthy_system_recovers_from_a_load_spike_in_every_replication() {
    let (_, result) = run_text(&healthy(SPIKE, ""));
    let v = variant(&result, "baseline");
    let (fraction, half) = metric(v, "recovery.recovered_fraction");
    assert_eq!(fraction, 1.0);
    assert!(half > 0.0 && half < 0.5, "Wilson half-width {half}");
    assert_eq!(metric(v, "recovery.replications").0, 6.0);
    assert_eq!(metric(v, "recovery.recovered").0, 6.0);
    let lower = metric(v, "recovery.recovered_fraction_lower").0;
    assert!(lower > 0.5 && lower < 1.0, "lower bound {lower}");
    assert_eq!(metric(v, "recovery.recovered_fraction_upper").0, 1.0);
    let (baseline, _) = metric(v, "recovery.baseline_per_s");
    assert!((baseline - 40.0).abs() < 4.0, "baseline {baseline}/s");
    let (median, _) = metric(v, "recovery.median_recovery_s");
    assert!((0.0..5.0).contains(&median), "median recovery {median} s");
    let (peak, _) = metric(v, "recovery.peak_amplification");
    assert!((1.0..1.2).contains(&peak), "peak amplification {peak}");
    let (wasted, _) = metric(v, "recovery.wasted_fraction");
    assert!(wasted < 0.05, "wasted fraction {wasted}");
    // ci95 mirrors the metrics key for key, in order (sweep.csv pairs them up).
    let keys = |doc: &retrystorm::metrics::Metrics| -> Vec<String> {
        serde_json::to_value(doc).unwrap()["recovery"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(keys(&v.metrics), keys(&v.ci95));
}

#[test]
fn a_fault_window_is_a_trigger_too() {
    // A 2 s outage that rejects everything: the healthy server is back at once.
    let faults = r#"[{"from": "10s", "to": "12s", "outage": "reject"}]"#;
    let (_, result) = run_text(&healthy("", faults));
    let v = variant(&result, "baseline");
    assert_eq!(metric(v, "recovery.recovered_fraction").0, 1.0);
}

#[test]
fn the_report_re_renders_recovery_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spike.json");
    std::fs::write(&file, healthy(SPIKE, "")).unwrap();
    let first = dir.path().join("first");
    let out = retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--out",
            first.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(first.join("report.md")).unwrap();
    assert!(report.contains("## Recovery"), "{report}");
    assert!(
        report.contains("recovered in all 6 replications"),
        "{report}"
    );
    let compared = crate::cli::assert_report_re_renders(dir.path(), &first);
    assert!(compared >= 5, "compared {compared} files");
    let csv = std::fs::read_to_string(first.join("load-over-time.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",trigger"), "{csv}");
}
