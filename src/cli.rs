//! The command line: the only module that knows flags.
//!
//! `run` loads and validates every file before simulating any, so bad input writes nothing;
//! `check` lists every problem; `schema` prints the JSON Schema of the scenario format.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use crate::report::{self, ImageFormat};
use crate::runner;
use crate::scenario::{
    Axis, Experiment, LoadOptions, ScenarioError, Sweep, load_file, schema::RawScenario,
};

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
    /// Run scenario files and write summary.json, timeseries.csv (and sweep.csv) and
    /// scenario.resolved.json.
    Run(RunArgs),
    /// Validate scenario files and list every problem, without running them.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Re-render report.md and the figures of a finished run from its output folder,
    /// without simulating again.
    Report {
        /// The output folder of a run (holding summary.json).
        dir: PathBuf,
        /// Image format of the figures.
        #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
        format: ImageFormat,
    },
    /// Print the JSON Schema of the scenario format (for editor autocompletion).
    Schema,
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
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub replications: Option<u64>,
    /// Override or add a sweep: PATH=V1,V2,... (values are JSON, e.g. clients.count=10,20).
    /// Given twice, the second is a second axis: every pair of values runs.
    #[arg(long, value_name = "PATH=V1,V2,...", value_parser = parse_sweep)]
    pub sweep: Vec<Sweep>,
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
    /// Image format of the figures.
    #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
    pub format: ImageFormat,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
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
        Command::Run(args) => run_files(&args),
        Command::Check { files } => check_files(&files),
        Command::Report { dir, format } => {
            let (experiment, result) = report::reload(&dir)?;
            let files = report::render_report(&experiment, &result, format)?;
            report::write_files(&dir, &files)?;
            println!(
                "report.md and {} figure files re-rendered in {}",
                files.len() - 1,
                dir.display()
            );
            Ok(())
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

/// The exit code for an error returned by [`run`].
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<ScenarioError>().is_some() || err.downcast_ref::<BadInput>().is_some() {
        EXIT_BAD_INPUT
    } else {
        EXIT_FAILURE
    }
}

/// Several files had problems; each was already described.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

fn load_all(files: &[PathBuf], options: &LoadOptions) -> anyhow::Result<Vec<Experiment>> {
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match load_file(f, options) {
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

fn run_files(args: &RunArgs) -> anyhow::Result<()> {
    let options = LoadOptions {
        seed: args.seed,
        replications: args.replications,
        sweep: sweep_option(&args.sweep)?,
    };
    let experiments = load_all(&args.files, &options)?;
    let several = experiments.len() > 1;
    for experiment in &experiments {
        let dir = output_dir(args.out.as_deref(), &experiment.name, several);
        let progress = Progress::new(experiment, args.quiet);
        let result = runner::run(experiment, args.jobs, &|| progress.job_done());
        progress.finish();
        let files = report::render(experiment, &result, args.format)?;
        report::write_files(&dir, &files)?;
        if !args.quiet {
            let mut out = std::io::stdout().lock();
            write!(out, "{}", report::table(experiment, &result))?;
            writeln!(out, "results in {}\n", dir.display())?;
        }
    }
    Ok(())
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
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(jobs as u64),
            indicatif::ProgressDrawTarget::hidden(),
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} replications, about {eta} left",
            )
            .expect("the template is valid")
            .progress_chars("=> "),
        );
        bar.set_message(experiment.name.clone());
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

fn output_dir(out: Option<&Path>, name: &str, several: bool) -> PathBuf {
    match out {
        Some(dir) if several => dir.join(name),
        Some(dir) => dir.to_path_buf(),
        None => Path::new("output").join(name),
    }
}

fn check_files(files: &[PathBuf]) -> anyhow::Result<()> {
    let experiments = load_all(files, &LoadOptions::default())?;
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
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
