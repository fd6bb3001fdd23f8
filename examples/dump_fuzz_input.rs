//! Turns an input the `scenario` fuzz target saved (fuzz/artifacts/scenario/...) into the
//! scenario text it stands for, to read it or to keep it in fuzz/regressions/:
//! `cargo run --release --example dump_fuzz_input ARTIFACT OUT.json`.

#[path = "../fuzz/mutate.rs"]
mod mutate;
#[path = "../fuzz/seeds.rs"]
mod seeds;
fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, artifact, out] = args.as_slice() else {
        eprintln!("usage: dump_fuzz_input ARTIFACT OUT.json");
        std::process::exit(2);
    };
    let data = std::fs::read(artifact)?;
    // The target's first byte picks the mode: even, the rest is the text itself.
    let bytes = match data.split_first() {
        Some((mode, rest)) if mode % 2 == 1 => {
            mutate::scenario_input(seeds::scenarios(), &mut mutate::Source::new(rest))
        }
        Some((_, rest)) => rest.to_vec(),
        None => Vec::new(),
    };
    std::fs::write(out, bytes)
}
