//! The documents mutations start from: every bundled scenario, parsed once.

#![allow(dead_code)]

use std::sync::OnceLock;

use serde_json::Value;

macro_rules! bundled {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../scenarios/", $name, ".json")))),*]
    };
}

/// The bundled scenarios by name, as text.
pub const SCENARIOS: &[(&str, &str)] = bundled!(
    "adaptive-throttling",
    "amplification-closed-form",
    "aws-adaptive-dilution",
    "aws-backoff-jitter",
    "backoff-open-vs-closed",
    "balancers-near-saturation",
    "bench-10m",
    "bench-1m",
    "brooker-2022",
    "budget-dilution",
    "collapse-after-spike",
    "crashed-replica",
    "double-charge",
    "envoy-budget-storm",
    "first-storm",
    "grpc-throttling",
    "hotos-metastable",
    "load-shedding",
    "metastable-phase",
    "mixed-clients",
    "queueing-theory",
    "retry-budget",
    "retry-chapter",
    "tail-at-scale",
    "thundering-herd",
    "tiers-bulkhead",
    "tiers-cascading-slowdown",
    "tiers-retry-amplification",
);

/// The bundled scenarios, parsed.
pub fn scenarios() -> &'static [Value] {
    static PARSED: OnceLock<Vec<Value>> = OnceLock::new();
    PARSED.get_or_init(|| {
        SCENARIOS
            .iter()
            .map(|(name, text)| {
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"))
            })
            .collect()
    })
}

/// The files of a real run folder (first-storm, two replications: a fault window, so
/// recovery, typical runs and every figure's CSV are there), made once.
pub fn run_folder() -> &'static [(String, Vec<u8>)] {
    static FILES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let text = SCENARIOS
            .iter()
            .find(|(name, _)| *name == "first-storm")
            .expect("first-storm is bundled")
            .1;
        let options = retrystorm::scenario::LoadOptions {
            replications: Some(2),
            ..Default::default()
        };
        let experiment = retrystorm::scenario::load_str(text, "first-storm", &options)
            .expect("first-storm is valid");
        let result = retrystorm::runner::run(&experiment, 1, &|| {});
        retrystorm::output::render(
            &experiment,
            &result,
            retrystorm::report::ImageFormat::Svg,
            1,
        )
        .expect("first-storm renders")
        .into_iter()
        // The reader never looks at the pictures; leave them out so mutations hit data.
        .filter(|f| !f.name.ends_with(".svg") && f.name != "report.md")
        .map(|f| (f.name, f.bytes))
        .collect()
    })
}

/// A call graph with every per-call setting the shard folders should carry: calls between
/// services with hedges (a percentile delay), idempotency keys, adaptive throttling, a
/// bulkhead and a fallback, swept over two points.
pub const GRAPH: &str = r#"{
  "name": "fuzz-graph", "duration": "2s", "replications": 2, "seed": 3,
  "clients": {"count": 20, "entry": "front", "workload": {"open": {"rate_per_s": 200}}},
  "network": {"latency": {"exponential": {"mean": "1ms"}}},
  "services": {
    "front": {"concurrency": 8, "service_time": {"exponential": {"mean": "2ms"}},
              "calls": [{"to": "back", "policy": {"timeout": "50ms", "idempotent": false,
                 "idempotency_key": {"ttl": "10s"}, "hedge": {"delay": "p90", "window": 100},
                 "bulkhead": {"max_concurrent": 6}, "fallback": {"latency": {"constant": "1ms"}},
                 "retry": {"max_attempts": 3}}}]},
    "back": {"concurrency": 4, "service_time": {"exponential": {"mean": "5ms"}}, "error_rate": 0.1}
  },
  "policy": {"timeout": "200ms", "adaptive_throttle": true, "retry": {"max_attempts": 2}},
  "sweep": {"path": "services.back.concurrency", "values": [2, 4]}
}"#;

/// A folder's files, by name.
pub type Files = Vec<(String, Vec<u8>)>;

/// The files of the two shard folders of a run of [`GRAPH`], made once.
pub fn shard_folders() -> &'static [Files] {
    static FOLDERS: OnceLock<Vec<Files>> = OnceLock::new();
    FOLDERS.get_or_init(|| {
        let options = retrystorm::scenario::LoadOptions::default();
        let experiment = retrystorm::scenario::load_str(GRAPH, "graph.json", &options)
            .expect("the graph seed is valid");
        let overrides = retrystorm::shard::Overrides::default();
        (0..2)
            .map(|index| {
                let (range, _) = retrystorm::shard::plan(&experiment, index, 2);
                let result = retrystorm::runner::run_range(&experiment, range, 1, &|| {});
                let run = retrystorm::shard::ShardRun {
                    experiment: &experiment,
                    source: GRAPH,
                    file: "graph.json",
                    overrides: &overrides,
                    format: retrystorm::report::ImageFormat::Svg,
                    index,
                    count: 2,
                };
                retrystorm::shard::shard_files(&run, &result)
                    .expect("the shard renders")
                    .into_iter()
                    .map(|f| (f.name, f.bytes))
                    .collect()
            })
            .collect()
    })
}
