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
