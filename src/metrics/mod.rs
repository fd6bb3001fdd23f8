//! What a run measures: counters, the latency histogram and the time series, collected while
//! the simulation runs, and their reduction to the numbers `summary.json` reports.
//!
//! The recorder's memory is fixed per run (counters, one HDR histogram) plus one row per time
//! bucket; it never keeps a record per request. No I/O here.

mod aggregate;
mod metric;
pub mod parts;
pub mod recovery;
mod results;
pub mod series;

pub use aggregate::{
    Estimate, Folded, Moments, Replications, SeriesMean, aggregate_series, t_quantile_975,
};
pub use metric::{
    Better, BreakerMetrics, CallMetric, Failed, GroupMetric, Latency, Metric, Metrics, Needs,
    PartMetric, RecoveryMetrics, ServiceMetric, Unit, leaves, part_leaves, share_decimals,
};
pub use parts::{
    CallCounters, CallMetrics, GroupCounters, GroupMetrics, ServiceCounters, ServiceMetrics,
};
pub use results::{
    BucketLatency, ExampleRun, ExperimentResult, PointResult, ServiceSeries, VariantResult,
};
pub use series::{BinCount, Column, Gauges, LatencyBins, MAX_ROWS, Row, TimeSeries};

use hdrhistogram::Histogram;

use crate::engine::{SimDuration, SimTime};
use crate::model::Outcome;

/// The clients' counts over one replication: their logical requests and the calls they make
/// to the entry service (the first call edge of every run: its retries, hedges and policy
/// counts), and the run as a whole (events, end time). What each service did is in its own
/// [`ServiceCounters`], the entry first; what the calls between services did, in
/// [`CallCounters`]. No count is kept in two places.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Logical requests started.
    pub requests: u64,
    /// Final outcomes of the logical requests that ended, indexed by [`Outcome::index`].
    pub final_outcomes: [u64; Outcome::ALL.len()],
    /// Attempt outcomes as the clients saw them, indexed by [`Outcome::index`].
    pub attempt_outcomes: [u64; Outcome::ALL.len()],
    /// First attempts sent.
    pub first_attempts: u64,
    /// Retries sent.
    pub retries: u64,
    /// Hedges sent (attempts beyond the first and the retries).
    pub hedges: u64,
    /// Requests whose answer came from a hedge.
    pub hedge_wins: u64,
    /// Hedges the clients' hedge budget denied.
    pub hedges_denied: u64,
    /// Answers that arrived after their client had given up.
    pub late_replies: u64,
    /// Most logical requests in flight at once.
    pub max_in_flight: u64,
    /// When the last logical request ended.
    pub makespan: SimTime,
    /// Events processed.
    pub events: u64,
    /// Most events pending at once (what the event list's memory follows).
    pub max_pending: u64,
    /// Time of the last event processed.
    pub end_time: SimTime,
    /// Retries a budget denied.
    pub budget_denials: u64,
    /// Attempts a circuit breaker refused.
    pub breaker_refusals: u64,
    /// Breaker state changes.
    pub breaker_transitions: u64,
    /// Times a breaker opened.
    pub breaker_openings: u64,
    /// Time breakers spent open, summed over breakers, in nanoseconds.
    pub breaker_open_nanos: u128,
    /// Breakers in the run (0 without a breaker; 1 shared; one per client).
    pub breakers: u64,
    /// Attempts the clients' rate limiters held back for a token.
    pub token_waits: u64,
    /// Their waits added up, in nanoseconds.
    pub token_wait_nanos: u128,
}

/// Why a run stopped before everything drained.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Truncation {
    /// `max_time` passed with requests still in flight.
    MaxTime {
        /// The limit.
        at: SimDuration,
        /// Requests still in flight.
        in_flight: u64,
    },
    /// `limits.max_events` reached.
    MaxEvents {
        /// The limit.
        limit: u64,
        /// Simulated time reached.
        at: SimTime,
    },
    /// `limits.max_in_flight` reached: the storm grew without bound.
    MaxInFlight {
        /// The limit.
        limit: u64,
        /// Simulated time reached.
        at: SimTime,
    },
    /// The server held more than `limits.max_in_flight` attempts (waiting and in service):
    /// abandoned work piled up without bound.
    ServerBacklog {
        /// The limit.
        limit: u64,
        /// Simulated time reached.
        at: SimTime,
    },
    /// A service held more than `limits.max_in_flight` idempotency keys and repeats waiting
    /// for a result: remembered calls piled up faster than `ttl` let them go.
    KeysHeld {
        /// The limit.
        limit: u64,
        /// Simulated time reached.
        at: SimTime,
    },
    /// The next event would have fallen after the largest instant simulated time can hold
    /// (2^64 - 1 ns, about 584 years): a backoff, think time, timeout or drawn duration took
    /// the run past it.
    EndOfTime {
        /// The time of the last event handled.
        at: SimTime,
        /// Requests still in flight.
        in_flight: u64,
    },
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Truncation::MaxTime { at, in_flight } => write!(
                f,
                "stopped at max_time {at} with {in_flight} requests still in flight"
            ),
            Truncation::MaxEvents { limit, at } => write!(
                f,
                "stopped after limits.max_events = {limit} events at t = {at}; raise the limit, or set max_time if the storm goes on; if t hardly moved, something takes no time at all (give the service, the network or the think time a duration)"
            ),
            Truncation::MaxInFlight { limit, at } => write!(
                f,
                "stopped at t = {at}: more than limits.max_in_flight = {limit} requests in flight (the storm grows without bound)"
            ),
            Truncation::ServerBacklog { limit, at } => write!(
                f,
                "stopped at t = {at}: the server held more than limits.max_in_flight = {limit} attempts, waiting or in service (work piles up without bound; most of it abandoned by its clients)"
            ),
            Truncation::KeysHeld { limit, at } => write!(
                f,
                "stopped at t = {at}: a service held more than limits.max_in_flight = {limit} idempotency keys and repeats waiting for them (calls are remembered faster than idempotency_key.ttl forgets them; shorten the ttl)"
            ),
            Truncation::EndOfTime { at, in_flight } => write!(
                f,
                "stopped at t = {at} with {in_flight} requests in flight: the next event would fall after the end of simulated time (about 584 years); a backoff, think time, timeout or drawn duration is too long"
            ),
        }
    }
}

/// A replication that stopped early and why, in words ([`Truncation`]'s text): what
/// summary.json keeps of it as `truncated_replications`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TruncatedReplication {
    /// The replication's index.
    pub replication: u32,
    /// Why it stopped.
    pub reason: String,
}

/// Latency distribution bins per decade, from 1 us to 10^4 s ([`latency_bin_upper_ms`]).
pub const LATENCY_BINS_PER_DECADE: usize = 20;
/// Number of latency distribution bins (ten decades).
pub const LATENCY_BINS: usize = 10 * LATENCY_BINS_PER_DECADE;

/// The upper edge of latency bin `i`, in milliseconds; bin 0 also holds everything below
/// 1 us and the last bin everything above 10^4 s.
pub fn latency_bin_upper_ms(i: usize) -> f64 {
    1e-3 * 10f64.powf((i + 1) as f64 / LATENCY_BINS_PER_DECADE as f64)
}

fn latency_bin(nanos: u64) -> usize {
    let decades = (nanos.max(1) as f64 / 1e3).log10();
    ((decades * LATENCY_BINS_PER_DECADE as f64).floor().max(0.0) as usize).min(LATENCY_BINS - 1)
}

/// The latency bin of `nanos`, as [`latency_bin`] gives it but without a logarithm: it is
/// taken at every answered request's end. A value's sixteenth of an octave (its leading five
/// bits and their place) gives the bin of the sixteenth's lowest value; no bin is narrower
/// than a sixteenth (a factor 17/16 against 10^(1/20)), so the value lies in that bin or the
/// next, which the next bin's lowest value decides.
#[inline]
pub(crate) fn latency_bin_of(nanos: u64) -> usize {
    let t = BinTables::get();
    let b = usize::from(t.first[sixteenth(nanos)]);
    (b + usize::from(nanos >= t.lowest[b + 1])).min(LATENCY_BINS - 1)
}

/// The sixteenth of an octave `n` lies in: `n` itself below 16, else 16 per octave.
#[inline(always)]
fn sixteenth(n: u64) -> usize {
    if n < 16 {
        return n as usize;
    }
    let msb = 63 - n.leading_zeros();
    ((msb - 3) * 16) as usize + ((n >> (msb - 4)) & 15) as usize
}

/// The tables of [`latency_bin_of`], computed once from [`latency_bin`].
struct BinTables {
    /// Each bin's lowest value in nanoseconds, and `u64::MAX` after the last.
    lowest: [u64; LATENCY_BINS + 1],
    /// The bin of each sixteenth's lowest value.
    first: [u8; 976],
}

impl BinTables {
    fn get() -> &'static BinTables {
        static TABLES: std::sync::OnceLock<BinTables> = std::sync::OnceLock::new();
        TABLES.get_or_init(|| {
            let mut lowest = [u64::MAX; LATENCY_BINS + 1];
            lowest[0] = 0;
            for (i, low) in lowest.iter_mut().enumerate().take(LATENCY_BINS).skip(1) {
                // The least value whose bin is at least i (bins rise with the value): the
                // bin's edge in nanoseconds, moved to where the logarithm puts it.
                let mut x = (1e3 * 10f64.powf(i as f64 / LATENCY_BINS_PER_DECADE as f64)) as u64;
                while latency_bin(x) >= i {
                    x -= 1;
                }
                while latency_bin(x) < i {
                    x += 1;
                }
                *low = x;
            }
            let mut first = [0u8; 976];
            for (k, f) in first.iter_mut().enumerate() {
                let start = if k < 16 {
                    k as u64
                } else {
                    (16 + (k % 16) as u64) << (k / 16 - 1)
                };
                *f = (lowest[1..LATENCY_BINS].partition_point(|&l| l <= start)) as u8;
            }
            BinTables { lowest, first }
        })
    }
}

/// A latency distribution in nanoseconds: an HDR histogram (three significant figures, one
/// microsecond resolution at the low end) with the exact sum and maximum beside it. Histograms
/// of replications merge exactly (integer counts), so pooled percentiles do not depend on the
/// order replications finish in.
///
/// Up to [`FEW_LATENCIES`] latencies are kept as they are and read with the histogram's
/// bucket edges, exactly as if they had been recorded in it: a replication of a few requests
/// then costs what it records, not the histogram's counts array (16 kB to 200 kB) to make,
/// read and merge.
#[derive(Debug, Clone, Default)]
pub struct LatencyHistogram {
    counts: Counts,
    sum_nanos: u128,
    max_nanos: u64,
}

/// A [`LatencyHistogram`] as plain numbers (a shard folder's latencies): the raw values while
/// there are few, else each HDR bucket's highest value and count; the exact sum (as decimal
/// text: it may exceed 64 bits) and the max.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyParts {
    /// The exact sum of the latencies in nanoseconds, in decimal.
    pub sum_nanos: String,
    /// The largest latency in nanoseconds.
    pub max_nanos: u64,
    /// The latencies as they are (at most [`FEW_LATENCIES`]), or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub few: Option<Vec<u64>>,
    /// Each HDR bucket's highest value and its count, or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hdr: Option<Vec<[u64; 2]>>,
}

/// Latencies kept as raw values up to this many; beyond, in the HDR histogram.
pub const FEW_LATENCIES: usize = 1024;

/// Where a [`LatencyHistogram`] keeps its counts.
#[derive(Debug, Clone)]
enum Counts {
    /// The values recorded (nanoseconds, at least 1), in no particular order.
    Few(Vec<u64>),
    /// An HDR histogram.
    Many(Histogram<u64>),
}

impl Default for Counts {
    fn default() -> Self {
        Counts::Few(Vec::new())
    }
}

/// An empty histogram of the configuration every latency histogram has. One microsecond
/// resolution at the low end (a latency is never judged by its nanoseconds); sized for a
/// millisecond at first, 16 kB, and growing with the latencies recorded. The bucket a value
/// falls in does not depend on the size, so neither do the percentiles.
fn new_histogram() -> Histogram<u64> {
    let mut hist = Histogram::new_with_bounds(1_000, 2_000, 3).expect("valid bounds");
    hist.auto(true);
    hist
}

/// The highest value of the histogram bucket holding `value` (the value the histogram reports
/// for it), for every latency histogram.
fn bucket_top(value: u64) -> u64 {
    static SHAPE: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
    let shape = SHAPE.get_or_init(new_histogram);
    // As the histogram reads a bucket: the highest value equivalent to its lowest.
    shape.highest_equivalent(shape.lowest_equivalent(value))
}

impl LatencyHistogram {
    /// Records one latency.
    #[inline]
    pub fn record(&mut self, latency: SimDuration) {
        let nanos = latency.as_nanos();
        match &mut self.counts {
            Counts::Few(values) => {
                values.push(nanos.max(1));
                if values.len() > FEW_LATENCIES {
                    self.spill();
                }
            }
            Counts::Many(hist) => hist
                .record(nanos.max(1))
                .expect("the histogram resizes itself"),
        }
        self.sum_nanos += u128::from(nanos);
        self.max_nanos = self.max_nanos.max(nanos);
    }

    /// Moves the raw values into an HDR histogram.
    #[cold]
    fn spill(&mut self) -> &mut Histogram<u64> {
        if let Counts::Few(values) = &self.counts {
            let mut hist = new_histogram();
            for &v in values {
                hist.record(v).expect("the histogram resizes itself");
            }
            self.counts = Counts::Many(hist);
        }
        match &mut self.counts {
            Counts::Many(hist) => hist,
            Counts::Few(_) => unreachable!("just spilled"),
        }
    }

    /// Adds every latency of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        match (&mut self.counts, &other.counts) {
            (Counts::Few(mine), Counts::Few(theirs)) => {
                mine.extend_from_slice(theirs);
                if mine.len() > FEW_LATENCIES {
                    self.spill();
                }
            }
            (Counts::Many(hist), Counts::Few(theirs)) => {
                for &v in theirs {
                    hist.record(v).expect("the histogram resizes itself");
                }
            }
            (_, Counts::Many(theirs)) => {
                self.spill()
                    .add(theirs)
                    .expect("the histogram resizes itself");
            }
        }
        self.sum_nanos += other.sum_nanos;
        self.max_nanos = self.max_nanos.max(other.max_nanos);
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        match &self.counts {
            Counts::Few(values) => values.len() as u64,
            Counts::Many(hist) => hist.len(),
        }
    }

    /// The mean in nanoseconds: the exact sum over the count, correctly rounded (0 when
    /// empty). It never exceeds the max: the exact mean does not, and rounding is monotone.
    pub fn mean_nanos(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => ratio_f64(self.sum_nanos, n),
        }
    }

    /// Mean, percentiles and max in milliseconds (all 0 when empty). A percentile is its
    /// bucket's upper edge, never more than the exact max; the mean is the exact one rounded
    /// once ([`LatencyHistogram::mean_nanos`]), so never more than the max either.
    pub fn summary(&self) -> Latency {
        let n = self.count();
        if n == 0 {
            return Latency::default();
        }
        let ms = |v: u64| v.min(self.max_nanos) as f64 / 1e6;
        let [p50, p90, p99, p999] = match &self.counts {
            Counts::Many(hist) => [0.50, 0.90, 0.99, 0.999].map(|p| ms(hist.value_at_quantile(p))),
            Counts::Few(values) => {
                let mut sorted = values.clone();
                sorted.sort_unstable();
                // The histogram's rule: the bucket where the count reaches ceil(p * n), at
                // least 1, which is the bucket of the ceil(p * n)-th smallest value.
                [0.50, 0.90, 0.99, 0.999].map(|p: f64| {
                    let rank = ((p * n as f64).ceil() as usize).max(1);
                    ms(bucket_top(sorted[rank - 1]))
                })
            }
        };
        Latency {
            mean: self.mean_nanos() / 1e6,
            p50,
            p90,
            p99,
            p999,
            max: self.max_nanos as f64 / 1e6,
        }
    }

    /// Requests per log-spaced bin ([`latency_bin_upper_ms`]).
    pub fn bins(&self) -> Vec<u64> {
        let mut bins = vec![0u64; LATENCY_BINS];
        match &self.counts {
            Counts::Many(hist) => {
                for v in hist.iter_recorded() {
                    bins[latency_bin(v.value_iterated_to())] += v.count_at_value();
                }
            }
            Counts::Few(values) => {
                for &v in values {
                    bins[latency_bin(bucket_top(v))] += 1;
                }
            }
        }
        bins
    }

    /// The histogram as plain numbers, for a shard folder ([`LatencyParts`]).
    pub fn to_parts(&self) -> LatencyParts {
        let (few, hdr) = match &self.counts {
            Counts::Few(values) => {
                // In order of value, not of recording: the same latencies give the same parts.
                let mut values = values.clone();
                values.sort_unstable();
                (Some(values), None)
            }
            Counts::Many(hist) => (
                None,
                Some(
                    hist.iter_recorded()
                        .map(|v| [v.value_iterated_to(), v.count_at_value()])
                        .collect(),
                ),
            ),
        };
        LatencyParts {
            sum_nanos: self.sum_nanos.to_string(),
            max_nanos: self.max_nanos,
            few,
            hdr,
        }
    }

    /// The histogram [`LatencyHistogram::to_parts`] described: every count lands in the
    /// bucket it came from (each HDR bucket is recorded at its highest value, which lies in
    /// it), so every number read from it is the one read from the original. `None` when the
    /// parts do not describe a histogram.
    pub fn from_parts(parts: &LatencyParts) -> Option<Self> {
        let counts = match (&parts.few, &parts.hdr) {
            (Some(values), None) if values.len() <= FEW_LATENCIES && !values.contains(&0) => {
                Counts::Few(values.clone())
            }
            (None, Some(buckets)) => {
                let mut hist = new_histogram();
                for &[value, count] in buckets {
                    hist.record_n(value.max(1), count).ok()?;
                }
                Counts::Many(hist)
            }
            _ => return None,
        };
        Some(LatencyHistogram {
            counts,
            sum_nanos: parts.sum_nanos.parse().ok()?,
            max_nanos: parts.max_nanos,
        })
    }

    /// The same latencies, kept in the HDR histogram whatever their number (for tests of the
    /// two ways of keeping them).
    #[cfg(test)]
    fn spilled(mut self) -> Self {
        self.spill();
        self
    }
}

/// `num / den` (den > 0) rounded once to the nearest `f64`, ties to even, as if computed
/// exactly. Dividing the two as floats rounds `num` first when it has more than 53 bits (a
/// latency sum of a few days' worth of nanoseconds), which can put a mean of equal latencies
/// above their max.
pub fn ratio_f64(num: u128, den: u64) -> f64 {
    const EXACT: u128 = 1 << 53;
    let d = u128::from(den.max(1));
    if num < EXACT && d < EXACT {
        // Both operands are exact: IEEE division rounds the quotient once.
        return num as f64 / d as f64;
    }
    // num / d = (t + f) * 2^-k with t an integer of at least 54 bits when the quotient is not
    // tiny, 0 <= f < 1, and `sticky` telling whether f > 0.
    let (q, r) = (num / d, num % d);
    let k = 55u32.saturating_sub(128 - q.leading_zeros());
    let t = (q << k) | ((r << k) / d);
    let sticky = !(r << k).is_multiple_of(d);
    let bits = 128 - t.leading_zeros();
    if bits <= 53 {
        // A quotient below 1/4 from operands this large: no latency mean is one.
        return num as f64 / d as f64;
    }
    let drop = bits - 53;
    let mut m = t >> drop;
    let rest = t & ((1u128 << drop) - 1);
    let half = 1u128 << (drop - 1);
    if rest > half || (rest == half && (sticky || m & 1 == 1)) {
        m += 1;
    }
    // m <= 2^53 is exact as a float, and so is the power of two.
    m as f64 * 2f64.powi(drop as i32 - k as i32)
}

/// Collects measurements during one replication.
pub struct Recorder {
    /// The counters.
    pub counters: Counters,
    success_latency: LatencyHistogram,
    failure_latency: LatencyHistogram,
    /// Per-bucket counts and states.
    pub series: TimeSeries,
    /// Per group of clients, where there are several (empty for one group).
    groups: Vec<GroupCounters>,
}

impl Recorder {
    /// An empty recorder with time buckets of width `bucket`.
    pub fn new(bucket: SimDuration) -> Self {
        Recorder {
            counters: Counters::default(),
            success_latency: LatencyHistogram::default(),
            failure_latency: LatencyHistogram::default(),
            series: TimeSeries::new(bucket),
            groups: Vec::new(),
        }
    }

    /// A recorder that also keeps the counts of each of `groups` groups of clients (none
    /// are kept for a single group: its counts are the totals).
    pub fn with_groups(mut self, groups: usize) -> Self {
        if groups > 1 {
            self.groups = vec![GroupCounters::default(); groups];
        }
        self
    }

    /// Records the end of a logical request of group `group` (as well as
    /// [`Recorder::request_ended`], which counts it in the totals), which made `attempts`
    /// attempts. Called only where there are several groups.
    #[inline(never)]
    pub fn group_ended(
        &mut self,
        group: usize,
        outcome: Outcome,
        latency: SimDuration,
        attempts: u32,
    ) {
        self.groups[group].ended(outcome, latency, attempts);
    }

    /// Records an attempt outcome as its client saw it at `at`, an instant the driver
    /// settled at an earlier event (and the run has reached).
    #[inline]
    pub fn attempt_ended_at(&mut self, outcome: Outcome, at: SimTime) {
        self.counters.attempt_outcomes[outcome.index()] += 1;
        if let Some(col) = Column::for_attempt_outcome(outcome) {
            self.series.add_at(at, col);
        }
    }

    /// Records a retry sent at `at`, an instant the driver settled at an earlier event (and
    /// the run has reached).
    #[inline]
    pub fn retry_sent_at(&mut self, at: SimTime) {
        self.counters.retries += 1;
        self.series.add_at(at, Column::Retries);
    }

    /// [`Recorder::attempt_ended_at`] for `outcome` at `at` and [`Recorder::retry_sent_at`]
    /// for `retried` (no earlier) in one: an answer and the retry it led to, both settled.
    #[inline(always)]
    pub fn attempt_ended_and_retried_at(
        &mut self,
        outcome: Outcome,
        at: SimTime,
        retried: SimTime,
    ) {
        self.counters.attempt_outcomes[outcome.index()] += 1;
        self.counters.retries += 1;
        match Column::for_attempt_outcome(outcome) {
            Some(col) => self.series.add_pair_at(at, col, retried, Column::Retries),
            None => self.series.add_at(retried, Column::Retries),
        }
    }

    /// Records a logical request that succeeded at `at`, `latency` after it started: an
    /// instant the driver settled at an earlier event (and the run has reached, perhaps after
    /// later ones).
    #[inline(always)]
    pub fn request_succeeded_at(&mut self, latency: SimDuration, at: SimTime) {
        self.counters.final_outcomes[Outcome::Success.index()] += 1;
        self.counters.makespan = self.counters.makespan.max(at);
        self.success_latency.record(latency);
        self.series.add_at(at, Column::Succeeded);
        self.series.answered_at(at, latency);
    }

    /// Records the end of a logical request.
    #[inline]
    pub fn request_ended(&mut self, outcome: Outcome, latency: SimDuration, now: SimTime) {
        self.counters.final_outcomes[outcome.index()] += 1;
        self.counters.makespan = now;
        if outcome == Outcome::Success {
            self.success_latency.record(latency);
            self.series.add(Column::Succeeded);
            self.series.answered(latency);
        } else if outcome == Outcome::Degraded {
            // Answered, by a fallback: its latency is an answer's, but it is not goodput.
            self.success_latency.record(latency);
            self.series.answered(latency);
        } else {
            self.failure_latency.record(latency);
            self.series.add(Column::Failed);
        }
    }

    /// Records an attempt outcome as its client saw it.
    #[inline]
    pub fn attempt_ended(&mut self, outcome: Outcome) {
        self.counters.attempt_outcomes[outcome.index()] += 1;
        if let Some(col) = Column::for_attempt_outcome(outcome) {
            self.series.add(col);
        }
    }

    /// Finishes the run: the recorder's counts with each service's (the entry first, so at
    /// least one), each call edge's between services, and the services' load series.
    pub fn finish(
        self,
        truncated: Option<Truncation>,
        services: Vec<ServiceCounters>,
        calls: Vec<CallCounters>,
        service_series: Vec<TimeSeries>,
    ) -> RunResult {
        debug_assert!(!services.is_empty(), "every run has an entry service");
        RunResult {
            counters: self.counters,
            success_latency: self.success_latency,
            failure_latency: self.failure_latency,
            series: self.series,
            truncated,
            services,
            calls,
            replicas: Vec::new(),
            service_series,
            replica_series: Vec::new(),
            groups: self.groups,
        }
    }
}

/// One replication reduced to what its variant's summary needs once its latency histograms
/// are merged into the variant's [`LatencyPool`] ([`RunResult::digest`]).
#[derive(Debug, Clone)]
pub struct Digest {
    /// The replication's metrics ([`RunResult::metrics`]).
    pub metrics: Metrics,
    /// Counts.
    pub counters: Counters,
    /// Latencies recorded: of every request that ended, of successes, of failures.
    pub latency_counts: [u64; 3],
    /// The time series.
    pub series: TimeSeries,
    /// Why the run stopped early, if it did.
    pub truncated: Option<Truncation>,
    /// Per-service load over time (see [`RunResult::service_series`]).
    pub service_series: Vec<TimeSeries>,
    /// Per-replica load over time (see [`RunResult::replica_series`]).
    pub replica_series: Vec<TimeSeries>,
}

/// The latency histograms of a variant's replications merged. The counts are integers, so
/// the order replications are merged in changes nothing.
#[derive(Debug, Clone, Default)]
pub struct LatencyPool {
    /// Latency of the logical requests that succeeded.
    pub success: LatencyHistogram,
    /// Latency (time to give up) of the logical requests that failed.
    pub failure: LatencyHistogram,
    /// Per group of clients (where there are several), the latency of its answered requests.
    pub groups: Vec<LatencyHistogram>,
}

impl LatencyPool {
    /// Adds a replication's latencies.
    pub fn add(&mut self, run: &RunResult) {
        self.success.merge(&run.success_latency);
        self.failure.merge(&run.failure_latency);
        merge_groups(&mut self.groups, run.groups.iter().map(|g| &g.answered));
    }

    /// Adds every latency of another pool.
    pub fn absorb(&mut self, other: &LatencyPool) {
        self.success.merge(&other.success);
        self.failure.merge(&other.failure);
        merge_groups(&mut self.groups, other.groups.iter());
    }
}

/// Merges each group's histogram of `more` into the one of the same group in `groups`.
fn merge_groups<'a>(
    groups: &mut Vec<LatencyHistogram>,
    more: impl ExactSizeIterator<Item = &'a LatencyHistogram>,
) {
    if groups.len() < more.len() {
        groups.resize_with(more.len(), LatencyHistogram::default);
    }
    for (g, h) in groups.iter_mut().zip(more) {
        g.merge(h);
    }
}

/// Everything one replication measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Counts.
    pub counters: Counters,
    /// Latency of the logical requests that succeeded.
    pub success_latency: LatencyHistogram,
    /// Latency (time to give up) of the logical requests that failed.
    pub failure_latency: LatencyHistogram,
    /// The time series.
    pub series: TimeSeries,
    /// Why the run stopped early, if it did.
    pub truncated: Option<Truncation>,
    /// Per service, the entry first: never empty (a single server is the entry alone).
    pub services: Vec<ServiceCounters>,
    /// Per call edge between services, by caller then call order (the clients' calls to the
    /// entry are counted in [`Counters`]); empty when no service calls another.
    pub calls: Vec<CallCounters>,
    /// Per replica of each service with more than one, service by service (the entry
    /// first), replica by replica; empty when no service has replicas. `services` holds
    /// each service's counts, its replicas' added up.
    pub replicas: Vec<ServiceCounters>,
    /// Per service, its load over time: `Attempts`, `Served`, `Wasted`, `QueueLen` and
    /// `InService`. Empty for a run of one service, whose load is already the main series'
    /// columns of the same names, bucket for bucket: keeping a copy would cost every event of
    /// the commonest runs a second count for nothing.
    pub service_series: Vec<TimeSeries>,
    /// Per replica, in the order of [`RunResult::replicas`], its load over time:
    /// `Attempts` (the attempts its callers' balancers sent it, counted when sent), and
    /// `QueueLen` and `InService` at each bucket's end. Empty when no service has replicas.
    pub replica_series: Vec<TimeSeries>,
    /// Per group of clients, in the scenario's order; empty when there is one group.
    pub groups: Vec<GroupCounters>,
}

impl RunResult {
    /// The entry service's counts: the service the clients call.
    pub fn entry(&self) -> &ServiceCounters {
        &self.services[0]
    }

    /// Logical requests that ended successfully.
    pub fn succeeded(&self) -> u64 {
        self.counters.final_outcomes[Outcome::Success.index()]
    }

    /// Logical requests that ended, by any outcome.
    pub fn ended(&self) -> u64 {
        self.counters.final_outcomes.iter().sum()
    }

    /// The replication reduced to what its variant's summary needs once its latencies are
    /// merged into the variant's pool ([`LatencyPool::add`]): [`RunResult::metrics`], computed
    /// without copying a histogram (the failures are merged into the success histogram to
    /// read every request's latency), the counts, series and truncation.
    pub fn digest(mut self) -> Digest {
        let success = self.success_latency.summary();
        let failure = self.failure_latency.summary();
        let latency_counts = [
            self.ended(),
            self.success_latency.count(),
            self.failure_latency.count(),
        ];
        self.success_latency.merge(&self.failure_latency);
        let metrics = self.metrics_with([self.success_latency.summary(), success, failure]);
        Digest {
            metrics,
            counters: self.counters,
            latency_counts,
            series: self.series,
            truncated: self.truncated,
            service_series: self.service_series,
            replica_series: self.replica_series,
        }
    }

    /// The latency of every logical request that ended.
    pub fn all_latency(&self) -> LatencyHistogram {
        let mut all = self.success_latency.clone();
        all.merge(&self.failure_latency);
        all
    }

    /// The metrics of this replication (summary.json's `metrics` shape, without recovery).
    pub fn metrics(&self) -> Metrics {
        self.metrics_with([
            self.all_latency().summary(),
            self.success_latency.summary(),
            self.failure_latency.summary(),
        ])
    }

    /// [`RunResult::metrics`], given the latency summaries of all requests, of those that
    /// succeeded and of those that failed.
    fn metrics_with(&self, [all, success, failure]: [Latency; 3]) -> Metrics {
        let c = &self.counters;
        let requests = c.requests as f64;
        let ratio = |num: u64| {
            if c.requests == 0 {
                0.0
            } else {
                num as f64 / requests
            }
        };
        let mut failed = Failed::default();
        for o in Outcome::FAILURES {
            failed.set(o, c.final_outcomes[o.index()] as f64);
        }
        let failures: u64 = Outcome::FAILURES
            .iter()
            .map(|o| c.final_outcomes[o.index()])
            .sum();
        let open_fraction = if c.breakers == 0 || c.end_time.as_nanos() == 0 {
            0.0
        } else {
            c.breaker_open_nanos as f64 / (c.breakers as f64 * c.end_time.as_nanos() as f64)
        };
        let services: Vec<ServiceMetrics> = self
            .services
            .iter()
            .map(|s| s.metrics(c.requests, c.end_time))
            .collect();
        Metrics {
            requests,
            succeeded: self.succeeded() as f64,
            success_rate: ratio(self.succeeded()),
            failure_rate: ratio(failures),
            failed,
            attempts: self.entry().attempts as f64,
            first_attempts: c.first_attempts as f64,
            retries: c.retries as f64,
            hedges: c.hedges as f64,
            hedge_wins: c.hedge_wins as f64,
            token_waits: c.token_waits as f64,
            token_wait_ms: parts::mean_wait_ms(c.token_waits, c.token_wait_nanos),
            amplification: ratio(self.entry().attempts),
            latency_ms: all,
            success_latency_ms: success,
            failure_latency_ms: failure,
            makespan_ms: c.makespan.as_millis_f64(),
            budget_denials: c.budget_denials as f64,
            breaker: BreakerMetrics {
                refusals: c.breaker_refusals as f64,
                openings: c.breaker_openings as f64,
                transitions: c.breaker_transitions as f64,
                open_fraction,
            },
            late_replies: c.late_replies as f64,
            timeouts: c.attempt_outcomes[Outcome::Timeout.index()] as f64,
            truncated: if self.truncated.is_some() { 1.0 } else { 0.0 },
            recovery: None,
            degraded: c.final_outcomes[Outcome::Degraded.index()] as f64,
            // The share is a variant's: folded from each replication's `degraded`.
            degraded_rate: None,
            services,
            calls: self.calls.iter().map(|e| e.metrics(c.requests)).collect(),
            replicas: self
                .replicas
                .iter()
                .map(|r| r.metrics(c.requests, c.end_time))
                .collect(),
            groups: self.groups.iter().map(GroupCounters::metrics).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_round_once() {
        // Small operands: the plain float division, which rounds once.
        for (num, den) in [
            (0u128, 1u64),
            (1, 3),
            (10, 4),
            (123_456_789, 1_000),
            (1 << 52, 7),
        ] {
            assert_eq!(ratio_f64(num, den), num as f64 / den as f64);
        }
        // One rounding of the exact quotient (checked with exact rational arithmetic), where
        // rounding the sum first lands one step off.
        let sum: u128 = 4_962_720_563_113_497 + 7_413_970_282_478_002 + 4_919_593_524_665_566;
        assert_eq!(ratio_f64(sum, 3), 5_765_428_123_419_022.0);
        assert_ne!(sum as f64 / 3.0, 5_765_428_123_419_022.0);
        // A large integer over 1 rounds like a conversion, ties to even.
        for num in [
            (1u128 << 53) + 1,
            (1 << 53) + 3,
            u128::from(u64::MAX),
            1 << 100,
        ] {
            assert_eq!(ratio_f64(num, 1), num as f64);
        }
    }

    /// Regression: three latencies of 9007199254740946 ns (104 days) have that mean
    /// exactly, but the float division of their rounded sum gave more than their max.
    #[test]
    fn the_mean_of_equal_latencies_is_their_max() {
        let mut h = LatencyHistogram::default();
        let x = 9_007_199_254_740_946;
        for _ in 0..3 {
            h.record(SimDuration::from_nanos(x));
        }
        assert!(
            (3 * x) as f64 / 3.0 > x as f64,
            "the float division overshoots here"
        );
        assert_eq!(h.mean_nanos(), x as f64);
        let s = h.summary();
        assert_eq!(s.mean, s.max);
    }

    proptest::proptest! {
        /// A few latencies kept as they are read exactly as the histogram reads them: the
        /// same percentiles, bins and merges.
        #[test]
        fn few_latencies_read_as_the_histogram_reads_them(
            a in proptest::collection::vec((0u32..64, proptest::prelude::any::<u64>()), 1..300),
            b in proptest::collection::vec((0u32..64, proptest::prelude::any::<u64>()), 0..300),
        ) {
            let hist = |xs: &[(u32, u64)]| {
                let mut h = LatencyHistogram::default();
                for &(shift, x) in xs {
                    h.record(SimDuration::from_nanos(x >> shift));
                }
                h
            };
            let (few_a, few_b) = (hist(&a), hist(&b));
            let (many_a, many_b) = (few_a.clone().spilled(), few_b.clone().spilled());
            proptest::prop_assert!(matches!(few_a.counts, Counts::Few(_)));
            proptest::prop_assert!(matches!(many_a.counts, Counts::Many(_)));
            proptest::prop_assert_eq!(few_a.summary(), many_a.summary());
            proptest::prop_assert_eq!(few_a.bins(), many_a.bins());
            proptest::prop_assert_eq!(few_a.count(), many_a.count());
            let mut merged = [few_a.clone(), few_a, many_a.clone(), many_a];
            for (i, m) in merged.iter_mut().enumerate() {
                m.merge(if i % 2 == 0 { &few_b } else { &many_b });
            }
            let reference = merged[3].clone();
            for m in &merged {
                proptest::prop_assert_eq!(m.summary(), reference.summary());
                proptest::prop_assert_eq!(m.bins(), reference.bins());
                proptest::prop_assert_eq!(m.count(), reference.count());
            }
        }

        /// Mean and percentiles never exceed the max, and percentiles rise with p, for any
        /// latencies, merged or not.
        #[test]
        fn mean_and_percentiles_stay_below_the_max(
            a in proptest::collection::vec((0u32..64, proptest::prelude::any::<u64>()), 1..6),
            b in proptest::collection::vec((0u32..64, proptest::prelude::any::<u64>()), 0..6),
        ) {
            let hist = |xs: &[(u32, u64)]| {
                let mut h = LatencyHistogram::default();
                for &(shift, x) in xs {
                    h.record(SimDuration::from_nanos(x >> shift));
                }
                h
            };
            let mut h = hist(&a);
            h.merge(&hist(&b));
            let s = h.summary();
            proptest::prop_assert!(s.mean <= s.max, "{:?}", s);
            proptest::prop_assert!(s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.p999);
            proptest::prop_assert!(s.p999 <= s.max, "{:?}", s);
            let max = a.iter().chain(&b).map(|&(shift, x)| x >> shift).max().unwrap();
            proptest::prop_assert_eq!(s.max, max as f64 / 1e6);
        }
    }

    #[test]
    fn latencies_read_back_from_their_parts_give_the_same_numbers() {
        for n in [0u64, 1, 7, 1024, 1025, 50_000] {
            let mut h = LatencyHistogram::default();
            for i in 0..n {
                h.record(SimDuration::from_nanos((i * 7_919_993) % 3_000_000_000 + 1));
            }
            let back = LatencyHistogram::from_parts(&h.to_parts()).unwrap();
            assert_eq!(back.count(), h.count(), "{n}");
            assert_eq!(back.summary(), h.summary(), "{n}");
            assert_eq!(back.bins(), h.bins(), "{n}");
            assert_eq!(back.mean_nanos().to_bits(), h.mean_nanos().to_bits(), "{n}");
            // Merged with another, as a merge of shards does, still the same.
            let (mut a, mut b) = (h.clone(), back);
            a.merge(&h);
            b.merge(&h);
            assert_eq!(a.summary(), b.summary(), "{n}");
            assert_eq!(a.bins(), b.bins(), "{n}");
        }
    }

    /// The bin without a logarithm is the bin, at every bin's edges and between them.
    #[test]
    fn latency_bins_without_a_logarithm_are_the_same_bins() {
        let t = BinTables::get();
        let mut values: Vec<u64> = (0..4096).chain([u64::MAX, u64::MAX - 1]).collect();
        for &edge in &t.lowest[..LATENCY_BINS] {
            values.extend([edge.saturating_sub(1), edge, edge.saturating_add(1)]);
        }
        for shift in 0..64 {
            values.extend([(1u64 << shift) - 1, 1 << shift, (1 << shift) + 1]);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
            assert_eq!(latency_bin_of(v), latency_bin(v), "{v} ns");
        }
    }

    #[test]
    fn latency_bins_are_log_spaced_and_clamped() {
        assert_eq!(latency_bin(1), 0, "below 1 us lands in the first bin");
        assert_eq!(latency_bin(1_000), 0);
        assert_eq!(latency_bin(10_000), LATENCY_BINS_PER_DECADE);
        assert_eq!(latency_bin(1_000_000), 3 * LATENCY_BINS_PER_DECADE, "1 ms");
        assert_eq!(latency_bin(u64::MAX), LATENCY_BINS - 1);
        assert!((latency_bin_upper_ms(3 * LATENCY_BINS_PER_DECADE - 1) - 1.0).abs() < 1e-9);
    }
}
