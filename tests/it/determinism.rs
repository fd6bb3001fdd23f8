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
    let files = report::render(&experiment, &result, report::ImageFormat::Png, jobs).unwrap();
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
        report::render(&experiment, &result, report::ImageFormat::Png, jobs).unwrap()[0]
            .bytes
            .clone()
    };
    assert!(
        render(1) == render(2),
        "summary.json differs between --jobs 1 and --jobs 2"
    );
}

/// scenario.resolved.json says what ran: each variant written back with its defaults filled
/// in runs exactly like the variant loaded from the file (a setting left out of the resolved
/// form would change the numbers).
#[test]
fn every_resolved_variant_runs_exactly_like_the_file() {
    let bundled = [
        "thundering-herd",
        "queueing-theory",
        "retry-chapter",
        "amplification-closed-form",
        "backoff-open-vs-closed",
        "aws-backoff-jitter",
        "retry-budget",
        "brooker-2022",
        "collapse-after-spike",
        "hotos-metastable",
        "metastable-phase",
    ];
    for name in bundled {
        let options = LoadOptions {
            replications: Some(1),
            ..LoadOptions::default()
        };
        let experiment = load_file(&scenario_path(name), &options).unwrap();
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
