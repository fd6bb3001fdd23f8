//! The memory a file's run takes, estimated before it starts, against a stated budget
//! (`limits.max_memory_mb`): a file whose estimate exceeds it is refused by `check` and `run`
//! alike, with the estimate, the limit and the setting that changes it.
//!
//! What grows with the file rather than with what is in flight is counted here: the results a
//! run keeps to its end (each variant at each sweep point with its mean time series, one per
//! service of a call graph and one per replica of a pool, and the text of the files they
//! become), and what one replication holds that does not follow its requests in flight (its
//! time series, one per service and per replica, and a
//! retry budget, breaker or adaptive throttle for every distinct client it reaches). What
//! follows requests in flight (calls, attempts, queues, remembered idempotency keys) is bounded
//! by `limits.max_in_flight` instead and is not part of the estimate. The sizes are measured
//! (docs/format.md section 12 gives them), not exact: the estimate errs high.

use crate::metrics::MAX_ROWS;
use crate::model::{Breaker, Budget, Scope, Throttle};
use crate::runner::WINDOW_PER_THREAD;
use crate::scenario::{ClientGroup, Experiment, Problem, Scenario, ScenarioError, Workload};

/// The default memory budget of a run, in MiB (`limits.max_memory_mb`).
pub const DEFAULT_MAX_MEMORY_MB: u64 = 4096;
/// The largest budget a file may state, in MiB: 1 TiB.
pub const MAX_MEMORY_MB: u64 = 1 << 20;
/// Finished replications one thread may hold besides the one it runs, waiting to be folded
/// (their time series only).
pub const WAITING_PER_THREAD: u64 = WINDOW_PER_THREAD as u64;

/// Bytes a run keeps to its end for each row of a mean time series: the row (20 numbers),
/// and its lines in timeseries.csv (or service-timeseries.csv) and a figure's table.
const HELD_ROW_BYTES: u64 = 320;
/// Bytes a run keeps to its end for each variant at each sweep point besides its series: its
/// scenario, means, pooled latency histogram and bins, and their text.
const HELD_GROUP_BYTES: u64 = 32 * 1024;
/// Bytes of one row of a replication's time series (20 counts of 4 bytes).
const RUN_ROW_BYTES: u64 = 80;
/// Bytes a map entry costs beside the state it holds (key, tree node share).
const ENTRY_BYTES: u64 = 48;

/// What a file's run takes, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Kept to the end: every variant at every sweep point.
    pub held: u64,
    /// Of which the mean time series.
    pub held_series: u64,
    /// The time series of one replication (the largest).
    pub series: u64,
    /// Per-client policy state of one replication in progress (the largest).
    pub clients: u64,
    /// Threads that run replications at once.
    pub threads: u64,
}

impl Estimate {
    /// What one thread holds at most: the replication it runs, and the series of
    /// [`WAITING_PER_THREAD`] finished ones.
    pub fn per_thread(&self) -> u64 {
        self.series
            .saturating_mul(1 + WAITING_PER_THREAD)
            .saturating_add(self.clients)
    }

    /// The whole estimate.
    pub fn total(&self) -> u64 {
        self.held
            .saturating_add(self.per_thread().saturating_mul(self.threads))
    }
}

/// The estimate for `experiment` run on `threads` threads.
pub fn estimate(experiment: &Experiment, threads: usize) -> Estimate {
    let mut e = Estimate {
        held: 0,
        held_series: 0,
        series: 0,
        clients: 0,
        threads: 0,
    };
    let mut scenarios = 0u64;
    // A variant whose replications split keeps a typical run of each kind.
    let typical = if experiment.replications > 1 { 2 } else { 0 };
    for sc in experiment.scenarios() {
        scenarios += 1;
        let rows = rows(sc);
        let run_rows = series(sc).saturating_mul(rows);
        let held_series = (run_rows + typical * rows).saturating_mul(HELD_ROW_BYTES);
        e.held_series = e.held_series.saturating_add(held_series);
        e.held = e
            .held
            .saturating_add(held_series)
            .saturating_add(HELD_GROUP_BYTES);
        e.series = e.series.max(run_rows.saturating_mul(RUN_ROW_BYTES));
        e.clients = e.clients.max(clients(sc));
    }
    let replications = scenarios.saturating_mul(u64::from(experiment.replications));
    e.threads = (threads.max(1) as u64).min(replications);
    e
}

/// The time series a replication of `sc` keeps: the run's, one per service of a call
/// graph, and one per replica of each service with more than one.
fn series(sc: &Scenario) -> u64 {
    let replicas: u64 = sc
        .services
        .iter()
        .map(|s| s.server.pool.replicas)
        .filter(|&n| n > 1)
        .map(u64::from)
        .sum();
    1 + replicas
        + if sc.is_graph() {
            sc.services.len() as u64
        } else {
            0
        }
}

/// The rows of one time series: a bucket each over `max_time` (or `duration` and a quarter
/// more, for the drain after it), at most [`MAX_ROWS`], past which buckets merge.
fn rows(sc: &Scenario) -> u64 {
    let duration = sc.duration.as_nanos();
    let span = sc
        .max_time
        .map_or(duration.saturating_add(duration / 4), |t| t.as_nanos());
    (span / sc.bucket.as_nanos().max(1) + 1).min(MAX_ROWS as u64)
}

/// Bytes of per-client policy state on the clients' edges of one replication of `sc`: a
/// budget, breaker or adaptive throttle for every distinct client that starts a request, in
/// every group.
fn clients(sc: &Scenario) -> u64 {
    sc.clients
        .iter()
        .fold(0u64, |sum, g| sum.saturating_add(group_bytes(sc, g)))
}

/// [`clients`] for one group.
fn group_bytes(sc: &Scenario, g: &ClientGroup) -> u64 {
    let p = sc.group_policy(g);
    let per_client = |scope: Scope| scope == Scope::PerClient;
    let mut bytes = 0u64;
    if p.budget.is_some_and(|b| per_client(b.scope)) {
        bytes += std::mem::size_of::<Budget>() as u64 + ENTRY_BYTES;
    }
    if p.breaker.is_some_and(|b| per_client(b.scope)) {
        bytes += std::mem::size_of::<Breaker>() as u64 + ENTRY_BYTES;
    }
    if p.adaptive_throttle.is_some() {
        bytes += std::mem::size_of::<Throttle>() as u64 + ENTRY_BYTES;
    }
    if bytes == 0 {
        return 0;
    }
    reached(sc, g).saturating_mul(bytes)
}

/// The most distinct clients of group `g` one replication of `sc` reaches: every client of a
/// closed workload, and of an open one no more than the requests it starts (the mean count
/// over `duration` at the profile's highest rate, plus ten standard deviations).
fn reached(sc: &Scenario, g: &ClientGroup) -> u64 {
    let count = u64::from(g.count);
    match &g.workload {
        Workload::Closed(_) => count,
        Workload::Open(profile) => {
            let rate = profile
                .steps
                .iter()
                .map(|s| s.rate_per_s)
                .fold(profile.base_rate, f64::max);
            let mean = rate * sc.duration.as_secs_f64();
            let most = mean + 10.0 * mean.sqrt() + 16.0;
            // A float beyond u64 saturates in the cast.
            count.min(most as u64)
        }
    }
}

/// The problem with `experiment` on `threads` threads, if its estimate exceeds its budget:
/// the largest `limits.max_memory_mb` of its scenarios.
pub fn problem(experiment: &Experiment, threads: usize) -> Option<Problem> {
    let limit_mb = experiment
        .scenarios()
        .map(|sc| sc.limits.max_memory_mb)
        .max()?;
    let e = estimate(experiment, threads);
    let limit = limit_mb.saturating_mul(1 << 20);
    if e.total() <= limit {
        return None;
    }
    let mb = |b: u64| b.div_ceil(1 << 20);
    let clients = e.clients.saturating_mul(e.threads);
    let (path, fix) = if clients >= e.total() / 2 {
        (
            "clients.count",
            "fewer clients, a lower rate, or the budget, breaker or throttle shared (\"scope\": \"shared\")",
        )
    } else if e.held_series >= e.total() / 2 || e.held < e.total() / 2 {
        (
            "metrics.bucket",
            "a wider metrics.bucket (fewer rows in every time series), fewer sweep values or variants, or fewer threads (--jobs)",
        )
    } else {
        ("sweep", "sweep fewer values, or split the file")
    };
    Some(Problem::new(
        path,
        format!(
            "the run would take about {} MB, more than limits.max_memory_mb = {limit_mb} (kept to the end: {} MB for {} variant runs, {} MB of them time series; on each of {} threads: {} MB, {} MB of them per-client policy state); use {fix}, or raise limits.max_memory_mb if the machine has the memory",
            mb(e.total()),
            mb(e.held),
            experiment.scenarios().count(),
            mb(e.held_series),
            e.threads,
            mb(e.per_thread()),
            mb(e.clients),
        ),
    ))
}

/// `experiment`, loaded from `file`, if its estimate on `threads` threads is within its
/// budget; otherwise the problem, as `check` and `run` report a scenario's.
pub fn within_budget(
    experiment: Experiment,
    file: &str,
    threads: usize,
) -> Result<Experiment, ScenarioError> {
    match problem(&experiment, threads) {
        None => Ok(experiment),
        Some(p) => Err(ScenarioError::Invalid {
            file: file.to_string(),
            problems: vec![p],
        }),
    }
}
