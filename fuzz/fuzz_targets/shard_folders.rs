//! `merge` on damaged shard folders of a call graph with hedges, keys and throttling: it must
//! merge them or say what is wrong, never panic, never hang.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../mutate.rs"]
mod mutate;
#[path = "../seeds.rs"]
mod seeds;

fuzz_target!(|data: &[u8]| {
    let mut src = mutate::Source::new(data);
    let folders = mutate::shard_folders_input(seeds::shard_folders(), &mut src);
    let root = tempfile::tempdir().expect("a temporary folder");
    let mut dirs = Vec::new();
    for (k, files) in folders.iter().enumerate() {
        let dir = root.path().join(format!("s{k}"));
        std::fs::create_dir_all(&dir).expect("writable");
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).expect("writable");
        }
        dirs.push(dir);
    }
    if let Ok(checked) = retrystorm::shard::check(&dirs) {
        let _ = retrystorm::shard::merge(&checked);
    }
});
