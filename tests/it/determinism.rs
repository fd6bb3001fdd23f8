//! The same scenario and seed give byte-identical outputs, whatever the thread count; another
//! seed gives other results.

use retrystorm::report;
use retrystorm::scenario::{LoadOptions, load_file};

use crate::scenario_path;

fn summary_bytes(seed: Option<u64>, jobs: usize) -> Vec<u8> {
    let options = LoadOptions {
        seed,
        ..LoadOptions::default()
    };
    let experiment = load_file(&scenario_path("thundering-herd"), &options).unwrap();
    let result = retrystorm::runner::run(&experiment, jobs, &|| {});
    let files = report::render(&experiment, &result, report::ImageFormat::Png).unwrap();
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
        report::render(&experiment, &result, report::ImageFormat::Png).unwrap()[0]
            .bytes
            .clone()
    };
    assert!(
        render(1) == render(2),
        "summary.json differs between --jobs 1 and --jobs 2"
    );
}
