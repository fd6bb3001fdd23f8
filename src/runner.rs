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
use crate::metrics::{
    LATENCY_BINS, LatencyHistogram, Metrics, RunResult, Truncation, aggregate, aggregate_series,
    pool_latency, series::COLUMNS,
};
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
    /// Means over replications (latency pooled over them), summary.json's `metrics`.
    pub metrics: Metrics,
    /// 95 % half-widths, same shape.
    pub ci95: Metrics,
    /// Each replication's own metrics, for distributions across replications.
    pub replications: Vec<Metrics>,
    /// Mean time series over replications.
    pub series: Vec<[f64; COLUMNS]>,
    /// Mean successful logical requests per latency bin over replications.
    pub success_latency_bins: Vec<f64>,
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

impl VariantResult {
    /// Whether any replication stopped early: its numbers cover only what finished, so it
    /// takes part in no comparison.
    pub fn is_truncated(&self) -> bool {
        self.metrics.truncated > 0.0
    }
}

/// Runs `experiment` on `jobs` threads (0: all cores). `on_job_done` is called after every
/// replication, from any thread.
///
/// Each (point, variant) group runs its replications in parallel and is summarised as soon as
/// they are done, so only the groups being worked on hold per-replication results.
pub fn run(
    experiment: &Experiment,
    jobs: usize,
    on_job_done: &(dyn Fn() + Sync),
) -> ExperimentResult {
    let reps = experiment.replications;
    let groups: Vec<(usize, usize)> = experiment
        .points
        .iter()
        .enumerate()
        .flat_map(|(p, point)| (0..point.variants.len()).map(move |v| (p, v)))
        .collect();
    let replicate = |p: usize, v: usize, r: u32| {
        let scenario = &experiment.points[p].variants[v].scenario;
        let result = simulate::run(scenario, experiment.seed, u64::from(r));
        on_job_done();
        let recovery = recovery::analyse(&result.series, &scenario.triggers(), scenario.duration);
        (result, recovery)
    };
    let group = |&(p, v): &(usize, usize), parallel: bool| {
        let runs: Vec<(RunResult, Option<Recovery>)> = if parallel {
            (0..reps)
                .into_par_iter()
                .map(|r| replicate(p, v, r))
                .collect()
        } else {
            (0..reps).map(|r| replicate(p, v, r)).collect()
        };
        summarise(experiment.points[p].variants[v].name.clone(), &runs)
    };
    let summaries: Vec<(VariantResult, u64, u64)> =
        match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
            Ok(pool) => pool.install(|| groups.par_iter().map(|g| group(g, true)).collect()),
            Err(_) => groups.iter().map(|g| group(g, false)).collect(),
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

/// One variant's replications, in replication order, into its result; with the events and
/// requests they simulated.
fn summarise(name: String, runs: &[(RunResult, Option<Recovery>)]) -> (VariantResult, u64, u64) {
    let replications: Vec<Metrics> = runs.iter().map(|(r, _)| r.metrics()).collect();
    let (mut metrics, mut ci95) = aggregate(&replications);
    // Latency is pooled: every replication's requests in one distribution.
    let mut success = LatencyHistogram::default();
    let mut failure = LatencyHistogram::default();
    for (r, _) in runs {
        success.merge(&r.success_latency);
        failure.merge(&r.failure_latency);
    }
    let mut all = success.clone();
    all.merge(&failure);
    let counts = |r: &RunResult| {
        (
            r.ended(),
            r.success_latency.count(),
            r.failure_latency.count(),
        )
    };
    (metrics.latency_ms, ci95.latency_ms) = pool_latency(
        &all,
        replications
            .iter()
            .zip(runs)
            .map(|(m, (r, _))| (&m.latency_ms, counts(r).0)),
    );
    (metrics.success_latency_ms, ci95.success_latency_ms) = pool_latency(
        &success,
        replications
            .iter()
            .zip(runs)
            .map(|(m, (r, _))| (&m.success_latency_ms, counts(r).1)),
    );
    (metrics.failure_latency_ms, ci95.failure_latency_ms) = pool_latency(
        &failure,
        replications
            .iter()
            .zip(runs)
            .map(|(m, (r, _))| (&m.failure_latency_ms, counts(r).2)),
    );
    // Recovery is summarised on its own terms (a share of runs and order statistics), never
    // averaged leaf by leaf: a mean of collapsed and healthy runs describes no run.
    let recoveries: Vec<Recovery> = runs.iter().filter_map(|(_, rec)| *rec).collect();
    if let Some((m, h)) = recovery::summarise(&recoveries) {
        metrics.recovery = Some(m);
        ci95.recovery = Some(h);
    }
    let series: Vec<_> = runs.iter().map(|(r, _)| &r.series).collect();
    let (bucket, series) = aggregate_series(&series);
    let n = runs.len().max(1) as f64;
    let mean_bins =
        |h: &LatencyHistogram| -> Vec<f64> { h.bins().into_iter().map(|c| c as f64 / n).collect() };
    debug_assert_eq!(all.bins().len(), LATENCY_BINS);
    let examples = examples(&runs.iter().map(|(r, rec)| (r, *rec)).collect::<Vec<_>>());
    let variant = VariantResult {
        examples,
        success_latency_bins: mean_bins(&success),
        name,
        metrics,
        ci95,
        replications,
        series,
        bucket,
        truncations: runs
            .iter()
            .enumerate()
            .filter_map(|(i, (r, _))| r.truncated.clone().map(|t| (i as u32, t)))
            .collect(),
    };
    let events: u64 = runs.iter().map(|(r, _)| r.counters.events).sum();
    let requests: u64 = runs.iter().map(|(r, _)| r.counters.requests).sum();
    (variant, events, requests)
}
