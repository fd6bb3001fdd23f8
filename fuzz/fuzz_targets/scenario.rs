//! The scenario loader on any bytes: it must answer Ok or a list of problems, never panic,
//! never hang. Half the inputs are raw text, half structured mutations of a bundled scenario.

#![no_main]

use libfuzzer_sys::fuzz_target;
use retrystorm::scenario::{LoadOptions, load_str, resolved_json};

#[path = "../mutate.rs"]
mod mutate;
#[path = "../seeds.rs"]
mod seeds;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = if mode % 2 == 0 {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        let mut src = mutate::Source::new(rest);
        String::from_utf8_lossy(&mutate::scenario_input(seeds::scenarios(), &mut src)).into_owned()
    };
    if let Ok(experiment) = load_str(&text, "fuzz", &LoadOptions::default()) {
        // What `run` writes first: the resolved scenario.
        let _ = resolved_json(&experiment);
    }
});
