//! Recovery after a trigger: did goodput come back once the load spike or fault was over, and
//! when? A system with aggressive retries may stay collapsed long after its trigger ended (a
//! metastable failure), so this is judged per replication and never averaged into a run that
//! did not happen.
//!
//! The rule (docs/reference-results.md, metastable failures): a replication has recovered at time t >= the end of the last
//! trigger when goodput over [t, t + 5 s) is at least 90 % of its level before the first
//! trigger, and its mean over [t, duration) is too. Goodput may overshoot while a backlog
//! drains. Everything is measured on the replication's own time buckets (whole buckets only):
//!
//! - **Baseline**: the goodput per second over the buckets that end at or before the first
//!   trigger's start, skipping a warm-up of the first 10 % of them (rounded up, at least one
//!   bucket) while the system fills. With a single such bucket it is used as is; with none there
//!   is no baseline and no analysis.
//! - **Candidates** t are bucket boundaries, from the first one at or after the end of the last
//!   trigger. Only buckets that end at or before `duration` count (new requests stop there; the
//!   drain after it is not goodput the clients asked for at their usual rate), so the 5 s window
//!   is cut at `duration`, and a trigger that lasts until `duration` leaves nothing to recover
//!   in.
//! - **Episode**: from the bucket holding the first trigger's start up to the recovery (or to
//!   `duration` when there was none). Its peak amplification is the largest attempts / logical
//!   requests started over any 5 s window of whole buckets inside it (single buckets are too
//!   noisy; an episode shorter than 5 s is one window), so a breaker or budget that refuses
//!   attempts is not charged for them; its wasted fraction is wasted / served over all of it.
//! - **Dip**: over every 5 s window of whole buckets from the first trigger's start to
//!   `duration`, the lowest goodput relative to the baseline (`dip_fraction`; 1 means no dip),
//!   and the time during which the window starting there was under 90 % of it (`below_90_s`,
//!   in whole buckets). A replication can count as recovered at once after its trigger and
//!   still show a dip: the recovery rule looks forward from the trigger's end, the dip says
//!   what the clients saw on the way.
//!
//! The comparisons are made on integer counts, so a goodput of exactly 90 % counts as recovered
//! on every machine.
//!
//! Latency comes back on its own terms, judged beside goodput on the same buckets: the **p99
//! before** is the p99 of the answered requests (successful, or degraded by a fallback) that
//! ended in the baseline's buckets, pooled; p99 is **back** at the first bucket boundary t at
//! or after the end of the last trigger whose bucket has answers, where the p99 of the answers
//! over [t, t + 5 s) is at most 10 % above it, and the p99 of those over [t, duration) is
//! too: a bucket without an answer is not back. Without an answer before the trigger there is nothing to come back to
//! (no p99 judgement); a replication whose p99 is never back is "not back by the end of the
//! run". Each p99 is read from the buckets' latency bins (20 a decade, [`LatencyBins`]) as its
//! bin's upper edge, so at this 12 % resolution "within 10 %" means in the bin of the level
//! before the trigger or a lower one. Pure functions, no I/O.

use super::RecoveryMetrics;
use super::aggregate::Estimate;
use super::series::{Column, LatencyBins, Row, TimeSeries};
use super::{LATENCY_BINS, latency_bin_upper_ms};
use crate::engine::{SimDuration, SimTime};
use crate::scenario::Trigger;

/// Length of the window over which goodput must be back, and of the windows the peak
/// amplification is measured on.
pub const RECOVERY_WINDOW: SimDuration = SimDuration::from_secs(5);

/// Goodput must be back to this share of the baseline, as the ratio
/// `RECOVERY_LEVEL.0 / RECOVERY_LEVEL.1` (90 %).
const RECOVERY_LEVEL: (u128, u128) = (9, 10);

/// The share of the span before the first trigger skipped as warm-up, as a ratio (10 %).
const WARM_UP: (usize, usize) = (1, 10);

/// p99 is back when at most this factor of its level before the trigger (10 % above it).
const P99_BACK: f64 = 1.1;

/// The 0.975 quantile of the standard normal distribution, for Wilson intervals.
const Z_975: f64 = 1.959_963_984_540_054;

/// How one replication came through its triggers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recovery {
    /// Goodput per second before the first trigger (after the warm-up).
    pub baseline_per_s: f64,
    /// The end of the last trigger.
    pub triggers_end: SimTime,
    /// When goodput was back for good (a bucket boundary at or after `triggers_end`), or
    /// `None`: metastable, it did not recover by the end of the run.
    pub recovered_at: Option<SimTime>,
    /// Largest attempts / first attempts over a 5 s window of the episode (0 if no window
    /// had a first attempt).
    pub peak_amplification: f64,
    /// Wasted / served over the episode (0 if nothing was served).
    pub wasted_fraction: f64,
    /// Lowest 5 s goodput from the first trigger's start to `duration`, over the baseline.
    pub dip_fraction: f64,
    /// Time from the first trigger's start to `duration` during which the 5 s goodput ahead
    /// was under 90 % of the baseline.
    pub below_90: SimDuration,
    /// The p99 of the answers over the baseline's buckets, in milliseconds; `None` without
    /// an answer there (then p99 is not judged).
    pub p99_before_ms: Option<f64>,
    /// When p99 was back within 10 % of it for good (a bucket boundary at or after
    /// `triggers_end`), or `None`: not back by the end of the run, or not judged.
    pub p99_back_at: Option<SimTime>,
}

impl Recovery {
    /// How long after the last trigger ended goodput was back, if it came back.
    pub fn recovery_time(&self) -> Option<SimDuration> {
        self.recovered_at
            .map(|t| t.saturating_since(self.triggers_end))
    }

    /// How long after the last trigger ended p99 was back within 10 % of its level before
    /// the trigger, if it came back.
    pub fn p99_back_time(&self) -> Option<SimDuration> {
        self.p99_back_at
            .map(|t| t.saturating_since(self.triggers_end))
    }
}

/// Analyses one replication's time series: goodput from its rows, p99 from its latencies.
/// `None` without a trigger, or when no whole bucket ends before the first trigger (no
/// baseline to recover to).
pub fn analyse(
    series: &TimeSeries,
    triggers: &[Trigger],
    duration: SimDuration,
) -> Option<Recovery> {
    let mut recovery = analyse_rows(series.rows(), series.bucket(), triggers, duration)?;
    let span = Span::of(series.bucket(), triggers, duration)?;
    (recovery.p99_before_ms, recovery.p99_back_at) = p99_back(&series.latency(), &span);
    Some(recovery)
}

/// The whole buckets a recovery is judged on, as indices of buckets `width` ns wide.
struct Span {
    width: u64,
    /// The baseline: buckets `skip..pre`, which end at or before the first trigger's start.
    skip: usize,
    pre: usize,
    /// The first candidate: the first bucket that starts at or after the last trigger's end.
    after: usize,
    /// The buckets that end at or before `duration`: `..end`.
    end: usize,
    /// Buckets in [`RECOVERY_WINDOW`] (at least one).
    window: usize,
}

impl Span {
    /// `None` without a trigger, with one that lasts until `duration`, or with no whole
    /// bucket before the first.
    fn of(bucket: SimDuration, triggers: &[Trigger], duration: SimDuration) -> Option<Span> {
        let first = triggers.iter().map(|t| t.from).min()?;
        let last = triggers.iter().map(|t| t.to).max()?;
        if last.as_nanos() >= duration.as_nanos() {
            // The trigger lasts until new requests stop: there is no "after" to judge.
            return None;
        }
        let width = bucket.as_nanos().max(1);
        let pre = (first.as_nanos() / width) as usize;
        if pre == 0 {
            return None;
        }
        let skip = if pre == 1 {
            0
        } else {
            (pre * WARM_UP.0).div_ceil(WARM_UP.1).max(1)
        };
        Some(Span {
            width,
            skip,
            pre,
            after: last.as_nanos().div_ceil(width) as usize,
            end: (duration.as_nanos() / width) as usize,
            window: RECOVERY_WINDOW.as_nanos().div_ceil(width).max(1) as usize,
        })
    }
}

/// The p99 before the trigger, and when p99 was back within 10 % of it for good (module
/// docs), from a replication's answers per bucket (`latency`, by rising bucket).
fn p99_back(latency: &[(usize, LatencyBins)], span: &Span) -> (Option<f64>, Option<SimTime>) {
    let mut at: Vec<Option<&LatencyBins>> = vec![None; span.end.max(span.pre)];
    for (bucket, bins) in latency {
        if let Some(slot) = at.get_mut(*bucket) {
            *slot = Some(bins);
        }
    }
    let mut before = Pool::default();
    for bins in at[span.skip..span.pre].iter().flatten() {
        before.add(bins, 1);
    }
    let Some(level) = before.p99_ms() else {
        return (None, None);
    };
    let back = |pool: &Pool| pool.p99_ms().is_some_and(|p| p <= level * P99_BACK);
    // From the end backwards: whether p99 over [k, end) is back.
    let mut rest = Pool::default();
    let mut rest_back = vec![false; span.end.saturating_sub(span.after)];
    for k in (span.after..span.end).rev() {
        if let Some(bins) = at[k] {
            rest.add(bins, 1);
        }
        rest_back[k - span.after] = back(&rest);
    }
    // Forwards, a window of 5 s (cut at `end`) sliding over the candidates.
    let mut window = Pool::default();
    let mut filled = span.after;
    for k in span.after..span.end {
        while filled < (k + span.window).min(span.end) {
            if let Some(bins) = at[filled] {
                window.add(bins, 1);
            }
            filled += 1;
        }
        if at[k].is_some() && rest_back[k - span.after] && back(&window) {
            return (Some(level), Some(SimTime(k as u64 * span.width)));
        }
        if let Some(bins) = at[k] {
            window.add(bins, -1);
        }
    }
    (Some(level), None)
}

/// Answers per latency bin over a stretch of buckets, to read its p99.
struct Pool {
    counts: [i64; LATENCY_BINS],
    n: i64,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            counts: [0; LATENCY_BINS],
            n: 0,
        }
    }
}

impl Pool {
    /// Adds (`sign` 1) or takes away (`sign` -1) a bucket's answers.
    fn add(&mut self, bins: &LatencyBins, sign: i64) {
        for (bin, count) in bins.bins() {
            self.counts[bin] += sign * count as i64;
            self.n += sign * count as i64;
        }
    }

    /// The p99 by the rule of [`LatencyBins::quantile_ms`]; `None` without an answer.
    fn p99_ms(&self) -> Option<f64> {
        let rank = ((0.99 * self.n as f64).ceil() as i64).max(1);
        let mut seen = 0;
        self.counts.iter().enumerate().find_map(|(bin, c)| {
            seen += c;
            (seen >= rank).then(|| latency_bin_upper_ms(bin))
        })
    }
}

/// [`analyse`] on bare rows of buckets of width `bucket` (> 0), starting at time zero.
pub fn analyse_rows(
    rows: &[Row],
    bucket: SimDuration,
    triggers: &[Trigger],
    duration: SimDuration,
) -> Option<Recovery> {
    let triggers_end = triggers.iter().map(|t| t.to).max()?;
    let Span {
        width,
        skip,
        pre,
        after,
        end,
        window,
    } = Span::of(bucket, triggers, duration)?;
    let width_s = width as f64 / 1e9;
    let episode_start = pre;
    let len = rows.len().max(end).max(episode_start + 1);
    let sums = Sums::new(rows, len);

    let base_count = u128::from(sums.sum(Column::Succeeded, skip, pre));
    let base_buckets = (pre - skip) as u128;
    let baseline_per_s = base_count as f64 / (base_buckets as f64 * width_s);
    // rate(a..b) >= 90 % of the baseline, on counts: n / buckets >= 0.9 * base / base_buckets.
    let back = |a: usize, b: usize| {
        let n = u128::from(sums.sum(Column::Succeeded, a, b));
        RECOVERY_LEVEL.1 * n * base_buckets >= RECOVERY_LEVEL.0 * base_count * (b - a) as u128
    };
    let recovered = (after..end).find(|&k| back(k, (k + window).min(end)) && back(k, end));

    let episode_end = recovered.unwrap_or(end).max(episode_start + 1);
    let ratio = |num: Column, den: Column, a: usize, b: usize| {
        let d = sums.sum(den, a, b);
        (d > 0).then(|| sums.sum(num, a, b) as f64 / d as f64)
    };
    let peak_amplification = if episode_end - episode_start <= window {
        ratio(
            Column::Attempts,
            Column::Started,
            episode_start,
            episode_end,
        )
        .unwrap_or(0.0)
    } else {
        (episode_start..=episode_end - window)
            .filter_map(|a| ratio(Column::Attempts, Column::Started, a, a + window))
            .fold(0.0, f64::max)
    };
    // The dip: 5 s windows (shorter only where `duration` cuts them) from the trigger's start.
    let starts = episode_start..end.max(episode_start + 1);
    let window_at = |a: usize| (a, (a + window).min(end).max(a + 1));
    let dip_fraction = if base_count == 0 {
        1.0
    } else {
        starts
            .clone()
            .map(window_at)
            .map(|(a, b)| {
                let n = sums.sum(Column::Succeeded, a, b) as f64;
                n * base_buckets as f64 / (base_count as f64 * (b - a) as f64)
            })
            .fold(f64::INFINITY, f64::min)
            .min(1.0)
    };
    let below = starts.map(window_at).filter(|&(a, b)| !back(a, b)).count() as u64;
    let below_90 = SimDuration::from_nanos(below * width);
    let wasted_fraction =
        ratio(Column::Wasted, Column::Served, episode_start, episode_end).unwrap_or(0.0);
    Some(Recovery {
        baseline_per_s,
        triggers_end,
        recovered_at: recovered.map(|k| SimTime(k as u64 * width)),
        peak_amplification,
        wasted_fraction,
        dip_fraction,
        below_90,
        p99_before_ms: None,
        p99_back_at: None,
    })
}

/// Prefix sums of the count columns a recovery needs, over `len` buckets (missing rows are 0).
struct Sums {
    prefix: Vec<[u64; 5]>,
}

impl Sums {
    const COLUMNS: [Column; 5] = [
        Column::Succeeded,
        Column::Attempts,
        Column::Started,
        Column::Served,
        Column::Wasted,
    ];

    fn new(rows: &[Row], len: usize) -> Self {
        let mut prefix = Vec::with_capacity(len + 1);
        let mut acc = [0u64; 5];
        prefix.push(acc);
        for i in 0..len {
            if let Some(row) = rows.get(i) {
                for (a, c) in acc.iter_mut().zip(Self::COLUMNS) {
                    *a += u64::from(row[c as usize]);
                }
            }
            prefix.push(acc);
        }
        Sums { prefix }
    }

    /// The sum of `col` over buckets `a..b` (clamped to the buckets there are).
    fn sum(&self, col: Column, a: usize, b: usize) -> u64 {
        let j = Self::COLUMNS
            .iter()
            .position(|c| *c == col)
            .expect("a column the sums keep");
        let last = self.prefix.len() - 1;
        let (a, b) = (a.min(last), b.min(last));
        if b <= a {
            0
        } else {
            self.prefix[b][j] - self.prefix[a][j]
        }
    }
}

/// The Wilson score interval of a proportion `k / n` at 95 %: (lower, upper). (0, 1) when
/// `n` is 0.
pub fn wilson_interval(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = k as f64 / n;
    let z2 = Z_975 * Z_975;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z_975 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At k = 0 and k = n a bound is exactly 0 or 1; rounding must not move it.
    let lower = if k == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let upper = if p == 1.0 {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lower, upper)
}

/// Aggregates the replications of one variant into summary.json's `recovery` object and its
/// `ci95` twin, or `None` if no replication was analysed.
///
/// Nothing here averages runs into one no run looks like: `recovered_fraction` is the share
/// of replications that recovered (its ci95 is the larger distance from it to a bound of its
/// Wilson interval, and the bounds are `recovered_fraction_lower` and `_upper`), and the
/// recovery times are order statistics over the replications that recovered:
/// `median_recovery_s` (the mean of the two middle values for an even count),
/// `p90_recovery_s` (nearest rank) and `max_recovery_s`. They are absent when no replication
/// recovered. `baseline_per_s`, `dip_fraction`, `below_90_s`, `peak_amplification` and
/// `wasted_fraction` are means over every replication with Student-t half-widths. Counts,
/// bounds and order statistics have a ci95 of 0.
pub fn summarise(runs: &[Recovery]) -> Option<(RecoveryMetrics, RecoveryMetrics)> {
    if runs.is_empty() {
        return None;
    }
    let n = runs.len();
    let mut times: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.recovery_time())
        .map(SimDuration::as_secs_f64)
        .collect();
    times.sort_by(f64::total_cmp);
    let k = times.len();
    let fraction = k as f64 / n as f64;
    let (lower, upper) = wilson_interval(k, n);
    let mean =
        |f: fn(&Recovery) -> f64| Estimate::from_samples(&runs.iter().map(f).collect::<Vec<_>>());
    let baseline = mean(|r| r.baseline_per_s);
    let dip = mean(|r| r.dip_fraction);
    let below = mean(|r| r.below_90.as_secs_f64());
    let peak = mean(|r| r.peak_amplification);
    let wasted = mean(|r| r.wasted_fraction);
    let order = |f: fn(&[f64]) -> f64| (k > 0).then(|| f(&times));
    let (p99_judged, p99_before, p99_times) = p99_summary(runs);
    let metrics = RecoveryMetrics {
        replications: n as f64,
        recovered: k as f64,
        recovered_fraction: fraction,
        recovered_fraction_lower: lower,
        recovered_fraction_upper: upper,
        median_recovery_s: order(median),
        p90_recovery_s: order(|t| t[(t.len() * 9).div_ceil(10).max(1) - 1]),
        max_recovery_s: order(|t| t[t.len() - 1]),
        baseline_per_s: baseline.mean,
        dip_fraction: dip.mean,
        below_90_s: below.mean,
        peak_amplification: peak.mean,
        wasted_fraction: wasted.mean,
        p99_judged: p99_judged as f64,
        p99_back: p99_times.len() as f64,
        p99_before_ms: p99_before.map(|e| e.mean),
        median_p99_back_s: (!p99_times.is_empty()).then(|| median(&p99_times)),
    };
    let ci95 = RecoveryMetrics {
        recovered_fraction: (fraction - lower).max(upper - fraction),
        median_recovery_s: metrics.median_recovery_s.map(|_| 0.0),
        p90_recovery_s: metrics.p90_recovery_s.map(|_| 0.0),
        max_recovery_s: metrics.max_recovery_s.map(|_| 0.0),
        baseline_per_s: baseline.half_width,
        dip_fraction: dip.half_width,
        below_90_s: below.half_width,
        peak_amplification: peak.half_width,
        wasted_fraction: wasted.half_width,
        p99_before_ms: p99_before.map(|e| e.half_width),
        median_p99_back_s: metrics.median_p99_back_s.map(|_| 0.0),
        ..RecoveryMetrics::default()
    };
    Some((metrics, ci95))
}

/// The median of sorted values (the mean of the two middle ones for an even count).
fn median(t: &[f64]) -> f64 {
    let k = t.len();
    if k % 2 == 1 {
        t[k / 2]
    } else {
        (t[k / 2 - 1] + t[k / 2]) / 2.0
    }
}

/// Over the replications whose p99 was judged: how many, the mean of their p99 before the
/// trigger, and the times until it was back (in seconds, sorted), of those whose came back.
fn p99_summary(runs: &[Recovery]) -> (usize, Option<Estimate>, Vec<f64>) {
    let before: Vec<f64> = runs.iter().filter_map(|r| r.p99_before_ms).collect();
    let mut times: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.p99_back_time())
        .map(SimDuration::as_secs_f64)
        .collect();
    times.sort_by(f64::total_cmp);
    let level = (!before.is_empty()).then(|| Estimate::from_samples(&before));
    (before.len(), level, times)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    /// A series of 1 s buckets with `goodput[i]` successes in bucket i, one first attempt per
    /// success plus `retries[i]` (if given) attempts more, all served.
    fn series(goodput: &[u32], retries: &[u32]) -> TimeSeries {
        let mut s = TimeSeries::new(SimDuration::from_secs(1));
        for (i, &g) in goodput.iter().enumerate() {
            s.tick(SimTime(i as u64 * SECOND), Default::default);
            let r = retries.get(i).copied().unwrap_or(0);
            for _ in 0..g {
                s.add(Column::Succeeded);
                s.add(Column::Started);
                s.add(Column::FirstAttempts);
                s.add(Column::Attempts);
                s.add(Column::Served);
            }
            for _ in 0..r {
                s.add(Column::Attempts);
                s.add(Column::Served);
                s.add(Column::Wasted);
            }
        }
        s.close(Default::default());
        s
    }

    fn window(from_s: u64, to_s: u64) -> Trigger {
        Trigger {
            from: SimTime(from_s * SECOND),
            to: SimTime(to_s * SECOND),
        }
    }

    fn secs(s: u64) -> SimDuration {
        SimDuration::from_secs(s)
    }

    #[test]
    fn no_trigger_no_analysis() {
        let s = series(&[10; 40], &[]);
        assert_eq!(analyse(&s, &[], secs(40)), None);
    }

    #[test]
    fn a_trigger_at_time_zero_has_no_baseline() {
        let s = series(&[10; 40], &[]);
        assert_eq!(analyse(&s, &[window(0, 5)], secs(40)), None);
    }

    #[test]
    fn recovers_at_a_known_bucket() {
        // 10/s for 20 s (the warm-up bucket is 0, which must be skipped), a 5 s trigger, goodput
        // 0 until t = 30 s, then 9/s (exactly 90 %) to the end.
        let mut g = vec![10; 20];
        g[0] = 0;
        g.extend([0; 10]);
        g.extend([9; 30]);
        let s = series(&g, &[]);
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.baseline_per_s, 10.0);
        assert_eq!(r.recovered_at, Some(SimTime(30 * SECOND)));
        assert_eq!(r.recovery_time(), Some(secs(5)));
    }

    #[test]
    fn healthy_system_recovers_as_the_trigger_ends() {
        let s = series(&[10; 60], &[]);
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.recovered_at, Some(SimTime(25 * SECOND)));
        assert_eq!(r.recovery_time(), Some(SimDuration::ZERO));
        assert_eq!(r.peak_amplification, 1.0);
        assert_eq!(r.wasted_fraction, 0.0);
    }

    #[test]
    fn never_recovers() {
        // Collapsed after the trigger: 2/s and three attempts per request, to the end.
        let mut g = vec![10; 20];
        g.extend([2; 40]);
        let mut retries = vec![0; 20];
        retries.extend([4; 40]);
        let s = series(&g, &retries);
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.recovered_at, None);
        assert_eq!(r.recovery_time(), None);
        assert_eq!(r.peak_amplification, 3.0);
        assert!((r.wasted_fraction - 4.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn a_brief_overshoot_then_collapse_is_not_a_recovery() {
        // A backlog drains at 20/s for 5 s after the trigger (above the baseline over any 5 s
        // window starting there), then goodput collapses to 1/s for the rest of the run: the
        // mean over [t, duration) stays below 90 %.
        let mut g = vec![10; 20];
        g.extend([0; 5]);
        g.extend([20; 5]);
        g.extend([1; 30]);
        let s = series(&g, &[]);
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.recovered_at, None);
    }

    #[test]
    fn the_drain_after_duration_does_not_count() {
        // Goodput only comes back after duration (60 s), while the backlog drains.
        let mut g = vec![10; 20];
        g.extend([0; 40]);
        g.extend([50; 20]);
        let s = series(&g, &[]);
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.recovered_at, None);
    }

    #[test]
    fn the_window_is_cut_at_duration() {
        // Goodput is back only for the last 3 s before duration: a 3 s window there counts.
        let mut g = vec![10; 20];
        g.extend([0; 37]);
        g.extend([10; 3]);
        let s = series(&g, &[]);
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.recovered_at, Some(SimTime(57 * SECOND)));
    }

    #[test]
    fn a_trigger_until_duration_is_not_judged() {
        // No "after" to judge: no analysis rather than a metastable verdict (regression: a
        // healthy system was called metastable when its fault outlasted the arrivals).
        let s = series(&[10; 80], &[]);
        assert!(analyse(&s, &[window(20, 60)], secs(60)).is_none());
        assert!(analyse(&s, &[window(20, 70)], secs(60)).is_none());
        assert!(analyse(&s, &[window(20, 59)], secs(60)).is_some());
    }

    #[test]
    fn recovery_is_judged_after_the_last_of_several_triggers() {
        let s = series(&[10; 60], &[]);
        let r = analyse(&s, &[window(20, 22), window(30, 33)], secs(60)).unwrap();
        assert_eq!(r.recovered_at, Some(SimTime(33 * SECOND)));
    }

    #[test]
    fn a_doubled_bucket_width_gives_the_same_answer_on_its_boundaries() {
        // As in `recovers_at_a_known_bucket`, but recovery at 30 s and buckets merged to 2 s.
        let mut g = vec![10; 20];
        g[0] = 0;
        g[1] = 0;
        g.extend([0; 10]);
        g.extend([10; 30]);
        let mut s = series(&g, &[]);
        s.coarsen();
        assert_eq!(s.bucket(), secs(2));
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.baseline_per_s, 10.0);
        // The trigger ends inside a 2 s bucket: the first candidate is the next boundary.
        assert_eq!(r.recovered_at, Some(SimTime(30 * SECOND)));
        assert_eq!(r.recovery_time(), Some(secs(5)));
    }

    #[test]
    fn the_dip_shows_even_when_recovery_is_immediate() {
        // Goodput stops during the trigger and is back at its end: recovered at once (0 s),
        // but the dip is total and the 5 s windows starting at 20..24 s were under 90 %.
        let mut g = vec![10; 20];
        g.extend([0; 5]);
        g.extend([10; 35]);
        let s = series(&g, &[]);
        let r = analyse(&s, &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.recovery_time(), Some(secs(0)));
        assert_eq!(r.dip_fraction, 0.0);
        assert_eq!(r.below_90, secs(5));
        // Without a dip: 1 and nothing under 90 %.
        let r = analyse(&series(&[10; 60], &[]), &[window(20, 25)], secs(60)).unwrap();
        assert_eq!((r.dip_fraction, r.below_90), (1.0, secs(0)));
    }

    #[test]
    fn peak_amplification_is_the_worst_five_second_window() {
        let mut g = vec![10; 20];
        g.extend([10; 20]);
        let mut retries = vec![0; 22];
        // One bucket of 30 retries in the trigger: over 5 s, 80 attempts for 50 first attempts.
        retries.push(30);
        let s = series(&g, &retries);
        let r = analyse(&s, &[window(20, 25)], secs(40)).unwrap();
        assert!((r.peak_amplification - 1.6).abs() < 1e-12);
    }

    /// `series` of goodput 10/s whose answers in bucket i took `latency_ms[i]` each (none
    /// where it is 0).
    fn with_latency(latency_ms: &[u64]) -> TimeSeries {
        let mut s = TimeSeries::new(SimDuration::from_secs(1));
        for (i, &ms) in latency_ms.iter().enumerate() {
            s.tick(SimTime(i as u64 * SECOND), Default::default);
            for _ in 0..10 {
                s.add(Column::Succeeded);
                s.add(Column::Started);
                if ms > 0 {
                    s.answered(SimDuration::from_millis(ms));
                }
            }
        }
        s.close(Default::default());
        s
    }

    /// p99 is back at the first boundary after the trigger from which the 5 s ahead and the
    /// rest of the run are within 10 % of the level before it; a bin above it is not, the
    /// same bin is; without answers before the trigger it is not judged.
    #[test]
    fn p99_is_back_when_the_window_ahead_and_the_rest_are_within_ten_percent() {
        let edge = |ms: u64| latency_bin_upper_ms(super::super::latency_bin_of(ms * 1_000_000));
        // 50 ms before, 500 ms from the trigger (20 s) to 30 s, then 50 ms but one bucket of
        // 80 ms at 33 s (a window containing it is not back) and 48 ms (the same bin) after.
        let mut ms = vec![50; 20];
        ms.extend([500; 10]);
        ms.extend([50; 3]);
        ms.push(80);
        ms.extend([48; 26]);
        assert_eq!(edge(48), edge(50), "the same bin");
        let r = analyse(&with_latency(&ms), &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.p99_before_ms, Some(edge(50)));
        assert_eq!(
            r.recovered_at,
            Some(SimTime(25 * SECOND)),
            "goodput never left"
        );
        assert_eq!(r.p99_back_at, Some(SimTime(34 * SECOND)));
        assert_eq!(r.p99_back_time(), Some(secs(9)));
        // Still 500 ms to the end: not back by the end of the run.
        let mut high = vec![50; 20];
        high.extend([500; 40]);
        let r = analyse(&with_latency(&high), &[window(20, 25)], secs(60)).unwrap();
        assert_eq!((r.p99_before_ms, r.p99_back_at), (Some(edge(50)), None));
        // A bucket without an answer is not back: here until 40 s.
        let mut silent = vec![50; 20];
        silent.extend([0; 20]);
        silent.extend([50; 20]);
        let r = analyse(&with_latency(&silent), &[window(20, 25)], secs(60)).unwrap();
        assert_eq!(r.p99_back_at, Some(SimTime(40 * SECOND)));
        // Nothing answered before the trigger: nothing to come back to.
        let mut late = vec![0; 20];
        late.extend([50; 40]);
        let r = analyse(&with_latency(&late), &[window(20, 25)], secs(60)).unwrap();
        assert_eq!((r.p99_before_ms, r.p99_back_at), (None, None));
        let (m, _) = summarise(&[r]).unwrap();
        assert_eq!((m.p99_judged, m.p99_back), (0.0, 0.0));
        assert_eq!((m.p99_before_ms, m.median_p99_back_s), (None, None));
    }

    #[test]
    fn wilson_interval_matches_a_table() {
        // 8 of 10: (0.490, 0.943).
        let (lo, hi) = wilson_interval(8, 10);
        assert!((lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3);
        let (lo, hi) = wilson_interval(10, 10);
        assert!((lo - 0.7225).abs() < 1e-3 && hi == 1.0);
        assert_eq!(wilson_interval(0, 10).0, 0.0);
        assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
    }

    #[test]
    fn summary_keeps_bimodal_runs_apart() {
        let run = |recovered_after: Option<u64>| Recovery {
            baseline_per_s: 40.0,
            triggers_end: SimTime(25 * SECOND),
            recovered_at: recovered_after.map(|s| SimTime((25 + s) * SECOND)),
            peak_amplification: 3.0,
            wasted_fraction: 0.5,
            dip_fraction: 0.5,
            below_90: SimDuration::from_secs(2),
            p99_before_ms: Some(20.0),
            p99_back_at: recovered_after.map(|s| SimTime((26 + s) * SECOND)),
        };
        let (m, h) = summarise(&[run(Some(2)), run(None), run(Some(6)), run(None)]).unwrap();
        assert_eq!(m.replications, 4.0);
        assert_eq!(m.recovered, 2.0);
        assert_eq!(m.recovered_fraction, 0.5);
        assert_eq!(m.median_recovery_s, Some(4.0));
        assert_eq!(m.p90_recovery_s, Some(6.0));
        assert_eq!(m.baseline_per_s, 40.0);
        assert_eq!(m.below_90_s, 2.0);
        // p99 back a second after goodput in the two that recovered, 3 s and 7 s after.
        assert_eq!((m.p99_judged, m.p99_back), (4.0, 2.0));
        assert_eq!(m.median_p99_back_s, Some(5.0));
        assert_eq!((m.p99_before_ms, h.p99_before_ms), (Some(20.0), Some(0.0)));
        let keys = |v: &RecoveryMetrics| {
            let doc = serde_json::to_value(v).unwrap();
            doc.as_object().unwrap().keys().cloned().collect::<Vec<_>>()
        };
        assert_eq!(keys(&m), keys(&h), "ci95 mirrors the metrics");
        assert!(h.recovered_fraction > 0.3);

        let (m, _) = summarise(&[run(None), run(None)]).unwrap();
        assert_eq!(m.recovered_fraction, 0.0);
        assert!(m.median_recovery_s.is_none());
        assert_eq!(summarise(&[]), None);
    }
}
