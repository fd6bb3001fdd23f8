//! What a reviewer reads: metrics that travel as types and round-trip through summary.json,
//! latency split by outcome, percentiles pooled over replications, and findings that never
//! rest on a truncated run.

use retrystorm::metrics::Metrics;
use retrystorm::output::Summary;
use retrystorm::report::{findings, truncation_notes};
use retrystorm::scenario::{LoadOptions, load_str};

use crate::{run_bundled, scenario_path, variant};

#[test]
fn summary_json_round_trips_through_the_typed_metrics() {
    let options = LoadOptions {
        replications: Some(4),
        ..LoadOptions::default()
    };
    // A scenario with a trigger, so the recovery object is part of the round trip.
    let (experiment, result) = run_bundled("collapse-after-spike", &options);
    let summary = Summary::of(&experiment, &result);
    let text = serde_json::to_string_pretty(&summary).unwrap();
    let back: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(back, summary);
    assert_eq!(back.variants.len(), 4);
    for v in &back.variants {
        assert!(v.metrics.recovery.is_some() && v.ci95.recovery.is_some());
    }
    // A misspelt or missing key is an error, never a silent 0.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut bad = doc["variants"][0]["metrics"].clone();
    bad["sucess_rate"] = bad["success_rate"].take();
    bad.as_object_mut().unwrap().remove("success_rate");
    assert!(serde_json::from_value::<Metrics>(bad).is_err());
}

#[test]
fn a_fail_fast_variant_is_slow_where_it_succeeds() {
    // retry-budget's circuit breaker refuses half its requests at once: all-request latency
    // makes it look like the fastest variant, success latency does not.
    let (experiment, result) = run_bundled("retry-budget", &LoadOptions::default());
    let focus = experiment.sweep.as_ref().unwrap().focus();
    let v = result.points[focus]
        .variants
        .iter()
        .find(|v| v.name == "circuit breaker")
        .unwrap();
    let m = &v.metrics;
    assert!(m.failure_rate > 0.4, "it fails fast: {}", m.failure_rate);
    assert!(
        m.success_latency_ms.p50 > 10.0 * m.latency_ms.p50.max(0.1),
        "success p50 {} ms against all-request p50 {} ms",
        m.success_latency_ms.p50,
        m.latency_ms.p50
    );
    assert!(m.success_latency_ms.mean > m.latency_ms.mean);
    assert!(m.failure_latency_ms.p50 < m.success_latency_ms.p50);
    // Shares are computed one way and add up.
    for v in &result.points[focus].variants {
        let sum = v.metrics.success_rate + v.metrics.failure_rate;
        assert!((sum - 1.0).abs() < 1e-9, "{}: {sum}", v.name);
    }
}

#[test]
fn no_finding_names_a_truncated_variant() {
    // The storm of collapse-after-spike, once more with a cap on requests in flight that cuts
    // it off: the capped copy sends far fewer attempts only because it stopped early.
    let text = std::fs::read_to_string(scenario_path("collapse-after-spike"))
        .unwrap()
        .replace(
            r#"{ "name": "no backoff", "patch": {} },"#,
            r#"{ "name": "no backoff", "patch": {} },
               { "name": "capped storm", "patch": { "limits": { "max_in_flight": 150 } } },"#,
        );
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["replications"] = serde_json::json!(20);
    let experiment = load_str(&doc.to_string(), "test", &LoadOptions::default()).unwrap();
    let result = retrystorm::runner::run(&experiment, 0, &|| {});
    let capped = variant(&result, "capped storm");
    assert!(capped.is_truncated(), "the cap cuts the storm off");
    assert!(
        capped.metrics.attempts < variant(&result, "no backoff").metrics.attempts,
        "the truncated copy did less work, which must not count as a win"
    );
    let found = findings(&result.points[0].variants);
    assert!(!found.is_empty());
    for f in &found {
        assert!(!f.contains("capped storm"), "a finding names it: {f}");
    }
    let notes = truncation_notes(&result.points[0].variants);
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("**capped storm**"));
    let md = retrystorm::report::report_md(&experiment, &result, &[]);
    assert!(md.contains("| capped storm (truncated) |"), "{md}");
}

#[test]
fn findings_report_no_ties_and_no_differences_the_setup_forces() {
    // queueing-theory's variants have different arrival rates and worker counts: work and
    // latency follow from that, so neither is a finding; the blocking of M/M/1/5 is.
    let options = LoadOptions {
        replications: Some(5),
        ..LoadOptions::default()
    };
    let (experiment, result) = run_bundled("queueing-theory", &options);
    let found = findings(&result.points[0].variants);
    let text = found.join("\n");
    assert!(!text.contains("fewer attempts"), "{text}");
    assert!(!text.contains("take longer than"), "{text}");
    assert!(!text.contains("last request ends"), "{text}");
    assert!(text.contains("**M/M/1/5 rho=0.9** for only"), "{text}");
    // Theory beside simulation, every prediction inside its interval.
    let md = retrystorm::report::report_md(&experiment, &result, &[]);
    assert!(md.contains("## Theory beside simulation"), "{md}");
    assert_eq!(md.matches("| yes |").count(), 5, "{md}");
}

#[test]
fn the_readme_shows_the_table_the_first_command_prints() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("thundering-herd");
    let out = crate::cli::retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    for line in stdout.lines().take_while(|l| !l.starts_with("results in")) {
        assert!(
            readme.lines().any(|r| r == line),
            "README.md lacks the line:\n{line}"
        );
    }
}

#[test]
fn pooled_p50_sits_where_the_latency_curve_crosses_half() {
    // collapse-after-spike's no-backoff variant is bimodal (collapsed and recovered runs): a
    // mean of per-replication medians lies off the pooled curve, the pooled median on it.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let file = scenario_path("collapse-after-spike");
    let run = crate::cli::retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "60",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert_eq!(run.status.code(), Some(0));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let mut reader = csv::Reader::from_path(out.join("latency.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let step = 10f64.powf(1.0 / retrystorm::metrics::LATENCY_BINS_PER_DECADE as f64);
    for v in summary["variants"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let p50 = v["metrics"]["success_latency_ms"]["p50"].as_f64().unwrap();
        let crossing = rows
            .iter()
            .filter(|r| &r[0] == name)
            .find(|r| r[3].parse::<f64>().unwrap() >= 0.5)
            .unwrap_or_else(|| panic!("{name}: the curve never reaches 50 %"));
        let upper: f64 = crossing[1].parse().unwrap();
        let lower = upper / step;
        assert!(
            p50 >= lower * 0.999 && p50 <= upper * 1.001,
            "{name}: pooled p50 {p50} ms outside the bin ({lower}, {upper}] where the curve crosses 50 %"
        );
    }
}

#[test]
fn completion_time_does_not_hide_the_servers_drain() {
    // first-storm's stall leaves the server serving abandoned attempts long after the last
    // request ended; the reject outage does not.
    let options = LoadOptions {
        replications: Some(3),
        ..LoadOptions::default()
    };
    let (experiment, result) = run_bundled("first-storm", &options);
    let stall = &variant(&result, "stall").metrics;
    assert!(
        stall.entry().busy_until_ms > 1.5 * stall.makespan_ms,
        "busy until {} ms, completion {} ms",
        stall.entry().busy_until_ms,
        stall.makespan_ms
    );
    let outage = &variant(&result, "reject outage").metrics;
    assert!(outage.entry().busy_until_ms <= outage.makespan_ms);
    let md = retrystorm::report::report_md(&experiment, &result, &[]);
    assert!(md.contains("| server busy until (s) |"), "{md}");
}
