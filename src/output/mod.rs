//! A run's folder: the data files a run writes (summary.json, timeseries.csv,
//! service-timeseries.csv, example-runs.csv, sweep.csv and scenario.resolved.json), how a
//! folder is published whole or not at all ([`publish`], the only module in retrystorm that
//! writes files), and how a finished folder is read back and checked ([`reload`]) for
//! `retrystorm report DIR` and the shards. What people read, the figures and report.md, is
//! [`crate::report`]'s; this module knows nothing of them.

pub mod publish;
mod reload;
mod summary;
mod sweep;
mod timeseries;

pub use publish::{Destination, prepare};
pub use reload::{RunFolder, reload, reload_files};
pub use summary::{
    AxisSummary, CallName, GraphNames, PointSummary, ServiceName, Summary, SweepSummary,
    VariantSummary,
};
pub use sweep::sweep_csv;
pub use timeseries::{
    example_runs_csv, replica_timeseries_csv, service_timeseries_csv, timeseries_csv,
};

use crate::metrics::ExperimentResult;
use crate::report::{ImageFormat, OutputFile, render_report};
use crate::scenario::{Experiment, resolved_json};

/// The data files of a finished run: summary.json, timeseries.csv, scenario.resolved.json
/// and, where the run has them, example-runs.csv, service-timeseries.csv,
/// replica-timeseries.csv and sweep.csv.
pub fn data_files(
    experiment: &Experiment,
    result: &ExperimentResult,
) -> anyhow::Result<Vec<OutputFile>> {
    let mut bytes = serde_json::to_vec_pretty(&resolved_json(experiment))?;
    bytes.push(b'\n');
    let mut files = vec![
        OutputFile::new("summary.json", summary::summary_bytes(experiment, result)?),
        OutputFile::new("timeseries.csv", timeseries_csv(experiment, result)?),
        OutputFile::new("scenario.resolved.json", bytes),
    ];
    if let Some(bytes) = example_runs_csv(experiment, result)? {
        files.push(OutputFile::new("example-runs.csv", bytes));
    }
    if let Some(bytes) = service_timeseries_csv(experiment, result)? {
        files.push(OutputFile::new("service-timeseries.csv", bytes));
    }
    if let Some(bytes) = replica_timeseries_csv(experiment, result)? {
        files.push(OutputFile::new("replica-timeseries.csv", bytes));
    }
    if experiment.sweep.is_some() {
        files.push(OutputFile::new("sweep.csv", sweep_csv(experiment, result)?));
    }
    Ok(files)
}

/// Renders every output of a finished run: its data files ([`data_files`]), then report.md
/// and the figures in `format`, drawn on `threads` threads (0: all cores). With more than
/// one thread the data files, which the figures do not read, are made on a thread of
/// their own while the figures are drawn; the files and their order are the same.
pub fn render(
    experiment: &Experiment,
    result: &ExperimentResult,
    format: ImageFormat,
    threads: usize,
) -> anyhow::Result<Vec<OutputFile>> {
    let (data, report) = if crate::runner::thread_count(threads) > 1 {
        std::thread::scope(|scope| {
            let data = scope.spawn(|| data_files(experiment, result));
            let report = render_report(experiment, result, format, threads);
            (
                data.join().expect("the data files' thread panicked"),
                report,
            )
        })
    } else {
        (
            data_files(experiment, result),
            render_report(experiment, result, format, threads),
        )
    };
    let mut files = data?;
    files.extend(report?);
    Ok(files)
}
