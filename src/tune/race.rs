//! The search: every candidate at every fault of the suite, replication by replication,
//! under common random numbers (replication r of every candidate draws from the same
//! streams), in rounds. After each round of a race, a candidate is dropped once it breaks a
//! constraint with 95 % confidence, or once another candidate that keeps every constraint
//! with confidence is better on some objective at some fault with confidence and nowhere
//! worse (the paired difference of the replications so far, or equal in every one of them).
//! A grid is one round of every replication.
//!
//! Which jobs run, and what is kept of each, depends on the tune alone: the results are the
//! same on any number of threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::file::{Method, Tune};
use super::measure::{Bound, Measure};
use crate::metrics::{Estimate, LatencyPool, recovery};
use crate::runner::thread_count;
use crate::sim;

/// What replication r of one candidate at one fault gave.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    /// Per measure, per replication: its value (`None` where it does not apply).
    pub samples: Vec<Vec<Option<f64>>>,
    /// The latencies of every replication, merged (kept only when a measure pools them).
    pub pool: LatencyPool,
    /// Replications that hit a limit and stopped early.
    pub truncated: u32,
}

/// Why a candidate left the race.
#[derive(Debug, Clone, PartialEq)]
pub enum Dropped {
    /// It broke constraint `constraint` at fault `fault` with confidence.
    Breaks { constraint: usize, fault: usize },
    /// Candidate `by` was better with confidence.
    Dominated { by: usize },
}

/// A round of the search.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Round {
    /// Replications every candidate alive had after it.
    pub replications: u32,
    /// Candidates that ran in it.
    pub candidates: usize,
    /// Candidates dropped after it.
    pub dropped: usize,
}

/// The search's results: every candidate's cells, how many replications each got and why
/// those that left did.
#[derive(Debug, Clone)]
pub struct Searched {
    /// The measures, in [`Tune::measures`] order.
    pub measures: Vec<Measure>,
    /// Per candidate, per fault.
    pub cells: Vec<Vec<Cell>>,
    /// Per candidate: replications it got at each fault.
    pub replications: Vec<u32>,
    /// Per candidate: why it left, and after how many replications.
    pub dropped: Vec<Option<Dropped>>,
    /// The rounds.
    pub rounds: Vec<Round>,
}

impl Searched {
    /// Replications run in all, over candidates and faults.
    pub fn spent(&self, faults: usize) -> u64 {
        self.replications.iter().map(|&r| u64::from(r)).sum::<u64>() * faults as u64
    }
}

/// Progress of a search, for a progress bar.
pub trait Progress: Sync {
    /// A round starts: `alive` candidates get replications up to `to`; `left` is the most
    /// replications still to run (over candidates and faults).
    fn round(&self, alive: usize, to: u32, left: u64);
    /// One replication finished.
    fn replication(&self);
}

/// The replications after each round: the first round's, doubled each round, up to all.
pub fn schedule(tune: &Tune) -> Vec<u32> {
    let mut out = vec![tune.first_round.min(tune.replications)];
    while let Some(&last) = out.last().filter(|&&r| r < tune.replications) {
        out.push((last * 2).min(tune.replications));
    }
    out
}

/// One candidate's replications of one round at every fault: what a shard of a tune hands
/// the others, and what a state folder keeps.
#[derive(Debug, Clone, Default)]
pub struct Block {
    /// Per fault, per measure, per replication of the round.
    pub values: Vec<Vec<Vec<Option<f64>>>>,
    /// Per fault: the round's latencies, merged in replication order (empty unless a
    /// measure pools them).
    pub pools: Vec<LatencyPool>,
    /// Per fault: replications that hit a limit.
    pub truncated: Vec<u32>,
}

/// Where the blocks of a round come from besides this process: a state folder that keeps
/// them (so an interrupted tune resumes) and that the shards of a tune share. All I/O is the
/// store's; the search itself only asks.
pub trait Store: Sync {
    /// The block of candidate `c` in round `round`, if it is there.
    fn load(&self, round: usize, c: usize) -> anyhow::Result<Option<Block>>;
    /// Takes the block for this process to run: false when another process has it.
    fn claim(&self, round: usize, c: usize) -> anyhow::Result<bool>;
    /// Keeps a block this process ran.
    fn save(&self, round: usize, c: usize, block: &Block) -> anyhow::Result<()>;
    /// Waits until the block another process claimed is there.
    fn wait(&self, round: usize, c: usize) -> anyhow::Result<Block>;
    /// Whether this process runs candidate `c`'s block first (its share), before taking
    /// what is left of the others'.
    fn mine(&self, c: usize) -> bool;
}

/// Runs the search on `jobs` threads (0: all cores), without a store.
pub fn search(tune: &Tune, jobs: usize, progress: &dyn Progress) -> Searched {
    search_with(tune, jobs, progress, None).expect("a search without a store does no I/O")
}

/// Runs the search, taking from `store` the blocks it has and keeping there those run here.
pub fn search_with(
    tune: &Tune,
    jobs: usize,
    progress: &dyn Progress,
    store: Option<&dyn Store>,
) -> anyhow::Result<Searched> {
    let measures = tune.measures();
    let (n, faults) = (tune.candidates.len(), tune.faults.len());
    let empty = Cell {
        samples: vec![Vec::new(); measures.len()],
        ..Cell::default()
    };
    let mut s = Searched {
        measures,
        cells: vec![vec![empty; faults]; n],
        replications: vec![0; n],
        dropped: vec![None; n],
        rounds: Vec::new(),
    };
    let mut from = 0;
    for (round, to) in schedule(tune).into_iter().enumerate() {
        let alive: Vec<usize> = (0..n).filter(|&c| s.dropped[c].is_none()).collect();
        let left = alive.len() as u64 * faults as u64 * u64::from(tune.replications - from);
        progress.round(alive.len(), to, left);
        let blocks = round_blocks(
            tune,
            &s.measures,
            &alive,
            (round, from..to),
            jobs,
            progress,
            store,
        )?;
        for (&c, block) in alive.iter().zip(blocks) {
            fold(&mut s.cells[c], block);
            s.replications[c] = to;
        }
        let dropped = if tune.method == Method::Race && to < tune.replications {
            eliminate(tune, &s, &alive)
        } else {
            Vec::new()
        };
        s.rounds.push(Round {
            replications: to,
            candidates: alive.len(),
            dropped: dropped.len(),
        });
        for (c, why) in dropped {
            s.dropped[c] = Some(why);
        }
        from = to;
    }
    Ok(s)
}

/// Adds a block's replications to a candidate's cells.
fn fold(cells: &mut [Cell], block: Block) {
    let parts = block
        .values
        .into_iter()
        .zip(block.pools)
        .zip(block.truncated);
    for (cell, ((values, pool), truncated)) in cells.iter_mut().zip(parts) {
        for (samples, v) in cell.samples.iter_mut().zip(values) {
            samples.extend(v);
        }
        cell.pool.absorb(&pool);
        cell.truncated += truncated;
    }
}

/// The blocks of round `round` (replications `reps`) of the candidates `alive`, in their
/// order: those the store has, then those run here (this process's share first, then any
/// not yet taken), then those another process runs, waited for.
fn round_blocks(
    tune: &Tune,
    measures: &[Measure],
    alive: &[usize],
    (round, reps): (usize, std::ops::Range<u32>),
    jobs: usize,
    progress: &dyn Progress,
    store: Option<&dyn Store>,
) -> anyhow::Result<Vec<Block>> {
    let mut blocks: Vec<Option<Block>> = Vec::with_capacity(alive.len());
    for &c in alive {
        blocks.push(match store {
            Some(st) => st.load(round, c)?,
            None => None,
        });
    }
    for first in [true, false] {
        let mut todo = Vec::new();
        for (k, &c) in alive.iter().enumerate() {
            let wanted = blocks[k].is_none() && store.is_none_or(|st| st.mine(c) == first);
            if wanted && store.map_or(Ok(true), |st| st.claim(round, c))? {
                todo.push(k);
            }
        }
        let cands: Vec<usize> = todo.iter().map(|&k| alive[k]).collect();
        let ran = run_blocks(tune, measures, &cands, reps.clone(), jobs, progress);
        for (k, block) in todo.into_iter().zip(ran) {
            if let Some(st) = store {
                st.save(round, alive[k], &block)?;
            }
            blocks[k] = Some(block);
        }
    }
    alive
        .iter()
        .zip(blocks)
        .map(|(&c, b)| match (b, store) {
            (Some(b), _) => Ok(b),
            (None, Some(st)) => st.wait(round, c),
            (None, None) => unreachable!("without a store every block runs here"),
        })
        .collect()
}

/// Runs replications `reps` of each candidate of `cands` at every fault, on `jobs` threads.
fn run_blocks(
    tune: &Tune,
    measures: &[Measure],
    cands: &[usize],
    reps: std::ops::Range<u32>,
    jobs: usize,
    progress: &dyn Progress,
) -> Vec<Block> {
    let pooled = measures.iter().any(Measure::pooled);
    let faults = tune.faults.len();
    let per_candidate = faults * reps.len();
    let total = cands.len() * per_candidate;
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Job>>> = Mutex::new(vec![None; total]);
    let work = || {
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= total {
                return;
            }
            let c = cands[k / per_candidate];
            let (f, r) = (
                (k % per_candidate) / reps.len(),
                reps.start + (k % reps.len()) as u32,
            );
            let scenario = &tune.candidates[c].experiment.points[0].variants[f].scenario;
            let job = replication(scenario, tune.seed, r, measures, pooled);
            progress.replication();
            slots.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(job);
        }
    };
    let threads = thread_count(jobs).clamp(1, total.max(1));
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut jobs = slots
        .into_iter()
        .map(|j| j.expect("every job of the round ran"));
    (0..cands.len())
        .map(|_| {
            let mut block = Block {
                values: vec![vec![Vec::new(); measures.len()]; faults],
                pools: vec![LatencyPool::default(); faults],
                truncated: vec![0; faults],
            };
            for f in 0..faults {
                for job in jobs.by_ref().take(reps.len()) {
                    for (samples, v) in block.values[f].iter_mut().zip(job.values) {
                        samples.push(v);
                    }
                    block.pools[f].absorb(&job.pool);
                    block.truncated[f] += u32::from(job.truncated);
                }
            }
            block
        })
        .collect()
}

/// Runs replication `r` of `scenario` and reads every measure from it.
fn replication(
    scenario: &crate::scenario::Scenario,
    seed: u64,
    r: u32,
    measures: &[Measure],
    pooled: bool,
) -> Job {
    let run = sim::run(scenario, seed, u64::from(r));
    let mut pool = LatencyPool::default();
    if pooled {
        pool.add(&run);
    }
    let digest = run.digest();
    let rec = recovery::analyse(&digest.series, &scenario.triggers(), scenario.duration);
    Job {
        values: measures
            .iter()
            .map(|m| m.of_replication(&digest, rec.as_ref()))
            .collect(),
        pool,
        truncated: digest.truncated.is_some(),
    }
}

/// One replication's numbers.
#[derive(Debug, Clone)]
struct Job {
    values: Vec<Option<f64>>,
    pool: LatencyPool,
    truncated: bool,
}

/// The 95 % estimate of a measure's samples, over the replications where it applies.
pub fn estimate(samples: &[Option<f64>]) -> Option<Estimate> {
    let xs: Vec<f64> = samples.iter().flatten().copied().collect();
    (!xs.is_empty()).then(|| Estimate::from_samples(&xs))
}

/// How candidate `b` compares with `a` on measure `m` at fault `f`, paired replication by
/// replication (the common random numbers make the pairs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paired {
    /// `b` is better with 95 % confidence.
    Better,
    /// Equal in every replication, or the measure applies to neither.
    Same,
    /// Neither of the above.
    Unsure,
}

/// Compares candidates `b` and `a` at fault `f` on measure index `m`.
pub fn paired(s: &Searched, b: usize, a: usize, f: usize, m: usize) -> Paired {
    let sign = s.measures[m].sign();
    let (xb, xa) = (&s.cells[b][f].samples[m], &s.cells[a][f].samples[m]);
    let mut d = Vec::with_capacity(xa.len());
    for (vb, va) in xb.iter().zip(xa) {
        match (vb, va) {
            (Some(vb), Some(va)) => d.push(sign * (vb - va)),
            (None, None) => {}
            _ => return Paired::Unsure,
        }
    }
    if d.iter().all(|&x| x == 0.0) {
        return Paired::Same;
    }
    let e = Estimate::from_samples(&d);
    if d.len() >= 2 && e.mean - e.half_width > 0.0 {
        Paired::Better
    } else {
        Paired::Unsure
    }
}

/// Whether candidate `c` keeps constraint `k` at fault `f` with confidence (`Some(true)`),
/// breaks it with confidence (`Some(false)`), or neither is sure yet (`None`). A measure
/// that does not apply keeps it.
pub fn keeps(tune: &Tune, s: &Searched, c: usize, k: usize, f: usize) -> Option<bool> {
    let constraint = &tune.constraints[k];
    let m = s.measures.iter().position(|x| *x == constraint.measure)?;
    let Some(e) = estimate(&s.cells[c][f].samples[m]) else {
        return Some(true);
    };
    let (lo, hi) = (e.mean - e.half_width, e.mean + e.half_width);
    match constraint.bound {
        Bound::AtMost(b) if hi <= b => Some(true),
        Bound::AtMost(b) if lo > b => Some(false),
        Bound::AtLeast(b) if lo >= b => Some(true),
        Bound::AtLeast(b) if hi < b => Some(false),
        _ => None,
    }
}

/// The faults constraint `k` holds at.
pub fn faults_of(tune: &Tune, k: usize) -> Vec<usize> {
    match tune.constraints[k].fault {
        Some(f) => vec![f],
        None => (0..tune.faults.len()).collect(),
    }
}

/// Whether `b` dominates `a` with confidence: better on some objective at some fault, and
/// at every (objective, fault) better or the same.
pub fn dominates(tune: &Tune, s: &Searched, b: usize, a: usize) -> bool {
    let mut better = false;
    for o in &tune.objectives {
        let Some(m) = s.measures.iter().position(|x| *x == o.measure) else {
            continue;
        };
        for f in 0..tune.faults.len() {
            match paired(s, b, a, f, m) {
                Paired::Better => better = true,
                Paired::Same => {}
                Paired::Unsure => return false,
            }
        }
    }
    better
}

/// Per candidate, per (objective, fault): the mean of its replications so far, signed so that
/// higher is better (NaN where the objective does not apply).
fn signed_means(tune: &Tune, s: &Searched) -> Vec<Vec<f64>> {
    let ms: Vec<(usize, f64)> = tune
        .objectives
        .iter()
        .filter_map(|o| {
            Some((
                s.measures.iter().position(|x| *x == o.measure)?,
                o.measure.sign(),
            ))
        })
        .collect();
    s.cells
        .iter()
        .map(|cells| {
            ms.iter()
                .flat_map(|&(m, sign)| {
                    cells.iter().map(move |cell| {
                        estimate(&cell.samples[m]).map_or(f64::NAN, |e| sign * e.mean)
                    })
                })
                .collect()
        })
        .collect()
}

/// Whether signed means `b` are at least `a` everywhere (both NaN where neither applies), up
/// to rounding: a necessary condition of [`dominates`], never a sufficient one.
fn no_worse(b: &[f64], a: &[f64]) -> bool {
    b.iter()
        .zip(a)
        .all(|(x, y)| *x >= y - 1e-9 * y.abs() || (x.is_nan() && y.is_nan()))
}

/// The candidates of `alive` to drop after a round, each with why: every decision is taken
/// against the same standings, so the order candidates are looked at changes nothing.
fn eliminate(tune: &Tune, s: &Searched, alive: &[usize]) -> Vec<(usize, Dropped)> {
    let truncated = |c: usize| s.cells[c].iter().any(|cell| cell.truncated > 0);
    let sure = |c: usize| {
        !truncated(c)
            && (0..tune.constraints.len()).all(|k| {
                faults_of(tune, k)
                    .iter()
                    .all(|&f| keeps(tune, s, c, k, f) == Some(true))
            })
    };
    let sure: Vec<usize> = alive.iter().copied().filter(|&c| sure(c)).collect();
    let means = signed_means(tune, s);
    let mut out = Vec::new();
    for &a in alive {
        let broken = (0..tune.constraints.len()).find_map(|k| {
            faults_of(tune, k)
                .into_iter()
                .find(|&f| keeps(tune, s, a, k, f) == Some(false))
                .map(|f| Dropped::Breaks {
                    constraint: k,
                    fault: f,
                })
        });
        // Dominance with confidence needs means as good at every (objective, fault): that
        // cheap test first, so a large race does not pair every two candidates' samples.
        let why = broken.or_else(|| {
            sure.iter()
                .find(|&&b| b != a && no_worse(&means[b], &means[a]) && dominates(tune, s, b, a))
                .map(|&b| Dropped::Dominated { by: b })
        });
        if let Some(why) = why {
            out.push((a, why));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_means_no_worse_is_a_necessary_test_only() {
        assert!(no_worse(&[1.0, 2.0], &[1.0, 1.5]));
        assert!(!no_worse(&[1.0, 1.0], &[1.0, 1.5]));
        assert!(no_worse(&[f64::NAN, 2.0], &[f64::NAN, 2.0]));
        assert!(!no_worse(&[f64::NAN, 2.0], &[1.0, 2.0]));
    }

    #[test]
    fn an_estimate_skips_replications_where_a_measure_does_not_apply() {
        assert_eq!(estimate(&[None, None]), None);
        let e = estimate(&[Some(1.0), None, Some(3.0)]).unwrap();
        assert_eq!(e.mean, 2.0);
    }
}
