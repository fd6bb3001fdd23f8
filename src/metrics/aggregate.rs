//! Means and 95 % confidence half-widths over replications.
//!
//! Replications are independent, so each metric's mean gets a Student-t interval:
//! `t(0.975, n-1) * s / sqrt(n)`. With one replication no interval can be estimated and the
//! half-width is reported as 0.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::series::{COLUMNS, Column, TimeSeries};
use super::{Latency, LatencyHistogram, Metric, Metrics};
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

/// Averages replications' metrics: every per-replication metric's mean and 95 % half-width
/// ([`Metric::PER_REPLICATION`]). Latency is then replaced by [`pool_latency`]; recovery is
/// summarised on its own terms.
pub fn aggregate(samples: &[Metrics]) -> (Metrics, Metrics) {
    let mut mean = Metrics::default();
    let mut half = Metrics::default();
    let mut xs = Vec::with_capacity(samples.len());
    for k in Metric::PER_REPLICATION {
        xs.clear();
        xs.extend(samples.iter().map(|s| k.value(s)));
        let e = Estimate::from_samples(&xs);
        k.set(&mut mean, finite(e.mean));
        k.set(&mut half, finite(e.half_width));
    }
    (mean, half)
}

/// Pooled latency: the headline numbers come from the histogram of every replication's
/// requests merged (so a percentile is the one of the distribution the figures draw), and the
/// half-widths from the spread of the per-replication values, over the replications that had
/// such requests.
pub fn pool_latency<'a>(
    pooled: &LatencyHistogram,
    per_replication: impl Iterator<Item = (&'a Latency, u64)>,
) -> (Latency, Latency) {
    let mut cols: [Vec<f64>; 6] = Default::default();
    for (l, n) in per_replication {
        if n > 0 {
            for (c, x) in cols
                .iter_mut()
                .zip([l.mean, l.p50, l.p90, l.p99, l.p999, l.max])
            {
                c.push(x);
            }
        }
    }
    let h = |i: usize| finite(Estimate::from_samples(&cols[i]).half_width);
    let half = Latency {
        mean: h(0),
        p50: h(1),
        p90: h(2),
        p99: h(3),
        p999: h(4),
        max: h(5),
    };
    (pooled.summary(), half)
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
    let width = series.iter().map(|s| s.bucket()).max().unwrap_or_default();
    let aligned: Vec<std::borrow::Cow<TimeSeries>> = series
        .iter()
        .map(|s| {
            if s.bucket() == width {
                std::borrow::Cow::Borrowed(*s)
            } else {
                let mut s = (*s).clone();
                while s.bucket() < width {
                    s.coarsen();
                }
                std::borrow::Cow::Owned(s)
            }
        })
        .collect();
    let len = aligned.iter().map(|s| s.rows().len()).max().unwrap_or(0);
    let n = aligned.len().max(1) as f64;
    let zero = [0; COLUMNS];
    let rows = (0..len)
        .map(|i| {
            let mut out = [0.0; COLUMNS];
            for s in &aligned {
                let rows = s.rows();
                let (row, ended) = match rows.get(i) {
                    Some(row) => (row, false),
                    None => (rows.last().unwrap_or(&zero), true),
                };
                for ((o, v), col) in out.iter_mut().zip(row).zip(Column::ALL) {
                    // After its end a run counts nothing and keeps its last state.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t_quantile_975(1) - 12.706).abs() < 1e-3);
        assert!((t_quantile_975(9) - 2.262).abs() < 1e-3);
        assert!((t_quantile_975(1000) - 1.962).abs() < 1e-3);
    }

    #[test]
    fn aggregates_every_metric() {
        let mut a = Metrics::default();
        let mut b = Metrics::default();
        a.requests = 1.0;
        b.requests = 3.0;
        a.server.served = 2.0;
        b.server.served = 2.0;
        let (m, h) = aggregate(&[a, b]);
        assert_eq!(m.requests, 2.0);
        assert!((h.requests - 12.706).abs() < 1e-2);
        assert_eq!((m.server.served, h.server.served), (2.0, 0.0));
    }

    #[test]
    fn pooled_percentiles_come_from_the_merged_histogram() {
        // Two replications, one fast (1 ms) and one slow (100 ms): the pooled median lies in
        // one of the two modes, never at the mean of the per-replication medians (50.5 ms).
        let mut fast = LatencyHistogram::default();
        let mut slow = LatencyHistogram::default();
        for _ in 0..60 {
            fast.record(SimDuration::from_millis(1));
        }
        for _ in 0..40 {
            slow.record(SimDuration::from_millis(100));
        }
        let mut pooled = fast.clone();
        pooled.merge(&slow);
        let (f, s) = (fast.summary(), slow.summary());
        let (m, h) = pool_latency(
            &pooled,
            [(&f, 60), (&s, 40), (&Latency::default(), 0)].into_iter(),
        );
        assert!((m.p50 - 1.0).abs() < 0.01, "{}", m.p50);
        assert!((m.p90 - 100.0).abs() < 0.1, "{}", m.p90);
        assert!((m.mean - 40.6).abs() < 1e-9);
        assert!(h.p50 > 0.0, "the spread of the two replications");
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
}
