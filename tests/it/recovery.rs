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

/// The answers of buckets `a..b` of a replication's series, pooled, and their p99.
fn pooled_p99(
    latency: &[(usize, retrystorm::metrics::LatencyBins)],
    a: usize,
    b: usize,
) -> Option<f64> {
    let mut pool = retrystorm::metrics::LatencyBins::<u64>::default();
    for (_, bins) in latency.iter().filter(|(i, _)| (a..b).contains(i)) {
        pool.merge(bins);
    }
    // Recovery reads a p99 at the upper edge of its bin (the series' cells interpolate
    // within it): the bin where the count reaches ceil(0.99 n).
    let rank = ((0.99 * pool.count() as f64).ceil() as u64).max(1);
    let mut seen = 0;
    pool.bins().find_map(|(bin, c)| {
        seen += c;
        (seen >= rank).then(|| retrystorm::metrics::latency_bin_upper_ms(bin))
    })
}

/// A 2 s outage answered `rejected`, with retries every 400 ms: the requests started during
/// it are answered once it is over, seconds late, so p99 rises after the trigger, then
/// returns. The per-bucket p50 and p99 are those of the replication's own latency bins (one
/// replication: pooling changes nothing), in timeseries.csv with empty cells where nothing
/// was answered; the p99 before the trigger and the time until it is back are those the
/// rule gives on the time series, recomputed here bucket by bucket.
#[test]
fn p99_rises_after_an_outage_and_its_return_is_read_off_the_time_series() {
    let text = healthy("", r#"[{"from": "10s", "to": "12s", "outage": "reject"}]"#)
        .replace(r#""replications": 6"#, r#""replications": 1"#)
        .replace(
            r#""backoff": "none""#,
            r#""max_attempts": 10, "backoff": {"base": "400ms", "multiplier": 1, "cap": "400ms", "jitter": "none"}"#,
        )
        .replace(r#""max_attempts": 3, "#, "");
    let (experiment, result) = run_text(&text);
    let v = variant(&result, "baseline");
    let sc = &experiment.points[0].variants[0].scenario;
    let run = retrystorm::sim::run(sc, experiment.seed, 0);
    let latency = run.series.latency();
    let width = v.bucket.as_nanos();
    assert_eq!(width, 200_000_000, "duration / 200");
    // Every success lands in its bucket's bins (no fallback: answered = succeeded).
    for (i, row) in run.series.rows().iter().enumerate() {
        let answered: u64 = latency
            .iter()
            .find(|(b, _)| *b == i)
            .map_or(0, |(_, bins)| bins.count());
        let succeeded = row[retrystorm::metrics::Column::Succeeded as usize];
        assert_eq!(answered, u64::from(succeeded), "bucket {i}");
    }
    // The variant's per-bucket percentiles are its replication's, and so is timeseries.csv.
    assert_eq!(v.latency.len(), v.series.len());
    for (i, l) in v.latency.iter().enumerate() {
        let mut pool = retrystorm::metrics::LatencyBins::<u64>::default();
        for (_, bins) in latency.iter().filter(|(b, _)| *b == i) {
            pool.merge(bins);
        }
        assert_eq!(l.map(|l| l.p99_ms), pool.quantile_ms(0.99), "bucket {i}");
    }
    let files = retrystorm::output::render(
        &experiment,
        &result,
        retrystorm::report::ImageFormat::Svg,
        0,
    )
    .unwrap();
    let csv = &files
        .iter()
        .find(|f| f.name == "timeseries.csv")
        .unwrap()
        .bytes;
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header[header.len() - 2..], ["p50_ms", "p99_ms"]);
    let mut empty = 0;
    for (record, l) in reader.records().map(Result::unwrap).zip(&v.latency) {
        let cell = |k: usize| record[record.len() - 2 + k].to_string();
        match l {
            Some(l) => assert_eq!(
                [cell(0), cell(1)],
                [l.p50_ms.to_string(), l.p99_ms.to_string()]
            ),
            None => {
                assert_eq!([cell(0), cell(1)], ["", ""]);
                empty += 1;
            }
        }
    }
    assert!(empty > 0, "the outage leaves buckets without an answer");
    // The rule, bucket by bucket: the level over the buckets before 10 s (the first 10 %
    // skipped), then the first boundary from 12 s on whose bucket has answers and where the
    // 5 s ahead and the rest up to 40 s are within 10 % of it.
    let (pre, after, end, window) = (50, 60, 200, 25);
    let level = pooled_p99(&latency, 5, pre).unwrap();
    let back = |a: usize, b: usize| pooled_p99(&latency, a, b).is_some_and(|p| p <= 1.1 * level);
    let k = (after..end)
        .find(|&k| {
            pooled_p99(&latency, k, k + 1).is_some()
                && back(k, (k + window).min(end))
                && back(k, end)
        })
        .expect("p99 comes back");
    let r = v.metrics.recovery.unwrap();
    assert_eq!(r.p99_before_ms, Some(level));
    assert_eq!((r.p99_judged, r.p99_back), (1.0, 1.0));
    let expected = (k - after) as f64 * 0.2;
    assert!(
        (r.median_p99_back_s.unwrap() - expected).abs() < 1e-9,
        "{r:?}"
    );
    // p99 did rise: the first bucket after the outage is well above the level, and p99 came
    // back later than goodput did.
    let first_after = v.latency[after].unwrap().p99_ms;
    assert!(
        first_after > 3.0 * level,
        "{first_after} ms against {level} ms"
    );
    assert!(
        expected > 0.0 && expected > r.median_recovery_s.unwrap(),
        "{r:?}"
    );
    let report = files.iter().find(|f| f.name == "report.md").unwrap();
    let report = String::from_utf8_lossy(&report.bytes);
    let words = format!(
        "Its p99 latency of answered requests was back within 10 % of its pre-trigger {level:.0} ms in its 1 replication, a median {expected:.1} s after the trigger ended."
    );
    assert!(report.contains(&words), "{words}\n{report}");
}
