//! Two-axis sweeps end to end: every (first, second) pair runs, first axis outer; summary.json,
//! sweep.csv and timeseries.csv name both values; the phase diagram decodes and its CSV holds
//! summary.json's numbers; `report DIR` re-renders the run byte for byte; a bad second path
//! exits 2 naming `sweep.second.path`; `--sweep` given twice makes the second axis.

use std::path::Path;

use serde_json::{Value, json};

use crate::cli::retrystorm;

/// A small overloaded queue: fast to run, and the success rate changes across the grid.
const SCENARIO: &str = r#"{
  "name": "grid",
  "seed": 3, "replications": 2,
  "duration": "1s",
  "clients": { "count": 20, "workload": { "open": { "rate_per_s": 150 } } },
  "server": { "concurrency": 2, "queue_limit": 10,
              "service_time": { "exponential": { "mean": "10ms" } } },
  "policy": { "timeout": "50ms",
              "retry": { "max_attempts": 3,
                         "backoff": { "base": "5ms", "multiplier": 2, "cap": "50ms", "jitter": "full" } } },
  "variants": [
    { "name": "retries", "patch": {} },
    { "name": "no retries", "patch": { "policy": { "retry": { "max_attempts": 1 } } } }
  ],
  "sweep": { "path": "clients.workload.open.rate_per_s", "values": [50, 150, 250],
             "second": { "path": "server.concurrency", "values": [1, 2] } }
}"#;

fn run_ok(dir: &Path, args: &[&str]) {
    let out = retrystorm(dir, args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Writes `text` as s.json in `dir` and runs it into `dir/out` with `extra` flags.
fn run_scenario(dir: &Path, text: &str, extra: &[&str]) -> std::path::PathBuf {
    std::fs::write(dir.join("s.json"), text).unwrap();
    let out = dir.join("out");
    let mut args = vec!["run", "s.json", "--out", out.to_str().unwrap(), "--quiet"];
    args.extend(extra);
    run_ok(dir, &args);
    out
}

#[test]
fn a_two_axis_sweep_runs_every_pair_first_axis_outer() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_scenario(dir.path(), SCENARIO, &[]);
    let summary = json_file(&out.join("summary.json"));
    let sweep = &summary["sweep"];
    assert_eq!(sweep["path"], "clients.workload.open.rate_per_s");
    assert_eq!(
        sweep["second"],
        json!({"path": "server.concurrency", "values": [1, 2]})
    );
    let pairs: Vec<(Value, Value)> = sweep["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["value"].clone(), p["second_value"].clone()))
        .collect();
    let expected: Vec<(Value, Value)> = [(50, 1), (50, 2), (150, 1), (150, 2), (250, 1), (250, 2)]
        .iter()
        .map(|(x, y)| (json!(x), json!(y)))
        .collect();
    assert_eq!(pairs, expected);

    // sweep.csv: a column per swept setting, first axis first, a row per (pair, variant).
    let mut csv = csv::Reader::from_path(out.join("sweep.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header[..3],
        [
            "clients.workload.open.rate_per_s",
            "server.concurrency",
            "variant"
        ]
    );
    let rows: Vec<(String, String, String)> = csv
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[0].to_string(), r[1].to_string(), r[2].to_string())
        })
        .collect();
    assert_eq!(rows.len(), 6 * 2);
    assert_eq!(rows[2], ("50".into(), "2".into(), "retries".into()));
    assert_eq!(rows[5], ("150".into(), "1".into(), "no retries".into()));

    // timeseries.csv names both values too, so that every point's series stays apart.
    let series = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    assert!(
        series.starts_with("sweep_value,second_value,variant,bucket_start_s"),
        "{}",
        &series[..80]
    );

    // The resolved scenario keeps the second axis.
    let resolved = json_file(&out.join("scenario.resolved.json"));
    assert_eq!(resolved["sweep"]["second"]["path"], "server.concurrency");
    assert_eq!(resolved["sweep"]["second"]["base_value"], 2);
}

#[test]
fn the_phase_diagram_decodes_and_its_csv_holds_the_summary_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_scenario(dir.path(), SCENARIO, &[]);
    let png = image::open(out.join("phase-diagram.png")).expect("phase-diagram.png decodes");
    assert_eq!(png.width(), 2000);
    assert!(png.height() >= 800);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("](phase-diagram.png)"), "{report}");
    assert!(report.contains("dark = "), "{report}");
    // The one-axis figures still come, drawn at the second axis' focus value.
    for stem in ["work", "success-rate", "sweep-metrics"] {
        image::open(out.join(format!("{stem}.png"))).unwrap_or_else(|e| panic!("{stem}.png: {e}"));
    }
    let work = std::fs::read_to_string(out.join("work.csv")).unwrap();
    assert!(
        work.lines()
            .skip(1)
            .all(|l| l.split(',').nth(1) == Some("2")),
        "{work}"
    );

    let summary = json_file(&out.join("summary.json"));
    let mut csv = csv::Reader::from_path(out.join("phase-diagram.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    // The metric is named by its dotted path into the metrics.
    let metric = header[3].clone();
    assert!(
        ["success_rate", "recovery.recovered_fraction"].contains(&metric.as_str()),
        "{header:?}"
    );
    let cell = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
    let mut checked = 0;
    for row in csv.records() {
        let row = row.unwrap();
        let point = summary["sweep"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["value"] == cell(&row[1]) && p["second_value"] == cell(&row[2]))
            .unwrap_or_else(|| panic!("no point for {row:?}"));
        let variant = point["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == row[0])
            .unwrap();
        let expected = metric
            .split('.')
            .fold(&variant["metrics"], |d, k| &d[k])
            .as_f64()
            .unwrap();
        let mean: f64 = row[3].parse().unwrap();
        assert_eq!(mean, expected, "{row:?}");
        checked += 1;
    }
    assert_eq!(checked, 6 * 2);
}

#[test]
fn report_re_renders_a_two_axis_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let first = run_scenario(dir.path(), SCENARIO, &[]);
    let compared = crate::cli::assert_report_re_renders(dir.path(), &first);
    assert!(compared >= 20, "compared {compared} files");
}

#[test]
fn a_bad_second_sweep_path_exits_2_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    for (second, needle) in [
        (
            r#""path": "duration.x", "values": [1]"#,
            "neither an object nor a list",
        ),
        (
            r#""path": "clients.workload.open.rate_per_s", "values": [1]"#,
            "also sweep.path",
        ),
        (
            r#""path": "server.concurrency", "values": [1], "step": 2"#,
            "unknown key",
        ),
    ] {
        let text = SCENARIO.replace(r#""path": "server.concurrency", "values": [1, 2]"#, second);
        std::fs::write(dir.path().join("bad.json"), &text).unwrap();
        let out = retrystorm(dir.path(), &["run", "bad.json", "--quiet"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("sweep.second"), "{stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
        assert!(!dir.path().join("output").exists(), "nothing is written");
    }
}

#[test]
fn sweep_given_twice_makes_a_second_axis() {
    let dir = tempfile::tempdir().unwrap();
    // The command line replaces the file's two axes with its own two.
    let out = run_scenario(
        dir.path(),
        SCENARIO,
        &[
            "--replications",
            "1",
            "--sweep",
            "server.concurrency=1,3",
            // Not policy.retry.max_attempts: the "no retries" variant's patch sets it.
            "--sweep",
            "policy.timeout=\"20ms\",\"50ms\",\"100ms\"",
        ],
    );
    let summary = json_file(&out.join("summary.json"));
    assert_eq!(summary["sweep"]["path"], "server.concurrency");
    assert_eq!(
        summary["sweep"]["second"],
        json!({"path": "policy.timeout", "values": ["20ms", "50ms", "100ms"]})
    );
    let points = summary["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    assert_eq!(points[4]["value"], 3);
    assert_eq!(points[4]["second_value"], "50ms");
    assert!(out.join("phase-diagram.png").exists());

    // Once is one axis, as before: no second axis, no second_value, no phase diagram.
    let one = dir.path().join("one");
    run_ok(
        dir.path(),
        &[
            "run",
            "s.json",
            "--replications",
            "1",
            "--sweep",
            "server.concurrency=1,3",
            "--out",
            one.to_str().unwrap(),
            "--quiet",
        ],
    );
    let summary = json_file(&one.join("summary.json"));
    assert!(summary["sweep"].get("second").is_none());
    assert!(summary["sweep"]["points"][0].get("second_value").is_none());
    assert!(!one.join("phase-diagram.png").exists());

    // Three times is a usage error.
    let out = retrystorm(
        dir.path(),
        &[
            "run",
            "s.json",
            "--sweep",
            "server.concurrency=1",
            "--sweep",
            "clients.count=1",
            "--sweep",
            "duration=\"1s\"",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most two axes"));
}
