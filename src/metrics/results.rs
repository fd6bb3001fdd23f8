//! The results of a run as values: an experiment's sweep points, each point's variants, and
//! each variant's numbers, series and typical runs, folded over its replications. The runner
//! makes them, a shard merge remakes them, `report DIR` reads them back from a run folder,
//! and every renderer reads them. No I/O here.

use serde_json::Value;

use super::series::COLUMNS;
use super::{Estimate, Metrics, TruncatedReplication};
use crate::engine::SimDuration;

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
    /// Mean time series over replications.
    pub series: Vec<[f64; COLUMNS]>,
    /// Per bucket of `series`, the p50 and p99 of the answered requests (successful, or
    /// degraded by a fallback) that ended in it, pooled over replications; `None` for a bucket
    /// without one. As long as `series`.
    pub latency: Vec<Option<BucketLatency>>,
    /// Mean successful logical requests per latency bin over replications.
    pub success_latency_bins: Vec<f64>,
    /// Width of a time-series bucket.
    pub bucket: SimDuration,
    /// Replications that stopped early, with the reason.
    pub truncations: Vec<TruncatedReplication>,
    /// For a variant whose replications split between recovering and staying collapsed, a
    /// typical run of each kind (see [`crate::runner::examples`]); empty otherwise, and at most two, so
    /// memory does not grow with replications.
    pub examples: Vec<ExampleRun>,
    /// Each service's mean load over time, in the order of the scenario's services (the
    /// entry first); empty for a run of one service, whose load is the main series'.
    pub service_series: Vec<ServiceSeries>,
    /// Each replica's mean load over time, in the order of `metrics.replicas` (service by
    /// service, replica by replica): the attempts sent to it per bucket, and its queue and
    /// attempts in service at each bucket's end. Empty without replicas.
    pub replica_series: Vec<ServiceSeries>,
}

/// One service's mean load over time: the columns of [`VariantResult::series`], of which
/// `attempts`, `served`, `wasted`, `queue_len` and `in_service` are filled, and the response
/// time of the attempts it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSeries {
    /// Width of a time-series bucket.
    pub bucket: SimDuration,
    /// The mean rows, in the units of [`VariantResult::series`].
    pub rows: Vec<[f64; COLUMNS]>,
    /// Per bucket, the p50 and p99 of the time from an attempt's arrival at the service to
    /// its answer, over the attempts it served and answered with a success (or degraded)
    /// while their caller still waited, pooled over replications; `None` for a bucket
    /// without one. As long as `rows`.
    pub latency: Vec<Option<BucketLatency>>,
}

/// The p50 and p99 of the latencies recorded in one time bucket, in milliseconds: each the
/// upper edge of its latency bin ([`super::latency_bin_upper_ms`], 12 % wide).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketLatency {
    /// The median.
    pub p50_ms: f64,
    /// The 99th percentile.
    pub p99_ms: f64,
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

impl VariantResult {
    /// Whether any replication stopped early: its numbers cover only what finished, so it
    /// takes part in no comparison.
    pub fn is_truncated(&self) -> bool {
        self.metrics.truncated > 0.0
    }

    /// For a call graph, the share of logical requests a fallback answered: the mean over
    /// replications of `degraded / requests`, with its 95 % half-width. `None` for a single
    /// server.
    pub fn degraded_rate(&self) -> Option<Estimate> {
        Some(Estimate {
            mean: self.metrics.degraded_rate?,
            half_width: self.ci95.degraded_rate?,
        })
    }
}
