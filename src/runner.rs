//! Runs an [`Experiment`]: every replication of every variant at every sweep value, in
//! parallel, then aggregates each variant over its replications.
//!
//! Each job is independent and seeded from (seed, replication) only, and results are gathered
//! in job order, so the output is byte-identical for any number of threads. No I/O: progress
//! is reported through a callback.
//!
//! When a scenario has triggers, each replication's recovery is analysed where it ran
//! ([`recovery::analyse`]) and the variant gets a `recovery` object that counts the
//! replications that recovered rather than averaging them ([`recovery::summarise`]).

use rayon::prelude::*;
use serde_json::Value;

use crate::engine::SimDuration;
use crate::metrics::recovery::{self, Recovery};
use crate::metrics::{RunResult, Truncation, aggregate, aggregate_series, series::COLUMNS};
use crate::scenario::Experiment;
use crate::simulate;

/// Results of a whole experiment, in the experiment's order.
#[derive(Debug, Clone)]
pub struct ExperimentResult {
    /// One per sweep value (one without a sweep).
    pub points: Vec<PointResult>,
    /// Events processed over all jobs.
    pub events: u64,
    /// Logical requests over all jobs.
    pub requests: u64,
}

/// Every variant at one sweep value.
#[derive(Debug, Clone)]
pub struct PointResult {
    /// The swept value, if any.
    pub value: Option<Value>,
    /// The variants, in file order.
    pub variants: Vec<VariantResult>,
}

/// One variant aggregated over its replications.
#[derive(Debug, Clone)]
pub struct VariantResult {
    /// The variant's name.
    pub name: String,
    /// Means over replications, in the shape of summary.json's `metrics`.
    pub metrics: Value,
    /// 95 % half-widths, same shape.
    pub ci95: Value,
    /// Each replication's own metrics (same shape), for distributions across replications.
    pub replications: Vec<Value>,
    /// Mean time series over replications.
    pub series: Vec<[f64; COLUMNS]>,
    /// Mean logical requests per latency bin over replications.
    pub latency_bins: Vec<f64>,
    /// Width of a time-series bucket.
    pub bucket: SimDuration,
    /// Replications that stopped early, with the reason.
    pub truncations: Vec<(u32, Truncation)>,
    /// For a variant whose replications split between recovering and staying collapsed, a
    /// typical run of each kind (see [`examples`]); empty otherwise, and at most two, so
    /// memory does not grow with replications.
    pub examples: Vec<ExampleRun>,
}

/// One replication's own time series, kept to show what a single run looked like where the
/// mean over replications describes none of them.
#[derive(Debug, Clone, PartialEq)]
pub struct ExampleRun {
    /// The replication's index (0-based, as in the seed derivation).
    pub replication: u32,
    /// What it stands for, e.g. "typical collapsed (replication 17)".
    pub label: String,
    /// Width of a time-series bucket.
    pub bucket: SimDuration,
    /// Its rows, in the units of [`VariantResult::series`].
    pub series: Vec<[f64; COLUMNS]>,
}

/// The typical recovered and the typical collapsed replication of a variant whose
/// replications split (some recovered after the triggers, some did not): within each group,
/// the replication with the median total goodput (the lower median for an even count).
/// Empty when the replications did not split or had no recovery analysis.
pub fn examples(runs: &[(&RunResult, Option<Recovery>)]) -> Vec<ExampleRun> {
    let goodput = |r: &RunResult| -> u64 {
        r.series
            .rows()
            .iter()
            .map(|row| u64::from(row[crate::metrics::Column::Succeeded as usize]))
            .sum()
    };
    let group = |recovered: bool| -> Vec<usize> {
        let mut members: Vec<usize> = runs
            .iter()
            .enumerate()
            .filter(|(_, (_, rec))| rec.is_some_and(|r| r.recovered_at.is_some() == recovered))
            .map(|(i, _)| i)
            .collect();
        // Ties keep replication order, so the choice is deterministic.
        members.sort_by_key(|&i| goodput(runs[i].0));
        members
    };
    let (up, down) = (group(true), group(false));
    if up.is_empty() || down.is_empty() {
        return Vec::new();
    }
    [(up, "recovered"), (down, "collapsed")]
        .into_iter()
        .map(|(members, kind)| {
            let i = members[(members.len() - 1) / 2];
            let (bucket, series) = aggregate_series(&[&runs[i].0.series]);
            ExampleRun {
                replication: i as u32,
                label: format!("typical {kind} (replication {i})"),
                bucket,
                series,
            }
        })
        .collect()
}

/// Runs `experiment` on `jobs` threads (0: all cores). `on_job_done` is called after every
/// replication, from any thread.
pub fn run(
    experiment: &Experiment,
    jobs: usize,
    on_job_done: &(dyn Fn() + Sync),
) -> ExperimentResult {
    let reps = experiment.replications;
    // One group per (point, variant): its replications run as separate jobs, then the group
    // is aggregated, also in parallel. Gathering keeps job order, so threads change nothing.
    let groups: Vec<(usize, usize)> = experiment
        .points
        .iter()
        .enumerate()
        .flat_map(|(p, point)| (0..point.variants.len()).map(move |v| (p, v)))
        .collect();
    let replicate = |&(p, v, r): &(usize, usize, u32)| {
        let scenario = &experiment.points[p].variants[v].scenario;
        let result = simulate::run(scenario, experiment.seed, u64::from(r));
        on_job_done();
        let metrics = result.metrics_json();
        let recovery = recovery::analyse(&result.series, &scenario.triggers(), scenario.duration);
        (metrics, result, recovery)
    };
    let summarise = |&(p, v): &(usize, usize), runs: &[(Value, RunResult, Option<Recovery>)]| {
        let replications: Vec<Value> = runs.iter().map(|(m, ..)| m.clone()).collect();
        let (mut metrics, mut ci95) = aggregate(&replications);
        // Recovery is summarised on its own terms (a share of runs and order statistics), never
        // averaged leaf by leaf: a mean of collapsed and healthy runs describes no run.
        let recoveries: Vec<Recovery> = runs.iter().filter_map(|(.., rec)| *rec).collect();
        if let Some((m, h)) = recovery::summarise(&recoveries) {
            metrics["recovery"] = m;
            ci95["recovery"] = h;
        }
        let series: Vec<_> = runs.iter().map(|(_, r, _)| &r.series).collect();
        let (bucket, series) = aggregate_series(&series);
        let n = runs.len().max(1) as f64;
        let latency_bins = (0..crate::metrics::LATENCY_BINS)
            .map(|i| {
                runs.iter()
                    .map(|(_, r, _)| r.latency_bins[i] as f64)
                    .sum::<f64>()
                    / n
            })
            .collect();
        let examples = examples(&runs.iter().map(|(_, r, rec)| (r, *rec)).collect::<Vec<_>>());
        let variant = VariantResult {
            examples,
            latency_bins,
            name: experiment.points[p].variants[v].name.clone(),
            metrics,
            ci95,
            replications,
            series,
            bucket,
            truncations: runs
                .iter()
                .enumerate()
                .filter_map(|(i, (_, r, _))| r.truncated.clone().map(|t| (i as u32, t)))
                .collect(),
        };
        let events: u64 = runs.iter().map(|(_, r, _)| r.counters.events).sum();
        let requests: u64 = runs.iter().map(|(_, r, _)| r.counters.requests).sum();
        (variant, events, requests)
    };
    let tasks: Vec<(usize, usize, u32)> = groups
        .iter()
        .flat_map(|&(p, v)| (0..reps).map(move |r| (p, v, r)))
        .collect();
    let summaries: Vec<(VariantResult, u64, u64)> =
        match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
            Ok(pool) => pool.install(|| {
                let runs: Vec<_> = tasks.par_iter().map(replicate).collect();
                groups
                    .par_iter()
                    .zip(runs.par_chunks(reps as usize))
                    .map(|(g, chunk)| summarise(g, chunk))
                    .collect()
            }),
            Err(_) => {
                let runs: Vec<_> = tasks.iter().map(replicate).collect();
                groups
                    .iter()
                    .zip(runs.chunks(reps as usize))
                    .map(|(g, chunk)| summarise(g, chunk))
                    .collect()
            }
        };
    let events = summaries.iter().map(|s| s.1).sum();
    let requests = summaries.iter().map(|s| s.2).sum();
    let mut variants = summaries.into_iter().map(|s| s.0);
    let points = experiment
        .points
        .iter()
        .map(|point| PointResult {
            value: point.value.clone(),
            variants: variants.by_ref().take(point.variants.len()).collect(),
        })
        .collect();
    ExperimentResult {
        points,
        events,
        requests,
    }
}
