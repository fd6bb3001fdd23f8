//! The metrics of a run as types: [`Metrics`] is one replication's numbers, and also a
//! variant's means and its 95 % half-widths (the same shape three times), serialised as
//! summary.json's `metrics` and `ci95` objects. [`Metric`] is the one registry of what each
//! number is called, its unit, how it is printed and which direction is better; the terminal
//! table, report.md, sweep.csv and every figure read metrics through it, so a metric that does
//! not exist is a compile error, never a silent 0.
//!
//! No I/O here: these are values.

use serde::{Deserialize, Serialize};

use crate::model::Outcome;

/// Latency of a set of logical requests, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile: 10 % of requests take longer.
    pub p90: f64,
    /// 99th percentile: 1 % of requests take longer.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

/// Declares [`Failed`] with one count per failure outcome and derives its accessors from
/// the same list, so that a field and its accessor arms cannot drift apart. Fields serialise
/// in list order, which is summary.json's order.
macro_rules! failed {
    (
        $(#[$struct_attr:meta])*
        pub struct Failed {
            $(
                $(#[$attr:meta])*
                $field:ident: $variant:ident,
            )*
        }
    ) => {
        $(#[$struct_attr])*
        pub struct Failed {
            $(
                $(#[$attr])*
                pub $field: f64,
            )*
        }

        impl Failed {
            /// The count for failure outcome `o` (0 for `Success` and `Degraded`, which are
            /// not failures).
            pub fn get(&self, o: Outcome) -> f64 {
                match o {
                    Outcome::Success | Outcome::Degraded => 0.0,
                    $(Outcome::$variant => self.$field,)*
                }
            }

            fn get_mut(&mut self, o: Outcome) -> Option<&mut f64> {
                Some(match o {
                    Outcome::Success | Outcome::Degraded => return None,
                    $(Outcome::$variant => &mut self.$field,)*
                })
            }
        }
    };
}

failed! {
    /// Logical requests that ended in each kind of failure.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Failed {
        /// Last attempt answered `error`.
        error: Error,
        /// Last attempt rejected by a full server.
        rejected: Rejected,
        /// Last attempt refused by the server's rate limit.
        throttled: Throttled,
        /// Last attempt timed out.
        timeout: Timeout,
        /// Last attempt lost an optimistic-concurrency write.
        conflict: Conflict,
        /// A bad request (4xx), never retried.
        permanent: Permanent,
        /// A retry budget denied the retry.
        budget_exhausted: BudgetExhausted,
        /// A circuit breaker refused the attempt.
        breaker_open: BreakerOpen,
        /// The request's deadline passed.
        deadline_exceeded: DeadlineExceeded,
        /// A full bulkhead refused a call between services (absent when none did).
        #[serde(default, skip_serializing_if = "is_zero")]
        bulkhead_full: BulkheadFull,
        /// The client's adaptive throttle rejected the request locally (absent when none was).
        #[serde(default, skip_serializing_if = "is_zero")]
        throttled_locally: ThrottledLocally,
    }
}

/// Whether a count is zero, for counts left out of summary.json when they are.
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Failed {
    /// Sets the count for failure outcome `o` (ignored for `Success`).
    pub fn set(&mut self, o: Outcome, x: f64) {
        if let Some(slot) = self.get_mut(o) {
            *slot = x;
        }
    }

    /// Every failure.
    pub fn total(&self) -> f64 {
        Outcome::FAILURES.iter().map(|o| self.get(*o)).sum()
    }
}

/// What the circuit breakers did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerMetrics {
    /// Attempts refused.
    pub refusals: f64,
    /// Times a breaker opened.
    pub openings: f64,
    /// State changes.
    pub transitions: f64,
    /// Share of breaker-time spent open, in [0, 1].
    pub open_fraction: f64,
}

/// How a variant came through its triggers, counted over replications (see
/// `metrics::recovery`). Recovery times exist only when some replication recovered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryMetrics {
    /// Replications judged.
    pub replications: f64,
    /// Replications whose goodput came back.
    pub recovered: f64,
    /// `recovered / replications`; its ci95 is the larger side of the Wilson interval.
    pub recovered_fraction: f64,
    /// Lower end of the 95 % Wilson interval of the recovered fraction.
    pub recovered_fraction_lower: f64,
    /// Upper end of the 95 % Wilson interval of the recovered fraction.
    pub recovered_fraction_upper: f64,
    /// Median recovery time over the replications that recovered, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_recovery_s: Option<f64>,
    /// 90th percentile of the recovery times, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_recovery_s: Option<f64>,
    /// Longest recovery time, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_recovery_s: Option<f64>,
    /// Goodput per second before the first trigger (mean over replications).
    pub baseline_per_s: f64,
    /// Lowest goodput after the trigger started, relative to the baseline (the depth of the
    /// dip; 1 = no dip), over 5 s windows; mean over replications.
    pub dip_fraction: f64,
    /// Time after the first trigger started that goodput stayed under 90 % of the baseline,
    /// in seconds (whole buckets); mean over replications.
    pub below_90_s: f64,
    /// Largest attempts per logical request started, over 5 s windows of the episode; mean
    /// over replications.
    pub peak_amplification: f64,
    /// Wasted / served over the episode; mean over replications.
    pub wasted_fraction: f64,
    /// Replications with answered requests before the first trigger: those whose p99 is
    /// judged.
    pub p99_judged: f64,
    /// Of those, the replications whose p99 of answered requests came back within 10 % of
    /// its level before the trigger.
    pub p99_back: f64,
    /// The p99 of answered requests before the first trigger, in milliseconds; mean over the
    /// judged replications (absent when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_before_ms: Option<f64>,
    /// Median time after the last trigger ended until p99 was back, over the replications
    /// whose p99 came back, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_p99_back_s: Option<f64>,
}

/// The metrics of one replication, or a variant's means or 95 % half-widths over its
/// replications (summary.json's `metrics` and `ci95`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// Logical requests started.
    pub requests: f64,
    /// Logical requests that succeeded.
    pub succeeded: f64,
    /// `succeeded / requests`.
    pub success_rate: f64,
    /// Failed logical requests / requests: with `success_rate` it adds up to 1 unless a
    /// truncated run left requests in flight.
    pub failure_rate: f64,
    /// Failed logical requests by outcome.
    pub failed: Failed,
    /// Attempts that reached the entry service (the work).
    pub attempts: f64,
    /// First attempts sent.
    pub first_attempts: f64,
    /// Retries sent.
    pub retries: f64,
    /// Hedges sent (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hedges: f64,
    /// Requests whose answer came from a hedge (absent when none did).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hedge_wins: f64,
    /// Attempts the clients' rate limiters held back for a token (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub token_waits: f64,
    /// Their mean wait for a token, in ms (absent when none waited).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub token_wait_ms: f64,
    /// Attempts at the entry service per logical request.
    pub amplification: f64,
    /// Latency of every logical request that ended, successes and failures alike.
    pub latency_ms: Latency,
    /// Latency of the logical requests that succeeded.
    pub success_latency_ms: Latency,
    /// Time until a failed logical request gave up (its latency).
    pub failure_latency_ms: Latency,
    /// When the last logical request ended (the completion time), in ms.
    pub makespan_ms: f64,
    /// Retries a budget denied.
    pub budget_denials: f64,
    /// What the breakers did.
    pub breaker: BreakerMetrics,
    /// Answers that arrived after their client had given up.
    pub late_replies: f64,
    /// Attempts that timed out.
    pub timeouts: f64,
    /// 1 when the replication hit a limit and stopped early; as a mean, the share truncated.
    pub truncated: f64,
    /// Recovery after the triggers, for a variant whose scenario has some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryMetrics>,
    /// Logical requests answered by a fallback: neither succeeded nor failed (0 where no
    /// call has a fallback).
    pub degraded: f64,
    /// The share of logical requests a fallback answered, in a variant's means and
    /// half-widths only (absent from a replication's): the mean over replications of
    /// `degraded / requests`, so that the means of the success, degraded and failure shares
    /// add up as each replication's do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_rate: Option<f64>,
    /// Per service, the entry first: never empty in a run's document (a single server is
    /// the entry alone). The `server.*` metrics read the entry.
    pub services: Vec<super::ServiceMetrics>,
    /// Per call edge between services, by caller then call order; empty when no service
    /// calls another.
    #[serde(default)]
    pub calls: Vec<super::CallMetrics>,
    /// Per replica of each service with more than one (`graph.services[i].replicas`),
    /// service by service, replica by replica: each replica's numbers as a service's (the
    /// service's own, in `services`, are its replicas' added up). Absent when no service has
    /// replicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<super::ServiceMetrics>,
    /// Per group of clients, in the scenario's order, where the clients form more than one
    /// group: each group's requests, success and attempts per request, and the latency of
    /// its answered requests. Absent for a single group, whose numbers are the totals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<super::GroupMetrics>,
}

impl Metrics {
    /// The entry service's numbers: the service the clients call.
    ///
    /// # Panics
    ///
    /// On a document without services, which no run makes (only `Metrics::default()`).
    pub fn entry(&self) -> &super::ServiceMetrics {
        &self.services[0]
    }
}

/// The unit a metric is printed in, after its scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count.
    Count,
    /// A share, printed as a percentage.
    Percent,
    /// A ratio, printed with an `x`.
    Times,
    /// Milliseconds.
    Millis,
    /// Seconds.
    Seconds,
    /// Events per second.
    PerSecond,
}

impl Unit {
    /// The unit's suffix in a table header or axis title (`%`, `ms`, ...), empty for counts.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Percent => "%",
            Unit::Times => "x",
            Unit::Millis => "ms",
            Unit::Seconds => "s",
            Unit::PerSecond => "/s",
        }
    }
}

impl Unit {
    /// A scaled mean and 95 % half-width as tables print them: `mean ± half`, the mean alone
    /// without an interval, or where the interval would cross a bound the value cannot (below
    /// 0, above 100 % for a share) the interval cut there in brackets, `19551 [0, 46981]`. A
    /// share has the decimals of [`share_decimals`].
    pub fn estimate_text(self, decimals: usize, (m, h): (f64, f64), with_ci: bool) -> String {
        let d = if self == Unit::Percent {
            share_decimals(m, decimals)
        } else {
            decimals
        };
        let top = if self == Unit::Percent {
            100.0
        } else {
            f64::INFINITY
        };
        match (with_ci, m - h < 0.0 || m + h > top) {
            (false, _) => format!("{m:.d$}"),
            (true, false) => format!("{m:.d$} ± {h:.d$}"),
            (true, true) => format!(
                "{m:.d$} [{:.d$}, {:.d$}]",
                (m - h).max(0.0),
                (m + h).min(top)
            ),
        }
    }
}

/// The decimals that print a share `x` (in %) without rounding it onto 0 or 100 unless it is
/// that (to within float noise): `decimals`, or as many more as it takes to show how far it
/// is from the bound (0.9 timeouts in 12,000 requests fail 0.008 %, not 0.0 %).
pub fn share_decimals(x: f64, decimals: usize) -> usize {
    if x.min(100.0 - x) < 1e-9 {
        return decimals;
    }
    (decimals..decimals + 12)
        .find(|&d| !matches!(format!("{x:.d$}").parse::<f64>(), Ok(0.0 | 100.0)))
        .unwrap_or(decimals + 12)
}

/// Which direction of a metric is better, for findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Lower is better (work, latency, failures).
    Lower,
    /// Higher is better (success, recovery).
    Higher,
    /// Neither: a description of the setup (requests started).
    Neither,
}

/// What a scenario must have for a count to be made at all: where it has not, a table prints
/// `-` rather than a zero, so that a zero means the policy was there and did nothing. The
/// report decides it against the scenario of each variant, service or call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: every run makes the count.
    Nothing,
    /// A retry budget on the calls counted.
    Budget,
    /// A circuit breaker on the calls counted.
    Breaker,
    /// Hedging on the calls counted.
    Hedge,
    /// A caller that hedges and cancels the attempts that lost the race.
    HedgeCancel,
    /// An adaptive throttle on the calls counted.
    Throttle,
    /// An adaptive throttle on any call of the run: a local rejection anywhere fails the
    /// request.
    ThrottleAnywhere,
    /// A caller whose call is not idempotent.
    NonIdempotent,
    /// A caller that sends idempotency keys.
    IdempotencyKey,
    /// A CoDel discipline at the service.
    Codel,
    /// A rate limit at the service.
    RateLimit,
    /// A bulkhead on the calls counted.
    Bulkhead,
    /// A bulkhead on any call of the run: a full one anywhere fails the request.
    BulkheadAnywhere,
    /// A fallback on any call of the run: a call that fails for good is answered by it, and
    /// the request ends degraded.
    Fallback,
    /// Outlier detection over the service's replicas.
    OutlierDetection,
    /// An AWS adaptive-mode client rate limiter on the calls counted.
    RateLimiter,
}

/// One metric: where it lives in [`Metrics`], what it is called and how it is printed.
#[derive(Clone, Copy)]
pub struct Metric {
    /// Dotted path in summary.json's `metrics` (and sweep.csv's column name).
    pub key: &'static str,
    /// Short label for table headers and axis titles, without the unit.
    pub label: &'static str,
    /// The unit after `scale`.
    pub unit: Unit,
    /// Factor from the stored value to the printed one (100 for shares printed in %, 1e-3 for
    /// milliseconds printed in seconds).
    pub scale: f64,
    /// Decimals printed.
    pub decimals: usize,
    /// Which direction is better.
    pub better: Better,
    /// What a scenario needs for the count to be made at all.
    pub needs: Needs,
    get: fn(&Metrics) -> Option<f64>,
    /// The stored leaf itself, whatever the guard says (for half-widths, whose document has
    /// no counts of its own to guard on).
    raw: fn(&Metrics) -> f64,
    set: fn(&mut Metrics, f64),
}

impl std::fmt::Debug for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key)
    }
}

impl PartialEq for Metric {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Metric {
    /// The stored value (unscaled), or `None` where the metric does not apply (a recovery
    /// time when nothing recovered, recovery without triggers).
    pub fn get(&self, m: &Metrics) -> Option<f64> {
        (self.get)(m)
    }

    /// The stored value, 0 where it does not apply.
    pub fn value(&self, m: &Metrics) -> f64 {
        self.get(m).unwrap_or(0.0)
    }

    /// The printed value: stored value times `scale`.
    pub fn scaled(&self, m: &Metrics) -> Option<f64> {
        self.get(m).map(|x| x * self.scale)
    }

    /// The scaled mean and 95 % half-width of a variant, or `None` where the metric does not
    /// apply to it. The half-width is read from `ci95` at the same leaf; whether the metric
    /// applies is decided by the means.
    pub fn estimate(&self, mean: &Metrics, ci95: &Metrics) -> Option<(f64, f64)> {
        let m = self.get(mean)?;
        let h = if self.get(ci95).is_some() {
            self.value(ci95)
        } else {
            (self.raw)(ci95)
        };
        Some((m * self.scale, h * self.scale))
    }

    /// Sets the stored value (for the per-replication metrics; ignored for recovery).
    pub fn set(&self, m: &mut Metrics, x: f64) {
        (self.set)(m, x)
    }

    /// The label with its unit: `p99 latency (ms)`, `success (%)`.
    pub fn title(&self) -> String {
        match self.unit {
            Unit::Count => self.label.to_string(),
            u => format!("{} ({})", self.label, u.suffix()),
        }
    }

    /// A printed value with the metric's decimals.
    pub fn format(&self, scaled: f64) -> String {
        let d = self.decimals;
        format!("{scaled:.d$}")
    }

    /// `mean ± half` with the metric's decimals ([`Unit::estimate_text`]), the mean alone
    /// without an interval, or `-` where the metric does not apply (no request succeeded).
    pub fn format_estimate(&self, mean: &Metrics, ci95: &Metrics, with_ci: bool) -> String {
        self.estimate(mean, ci95).map_or("-".to_string(), |e| {
            self.unit.estimate_text(self.decimals, e, with_ci)
        })
    }
}

/// A [`Metric`] whose value `get` reads (`None` where it does not apply), `raw` reads as a
/// number (0 where it does not apply) and `set` writes: the one literal the metric macros
/// below fill in.
macro_rules! metric_at {
    ($key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident; get: $get:expr, raw: $raw:expr, set: $set:expr) => {
        Metric {
            key: $key,
            label: $label,
            unit: Unit::$unit,
            scale: $scale,
            decimals: $dec,
            better: Better::$better,
            needs: Needs::Nothing,
            get: $get,
            raw: $raw,
            set: $set,
        }
    };
}

macro_rules! metric {
    // A metric that exists only when `$guard` holds (latency of successes when some request
    // succeeded): absent, not 0, otherwise.
    (if $guard:ident; $key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident, $($f:ident).+) => {
        metric_at!($key, $label, $unit, $scale, $dec, $better;
            get: |m| $guard(m).then_some(m.$($f).+),
            raw: |m| m.$($f).+,
            set: |m, x| m.$($f).+ = x)
    };
    ($key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident, $($f:ident).+) => {
        metric_at!($key, $label, $unit, $scale, $dec, $better;
            get: |m| Some(m.$($f).+),
            raw: |m| m.$($f).+,
            set: |m, x| m.$($f).+ = x)
    };
}

/// A metric of the entry service: its key is `server.<field>` (a sweep.csv column and a
/// metric name on the command line), its value lives in `services[0]`. A document without
/// services has none.
macro_rules! entry_metric {
    ($key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident, $f:ident) => {
        metric_at!($key, $label, $unit, $scale, $dec, $better;
            get: |m| m.services.first().map(|s| s.$f),
            raw: |m| m.services.first().map_or(0.0, |s| s.$f),
            set: |m, x| {
                if let Some(s) = m.services.first_mut() {
                    s.$f = x;
                }
            })
    };
}

macro_rules! recovery_metric {
    ($key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident, $f:ident) => {
        metric_at!($key, $label, $unit, $scale, $dec, $better;
            get: |m| m.recovery.as_ref().map(|r| r.$f),
            raw: |m| m.recovery.as_ref().map_or(0.0, |r| r.$f),
            set: |_, _| {})
    };
    ($key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident, ? $f:ident) => {
        metric_at!($key, $label, $unit, $scale, $dec, $better;
            get: |m| m.recovery.as_ref().and_then(|r| r.$f),
            raw: |m| m.recovery.as_ref().and_then(|r| r.$f).unwrap_or(0.0),
            set: |_, _| {})
    };
}

fn any_success(m: &Metrics) -> bool {
    m.succeeded > 0.0
}

fn any_failure(m: &Metrics) -> bool {
    m.failed.total() > 0.0
}

fn any_ended(m: &Metrics) -> bool {
    any_success(m) || any_failure(m)
}

/// The registry. Each constant is one metric; [`Metric::PER_REPLICATION`] and
/// [`Metric::RECOVERY`] list them in summary.json's order.
#[rustfmt::skip]
impl Metric {
    /// Logical requests started.
    pub const REQUESTS: Metric = metric!("requests", "requests", Count, 1.0, 0, Neither, requests);
    /// Logical requests that succeeded.
    pub const SUCCEEDED: Metric = metric!("succeeded", "succeeded", Count, 1.0, 0, Higher, succeeded);
    /// Success rate.
    pub const SUCCESS_RATE: Metric = metric!("success_rate", "success", Percent, 100.0, 1, Higher, success_rate);
    /// Failure rate.
    pub const FAILURE_RATE: Metric = metric!("failure_rate", "failed", Percent, 100.0, 1, Lower, failure_rate);
    /// Requests that failed with `error`.
    pub const FAILED_ERROR: Metric = metric!("failed.error", "failed: error", Count, 1.0, 0, Lower, failed.error);
    /// Requests that failed with `rejected`.
    pub const FAILED_REJECTED: Metric = metric!("failed.rejected", "failed: rejected", Count, 1.0, 0, Lower, failed.rejected);
    /// Requests that failed with `throttled`.
    pub const FAILED_THROTTLED: Metric = metric!("failed.throttled", "failed: throttled", Count, 1.0, 0, Lower, failed.throttled);
    /// Requests that failed with `timeout`.
    pub const FAILED_TIMEOUT: Metric = metric!("failed.timeout", "failed: timeout", Count, 1.0, 0, Lower, failed.timeout);
    /// Requests that failed with `conflict`.
    pub const FAILED_CONFLICT: Metric = metric!("failed.conflict", "failed: conflict", Count, 1.0, 0, Lower, failed.conflict);
    /// Requests that failed with `permanent`.
    pub const FAILED_PERMANENT: Metric = metric!("failed.permanent", "failed: permanent", Count, 1.0, 0, Lower, failed.permanent);
    /// Requests that failed with `budget_exhausted`.
    pub const FAILED_BUDGET_EXHAUSTED: Metric = metric!("failed.budget_exhausted", "failed: budget exhausted", Count, 1.0, 0, Lower, failed.budget_exhausted);
    /// Requests that failed with `breaker_open`.
    pub const FAILED_BREAKER_OPEN: Metric = metric!("failed.breaker_open", "failed: breaker open", Count, 1.0, 0, Lower, failed.breaker_open);
    /// Requests that failed with `deadline_exceeded`.
    pub const FAILED_DEADLINE_EXCEEDED: Metric = metric!("failed.deadline_exceeded", "failed: deadline exceeded", Count, 1.0, 0, Lower, failed.deadline_exceeded);
    /// Work: attempts at the server.
    pub const ATTEMPTS: Metric = metric!("attempts", "work (attempts)", Count, 1.0, 0, Lower, attempts);
    /// First attempts.
    pub const FIRST_ATTEMPTS: Metric = metric!("first_attempts", "first attempts", Count, 1.0, 0, Neither, first_attempts);
    /// Retries.
    pub const RETRIES: Metric = metric!("retries", "retries", Count, 1.0, 0, Lower, retries);
    /// Amplification.
    pub const AMPLIFICATION: Metric = metric!("amplification", "amplification", Times, 1.0, 3, Lower, amplification);
    /// Latency of every request, mean.
    pub const LATENCY_MEAN: Metric = metric!(if any_ended; "latency_ms.mean", "mean latency, all", Millis, 1.0, 1, Lower, latency_ms.mean);
    /// Latency of every request, p50.
    pub const LATENCY_P50: Metric = metric!(if any_ended; "latency_ms.p50", "p50 latency, all", Millis, 1.0, 1, Lower, latency_ms.p50);
    /// Latency of every request, p90.
    pub const LATENCY_P90: Metric = metric!(if any_ended; "latency_ms.p90", "p90 latency, all", Millis, 1.0, 1, Lower, latency_ms.p90);
    /// Latency of every request, p99.
    pub const LATENCY_P99: Metric = metric!(if any_ended; "latency_ms.p99", "p99 latency, all", Millis, 1.0, 1, Lower, latency_ms.p99);
    /// Latency of every request, p99.9.
    pub const LATENCY_P999: Metric = metric!(if any_ended; "latency_ms.p999", "p99.9 latency, all", Millis, 1.0, 1, Lower, latency_ms.p999);
    /// Latency of every request, max.
    pub const LATENCY_MAX: Metric = metric!(if any_ended; "latency_ms.max", "max latency, all", Millis, 1.0, 1, Lower, latency_ms.max);
    /// Success latency, mean.
    pub const SUCCESS_MEAN: Metric = metric!(if any_success; "success_latency_ms.mean", "mean success latency", Millis, 1.0, 1, Lower, success_latency_ms.mean);
    /// Success latency, p50.
    pub const SUCCESS_P50: Metric = metric!(if any_success; "success_latency_ms.p50", "p50 success latency", Millis, 1.0, 1, Lower, success_latency_ms.p50);
    /// Success latency, p90.
    pub const SUCCESS_P90: Metric = metric!(if any_success; "success_latency_ms.p90", "p90 success latency", Millis, 1.0, 1, Lower, success_latency_ms.p90);
    /// Success latency, p99.
    pub const SUCCESS_P99: Metric = metric!(if any_success; "success_latency_ms.p99", "p99 success latency", Millis, 1.0, 1, Lower, success_latency_ms.p99);
    /// Success latency, p99.9.
    pub const SUCCESS_P999: Metric = metric!(if any_success; "success_latency_ms.p999", "p99.9 success latency", Millis, 1.0, 1, Lower, success_latency_ms.p999);
    /// Success latency, max.
    pub const SUCCESS_MAX: Metric = metric!(if any_success; "success_latency_ms.max", "max success latency", Millis, 1.0, 1, Lower, success_latency_ms.max);
    /// Time to give up, mean.
    pub const FAILURE_MEAN: Metric = metric!(if any_failure; "failure_latency_ms.mean", "mean time to give up", Millis, 1.0, 1, Lower, failure_latency_ms.mean);
    /// Time to give up, p50.
    pub const FAILURE_P50: Metric = metric!(if any_failure; "failure_latency_ms.p50", "p50 time to give up", Millis, 1.0, 1, Lower, failure_latency_ms.p50);
    /// Time to give up, p90.
    pub const FAILURE_P90: Metric = metric!(if any_failure; "failure_latency_ms.p90", "p90 time to give up", Millis, 1.0, 1, Lower, failure_latency_ms.p90);
    /// Time to give up, p99.
    pub const FAILURE_P99: Metric = metric!(if any_failure; "failure_latency_ms.p99", "p99 time to give up", Millis, 1.0, 1, Lower, failure_latency_ms.p99);
    /// Time to give up, p99.9.
    pub const FAILURE_P999: Metric = metric!(if any_failure; "failure_latency_ms.p999", "p99.9 time to give up", Millis, 1.0, 1, Lower, failure_latency_ms.p999);
    /// Time to give up, max.
    pub const FAILURE_MAX: Metric = metric!(if any_failure; "failure_latency_ms.max", "max time to give up", Millis, 1.0, 1, Lower, failure_latency_ms.max);
    /// Completion time: when the last request ended.
    pub const COMPLETION: Metric = metric!("makespan_ms", "completion time", Seconds, 1e-3, 2, Lower, makespan_ms);
    /// Served attempts.
    pub const SERVED: Metric = entry_metric!("server.served", "served", Count, 1.0, 0, Neither, served);
    /// Wasted attempts.
    pub const WASTED: Metric = entry_metric!("server.wasted", "wasted", Count, 1.0, 0, Lower, wasted);
    /// Rejected attempts.
    pub const REJECTED: Metric = entry_metric!("server.rejected", "rejected", Count, 1.0, 0, Lower, rejected);
    /// Throttled attempts.
    pub const THROTTLED: Metric = Metric { needs: Needs::RateLimit, ..entry_metric!("server.throttled", "throttled", Count, 1.0, 0, Lower, throttled) };
    /// Dropped expired attempts.
    pub const EXPIRED_DROPPED: Metric = entry_metric!("server.expired_dropped", "expired dropped", Count, 1.0, 0, Neither, expired_dropped);
    /// Attempts rejected by an outage.
    pub const OUTAGE_REJECTED: Metric = entry_metric!("server.outage_rejected", "outage rejected", Count, 1.0, 0, Neither, outage_rejected);
    /// Attempts dropped by an outage.
    pub const OUTAGE_DROPPED: Metric = entry_metric!("server.outage_dropped", "outage dropped", Count, 1.0, 0, Neither, outage_dropped);
    /// Utilization.
    pub const UTILIZATION: Metric = entry_metric!("server.utilization", "utilization", Percent, 100.0, 1, Neither, utilization);
    /// Longest queue.
    pub const MAX_QUEUE: Metric = entry_metric!("server.max_queue", "longest queue", Count, 1.0, 0, Lower, max_queue);
    /// When the server finished its last service.
    pub const BUSY_UNTIL: Metric = entry_metric!("server.busy_until_ms", "server busy until", Seconds, 1e-3, 2, Lower, busy_until_ms);
    /// Budget denials.
    pub const BUDGET_DENIALS: Metric = Metric { needs: Needs::Budget, ..metric!("budget_denials", "budget denials", Count, 1.0, 0, Neither, budget_denials) };
    /// Breaker refusals.
    pub const BREAKER_REFUSALS: Metric = Metric { needs: Needs::Breaker, ..metric!("breaker.refusals", "breaker refusals", Count, 1.0, 0, Neither, breaker.refusals) };
    /// Breaker openings.
    pub const BREAKER_OPENINGS: Metric = Metric { needs: Needs::Breaker, ..metric!("breaker.openings", "breaker openings", Count, 1.0, 0, Neither, breaker.openings) };
    /// Breaker transitions.
    pub const BREAKER_TRANSITIONS: Metric = Metric { needs: Needs::Breaker, ..metric!("breaker.transitions", "breaker transitions", Count, 1.0, 0, Neither, breaker.transitions) };
    /// Share of time breakers were open.
    pub const BREAKER_OPEN: Metric = Metric { needs: Needs::Breaker, ..metric!("breaker.open_fraction", "breaker open", Percent, 100.0, 1, Neither, breaker.open_fraction) };
    /// Late replies.
    pub const LATE_REPLIES: Metric = metric!("late_replies", "late replies", Count, 1.0, 0, Lower, late_replies);
    /// Timeouts.
    pub const TIMEOUTS: Metric = metric!("timeouts", "timeouts", Count, 1.0, 0, Lower, timeouts);
    /// Share of replications truncated.
    pub const TRUNCATED: Metric = metric!("truncated", "truncated", Percent, 100.0, 0, Lower, truncated);

    /// Recovered share of replications.
    pub const RECOVERED: Metric = recovery_metric!("recovery.recovered_fraction", "recovered", Percent, 100.0, 0, Higher, recovered_fraction);
    /// Median recovery time.
    pub const RECOVERY_MEDIAN: Metric = recovery_metric!("recovery.median_recovery_s", "median recovery", Seconds, 1.0, 1, Lower, ?median_recovery_s);
    /// Depth of the dip.
    pub const RECOVERY_DIP: Metric = recovery_metric!("recovery.dip_fraction", "lowest goodput", Percent, 100.0, 0, Higher, dip_fraction);
    /// Time below 90 %.
    pub const RECOVERY_BELOW_90: Metric = recovery_metric!("recovery.below_90_s", "goodput under 90 %", Seconds, 1.0, 1, Lower, below_90_s);
    /// Peak amplification per logical request during the episode.
    pub const RECOVERY_PEAK: Metric = recovery_metric!("recovery.peak_amplification", "peak amplification", Times, 1.0, 2, Lower, peak_amplification);
    /// Replications judged.
    pub const RECOVERY_REPLICATIONS: Metric = recovery_metric!("recovery.replications", "replications judged", Count, 1.0, 0, Neither, replications);
    /// Replications that recovered.
    pub const RECOVERY_RECOVERED: Metric = recovery_metric!("recovery.recovered", "replications recovered", Count, 1.0, 0, Higher, recovered);
    /// Lower end of the recovered share's Wilson interval.
    pub const RECOVERED_LOWER: Metric = recovery_metric!("recovery.recovered_fraction_lower", "recovered, lower bound", Percent, 100.0, 0, Higher, recovered_fraction_lower);
    /// Upper end of the recovered share's Wilson interval.
    pub const RECOVERED_UPPER: Metric = recovery_metric!("recovery.recovered_fraction_upper", "recovered, upper bound", Percent, 100.0, 0, Higher, recovered_fraction_upper);
    /// 90th percentile of the recovery times.
    pub const RECOVERY_P90: Metric = recovery_metric!("recovery.p90_recovery_s", "p90 recovery", Seconds, 1.0, 1, Lower, ?p90_recovery_s);
    /// Longest recovery time.
    pub const RECOVERY_MAX: Metric = recovery_metric!("recovery.max_recovery_s", "longest recovery", Seconds, 1.0, 1, Lower, ?max_recovery_s);
    /// Goodput before the first trigger.
    pub const RECOVERY_BASELINE: Metric = recovery_metric!("recovery.baseline_per_s", "baseline goodput", PerSecond, 1.0, 1, Neither, baseline_per_s);
    /// Wasted share of the work served during the episode.
    pub const RECOVERY_WASTED: Metric = recovery_metric!("recovery.wasted_fraction", "wasted in the episode", Percent, 100.0, 1, Lower, wasted_fraction);
    /// Replications whose p99 is judged (answers before the trigger).
    pub const RECOVERY_P99_JUDGED: Metric = recovery_metric!("recovery.p99_judged", "replications with a p99 before", Count, 1.0, 0, Neither, p99_judged);
    /// Replications whose p99 came back.
    pub const RECOVERY_P99_BACK: Metric = recovery_metric!("recovery.p99_back", "replications with p99 back", Count, 1.0, 0, Higher, p99_back);
    /// p99 of answered requests before the trigger.
    pub const RECOVERY_P99_BEFORE: Metric = recovery_metric!("recovery.p99_before_ms", "p99 before the trigger", Millis, 1.0, 1, Neither, ?p99_before_ms);
    /// Median time until p99 was back.
    pub const RECOVERY_P99_MEDIAN: Metric = recovery_metric!("recovery.median_p99_back_s", "median time to p99 back", Seconds, 1.0, 1, Lower, ?median_p99_back_s);

    /// Every metric a replication measures, in summary.json's order: each is averaged over
    /// replications with a 95 % interval.
    pub const PER_REPLICATION: [Metric; 54] = [
        Metric::REQUESTS,
        Metric::SUCCEEDED,
        Metric::SUCCESS_RATE,
        Metric::FAILURE_RATE,
        Metric::FAILED_ERROR,
        Metric::FAILED_REJECTED,
        Metric::FAILED_THROTTLED,
        Metric::FAILED_TIMEOUT,
        Metric::FAILED_CONFLICT,
        Metric::FAILED_PERMANENT,
        Metric::FAILED_BUDGET_EXHAUSTED,
        Metric::FAILED_BREAKER_OPEN,
        Metric::FAILED_DEADLINE_EXCEEDED,
        Metric::ATTEMPTS,
        Metric::FIRST_ATTEMPTS,
        Metric::RETRIES,
        Metric::AMPLIFICATION,
        Metric::LATENCY_MEAN,
        Metric::LATENCY_P50,
        Metric::LATENCY_P90,
        Metric::LATENCY_P99,
        Metric::LATENCY_P999,
        Metric::LATENCY_MAX,
        Metric::SUCCESS_MEAN,
        Metric::SUCCESS_P50,
        Metric::SUCCESS_P90,
        Metric::SUCCESS_P99,
        Metric::SUCCESS_P999,
        Metric::SUCCESS_MAX,
        Metric::FAILURE_MEAN,
        Metric::FAILURE_P50,
        Metric::FAILURE_P90,
        Metric::FAILURE_P99,
        Metric::FAILURE_P999,
        Metric::FAILURE_MAX,
        Metric::COMPLETION,
        Metric::SERVED,
        Metric::WASTED,
        Metric::REJECTED,
        Metric::THROTTLED,
        Metric::EXPIRED_DROPPED,
        Metric::OUTAGE_REJECTED,
        Metric::OUTAGE_DROPPED,
        Metric::UTILIZATION,
        Metric::MAX_QUEUE,
        Metric::BUSY_UNTIL,
        Metric::BUDGET_DENIALS,
        Metric::BREAKER_REFUSALS,
        Metric::BREAKER_OPENINGS,
        Metric::BREAKER_TRANSITIONS,
        Metric::BREAKER_OPEN,
        Metric::LATE_REPLIES,
        Metric::TIMEOUTS,
        Metric::TRUNCATED,
    ];

    /// Every number of a `recovery` object, in summary.json's order.
    pub const RECOVERY_ALL: [Metric; 17] = [
        Metric::RECOVERY_REPLICATIONS,
        Metric::RECOVERY_RECOVERED,
        Metric::RECOVERED,
        Metric::RECOVERED_LOWER,
        Metric::RECOVERED_UPPER,
        Metric::RECOVERY_MEDIAN,
        Metric::RECOVERY_P90,
        Metric::RECOVERY_MAX,
        Metric::RECOVERY_BASELINE,
        Metric::RECOVERY_DIP,
        Metric::RECOVERY_BELOW_90,
        Metric::RECOVERY_PEAK,
        Metric::RECOVERY_WASTED,
        Metric::RECOVERY_P99_JUDGED,
        Metric::RECOVERY_P99_BACK,
        Metric::RECOVERY_P99_BEFORE,
        Metric::RECOVERY_P99_MEDIAN,
    ];

    /// The headline recovery metrics.
    pub const RECOVERY: [Metric; 5] = [
        Metric::RECOVERED,
        Metric::RECOVERY_MEDIAN,
        Metric::RECOVERY_DIP,
        Metric::RECOVERY_BELOW_90,
        Metric::RECOVERY_PEAK,
    ];
}

/// Every (dotted key, stored value) of a metrics document, in summary.json's order, for
/// sweep.csv: the per-replication metrics, then every recovery number the document has.
pub fn leaves(m: &Metrics) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Metric::PER_REPLICATION
        .iter()
        .map(|k| (k.key.to_string(), k.value(m)))
        .collect();
    out.extend(
        Metric::OPTIONAL
            .iter()
            .filter(|k| k.value(m) != 0.0)
            .map(|k| (k.key.to_string(), k.value(m))),
    );
    out.extend(
        Metric::RECOVERY_ALL
            .iter()
            .filter_map(|k| Some((k.key.to_string(), k.get(m)?))),
    );
    out
}

/// The requests a fallback answered and those a full bulkhead failed, in summary.json's
/// `metrics`. Neither is in [`Metric::PER_REPLICATION`]: sweep.csv puts them with the parts'
/// numbers ([`part_leaves`]), after the metrics' columns.
#[rustfmt::skip]
impl Metric {
    /// Logical requests answered by a fallback: neither succeeded nor failed.
    pub const DEGRADED: Metric = Metric { needs: Needs::Fallback, ..metric!("degraded", "degraded", Count, 1.0, 0, Lower, degraded) };
    /// Requests that failed with `bulkhead_full`.
    pub const FAILED_BULKHEAD_FULL: Metric = Metric { needs: Needs::BulkheadAnywhere, ..metric!("failed.bulkhead_full", "failed: bulkhead full", Count, 1.0, 0, Lower, failed.bulkhead_full) };
    /// The share of logical requests a fallback answered ([`Metrics::degraded_rate`]; only
    /// in a variant's means and half-widths).
    pub const DEGRADED_RATE: Metric = Metric {
        key: "degraded_rate",
        label: "degraded",
        unit: Unit::Percent,
        scale: 100.0,
        decimals: 1,
        better: Better::Lower,
        needs: Needs::Fallback,
        get: |m| m.degraded_rate,
        raw: |m| m.degraded_rate.unwrap_or(0.0),
        set: |m, x| m.degraded_rate = Some(x),
    };
}

/// The counts of policies a scenario may not use (hedging, idempotency keys, duplicate side
/// effects): each is averaged over replications like the others, but left out of
/// summary.json, sweep.csv and the tables wherever it is zero, so that a scenario without
/// them shows no column it cannot fill.
#[rustfmt::skip]
impl Metric {
    /// Hedges sent.
    pub const HEDGES: Metric = Metric { needs: Needs::Hedge, ..metric!("hedges", "hedges", Count, 1.0, 0, Lower, hedges) };
    /// Requests whose answer came from a hedge.
    pub const HEDGE_WINS: Metric = Metric { needs: Needs::Hedge, ..metric!("hedge_wins", "won by a hedge", Count, 1.0, 0, Neither, hedge_wins) };
    /// Attempts the clients' rate limiters held back for a token.
    pub const TOKEN_WAITS: Metric = Metric { needs: Needs::RateLimiter, ..metric!("token_waits", "sends waiting for a token", Count, 1.0, 0, Neither, token_waits) };
    /// Mean wait of a send held back for a token.
    pub const TOKEN_WAIT_MS: Metric = Metric { needs: Needs::RateLimiter, ..metric!("token_wait_ms", "mean token wait", Millis, 1.0, 1, Lower, token_wait_ms) };
    /// Cancelled attempts dropped before service.
    pub const CANCELLED: Metric = Metric { needs: Needs::HedgeCancel, ..entry_metric!("server.cancelled", "cancelled", Count, 1.0, 0, Neither, cancelled) };
    /// Attempts shed by CoDel.
    pub const SHED: Metric = Metric { needs: Needs::Codel, ..entry_metric!("server.shed", "shed", Count, 1.0, 0, Neither, shed) };
    /// Duplicate executions.
    pub const DUPLICATES: Metric = Metric { needs: Needs::NonIdempotent, ..entry_metric!("server.duplicates", "duplicate executions", Count, 1.0, 0, Lower, duplicates) };
    /// Requests executed more than once.
    pub const DUPLICATE_CALLS: Metric = Metric { needs: Needs::NonIdempotent, ..entry_metric!("server.duplicate_calls", "requests executed twice or more", Count, 1.0, 0, Lower, duplicate_calls) };
    /// Repeats answered from the key memory.
    pub const REPLAYED: Metric = Metric { needs: Needs::IdempotencyKey, ..entry_metric!("server.replayed", "answered from key memory", Count, 1.0, 0, Neither, replayed) };
    /// Requests a client's adaptive throttle rejected locally.
    pub const FAILED_THROTTLED_LOCALLY: Metric = Metric { needs: Needs::ThrottleAnywhere, ..metric!("failed.throttled_locally", "failed: throttled locally", Count, 1.0, 0, Lower, failed.throttled_locally) };

    /// Every optional count, in summary.json's order.
    pub const OPTIONAL: [Metric; 10] = [
        Metric::HEDGES,
        Metric::HEDGE_WINS,
        Metric::TOKEN_WAITS,
        Metric::TOKEN_WAIT_MS,
        Metric::CANCELLED,
        Metric::SHED,
        Metric::DUPLICATES,
        Metric::DUPLICATE_CALLS,
        Metric::REPLAYED,
        Metric::FAILED_THROTTLED_LOCALLY,
    ];
}

/// One number of a service or of a call edge between services: where it lives in
/// [`super::ServiceMetrics`] or [`super::CallMetrics`], what it is called and how it is
/// printed. The fold over replications, the per-service and per-call tables (terminal and
/// report.md), sweep.csv and the graph figures read them through [`ServiceMetric::ALL`] and
/// [`CallMetric::ALL`], so a field missing from one of them is a compile error there.
#[derive(Clone, Copy)]
pub struct PartMetric<T: 'static> {
    /// The field's name in summary.json's `services[i]` or `calls[i]` object.
    pub key: &'static str,
    /// Short label for table headers and axis titles, without the unit.
    pub label: &'static str,
    /// The unit after `scale`.
    pub unit: Unit,
    /// Factor from the stored value to the printed one (100 for shares printed in %).
    pub scale: f64,
    /// Decimals printed.
    pub decimals: usize,
    /// Which direction is better.
    pub better: Better,
    /// Left out of summary.json, sweep.csv and the tables where it is zero (a count of a
    /// policy the scenario may not use).
    pub optional: bool,
    /// What a scenario needs for the count to be made at all; an optional count of a policy
    /// needs it, the others (and an outage's counts, which a fault window makes) nothing.
    pub needs: Needs,
    get: fn(&T) -> f64,
    set: fn(&mut T, f64),
}

/// A number of one service ([`super::ServiceMetrics`]).
pub type ServiceMetric = PartMetric<super::ServiceMetrics>;
/// A number of one call edge ([`super::CallMetrics`]).
pub type CallMetric = PartMetric<super::CallMetrics>;
/// A number of one group of clients ([`super::GroupMetrics`]).
pub type GroupMetric = PartMetric<super::GroupMetrics>;

impl<T> std::fmt::Debug for PartMetric<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key)
    }
}

impl<T> PartMetric<T> {
    /// The stored value (unscaled).
    pub fn value(&self, x: &T) -> f64 {
        (self.get)(x)
    }

    /// Sets the stored value.
    pub fn set(&self, x: &mut T, value: f64) {
        (self.set)(x, value)
    }

    /// The scaled mean and half-width, read from a variant's means and half-widths.
    pub fn estimate(&self, mean: &T, ci95: &T) -> (f64, f64) {
        (self.value(mean) * self.scale, self.value(ci95) * self.scale)
    }

    /// The label with its unit: `utilization (%)`, `goodput (/s)`.
    pub fn title(&self) -> String {
        match self.unit {
            Unit::Count => self.label.to_string(),
            u => format!("{} ({})", self.label, u.suffix()),
        }
    }

    /// A printed value with the metric's decimals.
    pub fn format(&self, scaled: f64) -> String {
        let d = self.decimals;
        format!("{scaled:.d$}")
    }

    /// `mean ± half` with the metric's decimals ([`Unit::estimate_text`]), or the mean alone
    /// without an interval.
    pub fn format_estimate(&self, mean: &T, ci95: &T, with_ci: bool) -> String {
        let e = self.estimate(mean, ci95);
        self.unit.estimate_text(self.decimals, e, with_ci)
    }
}

macro_rules! part_metric {
    (needs $needs:ident; $key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident, $f:ident) => {
        PartMetric {
            optional: true,
            needs: Needs::$needs,
            ..part_metric!($key, $label, $unit, $scale, $dec, $better, $f)
        }
    };
    ($key:literal, $label:literal, $unit:ident, $scale:expr, $dec:literal, $better:ident, $f:ident) => {
        PartMetric {
            key: $key,
            label: $label,
            unit: Unit::$unit,
            scale: $scale,
            decimals: $dec,
            better: Better::$better,
            optional: false,
            needs: Needs::Nothing,
            get: |m| m.$f,
            set: |m, x| m.$f = x,
        }
    };
}

/// The per-service registry, in summary.json's order.
#[rustfmt::skip]
impl PartMetric<super::ServiceMetrics> {
    /// Attempts that reached the service.
    pub const ATTEMPTS: ServiceMetric = part_metric!("attempts", "attempts received", Count, 1.0, 0, Lower, attempts);
    /// Attempts that reached the service per logical request the clients started.
    pub const AMPLIFICATION: ServiceMetric = part_metric!("amplification", "attempts per request", Times, 1.0, 3, Lower, amplification);
    /// Attempts served.
    pub const SERVED: ServiceMetric = part_metric!("served", "served", Count, 1.0, 0, Neither, served);
    /// Served attempts whose caller had already given up.
    pub const WASTED: ServiceMetric = part_metric!("wasted", "wasted", Count, 1.0, 0, Lower, wasted);
    /// Attempts rejected by a full service.
    pub const REJECTED: ServiceMetric = part_metric!("rejected", "rejected", Count, 1.0, 0, Lower, rejected);
    /// Attempts refused by the service's rate limit.
    pub const THROTTLED: ServiceMetric = part_metric!(needs RateLimit; "throttled", "throttled", Count, 1.0, 0, Lower, throttled);
    /// Attempts discarded because their caller had given up.
    pub const EXPIRED_DROPPED: ServiceMetric = part_metric!("expired_dropped", "expired dropped", Count, 1.0, 0, Neither, expired_dropped);
    /// Successful answers to callers still waiting, per second.
    pub const GOODPUT: ServiceMetric = part_metric!("goodput_per_s", "goodput", PerSecond, 1.0, 1, Higher, goodput_per_s);
    /// Worker-time held over worker-time available.
    pub const UTILIZATION: ServiceMetric = part_metric!("utilization", "utilization", Percent, 100.0, 1, Neither, utilization);
    /// Most attempts waiting at once.
    pub const MAX_QUEUE: ServiceMetric = part_metric!("max_queue", "longest queue", Count, 1.0, 0, Lower, max_queue);
    /// When the service finished its last attempt.
    pub const BUSY_UNTIL: ServiceMetric = part_metric!("busy_until_ms", "busy until", Seconds, 1e-3, 2, Lower, busy_until_ms);
    /// Attempts answered `error` by an `outage: reject` fault.
    pub const OUTAGE_REJECTED: ServiceMetric = part_metric!(needs Nothing; "outage_rejected", "outage rejected", Count, 1.0, 0, Neither, outage_rejected);
    /// Attempts lost to an `outage: drop` fault.
    pub const OUTAGE_DROPPED: ServiceMetric = part_metric!(needs Nothing; "outage_dropped", "outage dropped", Count, 1.0, 0, Neither, outage_dropped);
    /// Abandoned hedge-race attempts dropped before service.
    pub const CANCELLED: ServiceMetric = part_metric!(needs HedgeCancel; "cancelled", "cancelled", Count, 1.0, 0, Neither, cancelled);
    /// Attempts shed by CoDel.
    pub const SHED: ServiceMetric = part_metric!(needs Codel; "shed", "shed", Count, 1.0, 0, Neither, shed);
    /// Executions of a non-idempotent call after its first.
    pub const DUPLICATES: ServiceMetric = part_metric!(needs NonIdempotent; "duplicates", "duplicate executions", Count, 1.0, 0, Lower, duplicates);
    /// Calls executed more than once.
    pub const DUPLICATE_CALLS: ServiceMetric = part_metric!(needs NonIdempotent; "duplicate_calls", "calls executed twice or more", Count, 1.0, 0, Lower, duplicate_calls);
    /// Repeats answered from the idempotency key memory.
    pub const REPLAYED: ServiceMetric = part_metric!(needs IdempotencyKey; "replayed", "answered from key memory", Count, 1.0, 0, Neither, replayed);
    /// Times callers' outlier detectors ejected it.
    pub const EJECTIONS: ServiceMetric = part_metric!(needs OutlierDetection; "ejections", "ejections", Count, 1.0, 1, Neither, ejections);
    /// Time spent ejected from callers' balancers.
    pub const EJECTED: ServiceMetric = part_metric!(needs OutlierDetection; "ejected_s", "time ejected", Seconds, 1.0, 1, Neither, ejected_s);

    /// Every field, in summary.json's order: each is averaged over replications with a 95 %
    /// interval.
    pub const ALL: [ServiceMetric; 20] = [
        Self::ATTEMPTS,
        Self::AMPLIFICATION,
        Self::SERVED,
        Self::WASTED,
        Self::REJECTED,
        Self::THROTTLED,
        Self::EXPIRED_DROPPED,
        Self::GOODPUT,
        Self::UTILIZATION,
        Self::MAX_QUEUE,
        Self::BUSY_UNTIL,
        Self::OUTAGE_REJECTED,
        Self::OUTAGE_DROPPED,
        Self::CANCELLED,
        Self::SHED,
        Self::DUPLICATES,
        Self::DUPLICATE_CALLS,
        Self::REPLAYED,
        Self::EJECTIONS,
        Self::EJECTED,
    ];
}

/// The per-call registry, in summary.json's order.
#[rustfmt::skip]
impl PartMetric<super::CallMetrics> {
    /// Calls made on the edge.
    pub const CALLS: CallMetric = part_metric!("calls", "calls", Count, 1.0, 0, Neither, calls);
    /// Attempts sent on the edge.
    pub const ATTEMPTS: CallMetric = part_metric!("attempts", "attempts", Count, 1.0, 0, Lower, attempts);
    /// Attempts sent on the edge per logical request the clients started.
    pub const ATTEMPTS_PER_REQUEST: CallMetric = part_metric!("attempts_per_request", "attempts per request", Times, 1.0, 3, Lower, attempts_per_request);
    /// Retries sent on the edge.
    pub const RETRIES: CallMetric = part_metric!("retries", "retries", Count, 1.0, 0, Lower, retries);
    /// Calls that succeeded.
    pub const SUCCEEDED: CallMetric = part_metric!("succeeded", "succeeded", Count, 1.0, 0, Higher, succeeded);
    /// Calls a fallback answered.
    pub const DEGRADED: CallMetric = part_metric!(needs Fallback; "degraded", "degraded", Count, 1.0, 0, Neither, degraded);
    /// Calls that failed for good, a fallback answered them or not.
    pub const FAILED: CallMetric = part_metric!("failed", "failed", Count, 1.0, 0, Lower, failed);
    /// Attempts a full bulkhead refused.
    pub const BULKHEAD_FULL: CallMetric = part_metric!(needs Bulkhead; "bulkhead_full", "bulkhead full", Count, 1.0, 0, Lower, bulkhead_full);
    /// Hedges sent on the edge.
    pub const HEDGES: CallMetric = part_metric!(needs Hedge; "hedges", "hedges", Count, 1.0, 0, Lower, hedges);
    /// Calls whose answer came from a hedge.
    pub const HEDGE_WINS: CallMetric = part_metric!(needs Hedge; "hedge_wins", "won by a hedge", Count, 1.0, 0, Neither, hedge_wins);
    /// Calls the caller's adaptive throttle rejected locally.
    pub const THROTTLED_LOCALLY: CallMetric = part_metric!(needs Throttle; "throttled_locally", "throttled locally", Count, 1.0, 0, Lower, throttled_locally);

    /// Retries the call's budget denied.
    pub const BUDGET_DENIALS: CallMetric = part_metric!(needs Budget; "budget_denials", "budget denials", Count, 1.0, 0, Neither, budget_denials);
    /// Attempts the call's breaker refused.
    pub const BREAKER_REFUSALS: CallMetric = part_metric!(needs Breaker; "breaker_refusals", "breaker refusals", Count, 1.0, 0, Neither, breaker_refusals);
    /// Times the call's breaker opened.
    pub const BREAKER_OPENINGS: CallMetric = part_metric!(needs Breaker; "breaker_openings", "breaker openings", Count, 1.0, 0, Neither, breaker_openings);
    /// Hedges the call's hedge budget denied.
    pub const HEDGES_DENIED: CallMetric = part_metric!(needs Hedge; "hedges_denied", "hedges denied", Count, 1.0, 0, Neither, hedges_denied);
    /// Attempts the caller's client rate limiter held back for a token.
    pub const TOKEN_WAITS: CallMetric = part_metric!(needs RateLimiter; "token_waits", "sends waiting for a token", Count, 1.0, 0, Neither, token_waits);
    /// Their mean wait for a token.
    pub const TOKEN_WAIT_MS: CallMetric = part_metric!(needs RateLimiter; "token_wait_ms", "mean token wait", Millis, 1.0, 1, Lower, token_wait_ms);

    /// Every field, in summary.json's order: each is averaged over replications with a 95 %
    /// interval.
    pub const ALL: [CallMetric; 17] = [
        Self::CALLS,
        Self::ATTEMPTS,
        Self::ATTEMPTS_PER_REQUEST,
        Self::RETRIES,
        Self::SUCCEEDED,
        Self::DEGRADED,
        Self::FAILED,
        Self::BULKHEAD_FULL,
        Self::HEDGES,
        Self::HEDGE_WINS,
        Self::THROTTLED_LOCALLY,
        Self::TOKEN_WAITS,
        Self::TOKEN_WAIT_MS,
        Self::BUDGET_DENIALS,
        Self::BREAKER_REFUSALS,
        Self::BREAKER_OPENINGS,
        Self::HEDGES_DENIED,
    ];
}

/// The per-group registry, in summary.json's order (the latency of a group's answered
/// requests, which a replication that answered none lacks, is folded apart).
#[rustfmt::skip]
impl PartMetric<super::GroupMetrics> {
    /// The group's requests that ended.
    pub const REQUESTS: GroupMetric = part_metric!("requests", "requests", Count, 1.0, 0, Neither, requests);
    /// Of those, the ones that succeeded.
    pub const SUCCEEDED: GroupMetric = part_metric!("succeeded", "succeeded", Count, 1.0, 0, Higher, succeeded);
    /// The share that succeeded.
    pub const SUCCESS_RATE: GroupMetric = part_metric!("success_rate", "success", Percent, 100.0, 2, Higher, success_rate);
    /// Attempts per request.
    pub const ATTEMPTS_PER_REQUEST: GroupMetric = part_metric!("attempts_per_request", "attempts per request", Times, 1.0, 3, Lower, attempts_per_request);

    /// Every field but the latency, in summary.json's order: each is averaged over
    /// replications with a 95 % interval.
    pub const ALL: [GroupMetric; 4] = [
        Self::REQUESTS,
        Self::SUCCEEDED,
        Self::SUCCESS_RATE,
        Self::ATTEMPTS_PER_REQUEST,
    ];
}

/// Every (dotted key, stored value) of a metrics document beyond [`leaves`], in
/// summary.json's order: `failed.bulkhead_full` (which the JSON leaves out when it is 0) and
/// `degraded`, then `services.<i>.<key>` and `calls.<i>.<key>` (indices as in the scenario's
/// services and calls; optional counts only where they are not zero). sweep.csv adds them
/// after [`leaves`].
pub fn part_leaves(m: &Metrics) -> Vec<(String, f64)> {
    let mut out = vec![
        ("failed.bulkhead_full".to_string(), m.failed.bulkhead_full),
        ("degraded".to_string(), m.degraded),
    ];
    for (i, s) in m.services.iter().enumerate() {
        for k in ServiceMetric::ALL {
            if !k.optional || k.value(s) != 0.0 {
                out.push((format!("services.{i}.{}", k.key), k.value(s)));
            }
        }
    }
    for (i, c) in m.calls.iter().enumerate() {
        for k in CallMetric::ALL {
            if !k.optional || k.value(c) != 0.0 {
                out.push((format!("calls.{i}.{}", k.key), k.value(c)));
            }
        }
    }
    for (i, g) in m.groups.iter().enumerate() {
        for k in GroupMetric::ALL {
            out.push((format!("groups.{i}.{}", k.key), k.value(g)));
        }
        if let Some(l) = g.latency_ms {
            out.push((format!("groups.{i}.latency_ms.mean"), l.mean));
            out.push((format!("groups.{i}.latency_ms.p99"), l.p99));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A label is what a reader sees in tables and panel titles: words, not a JSON key
    /// ("failed: bulkhead full", never "failed bulkhead_full").
    #[test]
    fn labels_are_words_not_keys() {
        for k in Metric::PER_REPLICATION {
            assert!(
                !k.label.contains('_'),
                "{} is labelled {:?}",
                k.key,
                k.label
            );
        }
    }

    /// Every registry key names the leaf its accessor reads: set a distinct value through the
    /// registry, serialise, and find it at the key's dotted path.
    #[test]
    fn registry_keys_are_the_json_paths() {
        let mut m = Metrics {
            services: vec![crate::metrics::ServiceMetrics::default()],
            ..Metrics::default()
        };
        let all = Metric::PER_REPLICATION;
        for (i, k) in all.iter().enumerate() {
            k.set(&mut m, i as f64 + 1.0);
        }
        let doc = serde_json::to_value(&m).unwrap();
        for (i, k) in all.iter().enumerate() {
            let at = json_path(k.key)
                .split('.')
                .try_fold(&doc, |d, s| match s.parse() {
                    Ok(i) => d.get::<usize>(i),
                    Err(_) => d.get(s),
                });
            assert_eq!(
                at.and_then(serde_json::Value::as_f64),
                Some(i as f64 + 1.0),
                "{}",
                k.key
            );
            assert_eq!(k.get(&m), Some(i as f64 + 1.0));
        }
        let keys: std::collections::HashSet<&str> = all.iter().map(|k| k.key).collect();
        assert_eq!(keys.len(), all.len(), "keys are unique");
    }

    /// Where a registry key's value sits in summary.json: `server.<x>` is the entry's,
    /// `services.0.<x>`.
    fn json_path(key: &str) -> String {
        match key.strip_prefix("server.") {
            Some(field) => format!("services.0.{field}"),
            None => key.to_string(),
        }
    }

    /// The `server.*` metrics read and write the entry service, and a document without
    /// services has none.
    #[test]
    fn server_metrics_are_the_entry_services() {
        let mut m = Metrics {
            services: vec![crate::metrics::ServiceMetrics::default(); 2],
            ..Metrics::default()
        };
        Metric::UTILIZATION.set(&mut m, 0.25);
        Metric::SHED.set(&mut m, 3.0);
        assert_eq!((m.entry().utilization, m.entry().shed), (0.25, 3.0));
        assert_eq!(m.services[1], crate::metrics::ServiceMetrics::default());
        assert_eq!(Metric::UTILIZATION.get(&m), Some(0.25));
        assert_eq!(Metric::UTILIZATION.get(&Metrics::default()), None);
    }

    /// Each failure outcome's count sits under the outcome's own name, in outcome order, so
    /// the field list and the outcome list agree.
    #[test]
    fn failed_fields_are_the_failure_outcomes_in_order() {
        let mut f = Failed::default();
        for (i, o) in Outcome::FAILURES.into_iter().enumerate() {
            f.set(o, i as f64 + 1.0);
        }
        f.set(Outcome::Success, 99.0);
        f.set(Outcome::Degraded, 99.0);
        let doc = serde_json::to_value(f).unwrap();
        let keys: Vec<&str> = doc
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let names: Vec<&str> = Outcome::FAILURES.iter().map(|o| o.name()).collect();
        assert_eq!(keys, names);
        for (i, o) in Outcome::FAILURES.into_iter().enumerate() {
            assert_eq!(doc[o.name()].as_f64(), Some(i as f64 + 1.0));
            assert_eq!(f.get(o), i as f64 + 1.0);
        }
        assert_eq!(f.get(Outcome::Success) + f.get(Outcome::Degraded), 0.0);
    }

    /// Every recovery key names the leaf its accessor reads, in summary.json's order.
    #[test]
    fn recovery_keys_are_the_json_paths() {
        let r = RecoveryMetrics {
            replications: 1.0,
            recovered: 2.0,
            recovered_fraction: 3.0,
            recovered_fraction_lower: 4.0,
            recovered_fraction_upper: 5.0,
            median_recovery_s: Some(6.0),
            p90_recovery_s: Some(7.0),
            max_recovery_s: Some(8.0),
            baseline_per_s: 9.0,
            dip_fraction: 10.0,
            below_90_s: 11.0,
            peak_amplification: 12.0,
            wasted_fraction: 13.0,
            p99_judged: 14.0,
            p99_back: 15.0,
            p99_before_ms: Some(16.0),
            median_p99_back_s: Some(17.0),
        };
        let doc = serde_json::to_value(r).unwrap();
        let keys: Vec<String> = doc
            .as_object()
            .unwrap()
            .keys()
            .map(|k| format!("recovery.{k}"))
            .collect();
        assert_eq!(keys, Metric::RECOVERY_ALL.map(|k| k.key));
        let m = Metrics {
            recovery: Some(r),
            ..Metrics::default()
        };
        for (i, k) in Metric::RECOVERY_ALL.iter().enumerate() {
            assert_eq!(k.get(&m), Some(i as f64 + 1.0), "{}", k.key);
        }
    }

    /// The per-service and per-call registries name the fields their accessors read, and
    /// `part_leaves` the dotted paths of summary.json.
    #[test]
    fn part_registry_keys_are_the_json_paths() {
        use crate::metrics::{CallMetrics, ServiceMetrics};
        let mut m = Metrics {
            degraded: 0.5,
            services: vec![ServiceMetrics::default(); 2],
            calls: vec![CallMetrics::default()],
            ..Metrics::default()
        };
        for (i, k) in ServiceMetric::ALL.iter().enumerate() {
            k.set(&mut m.services[1], i as f64 + 1.0);
        }
        for (i, k) in CallMetric::ALL.iter().enumerate() {
            k.set(&mut m.calls[0], i as f64 + 100.0);
        }
        let doc = serde_json::to_value(&m).unwrap();
        let leaves = part_leaves(&m);
        assert_eq!(
            leaves.len(),
            2 + 2 * ServiceMetric::ALL.len() + CallMetric::ALL.len()
                - ServiceMetric::ALL.iter().filter(|k| k.optional).count()
        );
        for (key, x) in leaves {
            let at = key
                .split('.')
                .try_fold(&doc, |d, s| match s.parse::<usize>() {
                    Ok(i) => d.get(i),
                    Err(_) => d.get(s),
                });
            // A zero `failed.bulkhead_full` is left out of the JSON; it reads as 0.
            let read = at.and_then(serde_json::Value::as_f64);
            let read = read.or((key == "failed.bulkhead_full").then_some(0.0));
            assert_eq!(read, Some(x), "{key}");
        }
        for (fields, n) in [
            (ServiceMetric::ALL.map(|k| k.key).to_vec(), 20),
            (CallMetric::ALL.map(|k| k.key).to_vec(), 17),
        ] {
            let unique: std::collections::HashSet<&str> = fields.iter().copied().collect();
            assert_eq!(unique.len(), n, "keys are unique and every field has one");
        }
        // A document without parts still has the two counts of its requests.
        assert_eq!(part_leaves(&Metrics::default()).len(), 2);
    }

    /// The optional counts sit at their keys' paths, and are left out of the JSON and of the
    /// leaves where they are zero.
    #[test]
    fn optional_metrics_are_at_their_paths_and_absent_when_zero() {
        let mut m = Metrics {
            services: vec![crate::metrics::ServiceMetrics::default()],
            ..Metrics::default()
        };
        let empty = serde_json::to_value(&m).unwrap();
        let at = |doc, key: &str| {
            json_path(key)
                .split('.')
                .try_fold(doc, |d: &serde_json::Value, s| match s.parse() {
                    Ok(i) => d.get::<usize>(i),
                    Err(_) => d.get(s),
                })
        };
        assert!(
            leaves(&m)
                .iter()
                .all(|(k, _)| !Metric::OPTIONAL.iter().any(|o| o.key == k))
        );
        for (i, k) in Metric::OPTIONAL.iter().enumerate() {
            assert!(at(&empty, k.key).is_none());
            k.set(&mut m, i as f64 + 1.0);
        }
        let doc = serde_json::to_value(&m).unwrap();
        let leaves = leaves(&m);
        for (i, k) in Metric::OPTIONAL.iter().enumerate() {
            assert_eq!(
                at(&doc, k.key).and_then(serde_json::Value::as_f64),
                Some(i as f64 + 1.0),
                "{}",
                k.key
            );
            assert!(
                leaves
                    .iter()
                    .any(|(key, x)| key == k.key && *x == i as f64 + 1.0)
            );
            assert!(!Metric::PER_REPLICATION.contains(k));
        }
    }

    #[test]
    fn recovery_metrics_are_absent_without_recovery() {
        let m = Metrics::default();
        assert!(Metric::RECOVERY.iter().all(|k| k.get(&m).is_none()));
        let doc = serde_json::to_value(&m).unwrap();
        assert!(doc.get("recovery").is_none());
    }

    #[test]
    fn leaves_round_trip_through_json() {
        let mut m = Metrics::default();
        m.failed.set(Outcome::Timeout, 3.0);
        m.recovery = Some(RecoveryMetrics {
            median_recovery_s: Some(2.5),
            ..Default::default()
        });
        let text = serde_json::to_string(&m).unwrap();
        let back: Metrics = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        assert!(
            leaves(&m)
                .iter()
                .any(|(k, v)| k == "failed.timeout" && *v == 3.0)
        );
        assert!(
            leaves(&m)
                .iter()
                .any(|(k, v)| k == "recovery.median_recovery_s" && *v == 2.5)
        );
        assert!(
            !leaves(&m)
                .iter()
                .any(|(k, _)| k == "recovery.p90_recovery_s")
        );
    }
}
