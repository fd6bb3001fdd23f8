//! Runs an [`Experiment`]: every replication of every variant at every sweep value, on a pool
//! of threads, and folds each replication into its variant's summary as soon as the ones
//! before it are folded.
//!
//! Jobs are numbered variant by variant (sweep point, then variant, then replication) and
//! folded strictly in that order, whatever order they finish in; a job is started only while
//! it is fewer than [`WINDOW_PER_THREAD`] jobs per thread ahead of the oldest one not yet
//! folded. So the results are byte-identical for any number of threads, the threads stay busy,
//! and what is held at once is one variant's accumulator ([`Replications`]) plus that window of
//! finished replications, however many replications or sweep values there are. Each job is
//! seeded from (seed, replication) only. No I/O: progress is reported through a callback.
//!
//! When a scenario has triggers, each replication's recovery is analysed where it ran
//! ([`recovery::analyse`]) and the variant gets a `recovery` object that counts the
//! replications that recovered rather than averaging them ([`recovery::summarise`]). A variant
//! whose replications split between recovering and staying collapsed shows a typical run of
//! each kind ([`examples`]); since which ones is known only once all have run, those two are
//! simulated again (a replication is a pure function of its scenario, seed and index) rather
//! than every replication's time series being kept.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex};

use crate::metrics::recovery::{self, Recovery};
use crate::metrics::{
    Column, Digest, ExampleRun, ExperimentResult, LatencyPool, PointResult, Replications,
    TimeSeries, TruncatedReplication, VariantResult, aggregate_series,
};
use crate::scenario::{Experiment, Scenario};
use crate::sim;

/// How far ahead of the oldest replication not yet folded the threads may run, per thread:
/// the finished replications waiting to be folded are at most this many per thread.
pub const WINDOW_PER_THREAD: usize = 4;

/// What [`examples`] needs of one replication that had a recovery analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outline {
    /// The replication's index.
    pub replication: u32,
    /// Its total goodput: logical requests that succeeded, over every bucket.
    pub goodput: u64,
    /// Whether it recovered after the triggers.
    pub recovered: bool,
}

impl Outline {
    /// The outline of replication `replication`, or `None` without a recovery analysis.
    pub fn of(replication: u32, series: &TimeSeries, recovery: Option<&Recovery>) -> Option<Self> {
        let recovered = recovery?.recovered_at.is_some();
        let goodput = series
            .rows()
            .iter()
            .map(|row| u64::from(row[Column::Succeeded as usize]))
            .sum();
        Some(Outline {
            replication,
            goodput,
            recovered,
        })
    }
}

/// The typical recovered and the typical collapsed replication of a variant whose
/// replications split (some recovered after the triggers, some did not), as (replication,
/// kind): within each group, the replication with the median total goodput (the lower median
/// for an even count; ties keep replication order). Empty when the replications did not
/// split or had no recovery analysis. `runs` are in replication order.
pub fn examples(runs: &[Outline]) -> Vec<(u32, &'static str)> {
    let group = |recovered: bool| -> Vec<&Outline> {
        let mut members: Vec<&Outline> = runs.iter().filter(|o| o.recovered == recovered).collect();
        // Stable, so ties keep replication order and the choice is deterministic.
        members.sort_by_key(|o| o.goodput);
        members
    };
    let (up, down) = (group(true), group(false));
    if up.is_empty() || down.is_empty() {
        return Vec::new();
    }
    [(up, "recovered"), (down, "collapsed")]
        .into_iter()
        .map(|(members, kind)| (members[(members.len() - 1) / 2].replication, kind))
        .collect()
}

/// A unit of work for a thread.
#[derive(Debug, Clone, Copy)]
enum Job {
    /// Replication `index % reps` of group `index / reps`.
    Replication(u64),
    /// Simulate again a replication chosen as a typical run of its group.
    Example { group: usize, replication: u32 },
}

/// A finished job.
enum Done {
    Replication(u64, Box<Finished>),
    Example {
        group: usize,
        replication: u32,
        series: TimeSeries,
    },
}

/// One replication, digested where it ran: its latency histograms are already merged into
/// its group's pool, by the thread that made them.
struct Finished {
    run: Digest,
    recovery: Option<Recovery>,
}

/// A group whose replications are all folded, waiting for its typical runs.
struct Waiting {
    variant: VariantResult,
    picks: Vec<(u32, &'static str)>,
    runs: Vec<Option<ExampleRun>>,
}

/// Folds finished replications, strictly in job order, into their group's summary.
struct Folder<'a> {
    experiment: &'a Experiment,
    groups: &'a [(usize, usize)],
    /// The latency pools of the groups being run, one set per thread.
    pools: &'a [Pools],
    reps: u32,
    /// Jobs folded so far: the next one to fold.
    folded: u64,
    /// Replications finished ahead of `folded`, waiting for it.
    ahead: BTreeMap<u64, Box<Finished>>,
    /// The group being folded (groups are folded one after the other).
    open: Option<Open>,
    /// Summaries of the groups done, in group order.
    done: Vec<Option<VariantResult>>,
    /// Groups waiting for their typical runs.
    waiting: BTreeMap<usize, Waiting>,
    /// Groups not yet in `done`.
    left: usize,
    events: u64,
    requests: u64,
}

/// The accumulators of the group being folded.
struct Open {
    group: usize,
    fold: Replications,
    recoveries: Vec<Recovery>,
    outlines: Vec<Outline>,
    truncations: Vec<TruncatedReplication>,
}

impl<'a> Folder<'a> {
    fn new(experiment: &'a Experiment, groups: &'a [(usize, usize)], pools: &'a [Pools]) -> Self {
        Folder {
            experiment,
            groups,
            pools,
            reps: experiment.replications,
            folded: 0,
            ahead: BTreeMap::new(),
            open: None,
            done: (0..groups.len()).map(|_| None).collect(),
            waiting: BTreeMap::new(),
            left: groups.len(),
            events: 0,
            requests: 0,
        }
    }

    /// Takes a finished job: folds it, and every replication waiting for it, when its turn
    /// has come. Returns the jobs that calls for (the typical runs of the groups completed).
    fn take(&mut self, done: Done) -> Vec<Job> {
        match done {
            Done::Replication(index, finished) => {
                self.ahead.insert(index, finished);
                let mut asked = Vec::new();
                while let Some(finished) = self.ahead.remove(&self.folded) {
                    asked.extend(self.fold(self.folded, *finished));
                    self.folded += 1;
                }
                asked
            }
            Done::Example {
                group,
                replication,
                series,
            } => {
                self.example(group, replication, &series);
                Vec::new()
            }
        }
    }

    /// Folds job `index`, the one after the last folded. Returns the jobs it calls for (the
    /// typical runs of a group it completed).
    fn fold(&mut self, index: u64, finished: Finished) -> Vec<Job> {
        let reps = u64::from(self.reps);
        let (group, replication) = ((index / reps) as usize, (index % reps) as u32);
        let open = self.open.get_or_insert_with(|| Open {
            group,
            fold: Replications::new(self.reps),
            recoveries: Vec::new(),
            outlines: Vec::new(),
            truncations: Vec::new(),
        });
        debug_assert_eq!(open.group, group, "jobs are folded in order");
        let Finished { run, recovery } = finished;
        open.fold.add(&run);
        open.recoveries.extend(recovery);
        open.outlines
            .extend(Outline::of(replication, &run.series, recovery.as_ref()));
        if let Some(t) = run.truncated {
            open.truncations.push(TruncatedReplication {
                replication,
                reason: t.to_string(),
            });
        }
        self.events += run.counters.events;
        self.requests += run.counters.requests;
        if replication + 1 < self.reps {
            return Vec::new();
        }
        let open = self.open.take().expect("just folded into");
        self.close(open)
    }

    /// Summarises a group whose replications are all folded.
    fn close(&mut self, open: Open) -> Vec<Job> {
        let Open {
            group,
            fold,
            recoveries,
            outlines,
            truncations,
        } = open;
        // Every replication of the group is folded, so every one is in a thread's pool. The
        // counts are integers: which thread merged which replication changes nothing.
        let mut pool = LatencyPool::default();
        for pools in self.pools {
            if let Some(part) = pools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&group)
            {
                pool.absorb(&part);
            }
        }
        let folded = fold.finish(&pool);
        let (mut metrics, mut ci95) = (folded.metrics, folded.ci95);
        // Recovery is summarised on its own terms (a share of runs and order statistics),
        // never averaged leaf by leaf: a mean of collapsed and healthy runs describes no run.
        if let Some((m, h)) = recovery::summarise(&recoveries) {
            metrics.recovery = Some(m);
            ci95.recovery = Some(h);
        }
        let (p, v) = self.groups[group];
        let variant = VariantResult {
            name: self.experiment.points[p].variants[v].name.clone(),
            metrics,
            ci95,
            series: folded.series,
            latency: folded.latency,
            success_latency_bins: folded.success_latency_bins,
            bucket: folded.bucket,
            truncations,
            examples: Vec::new(),
            service_series: folded.service_series,
            replica_series: folded.replica_series,
        };
        let picks = examples(&outlines);
        if picks.is_empty() {
            self.finish(group, variant);
            return Vec::new();
        }
        let jobs = picks
            .iter()
            .map(|&(replication, _)| Job::Example { group, replication })
            .collect();
        self.waiting.insert(
            group,
            Waiting {
                variant,
                runs: vec![None; picks.len()],
                picks,
            },
        );
        jobs
    }

    /// A typical run of a waiting group came back.
    fn example(&mut self, group: usize, replication: u32, series: &TimeSeries) {
        let waiting = self.waiting.get_mut(&group).expect("a group waits for it");
        for (slot, &(r, kind)) in waiting.runs.iter_mut().zip(&waiting.picks) {
            if r == replication && slot.is_none() {
                let (bucket, series) = aggregate_series(&[series]);
                *slot = Some(ExampleRun {
                    replication,
                    label: format!("typical {kind} (replication {replication})"),
                    bucket,
                    series,
                });
            }
        }
        if waiting.runs.iter().all(Option::is_some) {
            let mut waiting = self.waiting.remove(&group).expect("present");
            waiting.variant.examples = waiting.runs.into_iter().flatten().collect();
            self.finish(group, waiting.variant);
        }
    }

    fn finish(&mut self, group: usize, variant: VariantResult) {
        self.done[group] = Some(variant);
        self.left -= 1;
    }

    fn is_complete(&self) -> bool {
        self.left == 0
    }

    fn into_result(self) -> ExperimentResult {
        let mut variants = self
            .done
            .into_iter()
            .map(|v| v.expect("every group is summarised"));
        let points = self
            .experiment
            .points
            .iter()
            .map(|point| PointResult {
                value: point.value.clone(),
                variants: variants.by_ref().take(point.variants.len()).collect(),
            })
            .collect();
        ExperimentResult {
            points,
            events: self.events,
            requests: self.requests,
        }
    }
}

/// The (point, variant) groups of `experiment`, in job order: point by point, then variant by
/// variant. Job `index` is replication `index % replications` of group
/// `index / replications`.
pub fn groups(experiment: &Experiment) -> Vec<(usize, usize)> {
    experiment
        .points
        .iter()
        .enumerate()
        .flat_map(|(p, point)| (0..point.variants.len()).map(move |v| (p, v)))
        .collect()
}

/// The threads `jobs` asks for: itself, or all cores for 0.
pub fn thread_count(jobs: usize) -> usize {
    match jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Runs `experiment` on `jobs` threads (0: all cores). `on_job_done` is called after every
/// replication, from any thread.
pub fn run(
    experiment: &Experiment,
    jobs: usize,
    on_job_done: &(dyn Fn() + Sync),
) -> ExperimentResult {
    let groups = groups(experiment);
    let total = groups.len() as u64 * u64::from(experiment.replications);
    let threads = thread_count(jobs);
    // The latency histograms of the groups being run, merged by the threads that ran them,
    // each into its own.
    let pools: Vec<Pools> = (0..threads).map(|_| Pools::default()).collect();
    let scenario = |group: usize| -> &Scenario {
        let (p, v) = groups[group];
        &experiment.points[p].variants[v].scenario
    };
    let work = |job: Job, thread: usize| -> Done {
        match job {
            Job::Replication(index) => {
                let reps = u64::from(experiment.replications);
                let (group, replication) = ((index / reps) as usize, index % reps);
                let scenario = scenario(group);
                let result = sim::run(scenario, experiment.seed, replication);
                on_job_done();
                let recovery =
                    recovery::analyse(&result.series, &scenario.triggers(), scenario.duration);
                pools[thread]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(group)
                    .or_default()
                    .add(&result);
                Done::Replication(
                    index,
                    Box::new(Finished {
                        run: result.digest(),
                        recovery,
                    }),
                )
            }
            Job::Example { group, replication } => {
                let result = sim::run(scenario(group), experiment.seed, u64::from(replication));
                Done::Example {
                    group,
                    replication,
                    series: result.series,
                }
            }
        }
    };
    let mut folder = Folder::new(experiment, &groups, &pools);
    if threads <= 1 || total <= 1 {
        for index in 0..total {
            let mut done = VecDeque::from([work(Job::Replication(index), 0)]);
            while let Some(d) = done.pop_front() {
                done.extend(folder.take(d).into_iter().map(|job| work(job, 0)));
            }
        }
    } else {
        folder = run_parallel(folder, total, threads, &work);
    }
    debug_assert!(folder.is_complete());
    folder.into_result()
}

/// One thread's latency pools, by group.
type Pools = Mutex<BTreeMap<usize, LatencyPool>>;

/// What the threads share: the folder, the next replication to start, the typical runs asked
/// for, and whether to stop.
struct Shared<'a> {
    folder: Folder<'a>,
    next: u64,
    examples: VecDeque<Job>,
    /// Threads waiting for work.
    idle: usize,
    /// A thread panicked: the others stop too, and the panic is raised again.
    failed: bool,
}

/// Marks the shared state failed if the thread owning it panics, so that no thread waits for
/// work that will never come.
struct PanicGuard<'s, 'a>(&'s Mutex<Shared<'a>>, &'s Condvar);

impl Drop for PanicGuard<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).failed = true;
            self.1.notify_all();
        }
    }
}

/// Runs the jobs on `threads` threads (this one and `threads - 1` more). A thread that
/// finishes a job folds it, and the ones finished ahead of it that follow, under the lock
/// that hands out jobs, as it takes its next job; a replication starts only while it is less
/// than a window ahead of the oldest one not yet folded, so at most a window of finished
/// replications waits.
fn run_parallel<'a>(
    folder: Folder<'a>,
    total: u64,
    threads: usize,
    work: &(dyn Fn(Job, usize) -> Done + Sync),
) -> Folder<'a> {
    let window = (WINDOW_PER_THREAD * threads) as u64;
    let shared = Mutex::new(Shared {
        folder,
        next: 0,
        examples: VecDeque::new(),
        idle: 0,
        failed: false,
    });
    let ready = Condvar::new();
    let worker = |thread: usize| {
        let _guard = PanicGuard(&shared, &ready);
        let mut finished: Option<Done> = None;
        loop {
            let job = {
                let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(done) = finished.take() {
                    let asked = s.folder.take(done);
                    s.examples.extend(asked);
                    if s.idle > 0 {
                        // The window moved, typical runs are asked for, or all is done.
                        ready.notify_all();
                    }
                }
                loop {
                    if s.failed || s.folder.is_complete() {
                        return;
                    }
                    if let Some(job) = s.examples.pop_front() {
                        break job;
                    }
                    if s.next < total && s.next < s.folder.folded + window {
                        s.next += 1;
                        break Job::Replication(s.next - 1);
                    }
                    s.idle += 1;
                    s = ready.wait(s).unwrap_or_else(|e| e.into_inner());
                    s.idle -= 1;
                }
            };
            finished = Some(work(job, thread));
        }
    };
    std::thread::scope(|scope| {
        for thread in 1..threads {
            scope.spawn(move || worker(thread));
        }
        worker(0);
    });
    shared
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .folder
}

/// The replications of a range of jobs, run where the rest of the experiment is not (a
/// shard): each replication's [`Digest`] in job order, and each group's latency histograms
/// merged (over the range's replications of that group).
pub struct RangeResult {
    /// The first job of the range.
    pub start: u64,
    /// One per job of the range, in job order.
    pub digests: Vec<Digest>,
    /// The latencies of each group met in the range, by group.
    pub pools: BTreeMap<usize, LatencyPool>,
}

/// Runs jobs `range` of `experiment` (see [`groups`] for their numbering) on `jobs` threads
/// (0: all cores), calling `on_job_done` after each. Each job depends only on its scenario,
/// the seed and its replication index, so its digest is the one [`run`] folds for it.
pub fn run_range(
    experiment: &Experiment,
    range: std::ops::Range<u64>,
    jobs: usize,
    on_job_done: &(dyn Fn() + Sync),
) -> RangeResult {
    let groups = groups(experiment);
    let reps = u64::from(experiment.replications);
    let len = range.end.saturating_sub(range.start) as usize;
    let threads = thread_count(jobs).clamp(1, len.max(1));
    let next = std::sync::atomic::AtomicU64::new(range.start);
    let slots: Mutex<Vec<Option<Digest>>> = Mutex::new((0..len).map(|_| None).collect());
    let pools: Mutex<BTreeMap<usize, LatencyPool>> = Mutex::new(BTreeMap::new());
    let worker = || {
        loop {
            let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if index >= range.end {
                return;
            }
            let (group, replication) = ((index / reps) as usize, index % reps);
            let (p, v) = groups[group];
            let scenario = &experiment.points[p].variants[v].scenario;
            let result = sim::run(scenario, experiment.seed, replication);
            on_job_done();
            pools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(group)
                .or_default()
                .add(&result);
            let digest = result.digest();
            slots.lock().unwrap_or_else(|e| e.into_inner())[(index - range.start) as usize] =
                Some(digest);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(worker);
        }
        worker();
    });
    RangeResult {
        start: range.start,
        digests: slots
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .map(|d| d.expect("every job of the range ran"))
            .collect(),
        pools: pools.into_inner().unwrap_or_else(|e| e.into_inner()),
    }
}

/// What [`refold`] is fed, in job order: a group's latencies (all of them before its last
/// replication), and each replication's digest.
pub enum Refed {
    /// Latencies of some of the replications of a group, merged.
    Pool(usize, Box<LatencyPool>),
    /// The digest of job `index`.
    Replication(u64, Box<Digest>),
}

/// Folds replications that ran elsewhere (in shards) exactly as [`run`] folds its own: the
/// same [`Folder`], fed the same digests in the same job order, so every number comes out
/// bit for bit the same. Recovery is analysed again from each digest's series (a pure
/// function of it), and the typical runs a group calls for are simulated again here, as
/// [`run`] does. Fails when a replication comes out of order or one is missing.
pub fn refold(
    experiment: &Experiment,
    fed: impl Iterator<Item = anyhow::Result<Refed>>,
) -> anyhow::Result<ExperimentResult> {
    let groups = groups(experiment);
    let pools: Vec<Pools> = vec![Pools::default()];
    let scenario = |group: usize| -> &Scenario {
        let (p, v) = groups[group];
        &experiment.points[p].variants[v].scenario
    };
    let mut folder = Folder::new(experiment, &groups, &pools);
    let mut next = 0u64;
    for item in fed {
        match item? {
            Refed::Pool(group, pool) => {
                anyhow::ensure!(group < groups.len(), "no unit {group}");
                pools[0]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(group)
                    .or_default()
                    .absorb(&pool);
            }
            Refed::Replication(index, run) => {
                anyhow::ensure!(
                    index == next,
                    "job {index} came where job {next} was expected"
                );
                next += 1;
                let reps = u64::from(experiment.replications);
                let group = (index / reps) as usize;
                anyhow::ensure!(group < groups.len(), "no unit {group}");
                let s = scenario(group);
                let recovery = recovery::analyse(&run.series, &s.triggers(), s.duration);
                let mut done = VecDeque::from([Done::Replication(
                    index,
                    Box::new(Finished {
                        run: *run,
                        recovery,
                    }),
                )]);
                while let Some(d) = done.pop_front() {
                    for job in folder.take(d) {
                        if let Job::Example { group, replication } = job {
                            let result =
                                sim::run(scenario(group), experiment.seed, u64::from(replication));
                            done.push_back(Done::Example {
                                group,
                                replication,
                                series: result.series,
                            });
                        }
                    }
                }
            }
        }
    }
    anyhow::ensure!(
        folder.is_complete(),
        "only {next} of {} replications were found",
        groups.len() as u64 * u64::from(experiment.replications)
    );
    Ok(folder.into_result())
}
