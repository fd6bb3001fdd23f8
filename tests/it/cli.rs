//! The command line end to end: `run` writes its files and prints the table, `check` and
//! `schema` answer, `--sweep` adds a sweep.

use std::path::Path;
use std::process::{Command, Output};

use crate::scenario_path;

pub fn retrystorm(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// Runs retrystorm and asserts that it succeeded.
fn run_ok(dir: &Path, args: &[&str]) -> Output {
    let out = retrystorm(dir, args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}

/// Reads a JSON file.
fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn run_writes_summary_timeseries_and_resolved_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("retry-chapter");
    let out = run_ok(dir.path(), &["run", file.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    for needle in [
        "no jitter",
        "full jitter",
        "amplification",
        "p99 ms",
        "completion time s",
    ] {
        assert!(stdout.contains(needle), "table lacks {needle:?}:\n{stdout}");
    }
    let folder = dir.path().join("output/retry-chapter");
    let summary = json_file(&folder.join("summary.json"));
    assert_eq!(summary["name"], "retry-chapter");
    assert_eq!(summary["seed"], 1);
    let v = &summary["variants"][0];
    for key in [
        "requests",
        "succeeded",
        "success_rate",
        "failed",
        "attempts",
        "first_attempts",
        "retries",
        "amplification",
        "latency_ms",
        "makespan_ms",
        "services",
        "calls",
        "degraded",
    ] {
        assert!(v["metrics"].get(key).is_some(), "metrics lacks {key}");
        assert!(v["ci95"].get(key).is_some(), "ci95 lacks {key}");
    }
    for key in ["mean", "p50", "p90", "p99", "p999", "max"] {
        assert!(v["metrics"]["latency_ms"][key].is_number());
    }
    for key in [
        "served",
        "wasted",
        "rejected",
        "throttled",
        "utilization",
        "max_queue",
    ] {
        assert!(v["metrics"]["services"][0][key].is_number());
    }
    let csv = std::fs::read_to_string(folder.join("timeseries.csv")).unwrap();
    assert!(
        csv.starts_with(
            "sweep_value,variant,bucket_start_s,bucket_s,started,first_attempts,retries"
        )
    );
    let resolved: serde_json::Value = json_file(&folder.join("scenario.resolved.json"));
    assert_eq!(resolved["seed"], 1);
    assert!(resolved["version"].is_string());
    // Defaults are filled in.
    let retry = &resolved["variants"][0]["scenario"]["policy"]["retry"];
    assert_eq!(retry["retry_after"], "honor");
    assert_eq!(
        resolved["variants"][0]["scenario"]["server"]["queue_limit"],
        "unlimited"
    );
}

#[test]
fn out_seed_replications_and_sweep_flags_apply() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("retry-chapter");
    let out = run_ok(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--out",
            "elsewhere",
            "--seed",
            "9",
            "--replications",
            "2",
            "--sweep",
            "clients.count=10,20",
            "--quiet",
        ],
    );
    assert!(out.stdout.is_empty(), "--quiet prints nothing");
    let summary = json_file(&dir.path().join("elsewhere/summary.json"));
    assert_eq!(summary["seed"], 9);
    assert_eq!(summary["replications"], 2);
    let points = summary["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[1]["value"], 20);
    assert_eq!(points[1]["variants"][0]["metrics"]["requests"], 20.0);
}

#[test]
fn set_changes_one_setting_of_every_variant_and_is_checked_like_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("thundering-herd");
    let file = file.to_str().unwrap();
    run_ok(
        dir.path(),
        &[
            "run",
            file,
            "--out",
            "fine",
            "--replications",
            "1",
            "--set",
            "metrics.bucket=5ms",
            "-q",
        ],
    );
    let resolved = json_file(&dir.path().join("fine/scenario.resolved.json"));
    let variants = resolved["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 5);
    for v in variants {
        assert_eq!(v["scenario"]["metrics"]["bucket"], "5ms", "{}", v["name"]);
    }
    // The time series is in 5 ms buckets: consecutive rows of a variant start 5 ms apart.
    let series = std::fs::read_to_string(dir.path().join("fine/timeseries.csv")).unwrap();
    let starts: Vec<f64> = series
        .lines()
        .skip(1)
        .take(3)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    assert!((starts[1] - starts[0] - 0.005).abs() < 1e-9, "{starts:?}");
    // Bad settings are refused like the file's own, with the flag named, and nothing is
    // written.
    let refusals: [(&[&str], &str); 4] = [
        (
            &["--set", "metrics.bucket=0ms"],
            "(with --set metrics.bucket = \"0ms\")",
        ),
        (&["--set", "seed=3"], "use --seed"),
        (
            &["--set", "clients.count=5", "--sweep", "clients.count=1,2"],
            "change the same setting",
        ),
        (&["--set", "policy.retry=3"], "--set policy.retry"),
    ];
    for (extra, needle) in refusals {
        let mut args = vec!["run", file, "--out", "refused", "-q"];
        args.extend(extra);
        let out = retrystorm(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let said = text(&out.stderr);
        assert!(said.contains(needle), "{extra:?}: {said}");
        assert!(
            !dir.path().join("refused").exists(),
            "{extra:?} wrote nothing"
        );
    }
}

#[test]
fn check_lists_ok_files_and_schema_is_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("thundering-herd");
    let out = run_ok(dir.path(), &["check", file.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("ok (5 variants"));
    assert!(!dir.path().join("output").exists(), "check writes nothing");

    let out = retrystorm(dir.path(), &["schema"]);
    assert!(out.status.success());
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(schema["properties"]["policy"].is_object());
    assert!(
        schema["required"]
            .as_array()
            .unwrap()
            .contains(&"duration".into())
    );
}

#[test]
fn every_bundled_scenario_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(scenario_path("x").parent().unwrap()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            files.push(path.to_str().unwrap().to_string());
        }
    }
    assert!(files.len() >= 5);
    let mut args = vec!["check"];
    args.extend(files.iter().map(String::as_str));
    run_ok(dir.path(), &args);
}

#[test]
fn figures_decode_at_their_size_and_their_csv_matches_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("aws-backoff-jitter");
    run_ok(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "5",
            "--sweep",
            "clients.count=10,50,100",
            "--quiet",
        ],
    );
    let folder = dir.path().join("output/aws-backoff-jitter");
    for stem in [
        "work",
        "completion-time",
        "retries-over-time",
        "attempts-over-time",
    ] {
        let png = image::open(folder.join(format!("{stem}.png")))
            .unwrap_or_else(|e| panic!("{stem}.png does not decode: {e}"));
        assert_eq!(
            png.width(),
            2000,
            "{stem}.png: its layout at twice the pixels"
        );
        assert!(png.height() >= 800, "{stem}.png");
        assert!(
            folder.join(format!("{stem}.csv")).exists(),
            "{stem}.csv beside the figure"
        );
    }
    // The work curve's CSV holds exactly summary.json's means.
    let summary = json_file(&folder.join("summary.json"));
    let csv = std::fs::read_to_string(folder.join("work.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 3 * 5, "one row per (sweep value, variant)");
    for row in rows {
        let point = summary["sweep"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["value"].as_u64().map(|v| v.to_string()).as_deref() == Some(row[0]))
            .unwrap();
        let variant = point["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == row[1])
            .unwrap();
        let mean: f64 = row[2].parse().unwrap();
        assert_eq!(mean, variant["metrics"]["attempts"].as_f64().unwrap());
    }
}

#[test]
fn svg_format_writes_svg_figures() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("retry-chapter");
    run_ok(
        dir.path(),
        &["run", file.to_str().unwrap(), "--format", "svg", "--quiet"],
    );
    let svg = std::fs::read_to_string(
        dir.path()
            .join("output/retry-chapter/retries-over-time.svg"),
    )
    .unwrap();
    assert!(svg.starts_with("<svg"));
}

#[test]
fn a_variant_without_a_patch_is_the_base_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"name": "plain", "duration": "1s",
      "clients": {"count": 2, "workload": {"open": {"rate_per_s": 10}}},
      "server": {"service_time": {"constant": "1ms"}},
      "variants": [{"name": "just the base"}, {"name": "null patch", "patch": null}]}"#;
    std::fs::write(dir.path().join("s.json"), text).unwrap();
    run_ok(dir.path(), &["run", "s.json", "--quiet"]);
    // The same file without variants runs the base scenario as its one variant.
    let mut base: serde_json::Value = serde_json::from_str(text).unwrap();
    base.as_object_mut().unwrap().remove("variants");
    base["name"] = "base".into();
    std::fs::write(dir.path().join("base.json"), base.to_string()).unwrap();
    run_ok(dir.path(), &["run", "base.json", "--quiet"]);
    let metrics = |name: &str| {
        let summary = json_file(&dir.path().join(format!("output/{name}/summary.json")));
        let variants = summary["variants"].as_array().unwrap().clone();
        variants
            .into_iter()
            .map(|v| v["metrics"].clone())
            .collect::<Vec<_>>()
    };
    let (with_variants, base) = (metrics("plain"), metrics("base"));
    assert_eq!(with_variants.len(), 2);
    assert_eq!(base.len(), 1);
    assert!(base[0]["requests"].as_f64().unwrap() > 0.0);
    assert_eq!(with_variants[0], base[0]);
    assert_eq!(with_variants[1], base[0]);
}

#[test]
fn sweep_values_on_the_command_line_may_be_json_objects() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("retry-chapter");
    run_ok(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--quiet",
            "--sweep",
            r#"network.latency={"constant": "1ms"},{"uniform": {"min": "1ms", "max": "2ms"}}"#,
        ],
    );
    let summary: serde_json::Value =
        json_file(&dir.path().join("output/retry-chapter/summary.json"));
    assert_eq!(
        summary["sweep"]["points"][1]["value"]["uniform"]["max"],
        "2ms"
    );
}

#[test]
fn every_bundled_scenario_gets_a_report_whose_figures_decode_and_agree_with_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let mut scenarios: Vec<String> = std::fs::read_dir(scenario_path("x").parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| path.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 20, "{scenarios:?}");
    for name in &scenarios {
        let name = name.as_str();
        let file = scenario_path(name);
        let out = dir.path().join(name);
        run_ok(
            dir.path(),
            &[
                "run",
                file.to_str().unwrap(),
                "--replications",
                "2",
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ],
        );
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        let images: Vec<&str> = report
            .lines()
            .filter_map(|l| l.strip_prefix("![")?.split("](").nth(1)?.strip_suffix(')'))
            .collect();
        assert!(images.len() >= 3, "{name}: {images:?}");
        for image in &images {
            let png =
                image::open(out.join(image)).unwrap_or_else(|e| panic!("{name}/{image}: {e}"));
            // Twice a layout 1000 pixels wide, or up to 1600 for many comparison panels.
            let width = png.width();
            assert!((2000..=3200).contains(&width), "{name}/{image}: {width}");
            assert!(
                png.height() >= 600 && png.height() <= 3400,
                "{name}/{image}"
            );
        }
        // comparison.csv holds summary.json's numbers for the variants it shows: those of
        // the run, or of one sweep point (the one its caption names).
        let summary = json_file(&out.join("summary.json"));
        let candidates: Vec<serde_json::Value> = match summary["sweep"]["points"].as_array() {
            Some(points) => points.iter().map(|p| p["variants"].clone()).collect(),
            None => vec![summary["variants"].clone()],
        };
        let mut csv = csv::Reader::from_path(out.join("comparison.csv")).unwrap();
        let shown: Vec<(String, f64)> = csv
            .records()
            .map(Result::unwrap)
            .filter(|row| &row[0] == "work (attempts)")
            .map(|row| (row[1].to_string(), row[2].parse().unwrap()))
            .collect();
        assert!(!shown.is_empty(), "{name}: no work row in comparison.csv");
        let agrees = |variants: &serde_json::Value| {
            let variants = variants.as_array().unwrap();
            variants.len() == shown.len()
                && shown.iter().all(|(variant, mean)| {
                    variants.iter().any(|v| {
                        v["name"] == variant.as_str()
                            && v["metrics"]["attempts"].as_f64() == Some(*mean)
                    })
                })
        };
        assert!(
            candidates.iter().any(agrees),
            "{name}: comparison.csv {shown:?} matches no variant list of summary.json"
        );
    }
}

/// Copies only what a run's data is (summary.json, scenario.resolved.json, timeseries.csv,
/// latency.csv, and example-runs.csv, sweep.csv, service-timeseries.csv and
/// replica-timeseries.csv where the run has them) from the run in
/// `first` to `dir/again`, a folder as retrystorm wrote them before manifests, runs
/// `retrystorm report` there, and asserts that report.md, every figure and figure CSV and the
/// manifest come back byte for byte. Returns how many files were compared.
pub fn assert_report_re_renders(dir: &Path, first: &Path) -> usize {
    const DATA: [&str; 8] = [
        "summary.json",
        "scenario.resolved.json",
        "timeseries.csv",
        "latency.csv",
        "example-runs.csv",
        "sweep.csv",
        "service-timeseries.csv",
        "replica-timeseries.csv",
    ];
    const OPTIONAL: [&str; 4] = [
        "example-runs.csv",
        "sweep.csv",
        "service-timeseries.csv",
        "replica-timeseries.csv",
    ];
    let again = dir.join("again");
    std::fs::create_dir(&again).unwrap();
    for name in DATA {
        if first.join(name).exists() || !OPTIONAL.contains(&name) {
            std::fs::copy(first.join(name), again.join(name)).unwrap();
        }
    }
    run_ok(dir, &["report", again.to_str().unwrap()]);
    let mut compared = 0;
    for entry in std::fs::read_dir(first).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if DATA.contains(&name.as_str()) {
            continue;
        }
        let a = std::fs::read(first.join(&name)).unwrap();
        let b = std::fs::read(again.join(&name)).unwrap_or_default();
        assert!(a == b, "{name} differs after re-rendering");
        compared += 1;
    }
    assert!(again.join("manifest.json").exists());
    compared
}

#[test]
fn report_re_renders_a_finished_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("aws-backoff-jitter");
    let first = dir.path().join("first");
    run_ok(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "3",
            "--sweep",
            "clients.count=10,100,150",
            "--out",
            first.to_str().unwrap(),
            "--quiet",
        ],
    );
    let compared = assert_report_re_renders(dir.path(), &first);
    assert!(compared >= 10, "compared {compared} files");
}

#[test]
fn report_of_a_folder_without_a_run_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = retrystorm(dir.path(), &["report", "."]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("scenario.resolved.json"),
        "{}",
        text(&out.stderr)
    );
}

/// The rows of a figure's CSV, by column name.
fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

#[test]
fn policy_over_time_shows_budgets_and_breakers_and_re_renders() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("retry-budget");
    let first = dir.path().join("first");
    run_ok(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "2",
            "--sweep",
            "clients.count=10",
            "--out",
            first.to_str().unwrap(),
            "--quiet",
        ],
    );
    // Five of the six variants have a budget or a breaker: a panel each.
    let png = image::open(first.join("policy-over-time.png"))
        .unwrap_or_else(|e| panic!("policy-over-time.png does not decode: {e}"));
    assert_eq!((png.width(), png.height()), (2000, 2 * (150 * 5 + 66)));
    let report = std::fs::read_to_string(first.join("report.md")).unwrap();
    assert!(report.contains("](policy-over-time.png)"), "{report}");

    let path = first.join("policy-over-time.csv");
    let header = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        header.lines().next().unwrap(),
        "variant,bucket_start_s,bucket_s,budgets,budget_level_pct,breakers,breakers_open,\
         breakers_open_pct,retries_per_s,trigger"
    );
    let rows = csv_rows(&path);
    let mut names: Vec<&str> = rows.iter().map(|r| r["variant"].as_str()).collect();
    names.dedup();
    assert_eq!(
        names,
        [
            "token bucket",
            "retry quota",
            "ratio 10 %",
            "shared token bucket",
            "circuit breaker"
        ],
        "no budget and no breaker: no panel, no rows"
    );
    let num = |s: &str| s.parse::<f64>().unwrap();
    let start = |r: &std::collections::HashMap<String, String>| num(&r["bucket_start_s"]);
    let of = |name: &str| -> Vec<&std::collections::HashMap<String, String>> {
        rows.iter().filter(|r| r["variant"] == name).collect()
    };

    // The token bucket (10 per client) is full before the outage, drains once it starts and
    // stays empty while it lasts; it has no breaker.
    let bucket = of("token bucket");
    for r in &bucket {
        assert_eq!(r["budgets"], "10");
        assert_eq!(
            (r["breakers"].as_str(), r["breakers_open_pct"].as_str()),
            ("", "")
        );
        let t = start(r);
        let level = num(&r["budget_level_pct"]);
        assert!((0.0..=100.0).contains(&level), "{r:?}");
        if t + num(&r["bucket_s"]) <= 10.0 {
            assert!(level > 90.0, "full before the outage: {r:?}");
            assert_eq!(r["trigger"], "0");
        } else if (11.0..30.0).contains(&t) {
            assert!(level < 10.0, "drained during the outage: {r:?}");
            assert_eq!(r["trigger"], "1");
        }
    }
    assert!(
        bucket
            .iter()
            .any(|r| start(r) >= 39.0 && num(&r["budget_level_pct"]) > 90.0)
    );

    // The breakers (10 per client) are closed before the outage and mostly open during it;
    // there is no budget.
    let breaker = of("circuit breaker");
    for r in &breaker {
        assert_eq!(
            (r["budgets"].as_str(), r["budget_level_pct"].as_str()),
            ("", "")
        );
        assert_eq!(r["breakers"], "10");
        let open = num(&r["breakers_open_pct"]);
        assert!(
            (open - num(&r["breakers_open"]) * 10.0).abs() < 1e-9,
            "{r:?}"
        );
        if start(r) < 10.0 {
            assert_eq!(open, 0.0, "{r:?}");
        }
    }
    let during: Vec<f64> = breaker
        .iter()
        .filter(|r| (11.0..30.0).contains(&start(r)))
        .map(|r| num(&r["breakers_open_pct"]))
        .collect();
    assert!(
        during.iter().sum::<f64>() / during.len() as f64 > 80.0,
        "{during:?}"
    );

    // The shared bucket is one budget.
    assert!(
        of("shared token bucket")
            .iter()
            .all(|r| r["budgets"] == "1")
    );

    let compared = assert_report_re_renders(dir.path(), &first);
    assert!(compared >= 10, "compared {compared} files");
    let again = dir.path().join("again");
    run_ok(
        dir.path(),
        &["report", again.to_str().unwrap(), "--format", "svg"],
    );
    let svg = std::fs::read_to_string(again.join("policy-over-time.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
}

#[test]
fn policy_over_time_is_not_drawn_without_budgets_or_breakers() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("thundering-herd");
    let out = dir.path().join("out");
    run_ok(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(out.join("load-over-time.png").exists());
    for entry in std::fs::read_dir(&out).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(!name.starts_with("policy-over-time"), "{name} was written");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("policy-over-time"));
}

/// `--jobs` has a bound: a number of threads no machine has is refused with exit 2 and a
/// person's message, not an hour of spawning or a capacity overflow.
#[test]
fn jobs_beyond_any_machine_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("{}/scenarios/first-storm.json", env!("CARGO_MANIFEST_DIR"));
    for jobs in ["1025", "1000000", "4294967296", "18446744073709551615", "x"] {
        let out = retrystorm(dir.path(), &["run", &file, "--jobs", jobs, "--quiet"]);
        assert_eq!(out.status.code(), Some(2), "--jobs {jobs}");
        assert!(text(&out.stderr).contains("from 1 to 1024, or 0 for all cores"));
        let out = retrystorm(dir.path(), &["report", "x", "--jobs", jobs]);
        assert_eq!(out.status.code(), Some(2), "report --jobs {jobs}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}
