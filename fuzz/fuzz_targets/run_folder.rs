//! The run-folder reader behind `retrystorm report DIR` on damaged folders: it must accept
//! the folder or say what is wrong with it, never panic, never hang.

#![no_main]

use libfuzzer_sys::fuzz_target;
use retrystorm::output::{RunFolder, reload_files};

#[path = "../mutate.rs"]
mod mutate;
#[path = "../seeds.rs"]
mod seeds;

fuzz_target!(|data: &[u8]| {
    let mut src = mutate::Source::new(data);
    let files = mutate::run_folder_input(seeds::run_folder(), &mut src);
    let _ = reload_files(&RunFolder::from_files(files));
});
