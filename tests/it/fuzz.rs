//! A bounded slice of the fuzzing in `fuzz/`, on stable Rust and in every test run: structured
//! and byte mutations of the bundled scenarios through the loader, and of a real run folder
//! through the reader behind `report DIR`, and every input a fuzzer ever broke the loader with
//! (`fuzz/regressions/`). Each must answer Ok or say what is wrong; a panic fails the test
//! with the input that caused it.
//!
//! Damaged shard folders of a call graph with hedges, keys and throttling go through `merge`'s
//! reading and merging the same way.
//!
//! `RETRYSTORM_FUZZ_INPUTS=N` sets how many mutated inputs to try (default 5,000; a tenth as
//! many run folders, a hundredth as many sets of shard folders), and
//! `RETRYSTORM_FUZZ_FIRST=K` the seed of the first (default 0), so long runs split across
//! processes.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use retrystorm::output::{RunFolder, reload_files};
use retrystorm::scenario::{LoadOptions, load_str, resolved_json};

#[path = "../../fuzz/mutate.rs"]
mod mutate;
#[path = "../../fuzz/seeds.rs"]
mod seeds;

/// Loads `text` as the fuzz target does; returns what went wrong, if anything did.
fn load_survives(text: &str) -> Result<(), String> {
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if let Ok(experiment) = load_str(text, "fuzz", &LoadOptions::default()) {
            let _ = resolved_json(&experiment);
        }
    }));
    if outcome.is_err() {
        return Err("the loader panicked".into());
    }
    // Not a benchmark: a guard against inputs that make the loader loop or go quadratic.
    if started.elapsed() > Duration::from_secs(5) {
        return Err(format!("the loader took {:?}", started.elapsed()));
    }
    Ok(())
}

fn first() -> u64 {
    std::env::var("RETRYSTORM_FUZZ_FIRST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn inputs() -> u64 {
    std::env::var("RETRYSTORM_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000)
}

#[test]
fn every_bundled_scenario_is_a_seed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut bundled: Vec<String> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".json")?.to_string())
        })
        .collect();
    bundled.sort();
    let mut seeded: Vec<String> = seeds::SCENARIOS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    seeded.sort();
    assert_eq!(
        bundled, seeded,
        "fuzz/seeds.rs lists every bundled scenario"
    );
}

#[test]
fn the_loader_survives_mutated_scenarios() {
    let mut failures = Vec::new();
    for i in first()..first() + inputs() {
        // Each input from its own seed, so a failure names the one to replay.
        let mut rng = rand_pcg::Pcg64::seed_from_u64(i);
        let len = rng.random_range(16..512);
        let script: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let mut src = mutate::Source::new(&script);
        let bytes = mutate::scenario_input(seeds::scenarios(), &mut src);
        let text = String::from_utf8_lossy(&bytes);
        if let Err(why) = load_survives(&text) {
            failures.push(format!("input {i}: {why}\n{text}"));
            if failures.len() == 3 {
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_input_a_fuzzer_broke_the_loader_with_now_loads_or_is_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut tried = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz/regressions exists") {
        let path = entry.expect("readable").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("scenario-"))
        {
            let bytes = std::fs::read(&path).expect("readable");
            let text = String::from_utf8_lossy(&bytes);
            if let Err(why) = load_survives(&text) {
                panic!("{}: {why}", path.display());
            }
            tried += 1;
        }
    }
    assert!(tried > 0, "no scenario regressions in {}", dir.display());
}

#[test]
fn the_run_folder_reader_survives_damaged_folders() {
    let n = inputs() / 10;
    for i in 0..n {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(i);
        let script: Vec<u8> = (0..256).map(|_| rng.random()).collect();
        let mut src = mutate::Source::new(&script);
        let files = mutate::run_folder_input(seeds::run_folder(), &mut src);
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let _ = reload_files(&RunFolder::from_files(files));
        }));
        assert!(outcome.is_ok(), "input {i}: the reader panicked");
        // Not a benchmark: a guard against damage that makes the reader loop.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "input {i}: the reader took {:?}",
            started.elapsed()
        );
    }
}

/// Writes `folders` under `root` (as `s0`, `s1`, ...) and has `merge` check and merge them;
/// returns what went wrong, if anything did.
fn merge_survives(root: &Path, folders: &[Vec<(String, Vec<u8>)>]) -> Result<(), String> {
    let mut dirs = Vec::new();
    for (k, files) in folders.iter().enumerate() {
        let dir = root.join(format!("s{k}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).map_err(|e| e.to_string())?;
        }
        dirs.push(dir);
    }
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if let Ok(checked) = retrystorm::shard::check(&dirs) {
            let _ = retrystorm::shard::merge(&checked);
        }
    }));
    if outcome.is_err() {
        return Err("merge panicked".into());
    }
    // Not a benchmark: a guard against damage that makes merge loop.
    if started.elapsed() > Duration::from_secs(5) {
        return Err(format!("merge took {:?}", started.elapsed()));
    }
    Ok(())
}

#[test]
fn merge_survives_damaged_shard_folders() {
    let root = tempfile::tempdir().unwrap();
    let n = inputs() / 100;
    for i in first()..first() + n {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(i);
        let script: Vec<u8> = (0..256).map(|_| rng.random()).collect();
        let mut src = mutate::Source::new(&script);
        let folders = mutate::shard_folders_input(seeds::shard_folders(), &mut src);
        if let Err(why) = merge_survives(root.path(), &folders) {
            panic!("input {i}: {why}");
        }
    }
}
