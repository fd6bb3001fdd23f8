//! The command line: the only module that knows flags.
//!
//! `run` loads and validates every file and checks every output folder before simulating
//! any, so bad input writes nothing and a run does not fail at its end for want of a place to
//! write; `check` lists every problem; `schema` prints the JSON Schema of the scenario format.
//!
//! SIGINT and SIGTERM never leave a half-written folder: `run` and `report` note the signal,
//! stop simulating at once or abandon the write (the folder stays as it was), or, when the new
//! folder is already being put in place, finish that first; then they exit with 130 or 143.
//! A second signal ends the process at once.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use crate::memory;
use crate::output::publish::{self, Cancelled, Kind, Refused};
use crate::output::{self, Destination, RunFolder};
use crate::report::{self, ImageFormat, OutputFile};
use crate::runner;
use crate::scenario::{
    Axis, Experiment, LoadOptions, ScenarioError, Sweep, load_file, schema::RawScenario,
};
use crate::shard::{self, ShardRefused, ShardSpec};

/// Exit code for a bad scenario or bad usage.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a failure while running or writing.
pub const EXIT_FAILURE: u8 = 1;

/// retrystorm: what will our retries do to the server when it is already in trouble?
///
/// Simulates clients retrying against an overloaded or failing server, under every retry
/// strategy a scenario file lists, and reports server load, amplification, success, latency
/// and completion time with 95 % confidence intervals.
#[derive(Debug, Parser)]
#[command(name = "retrystorm", version, about, long_about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenario files, write each run's folder and print the results table.
    ///
    /// A run's folder holds report.md and its figures (PNG or SVG, each with the CSV it plots),
    /// summary.json, timeseries.csv, latency.csv, scenario.resolved.json and manifest.json, and
    /// where they apply sweep.csv, example-runs.csv, service-timeseries.csv and
    /// replica-timeseries.csv.
    Run(RunArgs),
    /// Validate scenario files and list every problem, without running them.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Re-render report.md and the figures of a finished run from its output folder,
    /// without simulating again; the folder is checked first and replaced as a whole.
    Report {
        /// The output folder of a run (holding summary.json).
        dir: PathBuf,
        /// Image format of the figures.
        #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
        format: ImageFormat,
        /// Threads drawing the figures (default: all cores; at most 1024). The figures do not
        /// depend on it.
        #[arg(long, value_name = "N", default_value_t = 0, value_parser = parse_jobs)]
        jobs: usize,
    },
    /// Print the JSON Schema of the scenario format (for editor autocompletion).
    Schema,
    /// Merge the shard folders of a sharded run (`run --shard I/K`) into the folder a single
    /// run would have written, byte for byte; refuses missing, duplicate, foreign or damaged
    /// shards and then writes nothing.
    Merge(MergeArgs),
    /// Search the settings that hold across a suite of faults: every combination of the
    /// searched values at every fault of the suite, under common random numbers, raced (a
    /// candidate worse with confidence is dropped) or on a grid. Writes tune.json,
    /// candidates.csv, report.md and the fronts' figures.
    Tune(TuneArgs),
}

/// `retrystorm tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The tune file.
    pub file: PathBuf,
    /// Output folder (default output/<name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Worker threads (default: all cores; at most 1024). Results do not depend on it.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = parse_jobs)]
    pub jobs: usize,
    /// Image format of the figures.
    #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
    pub format: ImageFormat,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Keep each round's results in DIR and take those already there: an interrupted tune
    /// given the same DIR resumes where it stopped, and the shards of a tune share DIR.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Run as shard I of K (0-based), sharing --state DIR with the others: I/K, auto (index
    /// and count from a Slurm job array) or auto/K. A shard writes only its share into DIR;
    /// when every shard is done, `retrystorm tune FILE --state DIR` writes the results.
    #[arg(long, value_name = "I/K", value_parser = shard::parse_spec, requires = "state")]
    pub shard: Option<ShardSpec>,
}

/// `retrystorm merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard folders, every one of the run, in any order.
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub dirs: Vec<PathBuf>,
    /// Output folder (default output/<name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `retrystorm run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output folder (default output/<name>). With several files, each goes to DIR/<name>.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Override the number of replications.
    #[arg(long, value_name = "N", value_parser = parse_replications)]
    pub replications: Option<u64>,
    /// Override or add a sweep: PATH=V1,V2,... (values are JSON, e.g. clients.count=10,20).
    /// Given twice, the second is a second axis: every pair of values runs.
    #[arg(long, value_name = "PATH=V1,V2,...", value_parser = parse_sweep)]
    pub sweep: Vec<Sweep>,
    /// Change one setting of every variant without editing the file: PATH=VALUE (the value
    /// is JSON, a bare word a string), e.g. metrics.bucket=100ms for finer time series. May be
    /// given for several settings; scenario.resolved.json records the values run.
    #[arg(long, value_name = "PATH=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, Value)>,
    /// Worker threads (default: all cores; at most 1024). Results do not depend on it.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = parse_jobs)]
    pub jobs: usize,
    /// Image format of the figures.
    #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
    pub format: ImageFormat,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run one share of the work and write a shard folder (default output/<name>.shard-I-of-K)
    /// for `retrystorm merge`: I/K (0-based, 0 <= I < K), auto (index and count from a Slurm
    /// job array) or auto/K (index from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "I/K", value_parser = shard::parse_spec)]
    pub shard: Option<ShardSpec>,
}

/// The most threads `--jobs` may ask for: more than any machine retrystorm runs on has cores,
/// and few enough to start at once.
const MAX_JOBS: usize = 1024;

/// `--jobs N`: 0 (all cores) to [`MAX_JOBS`].
fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n <= MAX_JOBS => Ok(n),
        _ => Err(format!(
            "must be a whole number of threads from 1 to {MAX_JOBS}, or 0 for all cores"
        )),
    }
}

/// `--replications N`: a whole number of at least 1, said as a person would.
fn parse_replications(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1 (got 0): each variant runs this many times".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "must be a whole number of at least 1 (got {text:?}): each variant runs this many times"
        )),
    }
}

/// `--set PATH=VALUE`: the value as JSON, or a bare word as a string (`100ms`).
fn parse_set(text: &str) -> Result<(String, Value), String> {
    let (path, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected PATH=VALUE, e.g. metrics.bucket=100ms (got {text:?})"))?;
    let (path, value) = (path.trim(), value.trim());
    if path.is_empty() || value.is_empty() {
        return Err(format!(
            "expected PATH=VALUE with both given, e.g. metrics.bucket=100ms (got {text:?})"
        ));
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
    Ok((path.to_string(), value))
}

fn parse_sweep(text: &str) -> Result<Sweep, String> {
    let (path, values) = text
        .split_once('=')
        .ok_or_else(|| format!("expected PATH=V1,V2,... (got {text:?})"))?;
    // Values are JSON separated by commas, so objects and strings with commas work
    // (`network.latency={"constant":"1ms"},{"constant":"5ms"}`); a bare word is a string.
    let values: Vec<Value> = match serde_json::from_str(&format!("[{values}]")) {
        Ok(values) => values,
        Err(_) => values
            .split(',')
            .map(|v| {
                serde_json::from_str(v.trim()).unwrap_or_else(|_| Value::String(v.trim().into()))
            })
            .collect(),
    };
    if values.is_empty() {
        return Err(format!("no values to sweep in {text:?}"));
    }
    Ok(Sweep::new(path.trim(), values))
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) if args.shard.is_some() => run_shard(&args, &Signals::install()?),
        Command::Run(args) => run_files(&args, &Signals::install()?),
        Command::Merge(args) => merge_shards(&args, &Signals::install()?),
        Command::Tune(args) => tune_file(&args, &Signals::install()?),
        Command::Check { files } => check_files(&files),
        Command::Report { dir, format, jobs } => {
            report_dir(&dir, format, jobs, &Signals::install()?)
        }
        Command::Schema => {
            let schema = schemars::schema_for!(RawScenario);
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &schema)?;
            writeln!(out)?;
            Ok(())
        }
    }
}

/// The exit code for an error returned by [`run`]: 2 for bad input or usage, including an
/// output folder that `run` refuses to replace (the command names the wrong folder); 128 plus
/// the signal's number after SIGINT (130) or SIGTERM (143); 1 for anything else.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if let Some(i) = err.downcast_ref::<Interrupted>() {
        128u8.saturating_add(i.signal as u8)
    } else if err.downcast_ref::<ScenarioError>().is_some()
        || err.downcast_ref::<BadInput>().is_some()
        || err.downcast_ref::<crate::tune::TuneError>().is_some()
        || err.downcast_ref::<ShardRefused>().is_some()
        || err.downcast_ref::<Refused>().is_some()
    {
        EXIT_BAD_INPUT
    } else {
        EXIT_FAILURE
    }
}

/// The run stopped at SIGINT or SIGTERM.
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {}: {what}", signal_name(*.signal))]
pub struct Interrupted {
    /// The signal's number.
    pub signal: i32,
    /// What was left.
    pub what: String,
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        signal_hook::consts::SIGINT => "SIGINT",
        signal_hook::consts::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// SIGINT and SIGTERM, noted rather than obeyed at once, so that a folder is never left half
/// written; a second one ends the process at once.
struct Signals {
    got: Arc<AtomicUsize>,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let got = Arc::new(AtomicUsize::new(0));
        let again = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            // In this order: the first signal finds `again` false and sets it; the second
            // finds it true and exits.
            signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, again.clone())?;
            signal_hook::flag::register(signal, again.clone())?;
            signal_hook::flag::register_usize(signal, got.clone(), signal as usize)?;
        }
        Ok(Signals { got })
    }

    /// The signal received, if any.
    fn pending(&self) -> Option<i32> {
        match self.got.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(signal as i32),
        }
    }

    fn interrupted(&self, what: String) -> anyhow::Error {
        Interrupted {
            signal: self.pending().unwrap_or(signal_hook::consts::SIGINT),
            what,
        }
        .into()
    }

    /// The error of work that `signal` (or a worker that ended without a result) stopped
    /// before anything was written to `dest`.
    fn stopped(&self, signal: Option<i32>, dest: &std::path::Path) -> anyhow::Error {
        match signal {
            Some(_) => self.interrupted(format!(
                "nothing was written; {} is as it was",
                dest.display()
            )),
            None => anyhow::anyhow!("the simulation stopped without a result"),
        }
    }

    /// Runs `work` on another thread and waits for it, unless a signal comes first.
    fn wait_for<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Option<i32>> {
        use std::sync::mpsc::RecvTimeoutError;
        let (tx, rx) = std::sync::mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("retrystorm-run".into())
            .spawn(move || {
                let _ = tx.send(work());
            })
            .map_err(|_| None)?;
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(value) => return Ok(value),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(signal) = self.pending() {
                        return Err(Some(signal));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => match worker.join() {
                    Err(panic) => std::panic::resume_unwind(panic),
                    Ok(()) => return Err(None),
                },
            }
        }
    }

    /// Checks the output folder `dir` for a folder of `kind` ([`output::prepare`]); a signal
    /// stops a wait for another run's lock on its parent.
    fn prepare(&self, dir: &Path, kind: Kind) -> anyhow::Result<Destination> {
        let cancelled = || self.pending().is_some();
        output::prepare(dir, kind, &cancelled).map_err(|e| {
            if e.is::<Cancelled>() {
                self.interrupted(format!(
                    "nothing was written; {} is as it was",
                    dir.display()
                ))
            } else {
                e
            }
        })
    }

    /// Publishes `files` as `dest`: abandoned on a signal until the folder is put in place,
    /// which is then finished first.
    fn publish(&self, dest: &Destination, files: &[OutputFile]) -> anyhow::Result<()> {
        let cancelled = || self.pending().is_some();
        let options = publish::Options {
            cancelled: &cancelled,
            ..Default::default()
        };
        match publish::publish(dest, files, &options) {
            Err(e) if e.is::<Cancelled>() => Err(self.interrupted(format!(
                "nothing was written; {} is as it was",
                dest.shown().display()
            ))),
            Err(e) => Err(e),
            Ok(()) => {
                if std::env::current_dir().is_err() {
                    eprintln!(
                        "note: the current folder was {}, which is now replaced: `cd` into it again to see the new files",
                        dest.shown().display()
                    );
                }
                match self.pending() {
                    Some(_) => Err(self.interrupted(format!(
                        "{} had been written in full",
                        dest.shown().display()
                    ))),
                    None => Ok(()),
                }
            }
        }
    }
}

/// `retrystorm report DIR`: checks the run in DIR, renders report.md and the figures again
/// and replaces the folder with the run's data and the new renders. Every problem is a
/// failure (exit 1): DIR's contents are the input here.
fn report_dir(
    dir: &Path,
    format: ImageFormat,
    jobs: usize,
    signals: &Signals,
) -> anyhow::Result<()> {
    let as_failure = |e: anyhow::Error| match e.downcast::<Refused>() {
        Ok(refused) => anyhow::anyhow!("{refused}"),
        Err(e) => e,
    };
    let folder = RunFolder::read(dir)?;
    let (experiment, result) =
        output::reload_files(&folder).map_err(|e| anyhow::anyhow!("{}: {e:#}", dir.display()))?;
    let rendered = report::render_report(&experiment, &result, format, jobs)?;
    let figures = rendered.len() - 1;
    let mut files = folder.kept_files();
    files.extend(rendered);
    let dest = signals.prepare(dir, Kind::Run).map_err(as_failure)?;
    signals.publish(&dest, &files).map_err(as_failure)?;
    println!(
        "report.md and {figures} figure files re-rendered in {}",
        dir.display()
    );
    Ok(())
}

/// Several files had problems; each was already described.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

fn load_all(
    files: &[PathBuf],
    options: &LoadOptions,
    jobs: usize,
) -> anyhow::Result<Vec<Experiment>> {
    let threads = runner::thread_count(jobs);
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        let within = |e| memory::within_budget(e, &f.display().to_string(), threads);
        match load_file(f, options).and_then(within) {
            Ok(e) => loaded.push(e),
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(loaded),
        1 => Err(errors.remove(0).into()),
        _ => Err(BadInput(
            errors
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .into()),
    }
}

/// The sweep that `--sweep` given zero, one or two times asks for.
fn sweep_option(sweeps: &[Sweep]) -> anyhow::Result<Option<Sweep>> {
    match sweeps {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        [first, second] => Ok(Some(
            first
                .clone()
                .with_second(Axis::new(second.path.clone(), second.values.clone())),
        )),
        more => Err(BadInput(format!(
            "--sweep: given {} times, but a sweep has at most two axes (give it once or twice)",
            more.len()
        ))
        .into()),
    }
}

fn run_files(args: &RunArgs, signals: &Signals) -> anyhow::Result<()> {
    let options = LoadOptions {
        seed: args.seed,
        replications: args.replications,
        sweep: sweep_option(&args.sweep)?,
        set: args.set.clone(),
    };
    let experiments = load_all(&args.files, &options, args.jobs)?;
    warn_cautions(&args.files, &experiments);
    // Every output folder is checked before anything is simulated.
    let several = experiments.len() > 1;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (file, experiment) in args.files.iter().zip(&experiments) {
        let dir = output_dir(args.out.as_deref(), &experiment.name, several)
            .map_err(|e| BadInput(format!("{}: {e}", file.display())))?;
        let same = publish::identity(&dir);
        if let Some(i) = dirs.iter().position(|d| publish::identity(d) == same) {
            return Err(BadInput(format!(
                "{} and {} would both write to {}: one folder holds one run. Give the scenarios different names, or run them one at a time with --out",
                args.files[i].display(),
                file.display(),
                dir.display()
            ))
            .into());
        }
        dirs.push(dir);
    }
    let dests = dirs
        .iter()
        .map(|d| signals.prepare(d, Kind::Run))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for (experiment, dest) in experiments.into_iter().zip(&dests) {
        let experiment = Arc::new(experiment);
        let progress = Arc::new(Progress::new(&experiment, args.quiet));
        let work = {
            let (experiment, progress) = (experiment.clone(), progress.clone());
            let (jobs, format) = (args.jobs, args.format);
            move || -> anyhow::Result<_> {
                let result = runner::run(&experiment, jobs, &|| progress.job_done());
                progress.finish();
                let files = output::render(&experiment, &result, format, jobs)?;
                Ok((result, files))
            }
        };
        let (result, files) = match signals.wait_for(work) {
            Ok(done) => done?,
            Err(signal) => {
                progress.finish();
                return Err(signals.stopped(signal, dest.shown()));
            }
        };
        signals.publish(dest, &files)?;
        if !args.quiet {
            let mut out = std::io::stdout().lock();
            write!(out, "{}", report::table(&experiment, &result))?;
            writeln!(out, "results in {}\n", dest.shown().display())?;
        }
    }
    Ok(())
}

/// The overrides of `args` that change results, as a shard records them.
fn overrides(args: &RunArgs) -> shard::Overrides {
    shard::Overrides {
        seed: args.seed,
        replications: args.replications,
        sweep: args
            .sweep
            .iter()
            .map(|s| shard::SweepOverride {
                path: s.path.clone(),
                values: s.values.clone(),
            })
            .collect(),
        set: args
            .set
            .iter()
            .map(|(path, value)| shard::SetOverride {
                path: path.clone(),
                value: value.clone(),
            })
            .collect(),
    }
}

/// `retrystorm run FILE --shard I/K`: runs the jobs of shard I of K and writes its shard
/// folder.
fn run_shard(args: &RunArgs, signals: &Signals) -> anyhow::Result<()> {
    let spec = args.shard.expect("called with --shard");
    let [file] = args.files.as_slice() else {
        return Err(BadInput(format!(
            "--shard runs one scenario file (got {}); run each file's shards on their own",
            args.files.len()
        ))
        .into());
    };
    let (index, count) = shard::resolve(spec, &|name| std::env::var(name).ok())?;
    let overrides = overrides(args);
    let options = LoadOptions {
        seed: args.seed,
        replications: args.replications,
        sweep: sweep_option(&args.sweep)?,
        set: args.set.clone(),
    };
    let source = crate::scenario::read_text(file).map_err(|reason| ScenarioError::Read {
        file: file.display().to_string(),
        reason,
    })?;
    let shown = file.display().to_string();
    let experiment = crate::scenario::load_str(&source, &shown, &options)?;
    let experiment = memory::within_budget(experiment, &shown, runner::thread_count(args.jobs))?;
    let dir = match &args.out {
        Some(dir) => dir.clone(),
        None => output_dir(
            None,
            &format!("{}.shard-{index}-of-{count}", experiment.name),
            false,
        )
        .map_err(|e| BadInput(format!("{shown}: {e}")))?,
    };
    let dest = signals.prepare(&dir, Kind::Shard)?;
    let (range, held) = shard::plan(&experiment, index, count);
    let experiment = Arc::new(experiment);
    let progress = Arc::new(Progress::with_total(
        &format!("{} shard {index}/{count}", experiment.name),
        range.end - range.start,
        args.quiet,
    ));
    let work = {
        let (experiment, progress) = (experiment.clone(), progress.clone());
        let jobs = args.jobs;
        let range = range.clone();
        move || runner::run_range(&experiment, range, jobs, &|| progress.job_done())
    };
    let result = match signals.wait_for(work) {
        Ok(done) => done,
        Err(signal) => {
            progress.finish();
            return Err(signals.stopped(signal, dest.shown()));
        }
    };
    progress.finish();
    let files = shard::shard_files(
        &shard::ShardRun {
            experiment: &experiment,
            source: &source,
            file: &shown,
            overrides: &overrides,
            format: args.format,
            index,
            count,
        },
        &result,
    )?;
    signals.publish(&dest, &files)?;
    if !args.quiet {
        let whole = held
            .iter()
            .filter(|h| {
                u64::from(h.replications[1] - h.replications[0])
                    == u64::from(experiment.replications)
            })
            .count();
        println!(
            "shard {index}/{count} of {}: {} of {} units ({whole} whole), {} replications run; shard folder {}",
            experiment.name,
            held.len(),
            runner::groups(&experiment).len(),
            range.end - range.start,
            dest.shown().display()
        );
    }
    Ok(())
}

/// `retrystorm merge SHARD_DIR... --out DIR`: checks the shards, folds them and writes the
/// run's folder.
fn merge_shards(args: &MergeArgs, signals: &Signals) -> anyhow::Result<()> {
    let checked = shard::check(&args.dirs)?;
    let experiment = &checked.experiment;
    let dir = output_dir(args.out.as_deref(), &experiment.name, false)
        .map_err(|e| BadInput(format!("merge: {e}")))?;
    let dest = signals.prepare(&dir, Kind::Run)?;
    let units = runner::groups(experiment).len();
    if !args.quiet {
        println!(
            "found {} shards of {}: {units} units of {} replications ({} in all)",
            checked.shards.len(),
            experiment.name,
            experiment.replications,
            units as u64 * u64::from(experiment.replications)
        );
    }
    let checked = Arc::new(checked);
    let work = {
        let checked = checked.clone();
        move || -> anyhow::Result<_> {
            let result = shard::merge(&checked)?;
            let files = output::render(&checked.experiment, &result, checked.format, 0)?;
            shard::check_reads_back(&files)?;
            Ok((result, files))
        }
    };
    let (result, files) = match signals.wait_for(work) {
        Ok(done) => done?,
        Err(signal) => {
            return Err(match signal {
                Some(_) => signals.interrupted(format!(
                    "nothing was written; {} is as it was",
                    dest.shown().display()
                )),
                None => anyhow::anyhow!("the merge stopped without a result"),
            });
        }
    };
    signals.publish(&dest, &files)?;
    if !args.quiet {
        let mut out = std::io::stdout().lock();
        write!(out, "{}", report::table(&checked.experiment, &result))?;
        writeln!(
            out,
            "merged {} shards: {} files written to {}\n",
            checked.shards.len(),
            files.len() + 1,
            dest.shown().display()
        )?;
    }
    Ok(())
}

/// `retrystorm tune FILE`: searches, then publishes the tune's folder.
fn tune_file(args: &TuneArgs, signals: &Signals) -> anyhow::Result<()> {
    let tune = Arc::new(crate::tune::load(&args.file)?);
    let dir = output_dir(args.out.as_deref(), &tune.name, false)
        .map_err(|e| BadInput(format!("{}: {e}", args.file.display())))?;
    let shard = match args.shard {
        Some(spec) => Some(shard::resolve(spec, &|name| std::env::var(name).ok())?),
        None => None,
    };
    let store = match &args.state {
        Some(state) => Some(Arc::new(
            crate::tune::StateDir::open(state, &tune, shard)
                .map_err(|e| BadInput(format!("--state: {e:#}")))?,
        )),
        None => None,
    };
    // A shard writes no output folder: the tune run after every shard writes it.
    let dest = match shard {
        Some(_) => None,
        None => Some(signals.prepare(&dir, Kind::Tune)?),
    };
    let grid =
        tune.candidates.len() as u64 * tune.faults.len() as u64 * u64::from(tune.replications);
    let progress = Arc::new(TuneProgress(Progress::with_total(
        &tune.name, grid, args.quiet,
    )));
    let work = {
        let (tune, progress, store) = (tune.clone(), progress.clone(), store.clone());
        let (jobs, format) = (args.jobs, args.format);
        move || {
            let store = store.as_deref().map(|s| s as &dyn crate::tune::Store);
            let done = crate::tune::run(&tune, jobs, format, &*progress, store);
            progress.0.finish();
            done
        }
    };
    let (searched, found, files) = match signals.wait_for(work) {
        Ok(done) => done?,
        Err(signal) => {
            progress.0.finish();
            return Err(signals.stopped(signal, dest.as_ref().map_or(&dir, |d| d.shown())));
        }
    };
    let Some(dest) = dest else {
        let (i, k) = shard.expect("only a shard has no folder");
        if !args.quiet {
            println!(
                "{}: shard {i} of {k} done; when every shard is, `retrystorm tune {} --state {}` writes the results",
                tune.name,
                args.file.display(),
                args.state
                    .as_ref()
                    .map_or(String::new(), |s| s.display().to_string())
            );
        }
        return Ok(());
    };
    signals.publish(&dest, &files)?;
    if !args.quiet {
        let spent = searched.spent(tune.faults.len());
        let recommended = found.recommended.map_or(
            "nothing (no candidate kept every constraint)".to_string(),
            |c| tune.label(c),
        );
        println!(
            "{}: {} candidates, {} on the front; {spent} of the grid's {grid} replications run\nrecommended: {recommended}\nresults in {}",
            tune.name,
            tune.candidates.len(),
            found.front.len(),
            dest.shown().display()
        );
    }
    Ok(())
}

/// A tune's progress: candidates alive and replications run, on the run's bar.
struct TuneProgress(Progress);

impl crate::tune::Progress for TuneProgress {
    fn round(&self, alive: usize, to: u32, left: u64) {
        let bar = &self.0.bar;
        bar.set_length(bar.position() + left);
        bar.set_message(format!("{} alive, to {to} replications", alive));
    }

    fn replication(&self) {
        self.0.job_done();
    }
}

/// A progress bar on stderr that appears only when a run takes longer than about a second,
/// and never when stderr is not a terminal or with `--quiet`.
struct Progress {
    bar: indicatif::ProgressBar,
    started: std::time::Instant,
    shown: std::sync::atomic::AtomicBool,
    quiet: bool,
}

impl Progress {
    fn new(experiment: &Experiment, quiet: bool) -> Self {
        let jobs: usize = experiment
            .points
            .iter()
            .map(|p| p.variants.len() * experiment.replications as usize)
            .sum();
        Self::with_total(&experiment.name, jobs as u64, quiet)
    }

    fn with_total(name: &str, jobs: u64, quiet: bool) -> Self {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(jobs),
            indicatif::ProgressDrawTarget::hidden(),
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} replications, about {eta} left",
            )
            .expect("the template is valid")
            .progress_chars("=> "),
        );
        bar.set_message(name.to_string());
        Progress {
            bar,
            started: std::time::Instant::now(),
            shown: std::sync::atomic::AtomicBool::new(false),
            quiet,
        }
    }

    fn job_done(&self) {
        use std::sync::atomic::Ordering;
        self.bar.inc(1);
        if !self.quiet
            && self.started.elapsed() > std::time::Duration::from_secs(1)
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            // ProgressDrawTarget::stderr draws nothing when stderr is not a terminal.
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// The output folder of a scenario: `--out` itself, or the scenario's name under
/// `--out` (several files) or `output/`. A name that is not one folder name (`..`, `a/b`) is
/// refused rather than let out of that folder.
fn output_dir(out: Option<&Path>, name: &str, several: bool) -> Result<PathBuf, String> {
    let named = |parent: &Path| {
        if publish::is_plain_name(name) {
            Ok(parent.join(name))
        } else {
            Err(format!(
                "the scenario's name {name:?} cannot name its output folder: it must be one folder name, without / or \\; rename the scenario or give --out DIR"
            ))
        }
    };
    match out {
        Some(dir) if several => named(dir),
        Some(dir) => Ok(dir.to_path_buf()),
        None => named(Path::new("output")),
    }
}

fn check_files(files: &[PathBuf]) -> anyhow::Result<()> {
    // `run` without --jobs: on every core.
    let experiments = load_all(files, &LoadOptions::default(), 0)?;
    let mut out = std::io::stdout().lock();
    for (file, e) in files.iter().zip(&experiments) {
        let variants = e.points[0].variants.len();
        let points = match e.sweep.as_ref().map(|s| (s, s.second.as_ref())) {
            Some((s, Some(second))) => format!(
                ", {} sweep points ({} x {})",
                e.points.len(),
                s.values.len(),
                second.values.len()
            ),
            Some(_) => format!(", {} sweep value{}", e.points.len(), plural(e.points.len())),
            None => String::new(),
        };
        writeln!(
            out,
            "{}: ok ({} variant{}{points}, {} replication{})",
            file.display(),
            variants,
            plural(variants),
            e.replications,
            plural(e.replications as usize),
        )
        .context("cannot write to stdout")?;
    }
    warn_cautions(files, &experiments);
    Ok(())
}

/// Prints each file's cautions (settings that are valid but most likely not meant) to
/// stderr as warnings: they never stop a run.
fn warn_cautions(files: &[PathBuf], experiments: &[Experiment]) {
    for (file, e) in files.iter().zip(experiments) {
        for c in crate::scenario::cautions(e) {
            eprintln!("warning: {}: {c}", file.display());
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
