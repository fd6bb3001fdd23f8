//! The one integration-test binary: bundled scenarios against theory and published results,
//! determinism, invariants, the command line, the output folder and bad input.
//!
//! Statistical checks run seeded, so they never flake, and with enough replications that the
//! comparison means something. Run them in release mode (`cargo test --release`): some
//! simulate millions of requests.

mod aws_adaptive;
mod bad_input;
mod budget_dilution;
mod calls_by_name;
mod cli;
mod determinism;
mod envoy_config;
mod exactness;
mod figures;
mod first_storm;
mod fuzz;
mod graph;
mod graph_report;
mod grpc_config;
mod hedging;
mod invariants;
mod memory;
mod memory_budget;
mod metastable;
mod outlier;
mod output;
mod policies;
mod populations;
mod presets;
mod recovery;
mod references;
mod replicas;
mod results;
mod retry_throttling;
mod scenario_rules;
mod schema_agrees;
mod settled;
mod shards;
mod shedding;
mod throttling;
mod tune;
mod two_axis_sweep;

use std::path::{Path, PathBuf};

use retrystorm::metrics::{ExperimentResult, VariantResult};
use retrystorm::scenario::{Experiment, LoadOptions, load_file, load_str};
use serde_json::Value;

/// The path of a bundled scenario.
pub fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"))
}

/// Loads and runs a bundled scenario on all cores.
pub fn run_bundled(name: &str, options: &LoadOptions) -> (Experiment, ExperimentResult) {
    let experiment = load_file(&scenario_path(name), options)
        .unwrap_or_else(|e| panic!("bundled scenario {name} is invalid: {e}"));
    let result = retrystorm::runner::run(&experiment, 0, &|| {});
    (experiment, result)
}

/// Loads and runs scenario text on all cores.
pub fn run_text(text: &str) -> (Experiment, ExperimentResult) {
    let experiment = load_str(text, "test", &LoadOptions::default())
        .unwrap_or_else(|e| panic!("test scenario is invalid: {e}"));
    let result = retrystorm::runner::run(&experiment, 0, &|| {});
    (experiment, result)
}

/// The variant named `name` (without a sweep).
pub fn variant<'a>(result: &'a ExperimentResult, name: &str) -> &'a VariantResult {
    result.points[0]
        .variants
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name:?}"))
}

/// A metric's mean and 95 % half-width, by dotted path (`latency_ms.p99`), through
/// summary.json's serialised shape; a path that names no number fails the test.
pub fn metric(v: &VariantResult, path: &str) -> (f64, f64) {
    // The `server.*` metrics are the entry service's, `services[0]` in the document.
    let json_path = match path.strip_prefix("server.") {
        Some(field) => format!("services.0.{field}"),
        None => path.to_string(),
    };
    let get = |doc: &retrystorm::metrics::Metrics| {
        let doc: Value = serde_json::to_value(doc).expect("metrics serialise");
        json_path
            .split('.')
            .try_fold(&doc, |d, k| match k.parse::<usize>() {
                Ok(i) => d.get(i),
                Err(_) => d.get(k),
            })
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("no metric {path}"))
    };
    (get(&v.metrics), get(&v.ci95))
}

/// Asserts that `expected` lies inside the variant's own 95 % interval for `path`.
pub fn assert_in_ci(v: &VariantResult, path: &str, expected: f64) {
    let (mean, half) = metric(v, path);
    assert!(
        (mean - expected).abs() <= half,
        "{}: {path} = {mean} ± {half}, expected {expected} inside the 95 % interval",
        v.name
    );
}

/// Asserts `|actual - expected| <= tolerance`.
pub fn assert_close(what: &str, actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: got {actual}, expected {expected} ± {tolerance}"
    );
}
