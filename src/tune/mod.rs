//! `retrystorm tune`: the settings that hold across a suite of faults.
//!
//! A tune file ([`file`]) names a scenario whose variants are the faults, the settings to
//! search, the objectives and the constraints. [`race::search`] runs every candidate at every
//! fault under common random numbers, dropping candidates worse with confidence after each
//! round of a race; [`front::decide`] draws the Pareto fronts (worst fault and mean over the
//! suite) and picks a recommendation; [`write`] and [`figures`] make the folder's files.
//! Nothing here but [`state`] (a state folder, for resuming and for shards) reads a clock or
//! touches a file: the command line publishes what [`run`] returns.

pub mod figures;
pub mod file;
pub mod front;
pub mod measure;
pub mod race;
pub mod state;
pub mod write;

pub use file::{Tune, TuneError, load};
pub use front::{Found, decide};
pub use race::{Progress, Searched, Store, search, search_with};
pub use state::StateDir;

use crate::report::OutputFile;
use crate::report::charts::ImageFormat;

/// Every file of a tune's folder but the manifest: tune.json, candidates.csv, report.md and
/// the figures with their CSVs.
pub fn files(
    tune: &Tune,
    s: &Searched,
    found: &Found,
    format: ImageFormat,
) -> anyhow::Result<Vec<OutputFile>> {
    let (mut out, captions) = figures::figures(tune, s, found, format)?;
    out.push(OutputFile::new(
        crate::output::publish::TUNE_INFO,
        write::tune_json(tune, s, found),
    ));
    out.push(OutputFile::new(
        "candidates.csv",
        write::candidates_csv(tune, s, found)?,
    ));
    let md = write::report_md(tune, s, found, &captions, format.extension());
    out.push(OutputFile::new("report.md", md.into_bytes()));
    if let Some(c) = found.recommended {
        // The scenario file with the recommended settings in place, its variants the faults:
        // `retrystorm run recommended.json` runs it as the tune did.
        let doc = tune.scenario_of(c);
        let mut bytes = serde_json::to_vec_pretty(&doc)?;
        bytes.push(b'\n');
        out.push(OutputFile::new("recommended.json", bytes));
    }
    Ok(out)
}

/// The search and its files: what `retrystorm tune` publishes.
pub fn run(
    tune: &Tune,
    jobs: usize,
    format: ImageFormat,
    progress: &dyn Progress,
    store: Option<&dyn Store>,
) -> anyhow::Result<(Searched, Found, Vec<OutputFile>)> {
    let searched = search_with(tune, jobs, progress, store)?;
    let found = decide(tune, &searched);
    let files = files(tune, &searched, &found, format)?;
    Ok((searched, found, files))
}
