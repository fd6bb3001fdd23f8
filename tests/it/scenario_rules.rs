//! Rules of the scenario file that reach past one setting: a sweep and the variants' patches
//! must not set the same thing, and a finished run must re-render from what it wrote.

use crate::cli::retrystorm;
use crate::scenario_path;

#[test]
fn sweeping_a_path_that_a_variant_patch_sets_is_an_error_that_writes_nothing() {
    // thundering-herd's variants set policy.retry.backoff.jitter: sweeping it would run full
    // jitter under the name "no jitter" and do nothing for the other three variants.
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("thundering-herd");
    let out = dir.path().join("out");
    for sweep in [
        "policy.retry.backoff.jitter=\"full\",\"none\"",
        "policy.retry={\"max_attempts\":2}",
    ] {
        let run = retrystorm(
            dir.path(),
            &[
                "run",
                file.to_str().unwrap(),
                "--sweep",
                sweep,
                "--out",
                out.to_str().unwrap(),
            ],
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{sweep}: {stderr}");
        assert!(!out.exists(), "{sweep}: nothing is written");
        for variant in ["full jitter", "equal jitter", "decorrelated jitter"] {
            let needle = format!("variant \"{variant}\" sets \"policy.retry.backoff.jitter\"");
            assert_eq!(stderr.matches(&needle).count(), 1, "{sweep}: {stderr}");
        }
        assert!(stderr.contains("remove \"policy.retry.backoff.jitter\" from the variant's patch"));
        assert!(!stderr.contains("\"no jitter\""), "{stderr}");
    }
    // A sibling of what the patches set sweeps fine.
    let run = retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--sweep",
            "policy.retry.backoff.base=\"50ms\",\"100ms\"",
            "--replications",
            "1",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// Regression: runs of queueing-theory and backoff-open-vs-closed, whose variants change a
/// distribution's or a workload's kind, did not re-render (the rebuilt variant kept the first
/// variant's old kind beside its own). Every bundled scenario, listed from the folder, runs
/// with at most 2 replications and re-renders byte for byte.
#[test]
fn every_bundled_scenario_re_renders_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let folder = scenario_path("x").parent().unwrap().to_path_buf();
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 13, "{files:?}");
    for file in &files {
        let name = file.file_stem().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Two replications give confidence intervals; a file asking for one (the benchmarks,
        // which are the slowest) keeps one.
        let replications = doc["replications"].as_u64().unwrap_or(1).min(2).to_string();
        let here = dir.path().join(name);
        std::fs::create_dir(&here).unwrap();
        let first = here.join("first");
        let run = retrystorm(
            &here,
            &[
                "run",
                file.to_str().unwrap(),
                "--replications",
                &replications,
                "--out",
                first.to_str().unwrap(),
                "--quiet",
            ],
        );
        assert!(
            run.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let compared = crate::cli::assert_report_re_renders(&here, &first);
        assert!(compared >= 3, "{name}: compared {compared} files");
    }
}

/// A breaker of `window` and `minimum_calls` (if given), in a small overloaded scenario.
fn breaker_scenario(minimum_calls: Option<u32>) -> String {
    let minimum = minimum_calls.map_or(String::new(), |n| format!(r#", "minimum_calls": {n}"#));
    format!(
        r#"{{"name": "breaker-20", "seed": 3, "replications": 2, "duration": "2s",
          "clients": {{"count": 50, "workload": {{"open": {{"rate_per_s": 300}}}}}},
          "server": {{"concurrency": 2, "queue_limit": 10,
                      "service_time": {{"exponential": {{"mean": "10ms"}}}}}},
          "policy": {{"timeout": "200ms",
                      "breaker": {{"window": {{"count": 20}}, "open_duration": "100ms"{minimum}}}}}}}"#
    )
}

/// Regression: a breaker with a count window of 20 and the default minimum_calls ran with 20
/// but said 100 in scenario.resolved.json and report.md.
#[test]
fn a_breaker_minimum_above_its_count_window_resolves_and_reports_as_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let run = |text: &str, out: &str| -> std::path::PathBuf {
        let file = dir.path().join(format!("{out}.json"));
        std::fs::write(&file, text).unwrap();
        let out = dir.path().join(out);
        let run = retrystorm(
            dir.path(),
            &[
                "run",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ],
        );
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        out
    };
    let first = run(&breaker_scenario(None), "first");
    let resolved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(first.join("scenario.resolved.json")).unwrap())
            .unwrap();
    let scenario = &resolved["variants"][0]["scenario"];
    assert_eq!(scenario["policy"]["breaker"]["minimum_calls"], 20);
    let report = std::fs::read_to_string(first.join("report.md")).unwrap();
    assert!(report.contains("once it has seen 20)"), "{report}");
    assert!(!report.contains("once it has seen 100"), "{report}");

    // The resolved scenario, run again as a file, gives the same summary.
    let mut again = scenario.clone();
    for key in ["name", "seed", "replications"] {
        again[key] = resolved[key].clone();
    }
    let second = run(&again.to_string(), "second");
    let summary = |dir: &std::path::Path| std::fs::read(dir.join("summary.json")).unwrap();
    assert!(summary(&first) == summary(&second), "summaries differ");
    // And so does the minimum written out as it ran.
    let third = run(&breaker_scenario(Some(20)), "third");
    assert!(summary(&first) == summary(&third), "summaries differ");
    // The breaker did open, so the minimum mattered.
    let text = String::from_utf8(summary(&first)).unwrap();
    assert!(text.contains("\"breaker_open\": "), "{text}");
    assert!(!text.contains("\"breaker_open\": 0.0,"), "{text}");
}

#[test]
fn command_line_mistakes_are_said_once_and_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("first-storm");
    let run = |args: &[&str]| {
        let mut all = vec!["run", file.to_str().unwrap(), "--out", "out"];
        all.extend_from_slice(args);
        let out = retrystorm(dir.path(), &all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = run(&["--replications", "0"]);
    assert!(
        stderr.contains("'--replications <N>': must be at least 1 (got 0)"),
        "{stderr}"
    );
    assert!(!stderr.contains("18446744073709551615"), "{stderr}");
    // A misspelt swept key is the path's mistake, not each value's.
    let stderr = run(&["--sweep", "clients.cnt=1,2,3"]);
    assert_eq!(
        stderr.matches("clients.cnt: unknown key").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("1 problem in the scenario:\n  - clients.cnt: unknown key; did you mean `count`? (in --sweep)"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_misspelt_sweep_path_in_the_file_is_one_problem_at_the_path() {
    let text = r#"{"name": "x", "duration": "2s", "clients": {"count": 10, "workload": {"open": {"rate_per_s": 50}}},
 "server": {"service_time": {"constant": "1ms"}},
 "sweep": {"path": "server.concurency", "values": [1, 2, 3]}}"#;
    let err = retrystorm::scenario::load_str(text, "x.json", &Default::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "x.json: 1 problem in the scenario:\n  - server.concurency: unknown key; did you mean `concurrency`? (in sweep.path) (line 3, column 20)"
    );
}

#[test]
fn run_help_names_what_a_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let out = retrystorm(dir.path(), &["run", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for file in [
        "report.md and its figures",
        "summary.json",
        "timeseries.csv",
        "scenario.resolved.json",
        "manifest.json",
        "sweep.csv",
        "service-timeseries.csv",
        "replica-timeseries.csv",
    ] {
        assert!(help.contains(file), "run --help lacks {file:?}: {help}");
    }
}
