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
    "amplification-closed-form",
    "aws-backoff-jitter",
    "backoff-open-vs-closed",
    "bench-10m",
    "bench-1m",
    "brooker-2022",
    "collapse-after-spike",
    "first-storm",
    "hotos-metastable",
    "metastable-phase",
    "queueing-theory",
    "retry-budget",
    "retry-chapter",
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
