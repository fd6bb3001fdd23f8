//! Means and 95 % confidence half-widths over replications.
//!
//! Replications are independent, so each metric's mean gets a Student-t interval:
//! `t(0.975, n-1) * s / sqrt(n)`. With one replication no interval can be estimated and the
//! half-width is reported as 0.
//!
//! A variant's replications are folded one at a time, in replication order, into a
//! [`Replications`] accumulator (running moments, merged histograms, summed series), so what a
//! variant holds does not grow with its number of replications. Every run's services and
//! calls are folded the same way, field by field, and each service's load over time like the
//! main series.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::series::{COLUMNS, Column, LatencyBins, TimeSeries, merge_pairs};
use super::{
    BucketLatency, CallMetric, Digest, GroupMetric, LATENCY_BINS, Latency, LatencyPool, Metric,
    Metrics, PartMetric, ServiceMetric, ServiceSeries,
};
use crate::engine::SimDuration;

/// A mean with its 95 % confidence half-width.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// Sample mean.
    pub mean: f64,
    /// Half-width of the 95 % interval (0 with fewer than two samples).
    pub half_width: f64,
}

impl Estimate {
    /// The estimate from samples.
    pub fn from_samples(xs: &[f64]) -> Self {
        let n = xs.len();
        if n == 0 {
            return Estimate::default();
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Estimate {
                mean,
                half_width: 0.0,
            };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Estimate {
            mean,
            half_width: t_quantile_975(n - 1) * (var / n as f64).sqrt(),
        }
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1).
pub fn t_quantile_975(df: usize) -> f64 {
    StudentsT::new(0.0, 1.0, df as f64)
        .expect("df >= 1")
        .inverse_cdf(0.975)
}

/// A running sum, mean and sum of squared deviations (Welford's update), for an [`Estimate`]
/// without keeping the samples. The mean is the plain sum in the order the samples came over
/// their count, as [`Estimate::from_samples`] computes it; the variance may differ from that
/// two-pass one in its last bits.
#[derive(Debug, Clone, Copy)]
pub struct Moments {
    n: u64,
    sum: f64,
    mean: f64,
    m2: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            n: 0,
            // The neutral element `Iterator::sum` starts from, so the sums agree bit for bit.
            sum: -0.0,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

impl Moments {
    /// Adds one sample.
    #[inline]
    pub fn push(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Samples so far.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The mean and 95 % half-width of the samples so far.
    pub fn estimate(&self) -> Estimate {
        let n = self.n as usize;
        if n == 0 {
            return Estimate::default();
        }
        let mean = self.sum / n as f64;
        if n < 2 {
            return Estimate {
                mean,
                half_width: 0.0,
            };
        }
        let var = self.m2 / (n - 1) as f64;
        Estimate {
            mean,
            half_width: t_quantile_975(n - 1) * (var / n as f64).sqrt(),
        }
    }
}

/// What a variant's replications add up to (see [`Replications::finish`]).
#[derive(Debug, Clone)]
pub struct Folded {
    /// Means of every per-replication metric, latency pooled (recovery not included).
    pub metrics: Metrics,
    /// 95 % half-widths, same shape.
    pub ci95: Metrics,
    /// Width of a time-series bucket.
    pub bucket: SimDuration,
    /// Mean time series ([`aggregate_series`]).
    pub series: Vec<[f64; COLUMNS]>,
    /// Per bucket, the p50 and p99 of the answers, pooled ([`SeriesMean::latency`]).
    pub latency: Vec<Option<BucketLatency>>,
    /// Mean successful logical requests per latency bin.
    pub success_latency_bins: Vec<f64>,
    /// Per service, the entry first: its mean load over time, with its bucket width
    /// ([`aggregate_series`]), and its answers' latency per bucket, pooled. Empty for a run
    /// of one service, whose load is the main series' (see `RunResult::service_series`).
    pub service_series: Vec<ServiceSeries>,
    /// Per replica of a service with more than one, in the order of `Metrics::replicas`: its
    /// mean load over time (see `RunResult::replica_series`). Empty without replicas.
    pub replica_series: Vec<ServiceSeries>,
}

/// A variant's replications folded one at a time, in replication order: per-metric running
/// moments and the time series summed; their latency histograms are merged apart, in a
/// [`LatencyPool`], by whichever thread ran them. Its size does not depend on how many
/// replications it has seen.
///
/// Every per-replication metric gets its mean and Student-t half-width ([`Moments`]).
/// Latency is pooled: the headline numbers come from the histogram of every replication's
/// requests merged (so a percentile is the one of the distribution the figures draw), and
/// the half-widths from the spread of the per-replication values, over the replications that
/// had such requests. Recovery is summarised on its own terms, elsewhere.
#[derive(Debug, Clone)]
pub struct Replications {
    /// Replications in all (the series mean divides by it as it goes).
    expected: u32,
    /// Replications folded so far.
    seen: u32,
    metrics: [Moments; Metric::PER_REPLICATION.len()],
    /// The optional counts ([`Metric::OPTIONAL`]).
    optional: [Moments; Metric::OPTIONAL.len()],
    /// All, success, failure latency: mean, p50, p90, p99, p99.9, max.
    latency: [[Moments; 6]; 3],
    series: SeriesMean,
    /// The requests a fallback answered, as a count and as a share of the requests started,
    /// and those a full bulkhead failed.
    degraded: Moments,
    degraded_rate: Moments,
    bulkhead_full: Moments,
    /// The services' and calls' numbers; made from the first replication, which gives their
    /// shape.
    parts: Option<PartsFold>,
}

/// The running moments of the numbers of a run's parts: every field of every service and
/// call, and each service's load over time.
#[derive(Debug, Clone)]
struct PartsFold {
    services: Vec<[Moments; ServiceMetric::ALL.len()]>,
    /// Each replica of a replicated service, folded as a service is.
    replicas: Vec<[Moments; ServiceMetric::ALL.len()]>,
    calls: Vec<[Moments; CallMetric::ALL.len()]>,
    /// Per call, the route success rate over the replications in which it has one.
    route_success: Vec<Moments>,
    series: Vec<SeriesMean>,
    /// Each replica's load over time, in the order of `replicas`.
    replica_series: Vec<SeriesMean>,
    /// Each group of clients (where there are several), and the latency of its answered
    /// requests (mean, p50, p90, p99, p99.9, max) over the replications that answered some.
    groups: Vec<[Moments; GroupMetric::ALL.len()]>,
    group_latency: Vec<[Moments; 6]>,
}

impl PartsFold {
    /// Shaped like `run`'s services and calls, for `n` replications in all.
    fn new(run: &Digest, n: usize) -> Self {
        PartsFold {
            services: vec![Default::default(); run.metrics.services.len()],
            replicas: vec![Default::default(); run.metrics.replicas.len()],
            calls: vec![Default::default(); run.metrics.calls.len()],
            route_success: vec![Moments::default(); run.metrics.calls.len()],
            series: vec![SeriesMean::new(n); run.service_series.len()],
            replica_series: vec![SeriesMean::new(n); run.replica_series.len()],
            groups: vec![Default::default(); run.metrics.groups.len()],
            group_latency: vec![Default::default(); run.metrics.groups.len()],
        }
    }

    /// Folds the next replication. Every replication of a variant has the same services and
    /// calls (they come from its one scenario).
    fn add(&mut self, run: &Digest) {
        let m = &run.metrics;
        debug_assert_eq!(
            self.services.len(),
            m.services.len(),
            "one set of services per variant"
        );
        debug_assert_eq!(
            self.calls.len(),
            m.calls.len(),
            "one set of calls per variant"
        );
        debug_assert_eq!(self.series.len(), run.service_series.len());
        debug_assert_eq!(self.replica_series.len(), run.replica_series.len());
        debug_assert_eq!(self.replicas.len(), m.replicas.len());
        for (moments, s) in self
            .services
            .iter_mut()
            .zip(&m.services)
            .chain(self.replicas.iter_mut().zip(&m.replicas))
        {
            for (k, mo) in ServiceMetric::ALL.iter().zip(moments.iter_mut()) {
                mo.push(k.value(s));
            }
        }
        for (moments, c) in self.calls.iter_mut().zip(&m.calls) {
            for (k, mo) in CallMetric::ALL.iter().zip(moments.iter_mut()) {
                mo.push(k.value(c));
            }
        }
        for (moments, c) in self.route_success.iter_mut().zip(&m.calls) {
            if let Some(rate) = c.route_success_rate {
                moments.push(rate);
            }
        }
        for (mean, s) in self
            .series
            .iter_mut()
            .zip(&run.service_series)
            .chain(self.replica_series.iter_mut().zip(&run.replica_series))
        {
            mean.add(s);
        }
        self.add_groups(&m.groups);
    }

    /// Folds the next replication's groups of clients.
    fn add_groups(&mut self, groups: &[super::GroupMetrics]) {
        debug_assert_eq!(
            self.groups.len(),
            groups.len(),
            "one set of groups per variant"
        );
        for ((moments, latency), g) in self
            .groups
            .iter_mut()
            .zip(self.group_latency.iter_mut())
            .zip(groups)
        {
            for (k, mo) in GroupMetric::ALL.iter().zip(moments.iter_mut()) {
                mo.push(k.value(g));
            }
            if let Some(l) = g.latency_ms {
                for (mo, x) in latency
                    .iter_mut()
                    .zip([l.mean, l.p50, l.p90, l.p99, l.p999, l.max])
                {
                    mo.push(x);
                }
            }
        }
    }

    /// Writes the groups' means and half-widths into the variant's documents: a group's
    /// latency is that of its answered requests of every replication pooled (`pool`), as the
    /// totals' is, with half-widths from the spread of the replications' own values.
    fn finish_groups(&self, metrics: &mut Metrics, ci95: &mut Metrics, pool: &LatencyPool) {
        (metrics.groups, ci95.groups) = self
            .groups
            .iter()
            .zip(&self.group_latency)
            .enumerate()
            .map(|(g, (moments, latency))| {
                let (mut mean, mut half) = estimates(moments, &GroupMetric::ALL);
                let pooled = pool.groups.get(g).filter(|h| h.count() > 0);
                if let (true, Some(pooled)) = (latency[0].count() > 0, pooled) {
                    let e = latency.map(|mo| finite(mo.estimate().half_width));
                    mean.latency_ms = Some(pooled.summary());
                    half.latency_ms = Some(Latency {
                        mean: e[0],
                        p50: e[1],
                        p90: e[2],
                        p99: e[3],
                        p999: e[4],
                        max: e[5],
                    });
                }
                (mean, half)
            })
            .unzip();
    }

    /// Writes the means and half-widths into the variant's documents; returns the services'
    /// and the replicas' mean series.
    fn finish(
        self,
        metrics: &mut Metrics,
        ci95: &mut Metrics,
        pool: &LatencyPool,
    ) -> (Vec<ServiceSeries>, Vec<ServiceSeries>) {
        self.finish_groups(metrics, ci95, pool);
        (metrics.services, ci95.services) = self
            .services
            .iter()
            .map(|moments| estimates(moments, &ServiceMetric::ALL))
            .unzip();
        (metrics.replicas, ci95.replicas) = self
            .replicas
            .iter()
            .map(|moments| estimates(moments, &ServiceMetric::ALL))
            .unzip();
        (metrics.calls, ci95.calls) = self
            .calls
            .iter()
            .map(|moments| estimates(moments, &CallMetric::ALL))
            .unzip();
        for ((mean, half), moments) in metrics
            .calls
            .iter_mut()
            .zip(ci95.calls.iter_mut())
            .zip(&self.route_success)
        {
            if moments.count() > 0 {
                let e = moments.estimate();
                mean.route_success_rate = Some(finite(e.mean));
                half.route_success_rate = Some(finite(e.half_width));
            }
        }
        let means = |series: Vec<SeriesMean>| -> Vec<ServiceSeries> {
            series
                .into_iter()
                .map(|mean| {
                    let latency = mean.latency();
                    let (bucket, rows) = mean.finish();
                    ServiceSeries {
                        bucket,
                        rows,
                        latency,
                    }
                })
                .collect()
        };
        (means(self.series), means(self.replica_series))
    }
}

impl Replications {
    /// An empty accumulator for `replications` replications.
    pub fn new(replications: u32) -> Self {
        Replications {
            expected: replications,
            seen: 0,
            metrics: [Moments::default(); Metric::PER_REPLICATION.len()],
            optional: [Moments::default(); Metric::OPTIONAL.len()],
            latency: [[Moments::default(); 6]; 3],
            series: SeriesMean::new(replications as usize),
            degraded: Moments::default(),
            degraded_rate: Moments::default(),
            bulkhead_full: Moments::default(),
            parts: None,
        }
    }

    /// Folds the next replication.
    pub fn add(&mut self, run: &Digest) {
        debug_assert!(
            self.seen < self.expected,
            "more replications than announced"
        );
        self.seen += 1;
        let metrics = &run.metrics;
        for (k, m) in Metric::PER_REPLICATION.iter().zip(&mut self.metrics) {
            m.push(k.value(metrics));
        }
        for (k, m) in Metric::OPTIONAL.iter().zip(&mut self.optional) {
            m.push(k.value(metrics));
        }
        let latencies = [
            &metrics.latency_ms,
            &metrics.success_latency_ms,
            &metrics.failure_latency_ms,
        ];
        for ((l, n), moments) in latencies
            .into_iter()
            .zip(run.latency_counts)
            .zip(&mut self.latency)
        {
            if n > 0 {
                for (m, x) in moments
                    .iter_mut()
                    .zip([l.mean, l.p50, l.p90, l.p99, l.p999, l.max])
                {
                    m.push(x);
                }
            }
        }
        self.series.add(&run.series);
        self.degraded.push(metrics.degraded);
        // A share of each replication's requests, like `success_rate`, so that the means of
        // the success, degraded and failure shares add up as each replication's do.
        self.degraded_rate.push(if metrics.requests > 0.0 {
            metrics.degraded / metrics.requests
        } else {
            0.0
        });
        self.bulkhead_full.push(metrics.failed.bulkhead_full);
        let n = self.expected as usize;
        self.parts
            .get_or_insert_with(|| PartsFold::new(run, n))
            .add(run);
    }

    /// The variant's means, half-widths, mean series and latency bins, with its replications'
    /// latencies merged in `pool`.
    pub fn finish(self, pool: &LatencyPool) -> Folded {
        let mut metrics = Metrics::default();
        let mut ci95 = Metrics::default();
        // The parts first: the entry's metrics (`server.*`) are set in `services[0]`, which
        // the same samples in the same order give the same numbers.
        let (service_series, replica_series) = match self.parts {
            Some(parts) => parts.finish(&mut metrics, &mut ci95, pool),
            None => (Vec::new(), Vec::new()),
        };
        for (k, m) in Metric::PER_REPLICATION
            .iter()
            .zip(&self.metrics)
            .chain(Metric::OPTIONAL.iter().zip(&self.optional))
            .chain([
                (&Metric::DEGRADED, &self.degraded),
                (&Metric::FAILED_BULKHEAD_FULL, &self.bulkhead_full),
            ])
        {
            let e = m.estimate();
            k.set(&mut metrics, finite(e.mean));
            k.set(&mut ci95, finite(e.half_width));
        }
        let half = |moments: &[Moments; 6]| {
            let h = |i: usize| finite(moments[i].estimate().half_width);
            Latency {
                mean: h(0),
                p50: h(1),
                p90: h(2),
                p99: h(3),
                p999: h(4),
                max: h(5),
            }
        };
        let mut all = pool.success.clone();
        all.merge(&pool.failure);
        (metrics.latency_ms, ci95.latency_ms) = (all.summary(), half(&self.latency[0]));
        (metrics.success_latency_ms, ci95.success_latency_ms) =
            (pool.success.summary(), half(&self.latency[1]));
        (metrics.failure_latency_ms, ci95.failure_latency_ms) =
            (pool.failure.summary(), half(&self.latency[2]));
        let n = f64::from(self.expected.max(1));
        let success_latency_bins: Vec<f64> = pool
            .success
            .bins()
            .into_iter()
            .map(|c| c as f64 / n)
            .collect();
        debug_assert_eq!(success_latency_bins.len(), LATENCY_BINS);
        let rate = self.degraded_rate.estimate();
        metrics.degraded_rate = Some(finite(rate.mean));
        ci95.degraded_rate = Some(finite(rate.half_width));
        let latency = self.series.latency();
        let (bucket, series) = self.series.finish();
        Folded {
            metrics,
            ci95,
            bucket,
            series,
            latency,
            success_latency_bins,
            service_series,
            replica_series,
        }
    }
}

/// The means and half-widths of one service's or call's `fields`, from their moments.
fn estimates<T: Default>(moments: &[Moments], fields: &[PartMetric<T>]) -> (T, T) {
    let (mut mean, mut half) = (T::default(), T::default());
    for (k, m) in fields.iter().zip(moments) {
        let e = m.estimate();
        k.set(&mut mean, finite(e.mean));
        k.set(&mut half, finite(e.half_width));
    }
    (mean, half)
}

/// A finite number (JSON has no infinities): non-finite values become 0.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// Averages time series bucket by bucket. Series whose buckets merged (a long run) set the
/// width for all: the others are merged to match. Returns the bucket width and the mean rows.
///
/// A replication that ended early is not running in the buckets after its end, and the two
/// kinds of column treat that differently:
/// - a count column (attempts, retries, outcomes) averages over every replication, the ended
///   ones counting 0: they sent nothing then, and the mean stays "per replication", so counts
///   summed over buckets give the mean total;
/// - a state column (budget level, breakers open, queue, in service, in flight; see
///   [`Column::is_state`]) holds an ended replication at its last value, the state the run
///   was left in. Counting it as 0 showed a full budget draining to 0 when runs ended, which
///   never happened; averaging only the replications still running was tried too, but then
///   the mean jumps whenever the set of running replications changes (a queue mean leaps up
///   when the recovered runs of a bimodal variant end and only collapsed ones remain). Holding
///   keeps one set of replications behind every bucket.
pub fn aggregate_series(series: &[&TimeSeries]) -> (SimDuration, Vec<[f64; COLUMNS]>) {
    let mut mean = SeriesMean::new(series.len());
    for s in series {
        mean.add(s);
    }
    mean.finish()
}

/// [`aggregate_series`] one series at a time, in order, out of `n` in all: each value is
/// added as `value * scale / n` in series order, so the rows come out bit for bit as if all
/// series were averaged at once. Rows past the end of the series seen so far start from what
/// those series hold there (their last states, in order). Only when a later series has wider
/// buckets than the ones before are the rows summed so far merged pairwise (counts added,
/// states from the later bucket), which equals merging each series first up to rounding.
/// Each bucket's answers are pooled: their latency bins summed (integers, so in any order).
#[derive(Debug, Clone)]
pub struct SeriesMean {
    n: f64,
    width: SimDuration,
    rows: Vec<[f64; COLUMNS]>,
    /// What the series seen so far add to a row past all their ends: their last states.
    held: [f64; COLUMNS],
    /// Per bucket, the latency bins of every series' answers summed; no longer than `rows`.
    latency: Vec<LatencyBins<u64>>,
}

impl SeriesMean {
    /// An empty mean of `n` series.
    pub fn new(n: usize) -> Self {
        SeriesMean {
            n: n.max(1) as f64,
            width: SimDuration::ZERO,
            rows: Vec::new(),
            held: [0.0; COLUMNS],
            latency: Vec::new(),
        }
    }

    /// Adds the next series.
    pub fn add(&mut self, series: &TimeSeries) {
        while self.width < series.bucket() && !self.rows.is_empty() {
            self.coarsen();
        }
        self.width = self.width.max(series.bucket());
        let aligned = if series.bucket() == self.width {
            std::borrow::Cow::Borrowed(series)
        } else {
            let mut s = series.clone();
            while s.bucket() < self.width {
                s.coarsen();
            }
            std::borrow::Cow::Owned(s)
        };
        let rows = aligned.rows();
        if rows.len() > self.rows.len() {
            self.rows.resize(rows.len(), self.held);
        }
        let last = rows.last().copied().unwrap_or([0; COLUMNS]);
        let n = self.n;
        let scale = Column::ALL.map(Column::scale);
        let (running, ended) = self.rows.split_at_mut(rows.len());
        for (out, row) in running.iter_mut().zip(rows) {
            // Every column, without a branch, so that the loop is vectorised.
            for ((o, v), s) in out.iter_mut().zip(row).zip(scale) {
                *o += f64::from(*v) * s / n;
            }
        }
        // After its end a run counts nothing and keeps its last state.
        let states = Column::ALL.into_iter().filter(|c| c.is_state());
        for out in ended {
            for col in states.clone() {
                let i = col as usize;
                out[i] += f64::from(last[i]) * col.scale() / n;
            }
        }
        for ((h, v), col) in self.held.iter_mut().zip(&last).zip(Column::ALL) {
            if col.is_state() {
                *h += f64::from(*v) * col.scale() / self.n;
            }
        }
        for (bucket, bins) in aligned.latency() {
            if self.latency.len() <= bucket {
                self.latency.resize(bucket + 1, LatencyBins::default());
            }
            self.latency[bucket].merge(&bins);
        }
    }

    /// Per bucket (one per row), the p50 and p99 of the answers of every series added,
    /// pooled; `None` for a bucket without one.
    pub fn latency(&self) -> Vec<Option<BucketLatency>> {
        (0..self.rows.len())
            .map(|i| {
                let bins = self.latency.get(i)?;
                Some(BucketLatency {
                    p50_ms: bins.quantile_ms(0.5)?,
                    p99_ms: bins.quantile_ms(0.99)?,
                })
            })
            .collect()
    }

    /// Merges neighbouring rows, doubling the width, as [`TimeSeries::coarsen`] does.
    fn coarsen(&mut self) {
        self.rows = self
            .rows
            .chunks(2)
            .map(|pair| {
                let mut row = *pair.last().expect("chunks are never empty");
                if let [first, second] = pair {
                    for col in Column::ALL.iter().filter(|c| !c.is_state()) {
                        let i = *col as usize;
                        row[i] = first[i] + second[i];
                    }
                }
                row
            })
            .collect();
        self.latency = merge_pairs(&self.latency);
        self.width = SimDuration::from_nanos(self.width.as_nanos().saturating_mul(2));
    }

    /// The bucket width and the mean rows.
    pub fn finish(self) -> (SimDuration, Vec<[f64; COLUMNS]>) {
        (self.width, self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t_quantile_975(1) - 12.706).abs() < 1e-3);
        assert!((t_quantile_975(9) - 2.262).abs() < 1e-3);
        assert!((t_quantile_975(1000) - 1.962).abs() < 1e-3);
    }

    /// A replication's result with the given counts and latencies (ms) of successes.
    fn run(requests: u64, served: u64, success_ms: &[(u64, u64)]) -> super::super::RunResult {
        let entry = super::super::ServiceCounters {
            served,
            ..Default::default()
        };
        let mut r = super::super::Recorder::new(SimDuration::from_secs(1)).finish(
            None,
            vec![entry],
            Vec::new(),
            Vec::new(),
        );
        r.counters.requests = requests;
        for &(ms, times) in success_ms {
            for _ in 0..times {
                r.success_latency.record(SimDuration::from_millis(ms));
                r.counters.final_outcomes[crate::model::Outcome::Success.index()] += 1;
            }
        }
        r
    }

    fn fold(runs: &[super::super::RunResult]) -> Folded {
        let mut acc = Replications::new(runs.len() as u32);
        let mut pool = LatencyPool::default();
        for r in runs {
            pool.add(r);
            let digest = r.clone().digest();
            assert_eq!(
                digest.metrics,
                r.metrics(),
                "a digest reads the same metrics"
            );
            acc.add(&digest);
        }
        acc.finish(&pool)
    }

    #[test]
    fn aggregates_every_metric() {
        let f = fold(&[run(1, 2, &[]), run(3, 2, &[])]);
        assert_eq!(f.metrics.requests, 2.0);
        assert!((f.ci95.requests - 12.706).abs() < 1e-2);
        assert_eq!(
            (f.metrics.entry().served, f.ci95.entry().served),
            (2.0, 0.0)
        );
        assert_eq!(Metric::SERVED.get(&f.metrics), Some(2.0));
    }

    /// A replication of a two-service graph (frontend -> backend): `requests` started,
    /// `degraded` of them answered by a fallback, `bulkhead` failed by a full bulkhead, and
    /// `backend` attempts at the backend, one per second of a series as long.
    fn graph_run(
        requests: u64,
        degraded: u64,
        bulkhead: u64,
        backend: u64,
    ) -> super::super::RunResult {
        use crate::metrics::{CallCounters, ServiceCounters};
        use crate::model::Outcome;
        let mut r = run(requests, requests, &[]);
        r.counters.final_outcomes[Outcome::Degraded.index()] = degraded;
        r.counters.final_outcomes[Outcome::BulkheadFull.index()] = bulkhead;
        r.counters.end_time = crate::engine::SimTime(10_000_000_000);
        r.services = vec![
            ServiceCounters {
                attempts: requests,
                served: requests,
                useful: requests,
                ..ServiceCounters::default()
            },
            ServiceCounters {
                attempts: backend,
                served: backend,
                busy_nanos: 5,
                capacity_nanos: 10,
                max_queue: backend / 2,
                ..ServiceCounters::default()
            },
        ];
        r.calls = vec![CallCounters {
            calls: requests,
            attempts: backend,
            retries: backend - requests,
            degraded,
            failed: degraded + bulkhead,
            bulkhead_full: bulkhead,
            ..CallCounters::default()
        }];
        let mut front = TimeSeries::new(SimDuration::from_secs(1));
        front.add(Column::Attempts);
        front.close(crate::metrics::series::Gauges::default());
        r.service_series = vec![front, series(backend, 3)];
        r
    }

    #[test]
    fn a_call_graph_folds_every_service_and_call_field_with_its_interval() {
        let f = fold(&[graph_run(10, 2, 1, 20), graph_run(20, 2, 3, 60)]);
        let (m, h) = (&f.metrics, &f.ci95);
        assert_eq!((m.services.len(), m.calls.len()), (2, 1));
        // Means of 20 and 60 attempts at the backend; t(0.975, 1) * s / sqrt(2) = 12.706 * 20.
        assert_eq!(m.services[1].attempts, 40.0);
        assert!((h.services[1].attempts - 12.706 * 20.0).abs() < 0.01);
        // Amplification per replication: 2 and 3.
        assert_eq!(m.services[1].amplification, 2.5);
        assert_eq!(m.services[1].utilization, 0.5);
        assert_eq!(h.services[1].utilization, 0.0);
        assert_eq!(m.services[1].max_queue, 20.0);
        assert_eq!(m.services[0].goodput_per_s, 1.5);
        assert_eq!(m.calls[0].attempts_per_request, 2.5);
        assert_eq!(m.calls[0].retries, 25.0);
        assert_eq!(m.calls[0].bulkhead_full, 2.0);
        assert_eq!((m.degraded, h.degraded), (2.0, 0.0));
        assert_eq!(m.failed.bulkhead_full, 2.0);
        // The share is the mean of 2/10 and 2/20, not the ratio of the means (4/30).
        let (rate, half) = (m.degraded_rate.unwrap(), h.degraded_rate.unwrap());
        assert!((rate - 0.15).abs() < 1e-12, "{rate}");
        assert!((half - 12.706 * 0.05).abs() < 1e-3);
        // Each service's series averaged like the main one: the frontend's single attempt
        // in bucket 0, the backend's over 20 and 60 buckets.
        assert_eq!(f.service_series.len(), 2);
        let ServiceSeries { bucket, rows, .. } = &f.service_series[1];
        assert_eq!(*bucket, SimDuration::from_secs(1));
        assert_eq!(rows.len(), 60);
        assert_eq!(rows[0][Column::Attempts as usize], 1.0);
        assert_eq!(rows[30][Column::Attempts as usize], 0.5);
        assert_eq!(f.service_series[0].rows[0][Column::Attempts as usize], 1.0);
    }

    /// A single server is a graph of one service: its entry is folded like any service,
    /// and it has a degraded count and share (0) like any run.
    /// A bucket's p50 and p99 are those of every replication's answers in it, pooled (not
    /// a mean of each replication's): one replication answered 60 requests in 10 ms, the
    /// other 40 in 1 s. A bucket without an answer has none.
    #[test]
    fn bucket_percentiles_are_pooled_over_replications() {
        use crate::engine::SimTime;
        use crate::metrics::latency_bin_upper_ms;
        let mut fast = TimeSeries::new(SimDuration::from_secs(1));
        let mut slow = fast.clone();
        for _ in 0..60 {
            fast.answered(SimDuration::from_millis(10));
        }
        for _ in 0..40 {
            slow.answered(SimDuration::from_secs(1));
        }
        for s in [&mut fast, &mut slow] {
            s.tick(SimTime(2_500_000_000), Default::default);
            s.add(Column::Started);
            s.close(Default::default());
        }
        let mut mean = SeriesMean::new(2);
        mean.add(&fast);
        mean.add(&slow);
        let latency = mean.latency();
        assert_eq!(latency.len(), 3, "one per row");
        // Within the bin of each latency, as far up as the rank lies into the bin's count:
        // p50 is the 50th of the 60 fast answers, p99 the 39th of the 40 slow ones.
        let at = |ms: f64, f: f64| {
            let bin = crate::metrics::latency_bin_of((ms * 1e6) as u64);
            let (lo, hi) = (latency_bin_upper_ms(bin - 1), latency_bin_upper_ms(bin));
            lo * (hi / lo).powf(f)
        };
        let l = latency[0].as_ref().expect("the bucket has answers");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b;
        assert!(close(l.p50_ms, at(10.0, 50.0 / 60.0)), "{l:?}");
        assert!(close(l.p99_ms, at(1000.0, 39.0 / 40.0)), "{l:?}");
        assert_eq!(latency[1..], [None, None]);
    }

    #[test]
    fn a_single_server_folds_its_one_service() {
        let f = fold(&[run(1, 2, &[]), run(3, 2, &[])]);
        assert_eq!((f.metrics.services.len(), f.metrics.calls.len()), (1, 0));
        assert_eq!((f.metrics.degraded, f.ci95.degraded), (0.0, 0.0));
        assert_eq!(f.metrics.degraded_rate, Some(0.0));
        assert!(f.service_series.is_empty());
        let doc = serde_json::to_value(&f.metrics).unwrap();
        for key in ["degraded", "degraded_rate", "services", "calls"] {
            assert!(doc.get(key).is_some(), "{key}");
        }
        assert!(doc.get("server").is_none());
        assert!(doc["failed"].get("bulkhead_full").is_none());
    }

    #[test]
    fn pooled_percentiles_come_from_the_merged_histogram() {
        // Two replications, one fast (1 ms) and one slow (100 ms): the pooled median lies in
        // one of the two modes, never at the mean of the per-replication medians (50.5 ms).
        // A third started nothing and takes no part in the latency spread.
        let f = fold(&[
            run(60, 60, &[(1, 60)]),
            run(40, 40, &[(100, 40)]),
            run(0, 0, &[]),
        ]);
        let (m, h) = (f.metrics.success_latency_ms, f.ci95.success_latency_ms);
        assert!((m.p50 - 1.0).abs() < 0.01, "{}", m.p50);
        assert!((m.p90 - 100.0).abs() < 0.1, "{}", m.p90);
        assert!((m.mean - 40.6).abs() < 1e-9);
        // Over the two with successes: means 1 and 100, so 12.706 * 99 / 2.
        assert!((h.mean - 12.706 * 49.5).abs() < 0.1, "{}", h.mean);
        assert!(h.p50 > 0.0, "the spread of the two replications");
        assert_eq!(f.metrics.latency_ms, m, "all requests here succeeded");
        let bins: f64 = f.success_latency_bins.iter().sum();
        assert!(
            (bins - 100.0 / 3.0).abs() < 1e-9,
            "bins are per replication"
        );
    }

    proptest::proptest! {
        /// The running moments give the mean of all samples bit for bit and the two-pass
        /// half-width up to rounding.
        #[test]
        fn moments_agree_with_all_samples_at_once(
            xs in proptest::collection::vec(-1e9..1e9f64, 1..200),
            zeros in 0usize..5,
        ) {
            let mut xs = xs;
            xs.extend(std::iter::repeat_n(0.0, zeros));
            let mut m = Moments::default();
            for &x in &xs {
                m.push(x);
            }
            let (a, b) = (m.estimate(), Estimate::from_samples(&xs));
            proptest::prop_assert_eq!(a.mean.to_bits(), b.mean.to_bits());
            let scale = b.half_width.abs().max(1e-300);
            proptest::prop_assert!((a.half_width - b.half_width).abs() / scale < 1e-9,
                "{} vs {}", a.half_width, b.half_width);
        }
    }

    /// One series of `buckets` 1 s buckets with a queue of `queue` and one attempt in each.
    fn series(buckets: u64, queue: u32) -> TimeSeries {
        use crate::engine::SimTime;
        use crate::metrics::series::Gauges;
        let mut s = TimeSeries::new(SimDuration::from_secs(1));
        for b in 0..buckets {
            s.tick(SimTime(b * 1_000_000_000 + 1), || Gauges {
                queue_len: queue,
                ..Gauges::default()
            });
            s.add(Column::Attempts);
        }
        s.close(Gauges {
            queue_len: queue,
            ..Gauges::default()
        });
        s
    }

    #[test]
    fn a_replication_that_ended_holds_its_last_state_and_counts_nothing() {
        let (short, long) = (series(2, 4), series(5, 8));
        let (_, rows) = aggregate_series(&[&short, &long]);
        assert_eq!(rows.len(), 5);
        let queue = |i: usize| rows[i][Column::QueueLen as usize];
        let attempts = |i: usize| rows[i][Column::Attempts as usize];
        assert_eq!(
            queue(4),
            6.0,
            "the ended run keeps its last queue (4), not an empty one"
        );
        assert_eq!(
            attempts(4),
            0.5,
            "counts still average over every replication"
        );
        let total: f64 = rows.iter().map(|r| r[Column::Attempts as usize]).sum();
        assert_eq!(total, 3.5, "counts sum to the mean total");
    }

    /// The mean of series all at once, as it was computed before series were folded one at
    /// a time: every series merged to the widest first, then `value * scale / n` summed in
    /// series order.
    fn all_at_once(series: &[&TimeSeries]) -> (SimDuration, Vec<[f64; COLUMNS]>) {
        let width = series.iter().map(|s| s.bucket()).max().unwrap_or_default();
        let aligned: Vec<TimeSeries> = series
            .iter()
            .map(|s| {
                let mut s = (*s).clone();
                while s.bucket() < width {
                    s.coarsen();
                }
                s
            })
            .collect();
        let len = aligned.iter().map(|s| s.rows().len()).max().unwrap_or(0);
        let n = aligned.len().max(1) as f64;
        let rows = (0..len)
            .map(|i| {
                let mut out = [0.0; COLUMNS];
                for s in &aligned {
                    let rows = s.rows();
                    let (row, ended) = match rows.get(i) {
                        Some(row) => (row, false),
                        None => (rows.last().unwrap(), true),
                    };
                    for ((o, v), col) in out.iter_mut().zip(row).zip(Column::ALL) {
                        if !ended || col.is_state() {
                            *o += f64::from(*v) * col.scale() / n;
                        }
                    }
                }
                out
            })
            .collect();
        (width, rows)
    }

    /// A series of `buckets` 1 s buckets with irregular counts and states, merged `merges`
    /// times.
    fn irregular(buckets: u64, seed: u32, merges: u32) -> TimeSeries {
        use crate::engine::SimTime;
        use crate::metrics::series::Gauges;
        let mut s = TimeSeries::new(SimDuration::from_secs(1));
        for b in 0..buckets {
            let x = (b as u32 + 1).wrapping_mul(seed) % 7;
            s.tick(SimTime(b * 1_000_000_000 + 1), || Gauges {
                queue_len: x,
                in_flight: x * 3 + 1,
                budget_level_ppm: 333_333 * (x % 3),
                ..Gauges::default()
            });
            for _ in 0..x {
                s.add(Column::Attempts);
                s.add(Column::Succeeded);
            }
        }
        s.close(Gauges {
            queue_len: seed % 5,
            ..Gauges::default()
        });
        for _ in 0..merges {
            s.coarsen();
        }
        s
    }

    #[test]
    fn series_folded_one_at_a_time_equal_all_at_once() {
        // Same widths, lengths rising and falling: bit for bit.
        let same = [
            irregular(3, 5, 0),
            irregular(9, 11, 0),
            irregular(1, 3, 0),
            irregular(12, 13, 0),
            irregular(7, 17, 0),
        ];
        let refs: Vec<&TimeSeries> = same.iter().collect();
        assert_eq!(aggregate_series(&refs), all_at_once(&refs));
        // A wider series after narrower ones: the same up to rounding.
        let mixed = [irregular(9, 5, 0), irregular(11, 7, 1), irregular(30, 3, 2)];
        let refs: Vec<&TimeSeries> = mixed.iter().collect();
        let ((w1, a), (w2, b)) = (aggregate_series(&refs), all_at_once(&refs));
        assert_eq!((w1, a.len()), (w2, b.len()));
        for (x, y) in a.iter().zip(&b) {
            for (u, v) in x.iter().zip(y) {
                assert!((u - v).abs() <= 1e-9 * v.abs().max(1.0), "{u} vs {v}");
            }
        }
    }
}
