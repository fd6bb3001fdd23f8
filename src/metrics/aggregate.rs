//! Means and 95 % confidence half-widths over replications.
//!
//! Replications are independent, so each metric's mean gets a Student-t interval:
//! `t(0.975, n-1) * s / sqrt(n)`. With one replication no interval can be estimated and the
//! half-width is reported as 0.

use serde_json::{Map, Value};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::series::{COLUMNS, Column, TimeSeries};
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

/// Averages metric documents of identical shape leaf by leaf. Returns the means and, in the
/// same shape, the 95 % half-widths.
pub fn aggregate(samples: &[Value]) -> (Value, Value) {
    match samples.first() {
        Some(Value::Object(first)) => {
            let mut means = Map::new();
            let mut halves = Map::new();
            for key in first.keys() {
                let column: Vec<Value> = samples.iter().map(|s| s[key].clone()).collect();
                let (m, h) = aggregate(&column);
                means.insert(key.clone(), m);
                halves.insert(key.clone(), h);
            }
            (Value::Object(means), Value::Object(halves))
        }
        Some(Value::Number(_)) => {
            let xs: Vec<f64> = samples.iter().filter_map(Value::as_f64).collect();
            let e = Estimate::from_samples(&xs);
            (number(e.mean), number(e.half_width))
        }
        Some(other) => (other.clone(), Value::Null),
        None => (Value::Null, Value::Null),
    }
}

/// A JSON number; non-finite values (which cannot be JSON) become 0.
fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::from(0), Value::Number)
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
    use serde_json::json;

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t_quantile_975(1) - 12.706).abs() < 1e-3);
        assert!((t_quantile_975(9) - 2.262).abs() < 1e-3);
        assert!((t_quantile_975(1000) - 1.962).abs() < 1e-3);
    }

    #[test]
    fn aggregates_leaf_by_leaf() {
        let (m, h) = aggregate(&[
            json!({"a": 1, "b": {"c": 2.0}}),
            json!({"a": 3, "b": {"c": 2.0}}),
        ]);
        assert_eq!(m, json!({"a": 2.0, "b": {"c": 2.0}}));
        assert!((h["a"].as_f64().unwrap() - 12.706).abs() < 1e-2);
        assert_eq!(h["b"]["c"], json!(0.0));
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
