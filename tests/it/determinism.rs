//! The same scenario and seed give byte-identical outputs, whatever the thread count (of the
//! simulation and of the figures); another seed gives other results.

use retrystorm::report;
use retrystorm::scenario::{LoadOptions, load_file, load_str};

use crate::scenario_path;

fn summary_bytes(seed: Option<u64>, jobs: usize) -> Vec<u8> {
    let options = LoadOptions {
        seed,
        ..LoadOptions::default()
    };
    let experiment = load_file(&scenario_path("thundering-herd"), &options).unwrap();
    let result = retrystorm::runner::run(&experiment, jobs, &|| {});
    let files =
        retrystorm::output::render(&experiment, &result, report::ImageFormat::Png, jobs).unwrap();
    let mut bytes = Vec::new();
    for f in files.iter().filter(|f| f.name != "scenario.resolved.json") {
        bytes.extend_from_slice(f.name.as_bytes());
        bytes.extend_from_slice(&f.bytes);
    }
    bytes
}

#[test]
fn same_seed_gives_identical_outputs_on_one_or_two_threads() {
    let one = summary_bytes(None, 1);
    let two = summary_bytes(None, 2);
    let again = summary_bytes(None, 2);
    assert!(one == two, "--jobs 1 and --jobs 2 differ");
    assert!(two == again, "two runs with the same seed differ");
}

#[test]
fn another_seed_gives_another_summary() {
    assert!(summary_bytes(Some(1), 2) != summary_bytes(Some(2), 2));
}

#[test]
fn a_sweep_gives_identical_summaries_on_one_or_two_threads() {
    let options = LoadOptions {
        replications: Some(10),
        sweep: Some(retrystorm::scenario::Sweep::new(
            "clients.count",
            vec![10.into(), 50.into()],
        )),
        ..LoadOptions::default()
    };
    let experiment = load_file(&scenario_path("aws-backoff-jitter"), &options).unwrap();
    let render = |jobs| {
        let result = retrystorm::runner::run(&experiment, jobs, &|| {});
        retrystorm::output::render(&experiment, &result, report::ImageFormat::Png, jobs).unwrap()[0]
            .bytes
            .clone()
    };
    assert!(
        render(1) == render(2),
        "summary.json differs between --jobs 1 and --jobs 2"
    );
}

/// scenario.resolved.json says what ran: each variant written back with its defaults filled
/// in loads to exactly the scenario loaded from the file, and runs exactly like it (a setting
/// left out of the resolved form, or written back otherwise, would change the numbers). Every
/// bundled scenario is checked; the two benchmarks, of millions of requests, are compared as
/// scenarios only, not run.
#[test]
fn every_resolved_variant_runs_exactly_like_the_file() {
    let folder = scenario_path("x").parent().unwrap().to_path_buf();
    let mut files: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 21, "{}", files.len());
    for file in files {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        let options = LoadOptions {
            replications: Some(1),
            ..LoadOptions::default()
        };
        let experiment = load_file(&file, &options).unwrap();
        let resolved = retrystorm::scenario::resolved_json(&experiment);
        let variants = resolved["variants"].as_array().expect("variants");
        assert_eq!(
            variants.len(),
            experiment.points[0].variants.len(),
            "{name}"
        );
        for (v, original) in variants.iter().zip(&experiment.points[0].variants) {
            let mut doc = v["scenario"].clone();
            doc["name"] = serde_json::json!("resolved");
            let again = load_str(&doc.to_string(), "resolved", &LoadOptions::default())
                .unwrap_or_else(|e| {
                    panic!("{name} / {}: resolved form invalid: {e}", original.name)
                });
            let scenario = &again.points[0].variants[0].scenario;
            assert_eq!(
                format!("{scenario:?}"),
                format!("{:?}", original.scenario),
                "{name} / {}: the resolved form loads to another scenario",
                original.name
            );
            if name.starts_with("bench-") {
                continue;
            }
            let run = |sc| retrystorm::sim::run(sc, experiment.seed, 0).metrics();
            assert_eq!(
                run(scenario),
                run(&original.scenario),
                "{name} / {}: the resolved form runs differently",
                original.name
            );
        }
    }
}
